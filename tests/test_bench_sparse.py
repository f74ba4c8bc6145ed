"""``benchmarks/bench_sparse.py --check``: every workload of the sparse and
host-loop benchmark, at small sizes, under each fusion strategy (and Numba
where installed) gives the SciPy/NumPy result."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("scipy")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_sparse_check_runs_every_workload():
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "bench_sparse.py"), "--check"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if " ok: " in line]
    for want in ("SDDMM", "SpMM-MM", "sparse softmax", "Sinkhorn", "PageRank", "logistic regression"):
        assert any(line.startswith(want) for line in lines), (want, proc.stdout)
    for line in lines:
        assert "lt redundancy-aware, lt maximal, lt none, " in line, line


def test_bench_sparse_cores_pins_the_process_and_the_libraries_threads():
    """``--cores 1``: the one-core row runs pinned to one CPU with every
    library's threads at 1; a count the process cannot have is one line
    and exit 1."""
    script = os.path.join(ROOT, "benchmarks", "bench_sparse.py")
    proc = subprocess.run([sys.executable, script, "--check", "--only", "softmax", "--cores", "1"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = sorted(os.sched_getaffinity(0))[0]
    assert f"on 1 core(s): CPUs [{first}], OMP_NUM_THREADS=1" in proc.stdout, proc.stdout
    assert any(line.startswith("sparse softmax") and " ok: " in line for line in proc.stdout.splitlines()), proc.stdout
    for bad in ("0", str(len(os.sched_getaffinity(0)) + 1)):
        proc = subprocess.run([sys.executable, script, "--check", "--cores", bad], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert proc.returncode == 1 and proc.stderr.startswith(f"bench_sparse: error: --cores {bad}: this process may use 1.."), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not proc.stdout, (proc.stdout, proc.stderr)
    proc = subprocess.run([sys.executable, script, "--cores", "two"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and "argument --cores: invalid int value: 'two'" in proc.stderr, proc.stderr  # argparse's own


def test_bench_sparse_names_a_peer_it_could_not_import(tmp_path):
    """A peer that is not installed (here Numba, shadowed by a module that
    fails to import) is left out of the timings and named under the
    table, not dropped without a word."""
    (tmp_path / "numba.py").write_text("raise ImportError('numba is not installed here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "bench_sparse.py"), "--quick", "--only", "sparse softmax", "--rounds", "1"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("Not installed here, so not timed: Numba"), proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("| sparse softmax"))
    assert row.split("|")[7].strip() == "", row  # the Numba column is empty


def test_the_bound_is_one_pass_over_the_dense_operand_an_iteration():
    """``bound``: Sinkhorn's is ``iterations`` matrix-vector products over
    K (each K's row sums, against NumPy), a logistic regression's ``steps``
    over X; the sparse workloads have none."""
    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import bench_sparse
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    rng = np.random.default_rng(0)
    K = rng.random((6, 5))
    passes = bench_sparse.bound("sinkhorn", (np.ones(6), np.ones(5), K, 3))()
    assert len(passes) == 3 and all(np.allclose(p, K.sum(axis=1)) for p in passes)
    X = rng.random((7, 4), dtype=np.float32)
    steps = bench_sparse.bound("logistic", (X, np.zeros(7, np.float32), np.zeros(4, np.float32), 0.5, 2))()
    assert len(steps) == 2 and all(np.allclose(p, X.sum(axis=1), rtol=1e-6) for p in steps)
    assert bench_sparse.bound("sddmm", ()) is None and bench_sparse.bound("pagerank", ()) is None


def test_the_bound_column_is_timed_and_explained():
    """A dense host-loop workload's row has a ``× bound`` cell (a positive
    ratio) and the table says what it is."""
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "bench_sparse.py"), "--quick", "--only", "logistic", "--rounds", "1"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = next(line for line in proc.stdout.splitlines() if line.startswith("| workload"))
    row = next(line for line in proc.stdout.splitlines() if line.startswith("| logistic"))
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
    assert float(cells["× bound"]) > 0, row
    assert any(line.startswith("× bound: one pass over the dense operand") for line in proc.stdout.splitlines()), proc.stdout
