"""``lt-merge{loop=L}``: fuse a loop into the loop before it (loop_tool's merge).

With a preceding sibling P over the same dim with the same size, tail and
inner extent, L's body moves to the end of P's body and L disappears:
``for m {A}; for m {B}`` becomes ``for m {A; B}``.  Without such a sibling,
L merges into its parent P when P iterates the same dim, holds nothing but L
(and index computations), and L has no tail: ``for m in 4 : for m' in 8``
becomes ``for m in 32`` (a parent tail is kept: ``4 r 3`` over ``8`` gives
``35``).

Refuses when: there is neither such a sibling nor such a parent; the two
loops carry different annotations; a buffer written by either is accessed by
both at elements other iterations also access (fusing would reorder those
accesses); the merged-away levels' block arguments are used.
"""

from __future__ import annotations

from ..analysis.dependence import is_pure_index_op, reads_dim, reorder_conflicts
from ..dialect import lt
from .common import find_loop, loop_label, refuse, set_extent
from .registry import Option, register

NAME = "lt-merge"


@register(NAME, Option("loop", int, help="loop to merge into the one before it (L-number)"))
def merge(module_op, loop: int) -> None:
    """Fuse a loop with the preceding sibling (same dim and sizes) or its parent level."""
    target = find_loop(module_op, loop, NAME)
    sibling = _preceding_sibling(target)
    if sibling is not None:
        fuse_siblings(sibling, target)
        return
    parent = target.parent
    if parent is not None and parent.name == "lt.loop" and lt.loop_dim(parent) == lt.loop_dim(target):
        merge_into_parent(parent, target)
        return
    raise refuse(
        NAME,
        f"L{loop} {loop_label(target)} has no preceding sibling loop or parent level over "
        f"dim '{lt.loop_dim(target)}' to merge with",
        target,
    )


def _preceding_sibling(loop):
    block = loop.block
    before = None
    for op in lt.body_ops(block):
        if op == loop:
            break
        if lt.is_loop(op):
            before = op
        elif not is_pure_index_op(op):
            before = None  # a statement in between keeps them apart
    if before is None or lt.loop_dim(before) != lt.loop_dim(loop):
        return None
    return before


def _same_shape(a, b) -> bool:
    return (lt.loop_size(a), lt.loop_tail(a), lt.inner_extent(a)) == (
        lt.loop_size(b),
        lt.loop_tail(b),
        lt.inner_extent(b),
    )


def fuse_siblings(first, second) -> None:
    if not _same_shape(first, second):
        raise refuse(
            NAME,
            f"{loop_label(second)} and the loop before it, {loop_label(first)}, cover dim "
            f"'{lt.loop_dim(first)}' differently",
            second,
        )
    if lt.annotations(first) != lt.annotations(second):
        raise refuse(NAME, "the two loops carry different annotations", second)
    why = reorder_conflicts(first, [first, second])
    if why:
        raise refuse(NAME, f"cannot fuse: {why}", second)
    # Index computations between the loops move before the first (same
    # block, so same values) to dominate the second's body in its new place.
    between, seen = [], False
    for op in lt.body_ops(first.block):
        if op == second:
            break
        if seen:
            between.append(op)
        seen = seen or op == first
    for op in between:
        op.move_before(first)
    body = lt.loop_body(first)
    lt.loop_body(second).arguments[0].replace_all_uses_with(body.arguments[0])
    for op in lt.body_ops(lt.loop_body(second)):
        op.detach_from_parent()
        body.append(op)
    second.erase()


def merge_into_parent(parent, child) -> None:
    others = [op for op in lt.body_ops(lt.loop_body(parent)) if op != child and not is_pure_index_op(op)]
    if others:
        raise refuse(NAME, f"{loop_label(parent)} holds statements besides {loop_label(child)}", child)
    if lt.loop_tail(child):
        raise refuse(NAME, f"{loop_label(child)} has a tail; its parent's chunks would not be uniform", child)
    if lt.annotations(parent) != lt.annotations(child):
        raise refuse(NAME, "the two loops carry different annotations", child)
    dim = lt.loop_dim(parent)
    for op in lt.body_ops(lt.loop_body(parent)):
        if op != child and reads_dim(op, dim) and any(list(r.uses) for r in op.results):
            # At the parent's level lt.dim is the start of its chunk; inside
            # the merged level it would be the element itself.
            raise refuse(NAME, f"an index computed between the two levels reads dim '{dim}'", op)
    for loop in (parent, child):
        if list(lt.loop_body(loop).arguments[0].uses):
            raise refuse(NAME, f"the iteration number of {loop_label(loop)} is used", loop)
    step = lt.inner_extent(child)
    extent = lt.loop_size(parent) * lt.inner_extent(parent) + lt.loop_tail(parent)
    set_extent(parent, extent // step, extent % step)
    for op in lt.body_ops(lt.loop_body(child)):
        op.move_before(child)
    child.erase()
