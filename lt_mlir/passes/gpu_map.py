"""``lt-gpu-map{loop=L to=block|thread}`` and ``lt-gpu-auto{threads=T}``:
run loops' iterations as CUDA thread blocks and threads.

A mapped loop's iterations run concurrently, one per block (``to=block``)
or per thread (``to=thread``).  Mapped loops form *kernels*: a kernel's
root is a mapped loop at the top of its function, and each further mapped
loop sits directly in the body of a mapped loop as the only statement there
(index arithmetic and ``lt.dim`` aside, which every thread may recompute),
blocks outside threads, at most three of each.  Everything below the
innermost mapped loop runs sequentially in each thread; top-level code
outside any kernel runs as a kernel of one thread (see
``lowering/lt_to_gpu.py``).

Hardware dimensions: the innermost block (thread) loop is ``x``, the next
``y``, then ``z``, so consecutive threads take consecutive iterations of the
innermost mapped loop (coalesced accesses when that loop walks the fastest
varying axis).  A loop of ``size`` S and ``tail`` T launches ``S + (T > 0)``
blocks or threads; the tail iteration and any iteration past a clipped
extent are predicated off (``scf.if``), never run out of bounds.

Refuses: no loop L; a mapping that breaks the kernel shape above; more
than 1024 threads per block, more than 65535 blocks along y or z; a loop
whose iterations are not independent (a buffer written in it is accessed at
elements other iterations also access; reductions of one kind are fine, and
combine atomically); mapped loops inside, around or on ``lt.parallel``
loops, and unrolled or vectorized mapped loops.

``lt-gpu-auto`` maps every unmapped top-level loop nest: it takes the
outermost (at most three) loops of the nest's perfectly nested prefix whose
iterations are independent and write disjoint elements (no atomics), splits
the innermost of them by T when it has more than T iterations, and maps
that inner part to threads and the loops above it to blocks.  A nest with
no such loop stays unmapped (it runs on one thread) and is named in the
pass's remark.
"""

from __future__ import annotations

from ..dialect import lt
from ..errors import PassError
from ..mlir import ir
from .common import find_loop, is_pure_index_op, loop_label, refuse, reorder_conflicts, shared_reductions
from .registry import Option, register

NAME = "lt-gpu-map"
AUTO = "lt-gpu-auto"
MAX_THREADS = 1024
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


def kernel_chain(root) -> list:
    """The mapped loops of the kernel rooted at ``root``, outermost first."""
    chain = [root]
    while (child := mapped_child(chain[-1])) is not None:
        chain.append(child)
    return chain


def hardware_axes(chain) -> dict:
    """Mapped loop -> ("block"|"thread", "x"|"y"|"z"): innermost is x."""
    out = {}
    for kind in ("block", "thread"):
        loops = [l for l in chain if mapping(l) == kind]
        for axis, l in zip(AXES, reversed(loops)):
            out[l] = (kind, axis)
    return out


def launch_size(chain) -> tuple[list[int], list[int]]:
    """(grid, block) extents ([x, y, z] each) of a kernel."""
    grid, block = [1, 1, 1], [1, 1, 1]
    for loop, (kind, axis) in hardware_axes(chain).items():
        (grid if kind == "block" else block)[AXES.index(axis)] = launch_count(loop)
    return grid, block


def _enclosing(loop) -> list:
    return lt.enclosing_loops(loop)


def loop_problem(loop) -> str | None:
    """Why mapped ``loop`` cannot run as mapped, or None."""
    kind = mapping(loop)
    notes = lt.annotations(loop)
    for other in ("parallel", "unroll", "vectorize"):
        if other in notes:
            return f"a GPU-mapped loop cannot also be lt.{other}"
    outer = _enclosing(loop)
    if any("parallel" in lt.annotations(l) for l in outer):
        return "it is inside an lt.parallel loop (CPU threads and GPU kernels do not nest)"
    inner_parallel = []
    loop.walk(lambda o: (inner_parallel.append(o) if o != loop and o.name == "lt.loop" and "lt.parallel" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    if inner_parallel:
        return "it holds an lt.parallel loop (CPU threads and GPU kernels do not nest)"
    parent = loop.parent
    if parent.name == "lt.loop":
        if not mapping(parent):
            if any(mapping(l) for l in outer):
                return "its enclosing loop is not mapped: mapped loops must be directly nested in each other"
            return "it is inside an unmapped loop: a kernel's outermost mapped loop must be at the top of the function (map the enclosing loops first, outside in)"
        child = mapped_child(parent)
        if child is None or child != loop:
            return "its enclosing mapped loop has other statements (they would run once per thread)"
        if kind == "block" and mapping(parent) == "thread":
            return "block loops must enclose thread loops"
    elif parent.name != "func.func":
        return "a kernel's outermost mapped loop must be at the top of the function"
    why = reorder_conflicts(loop)
    if why:
        return f"its iterations are not independent: {why}"
    return None


def kernel_problem(chain) -> str | None:
    kinds = [mapping(l) for l in chain]
    for kind in ("block", "thread"):
        if kinds.count(kind) > 3:
            return f"a kernel maps at most 3 loops to {kind}s, this one maps {kinds.count(kind)}"
    grid, block = launch_size(chain)
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS:
        return f"{threads} threads per block (at most {MAX_THREADS})"
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
            why = kernel_problem(kernel_chain(root))
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
            inner = chain[-1]
            if launch_count(inner) > threads:
                split(module_op, _loop_index(module_op, inner), threads)
                chain = chain[:-1] + [inner.parent, inner]  # split wraps `inner` in its outer part
            try:
                for loop in chain:
                    _apply(module_op, loop, "block" if loop != chain[-1] else "thread", AUTO)
            except PassError as e:  # e.g. too many blocks along y: leave the nest serial
                for loop in chain:
                    if "lt.gpu" in loop.attributes:
                        del loop.attributes["lt.gpu"]
                serial.append(f"L{_loop_index(module_op, root)} {loop_label(root)} ({str(e).split(': ')[-1]})")
    if serial:
        return "runs on one GPU thread: " + ", ".join(serial)
    return None


def _descendant_loops(root) -> list:
    found = []
    root.walk(lambda o: (found.append(o) if o != root and o.name == "lt.loop" else None, ir.WalkResult.ADVANCE)[1])
    return found
