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
  L) and has more than one axis (L walking a 1-D array an element an
  iteration is a stream the hardware prefetches: asking for it again each
  iteration only costs instructions: SDDMM 4096^2 1% K=64's kernel took
  1.04-1.11 ms with its three 1-D streams prefetched beside C's gathered
  rows, as without prefetches (1.03-1.10), and 0.95-0.99 with the
  gathered rows alone; 2-core AMD EPYC, one process).

``Row`` says what to prefetch: ``X[u.., min(d + distance, extent - 1),
line offsets..]`` for each cache line of the row.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dialect import lt
from ..mlir import ir
from .dependence import defined_inside, repeats

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


def _defining(value, name: str):
    """The op of kind ``name`` that defines ``value``, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    return op if op.name == name else None


def _dim_op(value):
    return _defining(value, "lt.dim")


def _outside_reads(loop):
    """(buffer, indices, its memref type) of each read in ``loop``'s body
    of a buffer defined outside it, in program order."""
    reads = []
    loop.operation.walk(lambda o: (reads.append(o) if o.name == "memref.load" else None, ir.WalkResult.ADVANCE)[1])
    for r in reads:
        buffer, indices = r.operands[0], list(r.operands)[1:]
        if not defined_inside(buffer, loop) and isinstance(buffer.type, ir.MemRefType):
            yield buffer, indices, ir.MemRefType(buffer.type)


def row_lines(t: ir.MemRefType, axis: int) -> tuple:
    """(the indices, on the axes after ``axis``, of each cache line of a
    row of ``t`` there, the row's bytes)."""
    trailing = list(t.shape[axis + 1:])
    elem = lt.nbytes([1], t.element_type)
    count = 1
    for s in trailing:
        count *= s
    step = max(1, LINE_BYTES // elem)
    lines = []
    for flat in range(0, count, step):
        pos, rest = [], flat
        for s in reversed(trailing):
            pos.append(rest % s)
            rest //= s
        lines.append(tuple(reversed(pos)))
    return tuple(lines), count * elem


def prefetchable_rows(loop) -> list[Row]:
    """The rows (distinct by buffer, leading indices and axis) that the
    reads in ``loop``'s body read along its dim, in program order."""
    dim = lt.loop_dim(loop)
    rows: list[Row] = []
    seen = set()
    for buffer, indices, t in _outside_reads(loop):
        if t.rank < 2:
            continue
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
            lines, row_bytes = row_lines(t, axis)
            if row_bytes > MAX_ROW_BYTES:
                continue
            key = (buffer, tuple(indices[:axis]), axis)
            if key in seen:
                break
            seen.add(key)
            rows.append(Row(buffer, tuple(indices[:axis]), axis, t.shape[axis], lines, row_bytes))
            break
    return rows


# ---------------------------------------------------------------- gathers

_CHAIN_OPS = ("arith.index_cast", "arith.maxsi", "arith.minsi", "arith.minui")


@dataclass(frozen=True)
class GatheredRow:
    """A row read through an index loaded at a data loop's variable
    (``X[u.., clamp(I[q]), ..]``): ``source`` is ``I`` (1-D, of
    ``source_extent`` elements), ``chain`` the steps that make the row's
    index from ``I[q]``, in order: ``("arith.index_cast", result type)``
    or ``("arith.maxsi" | "arith.minsi" | "arith.minui", the constant bound)``."""

    buffer: ir.Value
    leading: tuple
    axis: int
    lines: tuple
    row_bytes: int
    source: ir.Value
    source_extent: int
    chain: tuple


def _constant(value):
    return _defining(value, "arith.constant")


def index_chain(value, is_variable):
    """(the index buffer I, its extent, the steps from ``I[q]`` to ``value``
    as ``GatheredRow.chain`` holds them)
    when ``value`` is ``I[q]`` cast and clamped by constants
    (``minsi(maxsi(index_cast(I[q]), 0), E - 1)``, what the frontends write
    for an index from data, or ``minui(index_cast(I[q]), E - 1)``), ``is_variable(q)`` true, else None."""
    chain = []
    v = value
    for _ in range(16):
        owner = v.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.name == "memref.load":
            operands = list(op.operands)
            t = operands[0].type
            if len(operands) != 2 or not is_variable(operands[1]) or not isinstance(t, ir.MemRefType):
                return None
            t = ir.MemRefType(t)
            if t.rank != 1 or t.shape[0] < 1 or ir.ShapedType(t).is_dynamic_dim(0):
                return None
            return operands[0], t.shape[0], tuple(reversed(chain))
        if op.name not in _CHAIN_OPS:
            return None
        operands = list(op.operands)
        if op.name == "arith.index_cast":
            v = operands[0]
            chain.append((op.name, op.results[0].type))
        else:
            consts = [k for k, o in enumerate(operands) if _constant(o) is not None]
            if len(consts) != 1:
                return None
            v = operands[1 - consts[0]]
            chain.append((op.name, ir.IntegerAttr(_constant(operands[consts[0]]).attributes["value"]).value))
    return None


def _steps_with(loop):
    """Whether a value is what moves by one each iteration of ``loop``: an
    ``scf.for``'s variable, or ``lt.dim d`` of an lt loop over d with no
    level over d between the loop and where it is read."""
    if loop.name == "scf.for":
        variable = list(loop.regions[0].blocks)[0].arguments[0]
        return lambda v: v == variable
    dim = lt.loop_dim(loop)

    def is_variable(v) -> bool:
        d = _dim_op(v)
        if d is None or ir.StringAttr(d.attributes["dim"]).value != dim:
            return False
        around = lt.enclosing_loops(d)
        return loop in around and not any(lt.loop_dim(x) == dim for x in around[: around.index(loop)])

    return is_variable


def gathered_rows(loop) -> list[GatheredRow]:
    """The rows a loop's body reads through an index it loads at the
    loop's variable -- an ``scf.for`` of bounds known at run time (an
    SpMM's row of B for each stored value) or an lt loop (SDDMM's row of
    C for each stored position) --, whole rows of at most
    ``MAX_ROW_BYTES`` after that axis, the axes before it fixed while the
    loop runs; distinct by buffer, leading indices, axis and index chain.
    An index array marked ``lt.repeats`` (the row of each stored position:
    the same row for a run of positions) is no such index."""
    is_variable = _steps_with(loop)
    rows: list[GatheredRow] = []
    seen = set()
    for buffer, indices, t in _outside_reads(loop):
        if any(ir.ShapedType(t).is_dynamic_dim(k) for k in range(t.rank)):
            continue
        for axis, index in enumerate(indices):
            found = index_chain(index, is_variable)
            if found is None or repeats(found[0]):
                continue
            source, extent, chain = found
            if any(defined_inside(v, loop) for v in indices[:axis]):
                break
            lines, row_bytes = row_lines(t, axis)
            if row_bytes > MAX_ROW_BYTES:
                break
            key = (buffer, tuple(indices[:axis]), axis, source, tuple((name, str(x)) for name, x in chain))
            if key in seen:
                break
            seen.add(key)
            rows.append(GatheredRow(buffer, tuple(indices[:axis]), axis, lines, row_bytes, source, extent, chain))
            break
    return rows
