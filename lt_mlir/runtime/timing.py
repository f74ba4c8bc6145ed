"""How lt_mlir times kernels: medians after warm-up, peers interleaved.

One copy for ``lt-opt --run``, the demo, the benchmarks and the evaluator
(``lt_mlir/evaluate.py``: ``time_call``, samples of many calls each)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def median_seconds(fn: Callable[[], object], repeat: int = 20, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs after ``warmup`` runs."""
    return interleaved_medians({"fn": fn}, repeat, warmup)["fn"]


def interleaved_medians(fns: dict, repeat: int = 20, warmup: int = 1) -> dict:
    """Median seconds of each callable; one run of each per round, so drift
    in the machine's load hits them alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict = {name: [] for name in fns}
    for _ in range(max(1, repeat)):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


# How long OpenMP's threads keep spinning after a parallel loop (libiomp5's
# KMP_BLOCKTIME, 200 ms) and a margin: a pause this long before a timing
# gives it the cores.
OPENMP_SETTLE_S = 0.3
# How long a callable runs, untimed, after that pause and before its timed
# calls.  A pause leaves the cores idle (on a VM, the vCPUs halted) and the
# first milliseconds after it run slow: on a 2-core AMD EPYC VM, a 0.2 ms
# parallel matmul took 0.25-0.28 ms a call after one warm-up call and
# 0.19 ms after 5 ms or more of them, and two schedules equal in steady
# state ranked 0.87-0.93 after one call (``block_medians``' history:
# README, "Benchmarks").
WARM_S = 0.02


def warm_up(run: Callable[[], object], calls: int, seconds: float) -> None:
    """Run ``run`` untimed ``calls`` times, and on until ``seconds`` have passed since the first."""
    start = time.perf_counter()
    for _ in range(calls):
        run()
    while time.perf_counter() - start < seconds:
        run()


def block_medians(fns: dict, rounds: int = 5, per_block: int = 4, settle_s: float = OPENMP_SETTLE_S,
                  warm_s: float = WARM_S) -> dict:
    """Median seconds of each callable, timed in blocks that alternate:
    each round, for every callable, sleeps ``settle_s``, runs it untimed
    for ``warm_s`` (once at least), then ``per_block`` times timed.  For
    callables with thread pools of their own (OpenMP's, whose threads spin
    200 ms after a parallel loop; OpenBLAS's; Numba's): timed back to back,
    one's spinning threads steal the cores of the next; in blocks after a
    pause, each runs on a quiet machine, and the rounds spread drift in
    load over all of them.  The warm-up brings the idle cores back to
    steady speed first (``WARM_S``)."""
    times: dict = {name: [] for name in fns}
    for _ in range(max(1, rounds)):
        for name, fn in fns.items():
            time.sleep(settle_s)
            warm_up(fn, 1, warm_s)
            for _ in range(max(1, per_block)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


@dataclass(frozen=True)
class Timing:
    """Seconds per call of a timed function: the median over ``samples``
    samples of ``number`` calls each, and the quartiles (the spread)."""

    median_s: float
    q1_s: float
    q3_s: float
    samples: int
    number: int

    @classmethod
    def of(cls, times: list, number: int = 1) -> "Timing":
        """The median and quartiles of ``times`` (seconds a call, each from
        a sample of ``number`` calls)."""
        q1, median, q3 = _quartiles(times)
        return cls(median, q1, q3, len(times), number)

    @classmethod
    def slowest(cls, sets: list, number: int = 1) -> "Timing":
        """Samples of one function taken on several argument sets (one
        list each): the median and quartiles of the set whose median is
        the largest, ``samples`` counting every set's (a kernel is as fast
        as it is where its arrays lie worst)."""
        worst = max((cls.of(times, number) for times in sets if times), key=lambda t: t.median_s)
        return cls(worst.median_s, worst.q1_s, worst.q3_s, sum(len(t) for t in sets), number)

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0.05: +-2.5 %)."""
        return (self.q3_s - self.q1_s) / self.median_s if self.median_s > 0 else 0.0

    def __str__(self) -> str:
        return f"{self.median_s * 1e6:.3f} us +-{50 * self.spread:.1f}% ({self.samples} x {self.number})"


def _quartiles(values: list) -> tuple:
    s = sorted(values)
    n = len(s)
    return s[(n - 1) // 4], s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2]), s[(3 * (n - 1) + 3) // 4]


def time_call(run: Callable[[], object], samples: int = 10, min_sample_s: float = 1e-3, budget_s: float | None = None,
              warmup: int = 1, warm_s: float = 0.0) -> Timing:
    """Time ``run`` (a bound kernel: no argument checks, outputs reused) as
    ``timeit`` and TVM's ``min_repeat_ms`` do: ``number`` calls a sample,
    doubled from one until a sample lasts ``min_sample_s``, then
    ``samples`` samples.  ``budget_s`` bounds the whole (fewer samples, at
    least 3 (or ``samples``), when one sample is long).  ``warm_s``: the warm-up lasts
    that long at least (after a pause: ``WARM_S``)."""
    times, number = sample_times(run, samples, min_sample_s, budget_s, warmup, warm_s)
    return Timing.of(times, number)


def sample_times(run: Callable[[], object], samples: int = 10, min_sample_s: float = 1e-3, budget_s: float | None = None,
                 warmup: int = 1, warm_s: float = 0.0) -> tuple[list, int]:
    """``time_call``'s samples: (seconds a call of each sample, calls a
    sample), for pooling samples taken apart."""
    warm_up(run, warmup, warm_s)
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            run()
        elapsed = time.perf_counter() - start
        if elapsed >= min_sample_s or number >= 1 << 20:
            break
        number *= 2 if elapsed <= 0 else max(2, min(16, int(1.5 * min_sample_s / elapsed) + 1))
    times = [elapsed / number]
    if budget_s is not None and elapsed > 0:
        samples = max(min(3, samples), min(samples, int(budget_s / elapsed)))
    while len(times) < samples:
        start = time.perf_counter()
        for _ in range(number):
            run()
        times.append((time.perf_counter() - start) / number)
    return times, number
