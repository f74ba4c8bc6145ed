"""The search space: the moves of ``lt_mlir.moves`` (each kind's
``search_args``: LoopTune's extended moves on a loop, one pass each, for
the target), and the features the cost model reads: the lt module's
(``analysis.cost_features``: program-independent, of fixed length, nothing
compiled), or what its optimised LLVM IR executes against the start's
(``lowering.ir_counts``: ``--model ir``, each candidate lowered and
optimised)."""

from __future__ import annotations

import numpy as np

from ..analysis import cost_features
from ..lowering import ir_counts
from ..moves import Move, neighbours, random_move, replay, search_moves
from ..schedule import Schedule
from ..targets import get_target
from .measure import allowed_cpus

__all__ = ["FEATURE_LOOPS", "FEATURE_NAMES", "IR_FEATURE_NAMES", "Move", "feature_vector", "ir_counts_of", "ir_feature_vector",
           "neighbours", "optimized_ir", "random_move", "replay", "search_moves"]

FEATURE_LOOPS = 6  # loop levels described, from the innermost around each access
FEATURE_NAMES = cost_features.feature_names(FEATURE_LOOPS)


def feature_vector(schedule: Schedule, cores: int | None = None) -> np.ndarray:
    """What the cost model sees (``FEATURE_NAMES``): the program's size and
    loop structure, vector code, unrolling, parallel work, reduction chains
    and estimated cache misses, then the innermost ``FEATURE_LOOPS`` loop
    levels around each access (trip count, the access's stride, annotations,
    footprint against L1 and L2), each averaged over the accesses weighted
    by how often they run (``analysis.cost_features``).  ``cores``: the
    threads a parallel loop gets (default: this machine's)."""
    return cost_features.cost_features(schedule.parsed, FEATURE_LOOPS, cores)


IR_FEATURE_NAMES = ([f"ir_{k}" for k in ir_counts.KINDS]
                    + ["ir_cycles", "ir_code_size", "ir_loops", "ir_unknown_trips", "ir_vectorized_loops"])


def optimized_ir(schedule: Schedule, target=None, options=None) -> tuple[str, int] | None:
    """(``schedule``'s optimised LLVM IR text, the vector register it was
    made for in bits): lowered and optimised for ``target`` (a native
    target's name or ``Target``; default the host CPU) and ``options``
    (``CompileOptions``: ``cpu`` names another CPU) as compiling it does on
    a host of that CPU (its libmvec calls included); None when it does not
    lower.  In this process, without the measurer's compile limit:
    ``moves.MAX_COPIES`` bounds what unrolling makes (the cost dataset's
    slowest schedule took 8.6 s, the median 0.07 s)."""
    try:
        t = get_target(target if target is not None else "cpu")
        _, optimized, _ = t.optimized(schedule.text, schedule.entry, options, vector_math="as_host")
        return str(optimized), 32 * t.vector_width(4, options)
    except Exception:  # noqa: BLE001 - an LtError, or what the measurer will report of the candidate: its features are missing
        return None


def ir_counts_of(schedule: Schedule, target=None, options=None, code: tuple[str, int] | None = None) -> ir_counts.IrCounts | None:
    """What ``schedule``'s code executes: ``optimized_ir`` (or ``code``,
    what it returned), counted (``lowering.ir_counts``) with that CPU's
    vector registers and a thread for each CPU here; None when it does not
    lower."""
    code = code if code is not None else optimized_ir(schedule, target, options)
    if code is None:
        return None
    # the OpenMP team a parallel candidate is timed with: a thread for each CPU here (the measurer's wide worker's)
    return ir_counts.ir_counts(code[0], vector_bits=code[1], threads=len(allowed_cpus()))


def ir_feature_vector(counts: ir_counts.IrCounts | None, start: ir_counts.IrCounts | None) -> np.ndarray:
    """What the IR cost model sees (``IR_FEATURE_NAMES``): each kind of
    instruction executed, the cycle estimate and the code size as log2
    ratios to the start's, then the loops, those of unknown trip count and
    those LLVM vectorised; all NaN (missing) for code that did not lower."""
    if counts is None or start is None:
        return np.full(len(IR_FEATURE_NAMES), np.nan)

    def ratio(a: float, b: float) -> float:
        return float(np.log2(1 + a) - np.log2(1 + b))

    return np.array([ratio(counts.counts[k], start.counts[k]) for k in ir_counts.KINDS]
                    + [ratio(counts.cycles, start.cycles), ratio(counts.static["instructions"], start.static["instructions"]),
                       counts.loops, counts.unknown_trips, counts.vectorized_loops])
