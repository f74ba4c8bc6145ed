"""The dependence test every reordering pass (and the GPU mapping and the
lowering of parallel loops) asks, and the index facts it rests on.

Dependence rule (``reorder_conflicts``): reordering the iterations of a loop
L over dim d (distributing it, interchanging it, fusing it, running it in
parallel) cannot change the result when every buffer written inside L is
*private to L*: each of its accesses inside L indexes one fixed axis with
exactly ``lt.dim d``, or ``lt.dim d`` plus one and the same offset that is
fixed while L runs (``shift_of``: a constant, a value from outside L, or
index arithmetic on constants and the dims of loops around L, such as the
importer's ``0 * 256 + i``), so distinct iterations of L touch distinct
elements.
Buffers only read inside L never constrain.  ``lt.reduce`` updates of one
kind commute with each other, so a buffer touched inside L only by reduces
of one kind is reorderable too (floating-point sums then differ by
rounding only).

A CSR row's stored positions are private to the row too (``row_range``):
an axis indexed, in every access, by the induction variable of an
``scf.for`` inside L (or a loop merged with L) that runs from ``X[lt.dim d]`` to ``X[lt.dim d + 1]``
(each through the same casts and clamps to constants), with X a function
argument marked ``lt.monotone`` (a CSR's ``indptr``: its values never
decrease) that nothing inside L writes.  Row r then covers ``X[r] ..
X[r + 1]`` and rows cover disjoint ranges: distinct iterations, distinct
elements (a sparse softmax's row maximum, exponentials and sum as one row
loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dialect import lt
from ..dialect.entry import arg_marked
from ..mlir import ir


def is_pure_index_op(op) -> bool:
    """lt.dim, constants and index arithmetic on such values or on values
    from outside the op's block: recomputable anywhere in the same nest
    without changing their value (lt.dim aside, see callers)."""
    op = op.operation  # an OpView (a clone, say) or the Operation itself
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


def accesses_of(root, buffer) -> list:
    """The loads, stores and reductions of ``buffer`` nested in ``root``."""
    return [a.op for a in accesses(root) if a.buffer == buffer]


def buffer_name(buffer) -> str:
    owner = buffer.owner
    if isinstance(owner, ir.Block):
        return f"argument {buffer.arg_number}"
    return "a scratch buffer" if owner.operation.name == "lt.alloc" else "a buffer"


def inside(op, ancestor) -> bool:
    """Whether ``op`` is ``ancestor`` or nested in it."""
    while op is not None:
        if op == ancestor:
            return True
        op = op.parent
    return False


def defined_inside(value, ancestor) -> bool:
    """Whether ``value`` (an op result or block argument) is defined in ``ancestor``."""
    owner = value.owner
    return inside(owner.owner if isinstance(owner, ir.Block) else owner.operation, ancestor)


def shift_of(value, dim: str, loop):
    """How ``value`` follows ``lt.dim dim`` across the iterations of
    ``loop``: ``()`` for exactly ``lt.dim dim``; ``("-"|"+", base)`` for
    ``lt.dim dim -/+ base`` with ``base`` the same in every iteration (a
    constant, or computed outside ``loop``: the tile offsets ``lt-cache``
    and ``lt-shrink-buffers`` write, a shifted index ``i + 1``); None
    otherwise.  Accesses with equal shifts touch one element in one
    iteration only: distinct iterations, distinct elements."""
    if is_dim_of(value, dim):
        return ()
    owner = value.owner
    if loop is None or isinstance(owner, ir.Block) or owner.operation.name not in ("arith.subi", "arith.addi"):
        return None
    op = owner.operation
    first, second = op.operands
    sign = "-" if op.name == "arith.subi" else "+"
    pairs = [(first, second)] + ([(second, first)] if sign == "+" else [])
    for index, base in pairs:
        if not is_dim_of(index, dim):
            continue
        src = base.owner
        where = src.owner if isinstance(src, ir.Block) else src.operation
        if where.name == "arith.constant":
            return (sign, "const", ir.IntegerAttr(where.attributes["value"]).value)
        if fixed_in(base, loop):
            return (sign, base)
    return None


def fixed_in(value, loop) -> bool:
    """Whether index ``value`` has one value in every iteration of ``loop``:
    defined outside it, a constant, ``lt.dim`` of a dim no loop at or inside
    ``loop`` iterates over (its levels are all outside), or ``addi``/``subi``/
    ``muli`` of such values (an importer's ``m * 64`` or ``0 * 256``, computed
    next to the access that reads it)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return not inside(owner.owner, loop)
    op = owner.operation
    if not inside(op, loop) or op.name == "arith.constant":
        return True
    if op.name == "lt.dim":
        return ir.StringAttr(op.attributes["dim"]).value not in _looped_dims(loop)
    if op.name in ("arith.addi", "arith.subi", "arith.muli"):
        return all(fixed_in(v, loop) for v in op.operands)
    return False


def _looped_dims(loop) -> set[str]:
    """The dims of ``loop`` and of every loop inside it."""
    dims = {lt.loop_dim(loop)}

    def visit(op):
        if op.name == "lt.loop":
            dims.add(lt.loop_dim(op))
        return ir.WalkResult.ADVANCE

    loop.operation.walk(visit)
    return dims


def same_shift(values, dim: str, loop) -> bool:
    """Every value follows ``dim`` with one and the same shift."""
    shifts = [shift_of(v, dim, loop) for v in values]
    if any(s is None for s in shifts):
        return False
    return all(s == shifts[0] for s in shifts[1:])


def _private_axis(group: list[Access], dim: str, loop=None, written=()) -> bool:
    """Some axis is exactly lt.dim ``dim`` (or that minus an offset fixed
    in ``loop``) in every access of the group, or, in every access, a
    position of ``dim``'s row in one ``lt.monotone`` array that no buffer
    of ``written`` is (``row_range``)."""
    if not group:
        return True
    rank = len(group[0].indices)
    for axis in range(rank):
        values = [a.indices[axis] for a in group]
        if same_shift(values, dim, loop):
            return True
        ranges = [row_range(v, dim, loop) for v in values]
        if ranges[0] is not None and all(r is not None and r[0] == ranges[0][0] and r[1] == ranges[0][1] for r in ranges) \
                and not any(ranges[0][0] == w for w in written):
            return True
    return False


MONOTONE_OPS = ("arith.index_cast", "arith.extsi")  # order-preserving casts of an index array's values
CLAMP_OPS = ("arith.maxsi", "arith.minsi")


def row_range(value, dim: str, loop):
    """(X, clamps) when ``value`` is the induction variable of an
    ``scf.for`` not around ``loop`` from ``X[lt.dim dim]`` to ``X[lt.dim dim +
    1]``, both read through the same ``MONOTONE_OPS`` and ``CLAMP_OPS`` with
    constants (``clamps``: that chain), X a function argument marked
    ``lt.monotone``; None otherwise."""
    owner = value.owner
    if loop is None or not isinstance(owner, ir.Block):
        return None
    op = owner.owner
    # (an scf.for around ``loop`` would hold one position through all its iterations; one inside
    # ``loop`` or inside a loop merged with it takes the row's positions in turn)
    if op is None or op.name != "scf.for" or inside(loop, op) or list(owner.arguments)[0] != value:
        return None
    lower, upper = list(op.operands)[:2]
    low, high = _bound_source(lower), _bound_source(upper)
    if low is None or high is None or low[0] != high[0] or low[2] != high[2] or not monotone(low[0]):
        return None
    if not is_dim_of(low[1], dim) or shift_of(high[1], dim, loop) != ("+", "const", 1):
        return None
    return low[0], low[2]


def _is_for_index(value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.Block) and owner.owner is not None and owner.owner.name == "scf.for"


def _bound_source(value):
    """(X, index, chain) when ``value`` is ``X[index]`` (a one-axis load)
    through ``MONOTONE_OPS`` and ``CLAMP_OPS`` with a constant operand
    (``chain``: those ops and constants, innermost last), else None."""
    chain = []
    while True:
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.name in MONOTONE_OPS:
            chain.append((op.name,))
            value = op.operands[0]
        elif op.name in CLAMP_OPS:
            constants = [_constant(v) for v in op.operands]
            if constants[1] is not None:
                chain.append((op.name, constants[1]))
                value = op.operands[0]
            elif constants[0] is not None:
                chain.append((op.name, constants[0]))
                value = op.operands[1]
            else:
                return None
        elif op.name == "memref.load" and len(op.operands) == 2:
            return op.operands[0], op.operands[1], tuple(chain)
        else:
            return None


def _constant(value):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.operation.attributes["value"]).value


def reorder_conflicts(loop, roots=None, ignore=()) -> str | None:
    """Why the iterations of ``loop`` may not be reordered, or None.

    ``roots`` restricts the accesses considered (default: the loop itself);
    buffers in ``ignore`` are the caller's to check."""
    dim = lt.loop_dim(loop)
    found = [a for r in (roots or [loop]) for a in accesses(r) if not any(a.buffer == b for b in ignore)]
    by_buffer: dict = {}
    for a in found:
        by_buffer.setdefault(a.buffer, []).append(a)
    # a loop of ``roots`` over the same dim (the second loop of a merge) whose body allocates a buffer
    # makes it new in each of its iterations, as its body's are in ``loop``'s once the two are one
    siblings = [r for r in (roots or []) if r != loop and r.name == "lt.loop" and lt.loop_dim(r) == dim]
    written = [b for b, group in by_buffer.items() if any(a.kind != "read" for a in group)]
    for buffer, group in by_buffer.items():
        kinds = {a.kind for a in group}
        if kinds == {"read"} or private_cache(buffer, loop) or any(private_cache(buffer, r) for r in siblings):
            continue
        if len(kinds) == 1 and next(iter(kinds)).startswith("reduce:"):
            continue
        if not _private_axis(group, dim, loop, written):
            hint = ""
            if any(_is_for_index(v) for a in group for v in a.indices):
                hint = (" (a position of an scf.for from X[i] to X[i + 1] is row i's own only where X is an argument "
                        "marked lt.monotone that the loops do not write)")
            return (
                f"{buffer_name(buffer)} is written and accessed at elements that other iterations of "
                f"dim '{dim}' also access{hint}"
            )
    return None


PRIVATE_MARKERS = ("lt.cache", "lt.private")


def private_cache(buffer, loop) -> bool:
    """``buffer`` is allocated inside ``loop``: an ``lt.alloc`` in a loop's
    body is new in each iteration (its contents are undefined when the
    iteration starts; README, "The dialect"), so no iteration sees
    another's data.  The lowerings give each iteration of a parallel or
    GPU-mapped loop its own (a sequential loop may reuse one).  Under
    ``lt.vectorize`` only buffers known to be refilled each iteration count
    (an ``lt-cache`` tile, ``lt.cache``, or a tile ``lt-shrink-buffers``
    moved into a mapped loop, ``lt.private``): the vector lowering has no
    per-lane copies."""
    owner = buffer.owner
    if isinstance(owner, ir.Block):
        return False
    op = owner.operation
    if op.name != "lt.alloc" or loop not in lt.enclosing_loops(op):
        return False
    return "vectorize" not in lt.annotations(loop) or any(m in op.attributes for m in PRIVATE_MARKERS)


def shared_reductions(loop) -> list:
    """``lt.reduce`` ops in ``loop`` whose accumulator elements several of its
    iterations update: run in parallel, they must combine atomically."""
    dim = lt.loop_dim(loop)
    groups: dict = {}
    for a in accesses(loop):
        groups.setdefault(a.buffer, []).append(a)
    written = [b for b, group in groups.items() if any(a.kind != "read" for a in group)]
    shared = []
    for group in groups.values():
        if all(a.kind.startswith("reduce:") for a in group) and not _private_axis(group, dim, loop, written) \
                and not private_cache(group[0].buffer, loop):
            shared.extend(a.op for a in group)
    return shared


def index_slice(value, stop, allowed_args=frozenset()) -> list | None:
    """The pure index ops computing ``value`` that lie inside ``stop``, in
    dependence order (operands first), or None when something else computes
    it: an op that is not pure index arithmetic, or a block argument of
    ``stop`` or of an op inside it that is not in ``allowed_args``."""
    out = []

    def visit(v) -> bool:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return v in allowed_args or not defined_inside(v, stop)
        op = owner.operation
        if not inside(op, stop):
            return True
        if not is_pure_index_op(op):
            return False
        if any(o == op for o in out):
            return True
        if not all(visit(x) for x in op.operands):
            return False
        out.append(op)
        return True

    return out if visit(value) else None


def repeats(buffer) -> bool:
    """Whether ``buffer`` is a function argument marked ``lt.repeats``: an
    index array whose values repeat along the loops that read it (the row
    of each stored position of a CSR matrix), so a value read through it
    is not read once per iteration."""
    return _marked(buffer, "lt.repeats")


def monotone(buffer) -> bool:
    """Whether ``buffer`` is a function argument marked ``lt.monotone``:
    its values never decrease (a CSR's ``indptr``; the caller's promise,
    checked by the CPU kernel's checked call and by ``lt_mlir.kernel``'s
    CSR validation)."""
    return _marked(buffer, "lt.monotone")


def _marked(buffer, attribute: str) -> bool:
    """Whether ``buffer`` is an argument of a function that marks it ``attribute``."""
    owner = buffer.owner
    if not isinstance(owner, ir.Block):
        return False
    func = owner.owner
    func = func.operation if func is not None else None
    if func is None or func.name != "func.func":
        return False
    return arg_marked(func, ir.BlockArgument(buffer).arg_number, attribute)
