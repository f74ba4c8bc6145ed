"""``lt-parallel{loop=L [schedule=static|dynamic|guided]}``: run a loop's
iterations on all CPU cores.

Sets ``lt.parallel``; ``lower-lt-to-scf`` emits ``scf.parallel`` for its full
iterations (the tail iteration runs after it), which the CPU pipeline turns
into OpenMP (``libiomp5`` from the intel-openmp wheel; OMP_NUM_THREADS is
honoured).  Reductions into locations that several iterations share are
combined with atomic read-modify-writes (``memref.atomic_rmw``), so a
parallel reduction stays correct.

``schedule`` is how the iterations are dealt to the threads (OpenMP's
schedule): ``static`` (the default) gives each thread one equal run of
them; ``dynamic`` hands them out one at a time as threads finish, and
``guided`` in runs that shrink as the loop nears its end -- for iterations
whose work differs (a triangle's rows, CSR rows), where equal runs leave
one thread with most of the work.  Sets ``lt.schedule`` (not for static).

Costs the lowering avoids, and the remark names (``lowering/partials.py``,
``analysis/work.py``): a loop that does too little work a run to pay for
starting the threads (a loop over a reduced dim nested in others: matmul's
``k``) runs on one thread; reductions into elements the iterations share
accumulate in a private tile a thread, combined once a chunk; those that
cannot stay atomic, one read-modify-write an update.

Refuses: no loop L; an unknown schedule; L is nested in a parallel loop or holds one; a buffer
written in L by anything but reductions of one kind is accessed at elements
other iterations also access (a race).
"""

from ..analysis.dependence import accesses, inside, reorder_conflicts
from ..analysis.work import partial_tiles, reduction_groups, starts, tile_elements, too_small_to_share, work
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..mlir import ir
from .common import find_loop, loop_label, refuse
from .registry import Option, register

NAME = "lt-parallel"


@register(
    NAME,
    Option("loop", int, help="loop to run in parallel (L-number)"),
    Option("schedule", str, "static", "how iterations are dealt to threads: static, dynamic or guided"),
)
def parallel(module_op, loop: int, schedule: str = "static") -> str | None:
    """Run a loop's iterations in parallel on all cores (per-thread partials or atomics for shared reductions)."""
    target = find_loop(module_op, loop, NAME)
    if schedule not in ("static", *lt.SCHEDULES):
        raise refuse(NAME, f"unknown schedule '{schedule}' (static, {', '.join(lt.SCHEDULES)})", target)
    if any("parallel" in lt.annotations(l) for l in lt.enclosing_loops(target)):
        raise refuse(NAME, f"L{loop} is already inside a parallel loop", target)
    inner = []
    target.walk(lambda o: (inner.append(o) if o != target and o.name == "lt.loop" and "lt.parallel" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    if inner:
        raise refuse(NAME, f"L{loop} holds a parallel loop", target)
    why = reorder_conflicts(target)
    if why:
        if _shared_scratch(target):  # lt-shrink-buffers run after this pass gives each thread its own tile
            why += " (run lt-shrink-buffers after lt-parallel, not before: it gives each thread its own tile)"
        raise refuse(NAME, f"cannot run L{loop} {loop_label(target)} in parallel: {why}", target)
    target.attributes["lt.parallel"] = ir.UnitAttr.get()
    if schedule != "static":
        target.attributes["lt.schedule"] = ir.StringAttr.get(schedule)
    return _costs(target, loop)


def _shared_scratch(loop) -> bool:
    """Whether ``loop`` accesses an ``lt.alloc`` made outside it (one buffer
    all its iterations would share)."""
    for a in accesses(loop):
        owner = a.buffer.owner
        if not isinstance(owner, ir.Block) and owner.operation.name == "lt.alloc" and not inside(owner.operation, loop):
            return True
    return False


def _costs(target, loop: int) -> str | None:
    """What the lowering will do about the cost of running ``target`` in
    parallel, when it is not simply that (the remark)."""
    label = f"L{loop} {loop_label(target)}"
    if too_small_to_share(target):
        return (
            f"{label} will run on one thread: a run does about {work(target)} operations, too few to pay for starting "
            f"the threads ({starts(target)} runs a call); run an outer loop in parallel"
        )
    groups = reduction_groups(target)
    if not groups:
        return None
    f = target
    while f.name != "func.func":
        f = f.parent
    names = value_names(f)
    plans = partial_tiles(target, groups)
    if plans is None:
        shared = ", ".join(names.get(buf, "a buffer") for buf in groups)
        return (
            f"{label} updates elements of {shared} that its iterations share: every update is an atomic "
            "read-modify-write (costly); reorder so the parallel loop writes its own elements"
        )
    tiles = ", ".join(f"{names.get(buf, 'a buffer')} ({tile_elements(plan)} elements)" for buf, plan in plans.items())
    return f"{label} reduces into elements its iterations share: each thread accumulates its chunk in a private tile of {tiles}, combined once"
