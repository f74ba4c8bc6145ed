"""``benchmarks/bench_tune.py`` runs as the README shows it, with lt-tune's
default model, and refuses a model it does not know with one line."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench_tune(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_tune.py"), *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_bench_tune_goals_row_with_the_default_model():
    proc = _bench_tune("--quick", "--only", "row sum", "--budget", "4", "--rounds", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| row sum")]
    assert len(rows) == 1, proc.stdout
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1].endswith(" ms") and float(cells[1][:-3]) > 0
    assert 1 <= int(cells[5]) <= 4  # measurements: the budget holds
    assert "error" not in proc.stdout


def test_bench_tune_refuses_an_unknown_model():
    proc = _bench_tune("--quick", "--only", "row sum", "--model", "nope")
    assert proc.returncode == 1
    assert proc.stdout.strip().splitlines() == ["error: --model 'nope': auto, ir, lt (a list, lt,ir, only with --compare-model)"]
