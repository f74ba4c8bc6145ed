"""Fuzz programs written with ``lt_mlir.kernel``: the unfused modules its
lowering makes (one nest per operation, temporaries in ``lt.alloc``s), so
the fuzzer's schedules meet producer nests for ``lt-fuse``, sums of
products for ``lt-factor`` (a ``fast`` function), and CSR nests with
data-dependent loops.

A program's CSR structure is fixed by its size (a seeded generator: rows
of every length, empty ones included), since the module's memref types
carry nnz; its values are drawn per schedule.
"""

from __future__ import annotations

import numpy as np

from ..kernel import expr as E
from ..kernel.fusion import row_nests
from ..kernel.graph import Graph
from ..kernel.lower import Lowering


def structure(rows: int, cols: int, seed: int = 7) -> tuple:
    """(indptr, indices) int32 of a CSR with sorted, distinct columns."""
    rng = np.random.default_rng([seed, rows, cols])
    lengths = rng.integers(0, cols + 1, rows)
    lengths[rng.random(rows) < 0.25] = 0
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths] + [np.zeros(0, int)]).astype(np.int32)
    return indptr, indices


class KernelProgram:
    """``build(graph, args)`` makes the result from the arguments ("A": a
    CSR input, others dense inputs); ``shapes(size)`` their shapes (a CSR's
    (rows, cols)); ``reference(args)`` computes it from float64 arrays (a
    CSR as a ``scipy``-free (indptr, indices, data, shape) tuple)."""

    def __init__(self, build, shapes, reference, fastmath: str | None = None, terms=None, prepare: tuple = (), scale=None,
                 by_rows: bool = False):
        self.build, self.shapes, self.ref, self.fastmath = build, shapes, reference, fastmath
        # the element-wise CSR nests the redundancy-aware schedule writes by rows (lower.row_chains),
        # for lt-merge's and lt-parallel's dependence test on a row's positions
        self.by_rows = by_rows
        # sum of |terms| per element: the reference of the absolute inputs, or ``scale(args)``
        # where that bounds nothing (a sigmoid between two sums)
        self.scale = scale
        self.prepare = prepare  # pipeline elements applied to the unfused module (the start the fuzzer sees)
        self.terms = terms or (lambda size: 1)

    def _lowering(self, size, arrays: dict | None = None) -> tuple:
        g = Graph(None)
        args = {}
        for name, shape in self.shapes(*size).items():
            if name == "A":
                indptr, indices = structure(*shape)
                data = np.zeros(indices.shape[0], np.float32) if arrays is None else arrays["A"]
                args[name] = g.node(E.CSRInput, name, indptr, indices, data, shape)
            else:
                a = np.zeros(shape, np.float32) if arrays is None else arrays[name]
                args[name] = g.node(E.Input, name, a)
        root = self.build(g, args)
        todo = g.pending([root])
        attributes = {"lt.fastmath": self.fastmath} if self.fastmath else None
        low = Lowering(todo, [root], attributes=attributes)
        text = low.text()
        if self.by_rows:
            low = Lowering(todo, [root], attributes=attributes, by_rows=row_nests(text, low.owners, {id(root)}, todo))
            text = low.text()
        return low, text, args

    def text(self, *size) -> str:
        text = self._lowering(size)[1]
        if self.prepare:
            from ..schedule import Schedule

            s = Schedule(text)
            for step in self.prepare:
                s.apply(step)
            text = s.file_text
        return text

    def inputs(self, rng, size) -> list:
        """The kernel's read-only arguments in order, values from ``rng``."""
        arrays = {}
        for name, shape in self.shapes(*size).items():
            n = structure(*shape)[1].shape[0] if name == "A" else shape
            arrays[name] = (rng.random(n) - 0.3).astype(np.float32)
        low, _, _ = self._lowering(size, arrays)
        return [a.array() for a in low.arguments if a.role != "out"]

    def reference(self, xs, size) -> list:
        low, _, _ = self._lowering(size)
        named = {}
        for a, x in zip([a for a in low.arguments if a.role != "out"], xs):
            if a.role in ("indptr", "indices", "rows"):
                named[a.role] = np.asarray(x)
            elif isinstance(a.node, E.Scalar):
                continue  # a number of the code: the reference has it too
            else:
                named[a.node.name] = np.asarray(x, np.float64)
        if "indptr" in named:
            shape = self.shapes(*size)["A"]
            named.pop("rows", None)
            named["A"] = (named.pop("indptr"), named.pop("indices"), named["A"], shape)
        exact = self.ref(named)
        absolute = {k: (v[0], v[1], np.abs(v[2]), v[3]) if isinstance(v, tuple) else np.abs(v) for k, v in named.items()}
        scale = self.ref(absolute) if self.scale is None else self.scale(absolute)
        return [(exact, np.abs(scale), self.terms(size))]


def _rows(A):
    indptr, _, _, shape = A
    return np.repeat(np.arange(shape[0]), np.diff(indptr))


def _sddmm_ref(a):
    A, B, C = a["A"], a["B"], a["C"]
    rows = _rows(A)
    return A[2] * np.einsum("pk,pk->p", B[rows], C[A[1]])


def _spmm_ref(a):
    A, B = a["A"], a["B"]
    out = np.zeros((A[3][0], B.shape[1]))
    np.add.at(out, _rows(A), A[2][:, None] * B[A[1]])
    return out


def _spmm_mm_ref(a):
    return _spmm_ref(a) @ a["C"]


def _spmv_ref(a):
    A, x = a["A"], a["x"]
    out = np.zeros(A[3][0])
    np.add.at(out, _rows(A), A[2] * x[A[1]])
    return out


def _dense_spmm_ref(a):
    A, M = a["A"], a["M"]
    out = np.zeros((M.shape[0], A[3][1]))
    rows = _rows(A)
    for p in range(len(A[2])):
        out[:, A[1][p]] += M[:, rows[p]] * A[2][p]
    return out


def _sparse_softmax_ref(a):
    indptr, _, data, _ = a["A"]
    out = np.empty_like(data)
    for i in range(len(indptr) - 1):
        row = data[indptr[i]:indptr[i + 1]]
        if row.size:
            e = np.exp(row - row.max())
            out[indptr[i]:indptr[i + 1]] = e / e.sum()
    return out


def _sparse_softmax(a):
    m = a["A"].max(axis=1)
    e = np.exp(a["A"] - m[:, None])
    return e / e.sum(axis=1)[:, None]


def _chain_ref(a):
    x, w = a["x"], a["w"]
    t = x * w + 1.0
    return (t * x).sum(axis=1)


def _logistic_grad_ref(a):
    X, w, y = a["X"], a["w"], a["y"]
    return X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y)


def _logistic_grad_scale(a):
    # |X|.T @ |p - y| with p in (0, 1), plus p's own error: the sigmoid's slope is at most 1/4
    X, w, y = a["X"], a["w"], a["y"]
    return X.T @ (1.0 + y + X @ w)


def _scaled_ref(a):
    return (a["x"] * a["b"][:, None]).sum(axis=1)


PROGRAMS = {
    "k_sddmm": KernelProgram(
        lambda g, a: a["A"] * (a["B"] @ a["C"].T),
        lambda n, m, k: {"A": (n, m), "B": (n, k), "C": (m, k)},
        _sddmm_ref,
        terms=lambda s: s[2] + 1,
    ),
    # fused under fastmath=fast: the sampled value times the dot product's sum, what lt-sink-factor takes
    "k_sddmm_fast": KernelProgram(
        lambda g, a: a["A"] * (a["B"] @ a["C"].T),
        lambda n, m, k: {"A": (n, m), "B": (n, k), "C": (m, k)},
        _sddmm_ref,
        fastmath="fast",
        prepare=("lt-fuse{loop=0}",),
        terms=lambda s: s[2] + 1,
    ),
    "k_spmm_mm": KernelProgram(
        lambda g, a: (a["A"] @ a["B"]) @ a["C"],
        lambda n, m, h, j: {"A": (n, m), "B": (m, h), "C": (h, j)},
        _spmm_mm_ref,
        terms=lambda s: s[1] + s[2],
    ),
    # CSR rows as loops of bounds known at run time, innermost: what lt-vectorize-data takes
    "k_spmv": KernelProgram(
        lambda g, a: a["A"] @ a["x"],
        lambda n, m: {"A": (n, m), "x": (m,)},
        _spmv_ref,
        terms=lambda s: s[1] + 1,
    ),
    "k_dense_spmm": KernelProgram(
        lambda g, a: a["M"] @ a["A"],
        lambda n, m, r: {"A": (n, m), "M": (r, n)},
        _dense_spmm_ref,
        terms=lambda s: s[0] + 1,
    ),
    "k_sparse_softmax": KernelProgram(
        lambda g, a: _sparse_softmax(a),
        lambda n, m: {"A": (n, m)},
        _sparse_softmax_ref,
        terms=lambda s: s[1] + 8,
    ),
    # as the redundancy-aware schedule lowers it: the exponentials a row nest (lt-merge, lt-parallel)
    "k_sparse_softmax_rows": KernelProgram(
        lambda g, a: _sparse_softmax(a),
        lambda n, m: {"A": (n, m)},
        _sparse_softmax_ref,
        terms=lambda s: s[1] + 8,
        by_rows=True,
    ),
    "k_chain": KernelProgram(
        lambda g, a: np.sum((a["x"] * a["w"] + 1.0) * a["x"], axis=1),
        lambda m, n: {"x": (m, n), "w": (n,)},
        _chain_ref,
        terms=lambda s: s[1] + 2,
    ),
    # a logistic-regression gradient: X @ w and X.T @ r, two nests over X's rows under different
    # dim names (lt-merge{rename=true} makes them one pass over X)
    "k_logistic_grad": KernelProgram(
        lambda g, a: a["X"].T @ (1.0 / (1.0 + np.exp(-(a["X"] @ a["w"]))) - a["y"]),
        lambda m, n: {"X": (m, n), "w": (n,), "y": (m,)},
        _logistic_grad_ref,
        terms=lambda s: s[0] + s[1] + 8,
        scale=_logistic_grad_scale,
    ),
    "k_scaled_rows": KernelProgram(
        lambda g, a: np.sum(a["x"] * a["b"][:, None], axis=1),
        lambda m, n: {"x": (m, n), "b": (m,)},
        _scaled_ref,
        fastmath="fast",
        prepare=("lt-fuse{loop=0}",),  # the product inside the sum, where lt-factor takes b out
        terms=lambda s: s[1] + 1,
    ),
}


def react_type2(n: int, m: int, k: int) -> str:
    """ReACT's type-2 example maximally fused, ``A = (B + E) * (C @ D)`` as
    ``for i { A[i,:] = 0; for k { for j { A[i,j] += (B[i,j] + E[i,j]) *
    (C[i,k] * D[k,j]) } } }``: ``B + E`` is invariant in k (what
    ``lt-hoist`` takes out)."""
    from ..builder import Builder, memref

    b = Builder()
    args = [("B", memref((n, m), "f32")), ("E", memref((n, m), "f32")), ("C", memref((n, k), "f32")),
            ("D", memref((k, m), "f32")), ("A", memref((n, m), "f32"))]
    with b.func("react", args) as (B, E, C, D, A):
        zero = b.constant(0.0, "f32")
        with b.loop("i", n):
            i = b.dim("i")
            with b.loop("j", m):
                b.store(zero, A, [i, b.dim("j")])
            with b.loop("k", k):
                kk = b.dim("k")
                with b.loop("j", m):
                    j = b.dim("j")
                    s = b.binary("addf", b.load(B, [i, j]), b.load(E, [i, j]))
                    cd = b.binary("mulf", b.load(C, [i, kk]), b.load(D, [kk, j]))
                    b.reduce("add", b.binary("mulf", s, cd), A, [i, j])
    return b.text()


def react_type2_inputs(rng, size) -> list:
    n, m, k = size
    return [(rng.random(shape) - 0.3).astype(np.float32) for shape in ((n, m), (n, m), (n, k), (k, m))]


def react_type2_reference(xs, size) -> list:
    B, E, C, D = (np.asarray(x, np.float64) for x in xs)
    return [((B + E) * (C @ D), np.abs(B + E) * (np.abs(C) @ np.abs(D)), size[2] + 1)]
