"""Expression graph -> lt module: one loop nest per operation, as NumPy
would run them (every value a buffer), before any fusion.

Each node without a value becomes one nest writing its own buffer: a
kernel output (a function argument) if the caller needs its value, else an
``lt.alloc`` at full size.  Views (``x[:, None]``, ``.T``) are not nests:
reading one reads its operand at the mapped indices.  Loop orders are the
ones a person writes:

* element-wise (``Map``, ``Select``): the result's axes in order;
* a reduction along trailing axes: ``for kept { init; for reduced { acc op= x } }``;
  along leading axes: an init nest, then the operand's axes in order;
* ``a @ b``: the dot-product form ``for i { for j { init; for k } }`` where
  ``b`` is read along k contiguously (``b`` a transposed view), else
  ``for i { for j { init }; for k { for j } }`` (both operands row-wise);
* CSR: an element-wise operation over the stored values is one loop over
  the positions, ``for p in nnz { T[p] = f(..., D[rows[p], indices[p]]) }``;
  row reductions and SpMM are row nests, ``for i { init; for p in
  indptr[i]..indptr[i+1] { ... } }`` (an ``scf.for`` inside the row loop: the
  data-dependent loop of the APPy translator), SpMM's ``for j`` innermost.

Dims are named by position (``i, j, l, n`` for a result's axes, ``k``, ``k1``
for reduced ones), so nests of equal extents over rows share the dim that
``lt-merge`` fuses.
"""

from __future__ import annotations

import numpy as np

from ..builder import Builder, memref
from . import expr as E

AXES = ("i", "j", "l", "n")
ELEMENT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.bool_): "i8"}
_BINOPS = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf", "max": "maximumf", "min": "minimumf"}
_CMP = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
_UNOPS = {"neg": "negf", "exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "absf", "tanh": "tanh"}
IDENTITY = {"add": 0.0, "max": -np.inf, "min": np.inf}


def element(dtype) -> str:
    return ELEMENT[np.dtype(dtype)]


class Argument:
    """One function argument: ``role`` is "in" (a value), "out" (a node's
    result), "indptr"/"indices" (a CSR's structure), "trips" (a host
    loop's trip count)."""

    def __init__(self, name: str, role: str, node: E.Lazy, type_: str):
        self.name, self.role, self.node, self.type = name, role, node, type_

    def array(self):
        """The argument's array for this call (None for an output)."""
        n = self.node
        if self.role in ("indptr", "indices", "rows"):
            return getattr(n, self.role)
        if self.role == "in":
            return np.asarray(n.value)
        return None


def leaves(todo: list) -> list:
    """The operands with values that the nests read, in first-use order."""
    out, seen = [], set()
    todo_ids = {id(n) for n in todo}
    for n in todo:
        for o in n.operands:
            if id(o) not in todo_ids and id(o) not in seen:
                seen.add(id(o))
                out.append(o)
    return out


def structures(todo: list) -> list:
    out, seen = [], set()
    for n in todo:
        for s in ([n] if n.sparse else []) + [o for o in n.operands if o.sparse]:
            st = s.structure
            if id(st) not in seen:
                seen.add(id(st))
                out.append(st)
    return out


def signature(todo: list, outputs: list, lv: list | None = None, st: list | None = None) -> tuple:
    """A structural key of the nests: equal keys give the same module
    (``lv``, ``st``: ``leaves(todo)`` and ``structures(todo)`` if known)."""
    ids: dict = {}
    key = []
    for i, s in enumerate(structures(todo) if st is None else st):
        ids[id(s)] = i
        key.append(("csr", s.shape, s.nnz, s.indptr.dtype.str, s.indices.dtype.str))
    for leaf in leaves(todo) if lv is None else lv:
        position = len(key)
        key.append((_static(leaf), ids.get(id(leaf.structure)) if leaf.sparse else None))
        ids[id(leaf)] = position
    out_ids = {id(o) for o in outputs}
    for n in todo:
        position = len(key)
        key.append((_static(n), tuple(ids[id(o)] for o in n.operands), ids.get(id(n.structure)) if n.sparse else None, id(n) in out_ids))
        ids[id(n)] = position
    return tuple(key)


def _static(n) -> tuple:
    """What a node's nest depends on besides its operands (made once)."""
    d = n.__dict__
    k = d.get("_static")
    if k is None:
        attrs = tuple((a, d[a]) for a in ("op", "kind", "axes", "new", "spec", "fixed") if a in d)
        if isinstance(n, E.Map) and n.op == "pow":
            attrs += (("exponent", float(n.operands[1].value) if isinstance(n.operands[1], E.Scalar) else None),)
        k = n._static = (type(n).__name__, n.shape, n.dtype.str, attrs)
    return k


class Lowering:
    """Writes the module; ``arguments`` lists the function's arguments."""

    def __init__(self, todo: list, outputs: list, name: str = "kernel", attributes: dict | None = None, concordant: bool = False,
                 trips: bool = False, by_rows: tuple = (frozenset(), frozenset())):
        self.todo, self.outputs = todo, outputs
        # ids of the element-wise CSR nodes written as row nests (``positions``), and of those
        # computed inside them where they read them (``row_chains``)
        self.by_rows, self.inline = by_rows
        self.trips = trips  # a last argument, memref<i64>: a host loop's trip count (hostloop.repeat_module)
        self.attributes = attributes
        self.concordant = concordant  # SpMM in TACO's order (for maximal fusion)
        self.b = Builder(float_format="e17")
        self.arguments: list[Argument] = []
        self.buffers: dict = {}  # id(node) -> memref Value (values and results)
        self.csr: dict = {}  # id(structure) -> (indptr, indices) Values
        self.name = name

    def text(self) -> str:
        b = self.b
        args = []
        for k, st in enumerate(structures(self.todo)):
            args.append(Argument(f"indptr{k}", "indptr", st, memref([st.indptr.shape[0]], _int_type(st.indptr))))
            args.append(Argument(f"indices{k}", "indices", st, memref([st.indices.shape[0]], _int_type(st.indices))))
            if any(n.sparse and n.structure is st and _needs_rows(n) and id(n) not in self.by_rows and id(n) not in self.inline
                   for n in self.todo):
                args.append(Argument(f"rows{k}", "rows", st, memref([st.nnz], _int_type(st.indices))))
        for k, leaf in enumerate(leaves(self.todo)):
            args.append(Argument(f"x{k}", "in", leaf, self.buffer_type(leaf)))
        for k, n in enumerate(self.outputs):
            args.append(Argument(f"out{k}", "out", n, self.buffer_type(n)))
        if self.trips:
            args.append(Argument("trips", "trips", None, "memref<i64>"))
        self.arguments = args
        self.owners = []  # the node of each outermost loop, in order
        self.sampled = _sampled(self.todo)
        # rows[p] repeats a row for each of its positions: lt-fuse must not
        # take it for an index that tells positions apart (see lt.repeats);
        # indptr never decreases (validated before a call): the dependence
        # test then knows rows' positions apart (lt.monotone)
        marks = {"rows": {"lt.repeats": True}, "indptr": {"lt.monotone": True}}
        f = b.func(self.name, [(a.name, a.type, a.name, marks.get(a.role)) for a in args], attributes=self.attributes)
        with f as values:
            for a, v in zip(args, values):
                if a.role in ("indptr", "indices", "rows"):
                    self.csr.setdefault(id(a.node), [None, None, None])[("indptr", "indices", "rows").index(a.role)] = v
                elif a.role != "trips":
                    self.buffers[id(a.node)] = v
            outputs = {id(o) for o in self.outputs}
            for n in self.todo:
                if isinstance(n, (E.View, E.Transpose, E.Index)) and id(n) not in outputs or id(n) in self.inline:
                    continue  # read through (a view is a nest only where it is a result: a copy; an inlined op)
                if id(n) not in self.buffers:
                    dims = ["p"] if n.sparse else _dims(n.ndim)
                    self.buffers[id(n)] = b.alloc(dims, self.buffer_type(n), name=b.fresh("t"))
                before = sum(op.name == "lt.loop" for op in f.body.ops)
                self.nest(n)
                self.owners += [n] * (sum(op.name == "lt.loop" for op in f.body.ops) - before)
        return b.text()

    @staticmethod
    def buffer_type(n: E.Lazy) -> str:
        shape = (n.structure.nnz,) if n.sparse else n.shape
        return memref(shape, element(n.dtype))

    # ------------------------------------------------------------ reading
    def read(self, n: E.Lazy, idx: list, p=None):
        """The value of ``n`` at ``idx`` (its own axes; ``p``: the stored
        position in a CSR nest), in ``n``'s element type (i1 for bools)."""
        b = self.b
        if isinstance(n, E.View):
            inner = [v for a, v in enumerate(idx) if a not in n.new]
            return self.read(n.operands[0], inner, p)
        if isinstance(n, E.Transpose):
            return self.read(n.operands[0], idx[::-1], p)
        if id(n) in self.inline:
            return self.elementwise(n, idx, p)
        if isinstance(n, E.Index):
            x = n.operands[0]
            inner = [None] * x.ndim
            for axis, i in n.fixed:
                inner[axis] = b.constant(i, "index")
            for r, s in enumerate(n.spec):
                if s is not None:
                    axis, offset = s
                    v = idx[r] if n.shape[r] != 1 and idx[r] is not None else b.constant(0, "index")  # a length-1 axis broadcasts
                    inner[axis] = b.binary("addi", v, b.constant(offset, "index")) if offset else v
            return self.read(x, inner, p)
        buf = self.buffers[id(n)]
        if n.sparse:
            v = b.load(buf, [p])
        else:
            zero = None
            use = []
            for size, v in zip(n.shape, idx[len(idx) - n.ndim:]):
                if size == 1 or v is None:
                    zero = zero or b.constant(0, "index")
                    use.append(zero)
                else:
                    use.append(v)
            v = b.load(buf, use)
        if n.dtype == np.bool_:
            v = b.cmp("ne", v, b.constant(0, "i8"))
        return v

    def operand(self, n: E.Lazy, idx: list, dtype, p=None):
        """``n`` read at the result's ``idx`` (broadcast) and converted to ``dtype``."""
        v = self.read(n, idx[len(idx) - n.ndim:] if not n.sparse else idx, p)
        want = element(dtype)
        if n.dtype != np.bool_ and v.type != want:
            v = self.b.cast("extf" if want == "f64" else "truncf", v, want)
        return v

    def store(self, n: E.Lazy, value, idx: list) -> None:
        b = self.b
        if n.dtype == np.bool_:
            value = b.cast("extui", value, "i8")
        b.store(value, self.buffers[id(n)], idx)

    # --------------------------------------------------------- arithmetic
    def compute(self, n, values: list):
        b = self.b
        if isinstance(n, E.Select):
            return b.select(*values)
        op = n.op
        if op in _UNOPS:
            return (b.unary if op != "neg" else b.unary)(_UNOPS[op], values[0])
        if op in _CMP:
            return b.cmp(_CMP[op], values[0], values[1])
        if op == "pow":
            return self.power(n, values[0])
        return b.binary(_BINOPS[op], values[0], values[1])

    def power(self, n, x):
        b = self.b
        exponent = float(n.operands[1].value)  # a number of E.POWERS (Graph.binary)
        if exponent == 2.0:
            return b.binary("mulf", x, x)
        if exponent == 0.5:
            return b.unary("sqrt", x)
        if exponent == 1.0:
            return x
        if exponent == -1.0:
            return b.binary("divf", b.constant(1.0, x.type), x)
        y = x  # 3..8 (Graph.binary admits no other exponent)
        for _ in range(int(exponent) - 1):
            y = b.binary("mulf", y, x)
        return y

    def elementwise(self, n, idx: list, p=None):
        operands = n.operands
        if isinstance(n, E.Map) and n.op == "pow":
            operands = operands[:1]
        dtype = n.dtype
        if dtype == np.bool_ or isinstance(n, E.Select):
            dtype = E.result_dtype(*[o.dtype for o in operands if o.dtype != np.bool_ and not getattr(o, "weak", False)]) if any(
                o.dtype != np.bool_ and not getattr(o, "weak", False) for o in operands
            ) else np.dtype(np.float64)
            if isinstance(n, E.Select):
                dtype = n.dtype
        values = [self.operand(o, idx, dtype, p) for o in operands]
        return self.compute(n, values)

    # ---------------------------------------------------------------- nests
    def nest(self, n) -> None:
        if isinstance(n, (E.View, E.Transpose, E.Index)):
            self.loops(_dims(n.ndim), n.shape, lambda idx: self.store(n, self.read(n, idx), idx))
        elif isinstance(n, E.Copy):
            self.loops(_dims(n.ndim), n.shape, lambda idx: self.store(n, self.read(n.operands[0], idx), idx))
        elif isinstance(n, (E.Map, E.Select)):
            self.loops(_dims(n.ndim), n.shape, lambda idx: self.store(n, self.elementwise(n, idx), idx))
        elif isinstance(n, E.Reduce):
            self.reduction(n)
        elif isinstance(n, E.MatMul):
            self.matmul(n)
        elif isinstance(n, E.SparseMap):
            self.positions(n)
        elif isinstance(n, E.SparseReduce):
            self.sparse_reduce(n)
        elif isinstance(n, E.SpMM):
            self.spmm(n)
        elif isinstance(n, E.DenseSpMM):
            self.dense_spmm(n)
        else:
            raise AssertionError(type(n).__name__)

    def loops(self, dims: list, shape: tuple, body, prefix: list = ()) -> None:
        """Perfect loops over ``dims`` of ``shape``; ``body(idx)`` inside."""
        b = self.b
        if not dims:
            body(list(prefix))
            return
        with b.loop(dims[0], shape[0]):
            d = b.dim(dims[0])
            self.loops(dims[1:], shape[1:], body, [*prefix, d])

    def init(self, n, kind: str, idx: list) -> None:
        self.b.store(self.b.constant(IDENTITY[kind], element(n.dtype)), self.buffers[id(n)], idx)

    def reduction(self, n: E.Reduce) -> None:
        b = self.b
        x = n.operands[0]
        axes = n.axes
        kept = [a for a in range(x.ndim) if a not in axes]
        names = {}
        for pos, a in enumerate(kept):
            names[a] = AXES[pos]
        for r, a in enumerate(axes):
            names[a] = "k" if r == 0 else f"k{r}"
        acc = self.buffers[id(n)]
        trailing = all(a > max(kept) for a in axes) if kept else True

        def accumulate(all_idx):
            v = self.operand(x, all_idx, n.dtype)
            b.reduce(n.kind, v, acc, [all_idx[a] for a in kept])

        if trailing:
            def per_element(out_idx):
                self.init(n, n.kind, out_idx)
                self.loops([names[a] for a in axes], [x.shape[a] for a in axes], lambda red: accumulate(out_idx + red))

            self.loops([names[a] for a in kept], [x.shape[a] for a in kept], per_element)
        else:
            self.loops([names[a] for a in kept], [x.shape[a] for a in kept], lambda out_idx: self.init(n, n.kind, out_idx))
            self.loops([names[a] for a in range(x.ndim)], x.shape, accumulate)

    def matmul(self, n: E.MatMul) -> None:
        b = self.b
        a, m = n.operands
        acc = self.buffers[id(n)]
        K = a.shape[-1]
        rows = a.shape[:-1]  # () or (N,)
        cols = m.shape[1:]  # () or (M,)
        dims_rows = ["i"] if rows else []
        dims_cols = (["j"] if rows else ["i"]) if cols else []
        # the innermost loop reads memory in order: k where both operands
        # run along it (a row of a times a row of a transposed b), else the
        # result's last axis
        a_along_k = contiguous(a, a.ndim - 1)
        if (a_along_k and (not cols or contiguous(m, 0))) or id(n) in self.sampled:
            form = "dot"  # (a sampled product: each element a nest lt-fuse can take under the mask)
        elif cols or not rows:
            form = "axpy"
        else:
            form = "columns"  # a.T @ v: for k { for i { out[i] += a[i, k] * v[k] } }

        def product(i, kk, j):
            x = self.operand(a, i + [kk], n.dtype)
            y = self.operand(m, [kk] + j, n.dtype)
            return b.binary("mulf", x, y)

        if form == "dot":
            def per_element(out_idx):
                i, j = out_idx[: len(rows)], out_idx[len(rows):]
                self.init(n, "add", out_idx)
                with b.loop("k", K):
                    kk = b.dim("k")
                    b.reduce("add", product(i, kk, j), acc, out_idx)

            self.loops(dims_rows + dims_cols, rows + cols, per_element)
        elif form == "axpy":
            def per_row(i):
                self.loops(dims_cols, cols, lambda j: self.init(n, "add", i + j))
                with b.loop("k", K):
                    kk = b.dim("k")
                    self.loops(dims_cols, cols, lambda j: b.reduce("add", product(i, kk, j), acc, i + j))

            self.loops(dims_rows, rows, per_row)
        else:
            self.loops(dims_rows, rows, lambda i: self.init(n, "add", i))
            with b.loop("k", K):
                kk = b.dim("k")
                self.loops(dims_rows, rows, lambda i: b.reduce("add", product(i, kk, []), acc, i))

    # --------------------------------------------------------------- sparse
    def positions(self, n: E.SparseMap) -> None:
        """``for p in nnz { T[p] = f(...) }``: one loop over the stored
        positions (a stored value's row from ``rows[p]``, its column from
        ``indices[p]``, read where a dense operand needs them), so that
        lt-fuse can compute T wherever a position is read.  A node of
        ``by_rows`` (one that reads values of its rows only, ``row_wise``)
        is a row nest instead, ``for i { for p in indptr[i]..indptr[i+1]
        { T[p] = f(..., D[i]) } }``, which lt-merge can merge with the row
        nests around it (sparse softmax's maximum, exponentials, sum and
        quotients as one row loop)."""
        b = self.b
        st = n.structure
        _, indices, rows = self.csr[id(st)]
        if st.nnz == 0:
            return  # no stored value to compute (an empty matrix)
        if id(n) in self.by_rows:
            with b.loop("i", st.shape[0]):
                i = b.dim("i")
                lo, hi = self.row_bounds(st, i)
                with b.for_(lo, hi, b.constant(1, "index")) as p:
                    self.store(n, self.elementwise(n, [i, None], p), [p])
            return
        with b.loop("p", st.nnz):
            p = b.dim("p")
            i = self.stored_index(rows, p, st.shape[0] - 1) if _needs_rows(n) else None
            j = self.stored_index(indices, p, st.shape[1] - 1) if _needs_columns(n) else None
            self.store(n, self.elementwise(n, [i, j], p), [p])

    def row_bounds(self, st, i):
        """Row i's stored positions, ``indptr[i] .. indptr[i + 1]``."""
        b = self.b
        indptr = self.csr[id(st)][0]
        nnz = st.nnz
        lo = self.clamp(b.cast("index_cast", b.load(indptr, [i]), "index"), nnz)
        hi = self.clamp(b.cast("index_cast", b.load(indptr, [b.binary("addi", i, b.constant(1, "index"))]), "index"), nnz)
        return lo, hi

    def clamp(self, v, top: int):
        """``v`` clamped into ``[0, top]``: a CSR argument is validated before
        the call (``csr.py``), so this never changes a value; it lets the
        bounds analysis prove every access in range."""
        b = self.b
        return b.binary("minsi", b.binary("maxsi", v, b.constant(0, "index")), b.constant(top, "index"))

    def stored_index(self, array, p, top: int):
        """The row or column index ``array[p]`` of stored position ``p``
        (``indices`` or the rows array), as an index clamped into ``[0,
        top]`` in one unsigned ``minui`` (a negative index is a huge
        unsigned one: it becomes ``top``), where ``clamp`` takes two signed
        ops: this one runs once a stored value, in the sparse loops' bodies
        (SpMM's gather: 2 instructions instead of 5, twice with its
        prefetch; the kernel of SpMM-MM 4096² 1% x 64 columns 0.229 against
        0.257 ms on a 2-core AMD EPYC znver5, block medians, one process).
        Validated, it never changes a value either."""
        b = self.b
        return b.binary("minui", b.cast("index_cast", b.load(array, [p]), "index"), b.constant(top, "index"))

    def sparse_reduce(self, n: E.SparseReduce) -> None:
        b = self.b
        x = n.operands[0]
        st = x.structure
        acc = self.buffers[id(n)]
        with b.loop("i", st.shape[0]):
            i = b.dim("i")
            self.init(n, n.kind, [i])
            lo, hi = self.row_bounds(st, i)
            with b.for_(lo, hi, b.constant(1, "index")) as p:
                b.reduce(n.kind, self.operand(x, [], n.dtype, p), acc, [i])

    def spmm(self, n: E.SpMM) -> None:
        b = self.b
        a, m = n.operands
        st = a.structure
        indices = self.csr[id(st)][1]
        acc = self.buffers[id(n)]
        cols = m.shape[1:]
        if self.concordant and cols:
            # TACO's loop order (the result's indices outside the sparse
            # one): each element a dot product of its own, what maximal
            # fusion inlines wherever the element is read
            def element(out_idx):
                i, j = out_idx
                self.init(n, "add", out_idx)
                lo, hi = self.row_bounds(st, i)
                with b.for_(lo, hi, b.constant(1, "index")) as p:
                    c = self.stored_index(indices, p, st.shape[1] - 1)
                    y = self.operand(m, [c, j], n.dtype)
                    b.reduce("add", b.binary("mulf", self.operand(a, [], n.dtype, p), y), acc, out_idx)

            self.loops(["i", "j"], (st.shape[0],) + cols, element)
            return
        with b.loop("i", st.shape[0]):
            i = b.dim("i")
            self.loops(["j"] if cols else [], cols, lambda j: self.init(n, "add", [i] + j))
            lo, hi = self.row_bounds(st, i)
            with b.for_(lo, hi, b.constant(1, "index")) as p:
                c = self.stored_index(indices, p, st.shape[1] - 1)
                x = self.operand(a, [], n.dtype, p)

                def update(j):
                    y = self.operand(m, [c] + j, n.dtype)
                    b.reduce("add", b.binary("mulf", x, y), acc, [i] + j)

                self.loops(["j"] if cols else [], cols, update)


    def dense_spmm(self, n: E.DenseSpMM) -> None:
        """``m @ a``, ``a`` CSR.  1-D m: ``for k { x = m[k]; for p in row k {
        out[indices[p]] += x * a[p] } }``.  2-D m (R x K, read through a copy
        with K along rows: ``Graph.matmul``): the result is made transposed,
        ``for k { for p in row k { for i in R { T[indices[p], i] += m[i, k] *
        a[p] } } }`` -- each stored value of a scales a contiguous row of m.T
        into a contiguous row of T, a vector loop -- then ``out[i, j] = T[j,
        i]``."""
        b = self.b
        m, a = n.operands
        st = a.structure
        indices = self.csr[id(st)][1]
        acc = self.buffers[id(n)]
        cols = st.shape[1]
        if m.ndim == 1:
            self.loops(["j"], (cols,), lambda j: self.init(n, "add", j))
            with b.loop("k", st.shape[0]):
                k = b.dim("k")
                x = self.operand(m, [k], n.dtype)
                lo, hi = self.row_bounds(st, k)
                with b.for_(lo, hi, b.constant(1, "index")) as p:
                    c = self.stored_index(indices, p, cols - 1)
                    b.reduce("add", b.binary("mulf", x, self.operand(a, [], n.dtype, p)), acc, [c])
            return
        rows = m.shape[0]
        t = b.alloc(["j", "i"], memref((cols, rows), element(n.dtype)), name=b.fresh("t"))
        zero = b.constant(0.0, element(n.dtype))
        self.loops(["j", "i"], (cols, rows), lambda idx: b.store(zero, t, idx))
        with b.loop("k", st.shape[0]):
            k = b.dim("k")
            lo, hi = self.row_bounds(st, k)
            with b.for_(lo, hi, b.constant(1, "index")) as p:
                c = self.stored_index(indices, p, cols - 1)
                v = self.operand(a, [], n.dtype, p)
                self.loops(["i"], (rows,), lambda i: b.reduce("add", b.binary("mulf", self.operand(m, [i[0], k], n.dtype), v), t, [c, i[0]]))
        self.loops(["i", "j"], (rows, cols), lambda idx: self.store(n, b.load(t, [idx[1], idx[0]]), idx))


def _sampled(todo: list) -> set:
    """ids of the dense products read at a CSR's stored positions (an
    SDDMM: ``A * f(B @ C)``, element-wise ops between): written as one dot
    product an element, so that fusing them into the positions' nest
    computes only the stored ones, whatever their operands' layout."""
    return {id(m) for n in todo if isinstance(n, E.SparseMap) for m in sampled_products(n.operands)}


def sampled_products(operands) -> list:
    """The dense products without a value that an element-wise operation
    on a CSR with these ``operands`` reads at its stored positions
    (through element-wise ops and views)."""
    out = []
    stack = [o for o in operands if not o.sparse]
    while stack:
        n = stack.pop()
        if n.value is not None:
            continue
        if isinstance(n, E.MatMul):
            out.append(n)
        elif isinstance(n, (E.Map, E.Select, E.View)):
            stack.extend(o for o in n.operands if not o.sparse)
    return out


def contiguous(n: E.Lazy, axis: int) -> bool:
    """Whether reading ``n`` along ``axis`` walks memory in order (or
    reads one element: a broadcast axis)."""
    if isinstance(n, E.Transpose):
        return contiguous(n.operands[0], n.ndim - 1 - axis)
    if isinstance(n, E.View):
        if axis in n.new:
            return True
        return contiguous(n.operands[0], axis - sum(1 for a in n.new if a < axis))
    if isinstance(n, E.Index):
        s = n.spec[axis]
        return s is None or contiguous(n.operands[0], s[0])
    return axis == n.ndim - 1 or n.shape[axis] == 1


def _dense_operands(n) -> list:
    return [o for o in n.operands if not o.sparse and o.shape]


def _needs_rows(n) -> bool:
    """Whether an element-wise op over a CSR's positions reads a dense
    operand that varies along the rows."""
    return isinstance(n, E.SparseMap) and any(o.ndim == 2 and o.shape[0] != 1 for o in _dense_operands(n))


def row_chains(todo: list, fused: set) -> tuple:
    """(heads, inlined): the ids of the element-wise ops over a CSR's
    positions that ``lt-fuse`` leaves nests of their own (not in ``fused``)
    and that, with the element-wise ops on the same positions fused into
    them (``inlined``), read dense operands by row only (``x[:, None]``):
    written as row nests with those ops computed inside
    (``Lowering.positions``), lt-merge can merge them with the row nests
    around them (sparse softmax's ``exp(A - m[:, None])``: one row loop
    with the maximum before it and the sum after it)."""
    heads, inlined = set(), set()
    for n in todo:
        if not isinstance(n, E.SparseMap) or id(n) in fused:
            continue
        chain, stack = [], [n]
        while stack:
            c = stack.pop()
            chain.append(c)
            stack.extend(o for o in c.operands if isinstance(o, E.SparseMap) and id(o) in fused)
        if any(_needs_rows(c) for c in chain) and not any(_needs_columns(c) for c in chain):
            heads.add(id(n))
            inlined.update(id(c) for c in chain[1:])
    return frozenset(heads), frozenset(inlined)


def _needs_columns(n) -> bool:
    return isinstance(n, E.SparseMap) and any(o.shape[-1] != 1 for o in _dense_operands(n))


def _dims(ndim: int) -> list:
    return list(AXES[:ndim])


def _int_type(a: np.ndarray) -> str:
    return "i64" if a.dtype == np.int64 else "i32"
