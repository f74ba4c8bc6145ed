"""Static bounds check of memory accesses in lt programs.

Every size in an lt program is static, so the range of each index is known
by interval arithmetic: ``lt.dim d`` ranges over ``[0, extent - 1]`` of its
outermost enclosing level, a loop's block argument over its iterations
(``size`` included when there is a tail), an ``scf.for``'s variable over
its bounds' ranges (the upper one excluded), constants are themselves, and
``arith`` add/sub/mul/min/max/div/rem combine ranges.  ``lt.dim d`` minus
an ``lt.dim d`` taken outside some of its levels (a tile's base, as
lt-shrink-buffers and lt-cache write) is the offset within that tile.  An access whose index
may leave its memref is rejected with the op's location before any code is
generated, and so is an index whose range cannot be derived (one computed
from a value loaded from memory, the variable of an ``scf.for`` with bounds
known only at run time): such an index must be clamped (``arith.maxsi`` /
``arith.minsi`` with constants, whose range is known, or one ``arith.minui``
with a constant: a negative index is a huge unsigned one), as ``lt_mlir.appy``
does for gathers (``lt_mlir.kernel``, with ``minui``, for a CSR's indices), reporting where clamping changed it.
"""

from __future__ import annotations

from ..dialect import lt
from ..errors import VerifyError, format_location
from ..mlir import ir


def check_bounds(module) -> None:
    """Raise ``VerifyError`` at the first access that may be out of bounds."""
    problems: list[str] = []

    def visit(op):
        name = op.name
        if name == "memref.load" or name == "memref.store" or name == "lt.reduce":
            memref_index = 0 if name == "memref.load" else 1
            operands = list(op.operands)
            buffer = operands[memref_index]
            indices = operands[memref_index + 1 :]
            if isinstance(buffer.type, ir.MemRefType):
                shape = ir.MemRefType(buffer.type).shape
                for axis, (index, extent) in enumerate(zip(indices, shape)):
                    r = _range(index, {})
                    if r is None and extent >= 0:
                        where = format_location(op.location)
                        problems.append(
                            f"{where + ': ' if where else ''}error: '{name}' index {axis} has a range that cannot be "
                            f"derived (a value loaded from memory?): clamp it into [0, {extent - 1}] "
                            "(arith.maxsi, arith.minsi, or arith.minui) so that the access stays in the memref"
                        )
                        return ir.WalkResult.INTERRUPT
                    if r is not None and extent >= 0 and (r[0] < 0 or r[1] >= extent):
                        where = format_location(op.location)
                        problems.append(
                            f"{where + ': ' if where else ''}error: '{name}' index {axis} ranges over "
                            f"[{r[0]}, {r[1]}] but the memref has {extent} elements on that axis"
                        )
                        return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if problems:
        raise VerifyError(problems[0])


def value_range(v) -> tuple[int, int] | None:
    """``(low, high)`` of index value ``v``, or None when not derivable."""
    return _range(v, {})


def _range(v, memo: dict):
    if v in memo:
        return memo[v]
    memo[v] = None
    owner = v.owner
    result = None
    if isinstance(owner, ir.Block):
        parent = owner.owner
        if parent is not None and parent.name == "lt.loop":
            size, tail = lt.loop_size(parent), lt.loop_tail(parent)
            result = (0, size if tail else size - 1)
        elif parent is not None and parent.name == "scf.for" and v == owner.arguments[0]:
            # an scf.for's variable runs from its lower bound up to one below
            # its upper one (bounds clamped at run time: max(lo, 0), min(hi, E))
            lower, upper = _range(parent.operands[0], memo), _range(parent.operands[1], memo)
            if lower is not None and upper is not None:
                result = (lower[0], upper[1] - 1)
    else:
        op = owner.operation
        result = _op_range(op, memo)
        if result is not None and any(x != x for x in result):  # inf - inf: not derivable
            result = None
    memo[v] = result
    return result


def _dim_op(v):
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "lt.dim":
        return None
    return owner.operation


def _relative_range(a, b):
    """``lt.dim d - lt.dim d`` where the subtrahend sits outside some levels
    of d that the minuend sits inside: the offset within that chunk."""
    x, y = _dim_op(a), _dim_op(b)
    if x is None or y is None:
        return None
    dim = ir.StringAttr(x.attributes["dim"]).value
    if ir.StringAttr(y.attributes["dim"]).value != dim:
        return None
    outer = [l for l in lt.enclosing_loops(y) if lt.loop_dim(l) == dim]
    inner = [l for l in lt.enclosing_loops(x) if lt.loop_dim(l) == dim]
    if len(outer) > len(inner) or inner[len(inner) - len(outer) :] != outer:
        return None
    extra = inner[: len(inner) - len(outer)]
    return (0, lt.inner_loop_extent(extra[-1]) - 1) if extra else (0, 0)


def _op_range(op, memo):
    name = op.name
    if name == "lt.dim":
        dim = ir.StringAttr(op.attributes["dim"]).value
        levels = [l for l in lt.enclosing_loops(op) if lt.loop_dim(l) == dim]
        if not levels:
            return None
        return (0, lt.inner_loop_extent(levels[-1]) - 1)
    if name == "arith.constant":
        a = op.attributes["value"]
        return (a.value, a.value) if isinstance(a, ir.IntegerAttr) else None
    if name == "arith.index_cast":
        return _range(op.operands[0], memo)
    if len(op.operands) != 2:
        return None
    if name == "arith.subi":
        relative = _relative_range(*op.operands)
        if relative is not None:
            return relative
    a, b = (_range(x, memo) for x in op.operands)
    if name == "arith.minui" and (a is None) != (b is None) and (a or b)[0] >= 0:
        # an unsigned clamp of a value known only at run time: min(x, hi) <= hi as an unsigned
        # number, so in [0, hi] (a negative x is a huge unsigned one: it becomes hi)
        return (0, (a or b)[1])
    if name in ("arith.maxsi", "arith.minsi") and (a is None) != (b is None):
        # a clamp of a value known only at run time: max(x, lo) >= lo, min(x, hi) <= hi
        known, unknown = (a, b) if b is None else (b, a)
        inf = float("inf")
        a, b = known, (-inf, inf)
        if name == "arith.maxsi":
            r = (max(a[0], b[0]), max(a[1], b[1]))
        else:
            r = (min(a[0], b[0]), min(a[1], b[1]))
        return r
    if a is None or b is None:
        return None
    if name == "arith.addi":
        return (a[0] + b[0], a[1] + b[1])
    if name == "arith.subi":
        return (a[0] - b[1], a[1] - b[0])
    if name == "arith.muli":
        products = [x * y for x in a for y in b]
        return (min(products), max(products))
    if name in ("arith.maxsi", "arith.maxui"):
        return (max(a[0], b[0]), max(a[1], b[1]))
    if name in ("arith.minsi", "arith.minui"):
        return (min(a[0], b[0]), min(a[1], b[1]))
    if name in ("arith.divsi", "arith.divui", "arith.floordivsi") and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
        return (a[0] // b[0], a[1] // b[0])
    if name in ("arith.remsi", "arith.remui") and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
        return (0, min(a[1], b[0] - 1))
    return None
