"""``lt-gpu-map{loop=L to=block|thread}`` and ``lt-gpu-auto{threads=T}``:
run loops' iterations as CUDA thread blocks and threads.

The mapping rules (kernel shape, hardware axes, launch sizes, what is
refused and why) are ``analysis/gpu_mapping.py``.

Refuses: no loop L; a mapping that breaks the kernel shape; more
than 1024 threads per block or 64 along z, more than 65535 blocks along y
or z; a loop
whose iterations are not independent (a buffer written in it is accessed at
elements other iterations also access; reductions of one kind are fine, and
combine atomically); mapping in a function — or a module, which compiles
for one target — that has ``lt.parallel`` loops (a function runs on the
CPU or on the GPU), and unrolled or vectorized
mapped loops.

``lt-gpu-auto`` maps every unmapped top-level loop nest: it takes the
outermost (at most three) loops of the nest's perfectly nested prefix whose
iterations are independent and write disjoint elements (no atomics).  If
that is one loop holding several statements, it becomes blocks and the
loops in its body threads, side by side: loops whose iterations are
independent and whose shared updates (reductions) each thread can
accumulate privately, after interchanging a loop with the one loop inside
it where that makes it so (loop_tool's matmul ``k { n }`` becomes
``n { k }``); a loop of more than T iterations is read thread-strided:
``for n in N/T { for n' in T [thread] }`` (consecutive threads take
consecutive elements, coalesced; 4 neighbouring elements a thread, one
128-bit access, for straight-line contiguous bodies), each thread keeping
its partial reductions in a register across the steps.  Otherwise the innermost loop is split by T when it has more than T
iterations, that inner part becomes threads and the loops above it blocks.
A nest with no such loop stays unmapped (it runs on one thread) and is
named in the pass's remark.

Last, every scratch buffer whose accesses all lie in one mapped loop moves
into it, shrunk to what one block or thread uses (``lt-shrink-buffers``,
GPU part): softmax's row maximum and sum become one shared f32 a block, and
a block's threads reduce into them with warp shuffles and a shared array
of per-warp values, not device-memory atomics.  The remark lists them.
"""

from __future__ import annotations

from ..analysis.dependence import reads_dim, reorder_conflicts, shared_reductions
from ..analysis.gpu_mapping import MAX_THREADS, body_statements, check_mapping, launch_count, mapping
from ..analysis.vector_plan import plan
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import PassError
from ..mlir import ir
from .common import find_loop, loop_label, refuse
from .registry import Option, register
from .shrink_buffers import into_kernels
from .split import split
from .swap import swap

NAME = "lt-gpu-map"
AUTO = "lt-gpu-auto"


def _loop_index(module_op, loop) -> int:
    return next(i for i, l in enumerate(preorder_loops(module_op)) if l == loop)


def _apply(module_op, target, to: str, pass_name: str) -> None:
    """Annotate, check the whole module, and undo the annotation if illegal."""
    old = target.attributes["lt.gpu"] if "lt.gpu" in target.attributes else None
    target.attributes["lt.gpu"] = ir.StringAttr.get(to)
    problem = check_mapping(module_op)
    if problem is None:
        return
    if old is None:
        del target.attributes["lt.gpu"]
    else:
        target.attributes["lt.gpu"] = old
    loop, why = problem
    label = f"L{_loop_index(module_op, target)} {loop_label(target)}"
    if loop != target:
        why = f"L{_loop_index(module_op, loop)} {loop_label(loop)} would be illegal: {why}"
    raise refuse(pass_name, f"cannot map {label} to {to}s: {why}", target)


@register(
    NAME,
    Option("loop", int, help="loop to map (L-number)"),
    Option("to", str, help="block or thread"),
)
def gpu_map(module_op, loop: int, to: str) -> None:
    """Run a loop's iterations as CUDA blocks or threads (tails are predicated)."""
    target = find_loop(module_op, loop, NAME)
    if to not in lt.GPU_MAPPINGS:
        raise refuse(NAME, f"option 'to' must be block or thread, got '{to}'", target)
    _apply(module_op, target, to, NAME)


def _auto_chain(root) -> list:
    chain, loop = [], root
    while loop is not None and len(chain) < 3:
        if lt.annotations(loop) or reorder_conflicts(loop) or shared_reductions(loop):
            break
        chain.append(loop)
        ops = body_statements(lt.loop_body(loop))
        loop = ops[0] if len(ops) == 1 and lt.is_loop(ops[0]) else None
    return chain


VECTOR = 4  # elements a thread in lt-gpu-auto's elementwise chunks (16 bytes of f32)


def _wants_vector_chunks(loop, threads: int, per_block: bool = False) -> bool:
    """A large innermost loop of straight-line code whose every access is
    contiguous along its dim (what lt-vectorize accepts): give each thread 4
    neighbouring iterations, which LLVM turns into 128-bit accesses (the
    kernel's pointers are 16-byte aligned).  ``per_block``: the loop is one
    block's (a row): large means a step of 4 for every thread."""
    enough = VECTOR * threads * (1 if per_block else 64)
    if launch_count(loop) < enough or lt.loop_size(loop) < VECTOR or lt.loop_size(loop) % VECTOR:
        return False
    if any(lt.is_loop(o) or o.regions for o in body_statements(lt.loop_body(loop))):
        return False
    return plan(loop) is None


def _thread_friendly(loop) -> bool:
    """An unmapped loop whose iterations may run on a block's threads side
    by side: independent, and any element its iterations share is updated
    from a value each thread can keep to itself (one partial result a
    thread: the reduction's index reads no dim of a loop inside it)."""
    if lt.annotations(loop) or reorder_conflicts(loop):
        return False
    inner_dims = {lt.loop_dim(l) for l in [loop, *_descendant_loops(loop)]}
    for op in shared_reductions(loop):
        for index in list(op.operands)[2:]:
            src = index.owner
            if isinstance(src, ir.Block):
                return False
            if any(reads_dim(src.operation, d) for d in inner_dims):
                return False
    return True


def _side_by_side_candidates(module_op, block_loop) -> list:
    """The loops of ``block_loop``'s body to map to threads side by side;
    a loop that does not qualify but holds exactly one loop that would is
    interchanged with it first (``k { n {..} }`` becomes ``n { k {..} }``)."""
    found = []
    for op in body_statements(lt.loop_body(block_loop)):
        if not lt.is_loop(op):
            continue
        if _thread_friendly(op):
            found.append(op)
            continue
        inner = body_statements(lt.loop_body(op))
        if len(inner) == 1 and lt.is_loop(inner[0]) and _thread_friendly(inner[0]) and lt.loop_dim(inner[0]) != lt.loop_dim(op):
            index = _loop_index(module_op, op)
            try:
                swap(module_op, index)
            except PassError:
                continue
            found.append(preorder_loops(module_op)[index])  # the interchanged pair's new outer loop
    return found


def _map_side_by_side(module_op, chain, threads: int, split) -> bool:
    """Map ``chain`` to blocks and the loops in its last loop's body to
    threads side by side (each split to at most ``threads`` threads)."""
    loops = _side_by_side_candidates(module_op, chain[-1])
    if not loops:
        return False
    for loop in chain:
        _apply(module_op, loop, "block", AUTO)
    for loop in loops:
        if launch_count(loop) > threads:
            loop = _strided(module_op, loop, threads, split)
        _apply(module_op, loop, "thread", AUTO)
    return True


def _strided(module_op, loop, threads: int, split):
    """Split a loop of more than ``threads`` iterations so that the block's
    threads take consecutive elements (coalesced) in each step of a
    sequential loop around them: ``for n in N/T { for n' in T [thread] }``;
    with 4 neighbouring elements a thread (one 128-bit access) when the body
    is straight-line contiguous code.  Returns the loop to map to threads."""
    if _wants_vector_chunks(loop, threads, per_block=True):
        split(module_op, _loop_index(module_op, loop), VECTOR)
        loop.attributes["lt.unroll"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
        loop = loop.parent
    if launch_count(loop) > threads:
        split(module_op, _loop_index(module_op, loop), threads)  # `loop` stays the inner part
    return loop


def _attempt(root, mapping_fn, error: bool = False):
    """Run ``mapping_fn``; on refusal, remove the nest's GPU annotations (the
    splits and interchanges it made stay: they change no result).  Returns
    whether it mapped (or, with ``error``, None or the refusal's reason)."""
    try:
        done = mapping_fn()
    except PassError as e:
        for loop in [root, *_descendant_loops(root)]:
            if "lt.gpu" in loop.attributes:
                del loop.attributes["lt.gpu"]
        return str(e).split(": ")[-1] if error else False
    return None if error else done


def _map_chain(module_op, chain, threads: int, split) -> None:
    """Blocks for all of ``chain`` but its last loop, which (split by
    ``threads`` when longer, after 4-element chunks for large elementwise
    loops) becomes the threads."""
    inner = chain[-1]
    if _wants_vector_chunks(inner, threads):
        # 4 neighbouring elements a thread: one 128-bit access each
        split(module_op, _loop_index(module_op, inner), VECTOR)
        inner.attributes["lt.unroll"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
        inner = inner.parent
        chain = chain[:-1] + [inner]
    if launch_count(inner) > threads:
        split(module_op, _loop_index(module_op, inner), threads)
        chain = chain[:-1] + [inner.parent, inner]  # split wraps `inner` in its outer part
    for loop in chain:
        _apply(module_op, loop, "block" if loop != chain[-1] else "thread", AUTO)


@register(AUTO, Option("threads", int, 256, "threads per block for the innermost mapped loop"))
def gpu_auto(module_op, threads: int = 256) -> str | None:
    """Map every unmapped top-level loop nest to blocks and threads (see the module docs)."""
    if not 1 <= threads <= MAX_THREADS:
        raise refuse(AUTO, f"threads must be in 1..{MAX_THREADS}, got {threads}")
    serial = []
    for f in lt.functions(module_op):
        if not f.regions[0].blocks:
            continue
        for root in [o for o in lt.body_ops(f.regions[0].blocks[0]) if lt.is_loop(o)]:
            if any(mapping(o) for o in [root, *_descendant_loops(root)]):
                continue
            chain = _auto_chain(root)
            if not chain:
                serial.append(f"L{_loop_index(module_op, root)} {loop_label(root)}")
                continue
            body = body_statements(lt.loop_body(chain[-1]))
            # One independent loop holding several statements: a block each
            # iteration, its loops on the block's threads.
            if len(chain) == 1 and len(body) > 1 and _attempt(root, lambda: _map_side_by_side(module_op, chain, threads, split)):
                continue
            # Otherwise the chain, as long as the hardware limits allow.
            why = None
            for k in range(len(chain), 0, -1):
                why = _attempt(root, lambda k=k: _map_chain(module_op, chain[:k], threads, split), error=True)
                if why is None:
                    break
            if why is not None:
                serial.append(f"L{_loop_index(module_op, root)} {loop_label(root)} ({why})")
    notes = [f"scratch buffer {n}" for n in into_kernels(module_op)]
    if serial:
        notes.append("runs on one GPU thread: " + ", ".join(serial))
    return "; ".join(notes) or None


def _descendant_loops(root) -> list:
    found = []
    root.walk(lambda o: (found.append(o) if o != root and o.name == "lt.loop" else None, ir.WalkResult.ADVANCE)[1])
    return found
