"""``lt-unroll{loop=L factor=F}``: unroll a loop by F (F=0: completely).

Sets ``lt.unroll = F`` on L; ``lower-lt-to-scf`` then emits F copies of the
body per iteration of the generated loop (the iterations F does not divide
run after it, one copy each), or, fully unrolled, one copy per iteration
with constant iteration numbers.  Unrolling never changes the result: the
iterations run in the same order.

On a vectorized loop (``lt.vectorize = W``) the unit is one vector of W
iterations: F copies of the vector body per generated iteration, and full
unrolling emits one vector body per W iterations (6 vectors for 96
iterations of width 16).

Refuses: no loop L; F < 0; F = 1 (one copy an iteration: nothing
unrolled); F greater than L's iterations (vectors, when
vectorized); F=0 on a loop of more than 64 iterations (vectors) (the code
would explode).
"""

from ..dialect import lt
from ..mlir import ir
from .common import find_loop, loop_label, refuse
from .registry import Option, register

NAME = "lt-unroll"
FULL_UNROLL_LIMIT = 64


@register(NAME, Option("loop", int, help="loop to unroll (L-number)"), Option("factor", int, 0, "copies per iteration; 0 unrolls completely"))
def unroll(module_op, loop: int, factor: int = 0) -> None:
    """Unroll a loop by `factor` (0: completely)."""
    target = find_loop(module_op, loop, NAME)
    size = lt.loop_size(target)
    width = lt.annotations(target).get("vectorize") or 1
    units = size // width if width > 1 else size
    what = f"{units} vectors of {width}" if width > 1 else f"{size} iterations"
    if factor < 0:
        raise refuse(NAME, f"factor must not be negative, got {factor}", target)
    if factor == 1:
        raise refuse(NAME, f"factor 1 unrolls nothing (0 unrolls L{loop} {loop_label(target)} completely, 2 or more partly)", target)
    if factor > units:
        raise refuse(NAME, f"factor {factor} exceeds the {what} of L{loop} {loop_label(target)}", target)
    if factor == 0 and units > FULL_UNROLL_LIMIT:
        raise refuse(NAME, f"L{loop} {loop_label(target)} has {what}; full unrolling stops at {FULL_UNROLL_LIMIT}", target)
    target.attributes["lt.unroll"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), factor)
