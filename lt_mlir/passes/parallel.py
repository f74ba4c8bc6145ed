"""``lt-parallel{loop=L}``: run a loop's iterations on all CPU cores.

Sets ``lt.parallel``; ``lower-lt-to-scf`` emits ``scf.parallel`` for its full
iterations (the tail iteration runs after it), which the CPU pipeline turns
into OpenMP (``libiomp5`` from the intel-openmp wheel; OMP_NUM_THREADS is
honoured).  Reductions into locations that several iterations share are
combined with atomic read-modify-writes (``memref.atomic_rmw``), so a
parallel reduction stays correct.

Refuses: no loop L; L is nested in a parallel loop or holds one; a buffer
written in L by anything but reductions of one kind is accessed at elements
other iterations also access (a race).
"""

from ..analysis.dependence import reorder_conflicts
from ..dialect import lt
from ..mlir import ir
from .common import find_loop, loop_label, refuse
from .registry import Option, register

NAME = "lt-parallel"


@register(NAME, Option("loop", int, help="loop to run in parallel (L-number)"))
def parallel(module_op, loop: int) -> None:
    """Run a loop's iterations in parallel on all cores (atomic combine for shared reductions)."""
    target = find_loop(module_op, loop, NAME)
    if any("parallel" in lt.annotations(l) for l in lt.enclosing_loops(target)):
        raise refuse(NAME, f"L{loop} is already inside a parallel loop", target)
    inner = []
    target.walk(lambda o: (inner.append(o) if o != target and o.name == "lt.loop" and "lt.parallel" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    if inner:
        raise refuse(NAME, f"L{loop} holds a parallel loop", target)
    why = reorder_conflicts(target)
    if why:
        raise refuse(NAME, f"cannot run L{loop} {loop_label(target)} in parallel: {why}", target)
    target.attributes["lt.parallel"] = ir.UnitAttr.get()
