"""Reference ``lt`` programs as textual IR, with any split of their dims.

Used by the demo, the benchmarks, ``lt-opt`` examples and the tests.  A
dim's schedule is a list of block sizes from outer to inner: ``m=[8]`` over
33 elements gives the levels ``4 r 1`` over ``8`` (``levels(33, 8)``).
The programs are built with ``lt_mlir.builder``; their loop indices are
numbered ``%i0``, ``%i1``, ... innermost first (post-order), as they always
were.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .builder import Builder, LoopOp, levels, loop_attributes, loop_lines, memref


class Nest:
    """Emits nested ``lt.loop`` text around body lines given as text
    (``Nest.loops`` wraps them); the programs below use ``lt_mlir.builder``."""

    def __init__(self):
        self._arg = 0

    def loops(self, dim: str, extent: int, blocks: Sequence[int], body: list[str]) -> list[str]:
        for size, tail in reversed(levels(extent, *blocks)):
            body = self.loop(dim, size, tail, body)
        return body

    def loop(self, dim: str, size: int, tail: int, body: list[str]) -> list[str]:
        arg = f"%i{self._arg}"
        self._arg += 1
        return loop_lines(arg, loop_attributes(dim, size, tail), ["  " + line for line in body])


def _text(b: Builder) -> str:
    """The module, its loop indices numbered innermost first."""
    loops = [op for f in b.functions for op in f.walk("post") if isinstance(op, LoopOp)]
    for prefix in ("%renamed", "%i"):  # through names no loop has, so that no two clash on the way
        for k, loop in enumerate(loops):
            loop.index.name = f"{prefix}{k}"
    return b.text()


def pointwise_add(n: int, blocks: Sequence[int] = (), dtype: str = "f32") -> str:
    """C[i] = A[i] + B[i]."""
    t = memref([n], dtype)
    b = Builder()
    with b.func("add", [("A", t), ("B", t), ("C", t)]) as (A, B, C), b.nest("i", n, blocks):
        i = b.dim("i", name="i")
        x, y = b.load(A, [i], name="a"), b.load(B, [i], name="b")
        b.store(b.binary("addf" if dtype.startswith("f") else "addi", x, y, name="c"), C, [i])
    return _text(b)


_IDENTITY = {"add": 0.0, "mul": 1.0, "max": -math.inf}  # 0xFF800000 for f32's -inf


def _row_reduce(name: str, kind: str, m: int, n: int, m_blocks: Sequence[int], n_blocks: Sequence[int]) -> str:
    a, s = memref([m, n], "f32"), memref([m], "f32")
    b = Builder()
    with b.func(name, [("A", a), ("S", s)]) as (A, S):
        init = b.constant(_IDENTITY[kind], "f32", name="init")
        with b.nest("m", m, m_blocks):
            mi = b.dim("m", name="m")
            b.store(init, S, [mi])
            with b.nest("n", n, n_blocks):
                ni = b.dim("n", name="n")
                b.reduce(kind, b.load(A, [mi, ni], name="a"), S, [mi])
    return _text(b)


def row_sum(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = sum_n A[m, n]."""
    return _row_reduce("row_sum", "add", m, n, m_blocks, n_blocks)


def row_max(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = max_n A[m, n] (the accumulator starts from -inf)."""
    return _row_reduce("row_max", "max", m, n, m_blocks, n_blocks)


def row_prod(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = prod_n A[m, n]."""
    return _row_reduce("row_prod", "mul", m, n, m_blocks, n_blocks)


def lower_row_sum(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = sum_{n <= m} A[m, n]: the row sums of A's lower triangle, a
    loop over every n with a guard inside (as ``range(m + 1)`` is written
    in lt: ``scf.if n < m + 1``)."""
    a, s = memref([m, n], "f32"), memref([m], "f32")
    b = Builder()
    with b.func("lower_row_sum", [("A", a), ("S", s)]) as (A, S):
        init = b.constant(0.0, "f32", name="init")
        with b.nest("m", m, m_blocks):
            mi = b.dim("m", name="m")
            b.store(init, S, [mi])
            with b.nest("n", n, n_blocks):
                ni = b.dim("n", name="n")
                one = b.constant(1, "index", name="one")
                hi = b.binary("addi", mi, one, name="hi")
                with b.if_(b.cmp("slt", ni, hi, name="in")):
                    b.reduce("add", b.load(A, [mi, ni], name="a"), S, [mi])
    return _text(b)


def sweep(t: int, n: int, blocks: Sequence[int] = ()) -> str:
    """``t`` in-place smoothing sweeps: Y <- X (n + 1 elements), then for
    each step, for j < n in order, Y[j] <- 0.5 (Y[j] + Y[j + 1]).  Each
    iteration reads the element the next one writes, and each step reads
    what the one before wrote: interchanging the loops or running either in
    parallel changes the result (what the passes' dependence checks must
    refuse)."""
    x_t, y_t = memref([n + 1], "f32"), memref([n + 1], "f32")
    b = Builder()
    with b.func("sweep", [("X", x_t), ("Y", y_t)]) as (X, Y):
        half = b.constant(0.5, "f32", name="half")
        one = b.constant(1, "index", name="one")
        with b.nest("k", n + 1):
            k = b.dim("k", name="k")
            b.store(b.load(X, [k], name="x"), Y, [k])
        with b.nest("t", t):
            with b.nest("j", n, blocks):
                j = b.dim("j", name="j")
                right = b.load(Y, [b.binary("addi", j, one, name="jr")], name="right")
                here = b.load(Y, [j], name="here")
                total = b.binary("addf", here, right, name="sum")
                b.store(b.binary("mulf", total, half, name="avg"), Y, [j])
    return _text(b)


def col_sum(m: int, n: int) -> str:
    """S[n] = sum_m A[m, n] (columns outside: each column's sum is one chain)."""
    a, s = memref([m, n], "f32"), memref([n], "f32")
    b = Builder()
    with b.func("col_sum", [("A", a), ("S", s)]) as (A, S):
        init = b.constant(0.0, "f32", name="init")
        with b.nest("n", n):
            ni = b.dim("n", name="n")
            b.store(init, S, [ni])
            with b.nest("m", m):
                mi = b.dim("m", name="m")
                b.reduce("add", b.load(A, [mi, ni], name="a"), S, [ni])
    return _text(b)


def total_sum(m: int, n: int) -> str:
    """S[] = sum_{m,n} A[m, n], columns outside rows (a GPU maps the columns
    to threads, each walking its column: coalesced, with one partial sum a
    thread)."""
    a = memref([m, n], "f32")
    b = Builder()
    with b.func("total_sum", [("A", a), ("S", memref([], "f32"))]) as (A, S):
        b.store(b.constant(0.0, "f32", name="init"), S, [])
        with b.nest("n", n):
            ni = b.dim("n", name="n")
            with b.nest("m", m):
                mi = b.dim("m", name="m")
                b.reduce("add", b.load(A, [mi, ni], name="a"), S, [])
    return _text(b)


def matmul(
    m: int,
    n: int,
    k: int,
    m_blocks: Sequence[int] = (),
    n_blocks: Sequence[int] = (),
    k_blocks: Sequence[int] = (),
    clipped: bool = False,
    name: str | None = None,
) -> str:
    """C[m, n] = sum_k A[m, k] * B[k, n]; ``clipped`` sums max(A*B, 0).

    Loop order m, n, k, with C initialised under n, before the k loops."""
    a, bt, c = memref([m, k], "f32"), memref([k, n], "f32"), memref([m, n], "f32")
    b = Builder()
    fname = name or ("clipped_matmul" if clipped else "matmul")
    with b.func(fname, [("A", a), ("B", bt), ("C", c)]) as (A, B, C):
        zero = b.constant(0.0, "f32", name="zero")
        with b.nest("m", m, m_blocks):
            mi = b.dim("m", name="m")
            with b.nest("n", n, n_blocks):
                ni = b.dim("n", name="n")
                b.store(zero, C, [mi, ni])
                with b.nest("k", k, k_blocks):
                    ki = b.dim("k", name="k")
                    x, y = b.load(A, [mi, ki], name="a"), b.load(B, [ki, ni], name="b")
                    value = b.binary("mulf", x, y, name="p")
                    if clipped:
                        value = b.binary("maximumf", value, zero, name="q")
                    b.reduce("add", value, C, [mi, ni])
    return _text(b)


def syrk(n: int, k: int, n_blocks: Sequence[int] = (), k_blocks: Sequence[int] = ()) -> str:
    """C[i, j] = sum_k A[k, i] * A[k, j] (BLAS's syrk, ``A^T A``: symmetric,
    what ``lt-symmetric`` halves); A is k x n.

    Loop order i, j, k, with C initialised under j, before the k loops."""
    a, c = memref([k, n], "f32"), memref([n, n], "f32")
    b = Builder()
    with b.func("syrk", [("A", a), ("C", c)]) as (A, C):
        zero = b.constant(0.0, "f32", name="zero")
        with b.nest("i", n, n_blocks):
            ii = b.dim("i", name="i")
            with b.nest("j", n, n_blocks):
                jj = b.dim("j", name="j")
                b.store(zero, C, [ii, jj])
                with b.nest("k", k, k_blocks):
                    kk = b.dim("k", name="k")
                    x, y = b.load(A, [kk, ii], name="a"), b.load(A, [kk, jj], name="b")
                    b.reduce("add", b.binary("mulf", x, y, name="p"), C, [ii, jj])
    return _text(b)


def conv1d(n: int, w: int, blocks: Sequence[int] = ()) -> str:
    """Y[i] = sum_j X[i + j] * W[j] for i < n (X has n + w - 1 elements)."""
    x_t, w_t, y_t = memref([n + w - 1], "f32"), memref([w], "f32"), memref([n], "f32")
    b = Builder()
    with b.func("conv1d", [("X", x_t), ("W", w_t), ("Y", y_t)]) as (X, W, Y):
        zero = b.constant(0.0, "f32", name="zero")
        with b.nest("i", n, blocks):
            i = b.dim("i", name="i")
            b.store(zero, Y, [i])
            with b.nest("j", w):
                j = b.dim("j", name="j")
                ij = b.binary("addi", i, j, name="ij")
                x, wv = b.load(X, [ij], name="x"), b.load(W, [j], name="w")
                b.reduce("add", b.binary("mulf", x, wv, name="p"), Y, [i])
    return _text(b)


def conv2d(
    c: int,
    h: int,
    w: int,
    kh: int,
    kw: int,
    y_blocks: Sequence[int] = (),
    x_blocks: Sequence[int] = (),
    c_blocks: Sequence[int] = (),
) -> str:
    """Y[y, x] = sum_{c, i, j} X[c, y + i, x + j] * W[c, i, j] for y < h, x < w.

    A channel-reduced 2-D correlation: X is ``c x (h + kh - 1) x (w + kw - 1)``,
    W is ``c x kh x kw``.  Loop order y, x, c, i, j, with Y initialised under
    x, before the reduction loops."""
    x_t = memref([c, h + kh - 1, w + kw - 1], "f32")
    w_t, y_t = memref([c, kh, kw], "f32"), memref([h, w], "f32")
    b = Builder()
    with b.func("conv2d", [("X", x_t), ("W", w_t), ("Y", y_t)]) as (X, W, Y):
        zero = b.constant(0.0, "f32", name="zero")
        with b.nest("y", h, y_blocks):
            y = b.dim("y", name="y")
            with b.nest("x", w, x_blocks):
                x = b.dim("x", name="x")
                b.store(zero, Y, [y, x])
                with b.nest("c", c, c_blocks):
                    ci = b.dim("c", name="c")
                    with b.nest("i", kh):
                        i = b.dim("i", name="i")
                        yi = b.binary("addi", y, i, name="yi")
                        with b.nest("j", kw):
                            j = b.dim("j", name="j")
                            xj = b.binary("addi", x, j, name="xj")
                            xv = b.load(X, [ci, yi, xj], name="xv")
                            wv = b.load(W, [ci, i, j], name="wv")
                            b.reduce("add", b.binary("mulf", xv, wv, name="p"), Y, [y, x])
    return _text(b)


def attention(n: int, m: int, d: int, e: int, dtype: str = "f32", fastmath: str = "fast", heads: int = 0,
              normalised: bool = False) -> str:
    """O[i, :] = softmax_j(Q[i, :] . K[j, :] / sqrt(d)) @ V, as the frontend
    emits ``S = (Q * K).sum(d) * scale; E = (S - S.max_reduce(j)).exp();
    O = (E * V).sum(j) / E.sum(j)``: under one loop over i, the scores
    into a scratch row (d outside j), their maximum, then one loop over j
    summing ``E * V`` and ``E``, then the quotient.  ``heads`` > 0: Q, K,
    V and O have a leading axis of that many heads (batch x heads, as
    ``torch.nn.functional.scaled_dot_product_attention`` takes them
    flattened), one more loop around.  ``normalised``: the softmax first,
    then ``@ V``, as the frontend emits ``P = E / E.sum(j); O = (P *
    V).sum(j)``: a loop over j storing E and summing it, then one summing
    ``E / sum * V`` into O (``lt-factor`` takes the division out).
    ``fastmath`` is the function's ``lt.fastmath`` (``lt-online-softmax``
    needs reassociation)."""
    b = Builder()
    lead = [heads] if heads else []
    args = [("Q", memref(lead + [n, d], dtype)), ("K", memref(lead + [m, d], dtype)), ("V", memref(lead + [m, e], dtype)),
            ("O", memref(lead + [n, e], dtype))]
    attrs = {"lt.fastmath": fastmath} if fastmath != "default" else {}
    with b.func("attention", args, attributes=attrs) as (Q, K, V, O):
        zero = b.constant(0.0, dtype, name="zero")
        ninf = b.constant(-math.inf, dtype, name="ninf")
        scale = b.constant(1.0 / math.sqrt(d), dtype, name="scale")
        hd = ["h"] if heads else []
        S = b.alloc(hd + ["i", "j"], memref(lead + [n, m], dtype), name="S")
        MX = b.alloc(hd + ["i"], memref(lead + [n], dtype), name="MX")
        T = b.alloc(hd + ["i", "j"], memref(lead + [n, m], dtype), name="T")
        ACC = None if normalised else b.alloc(hd + ["i", "e"], memref(lead + [n, e], dtype), name="ACC")
        SUM = b.alloc(hd + ["i"], memref(lead + [n], dtype), name="SUM")
        EXP = b.alloc(hd + ["i", "j"], memref(lead + [n, m], dtype), name="EXP") if normalised else None

        def rows():
            h = [b.dim("h", name="h")] if heads else []
            with b.loop("i", n):
                i = b.dim("i", name="i")
                hi = h + [i]
                with b.loop("j", m):
                    b.store(zero, S, hi + [b.dim("j")])
                with b.loop("d", d):
                    dd = b.dim("d")
                    with b.loop("j", m):
                        j = b.dim("j")
                        b.reduce("add", b.binary("mulf", b.load(Q, hi + [dd]), b.load(K, h + [j, dd])), S, hi + [j])
                b.store(ninf, MX, hi)
                with b.loop("j", m):
                    j = b.dim("j")
                    s = b.binary("mulf", b.load(S, hi + [j]), scale, name="s")
                    b.store(s, T, hi + [j])
                    b.reduce("max", s, MX, hi)
                if normalised:
                    b.store(zero, SUM, hi)
                    with b.loop("j", m):
                        j = b.dim("j")
                        p = b.unary("math.exp", b.binary("subf", b.load(T, hi + [j]), b.load(MX, hi)), name="p")
                        b.store(p, EXP, hi + [j])
                        b.reduce("add", p, SUM, hi)
                    with b.loop("e", e):
                        b.store(zero, O, hi + [b.dim("e")])
                    with b.loop("j", m):
                        j = b.dim("j")
                        q = b.binary("divf", b.load(EXP, hi + [j]), b.load(SUM, hi), name="q")
                        with b.loop("e", e):
                            ee = b.dim("e")
                            b.reduce("add", b.binary("mulf", q, b.load(V, h + [j, ee])), O, hi + [ee])
                    return
                with b.loop("e", e):
                    b.store(zero, ACC, hi + [b.dim("e")])
                b.store(zero, SUM, hi)
                with b.loop("j", m):
                    j = b.dim("j")
                    p = b.unary("math.exp", b.binary("subf", b.load(T, hi + [j]), b.load(MX, hi)), name="p")
                    with b.loop("e", e):
                        ee = b.dim("e")
                        b.reduce("add", b.binary("mulf", p, b.load(V, h + [j, ee])), ACC, hi + [ee])
                    b.reduce("add", p, SUM, hi)
                with b.loop("e", e):
                    ee = b.dim("e")
                    b.store(b.binary("divf", b.load(ACC, hi + [ee]), b.load(SUM, hi)), O, hi + [ee])

        if heads:
            with b.loop("h", heads):
                rows()
        else:
            rows()
    return _text(b)

def softmax(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = (), fastmath: str = "default") -> str:
    """Y[m, n] = exp(X[m, n] - max_n X[m, :]) / sum_n exp(X[m, n] - max_n X[m, :]).

    One loop over m holds three nests over n: the row maximum into a scratch
    ``lt.alloc`` over [m] (from -inf), the sum of exponentials into a second
    one (from 0), then the normalised outputs.  ``fastmath``: the function's
    ``lt.fastmath`` (``lt-online-softmax`` needs reassociation)."""
    x_t, s_t = memref([m, n], "f32"), memref([m], "f32")
    b = Builder()
    attrs = {"lt.fastmath": fastmath} if fastmath != "default" else {}
    with b.func("softmax", [("X", x_t), ("Y", x_t)], attributes=attrs) as (X, Y):
        ninf = b.constant(-math.inf, "f32", name="ninf")
        zero = b.constant(0.0, "f32", name="zero")
        MX = b.alloc(["m"], s_t, name="MX")
        SUM = b.alloc(["m"], s_t, name="SUM")
        with b.nest("m", m, m_blocks):
            mi = b.dim("m", name="m")
            b.store(ninf, MX, [mi])
            b.store(zero, SUM, [mi])

            def row():
                ni = b.dim("n", name="n")
                return ni, b.load(X, [mi, ni], name="x")

            def shifted():
                ni, x = row()
                mx = b.load(MX, [mi], name="mx")
                return ni, b.unary("math.exp", b.binary("subf", x, mx, name="d"), name="e")

            with b.nest("n", n, n_blocks):
                _, x = row()
                b.reduce("max", x, MX, [mi])
            with b.nest("n", n, n_blocks):
                _, e = shifted()
                b.reduce("add", e, SUM, [mi])
            with b.nest("n", n, n_blocks):
                ni, e = shifted()
                s = b.load(SUM, [mi], name="s")
                b.store(b.binary("divf", e, s, name="y"), Y, [mi, ni])
    return _text(b)
