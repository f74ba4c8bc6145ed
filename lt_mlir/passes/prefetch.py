"""``lt-prefetch{loop=L distance=D}``: annotate loop L ``lt.prefetch = D``:
at the start of each iteration of L, the CPU code asks the cache for the
rows that the reads in L's body will read D iterations later
(``memref.prefetch``, a hint: the results never change).

The rows are ``analysis/prefetch.py``'s: a read whose one axis is indexed by
L's dim itself (no level over it between L and the read) or by an index
loaded there (``X[clamp(I[d]), ..]``, SDDMM's row of C for each stored
position: ``gathered_rows``, as ``lt-prefetch-data`` prefetches in a loop
of bounds known at run time), the axes before it fixed while L runs, the
axes after it at most 1 KB — a packed panel of B
in a register-tiled matmul's k loop, one row of the panel a k step, which
otherwise comes from memory only when the first tile reads it.  The CPU
lowering prefetches each cache line of the row at ``min(d + D, extent -
1)``; the GPU lowering drops the annotation; under ``lt.vectorize`` on L
it prefetches nothing.

Refuses: no loop L; ``distance`` < 1; L mapped to the GPU or vectorized;
no read in L's body has such a row.
"""

from __future__ import annotations

from ..analysis.prefetch import gathered_rows, prefetchable_rows
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..mlir import ir
from . import common
from .cache import _function_of
from .registry import Option, register

NAME = "lt-prefetch"


@register(
    NAME,
    Option("loop", int, help="loop whose iterations prefetch ahead (L-number)"),
    Option("distance", int, default=32, help="iterations ahead"),
)
def prefetch(module_op, loop: int, distance: int = 32) -> str:
    """Prefetch the rows a loop's reads read along its dim, distance iterations ahead."""
    target = common.find_loop(module_op, loop, NAME)
    label = f"L{loop} {common.loop_label(target)}"
    if distance < 1:
        raise common.refuse(NAME, f"distance must be at least 1, got {distance}", target)
    notes = lt.annotations(target)
    for kind in ("gpu", "vectorize"):
        if kind in notes:
            raise common.refuse(NAME, f"{label} is annotated '{kind}': prefetches are for a scalar CPU loop", target)
    rows, gathered = prefetchable_rows(target), gathered_rows(target)
    if not rows and not gathered:
        raise common.refuse(NAME, f"no read in {label} reads a row of at most 1 KB along dim "
                                  f"'{lt.loop_dim(target)}' or through an index loaded there, with the axes before it fixed in the loop", target)
    target.attributes["lt.prefetch"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), distance)
    names = value_names(_function_of(target))
    what = ", ".join([f"{names.get(r.buffer, 'a buffer')} ({r.row_bytes} bytes a row)" for r in rows]
                     + [f"{names.get(r.buffer, 'a buffer')} ({r.row_bytes} bytes a row, gathered)" for r in gathered])
    return f"{label} prefetches {what} {distance} iterations ahead"
