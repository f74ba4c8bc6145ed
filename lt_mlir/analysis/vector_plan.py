"""Whether the body of an innermost ``lt.loop`` can run as vector code
(``lt.vectorize = W``), and how each of its values would vectorize.

W consecutive iterations run as one: each value of the body is *uniform*
(the same in all W iterations), *lanes* (an index that is ``base + lane``:
``lt.dim`` of the loop's dim, plus or minus uniform values) or *vector*
(W values).  Uniform ops stay scalar; loads and stores whose last index is
lanes become vector loads and stores; arithmetic on vectors becomes the same
op on ``vector<W x T>``; an ``lt.reduce`` of a vector into one uniform
location first reduces the vector, one into lanes locations combines
vectors.  A load whose lanes run along another dim of a memref of static
shape (a column ``A[j, k]``, a diagonal ``a[i, i]``) is a strided
``vector.gather``; stores and reductions must still be contiguous.

A body under a condition on the vectorized dim (the guard of a triangular
loop, ``scf.if j < i + 1``) vectorizes under a *mask*: the comparison of a
lanes index with a uniform value is a ``vector<W x i1>``, the ``scf.if``
runs where any lane holds (so a uniform op inside runs only where the
scalar code would have run it for some lane), and inside it lanes loads,
stores and reductions are masked (``vector.maskedload``/``maskedstore``;
a reduction into one location takes the reduction's identity where the
mask is off).  Arithmetic inside runs on every lane; masked-off lanes are
never stored.  An ``if`` on the vectorized dim with an ``else`` or results
is refused, as is any other op with regions that uses a varying value.

``BodyPlan`` classifies a body op by op and refuses (``NotVectorizable``)
what cannot vectorize; it builds nothing.  Its ``emit_*`` hooks are where
``lowering/vectorize.py`` builds the vector ops, so the rules exist once.
``plan`` asks it about a loop without changing anything.
"""

from __future__ import annotations

from ..dialect import lt
from ..mlir import ir
from .dependence import shared_reductions

LANE_OPS = ("arith.addi", "arith.subi")
_SWAPPED = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "ult": "ugt", "ule": "uge", "ugt": "ult", "uge": "ule", "eq": "eq", "ne": "ne"}
PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]  # arith.cmpi's enum order


class NotVectorizable(Exception):
    def __init__(self, message: str, op=None):
        super().__init__(message)
        self.op = op


def gather_distances(loop) -> list:
    """The distance in bytes between the lanes of each load vectorizing
    ``loop`` would gather along a dim (empty when it has none or cannot be
    vectorized)."""
    body = lt.body_ops(lt.loop_body(loop))
    p = BodyPlan(lt.loop_dim(loop), lt.loop_body(loop).arguments[0])
    try:
        p.run(body)
    except NotVectorizable:
        return []
    return p.gathers


def plan_data_loop(for_op) -> NotVectorizable | None:
    """Why the body of ``for_op``, an ``scf.for`` with bounds known at run
    time (step 1, no carried values), cannot run W iterations at once, or
    None.  The lowering runs its whole groups of W from its lower bound
    unmasked, then the rest of its iterations as the scalar loop."""
    body = list(for_op.regions[0].blocks)[0]
    if len(list(body.arguments)) != 1 or len(for_op.results):
        return NotVectorizable("a loop that carries values cannot be vectorized", for_op)
    step = for_op.operands[2].owner
    if not (hasattr(step, "name") and step.name == "arith.constant" and ir.IntegerAttr(step.attributes["value"]).value == 1):
        return NotVectorizable("only a loop of step 1 can be vectorized", for_op)
    ops = list(body.operations)[:-1]
    for op in ops:
        inner = []
        op.walk(lambda o: (inner.append(o) if o.name in ("lt.loop", "scf.for") else None, ir.WalkResult.ADVANCE)[1])
        if inner:
            return NotVectorizable("only an innermost loop can be vectorized", for_op)
    why = _data_loop_conflict(ops)
    if why is not None:
        return why
    p = BodyPlan("", body.arguments[0])
    try:
        p.run(ops)
    except NotVectorizable as e:
        return e
    return None


def _data_loop_conflict(ops: list) -> NotVectorizable | None:
    """A buffer the body writes and also accesses at other indices (W
    iterations at once would reorder those accesses), or None; reductions
    into one location that the body does not otherwise read are fine."""
    accesses: dict = {}
    for top in ops:
        def visit(o):
            if o.name in ("memref.load", "memref.store", "lt.reduce"):
                at = 0 if o.name == "memref.load" else 1
                operands = list(o.operands)
                accesses.setdefault(operands[at], []).append((o, operands[at + 1 :]))
            return ir.WalkResult.ADVANCE

        top.walk(visit)
    for buffer, uses in accesses.items():
        writes = [(o, idx) for o, idx in uses if o.name != "memref.load"]
        if not writes:
            continue
        if all(o.name == "lt.reduce" for o, _ in uses) and len({ir.StringAttr(o.attributes["kind"]).value for o, _ in uses}) == 1:
            continue  # one kind of reduction only
        first = writes[0][1]
        for o, idx in uses:
            if len(idx) != len(first) or any(a != b for a, b in zip(idx, first)):
                return NotVectorizable("the loop writes a buffer it also accesses elsewhere (its iterations would be reordered)", o)
    return None


def plan(loop) -> NotVectorizable | None:
    """Why ``loop``'s body cannot be vectorized, or None."""
    body = lt.body_ops(lt.loop_body(loop))
    for op in body:
        found = []
        op.walk(lambda o: (found.append(o) if o.name == "lt.loop" else None, ir.WalkResult.ADVANCE)[1])
        if found:
            return NotVectorizable("only an innermost loop can be vectorized", loop)
    atomic = [op for p in lt.enclosing_loops(loop) if "parallel" in lt.annotations(p) for op in shared_reductions(p)]
    try:
        BodyPlan(lt.loop_dim(loop), lt.loop_body(loop).arguments[0], atomic=atomic).run(body)
    except NotVectorizable as e:
        return e
    return None


class BodyPlan:
    """Classifies the ops of a loop body for vectorization along ``dim``.

    ``lanes`` maps each lanes index to its base (what ``emit_lane_base``
    returned), ``vectors`` each vector value to its vector (what the
    ``emit_*`` hooks returned); ``dead`` lists the ops a vector op replaces.
    The hooks here build nothing (a dry run)."""

    def __init__(self, dim: str, iteration_arg=None, iteration0=None, atomic=()):
        self.dim = dim
        self.atomic = list(atomic)  # reductions an enclosing parallel loop makes atomic
        self.lanes: dict = {}  # value -> base (scalar index value) of a lanes index
        self.vectors: dict = {}  # value -> vector value
        self.dead: list = []
        self.what = f"the vectorized dim '{dim}'" if dim else "the vectorized loop's variable"  # for messages
        self.mask = None  # the mask of the ops being classified (inside an if on the dim)
        self.mask_depth = 0  # how many ifs on the dim are around them
        self.gathers: list = []  # bytes between the lanes of each load gathered along a dim
        if iteration_arg is not None:
            self.lanes[iteration_arg] = iteration0

    def run(self, ops: list) -> None:
        """Classify (and, through the hooks, rewrite) ``ops``; the replaced
        ones are left in ``self.dead`` for the caller to erase."""
        for op in ops:
            self._op(op)

    # -- hooks: what a vectorizing subclass builds (nothing here)
    def lane0(self):
        """The base of ``lt.dim dim`` (the first lane's index)."""
        return None

    def emit_lane_base(self, op, x, y):
        """Base of lanes index ``op`` (an add/sub) from operand bases ``x``, ``y``."""
        return None

    def emit_broadcast(self, value, op):
        return None

    def emit_load(self, op, lead, base, mask=None):
        return None

    def emit_store(self, op, value, lead, base, mask=None) -> None:
        return None

    def emit_lane_compare(self, op, predicate: str, base, other):
        """The mask ``base + lane <predicate> other`` (``other`` uniform)."""
        return None

    def emit_elementwise(self, op, operands):
        return None

    def emit_reduce_to_scalar(self, op, kind: str, value, mask=None) -> None:
        return None

    def emit_reduce_lanes(self, op, kind: str, value, lead, base, mask=None) -> None:
        """``acc[lead, base + lane] <kind>= value[lane]`` for every lane (under
        ``mask``); when the reduction is atomic (other iterations of a
        parallel or GPU-mapped loop share its elements), one atomic update
        a lane."""
        return None

    # -- classification helpers
    def _is_lanes(self, v) -> bool:
        return v in self.lanes

    def _is_vector(self, v) -> bool:
        return v in self.vectors

    def _varying(self, v) -> bool:
        return self._is_lanes(v) or self._is_vector(v)

    def as_vector(self, v, op):
        """``v`` as a vector: its vector, or a broadcast of a uniform value."""
        if v in self.vectors:
            return self.vectors[v]
        if v in self.lanes:
            raise NotVectorizable("an index of the vectorized dim is used as a value", op)
        return self.emit_broadcast(v, op)

    def _split_indices(self, indices, op, what):
        """(uniform leading indices, base of the lanes last index) or raise."""
        *lead, last = indices
        if any(self._varying(i) for i in lead) or not self._is_lanes(last):
            raise NotVectorizable(f"{what} is not contiguous in {self.what}", op)
        return lead, self.lanes[last]

    # -- one op
    def _op(self, op) -> None:
        name = op.name
        if name == "lt.dim" and ir.StringAttr(op.attributes["dim"]).value == self.dim:
            self.lanes[op.results[0]] = self.lane0()
            self.dead.append(op)
            return
        if name in LANE_OPS and any(self._is_lanes(v) for v in op.operands):
            a, b = op.operands
            if self._varying(a) and self._varying(b):
                raise NotVectorizable("an index adds two values of the vectorized dim", op)
            if name == "arith.subi" and self._is_lanes(b):
                raise NotVectorizable("an index subtracts the vectorized dim", op)
            x = self.lanes[a] if self._is_lanes(a) else a
            y = self.lanes[b] if self._is_lanes(b) else b
            self.lanes[op.results[0]] = self.emit_lane_base(op, x, y)
            self.dead.append(op)
            return
        if name == "memref.load":
            indices = list(op.operands)[1:]
            if not any(self._varying(i) for i in indices):
                return  # uniform
            if not indices:
                return
            if self._is_lanes(indices[-1]) and not any(self._varying(i) for i in indices[:-1]):
                lead, base = self._split_indices(indices, op, "a load")
                self.vectors[op.results[0]] = self.emit_load(op, lead, base, self.mask)
            else:
                self.vectors[op.results[0]] = self._gather(op, indices)
            self.dead.append(op)
            return
        if name == "memref.store":
            value, buffer, *indices = list(op.operands)
            if not any(self._varying(i) for i in indices):
                if self._varying(value):
                    raise NotVectorizable("a store of a varying value to one location", op)
                if self.mask_depth:
                    raise NotVectorizable("a store to one location under a condition on the vectorized dim", op)
                return
            lead, base = self._split_indices(indices, op, "a store")
            self.emit_store(op, value, lead, base, self.mask)
            self.dead.append(op)
            return
        if name == "lt.reduce":
            self._reduce(op)
            return
        if name == "arith.cmpi" and any(self._is_lanes(v) for v in op.operands):
            a, b = op.operands
            if self._varying(a) and self._varying(b):
                raise NotVectorizable("a comparison of two values of the vectorized dim", op)
            predicate = PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
            if self._is_lanes(b):
                a, b, predicate = b, a, _SWAPPED[predicate]
            self.vectors[op.results[0]] = self.emit_lane_compare(op, predicate, self.lanes[a], b)
            self.dead.append(op)
            return
        if name == "scf.if":
            self._if(op)
            return
        if op.regions and (any(self._varying(v) for v in op.operands) or self._uses_varying(op)):
            raise NotVectorizable(f"'{name}' with regions cannot be vectorized", op)
        if not any(self._varying(v) for v in op.operands):
            return  # uniform
        if any(self._is_lanes(v) for v in op.operands):
            raise NotVectorizable(f"'{name}' uses an index of the vectorized dim as a value", op)
        if not (name.startswith("arith.") or name.startswith("math.")) or len(op.results) != 1:
            raise NotVectorizable(f"'{name}' cannot be vectorized", op)
        self.vectors[op.results[0]] = self.emit_elementwise(op, list(op.operands))
        self.dead.append(op)

    def _gather(self, op, indices):
        """A load whose lanes run along a leading dim (a column, a diagonal)
        of a memref of static shape, or whose index is a vector (computed
        from data, ``x[col[j]]``): a ``vector.gather`` from the element at
        the uniform indices (0 for a vector one), each lane ``stride``
        elements on along lanes dims and its own index along vector ones."""
        memref_type = ir.MemRefType(op.operands[0].type)
        shape = list(memref_type.shape)
        row_major = [1] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            row_major[k] = row_major[k + 1] * shape[k + 1]
        if any(d < 0 for d in shape) or memref_type.get_strides_and_offset() != (row_major, 0):
            raise NotVectorizable(f"a load is not contiguous in {self.what} (and its memref is not of static row-major shape)", op)
        stride = sum(row_major[k] for k, i in enumerate(indices) if self._is_lanes(i))
        if stride:
            self.gathers.append(stride * lt.nbytes([1], memref_type.element_type))
        by_data = [(self.vectors[i], row_major[k]) for k, i in enumerate(indices) if self._is_vector(i)]
        bases = [self.lanes[i] if self._is_lanes(i) else None if self._is_vector(i) else i for i in indices]
        return self.emit_gather(op, bases, stride, self.mask, by_data)

    def emit_gather(self, op, bases, stride: int, mask=None, by_data=()):
        """W elements from ``bases`` (the first lane's indices; None: 0, a
        dim indexed by data), ``stride`` elements apart along lanes dims,
        plus ``index * stride`` for each (index vector, stride) of
        ``by_data``."""
        return None

    def _uses_varying(self, op) -> bool:
        """Whether an op inside ``op``'s regions uses a varying value."""
        found = []

        def visit(inner):
            if any(self._varying(v) for v in inner.operands):
                found.append(inner)
            return ir.WalkResult.ADVANCE

        op.walk(visit)
        return bool(found)

    def _if(self, op) -> None:
        """``scf.if``: on a uniform condition its body is classified as the
        loop body is; on a varying one (a mask) it runs where any lane
        holds, its body under the mask (and the masks around it)."""
        cond = op.operands[0]
        blocks = [list(r.blocks) for r in op.regions]
        then_ops = list(blocks[0][0].operations)[:-1]  # all but scf.yield
        else_ops = list(blocks[1][0].operations)[:-1] if len(blocks) > 1 and blocks[1] else []
        if not self._varying(cond):
            if len(op.results) and self._uses_varying(op):
                raise NotVectorizable("an 'scf.if' with results inside a vectorized loop", op)
            self.run(then_ops)
            self.run(else_ops)
            return
        if len(op.results) or else_ops:
            raise NotVectorizable("an if/else (or an if with results) on a condition of the vectorized dim", op)
        if not self._is_vector(cond):
            raise NotVectorizable("an if on an index of the vectorized dim", op)
        outer, outer_depth = self.mask, self.mask_depth
        mask = self.vectors[cond] if outer is None else self.emit_and(op, outer, self.vectors[cond])
        for if_op, body_mask in self.emit_masked_ifs(op, mask):
            self.mask, self.mask_depth = body_mask, outer_depth + 1
            try:
                self.run(list(list(if_op.regions[0].blocks)[0].operations)[:-1])
            finally:
                self.mask, self.mask_depth = outer, outer_depth

    def emit_masked_ifs(self, op, mask) -> list:
        """(``scf.if``, the mask of its body) for an if on ``mask``: where
        the lowering builds them, one on "every lane" (body unmasked) and
        one on "some but not every lane" (body masked)."""
        return [(op, mask)]

    def emit_and(self, op, a, b):
        """The lanes set in both masks."""
        return None

    def _reduce(self, op) -> None:
        value, acc, *indices = list(op.operands)
        kind = ir.StringAttr(op.attributes["kind"]).value
        if not any(self._varying(i) for i in indices):
            if not self._varying(value):
                if kind in ("max", "min"):
                    return  # idempotent: once a group (where any lane holds) is W times (a check's flag)
                if self.mask_depth:
                    raise NotVectorizable("a reduction of one value under a condition on the vectorized dim", op)
                raise NotVectorizable("a reduction adds the same value in every vectorized iteration", op)
            self.emit_reduce_to_scalar(op, kind, value, self.mask)
            return
        lead, base = self._split_indices(indices, op, "a reduction's accumulator")
        self.emit_reduce_lanes(op, kind, value, lead, base, self.mask)
        self.dead.append(op)
