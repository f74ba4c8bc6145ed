"""Padded layouts (``lt-pad``): each ``lt.alloc`` marked ``lt.pad = [a, E,
P]`` becomes a flat buffer of its padded size, and each load and store of it
indexes that run with the padded offset

    sum_j i_j * S_j  +  P * (i_a / E)

(``S_j`` the padded strides: the axes before ``a`` skip the padding of a
whole slice of it; ``passes/pad.py`` documents the layout).

An index ``i_a = x - b`` whose ``b`` is a multiple of ``E`` (an ``lt.dim``
whose enclosing levels over its dim all cover multiples of E per iteration:
a tile's start, as ``lt-cache`` makes them; or a constant) pads with ``x /
E - b / E`` instead: equal, and then the neighbouring elements a thread
reads (``x`` and ``x + 1`` for an unrolled loop) share the padding term, so
LLVM still joins them into one 128-bit access.

Runs first in both lowerings (after the bounds check, which sees the
logical indices).  A buffer read or written inside a vectorized loop keeps
its plain layout (the CPU vectorizer wants affine indices; padding is for
GPU shared memory, and never changes a result).
"""

from __future__ import annotations

import math

from ..dialect import lt
from ..errors import CompileError, format_location
from ..mlir import arith, ir
from ..passes.common import rebuild_access
from ..passes.pad import ATTR, padding, physical_strides


def apply_padding(module_op) -> None:
    allocs = []
    module_op.walk(lambda o: (allocs.append(o) if o.name == "lt.alloc" and ATTR in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    for alloc in allocs:
        _pad(alloc)


def _pad(alloc) -> None:
    axis, every, by = padding(alloc)
    value = alloc.results[0]
    t = ir.MemRefType(value.type)
    shape = list(t.shape)
    users = [u.owner.operation for u in value.uses]
    if any("vectorize" in lt.annotations(l) for u in users for l in lt.enclosing_loops(u)):
        del alloc.attributes[ATTR]
        return
    strides, total = physical_strides(shape, axis, every, by)
    with alloc.context, alloc.location:
        new_type = ir.MemRefType.get([total], t.element_type, memory_space=t.memory_space)
        attrs = {name: alloc.attributes[name] for name in alloc.attributes if name not in (ATTR, "dims")}
        dims = ir.ArrayAttr(alloc.attributes["dims"])
        attrs["dims"] = ir.ArrayAttr.get([dims[0]])
        with ir.InsertionPoint(alloc):
            new = ir.Operation.create("lt.alloc", results=[new_type], attributes=attrs)
    index = ir.IndexType.get()
    for op in users:
        if op.name not in FIRST_INDEX:
            raise CompileError(f"{format_location(op.location)}: error: '{op.name}' uses a buffer laid out by lt-pad (loads, stores and prefetches only)")
        idx = access_indices(op)
        with ir.InsertionPoint(op), op.location:
            def c(v):
                return arith.ConstantOp(index, v).result

            offset = None
            for i, s in zip(idx, strides):
                term = i if s == 1 else arith.MulIOp(i, c(s)).result
                offset = term if offset is None else arith.AddIOp(offset, term).result
            offset = arith.AddIOp(offset, arith.MulIOp(_slices(idx[axis], every, c), c(by)).result).result
        rebuild_access(op, new.results[0], [offset])
    alloc.erase()


# an access op -> the position of its first index (its memref just before)
FIRST_INDEX = {"memref.load": 1, "memref.prefetch": 1, "memref.store": 2}


def access_indices(op) -> list:
    """The indices of access ``op`` (a key of ``FIRST_INDEX``)."""
    return list(op.operands)[FIRST_INDEX[op.name]:]


def _slices(i: ir.Value, every: int, c) -> ir.Value:
    """``i / every`` (``i`` non-negative: an in-bounds index), as ``x /
    every - b / every`` when ``i = x - b`` with ``b`` a multiple of
    ``every``."""
    owner = i.owner
    if not isinstance(owner, ir.Block) and owner.name == "arith.subi" and _multiple_of(owner.operands[1], every):
        x, b = owner.operands
        return arith.SubIOp(arith.DivUIOp(x, c(every)).result, arith.DivUIOp(b, c(every)).result).result
    return arith.DivUIOp(i, c(every)).result


def _multiple_of(v: ir.Value, every: int) -> bool:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return False
    if owner.name == "arith.constant":
        a = owner.attributes["value"]
        return isinstance(a, ir.IntegerAttr) and a.value % every == 0
    if owner.name == "lt.dim":
        dim = ir.StringAttr(owner.attributes["dim"]).value
        g = 0
        for level in lt.enclosing_loops(owner):
            if lt.loop_dim(level) == dim:
                g = math.gcd(g, lt.inner_extent(level))
        return g % every == 0  # g == 0: no level over the dim, lt.dim is 0
    return False
