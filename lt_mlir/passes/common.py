"""What the loop-tree passes share: finding loops by their L-number,
refusing with a located error, building loops and relative indices.  The
dependence test they all ask lives in ``analysis/dependence.py``."""

from __future__ import annotations

from ..analysis.bounds import value_range
from ..dialect import lt
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


FLOAT_TYPES = (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)


def walk_ops(root) -> list:
    """``root`` and every op nested in it, in pre-order."""
    out = []
    root.walk(lambda o: (out.append(o), ir.WalkResult.ADVANCE)[1], ir.WalkOrder.PRE_ORDER)
    return out


def condition_between(op, stop):
    """The innermost op other than an ``lt.loop`` between ``op`` and
    ``stop`` (an ``scf.if``, a run-time ``scf.for``), or None."""
    parent = op.parent
    while parent is not None and parent != stop:
        if parent.name != "lt.loop":
            return parent
        parent = parent.parent
    return None


def function_of(op):
    """The ``func.func`` around ``op`` (None outside any)."""
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent


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


def replace_block_argument(block: ir.Block, value: ir.Value) -> None:
    block.arguments[0].replace_all_uses_with(value)


# ------------------------------------------------------- relative indices


def relative_index(index: ir.Value, base: ir.Value, extent: int) -> ir.Value:
    """``index - base``, known to lie in ``[0, extent)``, built at the
    current insertion point (which must be where the result is used, so the
    bounds check sees the enclosing loops).  Clamped to that range only when
    the static bounds check cannot see the range of the difference itself."""
    diff = arith.SubIOp(index, base).result
    r = value_range(diff)
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


# ------------------------------------------------------- accesses

# the position of the first index among an access op's operands
ACCESS_FIRST_INDEX = {"memref.load": 1, "memref.prefetch": 1, "memref.store": 2, "lt.reduce": 2}


def clone_mapped(op, mapping: dict):
    """A clone of ``op`` at the current insertion point, its operands
    replaced through ``mapping`` (old value -> new), its results added to
    it; returns the clone."""
    clone = op.clone()
    for k, operand in enumerate(list(clone.operands)):
        if operand in mapping:
            clone.operands[k] = mapping[operand]
    for old, new in zip(op.results, clone.results):
        mapping[old] = new
    return clone


def rebuild_access(op, memref_value, indices: list) -> None:
    """Replace access ``op`` (a key of ``ACCESS_FIRST_INDEX``) by the same
    access of ``memref_value`` at ``indices`` (attributes kept: lt-pad's and
    the GPU lowering's marks)."""
    first = ACCESS_FIRST_INDEX[op.name]
    operands = list(op.operands)[: first - 1] + [memref_value, *indices]
    with ir.InsertionPoint(op), op.location:
        rebuilt = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=operands,
                                      attributes={name: op.attributes[name] for name in op.attributes})
    for old, fresh in zip(op.results, rebuilt.results):
        old.replace_all_uses_with(fresh)
    op.erase()
