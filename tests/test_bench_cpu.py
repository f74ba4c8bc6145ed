"""``benchmarks/bench_cpu.py --quick``: every workload of the CPU benchmark
suite, at small sizes, gives NumPy's result (float64) through lt_mlir's
frontend with the default and the documented schedules."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_cpu_quick_checks_every_workload():
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "bench_cpu.py"), "--quick"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if " ok: " in line]
    names = [line.split(" ok: ")[0].strip() for line in lines]
    for want in ("add", "matmul", "clipped matmul", "row sum", "softmax", "conv2d", "gesummv", "jacobi_2d", "gemver", "covariance", "heat_3d"):
        assert any(n.startswith(want) for n in names), (want, proc.stdout)
    for line in lines:
        assert "lt_mlir default" in line and "wrong" not in line, line
    assert sum("lt_mlir tiled x" in line for line in lines) == 5  # the matmuls and covariance, serial and parallel
