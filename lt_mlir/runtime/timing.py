"""How lt_mlir times kernels: medians after warm-up, peers interleaved.

One copy for ``lt-opt --run``, the demo and the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable


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
