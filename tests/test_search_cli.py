"""lt-tune, the command: a progress line every few seconds off a terminal;
the best schedule so far on disk, so a search that is killed leaves its
result, and Ctrl-C writes it and exits 130; default file names after the
program; arguments, logs and modules it refuses, each in one line."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from lt_mlir import compile, programs
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


def _session(sid: int) -> list[int]:
    """The processes still running in session ``sid`` (Linux)."""
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            if os.getsid(int(d[6:])) == sid and open(f"{d}/stat").read().split()[2] != "Z":
                pids.append(int(d[6:]))
        except (OSError, IndexError):
            pass
    return pids


def test_ctrl_c_writes_the_best_so_far_and_exits_130(tmp_path):
    out, log, png = tmp_path / "best.mlir", tmp_path / "log.jsonl", tmp_path / "p.png"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lt_mlir.search.cli", "matmul:32,32,32", "--strategy", "random", "--budget", "100000",
         "--workers", "2", "-o", str(out), "--log", str(log), "--plot", str(png)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        start_new_session=True,  # SIGINT is not ignored, as it is in a background job
    )
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert out.exists(), "no best-so-far schedule before the interrupt"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lt-tune: interrupted after ") and f"wrote {out}" in lines[0]
    assert str(png) in lines[0] and png.stat().st_size > 1000
    Schedule(out.read_text())  # a whole module
    if sys.platform.startswith("linux"):  # the worker processes went with it
        deadline = time.monotonic() + 10
        while _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)  # (multiprocessing's resource tracker leaves once its pipe closes)
        assert not _session(proc.pid)


def test_default_file_names_carry_the_programs_name(tmp_path, monkeypatch, capsys):
    assert cli.program_name("clipped_matmul:33,48,4096") == "clipped_matmul-33x48x4096"
    assert cli.program_name("kernels/kernel.mlir") == "kernel"
    assert cli.program_name("my kernel?*.v2.mlir") == "my_kernel_.v2"
    assert cli.program_name("../..") == "program"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kernel.mlir").write_text(programs.matmul(8, 8, 8))
    assert cli.main(["kernel.mlir", "--strategy", "random", "--budget", "2", "--quiet"]) == 0
    assert "wrote tuned-kernel.mlir, tune-kernel.jsonl, tune-kernel.png" in capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} == {"kernel.mlir", "tuned-kernel.mlir", "tune-kernel.jsonl", "tune-kernel.png"}
    # --resume without --log continues that log
    assert cli.main(["kernel.mlir", "--strategy", "random", "--budget", "3", "--quiet", "--resume", "tune-kernel.jsonl",
                     "-o", "again.mlir", "--plot", "again.png"]) == 0
    records = [json.loads(line) for line in (tmp_path / "tune-kernel.jsonl").read_text().splitlines()]
    assert sum("header" in r for r in records) == 1 and sum("moves" in r for r in records) == 3


def test_resume_refuses_another_programs_log(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "other.jsonl").write_text(json.dumps({"header": {
        "program": "0" * 64, "target": "cpu", "host": cli.Tuner(Schedule(programs.matmul(8, 8, 8)), None).identity["host"],
    }}) + "\n")
    assert cli.main(["clipped_matmul:8,8,8", "--resume", "other.jsonl", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lt-tune: error: cannot resume from 'other.jsonl'")
    assert "another program" in err and "target" not in err and "host" not in err
    assert {p.name for p in tmp_path.iterdir()} == {"other.jsonl"}  # nothing written


@pytest.mark.parametrize("option, value", [
    ("--budget", "-5"), ("--budget", "0"), ("--seconds", "0"), ("--seconds", "-1"), ("--seconds", "nan"),
    ("--workers", "0"), ("--workers", "-2"), ("--workers", "many"), ("--compile-limit", "0"), ("--run-limit", "-1"),
])
def test_refuses_a_number_that_is_not_positive(option, value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["matmul:8,8,8", option, value, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"lt-tune: error: argument {option}: expected a positive ")
    assert f"got '{value}'" in err
    assert not list(tmp_path.iterdir())


def test_a_parse_error_names_the_input_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kernel.mlir").write_text("module {\n  func.func @f( {\n}\n")
    assert cli.main(["kernel.mlir", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kernel.mlir:2:16: error: ")


def test_a_module_without_loops_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flat.mlir").write_text("module {\n  func.func @f(%a: memref<4xf32>) {\n    return\n  }\n}\n")
    assert cli.main(["flat.mlir", "--quiet"]) == 1
    assert capsys.readouterr().err == "lt-tune: error: flat.mlir has no loops: there is nothing to schedule\n"
    assert {p.name for p in tmp_path.iterdir()} == {"flat.mlir"}
