"""Vectorizing the body of an innermost ``lt.loop`` (``lt.vectorize = W``).

W consecutive iterations run as one: each value of the body is *uniform*
(the same in all W iterations), *lanes* (an index that is ``base + lane``:
``lt.dim`` of the loop's dim, plus or minus uniform values) or *vector*
(W values).  Uniform ops stay scalar; loads and stores whose last index is
lanes become ``vector.load``/``vector.store``; arithmetic on vectors becomes
the same op on ``vector<W x T>``; an ``lt.reduce`` of a vector into one
uniform location first reduces the vector (``vector.reduction``), one into
lanes locations combines vectors.  ``plan`` says, without changing anything,
whether a loop's body can be vectorized this way; ``vectorize_ops`` does it.
"""

from __future__ import annotations

from ..dialect import lt
from ..mlir import ir
from torch_mlir.dialects import vector

_COMBINING = {"add": "add", "mul": "mul", "max": "maximumf", "min": "minimumf"}
_INT_COMBINING = {"add": "add", "mul": "mul", "max": "maxsi", "min": "minsi"}
_LANE_OPS = ("arith.addi", "arith.subi")


class NotVectorizable(Exception):
    def __init__(self, message: str, op=None):
        super().__init__(message)
        self.op = op


def plan(loop) -> NotVectorizable | None:
    """Why ``loop``'s body cannot be vectorized, or None."""
    body = lt.body_ops(lt.loop_body(loop))
    for op in body:
        found = []
        op.walk(lambda o: (found.append(o) if o.name == "lt.loop" else None, ir.WalkResult.ADVANCE)[1])
        if found:
            return NotVectorizable("only an innermost loop can be vectorized", loop)
    from ..passes.common import shared_reductions

    atomic = [op for p in lt.enclosing_loops(loop) if "parallel" in lt.annotations(p) for op in shared_reductions(p)]
    try:
        _Vectorizer(
            lt.loop_dim(loop), 4, None, None, lt.loop_body(loop).arguments[0], dry_run=True, atomic=atomic
        ).run(body)
    except NotVectorizable as e:
        return e
    return None


def vectorize_ops(ops: list, dim: str, width: int, lane0, iteration0, iteration_arg) -> list:
    """Rewrite ``ops`` (an inlined body) to compute ``width`` iterations,
    whose first has ``lt.dim dim == lane0`` and iteration number
    ``iteration0``.  Returns the ops of ``ops`` that remain."""
    v = _Vectorizer(dim, width, lane0, iteration0, iteration_arg)
    v.run(ops)
    survivors = [op for op in ops if not any(op == d for d in v.dead)]
    for op in reversed(v.dead):
        op.erase()
    return survivors


class _Vectorizer:
    def __init__(self, dim, width, lane0, iteration0, iteration_arg, dry_run=False, atomic=()):
        self.dim, self.width, self.dry = dim, width, dry_run
        self.atomic = list(atomic)  # reductions an enclosing parallel loop makes atomic
        self.lanes: dict = {}  # value -> base (scalar index value) of a lanes index
        self.vectors: dict = {}  # value -> vector value
        self.dead: list = []
        self.lane0 = lane0
        if iteration_arg is not None:
            self.lanes[iteration_arg] = iteration0

    def run(self, ops: list) -> None:
        """Classify (and unless dry, rewrite) ``ops``; the replaced ones are
        left in ``self.dead`` for the caller to erase."""
        for op in ops:
            self._op(op)

    # -- classification helpers
    def _is_lanes(self, v) -> bool:
        return v in self.lanes

    def _is_vector(self, v) -> bool:
        return v in self.vectors

    def _varying(self, v) -> bool:
        return self._is_lanes(v) or self._is_vector(v)

    def _as_vector(self, v, op):
        if v in self.vectors:
            return self.vectors[v]
        if v in self.lanes:
            raise NotVectorizable("an index of the vectorized dim is used as a value", op)
        if self.dry:
            return None
        with ir.InsertionPoint(op), op.location:
            return vector.BroadcastOp(ir.VectorType.get([self.width], v.type), v).result

    def _split_indices(self, indices, op, what):
        """(uniform leading indices, base of the lanes last index) or raise."""
        *lead, last = indices
        if any(self._varying(i) for i in lead) or not self._is_lanes(last):
            raise NotVectorizable(f"{what} is not contiguous in the vectorized dim '{self.dim}'", op)
        return lead, self.lanes[last]

    # -- one op
    def _op(self, op) -> None:
        name = op.name
        if name == "lt.dim" and ir.StringAttr(op.attributes["dim"]).value == self.dim:
            self.lanes[op.results[0]] = self.lane0
            self.dead.append(op)
            return
        if name in _LANE_OPS and any(self._is_lanes(v) for v in op.operands):
            a, b = op.operands
            if self._varying(a) and self._varying(b):
                raise NotVectorizable("an index adds two values of the vectorized dim", op)
            if name == "arith.subi" and self._is_lanes(b):
                raise NotVectorizable("an index subtracts the vectorized dim", op)
            base = None
            if not self.dry:
                with ir.InsertionPoint(op), op.location:
                    x = self.lanes[a] if self._is_lanes(a) else a
                    y = self.lanes[b] if self._is_lanes(b) else b
                    base = ir.Operation.create(name, results=[x.type], operands=[x, y]).results[0]
            self.lanes[op.results[0]] = base
            self.dead.append(op)
            return
        if name == "memref.load":
            indices = list(op.operands)[1:]
            if not any(self._varying(i) for i in indices):
                return  # uniform
            if not indices:
                return
            lead, base = self._split_indices(indices, op, "a load")
            if not self.dry:
                with ir.InsertionPoint(op), op.location:
                    t = ir.VectorType.get([self.width], op.results[0].type)
                    self.vectors[op.results[0]] = vector.LoadOp(t, op.operands[0], lead + [base]).result
            else:
                self.vectors[op.results[0]] = None
            self.dead.append(op)
            return
        if name == "memref.store":
            value, buffer, *indices = list(op.operands)
            if not any(self._varying(i) for i in indices):
                if self._varying(value):
                    raise NotVectorizable("a store of a varying value to one location", op)
                return
            lead, base = self._split_indices(indices, op, "a store")
            if not self.dry:
                with ir.InsertionPoint(op), op.location:
                    vector.StoreOp(self._as_vector(value, op), buffer, lead + [base])
            self.dead.append(op)
            return
        if name == "lt.reduce":
            self._reduce(op)
            return
        if op.regions and any(self._varying(v) for v in op.operands):
            raise NotVectorizable(f"'{name}' with regions cannot be vectorized", op)
        if not any(self._varying(v) for v in op.operands):
            return  # uniform
        if any(self._is_lanes(v) for v in op.operands):
            raise NotVectorizable(f"'{name}' uses an index of the vectorized dim as a value", op)
        if not (name.startswith("arith.") or name.startswith("math.")) or len(op.results) != 1:
            raise NotVectorizable(f"'{name}' cannot be vectorized", op)
        if self.dry:
            self.vectors[op.results[0]] = None
            self.dead.append(op)
            return
        operands = [self._as_vector(v, op) for v in op.operands]
        with ir.InsertionPoint(op), op.location:
            t = ir.VectorType.get([self.width], op.results[0].type)
            attrs = {n: op.attributes[n] for n in op.attributes}
            new = ir.Operation.create(name, results=[t], operands=operands, attributes=attrs)
        self.vectors[op.results[0]] = new.results[0]
        self.dead.append(op)

    def _reduce(self, op) -> None:
        value, acc, *indices = list(op.operands)
        kind = ir.StringAttr(op.attributes["kind"]).value
        atomic = "lt.atomic" in op.attributes or any(op == a for a in self.atomic)
        if atomic and any(self._varying(i) for i in indices):
            raise NotVectorizable("a parallel reduction cannot also be vectorized along its index", op)
        if not any(self._varying(i) for i in indices):
            if not self._varying(value):
                raise NotVectorizable("a reduction adds the same value in every vectorized iteration", op)
            if self.dry:
                return
            vec = self._as_vector(value, op)
            element = value.type
            is_float = not isinstance(element, ir.IntegerType)
            combining = (_COMBINING if is_float else _INT_COMBINING)[kind]
            with ir.InsertionPoint(op), op.location:
                attr = ir.Attribute.parse(f"#vector.kind<{combining}>")
                reduced = vector.ReductionOp(element, attr, vec).result
            op.operands[0] = reduced
            return
        lead, base = self._split_indices(indices, op, "a reduction's accumulator")
        if self.dry:
            self.dead.append(op)
            return
        vec = self._as_vector(value, op)
        with ir.InsertionPoint(op), op.location:
            t = ir.VectorType.get([self.width], value.type)
            old = vector.LoadOp(t, acc, lead + [base]).result
            new = _combine(kind, old, vec)
            vector.StoreOp(new, acc, lead + [base])
        self.dead.append(op)


def _combine(kind: str, a, b):
    from .lt_to_scf import combine

    return combine(kind, a, b)
