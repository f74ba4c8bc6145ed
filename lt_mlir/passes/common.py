"""What the loop-tree passes share: finding loops by their L-number,
refusing with a located error, building loops, and the one dependence test
every reordering pass uses.

Dependence rule (``reorder_conflicts``): reordering the iterations of a loop
L over dim d (distributing it, interchanging it, fusing it, running it in
parallel) cannot change the result when every buffer written inside L is
*private to L*: each of its accesses inside L indexes one fixed axis with
exactly ``lt.dim d``, so distinct iterations of L touch distinct elements.
Buffers only read inside L never constrain.  ``lt.reduce`` updates of one
kind commute with each other, so a buffer touched inside L only by reduces
of one kind is reorderable too (floating-point sums then differ by
rounding only).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dialect import bounds, lt
from ..dialect.loop_tree import preorder_loops
from ..errors import PassError, format_location
from ..mlir import arith, ir


def refuse(pass_name: str, message: str, op=None) -> PassError:
    """A located ``PassError`` for ``raise``."""
    where = format_location(op.location) if op is not None else ""
    return PassError(f"{where + ': ' if where else ''}error: {pass_name}: {message}")


def find_loop(module_op, index: int, pass_name: str):
    """Loop ``L<index>`` in the module's pre-order numbering."""
    loops = preorder_loops(module_op)
    if not 0 <= index < len(loops):
        if not loops:
            raise refuse(pass_name, f"no loop L{index} (the module has no loops)")
        have = "L0" if len(loops) == 1 else f"L0..L{len(loops) - 1}"
        raise refuse(pass_name, f"no loop L{index} (the loop tree has {have})")
    return loops[index]


def loop_label(loop) -> str:
    """How the loop tree prints the loop's head: 'for m' in 8 r 1'."""
    dim = lt.loop_dim(loop)
    primes = "'" * sum(1 for l in lt.enclosing_loops(loop) if lt.loop_dim(l) == dim)
    size, tail = lt.loop_size(loop), lt.loop_tail(loop)
    return f'"for {dim}{primes} in {size}{f" r {tail}" if tail else ""}"'


def index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def new_loop(dim: str, size: int, tail: int, annotations: dict | None = None):
    """Create an lt.loop at the current insertion point; returns (op, block)."""
    attrs = {
        "dim": ir.StringAttr.get(dim),
        "size": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), size),
        "tail": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), tail),
    }
    for name, value in (annotations or {}).items():
        attrs[name] = value
    op = ir.Operation.create("lt.loop", results=[], operands=[], attributes=attrs, regions=1)
    block = op.regions[0].blocks.append(ir.IndexType.get())
    return op, block


def set_extent(loop, size: int, tail: int) -> None:
    i64 = ir.IntegerType.get_signless(64)
    loop.attributes["size"] = ir.IntegerAttr.get(i64, size)
    loop.attributes["tail"] = ir.IntegerAttr.get(i64, tail)


def annotation_attrs(loop) -> dict:
    """The ``lt.*`` annotation attributes of a loop, by full name."""
    return {f"lt.{k}": loop.attributes[f"lt.{k}"] for k in lt.annotations(loop)}


def is_pure_index_op(op) -> bool:
    """lt.dim, constants and index arithmetic on such values or on values
    from outside the op's block: recomputable anywhere in the same nest
    without changing their value (lt.dim aside, see callers)."""
    if op.name in ("lt.dim", "arith.constant"):
        return True
    if not (op.name.startswith("arith.") and len(op.results) == 1 and isinstance(op.results[0].type, ir.IndexType)):
        return False
    block = op.block
    for v in op.operands:
        if not isinstance(v.type, ir.IndexType):
            return False  # e.g. index_cast of a loaded value
        src = v.owner
        if isinstance(src, ir.Block):
            continue
        src = src.operation
        if src.block == block and not is_pure_index_op(src):
            return False
    return True


def reads_dim(op, dim: str) -> bool:
    """Whether an index computation reads ``lt.dim dim`` (directly or not)."""
    if op.name == "lt.dim":
        return ir.StringAttr(op.attributes["dim"]).value == dim
    if not is_pure_index_op(op):
        return False
    return any(not isinstance(v.owner, ir.Block) and reads_dim(v.owner.operation, dim) for v in op.operands)


def is_dim_of(value, dim: str) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return False
    op = owner.operation
    return op.name == "lt.dim" and ir.StringAttr(op.attributes["dim"]).value == dim


@dataclass
class Access:
    op: object
    buffer: object
    indices: list
    kind: str  # "read" | "write" | "reduce:<kind>"


def accesses(root) -> list[Access]:
    """Every memory access nested in ``root`` (an op)."""
    out: list[Access] = []

    def visit(op):
        name = op.name
        if name == "memref.load":
            ops = list(op.operands)
            out.append(Access(op, ops[0], ops[1:], "read"))
        elif name == "memref.store":
            ops = list(op.operands)
            out.append(Access(op, ops[1], ops[2:], "write"))
        elif name == "lt.reduce":
            ops = list(op.operands)
            out.append(Access(op, ops[1], ops[2:], "reduce:" + ir.StringAttr(op.attributes["kind"]).value))
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return out


def buffer_name(buffer) -> str:
    owner = buffer.owner
    if isinstance(owner, ir.Block):
        return f"argument {buffer.arg_number}"
    return "a scratch buffer" if owner.operation.name == "lt.alloc" else "a buffer"


def _private_axis(group: list[Access], dim: str) -> bool:
    """Some axis is exactly lt.dim ``dim`` in every access of the group."""
    if not group:
        return True
    rank = len(group[0].indices)
    return any(all(is_dim_of(a.indices[axis], dim) for a in group) for axis in range(rank))


def reorder_conflicts(loop, roots=None) -> str | None:
    """Why the iterations of ``loop`` may not be reordered, or None.

    ``roots`` restricts the accesses considered (default: the loop itself)."""
    dim = lt.loop_dim(loop)
    found = [a for r in (roots or [loop]) for a in accesses(r)]
    by_buffer: dict = {}
    for a in found:
        by_buffer.setdefault(a.buffer, []).append(a)
    for buffer, group in by_buffer.items():
        kinds = {a.kind for a in group}
        if kinds == {"read"}:
            continue
        if len(kinds) == 1 and next(iter(kinds)).startswith("reduce:"):
            continue
        if not _private_axis(group, dim):
            return (
                f"{buffer_name(buffer)} is written and accessed at elements that other iterations of "
                f"dim '{dim}' also access"
            )
    return None


def shared_reductions(loop) -> list:
    """``lt.reduce`` ops in ``loop`` whose accumulator elements several of its
    iterations update: run in parallel, they must combine atomically."""
    dim = lt.loop_dim(loop)
    groups: dict = {}
    for a in accesses(loop):
        groups.setdefault(a.buffer, []).append(a)
    shared = []
    for group in groups.values():
        if all(a.kind.startswith("reduce:") for a in group) and not _private_axis(group, dim):
            shared.extend(a.op for a in group)
    return shared


def replace_block_argument(block: ir.Block, value: ir.Value) -> None:
    block.arguments[0].replace_all_uses_with(value)


# ------------------------------------------------------- relative indices


def relative_index(index: ir.Value, base: ir.Value, extent: int) -> ir.Value:
    """``index - base``, known to lie in ``[0, extent)``, built at the
    current insertion point (which must be where the result is used, so the
    bounds check sees the enclosing loops).  Clamped to that range only when
    the static bounds check cannot see the range of the difference itself."""
    diff = arith.SubIOp(index, base).result
    r = bounds._range(diff, {})
    if r is None or (r[0] >= 0 and r[1] <= extent - 1):
        return diff
    low = arith.MaxSIOp(diff, index_constant(0)).result
    return arith.MinSIOp(low, index_constant(extent - 1)).result


def match_relative_index(value: ir.Value):
    """``(index, base)`` when ``value`` has the form ``relative_index``
    builds (``index - base``, clamped or not), else None."""
    op = _defining_op(value)
    if op is not None and op.name == "arith.minsi" and _constant_value(op.operands[1]) is not None:
        mx = _defining_op(op.operands[0])
        if mx is None or mx.name != "arith.maxsi" or _constant_value(mx.operands[1]) != 0:
            return None
        op = _defining_op(mx.operands[0])
    if op is None or op.name != "arith.subi":
        return None
    return op.operands[0], op.operands[1]


def relative_index_ops(value) -> list:
    """The ops of a ``relative_index`` (subi, and maxsi, minsi and their
    constants when clamped); [] when ``value`` is not one."""
    if match_relative_index(value) is None:
        return []
    op = _defining_op(value)
    if op.name == "arith.subi":
        return [op]
    mx = _defining_op(op.operands[0])
    return [op, _defining_op(op.operands[1]), mx, _defining_op(mx.operands[1]), _defining_op(mx.operands[0])]


def _defining_op(value: ir.Value):
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation


def _constant_value(value: ir.Value):
    op = _defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    a = op.attributes["value"]
    return a.value if isinstance(a, ir.IntegerAttr) else None


def new_dim(dim: str) -> ir.Value:
    """An ``lt.dim`` op at the current insertion point."""
    op = ir.Operation.create(
        "lt.dim", results=[ir.IndexType.get()], attributes={"dim": ir.StringAttr.get(dim)}
    )
    return op.results[0]
