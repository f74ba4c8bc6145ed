"""``lt-swap{loop=L}``: interchange a loop with the loop inside it.

L's body must hold exactly one inner loop C (besides index computations).
Statements beside C are first distributed into loops of their own (as
``lt-distribute`` would: the reduction initialisation in ``for n { C[m,n] =
0; for k {...} }`` stays before the reduction as its own ``for n``), then L
and C trade places.  Sizes, tails and annotations travel with their loops;
tails stay exact because a level's clipping depends only on its own dim.

Refuses when: L has no inner loop or several; L and C iterate the same dim;
an index computed beside C reads C's dim (its value would change); a buffer
written in the nest is accessed at elements that other iterations of both L
and C also access (a dependence the interchange would reverse); or the
distribution it needs is refused.
"""

from __future__ import annotations

from ..analysis.dependence import accesses, reads_dim, same_shift
from ..dialect import lt
from ..mlir import arith, ir
from .common import find_loop, loop_label, refuse
from .distribute import body_parts, check_distributable, distribute
from .registry import Option, register

NAME = "lt-swap"


@register(NAME, Option("loop", int, help="outer loop of the pair (L-number)"))
def swap(module_op, loop: int) -> None:
    """Interchange a loop with its only inner loop (distributing statements beside it first)."""
    outer = find_loop(module_op, loop, NAME)
    parts = body_parts(outer)
    inner_loops = [p[0] for p in parts if len(p) == 1 and lt.is_loop(p[0])]
    if not inner_loops:
        raise refuse(NAME, f"L{loop} {loop_label(outer)} has no inner loop to swap with", outer)
    if len(inner_loops) > 1:
        raise refuse(
            NAME,
            f"L{loop} {loop_label(outer)} has {len(inner_loops)} inner loops; distribute it first (lt-distribute)",
            outer,
        )
    inner = inner_loops[0]
    if lt.loop_dim(inner) == lt.loop_dim(outer):
        raise refuse(NAME, f"L{loop} and its inner loop both iterate dim '{lt.loop_dim(outer)}'", outer)
    _check_interchange(outer, inner)
    _check_index_computations(outer, inner)
    if len(parts) > 1:
        check_distributable(outer, parts, NAME)  # refuse before changing anything
    if len(parts) > 1:
        # Give C its own copy of L; the other statements keep theirs.
        new_loops = distribute(outer, parts, NAME)
        outer = new_loops[[i for i, p in enumerate(parts) if p[0] == inner][0]]
    interchange(outer, inner)


def _check_interchange(outer, inner) -> None:
    dims = (lt.loop_dim(outer), lt.loop_dim(inner))
    groups: dict = {}
    for a in accesses(inner):
        groups.setdefault(a.buffer, []).append(a)
    for buffer, group in groups.items():
        kinds = {a.kind for a in group}
        if kinds == {"read"} or (len(kinds) == 1 and next(iter(kinds)).startswith("reduce:")):
            continue
        rank = len(group[0].indices)
        private = any(
            same_shift([a.indices[axis] for a in group], d, outer) for d in dims for axis in range(rank)
        )
        if not private:
            raise refuse(
                NAME,
                f"interchanging {loop_label(outer)} and {loop_label(inner)} would reorder dependent "
                "accesses to a buffer written in the nest",
                group[0].op,
            )


def _check_index_computations(outer, inner) -> None:
    """An index computed beside the inner loop from its dim and used inside
    it would read a different value once it moves inside."""
    inside = set()
    inner.walk(lambda o: (inside.add(o), ir.WalkResult.ADVANCE)[1])
    dim = lt.loop_dim(inner)
    for op in lt.body_ops(lt.loop_body(outer)):
        if op == inner or not reads_dim(op, dim):
            continue
        for r in op.results:
            if any(use.owner.operation in inside for use in r.uses):
                raise refuse(NAME, f"an index computed outside {loop_label(inner)} reads its dim '{dim}'", op)


def interchange(outer, inner) -> None:
    """Swap a perfectly nested pair (outer's body: index computations + inner)."""
    outer_body, inner_body = lt.loop_body(outer), lt.loop_body(inner)
    inner_dim = lt.loop_dim(inner)
    # Index computations beside the inner loop move into it.
    first = inner_body.operations[0] if len(inner_body.operations) else None
    for op in lt.body_ops(outer_body):
        if op == inner:
            continue
        if reads_dim(op, inner_dim):
            raise refuse(NAME, f"an index computed outside {loop_label(inner)} reads its dim '{inner_dim}'", op)
        if first is not None:
            op.move_before(first)
        else:
            op.detach_from_parent()
            inner_body.append(op)
    # The outer block argument now counts the inner dim, and vice versa.
    outer_arg, inner_arg = outer_body.arguments[0], inner_body.arguments[0]
    with ir.InsertionPoint.at_block_begin(inner_body), inner.location:
        placeholder = arith.ConstantOp(ir.IndexType.get(), 0)
    outer_arg.replace_all_uses_with(placeholder.result)
    inner_arg.replace_all_uses_with(outer_arg)
    placeholder.result.replace_all_uses_with(inner_arg)
    placeholder.operation.erase()
    # Trade attributes (dim, size, tail, annotations).
    a = {n: outer.attributes[n] for n in _loop_attr_names(outer)}
    b = {n: inner.attributes[n] for n in _loop_attr_names(inner)}
    for op, old, new in ((outer, a, b), (inner, b, a)):
        for n in old:
            del op.attributes[n]
        for n, v in new.items():
            op.attributes[n] = v


def _loop_attr_names(loop) -> list[str]:
    return ["dim", "size", "tail"] + [f"lt.{k}" for k in lt.annotations(loop)]
