"""lt-tune off a terminal: a progress line every few seconds, and the best
schedule so far on disk, so a search that is killed leaves its result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np

from lt_mlir import compile
from lt_mlir.schedule import Schedule
from lt_mlir.search import cli


def test_progress_lines_when_stdout_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_EVERY_S", 0.0)
    out = tmp_path / "best.mlir"
    code = cli.main(["matmul:16,16,32", "--strategy", "random", "--budget", "6", "-o", str(out),
                     "--log", str(tmp_path / "log.jsonl"), "--plot", str(tmp_path / "p.png")])
    assert code == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("lt-tune: ")]
    assert lines and lines[-1].startswith("lt-tune: 6/6 evaluations, best ")
    counts = [int(ln.split()[1].split("/")[0]) for ln in lines]
    assert counts == sorted(counts)


def test_a_killed_search_leaves_its_best_schedule(tmp_path):
    out = tmp_path / "best.mlir"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lt_mlir.search.cli", "matmul:32,32,32", "--strategy", "random", "--budget", "100000",
         "-o", str(out), "--log", str(tmp_path / "log.jsonl"), "--plot", str(tmp_path / "p.png")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert out.exists(), "no best-so-far schedule written before the kill"
    text = out.read_text()
    assert "loc(" not in text
    kernel = compile(Schedule(text).text)  # a whole module, and it computes the matmul
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((32, 32), np.float32), rng.standard_normal((32, 32), np.float32)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)
