"""The search space: the moves of ``lt_mlir.moves`` (each kind's
``search_args``: LoopTune's extended moves on a loop, one pass each, for
the target), and the features the cost model reads (``analysis.features``:
the environment's ``stride_tensor`` and ``loops_tensor``)."""

from __future__ import annotations

import numpy as np

from ..analysis import features
from ..moves import Move, neighbours, random_move, replay, search_moves
from ..schedule import Schedule

__all__ = ["FEATURE_LOOPS", "Move", "feature_vector", "neighbours", "random_move", "replay", "search_moves"]

FEATURE_LOOPS = 8


def feature_vector(schedule: Schedule) -> np.ndarray:
    """What the cost model sees: log strides pooled over the nest, and size,
    tail and annotations of the first loops in pre-order."""
    module = schedule.parsed
    strides = np.log1p(features.stride_tensor(module))
    rows = features.loops_tensor(module, None, FEATURE_LOOPS)
    cols = {name: i for i, name in enumerate(features.LOOP_FEATURES)}
    per_loop = np.stack(
        [
            np.log2(rows[:, cols["size"]] + 1),
            rows[:, cols["tail"]] > 0,
            rows[:, cols["parallel"]],
            np.log2(rows[:, cols["vectorize"]] + 1),
            np.log2(rows[:, cols["unroll"]] + 1),
            rows[:, cols["depth"]],
        ],
        axis=1,
    ).astype(np.float64)
    return np.concatenate([strides, per_loop.ravel(), [1.0]])
