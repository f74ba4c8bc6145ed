"""``lt-canonicalize``: the simplest equivalent loop tree.

* A level of one iteration and no tail disappears (its body is inlined, its
  iteration number is 0; an ``lt.dim`` left with no level of its dim around
  it is 0).
* A level whose body is exactly one tail-less level of the same dim (and
  index computations) merges with it: ``for m in 4 : for m' in 8`` becomes
  ``for m in 32`` (as ``lt-merge`` into the parent).
* Then upstream ``canonicalize`` and ``cse`` fold the index arithmetic, and
  duplicate ``lt.dim`` ops of one block become one.

Never refuses: what cannot be simplified stays as it is.
"""

from __future__ import annotations

from ..analysis.dependence import is_pure_index_op
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import PassError
from ..mlir import ir, passmanager
from .common import index_constant
from .merge import merge_into_parent
from .registry import register

NAME = "lt-canonicalize"


@register(NAME)
def canonicalize(module_op) -> None:
    """Remove size-1 levels, merge nested levels of one dim, fold index arithmetic."""
    changed = True
    while changed:
        changed = False
        for loop in preorder_loops(module_op):
            if _remove_unit_level(loop) or _merge_with_only_child(loop):
                changed = True
                break
    pm = passmanager.PassManager.parse("builtin.module(func.func(canonicalize, cse))")
    pm.run(module_op)
    _fold_duplicate_dims(module_op)


def _fold_duplicate_dims(module_op) -> None:
    """Within one block every ``lt.dim d`` has the same value (the same loops
    enclose it); keep the first.  (CSE may not do this: across blocks the
    value differs, so lt.dim is not marked pure.)"""
    blocks = []
    module_op.walk(lambda o: (blocks.extend(b for r in o.regions for b in r.blocks), ir.WalkResult.ADVANCE)[1])
    for block in blocks:
        first: dict = {}
        for op in lt.body_ops(block):
            if op.name != "lt.dim":
                continue
            dim = ir.StringAttr(op.attributes["dim"]).value
            if dim in first:
                op.results[0].replace_all_uses_with(first[dim])
                op.erase()
            else:
                first[dim] = op.results[0]


def _remove_unit_level(loop) -> bool:
    if lt.loop_size(loop) != 1 or lt.loop_tail(loop) != 0:
        return False
    if lt.annotations(loop):
        return False  # an annotated level says something; keep it
    dim = lt.loop_dim(loop)
    body = lt.loop_body(loop)
    with ir.InsertionPoint(loop), loop.location:
        zero = index_constant(0)
    body.arguments[0].replace_all_uses_with(zero)
    outer_levels = any(lt.loop_dim(l) == dim for l in lt.enclosing_loops(loop))
    for op in lt.body_ops(body):
        op.move_before(loop)
        if not outer_levels:
            _zero_orphan_dims(op, dim, zero)
    loop.erase()
    return True


def _zero_orphan_dims(op, dim: str, zero) -> None:
    """``lt.dim dim`` ops under ``op`` with no level of ``dim`` around them read 0."""
    found = []

    def visit(o):
        if o.name == "lt.dim" and ir.StringAttr(o.attributes["dim"]).value == dim:
            if not any(lt.loop_dim(l) == dim for l in lt.enclosing_loops(o)):
                found.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    for o in found:
        o.results[0].replace_all_uses_with(zero)
        o.erase()


def _merge_with_only_child(loop) -> bool:
    body = lt.loop_body(loop)
    stmts = [op for op in lt.body_ops(body) if not is_pure_index_op(op)]
    if len(stmts) != 1 or not lt.is_loop(stmts[0]):
        return False
    child = stmts[0]
    if lt.loop_dim(child) != lt.loop_dim(loop) or lt.loop_tail(child):
        return False
    if lt.annotations(child) or lt.annotations(loop):
        return False
    if list(body.arguments[0].uses) or list(lt.loop_body(child).arguments[0].uses):
        return False
    try:
        merge_into_parent(loop, child)
    except PassError:
        return False  # not mergeable (e.g. an index reads the parent's chunk start)
    return True
