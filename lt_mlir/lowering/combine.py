"""How an ``lt.reduce`` combines: the arith op of each kind, and the atomic
update of a location other iterations (threads) share.  One copy for the
scalar, vector and GPU lowerings."""

from __future__ import annotations

from ..mlir import AtomicRMWKind, arith, ir, memref

_FLOAT_COMBINE = {"add": arith.AddFOp, "mul": arith.MulFOp, "max": arith.MaximumFOp, "min": arith.MinimumFOp}
_INT_COMBINE = {"add": arith.AddIOp, "mul": arith.MulIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}
_FLOAT_ATOMIC = {"add": "addf", "max": "maximumf", "min": "minimumf"}
_INT_ATOMIC = {"add": "addi", "max": "maxs", "min": "mins"}


def is_float(t) -> bool:
    if isinstance(t, ir.VectorType):
        t = ir.VectorType(t).element_type
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def combine(kind: str, old: ir.Value, value: ir.Value) -> ir.Value:
    """``old <kind> value`` (scalars or vectors; floats propagate NaN)."""
    return (_FLOAT_COMBINE if is_float(value.type) else _INT_COMBINE)[kind](old, value).result


def atomic_update(kind: str, value, acc, indices) -> None:
    """``acc[indices] <kind>= value`` as one atomic read-modify-write."""
    if kind == "mul":
        # No atomic multiply in LLVM: a compare-and-swap loop.
        rmw = memref.GenericAtomicRMWOp(value.type, acc, indices)
        block = rmw.regions[0].blocks.append(value.type)
        with ir.InsertionPoint(block):
            memref.AtomicYieldOp(combine(kind, block.arguments[0], value))
    else:
        name = (_FLOAT_ATOMIC if is_float(value.type) else _INT_ATOMIC)[kind]
        attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), AtomicRMWKind[name].value)
        memref.AtomicRMWOp(attr, value, acc, indices)
