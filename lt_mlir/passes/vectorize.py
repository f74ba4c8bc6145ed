"""``lt-vectorize{loop=L width=W}``: run W iterations of an innermost loop as one.

Sets ``lt.vectorize = W``; ``lower-lt-to-scf`` emits a loop over groups of W
iterations whose body uses ``vector`` ops (``vector.load``/``store`` along
the loop's dim, ``vector.gather`` for loads along another dim, arithmetic
on ``vector<W x T>``, ``vector.reduction`` for reductions into one
location; a body under an ``scf.if`` on the dim or on the data runs under
a mask), then the iterations W does not divide as scalar code.  See
``analysis/vector_plan.py`` for what is vectorizable.

Refuses: no loop L; W < 2; W greater than L's iterations (no vector would
run: all scalar remainder); L is not innermost; the body writes memory that
is not contiguous along L's dim, reads it through indices computed from
data, or uses its index as a value (other than in a comparison); an
if/else on the dim; a buffer written in L is accessed at elements other
iterations also access (running W of them at once would reorder those
accesses).
"""

from ..analysis.dependence import reorder_conflicts
from ..analysis.vector_plan import plan
from ..dialect import lt
from ..mlir import ir
from .common import find_loop, loop_label, refuse
from .registry import Option, register

NAME = "lt-vectorize"


@register(NAME, Option("loop", int, help="innermost loop to vectorize (L-number)"), Option("width", int, 8, "lanes per vector"))
def vectorize(module_op, loop: int, width: int = 8) -> None:
    """Vectorize an innermost loop with `width` lanes (scalar code for the rest)."""
    target = find_loop(module_op, loop, NAME)
    if width < 2:
        raise refuse(NAME, f"width must be at least 2, got {width}", target)
    iterations = lt.loop_size(target) + (1 if lt.loop_tail(target) else 0)
    if width > iterations:
        raise refuse(NAME, f"width {width} exceeds the {iterations} iterations of L{loop} {loop_label(target)}", target)
    why = reorder_conflicts(target)
    if why:
        raise refuse(NAME, f"cannot vectorize L{loop} {loop_label(target)}: {why}", target)
    problem = plan(target)
    if problem is not None:
        raise refuse(NAME, f"cannot vectorize L{loop} {loop_label(target)}: {problem}", problem.op or target)
    target.attributes["lt.vectorize"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), width)
