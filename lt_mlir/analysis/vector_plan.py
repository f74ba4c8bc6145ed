"""Whether the body of an innermost ``lt.loop`` can run as vector code
(``lt.vectorize = W``), and how each of its values would vectorize.

W consecutive iterations run as one: each value of the body is *uniform*
(the same in all W iterations), *lanes* (an index that is ``base + lane``:
``lt.dim`` of the loop's dim, plus or minus uniform values) or *vector*
(W values).  Uniform ops stay scalar; loads and stores whose last index is
lanes become vector loads and stores; arithmetic on vectors becomes the same
op on ``vector<W x T>``; an ``lt.reduce`` of a vector into one uniform
location first reduces the vector, one into lanes locations combines
vectors.

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

    def emit_load(self, op, lead, base):
        return None

    def emit_store(self, op, value, lead, base) -> None:
        return None

    def emit_elementwise(self, op, operands):
        return None

    def emit_reduce_to_scalar(self, op, kind: str, value) -> None:
        return None

    def emit_reduce_lanes(self, op, kind: str, value, lead, base) -> None:
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
            raise NotVectorizable(f"{what} is not contiguous in the vectorized dim '{self.dim}'", op)
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
            lead, base = self._split_indices(indices, op, "a load")
            self.vectors[op.results[0]] = self.emit_load(op, lead, base)
            self.dead.append(op)
            return
        if name == "memref.store":
            value, buffer, *indices = list(op.operands)
            if not any(self._varying(i) for i in indices):
                if self._varying(value):
                    raise NotVectorizable("a store of a varying value to one location", op)
                return
            lead, base = self._split_indices(indices, op, "a store")
            self.emit_store(op, value, lead, base)
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
        self.vectors[op.results[0]] = self.emit_elementwise(op, list(op.operands))
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
            self.emit_reduce_to_scalar(op, kind, value)
            return
        lead, base = self._split_indices(indices, op, "a reduction's accumulator")
        self.emit_reduce_lanes(op, kind, value, lead, base)
        self.dead.append(op)
