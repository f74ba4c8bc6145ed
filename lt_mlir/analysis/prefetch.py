"""Which reads in a loop a software prefetch can run ahead of
(``lt-prefetch``'s test, and what the CPU lowering prefetches: one copy).

A read ``X[u0, .., d, t0, ..]`` in loop L's body is prefetchable along L
when

* one axis is indexed by ``lt.dim d`` itself, ``d`` L's dim, with no
  level over ``d`` between L and the read (so one iteration of L moves that
  index by one);
* the axes before it are indexed by values defined outside L (fixed while
  L runs: the prefetch can name them at the start of L's body);
* the axes after it span at most ``MAX_ROW_BYTES`` of ``X`` (the row a
  prefetch fetches whole, a cache line at a time);
* ``X`` is defined outside L (an argument or a scratch buffer made before
  L).

``Row`` says what to prefetch: ``X[u.., min(d + distance, extent - 1),
line offsets..]`` for each cache line of the row.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dialect import lt
from ..mlir import ir
from .dependence import defined_inside

LINE_BYTES = 64
MAX_ROW_BYTES = 1024


@dataclass(frozen=True)
class Row:
    buffer: ir.Value
    leading: tuple  # the indices before the axis (values defined outside L)
    axis: int  # the axis indexed by L's dim
    extent: int  # that axis's extent
    lines: tuple  # per cache line of the row: its indices on the axes after ``axis``
    row_bytes: int


def _dim_op(value):
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    return op if op.name == "lt.dim" else None


def prefetchable_rows(loop) -> list[Row]:
    """The rows (distinct by buffer, leading indices and axis) that the
    reads in ``loop``'s body read along its dim, in program order."""
    dim = lt.loop_dim(loop)
    reads = []
    loop.operation.walk(lambda o: (reads.append(o) if o.name == "memref.load" else None, ir.WalkResult.ADVANCE)[1])
    rows: list[Row] = []
    seen = set()
    for r in reads:
        buffer, indices = r.operands[0], list(r.operands)[1:]
        if defined_inside(buffer, loop) or not isinstance(buffer.type, ir.MemRefType):
            continue
        t = ir.MemRefType(buffer.type)
        for axis, index in enumerate(indices):
            d = _dim_op(index)
            if d is None or ir.StringAttr(d.attributes["dim"]).value != dim:
                continue
            between = lt.enclosing_loops(d)
            between = between[: between.index(loop)] if loop in between else None
            if between is None or any(lt.loop_dim(l) == dim for l in between):
                continue
            if any(defined_inside(v, loop) for v in indices[:axis]):
                continue
            trailing = list(t.shape[axis + 1:])
            elem = lt.nbytes([1], t.element_type)
            count = 1
            for s in trailing:
                count *= s
            if count * elem > MAX_ROW_BYTES:
                continue
            key = (buffer, tuple(indices[:axis]), axis)
            if key in seen:
                break
            seen.add(key)
            step = max(1, LINE_BYTES // elem)
            lines = []
            for flat in range(0, count, step):
                pos, rest = [], flat
                for s in reversed(trailing):
                    pos.append(rest % s)
                    rest //= s
                lines.append(tuple(reversed(pos)))
            rows.append(Row(buffer, tuple(indices[:axis]), axis, t.shape[axis], tuple(lines), count * elem))
            break
    return rows
