"""``lt-split{loop=L factor=F}``: split a level into an outer and an inner level.

The inner level runs F iterations of L's body; the outer level covers L's
extent in chunks of F such iterations, with the uneven rest kept exact as a
tail.  A level of ``size`` S, ``tail`` T and inner extent E (extent
X = S*E + T) becomes ``X // (F*E) r X % (F*E)`` over ``F`` (tail 0): 33 by 8
gives ``4 r 1`` over ``8``; splitting a level that already has a tail keeps
its total, because X % (F*E) = (S % F)*E + T.  Annotations stay on the inner
level.  Uses of L's block argument become ``outer * F + inner``.

Refuses: no loop L; F < 1; F > S (the outer level would be empty).
"""

from ..dialect import lt
from ..mlir import arith, ir
from .common import find_loop, index_constant, loop_label, new_loop, refuse, set_extent
from .registry import Option, register

NAME = "lt-split"


@register(NAME, Option("loop", int, help="loop to split (L-number)"), Option("factor", int, help="iterations in the inner level"))
def split(module_op, loop: int, factor: int) -> None:
    """Split a loop into an outer loop and an inner loop of `factor` iterations (uneven sizes keep a tail)."""
    target = find_loop(module_op, loop, NAME)
    size = lt.loop_size(target)
    if factor < 1:
        raise refuse(NAME, f"factor must be at least 1, got {factor}", target)
    if factor > size:
        raise refuse(NAME, f"factor {factor} exceeds the {size} iterations of L{loop} {loop_label(target)}", target)
    split_loop(target, factor)


def split_loop(target, factor: int):
    """Split loop op ``target`` (1 <= factor <= its size) as the pass does;
    returns the new outer loop."""
    size, tail = lt.loop_size(target), lt.loop_tail(target)
    step = lt.inner_extent(target)
    extent = size * step + tail
    chunk = factor * step
    with ir.InsertionPoint(target), target.location:
        outer, outer_block = new_loop(lt.loop_dim(target), extent // chunk, extent % chunk)
    _move_into(target, outer_block)
    set_extent(target, factor, 0)
    inner_block = lt.loop_body(target)
    iteration = inner_block.arguments[0]
    if list(iteration.uses):
        # The old iteration number is outer * factor + inner.  It never
        # exceeds the old last iteration (the inner level is clipped in the
        # outer tail), but interval arithmetic cannot see that; the min says
        # it, and costs nothing where the number is unused.
        last = size if tail else size - 1
        first = inner_block.operations[0] if len(inner_block.operations) else None
        with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(inner_block), target.location:
            scaled = arith.MulIOp(outer_block.arguments[0], index_constant(factor)).result
            combined = arith.AddIOp(scaled, iteration)
            clamped = arith.MinSIOp(combined.result, index_constant(last))
        iteration.replace_all_uses_with(clamped.result)
        combined.operation.operands[1] = iteration  # replace_all_uses_with rewrote our own use too
    return outer


def _move_into(op, block: ir.Block) -> None:
    """Detach ``op`` and append it to ``block``."""
    op.detach_from_parent()
    block.append(op)
