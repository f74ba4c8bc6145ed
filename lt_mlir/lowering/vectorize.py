"""Vector code for an ``lt.vectorize = W`` loop body: the classification of
``analysis/vector_plan.py`` (the rules, and what it refuses), with its hooks
building ``vector`` ops.  Loads and stores whose last index is lanes become
``vector.load``/``vector.store``; arithmetic on vectors the same op on
``vector<W x T>``; an ``lt.reduce`` of a vector into one uniform location a
``vector.reduction`` first, one into lanes locations a vector combine.
"""

from __future__ import annotations

from ..analysis.vector_plan import BodyPlan
from ..mlir import ir, vector
from .combine import combine

_COMBINING = {"add": "add", "mul": "mul", "max": "maximumf", "min": "minimumf"}
_INT_COMBINING = {"add": "add", "mul": "mul", "max": "maxsi", "min": "minsi"}


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


class _Vectorizer(BodyPlan):
    def __init__(self, dim, width, lane0, iteration0, iteration_arg):
        super().__init__(dim, iteration_arg, iteration0)
        self.width, self._lane0 = width, lane0

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

    def emit_load(self, op, lead, base):
        with ir.InsertionPoint(op), op.location:
            return vector.LoadOp(self._vector_type(op.results[0].type), op.operands[0], lead + [base]).result

    def emit_store(self, op, value, lead, base) -> None:
        vec = self.as_vector(value, op)
        with ir.InsertionPoint(op), op.location:
            vector.StoreOp(vec, op.operands[1], lead + [base])

    def emit_elementwise(self, op, operands):
        operands = [self.as_vector(v, op) for v in operands]
        with ir.InsertionPoint(op), op.location:
            attrs = {n: op.attributes[n] for n in op.attributes}
            new = ir.Operation.create(op.name, results=[self._vector_type(op.results[0].type)], operands=operands, attributes=attrs)
        return new.results[0]

    def emit_reduce_to_scalar(self, op, kind: str, value) -> None:
        vec = self.as_vector(value, op)
        element = value.type
        is_float = not isinstance(element, ir.IntegerType)
        combining = (_COMBINING if is_float else _INT_COMBINING)[kind]
        with ir.InsertionPoint(op), op.location:
            attr = ir.Attribute.parse(f"#vector.kind<{combining}>")
            reduced = vector.ReductionOp(element, attr, vec).result
        op.operands[0] = reduced

    def emit_reduce_lanes(self, op, kind: str, value, lead, base) -> None:
        vec = self.as_vector(value, op)
        acc = op.operands[1]
        with ir.InsertionPoint(op), op.location:
            old = vector.LoadOp(self._vector_type(value.type), acc, lead + [base]).result
            vector.StoreOp(combine(kind, old, vec), acc, lead + [base])
