"""``lt-merge{loop=L}``: fuse a loop into the loop before it (loop_tool's merge).

With a preceding sibling P over the same dim with the same size, tail and
inner extent, L's body moves to the end of P's body and L disappears:
``for m {A}; for m {B}`` becomes ``for m {A; B}``.  Without such a sibling,
L merges into its parent P when P iterates the same dim, holds nothing but L
(and index computations), and L has no tail: ``for m in 4 : for m' in 8``
becomes ``for m in 32`` (a parent tail is kept: ``4 r 3`` over ``8`` gives
``35``).

``rename=true`` (what the kernel frontend's fusion asks): without such a
sibling or parent, L merges into the nearest loop P before it in its block
that has L's size, tail and inner extent and takes it (a nearer one that
refuses -- the zeros of the sum L accumulates -- is then among the
statements between); where P iterates another dim, L's
nest takes P's dim (``for k { for i { g[i] += X[k, i] * r[k] } }`` after ``for i
{...}`` becomes ``for i { for k { g[k] += X[i, k] * r[i] } }``: the two
names swap where L's nest uses P's dim too), and the statements between P
and L, which must share no written buffer with P (an init nest, an
``lt.alloc``), move above P.  The logistic-regression step's ``X @ w`` and
``X.T @ (p - y)`` then read X once: each row's dot product, then the same
row's update of the gradient.

Refuses when: there is neither such a sibling nor such a parent; the two
loops carry different annotations; a buffer written by either is accessed by
both at elements other iterations also access (fusing would reorder those
accesses; a CSR row's positions, an ``scf.for`` from ``indptr[i]`` to
``indptr[i + 1]`` with ``indptr`` marked ``lt.monotone``, are row i's own:
``analysis/dependence.py``); the merged-away levels' block arguments are used; with
``rename``, a statement in between shares a written buffer with P, or a loop
around L iterates either dim (nothing changes then).
"""

from __future__ import annotations

from ..analysis.dependence import accesses, defined_inside, is_pure_index_op, reads_dim, reorder_conflicts
from ..dialect import lt
from ..errors import PassError
from ..mlir import ir
from .common import find_loop, loop_label, refuse, set_extent
from .registry import Option, register

NAME = "lt-merge"


@register(
    NAME,
    Option("loop", int, help="loop to merge into the one before it (L-number)"),
    Option("rename", bool, False, help="merge into an earlier sibling over another dim of the same extent, renaming the loop's dims"),
)
def merge(module_op, loop: int, rename: bool = False) -> None:
    """Fuse a loop with the preceding sibling (same dim and sizes) or its parent level."""
    target = find_loop(module_op, loop, NAME)
    sibling = _preceding_sibling(target)
    if sibling is not None:
        try:
            fuse_siblings(sibling, target)
            return
        except PassError:
            if not rename:
                raise
    if rename:
        first_refusal = None
        for found in _renamable_siblings(target):  # the nearest first; a refused one joins what lies between
            try:
                _merge_renamed(*found, target)
                return
            except PassError as e:
                first_refusal = first_refusal or e
        if first_refusal is not None:
            raise first_refusal
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


def _renamable_siblings(loop) -> list:
    """The candidates (P, the statements between P and ``loop``) for
    ``rename``, nearest first: each loop before ``loop`` in its block with
    its size, tail and inner extent (a nearer one that refuses -- an
    initialisation of the sum ``loop`` accumulates -- is then one of the
    statements between, which move above P); none if a loop around ``loop``
    iterates either dim."""
    before = []
    for op in lt.body_ops(loop.block):
        if op == loop:
            break
        before.append(op)
    around = {lt.loop_dim(o) for o in lt.enclosing_loops(loop)}
    out = []
    for k in range(len(before) - 1, -1, -1):
        op = before[k]
        if lt.is_loop(op) and _same_shape(op, loop) and not (around & {lt.loop_dim(op), lt.loop_dim(loop)}):
            out.append((op, before[k + 1:]))
    return out


def _merge_renamed(first, between: list, second) -> None:
    """Move ``between`` above ``first``, rename ``second``'s nest to
    ``first``'s dim, fuse; undone if the fusion refuses."""
    theirs = accesses(first)
    touched = {a.buffer for a in theirs}
    written = {a.buffer for a in theirs if a.kind != "read"}
    for op in between:
        if is_pure_index_op(op):
            continue
        if any(a.buffer in written or (a.kind != "read" and a.buffer in touched) for a in accesses(op)):
            raise refuse(NAME, f"{loop_label(second)} cannot move next to {loop_label(first)}: a statement between them "
                         "shares a buffer it writes with the earlier loop", op)
        if any(defined_inside(v, first) for v in op.operands):
            raise refuse(NAME, "a statement between the two loops uses a value of the earlier loop", op)
    if lt.annotations(first) != lt.annotations(second):
        raise refuse(NAME, "the two loops carry different annotations", second)
    a, b = lt.loop_dim(first), lt.loop_dim(second)
    swap = {b: a, a: b}
    _rename_dims(second, swap)
    for op in between:
        op.move_before(first)
    try:
        fuse_siblings(first, second)
    except PassError:
        for op in between:
            op.move_before(second)
        _rename_dims(second, swap)
        raise


def _rename_dims(root, mapping: dict) -> None:
    """Rename the dims of every loop, ``lt.dim`` and ``lt.alloc`` in
    ``root`` (itself included) by ``mapping``."""
    def rename(name):
        return ir.StringAttr.get(mapping.get(name, name))

    def visit(op):
        if op.name in ("lt.loop", "lt.dim"):
            op.attributes["dim"] = rename(ir.StringAttr(op.attributes["dim"]).value)
        elif op.name == "lt.alloc":
            op.attributes["dims"] = ir.ArrayAttr.get([rename(ir.StringAttr(d).value) for d in ir.ArrayAttr(op.attributes["dims"])])
        return ir.WalkResult.ADVANCE

    root.walk(visit)
