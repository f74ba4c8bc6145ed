"""``lt-shrink-buffers``: size every ``lt.alloc`` to the tile that is live
under the innermost common enclosing loops of its accesses.

An ``lt.alloc`` is declared over named dims at full logical size (the blog's
scratch ``T[m, n]`` of a 33x48 clipped matmul: 1584 elements).  Let X be the
innermost ``lt.loop`` that encloses every access of the buffer (its *common
enclosing loops* are X and X's ancestors).  For an axis of the buffer over
dim ``d`` (the alloc's ``dims`` attribute) the pass shrinks that axis when

* every access indexes it with exactly an ``lt.dim d`` value, and
* some common enclosing loop iterates ``d``; the innermost such level D
  encloses each of those ``lt.dim`` ops,

to the inner extent ``E`` of D (what one iteration of D's body covers of
``d``).  Within one iteration of D every access then lies in
``[base, base + E)`` where ``base`` is ``lt.dim d`` at the start of X's body
(the offset of the current chunk of ``d``), and distinct iterations of D
touch disjoint elements, so no value lives across them: the pass inserts
``base`` at the start of X's body and indexes the axis with
``lt.dim d - base``.  A tail iteration of D covers fewer than ``E`` elements
and uses a prefix of the same tile.  The blog's T under ``for m in 4 r 1`` and
``for n in 1 r 16`` (inner extents 8 and 32) becomes 8x32 = 256 elements.

Other axes keep their size: an axis whose common levels include one whose
iterations run at the same time (``lt.parallel``, ``lt.gpu``,
``lt.vectorize``: they would share the tile), a buffer without accesses, one whose result is
used by anything but a load, store or ``lt.reduce`` (it escapes), accesses
with no common enclosing loop over the axis's dim, or any index on the axis
that is not exactly ``lt.dim d`` (``m + 1``, a constant, a loop's iteration
number).  The pass never refuses; it returns a remark per shrunk buffer,
``%0 over [m, n]: 1584 -> 256 elements (6336 -> 1024 bytes)`` (the name is
the buffer's name in the loop tree), or says that nothing shrank.

GPU kernels: when the innermost common enclosing loops include a
``lt.gpu``-mapped loop, the tile moves into the body of the innermost such
loop H, and the mapped levels at and above H may shrink their axes too:
each block (H mapped to blocks; the tile is block-shared memory, which the
threads of the block loop's parts share across the barriers between them)
or each thread (H mapped to threads; a per-thread buffer) gets its own
copy, so the concurrent iterations never share one.  Softmax's row maximum
``%0[m]`` under ``for m [gpu block]`` becomes one shared f32 a block
instead of a device buffer of M.  A block's tile that would take its shared
memory past ``gpu_mapping.SHARED_BYTES`` (48 KiB, the static limit) stays
in device memory, shrunk only along sequential levels -- unless each of
its elements is one thread's (``gpu_mapping.owned_plan``: the lowering
keeps it in that thread's registers, no shared memory at all).

Relative indices: the index written is ``lt.dim d - base``, clamped as
``min(max(lt.dim d - base, 0), E - 1)`` when the static bounds check run
before lowering (``analysis/bounds.py``) cannot itself see that the
difference lies in ``[0, E)``.  Its interval arithmetic today cannot (two
``lt.dim d`` values each range over all of ``d``), so the clamp is emitted;
it never changes the value (see above) and LLVM folds it away, but
``lt-vectorize`` refuses to vectorize a loop over ``d`` whose body indexes
with it.  Once the bounds check relates ``lt.dim d - lt.dim d`` the plain
difference is emitted automatically.  ``relative_index`` builds the form
and ``match_relative_index`` recognises it (``lt-cache``/``lt-uncache`` use
both).

Run it late: the rewritten indices are no longer exactly ``lt.dim d``, so a
pass that later reorders the shrunk axis's loops treats the buffer as shared
between iterations (``dependence.reorder_conflicts``).
"""

from __future__ import annotations

from ..analysis import dependence, gpu_mapping
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..mlir import ir
from . import common
from .registry import register

PASS = "lt-shrink-buffers"
# Annotations under which iterations of a loop run at the same time: a tile
# (hoisted to the function entry by the lowering) cannot be shared by them.
CONCURRENT = ("parallel", "gpu", "vectorize")

# Where each access op keeps its memref and indices.
_BUFFER_OPERAND = {"memref.load": 0, "memref.store": 1, "lt.reduce": 1}


# ------------------------------------------------------------------ pass


@register(PASS)
def run(module_op) -> str:
    """Size every lt.alloc to the tile live under the common enclosing loops of its accesses (tails reuse a prefix)."""
    notes = _shrink_all(module_op, only_gpu=False)
    return "; ".join(notes) if notes else "no lt.alloc could shrink"


def into_kernels(module_op) -> list[str]:
    """Shrink only the buffers whose accesses all lie in one GPU-mapped loop
    (moving each into it: block-shared or per-thread memory); the remarks.
    ``lt-gpu-auto`` ends with this."""
    return _shrink_all(module_op, only_gpu=True)


def _shrink_all(module_op, only_gpu: bool) -> list[str]:
    notes = []
    for f in lt.functions(module_op):
        allocs = []
        f.walk(lambda o: (allocs.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1])
        if not allocs:
            continue
        names = value_names(f)
        found = dependence.accesses(f)  # shrinking one buffer rewrites only its own accesses
        for alloc in allocs:
            note = _shrink(alloc, found, names, only_gpu)
            if note:
                notes.append(note)
    return notes


def _shrink(alloc, found: list, names: dict, only_gpu: bool = False) -> str | None:
    result = alloc.results[0]
    for use in result.uses:
        owner = use.owner.operation
        if _BUFFER_OPERAND.get(owner.name) != use.operand_number:
            return None  # the buffer escapes (a call, a view, a store of the memref itself)
    accs = [a for a in found if a.buffer == result]
    if not accs:
        return None
    chains = [lt.enclosing_loops(a.op) for a in accs]
    shared = [l for l in chains[0] if all(l in c for c in chains[1:])]  # innermost first
    if not shared:
        return None
    inner = shared[0]
    # The innermost GPU-mapped or parallel loop around every access: the tile
    # can live in its body, one per block (shared memory), per GPU thread or
    # per CPU thread, so the concurrent levels at and above it need not share it.
    home = next((l for l in shared if _home(l)), None)
    plan = _plan(alloc, result, accs, shared, home)
    t = ir.MemRefType(result.type)
    if home is not None and plan:  # into the home even when only levels inside it shrink: its iterations run at once
        new_shape = [lt.inner_extent(plan[i][1]) if i in plan else s for i, s in enumerate(t.shape)]
        if (gpu_mapping.mapping(home) == "block" and gpu_mapping.owned_plan(alloc) is None  # (one a thread owns: registers)
                and gpu_mapping.shared_bytes(home) + lt.nbytes(new_shape, t.element_type) > gpu_mapping.SHARED_BYTES):
            home = None  # would not fit in shared memory: keep it in global memory
            plan = _plan(alloc, result, accs, shared, None)
    else:
        home = None
    if not plan or (only_gpu and (home is None or "gpu" not in lt.annotations(home))):
        return None
    plan = {axis: (dim, lt.inner_extent(level)) for axis, (dim, level) in plan.items()}
    return _rewrite(alloc, result, accs, inner, plan, names, home)


def _plan(alloc, result, accs, shared, home) -> dict:
    """axis -> (dim, level) of the axes that shrink; with ``home`` (a mapped
    loop the tile moves into) its own and enclosing mapped levels allowed."""
    t = ir.MemRefType(result.type)
    shape = list(t.shape)
    dims = [ir.StringAttr(a).value for a in ir.ArrayAttr(alloc.attributes["dims"])]
    private = shared[shared.index(home):] if home is not None else []
    plan = {}
    for axis, dim in enumerate(dims):
        level = next((l for l in shared if lt.loop_dim(l) == dim), None)
        if level is None:
            continue
        extent = lt.inner_extent(level)
        if extent >= shape[axis]:
            continue
        if any(_concurrent(l) and not (l in private and _home(l)) for l in shared if lt.loop_dim(l) == dim):
            continue  # iterations that run at once would share the tile
        ok = True
        for a in accs:
            index = a.indices[axis]
            if not dependence.is_dim_of(index, dim) or level not in lt.enclosing_loops(index.owner.operation):
                ok = False
                break
        if ok:
            plan[axis] = (dim, level)
    return plan


def _rewrite(alloc, result, accs, inner, plan: dict, names: dict, home) -> str:
    t = ir.MemRefType(result.type)
    shape = list(t.shape)
    dims = [ir.StringAttr(a).value for a in ir.ArrayAttr(alloc.attributes["dims"])]
    body = lt.loop_body(inner)
    bases = {}
    with ir.InsertionPoint.at_block_begin(body):
        for axis, (dim, _) in plan.items():
            bases[axis] = common.new_dim(dim)
    last_base = bases[max(bases)].owner.operation
    relative = {}  # (axis, lt.dim value) -> relative index
    for a in accs:
        for axis, (_, extent) in plan.items():
            index = a.indices[axis]
            key = (axis, index)
            if key not in relative:
                def_op = index.owner.operation
                inside = inner in lt.enclosing_loops(def_op)
                with ir.InsertionPoint.after(def_op if inside else last_base):
                    relative[key] = common.relative_index(index, bases[axis], extent)
            first = _BUFFER_OPERAND[a.op.name] + 1
            a.op.operands[first + axis] = relative[key]

    new_shape = [plan[i][1] if i in plan else s for i, s in enumerate(shape)]
    new_type = ir.MemRefType.get(new_shape, t.element_type)
    attrs = {name: alloc.attributes[name] for name in alloc.attributes}  # iterating yields names
    where = ir.InsertionPoint.at_block_begin(lt.loop_body(home)) if home is not None else ir.InsertionPoint(alloc)
    if home is not None:
        attrs["lt.private"] = ir.UnitAttr.get()
    with where, alloc.location:
        new = ir.Operation.create("lt.alloc", results=[new_type], attributes=attrs)
    result.replace_all_uses_with(new.results[0])
    name = names.get(result, "an lt.alloc")
    alloc.erase()

    old_n, new_n = _count(shape), _count(new_shape)
    et = t.element_type
    space = ""
    if home is not None:
        space = {"block": ", in shared memory (one per block)", "thread": ", one per thread"}.get(
            gpu_mapping.mapping(home), ", one per thread of the parallel loop")
        if gpu_mapping.mapping(home) == "block" and gpu_mapping.owned_plan(new) is not None:
            space = ", in the block, each element one thread's (the CUDA lowering keeps it in that thread's registers)"
    return (
        f"{name} over [{', '.join(dims)}]: {old_n} -> {new_n} elements "
        f"({lt.nbytes(shape, et)} -> {lt.nbytes(new_shape, et)} bytes){space}"
    )


def _home(loop) -> bool:
    """Whether a tile may move into ``loop``'s body, one per concurrent
    iteration: a GPU-mapped loop (a block's or a thread's) or a parallel
    loop (a CPU thread's: an ``lt.alloc`` in a parallel loop's body is one
    a thread)."""
    a = lt.annotations(loop)
    return "gpu" in a or "parallel" in a


def _concurrent(loop) -> bool:
    """Whether iterations of ``loop`` may run at the same time."""
    return any(k in lt.annotations(loop) for k in CONCURRENT)


def _count(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
