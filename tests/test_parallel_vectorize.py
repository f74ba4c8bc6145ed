"""A reduction whose loop runs in parallel (CPU threads, GPU blocks or
threads) with the loop inside it vectorized along the accumulator's index
(issue 29's two schedules, found by the fuzzer: every pass accepted them and
the lowering refused).  The vector's lanes are distinct elements that the
parallel iterations share: the CPU privatises them, the GPU lowering makes
each lane one atomic update.  Checked against NumPy on guard-paged buffers,
with a masked vector tail, in both orders of the passes."""

from __future__ import annotations

import numpy as np
import pytest

from lt_mlir import programs
from lt_mlir.schedule import Schedule
from lt_mlir.testing.guard import guarded_copy

ROW_MAX = [  # S[m] = max_n A[m, n], the loop over n outermost, m inside it vectorized
    ("cpu", ["lt-swap{loop=0}", "lt-parallel{loop=1}", "lt-vectorize{loop=2 width=8}"]),
    ("cpu", ["lt-swap{loop=0}", "lt-vectorize{loop=2 width=8}", "lt-parallel{loop=1}"]),
    ("cuda-emulated", ["lt-swap{loop=0}", "lt-vectorize{loop=2 width=8}", "lt-gpu-map{loop=1 to=block}"]),
    ("cuda-emulated", ["lt-swap{loop=0}", "lt-gpu-map{loop=1 to=block}", "lt-vectorize{loop=2 width=8}"]),
    ("cuda-emulated", ["lt-swap{loop=0}", "lt-gpu-map{loop=1 to=thread}", "lt-vectorize{loop=2 width=8}"]),
]


@pytest.fixture(autouse=True)
def _small_loops_in_parallel(monkeypatch):
    monkeypatch.setenv("LT_PARALLEL_MIN_WORK", "0")


@pytest.mark.parametrize("m", [16, 13])  # 13 = one vector and a masked tail of 5
@pytest.mark.parametrize("target,pipeline", ROW_MAX)
def test_row_max_in_parallel_over_the_reduced_dim(m, target, pipeline):
    s = Schedule(programs.row_max(m, 33))
    for element in pipeline:
        s.apply(element)
    assert "vectorize 8" in s.loop_tree
    A = np.random.default_rng(m).standard_normal((m, 33)).astype(np.float32)
    out = guarded_copy(np.full(m, np.nan, np.float32))
    s.compile(target=target)(guarded_copy(A, readonly=True), out)
    np.testing.assert_array_equal(out, A.max(1))  # max is exact in any order


@pytest.mark.parametrize("target,mapping", [("cuda-emulated", "lt-gpu-map{loop=1 to=thread}"), ("cpu", "lt-parallel{loop=1}")])
def test_conv1d_taps_in_parallel(target, mapping):
    """The issue's conv1d schedule: the taps j on threads, i inside them
    vectorized (Y[i] += X[i + j] W[j]: 29 = 3 vectors and a tail of 5)."""
    n, w = 29, 5
    s = Schedule(programs.conv1d(n, w))
    for element in ["lt-swap{loop=0}", "lt-unroll{loop=0 factor=2}", mapping, "lt-vectorize{loop=2 width=8}"]:
        s.apply(element)
    rng = np.random.default_rng(7)
    X = rng.standard_normal(n + w - 1).astype(np.float32)
    W = rng.standard_normal(w).astype(np.float32)
    out = guarded_copy(np.full(n, np.nan, np.float32))
    s.compile(target=target)(guarded_copy(X, readonly=True), guarded_copy(W, readonly=True), out)
    ref = np.array([X[i : i + w].astype(np.float64) @ W for i in range(n)])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
