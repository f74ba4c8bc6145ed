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
