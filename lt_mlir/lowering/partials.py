"""Parallel loops on the CPU: per-thread partial results, and the loops too
small to share.

Before ``lower-lt-to-scf`` lowers a function, each ``lt.parallel`` loop P:

* that does too little work a run to pay for a parallel region
  (``analysis/work.py``: a fork and a join each time P starts) runs on one
  thread: its annotation is dropped (``lt-parallel`` says so in its remark);
* whose *shared reductions* (``lt.reduce`` into elements several of P's
  iterations update: P runs over a reduced dim) can each keep a private
  tile, is cut into one chunk of iterations a thread, and each chunk
  accumulates into its own tile and combines it into the real accumulator
  once, at its end (OpenMP's ``reduction`` clause, for tiles)::

      for k in K [parallel]           for k in T [parallel]     (T chunks)
        for n in N                      %p <- alloc [n]          (each chunk's own)
          C[m, n] += f(k, n)    =>      for n in N: %p[n] <- 0
                                        for k' in K/T
                                          for n in N: %p[n] += f(k, n)
                                        for n in N: C[m, n] += %p[n]   (atomic, once a chunk)

  A tile axis indexed by a value computed outside P (``m`` above) has one
  element; an axis indexed by ``lt.dim n`` of a dim that loops inside P
  iterate, and no loop around P, spans what those loops cover.  The chunks
  are P's iterations divided by T, the number of CPU cores of the machine
  that compiles (T of them, or a few more when T does not divide the
  iterations: the rest runs after them; any number of threads computes the
  same result);
* otherwise keeps one atomic update per reduction (``mark_atomic_reduces``).

Exact up to the order in which the partial results combine, like every
reordering of a reduction.
"""

from __future__ import annotations

import os

from ..analysis.work import partial_tiles, reduction_groups, too_small_to_share
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..mlir import arith, ir, memref
from ..passes.common import index_constant, new_dim, new_loop
from ..passes.split import split_loop


def chunk_count() -> int:
    """Chunks a privatised parallel loop is cut into: the cores here."""
    return max(2, os.cpu_count() or 2)


def prepare_parallel_loops(f) -> None:
    """Apply the rules of the module docs to every parallel loop of ``f``."""
    for loop in [l for l in preorder_loops(f) if "parallel" in lt.annotations(l)]:
        if too_small_to_share(loop):
            del loop.attributes["lt.parallel"]
            if "lt.schedule" in loop.attributes:
                del loop.attributes["lt.schedule"]
            continue
        groups = reduction_groups(loop)
        if not groups:
            continue
        plans = partial_tiles(loop, groups)
        if plans is None:
            continue  # atomics (lower_loop marks them)
        iterations = lt.loop_size(loop)
        # T full chunks run in parallel; what T does not divide is the outer
        # level's tail, which runs after them
        factor = iterations // chunk_count()
        if factor < 1:
            continue
        with loop.location:
            outer = split_loop(loop, factor)
            del loop.attributes["lt.parallel"]
            if "lt.schedule" in loop.attributes:  # one chunk a thread: equal runs
                del loop.attributes["lt.schedule"]
            outer.attributes["lt.parallel"] = ir.UnitAttr.get()
            for buf, plan in plans.items():
                _privatise(outer, loop, buf, groups[buf], plan)


def _privatise(outer, inner, buf, reduces, plan: list) -> None:
    kind = ir.StringAttr(reduces[0].attributes["kind"]).value
    element = ir.MemRefType(buf.type).element_type
    shape = [1 if p[0] == "fixed" else p[2] for p in plan]
    names = [p[1] if p[0] == "full" else f"partial{axis}" for axis, p in enumerate(plan)]
    identity = lt.reduce_identity(kind, element)
    with ir.InsertionPoint(inner):
        tile = ir.Operation.create(
            "lt.alloc",
            results=[ir.MemRefType.get(shape, element)],
            attributes={"dims": ir.ArrayAttr.get([ir.StringAttr.get(n) for n in names])},
        ).results[0]
        init = arith.ConstantOp(element, int(identity) if isinstance(element, ir.IntegerType) else float(identity)).result
        _nest(plan, lambda idx: memref.StoreOp(init, tile, idx))
    for op in reduces:
        with ir.InsertionPoint(op), op.location:
            for axis, p in enumerate(plan):
                if p[0] == "fixed":
                    op.operands[2 + axis] = index_constant(0)
        op.operands[1] = tile
    with ir.InsertionPoint.after(inner):
        originals = [p[1] if p[0] == "fixed" else None for p in plan]

        def combine(idx):
            value = memref.LoadOp(tile, idx).result
            target = [o if o is not None else i for o, i in zip(originals, idx)]
            ir.Operation.create("lt.reduce", operands=[value, buf, *target], attributes={"kind": ir.StringAttr.get(kind)})

        _nest(plan, combine)


def _nest(plan: list, emit) -> None:
    """Loops over the full axes of ``plan`` (in order) at the insertion
    point, around ``emit(indices)`` (fixed axes: index 0)."""
    full = [(axis, p[1], p[2]) for axis, p in enumerate(plan) if p[0] == "full"]

    def level(i: int, dims: dict) -> None:
        if i == len(full):
            emit([dims[axis] if axis in dims else index_constant(0) for axis in range(len(plan))])
            return
        axis, dim, extent = full[i]
        loop, block = new_loop(dim, extent, 0)
        with ir.InsertionPoint(block):
            value = new_dim(dim)
            level(i + 1, {**dims, axis: value})

    level(0, {})
