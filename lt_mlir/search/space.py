"""The search space: LoopTune's extended moves on a loop, the environment's
own (``env.loop_tool_env.apply_loop_action``: one pass each), and the
features the cost model reads (the environment's ``stride_tensor`` and
``loops_tensor``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dialect.loop_tree import preorder_loops
from ..env import features
from ..env.loop_tool_env import ACTION_SPACES, apply_loop_action
from ..errors import LtError
from ..schedule import Schedule

CPU_MOVES = tuple(a for a in ACTION_SPACES["extended"] if a not in ("up", "down"))
CUDA_MOVES = tuple(a for a in CPU_MOVES if a != "parallel") + ("gpu_block", "gpu_thread")
FEATURE_LOOPS = 8


@dataclass(frozen=True)
class Move:
    action: str
    loop: int

    def __str__(self) -> str:
        return f"{self.action}@L{self.loop}"

    @classmethod
    def parse(cls, text: str) -> "Move":
        action, _, loop = text.partition("@L")
        return cls(action, int(loop))


def moves_for(target: str) -> tuple:
    return CUDA_MOVES if target == "cuda" else CPU_MOVES


def try_move(schedule: Schedule, move: Move, target: str = "cpu") -> Schedule | None:
    """The schedule after ``move``, or None when its pass refuses."""
    s = schedule.copy()
    try:
        apply_loop_action(s, move.action, move.loop, target)
    except LtError:
        return None
    return s


def neighbours(schedule: Schedule, target: str = "cpu") -> list[tuple[Move, Schedule]]:
    """Every move that applies to ``schedule``, with its result (distinct
    results only, in a fixed order)."""
    module = schedule.module
    n = len(preorder_loops(module.operation))
    out, seen = [], {schedule.text}
    for loop in range(n):
        for action in moves_for(target):
            s = try_move(schedule, Move(action, loop), target)
            if s is not None and s.text not in seen:
                seen.add(s.text)
                out.append((Move(action, loop), s))
    return out


def random_move(schedule: Schedule, rng: np.random.Generator, target: str = "cpu", tries: int = 30):
    """A random move that applies (``tries`` attempts), or None."""
    module = schedule.module
    n = len(preorder_loops(module.operation))
    if n == 0:
        return None
    actions = moves_for(target)
    for _ in range(tries):
        move = Move(actions[int(rng.integers(len(actions)))], int(rng.integers(n)))
        s = try_move(schedule, move, target)
        if s is not None and s.text != schedule.text:
            return move, s
    return None


def replay(start: Schedule, moves: list[Move], target: str = "cpu") -> Schedule | None:
    """``start`` after ``moves`` in order, or None if one does not apply."""
    s = start
    for move in moves:
        s = try_move(s, move, target)
        if s is None:
            return None
    return s


def feature_vector(schedule: Schedule) -> np.ndarray:
    """What the cost model sees: log strides pooled over the nest, and size,
    tail and annotations of the first loops in pre-order."""
    module = schedule.module
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
