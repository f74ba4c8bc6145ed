"""How much work a loop does, counted on the loop tree: what decides whether
running a loop on CPU threads can pay (``lt-parallel``'s remark and the CPU
lowering's choice, one copy).

``work(loop)`` counts the operations one run of the loop executes (every op
of its body that is not index arithmetic, times the iterations of the loops
around it inside ``loop``, tails exact); ``starts(loop)`` counts how often
one call of the function runs the loop (the iterations of the loops around
it).  A parallel region costs a fork and a join of the thread team, a few
microseconds: below ``MIN_PARALLEL_WORK`` operations a run, the threads
cannot win that back.  The environment variable ``LT_PARALLEL_MIN_WORK``
sets another threshold (0: every parallel loop runs on threads; the lit
tests of the parallel lowering use it on their small programs).
"""

from __future__ import annotations

import os

from ..dialect import lt
from ..mlir import ir
from .dependence import defined_inside, is_dim_of, is_pure_index_op, shared_reductions

MIN_PARALLEL_WORK = 20000  # operations a parallel region must do to pay for its fork and join


def _iterations(loop) -> int:
    return lt.loop_size(loop) + (1 if lt.loop_tail(loop) else 0)


def _block_work(block) -> int:
    total = 0
    for op in lt.body_ops(block):
        if lt.is_loop(op):
            total += _iterations(op) * _block_work(lt.loop_body(op))
        elif op.name == "lt.alloc" or is_pure_index_op(op):
            continue
        else:
            total += 1
            for region in op.regions:
                for b in region.blocks:
                    total += _block_work(b)
    return total


def work(loop) -> int:
    """Operations one run of ``loop`` executes (an upper bound: tail
    iterations count as full ones)."""
    return _iterations(loop) * _block_work(lt.loop_body(loop))


def starts(loop) -> int:
    """How often one call of the function runs ``loop``."""
    n = 1
    for outer in lt.enclosing_loops(loop):
        n *= _iterations(outer)
    return n


def min_parallel_work() -> int:
    """``MIN_PARALLEL_WORK``, or ``LT_PARALLEL_MIN_WORK`` when set to an integer."""
    value = os.environ.get("LT_PARALLEL_MIN_WORK", "")
    return int(value) if value.strip().isdigit() else MIN_PARALLEL_WORK


def too_small_to_share(loop) -> bool:
    """Whether a parallel ``loop`` does too little work a run to pay for a
    parallel region (the lowering runs it on one thread)."""
    return work(loop) < min_parallel_work()


def reduction_groups(loop) -> dict:
    """Accumulator buffer -> the ``lt.reduce`` ops in ``loop`` into elements
    several of its iterations update (``dependence.shared_reductions``)."""
    groups: dict = {}
    for op in shared_reductions(loop):
        groups.setdefault(op.operands[1], []).append(op)
    return groups


def partial_tiles(loop, groups: dict | None = None) -> dict | None:
    """Buffer -> ``tile_plan`` of each shared reduction of parallel
    ``loop`` (``lowering/partials.py``), or None when one cannot keep a
    per-thread tile (its updates stay atomic)."""
    groups = reduction_groups(loop) if groups is None else groups
    plans = {buf: tile_plan(loop, buf, ops) for buf, ops in groups.items()}
    return None if any(p is None for p in plans.values()) else plans


def tile_elements(plan: list) -> int:
    n = 1
    for p in plan:
        n *= 1 if p[0] == "fixed" else p[2]
    return n


def tile_plan(loop, buf, reduces) -> list | None:
    """Per axis of ``buf``: ``("fixed", value)`` (one element, the same
    value in every reduce, computed outside ``loop``) or ``("full", dim,
    extent)``; None when a reduce's index is neither."""
    rank = ir.MemRefType(buf.type).rank
    outside = {lt.loop_dim(l) for l in lt.enclosing_loops(loop)} | {lt.loop_dim(loop)}
    plan = []
    for axis in range(rank):
        values = [op.operands[2 + axis] for op in reduces]
        first = values[0]
        if all(v == first for v in values) and not defined_inside(first, loop):
            plan.append(("fixed", first))
            continue
        dims = {ir.StringAttr(v.owner.operation.attributes["dim"]).value for v in values if is_dim_of(v, _dim_name(v))}
        if len(dims) != 1 or not all(is_dim_of(v, next(iter(dims))) for v in values):
            return None
        dim = next(iter(dims))
        if dim in outside:
            return None
        extents = {lt.inner_loop_extent(l) for l in _outermost_loops_over(loop, dim)}
        if len(extents) != 1:
            return None
        plan.append(("full", dim, extents.pop()))
    return plan


def _dim_name(value) -> str:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "lt.dim":
        return ""
    return ir.StringAttr(owner.operation.attributes["dim"]).value


def _outermost_loops_over(loop, dim: str) -> list:
    found = []

    def visit(block):
        for op in lt.body_ops(block):
            if lt.is_loop(op):
                if lt.loop_dim(op) == dim:
                    found.append(op)
                else:
                    visit(lt.loop_body(op))

    visit(lt.loop_body(loop))
    return found
