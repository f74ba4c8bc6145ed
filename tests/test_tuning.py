"""The tuning database (lt_mlir.tuning): record/lookup/keep-the-better, its
file (LT_MLIR_TUNING_DB, XDG_CACHE_HOME), a bad file, concurrent writers;
lt-tune recording and --show; Tensor.optimize; set_default_schedule("tuned").
Each checks against something computed apart: sqlite3 read directly, the
sha256 of the module text, NumPy."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import threading

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir import programs, tuning
from lt_mlir.dialect.loop_tree import loop_tree
from lt_mlir.schedule import Schedule
from lt_mlir.search import cli

TEXT = programs.matmul(16, 16, 32)


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    """A fresh database file per test (conftest gives one too; this one is
    named, for the tests that read the file), and the default schedule back
    to loop_tool's afterwards."""
    db = tmp_path / "db" / "tuning.sqlite"
    monkeypatch.setenv("LT_MLIR_TUNING_DB", str(db))
    yield db
    lt.set_default_schedule("default")


def _rows(db) -> list:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT program, target, speedup, schedule FROM tuned").fetchall()


def test_record_keeps_the_better_and_lookup_finds_it(database):
    faster = Schedule(TEXT).split(0, 4).file_text
    assert tuning.lookup(TEXT, "cpu") is None and tuning.entries() == []
    kept = tuning.record(TEXT, "cpu", faster, "builtin.module(lt-split)", 2.0, 10.0, 30, "greedy", 5.0)
    assert kept.speedup == 2.0
    assert tuning.record(TEXT, "cpu", Schedule(TEXT).file_text, "builtin.module()", 1.5).speedup == 2.0  # worse: not kept
    program = hashlib.sha256(Schedule(TEXT).file_text.encode()).hexdigest()
    assert _rows(database) == [(program, "cpu", 2.0, faster)]
    # the same program spelt without locations is the same entry; another target is another
    found = tuning.lookup(Schedule(TEXT).file_text, "cpu")
    assert found.schedule == faster and found.evaluations == 30 and found.strategy == "greedy" and found.gflops == 10.0
    assert tuning.lookup(TEXT, "cuda-emulated") is None
    assert tuning.lookup(programs.matmul(16, 16, 16), "cpu") is None
    tuning.record(TEXT, "cpu", Schedule(TEXT).split(1, 4).file_text, "builtin.module(lt-split)", 3.0)  # better: replaces
    assert [(r[2], r[3]) for r in _rows(database)] == [(3.0, Schedule(TEXT).split(1, 4).file_text)]
    assert [e.speedup for e in tuning.entries()] == [3.0]


def test_the_database_file_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_MLIR_TUNING_DB", str(tmp_path / "mine.sqlite"))
    assert tuning.path() == str(tmp_path / "mine.sqlite")
    tuning.record(TEXT, "cpu", TEXT, "builtin.module()", 1.0)
    assert len(_rows(tmp_path / "mine.sqlite")) == 1
    monkeypatch.delenv("LT_MLIR_TUNING_DB")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert tuning.path() == str(tmp_path / "cache" / "lt_mlir" / "tuning.sqlite")
    assert tuning.entries() == []  # nothing there yet, and nothing made by reading
    assert not (tmp_path / "cache").exists()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert tuning.path() == os.path.join(os.path.expanduser("~"), ".cache", "lt_mlir", "tuning.sqlite")


@pytest.mark.parametrize("content", ["garbage", "another sqlite database"])
def test_a_bad_database_file_is_one_line_naming_it(database, content, capsys):
    database.parent.mkdir()
    if content == "garbage":
        database.write_bytes(b"not a database at all\x00" * 64)
    else:
        with sqlite3.connect(database) as con:
            con.execute("CREATE TABLE other (x)")
    before = database.read_bytes()
    for call in (lambda: tuning.lookup(TEXT, "cpu"), tuning.entries, lambda: tuning.record(TEXT, "cpu", TEXT, "", 2.0)):
        with pytest.raises(lt.LtError) as e:
            call()
        assert str(database) in str(e.value) and "\n" not in str(e.value)
    assert database.read_bytes() == before  # refused, not repaired
    assert cli.main(["--show"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lt-tune: error: ") and str(database) in err and "Traceback" not in err
    assert cli.main(["matmul:8,8,8", "--budget", "1", "--quiet"]) == 1  # before searching
    assert str(database) in capsys.readouterr().err


def test_concurrent_writers_lose_nothing(database):
    tuning.check()
    errors = []

    def writer(n):
        try:
            for i in range(8):
                tuning.record(TEXT, f"target{i % 2}", f"schedule {n} {i}", "builtin.module()", 1.0 + n + i / 10)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    best = {target: max(1.0 + n + i / 10 for n in range(4) for i in range(8) if f"target{i % 2}" == target) for target in ("target0", "target1")}
    assert {r[1]: r[2] for r in _rows(database)} == best


def test_lt_tune_records_its_winner_and_show_lists_it(tmp_path, capsys):
    assert cli.main(["--show"]) == 0
    assert "has no entries" in capsys.readouterr().out
    files = ["-o", str(tmp_path / "best.mlir"), "--log", str(tmp_path / "t.jsonl"), "--plot", str(tmp_path / "t.png")]
    assert cli.main(["matmul:16,16,32", "--strategy", "random", "--budget", "2", "--quiet", "--no-db", *files]) == 0
    assert tuning.entries() == []
    (tmp_path / "t.jsonl").unlink()
    assert cli.main(["matmul:16,16,32", "--strategy", "random", "--budget", "6", "--quiet", *files]) == 0
    capsys.readouterr()
    assert cli.main(["--show"]) == 0
    lines = capsys.readouterr().out.splitlines()
    program = hashlib.sha256(Schedule(TEXT).file_text.encode()).hexdigest()
    assert len(lines) == 2 and lines[0].endswith("1 entry")
    assert lines[1].startswith(f"{program[:12]}  cpu  ") and "6 evaluations" in lines[1] and "builtin.module(" in lines[1]
    entry = tuning.lookup(TEXT, "cpu")
    assert entry.schedule == (tmp_path / "best.mlir").read_text() and entry.strategy == "random"
    A = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    np.testing.assert_allclose(lt.compile(entry.schedule)(A, B), A @ B, rtol=1e-4, atol=1e-4)


def _matmul(seed: int, m: int = 16):
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((m, 32)).astype(np.float32), rng.standard_normal((32, 16)).astype(np.float32)
    s = lt.SymbolGenerator()
    return (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)).sum(s.k), A, B


def test_optimize_keeps_the_best_and_records_it_and_tuned_tensors_get_it():
    c, A, B = _matmul(0)
    start = c.code  # loop_tool's default: the program the database knows the winner by
    result = c.optimize(budget=6, strategy="random")
    assert result.evaluations <= 6 and c.loop_tree == result.schedule.loop_tree
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-4, atol=1e-4)
    entry = tuning.lookup(start, "cpu")
    assert entry is not None and loop_tree(entry.schedule) == c.loop_tree and entry.evaluations == result.evaluations
    assert entry.program == hashlib.sha256(Schedule(start).file_text.encode()).hexdigest()

    lt.set_default_schedule("tuned")
    d, A2, B2 = _matmul(1)  # a new tensor of the same program: the stored schedule, no search
    assert d.loop_tree == loop_tree(entry.schedule)
    np.testing.assert_allclose(d.numpy(), A2 @ B2, rtol=1e-4, atol=1e-4)


def test_the_tuned_default_applies_to_the_same_program_and_target_only():
    c, A, B = _matmul(0)
    default = c.code
    moved = Schedule(default).split(3, 8)
    tuning.record(default, "cpu", moved.file_text, moved.pipeline, 2.0)
    tuning.record(_matmul(0, m=8)[0].code, "cuda-emulated", "not a module", "", 9.0)  # another program and target
    lt.set_default_schedule("tuned")
    assert lt.default_schedule() == "tuned"
    d, A2, B2 = _matmul(2)
    assert d.loop_tree == moved.loop_tree != loop_tree(default)
    np.testing.assert_allclose(d.numpy(), A2 @ B2, rtol=1e-4, atol=1e-4)
    e, A3, B3 = _matmul(3, m=8)  # no entry for this program on cpu: loop_tool's default
    assert e.code == e.untuned_code
    np.testing.assert_allclose(e.numpy(), A3 @ B3, rtol=1e-4, atol=1e-4)
    own = _matmul(4)[0]
    mine = Schedule(default).split(1, 2)
    own.set(mine)  # a schedule of its own wins
    assert own.loop_tree == mine.loop_tree != moved.loop_tree
    lt.set_default_schedule("default")
    assert _matmul(5)[0].loop_tree == loop_tree(default)
    with pytest.raises(lt.FrontendError, match="unknown default schedule 'nonsense'"):
        lt.set_default_schedule("nonsense")
    assert lt.default_schedule() == "default"


def test_optimize_finds_the_search_without_importing_it(tmp_path):
    """The frontend sits below the search: the first optimize() imports it by name."""
    code = (
        "import sys, numpy as np, lt_mlir as lt\n"
        "s = lt.SymbolGenerator()\n"
        "A = np.ones((8, 8), np.float32)\n"
        "c = (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(A).to(s.k, s.n)).sum(s.k)\n"
        "assert 'lt_mlir.search' not in sys.modules\n"
        "c.optimize(budget=2, strategy='random')\n"
        "assert np.allclose(c.numpy(), A @ A)\n"
        "from lt_mlir import tuning\n"
        "print(len(tuning.entries()))\n"
    )
    env = {**os.environ, "LT_MLIR_TUNING_DB": str(tmp_path / "sub.sqlite")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
