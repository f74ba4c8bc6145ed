"""lt-parallel over a reduced dim: per-thread partial results, loops too
small to share, and the remarks that say what happens (lowering/partials.py,
analysis/work.py).  Kernels run on guard-paged arrays; references are NumPy
in float64."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir
from lt_mlir import Schedule, programs
from lt_mlir.testing import guarded_array, guarded_copy


def _clipped(m: int, n: int, k: int) -> str:
    s = lt_mlir.SymbolGenerator()
    return (lt_mlir.Tensor(s.m, s.k).set_size(m, k) * lt_mlir.Tensor(s.k, s.n).set_size(k, n)).max(0.0).sum(s.k).code


def _run(kernel, *inputs, out_shape):
    args = [guarded_copy(a) for a in inputs]
    out = guarded_array(out_shape, np.float32, fill=np.nan)
    kernel(*args, out)
    return np.array(out)


def test_parallel_inner_reduction_of_matmul_stays_on_one_thread():
    """matmul 64x96x128 with its innermost k loop parallel (6144 regions of
    512 operations) runs on one thread, correct, and the remark says why."""
    s = Schedule(programs.matmul(64, 96, 128)).parallel(2)
    assert s.remarks == [
        'lt-parallel: L2 "for k in 128" will run on one thread: a run does about 512 operations, too few to pay for '
        "starting the threads (6144 runs a call); run an outer loop in parallel"
    ]
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((64, 128)).astype(np.float32), rng.standard_normal((128, 96)).astype(np.float32)
    np.testing.assert_allclose(_run(s.compile(), A, B, out_shape=(64, 96)), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    assert "omp" not in str(lt_mlir.lower(s.text).llvm_ir).lower().replace("nomp", "")  # no parallel region


@pytest.mark.parametrize("k", [4096, 4099])
def test_parallel_reduced_dim_accumulates_private_rows(k):
    """The clipped matmul as the frontend writes it (k outside n), k
    parallel: each thread sums its chunk of k into a private row of C, then
    adds it once (an uneven k leaves a short last chunk)."""
    s = Schedule(_clipped(33, 48, k)).parallel(2)
    assert s.remarks == [
        f'lt-parallel: L2 "for k in {k}" reduces into elements its iterations share: each thread accumulates its chunk '
        "in a private tile of C (48 elements), combined once"
    ]
    ir = lt_mlir.lower(s.text).llvm_ir
    assert "__kmpc_fork_call" in ir and ir.count("atomicrmw") <= 2  # one combine loop of atomics, not one per element of k
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((33, k)).astype(np.float32), rng.standard_normal((k, 48)).astype(np.float32)
    want = np.maximum(A.astype(np.float64)[:, :, None] * B[None], 0).sum(1)
    np.testing.assert_allclose(_run(s.compile(), A, B, out_shape=(33, 48)), want, rtol=1e-4, atol=1e-3)


def test_row_sum_partials_with_tails(monkeypatch):
    """A parallel reduction into one element (row sum over n): one private
    f32 a chunk, added to S[m] once; 67 columns do not divide into the
    chunks (the last is short).  LT_PARALLEL_MIN_WORK=0 makes the small
    loop run on threads."""
    monkeypatch.setenv("LT_PARALLEL_MIN_WORK", "0")
    text = programs.row_sum(33, 67)
    s = Schedule(text).parallel(1)
    assert "private tile of S (1 elements)" in s.remarks[-1]
    X = np.random.default_rng(2).standard_normal((33, 67)).astype(np.float32)
    np.testing.assert_allclose(_run(s.compile(), X, out_shape=(33,)), X.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_shared_elements_without_a_private_tile_stay_atomic(monkeypatch):
    """A column sum with n split around the parallel m loop: S[n]'s index
    runs over n inside m, and n is also iterated outside it, so no
    per-thread tile covers it: every update stays atomic, correct, and the
    remark says so."""
    monkeypatch.setenv("LT_PARALLEL_MIN_WORK", "0")
    s = Schedule(programs.col_sum(32, 64)).split(0, 8).distribute(1).swap(2).parallel(2)
    assert s.remarks[-1] == (
        'lt-parallel: L2 "for m in 32" updates elements of S that its iterations share: every update is an atomic '
        "read-modify-write (costly); reorder so the parallel loop writes its own elements"
    )
    assert "atomicrmw" in lt_mlir.lower(s.text).llvm_ir
    X = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)
    np.testing.assert_allclose(_run(s.compile(), X, out_shape=(64,)), X.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


def test_tail_chunk_buffers_do_not_grow_the_stack():
    """k = 5 over 2 cores leaves a tail chunk, run outside the parallel
    region in each of 600 iterations of m: its 32 KiB private row must not
    be a new stack allocation each time (found by review: it overflowed the
    8 MiB stack).  In a child process: a regression would crash it."""
    import subprocess
    import sys

    code = (
        "import numpy as np, lt_mlir; from lt_mlir import programs\n"
        "s = lt_mlir.Schedule(programs.matmul(600, 8192, 5)).distribute(1).swap(2).parallel(2)\n"
        "A = np.random.rand(600, 5).astype(np.float32); B = np.random.rand(5, 8192).astype(np.float32)\n"
        "C = s.compile()(A, B); assert np.abs(C - A @ B).max() < 1e-4; print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])
