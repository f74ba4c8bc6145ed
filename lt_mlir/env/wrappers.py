"""CompilerGym's dataset wrappers, for Gymnasium: each ``reset`` starts the
next benchmark of a list (``IterateOverBenchmarks`` once through,
``CycleOverBenchmarks`` round and round, ``RandomOrderBenchmarks`` drawn
at random), so one environment trains on many programs.

    >>> env = CycleOverBenchmarks(LoopToolEnv(...), DATASETS["matmul-v0"])

``benchmarks``: benchmarks, their URIs (with or without ``benchmark://``)
or a dataset.  As in CompilerGym, a benchmark given to ``reset`` is an
error: the wrapper chooses.
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np

from ..errors import LtError


class IterateOverBenchmarks(gym.Wrapper):
    """Each reset starts the next of ``benchmarks``; past the last, a reset
    is an ``LtError``."""

    def __init__(self, env: gym.Env, benchmarks):
        super().__init__(env)
        self.benchmarks = self._iterator(list(benchmarks))

    def _iterator(self, benchmarks: list):
        if not benchmarks:
            raise LtError("error: the wrapper was given no benchmarks")
        return iter(benchmarks)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        options = dict(options or {})
        if options.get("benchmark") is not None:
            raise LtError(f"error: {type(self).__name__} chooses the benchmark: reset() takes none")
        try:
            options["benchmark"] = self._next()
        except StopIteration:
            raise LtError(f"error: {type(self).__name__}: every benchmark has been used") from None
        return self.env.reset(seed=seed, options=options)

    def _next(self):
        return next(self.benchmarks)


class CycleOverBenchmarks(IterateOverBenchmarks):
    """Each reset starts the next of ``benchmarks``, from the first again after the last."""

    def _iterator(self, benchmarks: list):
        super()._iterator(benchmarks)
        return itertools.cycle(benchmarks)


class RandomOrderBenchmarks(IterateOverBenchmarks):
    """Each reset starts one of ``benchmarks`` drawn at random by ``rng``
    (a ``numpy`` Generator or seed; a reset's own ``seed`` reseeds it)."""

    def __init__(self, env: gym.Env, benchmarks, rng: np.random.Generator | int | None = None):
        super().__init__(env, benchmarks)
        self.rng = np.random.default_rng(rng)

    def _iterator(self, benchmarks: list):
        super()._iterator(benchmarks)
        self.choices = benchmarks
        return iter(())

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        return super().reset(seed=seed, options=options)

    def _next(self):
        return self.choices[int(self.rng.integers(len(self.choices)))]
