"""Vector code for an ``lt.vectorize = W`` loop body: the classification of
``analysis/vector_plan.py`` (the rules, and what it refuses), with its hooks
building ``vector`` ops.  Loads and stores whose last index is lanes become
``vector.load``/``vector.store``; arithmetic on vectors the same op on
``vector<W x T>``; an ``lt.reduce`` of a vector into one uniform location a
``vector.reduction`` first, one into lanes locations a vector combine.
A reduction into one location that nothing else in the vector loop
touches accumulates in a vector across the loop (a ``memref<W x T>``
alloca at the top of the function or of the thread's loop body, which
LLVM keeps in a register), reduced once after it: no horizontal
reduction a group.  Under a mask (an ``scf.if`` on the dim) the lanes
accesses are ``vector.maskedload``/``maskedstore`` and a reduction into one
location selects the reduction's identity where the mask is off.
"""

from __future__ import annotations

from ..analysis.dependence import is_pure_index_op
from ..analysis.vector_plan import PREDICATES, BodyPlan
from ..dialect import lt
from ..mlir import arith, ir, memref, scf, vector
from .combine import combine, is_float

LANES_ATTR = "lt.lanes_reduction"  # on a float vector.reduction: its lanes may combine in any order (not in strict mode)
_COMBINING = {"add": "add", "mul": "mul", "max": "maximumf", "min": "minimumf"}
_INT_COMBINING = {"add": "add", "mul": "mul", "max": "maxsi", "min": "minsi"}


def vectorize_ops(ops: list, dim: str, width: int, lane0, iteration0, iteration_arg) -> list:
    """Rewrite ``ops`` (an inlined body) to compute ``width`` iterations,
    whose first has ``lt.dim dim == lane0`` and iteration number
    ``iteration0``.  Returns the ops of ``ops`` that remain."""
    v = _Vectorizer(dim, width, lane0, iteration0, iteration_arg)
    v.run(ops)
    survivors = []
    for op in ops:
        if not any(op == d for d in v.dead):
            survivors.append(op)
        survivors.extend(m for o, m in v.clones if o == op)  # the masked copy of an if on the dim
        survivors.extend(m for o, m in v.lane_reduces if o == op)  # an atomic reduction's lanes, lowered as any reduction
    for op in reversed(v.dead):
        op.erase()
    return survivors


class _Vectorizer(BodyPlan):
    def __init__(self, dim, width, lane0, iteration0, iteration_arg):
        super().__init__(dim, iteration_arg, iteration0)
        self.width, self._lane0 = width, lane0
        self.clones: list = []  # (scf.if, its masked copy)
        self.carried: list = []  # (loop, kind, acc, indices, vector accumulator) of the reductions carried across a loop
        self.lane_reduces: list = []  # (the vectorized reduction, a scalar atomic lt.reduce of one lane or the if around it)

    def _vector_type(self, element):
        return ir.VectorType.get([self.width], element)

    def lane0(self):
        return self._lane0

    def emit_lane_base(self, op, x, y):
        with ir.InsertionPoint(op), op.location:
            return ir.Operation.create(op.name, results=[x.type], operands=[x, y]).results[0]

    def emit_broadcast(self, value, op):
        with ir.InsertionPoint(op), op.location:
            return vector.BroadcastOp(self._vector_type(value.type), value).result

    def _splat(self, element, value):
        """A constant vector of ``value`` (before the current insertion point)."""
        vt = self._vector_type(element)
        if is_float(element):
            attr = ir.FloatAttr.get(element, float(value))
        else:
            attr = ir.IntegerAttr.get(element, int(value))
        return arith.ConstantOp(vt, ir.DenseElementsAttr.get_splat(vt, attr)).result

    def _zeros(self, element):
        return self._splat(element, 0)

    def emit_load(self, op, lead, base, mask=None):
        vt = self._vector_type(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            if mask is not None:
                return vector.MaskedLoadOp(vt, op.operands[0], lead + [base], mask, self._zeros(vt.element_type)).result
            return vector.LoadOp(vt, op.operands[0], lead + [base]).result

    def emit_store(self, op, value, lead, base, mask=None) -> None:
        vec = self.as_vector(value, op)
        with ir.InsertionPoint(op), op.location:
            if mask is not None:
                vector.MaskedStoreOp(op.operands[1], lead + [base], mask, vec)
            else:
                vector.StoreOp(vec, op.operands[1], lead + [base])

    def emit_gather(self, op, bases, stride: int, mask=None, by_data=()):
        vt = self._vector_type(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            index_vector = self._vector_type(ir.IndexType.get())

            index = ir.IndexType.get()
            offsets = arith.MulIOp(vector.StepOp(index_vector).result, self._splat(index, stride)).result if stride else None
            for indices, scale in by_data:
                part = indices if scale == 1 else arith.MulIOp(indices, self._splat(index, scale)).result
                offsets = part if offsets is None else arith.AddIOp(offsets, part).result
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            bases = [zero if b is None else b for b in bases]
            if mask is None:
                mask_type = self._vector_type(ir.IntegerType.get_signless(1))
                mask = arith.ConstantOp(mask_type, ir.DenseElementsAttr.get_splat(mask_type, ir.BoolAttr.get(True))).result
            return vector.GatherOp(vt, op.operands[0], bases, offsets, mask, self._zeros(vt.element_type)).result

    def emit_lane_compare(self, op, predicate: str, base, other):
        with ir.InsertionPoint(op), op.location:
            index_vector = self._vector_type(ir.IndexType.get())
            lanes = arith.AddIOp(vector.BroadcastOp(index_vector, base).result, vector.StepOp(index_vector).result).result
            bound = vector.BroadcastOp(index_vector, other).result
            attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), PREDICATES.index(predicate))
            return arith.CmpIOp(attr, lanes, bound).result

    def emit_and(self, op, a, b):
        with ir.InsertionPoint(op), op.location:
            return arith.AndIOp(a, b).result

    def emit_masked_ifs(self, op, mask) -> list:
        # if all(mask) { body } ; if any(mask) and not all(mask) { body, masked }:
        # a triangle's guard is all or nothing but for one group of lanes,
        # and masked stores are slow on some CPUs (AMD's vmaskmov)
        i1 = ir.IntegerType.get_signless(1)
        with ir.InsertionPoint(op), op.location:
            every = vector.ReductionOp(i1, ir.Attribute.parse("#vector.kind<and>"), mask).result
            some = vector.ReductionOp(i1, ir.Attribute.parse("#vector.kind<or>"), mask).result
            partly = arith.XOrIOp(some, every).result
        op.operands[0] = every
        masked = op.clone(ip=ir.InsertionPoint.after(op))
        masked.operands[0] = partly
        self.clones.append((op, masked))
        return [(op, None), (masked, mask)]

    def emit_elementwise(self, op, operands):
        operands = [self.as_vector(v, op) for v in operands]
        with ir.InsertionPoint(op), op.location:
            attrs = {n: op.attributes[n] for n in op.attributes}
            new = ir.Operation.create(op.name, results=[self._vector_type(op.results[0].type)], operands=operands, attributes=attrs)
        return new.results[0]

    def _identity(self, kind: str, element):
        """A vector of ``kind``'s identity."""
        return self._splat(element, lt.reduce_identity(kind, element))

    def emit_reduce_to_scalar(self, op, kind: str, value, mask=None) -> None:
        vec = self.as_vector(value, op)
        element = value.type
        combining = (_COMBINING if is_float(element) else _INT_COMBINING)[kind]
        if mask is not None:  # off lanes contribute the identity
            with ir.InsertionPoint(op), op.location:
                vec = arith.SelectOp(mask, vec, self._identity(kind, element)).result
        if self._carry_across_loop(op, kind, vec, combining):
            return
        with ir.InsertionPoint(op), op.location:
            attr = ir.Attribute.parse(f"#vector.kind<{combining}>")
            reduced = _lanes_reduction(element, attr, vec)
        op.operands[0] = reduced

    def _carry_across_loop(self, op, kind: str, vec, combining: str) -> bool:
        """``acc[i] <kind>= reduce(vec)`` in the vector loop -> a vector
        accumulator carried across it, reduced into ``acc[i]`` once after
        (when the loop is an scf.for around ``op``, the reduction is not
        atomic, and nothing else in the loop uses ``acc`` but reductions of
        the same kind -- copies of this one, which share the accumulator,
        or other rows' -- and ``i`` is the same in every iteration).
        Carried across every enclosing ``scf.for`` that keeps those
        conditions, not only the vector loop: a row's reduction vectorized
        in blocks of W (``for j { for i' [unroll] { for j' [vectorize] }
        }``: gesummv's rows side by side) keeps one vector a row across the
        blocks instead of reducing each block's lanes.  ``op`` may sit under
        ``scf.if``s in the loop (a body under a mask): ``vec``'s off lanes then hold the
        identity, and an iteration that skips ``op`` adds nothing.  Returns
        whether it did; ``op`` is then dead."""
        if "lt.atomic" in op.attributes or any(op == a for a in self.atomic):
            return False
        _value, acc, *indices = list(op.operands)
        loop = None
        outer = op.parent
        while True:
            while outer.name == "scf.if":
                outer = outer.parent
            if outer.name != "scf.for" or not self._carries_across(outer, op, kind, acc, indices):
                break
            loop = outer
            outer = outer.parent
        if loop is None:
            return False
        for done, k, a, idx, carried in self.carried:  # a copy of the same reduction (a mask's other branch) shares it
            if done == loop and k == kind and _same_place(a, idx, acc, indices):
                self._accumulate(op, kind, vec, carried)
                self.dead.append(op)
                return True
        home = loop.parent  # the buffer: at the top of the thread's loop body or of the function
        while home.name not in ("func.func", "scf.parallel"):
            home = home.parent
        block = list(home.regions[0].blocks)[0]
        element = ir.VectorType(vec.type).element_type
        buffer_type = ir.MemRefType.get([self.width], element)
        with ir.InsertionPoint(list(block.operations)[0]), op.location:
            carried = memref.AllocaOp(buffer_type, [], []).result
        self._start_carried(loop, kind, element, carried)
        self._accumulate(op, kind, vec, carried)
        self.carried.append((loop, kind, acc, indices, carried))
        hoisted: list = []
        where = [_hoisted(v, loop, hoisted) for v in indices]  # the place, computed before the loop
        with ir.InsertionPoint.after(loop), op.location:
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            total = vector.LoadOp(self._vector_type(element), carried, [zero]).result
            reduced = _lanes_reduction(element, ir.Attribute.parse(f"#vector.kind<{combining}>"), total)
            memref.StoreOp(combine(kind, memref.LoadOp(acc, where).result, reduced), acc, where)
        self.dead.append(op)
        return True

    def _carries_across(self, loop, op, kind: str, acc, indices) -> bool:
        """Whether ``op``'s reduction may accumulate in a vector across
        ``loop``: its place is the same in every iteration, and whatever
        else in ``loop`` uses ``acc`` is a non-atomic reduction of the same
        kind (they commute with this one; no load or store sees ``acc``
        before the carried sum lands after the loop)."""
        if _inside(acc, loop) or not all(_invariant(v, loop) for v in indices):
            return False
        others = []
        loop.walk(lambda o: (others.append(o) if o != op and any(v == acc for v in o.operands) else None, ir.WalkResult.ADVANCE)[1])
        return all(self._same_kind_reduction(o, kind) for o in others)

    def _start_carried(self, loop, kind: str, element, carried) -> None:
        """The accumulator holds the identity each time ``loop`` starts."""
        with ir.InsertionPoint(loop), loop.location:
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            vector.StoreOp(self._identity(kind, element), carried, [zero])

    def _accumulate(self, op, kind: str, vec, carried) -> None:
        """``carried <kind>= vec`` at ``op``."""
        with ir.InsertionPoint(op), op.location:
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            vt = self._vector_type(ir.VectorType(vec.type).element_type)
            vector.StoreOp(combine(kind, vector.LoadOp(vt, carried, [zero]).result, vec), carried, [zero])

    def _same_kind_reduction(self, o, kind: str) -> bool:
        """Whether ``o`` is another non-atomic ``lt.reduce`` of ``kind``."""
        if o.name != "lt.reduce" or "lt.atomic" in o.attributes or any(o == a for a in self.atomic):
            return False
        return ir.StringAttr(o.attributes["kind"]).value == kind

    def emit_reduce_lanes(self, op, kind: str, value, lead, base, mask=None) -> None:
        vec = self.as_vector(value, op)
        acc = op.operands[1]
        vt = self._vector_type(value.type)
        if "lt.atomic" in op.attributes or any(op == a for a in self.atomic):
            self._atomic_lanes(op, vec, lead, base, mask)
            return
        with ir.InsertionPoint(op), op.location:
            if mask is not None:
                old = vector.MaskedLoadOp(vt, acc, lead + [base], mask, self._zeros(value.type)).result
                vector.MaskedStoreOp(acc, lead + [base], mask, combine(kind, old, vec))
            else:
                old = vector.LoadOp(vt, acc, lead + [base]).result
                vector.StoreOp(combine(kind, old, vec), acc, lead + [base])

    def _atomic_lanes(self, op, vec, lead, base, mask) -> None:
        """A parallel reduction vectorized along its index: its lanes update
        distinct elements, each shared with other iterations of the parallel
        (or GPU-mapped) loop, so each lane is one scalar ``lt.reduce``
        marked atomic (lowered like any atomic reduction), under its bit of
        ``mask`` when there is one."""
        for lane in range(self.width):
            with op.location:
                at = ir.InsertionPoint(op)
                if mask is not None:
                    with at:
                        guard = scf.IfOp(vector.ExtractOp(mask, [], [lane]).result)
                    with ir.InsertionPoint(guard.then_block):
                        at = ir.InsertionPoint(scf.YieldOp([]))
                with at:
                    scalar = vector.ExtractOp(vec, [], [lane]).result
                    index = arith.AddIOp(base, arith.ConstantOp(ir.IndexType.get(), lane).result).result
                    reduce = ir.Operation.create(
                        "lt.reduce",
                        operands=[scalar, op.operands[1], *lead, index],
                        attributes={"kind": op.attributes["kind"], "lt.atomic": ir.UnitAttr.get()},
                    )
                # the caller lowers what vectorize_ops returns: these too (else they reach LLVM as lt ops)
                self.lane_reduces.append((op, guard.operation if mask is not None else reduce))


def _same_place(acc, indices, other, other_indices) -> bool:
    """Whether two accesses name the same buffer at the same index values."""
    return acc == other and len(indices) == len(other_indices) and all(x == y for x, y in zip(indices, other_indices))


def _lanes_reduction(element, kind, vec):
    """``vector.reduction`` of ``vec``'s lanes, marked (``LANES_ATTR``) so
    that ``apply_fastmath`` lets a float one combine its lanes in a tree:
    the lanes already hold a reassociated sum (vectorizing the reduction
    chose that), and the order they are combined in is one more choice of
    the same kind -- an in-order combine is a chain of W dependent adds
    (27 cycles for 8 lanes on Zen 3), a tree three shuffles and adds."""
    op = vector.ReductionOp(element, kind, vec)
    if is_float(element):
        op.operation.attributes[LANES_ATTR] = ir.UnitAttr.get()
    return op.result


def _invariant(value, loop) -> bool:
    """Whether ``value`` is the same in every iteration of ``loop``: defined
    outside it, or by index arithmetic inside it on such values (an
    unrolled row's ``base + 2``)."""
    if not _inside(value, loop):
        return True
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name == "lt.dim" or not is_pure_index_op(owner.operation):
        return False
    return all(_invariant(v, loop) for v in owner.operation.operands)


def _hoisted(value, loop, done: list):
    """``value`` (``_invariant`` in ``loop``) computed before ``loop``: itself
    when defined outside, else a copy of its computation placed there."""
    if not _inside(value, loop):
        return value
    key = value.owner.operation
    for k, v in done:
        if k == key:
            return v
    operands = [_hoisted(v, loop, done) for v in key.operands]
    clone = key.clone(ip=ir.InsertionPoint(loop))
    for i, v in enumerate(operands):
        clone.operands[i] = v
    done.append((key, clone.results[0]))
    return clone.results[0]


def _inside(value, op) -> bool:
    """Whether ``value`` is defined inside ``op``'s regions."""
    owner = value.owner
    where = owner.owner if isinstance(owner, ir.Block) else owner.operation
    while where is not None:
        if where == op:
            return True
        where = where.parent if hasattr(where, "parent") else None
    return False
