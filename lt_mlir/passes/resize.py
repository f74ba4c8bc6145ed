"""``lt-resize{loop=L delta=D}``: grow or shrink a level by D iterations
(CompilerGym's "size mode"), the extent of its dim staying exact.

Levels over one dim compose: ``[(a, b), (x, y), (z, 0)]`` (size, tail, outer
to inner) cover ``a*(x*z + y) + b`` elements.  Level L (size x, tail y,
inner extent E = ``lt.inner_extent(L)``) gets x + D iterations and keeps its
tail, so it now covers ``e' = (x + D)*E + y``.  Its *parent level* P, the
nearest enclosing level over the same dim, covers P's whole extent X
(``lt.inner_loop_extent(P)``) as before, in chunks of e': it becomes
``X // e' r X % e'``.  So L takes its new iterations from P (D > 0) or gives
them to it (D < 0), and any remainder becomes P's tail: the tail always sits
on the outer level.  1024 as ``1024`` over ``1`` over ``1``, L1 grown by 1
twice, is ``512`` over ``2`` over ``1``, then ``341 r 1`` over ``3`` over
``1``.  Levels above P keep their sizes (P's extent does not change), levels
inside L too; annotations stay where they are.

The elements of the dim are visited in the same order when P's body is L
alone: only their grouping into P's iterations changes.  Loops over other
dims between P and L (``for m: for k: for m'``) see the dim's iterations in
other groups, so then every buffer written under P must be private to the
dim (``dependence.reorder_conflicts``), as for an interchange.

Refuses: no loop L; D = 0; x + D < 1; L has no enclosing level over its dim
(the outermost level has no iterations to take from); P holds several levels
of the dim (after ``lt-distribute``: they must keep one extent); e' > X (P
would have no iteration); a statement sits between P and L (it would run a
different number of times) or an index computed there reads the dim (the
start of P's chunk, which moves), which also keeps tiles of ``lt-cache`` and
``lt-shrink-buffers`` sized to one iteration of P intact; the iteration
number of P or L is used (it counts other chunks); with loops between P and
L, a buffer written under P is not private to the dim; L or P is fully
unrolled (``lt.unroll = 0``) and would have more than 64 iterations.  The
registry then refuses any vectorize or GPU annotation the new sizes make
invalid (e.g. more than 1024 threads).
"""

from __future__ import annotations

from ..analysis.dependence import is_pure_index_op, reads_dim, reorder_conflicts
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from .common import find_loop, loop_label, refuse, set_extent
from .registry import Option, register
from .unroll import FULL_UNROLL_LIMIT

NAME = "lt-resize"


@register(
    NAME,
    Option("loop", int, help="level to resize (L-number)"),
    Option("delta", int, help="iterations to add (negative: to remove), taken from or given to the parent level"),
)
def resize(module_op, loop: int, delta: int) -> None:
    """Grow or shrink a level by `delta` iterations, taken from or given to its parent level (the rest becomes the parent's tail)."""
    target = find_loop(module_op, loop, NAME)
    name = f"L{loop} {loop_label(target)}"
    dim = lt.loop_dim(target)
    size, tail = lt.loop_size(target), lt.loop_tail(target)
    if delta == 0:
        raise refuse(NAME, "delta must not be 0", target)
    new_size = size + delta
    if new_size < 1:
        raise refuse(NAME, f"delta {delta} would leave {name} with {new_size} iterations (at least 1)", target)
    parent = next((l for l in lt.enclosing_loops(target) if lt.loop_dim(l) == dim), None)
    if parent is None:
        why = "no iterations to take from" if delta > 0 else "no level to give iterations to"
        raise refuse(NAME, f"{name} is the outermost level of dim '{dim}': {why}", target)
    loops = preorder_loops(module_op)
    parent_name = f"L{_number(loops, parent)} {loop_label(parent)}"
    levels = lt.inner_levels(parent)
    if len(levels) > 1:
        raise refuse(
            NAME,
            f"the parent level {parent_name} of {name} holds {len(levels)} levels of dim '{dim}' side by side "
            "(they must keep one extent; merge them first)",
            target,
        )
    chunk = new_size * lt.inner_extent(target) + tail
    extent = lt.inner_loop_extent(parent)
    if chunk > extent:
        raise refuse(
            NAME,
            f"{name} would cover {chunk} elements of dim '{dim}' with {new_size} iterations, more than the "
            f"{extent} of its parent level {parent_name}",
            target,
        )
    middle = _check_between(parent, target, parent_name, name, dim)
    for level, level_name in ((parent, parent_name), (target, name)):
        if list(lt.loop_body(level).arguments[0].uses):
            raise refuse(NAME, f"the iteration number of {level_name} is used (it would count other chunks)", level)
    if middle:
        why = reorder_conflicts(parent)
        if why:
            around = ", ".join(f"L{_number(loops, m)} {loop_label(m)}" for m in middle)
            raise refuse(NAME, f"cannot regroup dim '{dim}' around {around}: {why}", target)
    new_parent = (extent // chunk, extent % chunk)
    for level, level_name, count in ((parent, parent_name, new_parent[0]), (target, name, new_size)):
        if lt.annotations(level).get("unroll") == 0 and count > FULL_UNROLL_LIMIT:
            raise refuse(
                NAME,
                f"{level_name} is unrolled completely and would have {count} iterations "
                f"(full unrolling stops at {FULL_UNROLL_LIMIT})",
                level,
            )
    set_extent(target, new_size, tail)
    set_extent(parent, *new_parent)


def _number(loops: list, loop) -> int:
    return next(i for i, l in enumerate(loops) if l == loop)


def _check_between(parent, target, parent_name: str, name: str, dim: str) -> list:
    """Refuse statements and dim-reading indices between P and L; returns
    the loops between them (over other dims), outer first."""
    middle = []
    op = target
    while True:
        holder = op.parent
        for other in lt.body_ops(op.block):
            if other == op:
                continue
            if not is_pure_index_op(other):
                raise refuse(
                    NAME,
                    f"a statement between {parent_name} and {name} would run a different number of times",
                    other,
                )
            if reads_dim(other, dim) and any(list(r.uses) for r in other.results):
                raise refuse(
                    NAME,
                    f"an index computed between {parent_name} and {name} reads dim '{dim}' (its value would change)",
                    other,
                )
        if holder == parent:
            return middle[::-1]
        if holder is None or not lt.is_loop(holder):
            raise refuse(NAME, f"{name} is nested in a '{holder.name if holder else '?'}' inside its parent level", target)
        middle.append(holder)
        op = holder
