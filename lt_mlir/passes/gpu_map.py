"""``lt-gpu-map{loop=L to=block|thread}`` and ``lt-gpu-auto{threads=T}``:
run loops' iterations as CUDA thread blocks and threads.

A mapped loop's iterations run concurrently, one per block (``to=block``)
or per thread (``to=thread``).  Mapped loops form *kernels*: a kernel's
root is a mapped loop at the top of its function, and each further mapped
loop sits directly in the body of a mapped loop as the only statement there
(index arithmetic and ``lt.dim`` aside, which every thread may recompute),
blocks outside threads, at most three nested of each.  One exception: the
innermost block loop may hold several thread loops side by side, and other
statements between them; the block's threads run the thread loops one after
another with a barrier between consecutive parts, and the other statements
on thread 0 (so a block can reduce a row, then normalise it).  Everything
below the innermost mapped loop runs sequentially in each thread; top-level
code outside any kernel runs as a kernel of one thread (see
``lowering/lt_to_gpu.py``).

Hardware dimensions: the innermost block (thread) loop is ``x``, the next
``y``, then ``z``, so consecutive threads take consecutive iterations of the
innermost mapped loop (coalesced accesses when that loop walks the fastest
varying axis).  A loop of ``size`` S and ``tail`` T launches ``S + (T > 0)``
blocks or threads; the tail iteration and any iteration past a clipped
extent are predicated off (``scf.if``), never run out of bounds.

Refuses: no loop L; a mapping that breaks the kernel shape above; more
than 1024 threads per block or 64 along z, more than 65535 blocks along y
or z; a loop
whose iterations are not independent (a buffer written in it is accessed at
elements other iterations also access; reductions of one kind are fine, and
combine atomically); mapping in a function that has ``lt.parallel`` loops
(a function runs on the CPU or on the GPU), and unrolled or vectorized
mapped loops.

``lt-gpu-auto`` maps every unmapped top-level loop nest: it takes the
outermost (at most three) loops of the nest's perfectly nested prefix whose
iterations are independent and write disjoint elements (no atomics).  If
that is one loop holding several statements, it becomes blocks and the
loops in its body threads, side by side: loops whose iterations are
independent and whose shared updates (reductions) each thread can
accumulate privately, after interchanging a loop with the one loop inside
it where that makes it so (loop_tool's matmul ``k { n }`` becomes
``n { k }``); a loop of more than T iterations gets chunks of them a
thread.  Otherwise the innermost loop is split by T when it has more than T
iterations, that inner part becomes threads and the loops above it blocks.
A nest with no such loop stays unmapped (it runs on one thread) and is
named in the pass's remark.
"""

from __future__ import annotations

from ..dialect import lt
from ..errors import PassError
from ..mlir import ir
from .common import find_loop, is_pure_index_op, loop_label, reads_dim, refuse, reorder_conflicts, shared_reductions
from .registry import Option, register

NAME = "lt-gpu-map"
AUTO = "lt-gpu-auto"
MAX_THREADS = 1024
MAX_BLOCK_Z = 64
MAX_GRID_YZ = 65535
MAX_GRID_X = 2**31 - 1
AXES = ("x", "y", "z")


def launch_count(loop) -> int:
    """Blocks or threads a mapped loop launches."""
    return lt.loop_size(loop) + (1 if lt.loop_tail(loop) else 0)


def mapping(loop) -> str | None:
    a = lt.annotations(loop).get("gpu")
    return a if isinstance(a, str) else None


def _statements(block) -> list:
    """The ops of a loop body that do work (index arithmetic excluded)."""
    return [o for o in lt.body_ops(block) if not is_pure_index_op(o)]


def mapped_child(loop):
    """The mapped loop that continues ``loop``'s kernel, or None."""
    ops = _statements(lt.loop_body(loop))
    if len(ops) == 1 and lt.is_loop(ops[0]) and mapping(ops[0]):
        return ops[0]
    return None


def thread_roots(block_loop) -> list:
    """The thread-mapped loops directly in the body of ``block_loop``."""
    return [o for o in _statements(lt.loop_body(block_loop)) if lt.is_loop(o) and mapping(o) == "thread"]


def kernel_chains(root) -> tuple[list, list]:
    """(block loops outermost first, [thread loops of each thread chain,
    outermost first]) of the kernel rooted at ``root``.  The innermost
    block loop may hold several thread chains side by side (separated by
    barriers, see the module docs); a thread chain is a thread loop with the
    thread loops directly nested in it."""
    blocks, loop = [], root
    while loop is not None and mapping(loop) == "block":
        blocks.append(loop)
        child = mapped_child(loop)
        loop = child if child is not None and mapping(child) == "block" else None
    roots = thread_roots(blocks[-1]) if blocks else [root]
    chains = []
    for t in roots:
        chain = [t]
        while (child := mapped_child(chain[-1])) is not None:
            chain.append(child)
        chains.append(chain)
    return blocks, chains


def hardware_axes(root) -> dict:
    """Mapped loop -> ("block"|"thread", "x"|"y"|"z") for the kernel rooted
    at ``root``: the innermost loop of each chain is x."""
    blocks, chains = kernel_chains(root)
    out = {l: ("block", axis) for axis, l in zip(AXES, reversed(blocks))}
    for chain in chains:
        out.update({l: ("thread", axis) for axis, l in zip(AXES, reversed(chain))})
    return out


def launch_size(root) -> tuple[list[int], list[int]]:
    """(grid, block) extents ([x, y, z] each) of a kernel: side-by-side
    thread chains share the block, sized for the largest."""
    grid, block = [1, 1, 1], [1, 1, 1]
    for loop, (kind, axis) in hardware_axes(root).items():
        sizes = grid if kind == "block" else block
        i = AXES.index(axis)
        sizes[i] = max(sizes[i], launch_count(loop))
    return grid, block


def loop_problem(loop) -> str | None:
    """Why mapped ``loop`` cannot run as mapped, or None."""
    kind = mapping(loop)
    notes = lt.annotations(loop)
    for other in ("parallel", "unroll", "vectorize"):
        if other in notes:
            return f"a GPU-mapped loop cannot also be lt.{other}"
    outer = lt.enclosing_loops(loop)
    func = outer[-1].parent if outer else loop.parent
    parallel = []
    func.walk(lambda o: (parallel.append(o) if o.name == "lt.loop" and "lt.parallel" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    if parallel:
        return "the function has lt.parallel loops (CPU threads): a function runs on the CPU or on the GPU, not both"
    parent = loop.parent
    if parent.name == "lt.loop":
        if not mapping(parent):
            if any(mapping(l) for l in outer):
                return "its enclosing loop is not mapped: mapped loops must be directly nested in each other"
            return "it is inside an unmapped loop: a kernel's outermost mapped loop must be at the top of the function (map the enclosing loops first, outside in)"
        if kind == "block" and mapping(parent) == "thread":
            return "block loops must enclose thread loops"
        side_by_side = kind == "thread" and mapping(parent) == "block"
        if side_by_side:
            if any(mapping(o) == "block" for o in _statements(lt.loop_body(parent)) if lt.is_loop(o)):
                return "thread loops must be in the innermost block loop"
            why = side_by_side_problem(parent)
            if why:
                return why
        else:
            child = mapped_child(parent)
            if child is None or child != loop:
                return f"its enclosing {mapping(parent)} loop has other statements (only thread loops may sit side by side, in a block loop)"
    elif parent.name != "func.func":
        return "a kernel's outermost mapped loop must be at the top of the function"
    why = reorder_conflicts(loop)
    if why:
        return f"its iterations are not independent: {why}"
    return None


def _statement_of(op, block_loop):
    """The statement of ``block_loop``'s body that holds ``op``."""
    while op is not None and op.parent != block_loop:
        op = op.parent
    return op


def side_by_side_problem(block_loop) -> str | None:
    """Why the parts of a block loop holding thread loops (each thread loop,
    each run of other statements, run by thread 0) cannot be separated."""
    statements = _statements(lt.loop_body(block_loop))
    part, parts = 0, {}
    for i, op in enumerate(statements):
        if lt.is_loop(op) and mapping(op) == "thread" or (i and lt.is_loop(statements[i - 1]) and mapping(statements[i - 1]) == "thread"):
            part += 1
        parts[op] = part
    for op in statements:
        if op.name == "lt.alloc":
            return "a scratch buffer allocated beside thread loops would be each thread's own, not the block's"
        for r in op.results:
            for use in r.uses:
                user = _statement_of(use.owner, block_loop)
                if user is None or user not in parts or parts[user] != parts[op]:
                    return "a value computed beside thread loops (on thread 0) is used by another part of the block"
    return None


def kernel_problem(root) -> str | None:
    blocks, chains = kernel_chains(root)
    for kind, n in [("block", len(blocks))] + [("thread", len(c)) for c in chains]:
        if n > 3:
            return f"a kernel maps at most 3 nested loops to {kind}s, this one maps {n}"
    grid, block = launch_size(root)
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS:
        return f"{threads} threads per block (at most {MAX_THREADS})"
    if block[2] > MAX_BLOCK_Z:
        return f"{block[2]} threads along z (at most {MAX_BLOCK_Z})"
    if grid[0] > MAX_GRID_X:
        return f"{grid[0]} blocks along x (at most {MAX_GRID_X})"
    for axis in (1, 2):
        if grid[axis] > MAX_GRID_YZ:
            return f"{grid[axis]} blocks along {AXES[axis]} (at most {MAX_GRID_YZ})"
    return None


def kernel_roots(f) -> list:
    """Mapped loops at the top of function ``f``."""
    return [o for o in lt.body_ops(f.regions[0].blocks[0]) if lt.is_loop(o) and mapping(o)]


def check_mapping(module_op):
    """The first (loop, message) that makes the module's mapping illegal, or None."""
    from ..dialect.loop_tree import preorder_loops

    for loop in preorder_loops(module_op):
        if mapping(loop):
            why = loop_problem(loop)
            if why:
                return loop, why
    for f in lt.functions(module_op):
        if not f.regions[0].blocks:
            continue
        for root in kernel_roots(f):
            why = kernel_problem(root)
            if why:
                return root, why
    return None


def _loop_index(module_op, loop) -> int:
    from ..dialect.loop_tree import preorder_loops

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
        ops = _statements(lt.loop_body(loop))
        loop = ops[0] if len(ops) == 1 and lt.is_loop(ops[0]) else None
    return chain


VECTOR = 4  # elements a thread in lt-gpu-auto's elementwise chunks (16 bytes of f32)


def _wants_vector_chunks(loop, threads: int) -> bool:
    """A large innermost loop of straight-line code whose every access is
    contiguous along its dim (what lt-vectorize accepts): give each thread 4
    neighbouring iterations, which LLVM turns into 128-bit accesses (the
    kernel's pointers are 16-byte aligned)."""
    from ..lowering.vectorize import plan

    if launch_count(loop) < VECTOR * threads * 64 or lt.loop_size(loop) < VECTOR:
        return False
    if any(lt.is_loop(o) or o.regions for o in _statements(lt.loop_body(loop))):
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
    from .swap import swap

    found = []
    for op in _statements(lt.loop_body(block_loop)):
        if not lt.is_loop(op):
            continue
        if _thread_friendly(op):
            found.append(op)
            continue
        inner = _statements(lt.loop_body(op))
        if len(inner) == 1 and lt.is_loop(inner[0]) and _thread_friendly(inner[0]) and lt.loop_dim(inner[0]) != lt.loop_dim(op):
            from ..dialect.loop_tree import preorder_loops

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
        count = launch_count(loop)
        if count > threads:  # chunks of ceil(count / threads) iterations a thread
            split(module_op, _loop_index(module_op, loop), -(-lt.loop_size(loop) // threads))
            loop = loop.parent  # the outer part: at most `threads` iterations
        _apply(module_op, loop, "thread", AUTO)
    return True


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
    from .split import split

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
            body = _statements(lt.loop_body(chain[-1]))
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
    if serial:
        return "runs on one GPU thread: " + ", ".join(serial)
    return None


def _descendant_loops(root) -> list:
    found = []
    root.walk(lambda o: (found.append(o) if o != root and o.name == "lt.loop" else None, ir.WalkResult.ADVANCE)[1])
    return found
