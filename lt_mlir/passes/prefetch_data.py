"""``lt-prefetch-data{loop=K distance=D}``: annotate the K-th loop whose
bounds are known only at run time (an ``scf.for``: a CSR row's stored
positions, counted as ``lt-vectorize-data`` counts them) ``lt.prefetch =
D``: at the start of each iteration, the CPU code asks the cache for the
rows its body reads through an index it loads at the loop's variable,
D iterations later -- an SpMM's row of B for the stored value D positions
on, ``B[clamp(indices[q + D]), :]`` (``memref.prefetch``, a hint: the
results never change).

The rows are ``analysis/prefetch.gathered_rows``': a read ``X[u..,
f(I[q]), ..]`` with ``f`` casts and clamps by constants (what the
frontends write for an index from data), the axes before it fixed while
the loop runs and the row after it at most 1 KB.  The lowering reads
``I[min(max(q + D, 0), E - 1)]`` (E: I's extent, so even the last
positions read inside I), applies ``f`` to it, and prefetches each cache
line of that row: every address it names is inside X.  A prefetch of a
row the loop never reaches (past the row's last position, or the
matrix's) costs a cache line and changes nothing.

Refuses: no loop K; ``distance`` < 1; a loop marked ``lt.vectorize``;
no read in its body has such a row.
"""

from __future__ import annotations

from ..analysis.prefetch import gathered_rows
from ..mlir import ir
from .common import refuse
from .registry import Option, register
from .vectorize_data import find_data_loop

NAME = "lt-prefetch-data"


@register(
    NAME,
    Option("loop", int, help="the loop of bounds known at run time whose iterations prefetch ahead, counted among those loops"),
    Option("distance", int, 16, "iterations ahead"),
)
def prefetch_data(module_op, loop: int, distance: int = 16) -> str:
    """Prefetch the rows a loop of bounds known at run time gathers, distance iterations ahead."""
    target = find_data_loop(module_op, loop, NAME)
    if distance < 1:
        raise refuse(NAME, f"distance must be at least 1, got {distance}", target)
    if "lt.vectorize" in target.attributes:
        raise refuse(NAME, f"loop {loop} of bounds known at run time is vectorized: prefetches are for a scalar loop", target)
    rows = gathered_rows(target)
    if not rows:
        raise refuse(NAME, f"no read in loop {loop} of bounds known at run time reads a row of at most 1 KB "
                           "through an index loaded at the loop's variable", target)
    target.attributes["lt.prefetch"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), distance)
    what = ", ".join(f"a row of {r.row_bytes} bytes" for r in rows)
    return f"loop {loop} of bounds known at run time prefetches {what} {distance} iterations ahead"
