"""lt_mlir.env: a Gymnasium environment for loop-nest optimisation, in the
style of CompilerGym's ``loop_tool`` environment and LoopTune.

    >>> import gymnasium as gym
    >>> import lt_mlir.env
    >>> env = gym.make("lt_mlir/LoopTool-v0", benchmark="benchmark://loop_tool-cpu-v0/1024")
    >>> obs, info = env.reset(seed=0)

``loop_tool_env.py`` the environment (actions, observations, rewards),
``datasets.py`` the programs, ``wrappers.py`` CompilerGym's benchmark
cycling wrappers, ``features.py`` the tensor and graph
observations.  Importing this package registers ``lt_mlir/LoopTool-v0``
(episodes of 100 steps) with Gymnasium.
"""

import gymnasium

from ..analysis import features  # noqa: F401  (the observations: lt_mlir.env.features)
from .datasets import DATASETS, HELD_OUT, TRAINING, Benchmark, Dataset, Datasets
from .loop_tool_env import ACTION_SPACES, OBSERVATIONS, REWARDS, LoopToolEnv, ValidationResult
from .wrappers import CycleOverBenchmarks, IterateOverBenchmarks, RandomOrderBenchmarks

ENV_ID = "lt_mlir/LoopTool-v0"
LoopToolEnv.datasets = Datasets()

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="lt_mlir.env.loop_tool_env:LoopToolEnv", max_episode_steps=100)

__all__ = [
    "ACTION_SPACES", "DATASETS", "ENV_ID", "HELD_OUT", "TRAINING", "OBSERVATIONS", "REWARDS", "Benchmark", "CycleOverBenchmarks", "Dataset", "Datasets",
    "IterateOverBenchmarks", "LoopToolEnv", "RandomOrderBenchmarks", "ValidationResult",
]
