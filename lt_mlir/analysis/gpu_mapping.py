"""The GPU mapping rules: which ``lt.gpu`` annotations form a legal kernel
(one copy, asked by ``lt-gpu-map``/``lt-gpu-auto``, the registry's
post-check and the GPU lowering).

A mapped loop's iterations run concurrently, one per block (``to=block``)
or per thread (``to=thread``).  Mapped loops form *kernels*: a kernel's
root is a mapped loop at the top of its function, and each further mapped
loop sits directly in the body of a mapped loop as the only statement there
(index arithmetic and ``lt.dim`` aside, which every thread may recompute),
blocks outside threads, at most three nested of each.  One exception: the
innermost block loop may hold several thread loops side by side, and other
statements between them; the block's threads run the thread loops one after
another with a barrier between consecutive parts, and the other statements
on thread 0 (so a block can reduce a row, then normalise it).  Thread loops
may also sit in *block-level sequential loops*: unannotated, unmapped loops
inside the innermost block loop (with only such loops between) that every
thread of the block runs; their bodies are split into parts the same way,
with a barrier ending each iteration (the k-slices of a shared-memory GEMM:
copy a slice into shared memory, barrier, compute on it, barrier).  An
``lt.alloc`` whose nearest mapped loop is a block loop is the block's shared
memory (at most ``SHARED_BYTES`` a block).  Everything
below the innermost mapped loop runs sequentially in each thread; top-level
code outside any kernel runs as a kernel of one thread (see
``lowering/gpu/lt_to_gpu.py``).

Hardware dimensions: the innermost block (thread) loop is ``x``, the next
``y``, then ``z``, so consecutive threads take consecutive iterations of the
innermost mapped loop (coalesced accesses when that loop walks the fastest
varying axis).  A loop of ``size`` S and ``tail`` T launches ``S + (T > 0)``
blocks or threads; the tail iteration and any iteration past a clipped
extent are predicated off (``scf.if``), never run out of bounds.
"""

from __future__ import annotations

from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..mlir import ir
from .dependence import inside, is_pure_index_op, reorder_conflicts

MAX_THREADS = 1024
SHARED_BYTES = 48 * 1024  # static shared memory a block may declare
PIPELINING = {"double_buffer"}  # annotations a block-level sequential loop may carry (lt-double-buffer)
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


def body_statements(block) -> list:
    """The ops of a loop body that do work (index arithmetic excluded)."""
    return [o for o in lt.body_ops(block) if not is_pure_index_op(o)]


def mapped_child(loop):
    """The mapped loop that continues ``loop``'s kernel, or None."""
    ops = body_statements(lt.loop_body(loop))
    if len(ops) == 1 and lt.is_loop(ops[0]) and mapping(ops[0]):
        return ops[0]
    return None


def thread_roots(block_loop) -> list:
    """The thread-mapped loops of the innermost block loop ``block_loop``
    that no thread loop encloses: in its body, or in its block-level
    sequential loops (see ``block_sequential``), in program order."""
    roots = []
    for o in body_statements(lt.loop_body(block_loop)):
        if lt.is_loop(o):
            if mapping(o) == "thread":
                roots.append(o)
            elif not mapping(o):
                roots.extend(thread_roots(o))
    return roots


def block_sequential(loop) -> bool:
    """Whether unmapped ``loop`` is a *block-level sequential loop*: inside
    the innermost block loop, with only such loops between, and holding
    thread loops.  Every thread of the block runs it (its trip count depends
    on block-level dims only) and its body is split into parts like the
    block loop's, with a barrier after each iteration."""
    if mapping(loop) or set(lt.annotations(loop)) - PIPELINING or not thread_roots(loop):
        return False
    parent = loop.parent
    while parent is not None and parent.name == "lt.loop" and not mapping(parent):
        if set(lt.annotations(parent)) - PIPELINING:
            return False
        parent = parent.parent
    return parent is not None and parent.name == "lt.loop" and mapping(parent) == "block"


def part_bodies(block_loop) -> list:
    """The blocks whose statements are separated into parts: the innermost
    block loop's body and the bodies of its block-level sequential loops."""
    out = [lt.loop_body(block_loop)]
    for o in body_statements(lt.loop_body(block_loop)):
        if lt.is_loop(o) and block_sequential(o):
            out.extend(part_bodies(o))
    return out


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


def _has_parallel(op) -> bool:
    found = []
    op.walk(lambda o: (found.append(o), ir.WalkResult.INTERRUPT)[1] if o.name == "lt.loop" and "lt.parallel" in o.attributes
            else ir.WalkResult.ADVANCE)
    return bool(found)


def loop_problem(loop) -> str | None:
    """Why mapped ``loop`` cannot run as mapped, or None."""
    kind = mapping(loop)
    notes = lt.annotations(loop)
    for other in ("parallel", "unroll", "vectorize"):
        if other in notes:
            return f"a GPU-mapped loop cannot also be lt.{other}"
    outer = lt.enclosing_loops(loop)
    func = outer[-1].parent if outer else loop.parent
    if _has_parallel(func):
        return "the function has lt.parallel loops (CPU threads): a function runs on the CPU or on the GPU, not both"
    module = func.parent  # one module compiles for one target: lt-prepack's pack function is the function's own
    if module is not None and module.name == "builtin.module" and _has_parallel(module):
        return "the module has lt.parallel loops (CPU threads): a module runs on the CPU or on the GPU, not both"
    parent = loop.parent
    if parent.name == "lt.loop":
        if not mapping(parent):
            if kind == "thread" and block_sequential(parent):
                # thread loops in a sequential loop of the block (k-blocking:
                # copy a tile into shared memory, then compute on it): every
                # level up to the block loop is split into parts
                level = parent
                while True:
                    why = side_by_side_problem(level)
                    if why:
                        return why
                    if mapping(level) == "block":
                        break
                    level = level.parent
                reorder = reorder_conflicts(loop)
                return f"its iterations are not independent: {reorder}" if reorder else None
            if any(mapping(l) for l in outer):
                if kind == "thread" and next((mapping(l) for l in outer if mapping(l)), None) == "block":
                    return (
                        "its enclosing loop is not mapped; thread loops may sit in sequential loops of the innermost "
                        "block loop only when no loop between has annotations"
                    )
                return "its enclosing loop is not mapped: mapped loops must be directly nested in each other"
            return "it is inside an unmapped loop: a kernel's outermost mapped loop must be at the top of the function (map the enclosing loops first, outside in)"
        if kind == "block" and mapping(parent) == "thread":
            return "block loops must enclose thread loops"
        side_by_side = kind == "thread" and mapping(parent) == "block"
        if side_by_side:
            if any(mapping(o) == "block" for o in body_statements(lt.loop_body(parent)) if lt.is_loop(o)):
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


def _structural(op) -> bool:
    """A part of its own: a thread loop or a block-level sequential loop."""
    return lt.is_loop(op) and (mapping(op) == "thread" or block_sequential(op))


def side_by_side_problem(block_loop) -> str | None:
    """Why the parts of a block loop (or block-level sequential loop)
    holding thread loops (each thread loop, each block-level sequential
    loop, each run of other statements, run by thread 0) cannot be
    separated."""
    statements = [o for o in body_statements(lt.loop_body(block_loop)) if o.name != "lt.alloc"]
    part, parts = 0, {}
    for i, op in enumerate(statements):
        if _structural(op) or (i and _structural(statements[i - 1])):
            part += 1
        parts[op] = part
    for op in body_statements(lt.loop_body(block_loop)):
        if op.name == "lt.alloc" and op not in parts:
            parts[op] = -1  # block-shared memory: every part may use it
    for op in statements:
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
    if blocks and (nbytes := shared_bytes(blocks[-1])) > SHARED_BYTES:
        return f"{nbytes} bytes of block-shared scratch buffers (at most {SHARED_BYTES} bytes of static shared memory a block)"
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


def buffer_space(alloc) -> str | None:
    """Where an ``lt.alloc`` lives in a kernel: ``"block"`` (its nearest
    enclosing mapped loop is a block loop: block-shared memory), ``"thread"``
    (a thread's own; also one marked ``lt.thread_private``: a register a
    thread across block-level loops) or None (outside every kernel: device
    memory)."""
    if "lt.thread_private" in alloc.attributes:
        return "thread"
    for loop in lt.enclosing_loops(alloc):
        kind = mapping(loop)
        if kind:
            return kind
    return None


def shared_bytes(block_loop) -> int:
    """Bytes of the block-shared buffers (``lt.alloc`` whose nearest mapped
    loop is a block loop, but none that a thread owns element by element:
    ``owned_plan``, the lowering keeps those in registers) in the kernel
    around ``block_loop``."""
    root = block_loop
    while root.parent is not None and root.parent.name == "lt.loop" and mapping(root.parent):
        root = root.parent
    total = []

    def visit(o):
        if o.name == "lt.alloc" and buffer_space(o) == "block" and owned_plan(o) is None:  # (an owned one: registers)
            t = ir.MemRefType(o.results[0].type)
            total.append(lt.nbytes(t.shape, t.element_type))
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return sum(total)


def kernel_roots(f) -> list:
    """Mapped loops at the top of function ``f``."""
    return [o for o in lt.body_ops(f.regions[0].blocks[0]) if lt.is_loop(o) and mapping(o)]


def check_mapping(module_op):
    """The first (loop, message) that makes the module's mapping illegal, or None."""
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


# ------------------------------------------------------------ buffers a thread owns


_ACCESS = {"memref.load": (0, 1), "memref.store": (1, 2), "lt.reduce": (1, 2)}  # name -> (buffer operand, first index)


def owned_plan(alloc):
    """Where every access to ``alloc``'s buffer sits in a thread chain of
    one shape and places each element on one thread, the same in every
    access (``lowering/gpu/register_tiles.keep_owned_in_registers``
    documents the rule): (the axes the owning thread indexes, [(access op,
    its indices)]); else None -- also for a buffer a pass marked (a cache,
    a padded or double-buffered tile: shared memory by design)."""
    if any(name not in ("dims", "lt.private") for name in alloc.attributes):
        return None
    buffer = alloc.results[0]
    uses, shape, thread_axes = [], None, None
    for use in buffer.uses:
        op = use.owner
        op = op.operation if hasattr(op, "operation") else op
        if op.name not in _ACCESS or use.operand_number != _ACCESS[op.name][0]:
            return None
        chain = [l for l in reversed(lt.enclosing_loops(op)) if mapping(l) == "thread"]
        if not chain:
            return None
        sig = tuple((lt.loop_dim(l), lt.loop_size(l), lt.loop_tail(l)) for l in chain)
        if shape is not None and sig != shape:
            return None
        shape = sig
        indices = list(op.operands)[_ACCESS[op.name][1]:]
        # the unmapped loops around the chain in the block (block-level sequential loops): what they move
        # differs from one of their iterations to the next, so it may not place a thread's elements
        sequential = [l for l in lt.enclosing_loops(chain[0]) if not mapping(l)]
        axes = {}
        for k, v in enumerate(indices):
            form = _thread_form(v, chain, sequential)
            if form is False:
                return None
            if form is not None:
                axes[k] = form
        if not axes:
            return None
        if thread_axes is None:
            thread_axes = axes
        elif axes != thread_axes:  # the same axes, each the same function of the thread's position
            return None
        # every thread loop of the chain moves some axis: distinct threads, distinct elements
        if {d for d, *_ in shape} - {form[1] for form in axes.values()}:
            return None
        uses.append((op, indices))
    return sorted(thread_axes), uses


def _thread_form(v, chain, sequential=()):
    """How index ``v`` depends on the thread chain ``chain`` (outermost
    first): None (no thread loop moves it: an index within the thread's
    own elements), False (otherwise than allowed), or ``("dim", D, outer,
    steps)``: ``lt.dim D`` (every loop over D inside the chain a thread
    loop of it, those outside it, ``outer``, block loops) plus or minus
    values from outside the chain (``steps``)."""
    root = chain[0]

    def within(op) -> bool:
        return op == root or inside(op, root)

    def movers(x) -> set:
        """The loops inside the chain (itself included) that move ``x``."""
        owner = x.owner
        if isinstance(owner, ir.Block):
            loop = owner.owner.operation if owner.owner is not None else None
            return {loop} if loop is not None and loop.name == "lt.loop" and within(loop) else set()
        op = owner.operation
        if not within(op):
            return set()
        if op.name == "lt.dim":
            d = ir.StringAttr(op.attributes["dim"]).value
            return {l for l in lt.enclosing_loops(op) if lt.loop_dim(l) == d and within(l)}
        out = set()
        for o in op.operands:
            out |= movers(o)
        return out

    loops = movers(v)
    if _moved_by(v, sequential):
        return False  # other elements in other iterations of a sequential loop around the chain
    threads = {l for l in loops if l in chain}
    if not threads:
        return None
    if threads != loops:
        return False  # a thread loop and another loop on one axis
    steps, x = [], v
    while True:
        owner = x.owner
        if isinstance(owner, ir.Block):
            return False  # a loop's iteration number itself: not an lt.dim
        op = owner.operation
        if op.name == "lt.dim":
            d = ir.StringAttr(op.attributes["dim"]).value
            outer = tuple(l for l in lt.enclosing_loops(op) if lt.loop_dim(l) == d and not within(l))
            if any(mapping(l) != "block" for l in outer):
                return False  # a sequential level of the dim around the chain: other rows in other iterations
            return ("dim", d, outer, steps)
        if op.name not in ("arith.addi", "arith.subi"):
            return False
        a, b = op.operands
        if not movers(b):
            steps.append((op.name, 1, _key(b)))
            x = a
        elif op.name == "arith.addi" and not movers(a):
            steps.append((op.name, 0, _key(a)))
            x = b
        else:
            return False


def _moved_by(x, loops) -> bool:
    """Whether one of ``loops`` moves value ``x``: its iteration number, an
    ``lt.dim`` of its dim under it, or a value computed from them (or
    anything else computed inside it but a constant)."""
    if not loops:
        return False
    owner = x.owner
    if isinstance(owner, ir.Block):
        parent = owner.owner.operation if owner.owner is not None else None
        return parent is not None and any(parent == l or inside(parent, l) for l in loops)
    op = owner.operation
    if op.name == "arith.constant":
        return False
    if op.name == "lt.dim":
        d = ir.StringAttr(op.attributes["dim"]).value
        return any(lt.loop_dim(l) == d and inside(op, l) for l in loops)
    if not is_pure_index_op(op):
        return any(inside(op, l) for l in loops)
    return any(_moved_by(o, loops) for o in op.operands)


def _key(x):
    """A value from outside the chain, as what computes it: equal keys,
    equal values wherever the chains run (``lt.dim`` D under the same loops
    over D)."""
    owner = x.owner
    if isinstance(owner, ir.Block):
        return ("arg", x)
    op = owner.operation
    if op.name == "lt.dim":
        d = ir.StringAttr(op.attributes["dim"]).value
        return ("dim", d, tuple(l for l in lt.enclosing_loops(op) if lt.loop_dim(l) == d))
    if op.name == "arith.constant":
        return ("const", str(op.attributes["value"]))
    if is_pure_index_op(op):
        return (op.name, tuple(_key(o) for o in op.operands))
    return ("value", x)


HOST_OPS = ("lt.alloc", "func.return")  # what stays on the host between launches


def launch_groups(f) -> list[list]:
    """The top-level ops of ``f`` each launch runs, in program order: a
    mapped loop alone (a kernel), or a run of other statements (a launch of
    one thread).  Constants, index arithmetic, ``lt.alloc`` and the return
    stay on the host."""
    groups, group = [], []
    for op in lt.body_ops(f.regions[0].blocks[0]):
        if op.name in HOST_OPS or is_pure_index_op(op):
            continue
        if lt.is_loop(op) and mapping(op):
            if group:
                groups.append(group)
                group = []
            groups.append([op])
        else:
            group.append(op)
    if group:
        groups.append(group)
    return groups
