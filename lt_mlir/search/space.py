"""The search space: the moves of ``lt_mlir.moves`` (each kind's
``search_args``: LoopTune's extended moves on a loop, one pass each, for
the target), and the features the cost model reads
(``analysis.cost_features``: program-independent, of fixed length)."""

from __future__ import annotations

import numpy as np

from ..analysis import cost_features
from ..moves import Move, neighbours, random_move, replay, search_moves
from ..schedule import Schedule

__all__ = ["FEATURE_LOOPS", "FEATURE_NAMES", "Move", "feature_vector", "neighbours", "random_move", "replay", "search_moves"]

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
