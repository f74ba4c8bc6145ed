"""``lt-symmetric{loop=L}``: compute only the upper triangle's blocks of
a symmetric output, then mirror them into the lower triangle (BLAS's
``syrk`` against ``gemm``: covariance's ``d^T d`` in about half the flops).

A nest that writes ``C[r, c]`` with a value that is the same function of
``(r, c)`` as of ``(c, r)`` -- covariance's ``C[m, p] += d[n, m] *
d[n, p]`` -- computes a symmetric ``C``.  With L a loop over ``r`` or
``c`` (a tile loop) inside a loop over the other, each iteration of L
computes a block of ``C``, ``r0 .. r0+Br-1`` by ``c0 .. c0+Bc-1`` (the
logical indices at L's body and the extents of the levels inside it).
The pass puts L's body under ``scf.if (c0 + Bc > r0)``: a block wholly
below the diagonal is skipped.  Right after the outermost loop around L
a new nest ``for r { for c { if c < r: C[r, c] = C[c, r] } }`` copies
the upper triangle (every element of which was computed: its block
reaches the diagonal) into the lower one::

    for m in 40 : L0 [parallel]         for m in 40 : L0 [parallel, dynamic]
     for p in 5 : L1                     for p in 5 : L1
      for n in 140 : L2        ->         if p + 24 > m: for n in 140 : L2 ...
       ... C[m, p] += d[n,m]*d[n,p]     for m in 120 : L5
                                         for p in 120 : L6   if p < m: C[m, p] = C[p, m]

The mirror's outer loop is parallel where a loop of L's nest is (it
reads only above the diagonal and writes only below it, so its rows are
independent); a parallel loop around L is dealt ``dynamic``
unless it has a schedule already (its iterations no longer do equal
work).

What counts as symmetric: each value written into ``C`` (``lt.reduce``
of any kind, ``memref.store``) is compared, as an expression tree, with
itself after swapping the dims ``r`` and ``c`` in every ``lt.dim``, the
operands of commutative ops (``addf``, ``mulf``, ``maxnumf``, ...) taken
in either order.  Leaves: constants, values defined outside the nest,
``lt.dim`` ops of the full index (under every level of their dim), and
loads of buffers nothing in the nest writes (their indices compared the
same way); a load of ``C`` itself only at the element being written.  A
value that adds to ``C``'s earlier contents (a reduce, or a read of the
element) also needs those contents symmetric: a store of a symmetric
value that does not read ``C`` at ``[r, c]`` before it in L or in the
nest, or, as the last thing before the nest that touches ``C``, a nest
of its own that only stores a constant (or a value from outside it) at
``[r, c]`` over the whole matrix under no condition (the frontend's and
the importer's initialisation).

Results: the blocks computed are computed by the same code as without
the pass, so the upper triangle is bit-identical to the unpruned nest's;
the lower triangle is its mirror, so ``C`` is exactly symmetric.  The
unpruned nest's lower triangle may differ from that in the last bits:
LLVM may contract a multiply-add into an FMA in one copy of a loop (a
full tile) and not in another (its tail), and a ``reassoc`` fastmath mode
lets it group a sum's terms differently in two copies.

Refuses (IR untouched, located): L annotated ``gpu`` or inside a GPU
mapping; nothing written inside L; an op inside L other than ``lt.loop``,
``lt.dim``, loads, stores, ``lt.reduce`` and ``arith``/``math``
arithmetic (a condition of the program's own, an atomic update, a call:
skipping a block could lose its effects); L under a condition inside its
nest; writes inside L to another buffer than ``C`` or to a ``C`` that is
not square (rank 2, equal extents) or that is allocated inside the nest;
an index of a write that is not the full logical index of a dim, or the
same dim twice; a nest that does not cover every row and column of
``C``; L not over ``r`` or ``c``, or no loop around L over the other
(nothing to skip); a value that is not symmetric (naming why); ``C``
read inside L other than at the element written; ``C`` used elsewhere in
the nest than inside L, except stores before L at ``[r, c]`` of
symmetric values under no condition (its initialisation); earlier
contents of ``C`` not known to be symmetric.
"""

from __future__ import annotations

from ..analysis.dependence import inside
from ..dialect import lt
from ..mlir import arith, ir, memref, scf
from .common import condition_between, find_loop, index_constant, loop_label, new_dim, new_loop, refuse, walk_ops
from .factor import _def_op
from .hoist import _is_arithmetic
from .registry import Option, register

NAME = "lt-symmetric"

_COMMUTATIVE = {
    "arith.addf", "arith.mulf", "arith.addi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
    "arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf",
    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
}

_SGT, _SLT = 4, 2  # arith.cmpi predicates


@register(NAME, Option("loop", int, help="a tile loop over one of the symmetric output's dims, inside a loop over the other"))
def symmetric(module_op, loop: int) -> None:
    """Compute only the blocks of a symmetric output on or above the diagonal, then mirror them."""
    target = find_loop(module_op, loop, NAME)
    _Plan(target, f"L{loop} {loop_label(target)}").rewrite()


def _dim_of(value) -> str | None:
    op = _def_op(value)
    if op is not None and op.name == "lt.dim":
        return ir.StringAttr(op.attributes["dim"]).value
    return None


def _levels(op, dim: str) -> int:
    """How many levels over ``dim`` enclose ``op``."""
    return sum(1 for l in lt.enclosing_loops(op) if lt.loop_dim(l) == dim)


def _depth(top, dim: str) -> int:
    """The most levels over ``dim`` nested in one another in ``top``'s nest."""
    best = 0
    for op in walk_ops(top):
        if op.name == "lt.loop" and lt.loop_dim(op) == dim:
            best = max(best, _levels(op, dim) + 1)
    return best


def _block(loop, dim: str) -> int:
    """Elements of ``dim`` one iteration of ``loop`` covers."""
    if lt.loop_dim(loop) == dim:
        return lt.inner_extent(loop)
    extents = [1]

    def visit(o):
        if o.name == "lt.loop" and o != loop and lt.loop_dim(o) == dim:
            extents.append(lt.inner_loop_extent(o))
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    loop.walk(visit, ir.WalkOrder.PRE_ORDER)
    return max(extents)


# what L may hold besides arith/math arithmetic: ops whose effects the pass knows
_ALLOWED = {"lt.loop", "lt.dim", "memref.load", "memref.store", "lt.reduce"}


def _previous(op):
    """The op before ``op`` in its block, or None."""
    prev = None
    for o in getattr(op, "operation", op).block.operations:
        if o.operation == op:
            return prev
        prev = o.operation
    return None


def _touches(op, buffer) -> bool:
    return any(buffer in list(o.operands) for o in walk_ops(op))


def reaches_diagonal(r0, c0, bc: int):
    """``c0 + bc > r0``, built at the insertion point: the block of columns
    ``c0 .. c0 + bc - 1`` has an element on or above the diagonal of row
    ``r0`` (the block's first row)."""
    end = arith.AddIOp(c0, index_constant(bc)).result
    return arith.CmpIOp(_SGT, end, r0).result


class _Plan:
    """Everything ``rewrite`` needs, checked before anything changes."""

    def __init__(self, loop, label: str):
        self.loop = loop
        self._writes = None
        around = lt.enclosing_loops(loop)
        self.top = around[-1] if around else loop
        for l in [loop, *around]:
            if "gpu" in lt.annotations(l):
                raise refuse(NAME, f"{label} is in a GPU mapping: a block skipped by one thread would diverge it "
                             "(apply lt-symmetric before lt-gpu-map)", loop)
        writes = [o for o in walk_ops(loop) if o.name in ("lt.reduce", "memref.store")]
        if not writes:
            raise refuse(NAME, f"{label} writes nothing", loop)
        for o in walk_ops(loop):
            if o == loop or o.name in _ALLOWED or _is_arithmetic(o):
                continue
            if o.regions:
                raise refuse(NAME, f"{label} holds a condition of its own ('{o.name}'): lt-symmetric needs "
                             "every element of a block computed the same way", o)
            raise refuse(NAME, f"{label} holds '{o.name}', whose effects lt-symmetric does not know: skipping a "
                         "block could lose them", o)
        if loop != self.top:
            cond = condition_between(loop, self.top)
            if cond is not None:
                raise refuse(NAME, f"{label} runs under '{cond.name}' inside its nest: the mirror would copy "
                             "into rows or columns the nest may not compute", cond)
        self.buffer = self._target(writes[0])
        owner = _def_op(self.buffer)
        if owner is not None and (inside(owner, self.top)):
            raise refuse(NAME, f"the matrix {label} writes is allocated inside its nest: the mirror after the "
                         "nest could not reach it", owner)
        t = self.buffer.type
        if not isinstance(t, ir.MemRefType) or ir.MemRefType(t).rank != 2:
            raise refuse(NAME, f"{label} writes a buffer of rank {ir.MemRefType(t).rank}, not a matrix", writes[0])
        shape = ir.MemRefType(t).shape
        if shape[0] != shape[1]:
            raise refuse(NAME, f"{label} writes a {shape[0]} x {shape[1]} matrix: only a square one can be symmetric",
                         writes[0])
        self.extent = shape[0]
        dims = None
        for w in writes:
            if self._target(w) != self.buffer:
                raise refuse(NAME, f"{label} also writes another buffer: skipping a block would lose those writes", w)
            these = self._write_dims(w, label)
            if dims is not None and these != dims:
                raise refuse(NAME, f"{label} writes the matrix at [{', '.join(these)}] and at [{', '.join(dims)}]", w)
            dims = these
        self.r, self.c = dims
        for d in dims:
            levels = [l for l in walk_ops(self.top) if l.name == "lt.loop" and lt.loop_dim(l) == d
                      and not any(lt.loop_dim(p) == d for p in lt.enclosing_loops(l))]
            extents = {lt.inner_loop_extent(l) for l in levels}
            if extents != {self.extent}:
                raise refuse(NAME, f"the nest covers {', '.join(map(str, sorted(extents)))} of dim '{d}', not all "
                             f"{self.extent} rows and columns of the matrix: the mirror would copy what it never "
                             "computed", loop)
        own = lt.loop_dim(loop)
        if own not in dims:
            raise refuse(NAME, f"{label} iterates dim '{own}', not one of the matrix's dims '{self.r}', '{self.c}'",
                         loop)
        other = self.c if own == self.r else self.r
        if not any(lt.loop_dim(l) == other for l in around):
            raise refuse(NAME, f"no loop around {label} iterates '{other}': every block reaches the diagonal, "
                         "nothing to skip (take a tile loop inside the other dim's tile loop)", loop)
        for w in writes:
            why = self._asymmetry(w.operands[0])
            if why is not None:
                raise refuse(NAME, f"the value written into the matrix is not symmetric in '{self.r}' and '{self.c}': "
                             f"{why[0]}", why[1] or w)
        self._check_other_accesses(label)
        if self._accumulates(writes) and not self._initialised(writes):
            raise refuse(NAME, f"{label} adds to the matrix's earlier values, and nothing before it sets every "
                         "element to a symmetric value (a store of one in the nest, or a nest of its own "
                         "storing a constant): its lower triangle would be lost", writes[0])
        self.bc = _block(loop, self.c)

    # ------------------------------------------------------------ checks

    @staticmethod
    def _target(op):
        return op.operands[1]

    def _write_dims(self, w, label) -> tuple[str, str]:
        idx = list(w.operands)[2:]
        dims = tuple(_dim_of(v) for v in idx)
        if None in dims:
            raise refuse(NAME, f"{label} writes the matrix at an index that is not a dim's logical index", w)
        if dims[0] == dims[1]:
            raise refuse(NAME, f"{label} writes the matrix's diagonal only (both indices are '{dims[0]}')", w)
        for v, d in zip(idx, dims):
            if _levels(_def_op(v), d) != _depth(self.top, d):
                raise refuse(NAME, f"{label} writes the matrix at a tile's index of '{d}', not an element's", w)
        return dims

    def _is_element(self, load) -> bool:
        """``load`` reads the matrix at the element ``at`` writes."""
        idx = list(load.operands)[1:]
        return [_dim_of(v) for v in idx] == [self.r, self.c] and all(
            _levels(_def_op(v), d) == _depth(self.top, d) for v, d in zip(idx, (self.r, self.c)))

    def _asymmetry(self, value):
        """None when ``value`` is the same function of (r, c) as of (c, r),
        else (why, the op to point at or None)."""
        self._culprit, self._culprit_op = None, None
        memo: dict = {}
        a = self._canon(value, False, memo, {})
        b = self._canon(value, True, memo, {}) if a is not None else None
        if a is None or b is None:
            return self._culprit, self._culprit_op
        if a != b:
            return "swapping the two dims gives another expression", _def_op(value)
        return None

    def _canon(self, value, swap: bool, memo: dict, cache: dict):
        key = (value, swap)
        if key in cache:
            return cache[key]
        out = self._canon_uncached(value, swap, memo, cache)
        cache[key] = out
        return out

    def _canon_uncached(self, value, swap, memo, cache):
        op = _def_op(value)
        if op is None and isinstance(value.owner, ir.Block):
            parent = value.owner.owner
            if parent is not None and parent.name == "lt.loop" and lt.loop_dim(parent) in (self.r, self.c) \
                    and inside(parent, self.top):
                self._culprit, self._culprit_op = "it reads a loop's iteration number, not its dim's index", None
                return None
        if op is None or not inside(op, self.top):
            if op is not None and op.name == "arith.constant":
                return ("const", str(op.attributes["value"]))
            return ("value", memo.setdefault(value, len(memo)))
        name = op.name
        if name == "lt.dim":
            d = ir.StringAttr(op.attributes["dim"]).value
            if d in (self.r, self.c) and _levels(op, d) != _depth(self.top, d):
                self._culprit, self._culprit_op = f"it reads a tile's index of '{d}', not an element's", op
                return None
            if swap and d in (self.r, self.c):
                d = self.c if d == self.r else self.r
            return ("dim", d)
        if name == "arith.constant":
            return ("const", str(op.attributes["value"]))
        if name == "memref.load":
            buf = op.operands[0]
            if buf == self.buffer:
                if self._is_element(op):
                    return ("element",)
                self._culprit, self._culprit_op = "it reads the matrix at another element than the one written", op
                return None
            if buf in self._written():
                self._culprit, self._culprit_op = "it reads a buffer the nest writes", op
                return None
            parts = [self._canon(v, swap, memo, cache) for v in list(op.operands)[1:]]
            if None in parts:
                return None
            return ("load", self._canon(buf, swap, memo, cache), tuple(parts))
        if _is_arithmetic(op) and len(op.results) == 1:
            parts = [self._canon(v, swap, memo, cache) for v in op.operands]
            if None in parts:
                return None
            if name in _COMMUTATIVE:
                parts = sorted(parts, key=repr)
            attrs = tuple(sorted((a, str(op.attributes[a])) for a in op.attributes))
            return (name, attrs, tuple(parts))
        self._culprit, self._culprit_op = f"it holds '{name}', which lt-symmetric cannot compare", op
        return None

    def _written(self) -> set:
        """The buffers an op of the nest writes (or may: any op other than a
        load that takes it)."""
        if self._writes is None:
            self._writes = set()
            for op in walk_ops(self.top):
                if op.name == "memref.load":
                    continue
                for v in op.operands:
                    if isinstance(v.type, ir.MemRefType):
                        self._writes.add(v)
        return self._writes

    def _check_other_accesses(self, label: str) -> None:
        """``C`` elsewhere in the nest: only stores before L, at ``[r, c]``,
        of symmetric values, under no condition."""
        before = True
        self.stores_before = []
        for op in walk_ops(self.top):
            if op == self.loop:
                before = False
                continue
            if self.buffer not in list(op.operands):
                continue
            if inside(op, self.loop):
                if op.name == "memref.load" and not self._is_element(op):
                    raise refuse(NAME, f"{label} reads the matrix at another element than it writes", op)
                continue
            if op.name == "memref.store" and before and op.operands[1] == self.buffer \
                    and condition_between(op, self.top) is None and self._write_dims(op, label) == (self.r, self.c) \
                    and self._asymmetry(op.operands[0]) is None:
                self.stores_before.append(op)
                continue
            what = "read" if op.name == "memref.load" else "written" if op.name in ("memref.store", "lt.reduce") \
                else f"taken by '{op.name}'"
            raise refuse(NAME, f"the matrix is {what} in the nest outside {label}: it would see the lower "
                         "triangle before the mirror fills it", op)

    def _reads_element(self, value) -> bool:
        """Whether ``value`` reads the matrix (at the element written)."""
        return "('element',)" in repr(self._canon(value, False, {}, {}))

    def _accumulates(self, writes) -> bool:
        """Whether the values L writes depend on what the matrix held."""
        return any(w.name == "lt.reduce" or self._reads_element(w.operands[0]) for w in writes)

    def _initialised(self, writes) -> bool:
        """Every element is set to a symmetric value that does not read the
        matrix before L adds to it: by a store in L before its first
        accumulating write, by a store in the nest before L, or by the last
        nest before this one that touches the matrix, when all that nest
        does is store a constant (or a value from outside it) at ``[r, c]``
        over the whole matrix, under no condition."""
        if any(not self._reads_element(st.operands[0]) for st in self.stores_before):
            return True
        first = next((i for i, w in enumerate(writes) if self._accumulates([w])), len(writes))
        if any(w.name == "memref.store" and not self._reads_element(w.operands[0]) for w in writes[:first]):
            return True
        prev = _previous(self.top)
        while prev is not None and not _touches(prev, self.buffer):
            prev = _previous(prev)
        return prev is not None and prev.name == "lt.loop" and self._init_nest(prev)

    def _init_nest(self, nest) -> bool:
        uses = [o for o in walk_ops(nest) if self.buffer in list(o.operands)]
        for o in uses:
            if o.name != "memref.store" or o.operands[1] != self.buffer or condition_between(o, nest) is not None:
                return False
            idx = list(o.operands)[2:]
            if [_dim_of(v) for v in idx] != [self.r, self.c]:
                return False
            if any(_levels(_def_op(v), d) != _depth(nest, d) for v, d in zip(idx, (self.r, self.c))):
                return False
            value = _def_op(o.operands[0])
            if value is not None and value.name != "arith.constant" and (inside(value, nest)):
                return False
        for d in (self.r, self.c):
            levels = [l for l in walk_ops(nest) if l.name == "lt.loop" and lt.loop_dim(l) == d
                      and not any(lt.loop_dim(p) == d for p in lt.enclosing_loops(l))]
            if {lt.inner_loop_extent(l) for l in levels} != {self.extent}:
                return False
        return bool(uses)

    # ---------------------------------------------------------- rewrite

    def rewrite(self) -> None:
        loop, r, c = self.loop, self.r, self.c
        body = lt.loop_body(loop)
        ops = list(body.operations)
        with loop.location:
            with ir.InsertionPoint.at_block_begin(body):
                guard = scf.IfOp(reaches_diagonal(new_dim(r), new_dim(c), self.bc))
            with ir.InsertionPoint(guard.then_block):
                yield_op = scf.YieldOp([])
        for op in ops:
            op.operation.move_before(yield_op)
        parallel = any(o.name == "lt.loop" and "parallel" in lt.annotations(o) for o in walk_ops(self.top))
        for l in [loop, *lt.enclosing_loops(loop)]:
            if "parallel" in lt.annotations(l) and "lt.schedule" not in l.attributes:
                l.attributes["lt.schedule"] = ir.StringAttr.get("dynamic")
        self._mirror(parallel)

    def _mirror(self, parallel: bool) -> None:
        top, r, c, n = self.top, self.r, self.c, self.extent
        notes = {"lt.parallel": ir.UnitAttr.get()} if parallel else {}
        with top.location:
            with ir.InsertionPoint.after(top):
                _, rows = new_loop(r, n, 0, notes)
            with ir.InsertionPoint(rows):
                _, cols = new_loop(c, n, 0)
            with ir.InsertionPoint(cols):
                ri, ci = new_dim(r), new_dim(c)
                below = arith.CmpIOp(_SLT, ci, ri).result
                guard = scf.IfOp(below)
                with ir.InsertionPoint(guard.then_block):
                    v = memref.LoadOp(self.buffer, [ci, ri]).result
                    memref.StoreOp(v, self.buffer, [ri, ci])
                    scf.YieldOp([])

