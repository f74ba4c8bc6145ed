"""``lt-ui``: the session model, whole sessions driven by keys through
Textual's pilot, and one session in a real terminal (tmux) as a person uses
it.  Every move is checked against what the tree shows and what the
written module computes (NumPy)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from textual.worker import WorkerCancelled

import lt_mlir
from lt_mlir import programs
from lt_mlir.lowering.machine import host_vector_width
from lt_mlir.tui.app import LtUi, main
from lt_mlir.tui.session import Session

M, N, K = 9, 16, 32
TEXT = programs.matmul(M, N, K, clipped=True)
WIDTH = host_vector_width()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def clipped(A, B):
    return np.maximum(A[:, :, None].astype(np.float64) * B[None].astype(np.float64), 0).sum(1)


def new_session(**kw) -> Session:
    return Session(lt_mlir.Schedule(TEXT), **kw)


def tree_of(app) -> str:
    return "\n".join(line.text for line in app.session.lines)


def shown(app, widget: str) -> str:
    return str(app.query_one(widget).render())


def drive(app, script, size=(160, 48)):
    async def main():
        async with app.run_test(size=size) as pilot:
            await script(pilot)

    asyncio.run(main())


async def settle(pilot):
    """Every worker done.  The app's workers are exclusive per group: a
    newer benchmark or code view cancels the one under way, which is no
    failure, so wait again for the newer one."""
    for _ in range(5):
        try:
            await pilot.app.workers.wait_for_complete()
            break
        except WorkerCancelled:
            continue
    await pilot.pause()


# ------------------------------------------------------------ the model


def test_session_moves_refusals_undo_redo():
    s = new_session()
    assert [ln.loop for ln in s.lines if ln.loop is not None] == [0, 1, 2]
    assert s.move("split", 4) is None
    assert "for m in 2 r 1 : L0" in s.lines[0].text and "for m' in 4 : L1" in s.lines[1].text
    before = s.schedule.text
    message = s.move("split", 0)  # refused by lt-split: nothing changes
    assert message is not None and "lt-split" in message
    assert s.schedule.text == before
    s.cursor = [i for i, ln in enumerate(s.lines) if ln.loop is None][0]
    assert "select a loop" in s.move("parallel")
    assert s.undo() is None and s.schedule.text == TEXT
    assert s.undo() == "error: nothing to undo"
    assert s.redo() is None and s.schedule.text == before
    assert s.redo() == "error: nothing to redo"


def test_swap_down_follows_the_loop():
    s = new_session()
    s.cursor = 1  # L1: for n { C <- 0; for k {...} }
    assert s.move("swap_down") is None
    # lt-swap distributes n over its two statements first, then swaps the second n with k
    assert s.schedule.loop_tree == lt_mlir.Schedule(TEXT).swap(1).loop_tree
    labels = [ln.text.strip() for ln in s.lines if ln.loop is not None]
    assert [x.split(" in ")[0] for x in labels] == ["for m", "for n", "for k", "for n"]
    assert s.selected_loop == 3  # the cursor followed the moved loop
    assert s.move("swap_up") is None
    assert s.schedule.loop_tree == lt_mlir.Schedule(TEXT).swap(1).swap(2).loop_tree
    assert s.selected_loop == 2 and s.lines[s.cursor].text.strip().startswith("for n")


def test_benchmark_checks_every_schedule_against_the_start():
    A = np.random.default_rng(1).standard_normal((M, K)).astype(np.float32)
    B = np.random.default_rng(2).standard_normal((K, N)).astype(np.float32)
    s = new_session(inputs=[A, B], reference=clipped)
    first = s.benchmark()
    assert first.error == "" and first.runtime_s > 0 and first.numpy_s > 0 and first.matches is None
    s.move("split", 4)
    second = s.benchmark()
    assert second.matches is True and second.start_s == first.runtime_s
    assert "GFLOP/s" in second.line() and "x start" in second.line() and "x NumPy" in second.line()
    assert s.benchmark() is second  # cached per schedule
    assert len(s.history) == 2


def test_memory_bound_programs_report_bandwidth():
    s = Session(lt_mlir.Schedule(programs.pointwise_add(4096)))
    line = s.benchmark().line()
    assert "GB/s" in line and "GFLOP/s" not in line
    assert "GFLOP/s" in new_session().benchmark().line()


def test_facts_of_loops_and_statements():
    s = new_session()
    s.move("split", 4)
    facts = "\n".join(s.facts())
    assert "L0: dim m, 2 iterations + a tail of 1" in facts and "covers 9 elements, 4 an iteration" in facts
    s.cursor = next(i for i, ln in enumerate(s.lines) if "+=" in ln.text)
    facts = "\n".join(s.facts())
    assert f"C: f32[{M}, {N}], {M * N * 4} bytes allocated" in facts


def test_code_views():
    s = new_session()
    s.move("split", 4)
    s.cursor = 1
    text, line = s.code("lt")  # the view scrolls to L1: the second lt.loop in the text
    loop_lines = [i for i, t in enumerate(text.splitlines()) if '"lt.loop"' in t]
    assert line == loop_lines[1]
    assert "scf.for" in s.code("scf")[0]
    assert "define void @clipped_matmul(" in s.code("llvm")[0]
    assert "retq" in s.code("asm")[0]
    with pytest.raises(lt_mlir.LtError, match="ptx view needs target cuda"):
        s.code("ptx")
    assert ".entry" in Session(lt_mlir.Schedule(TEXT), "cuda").code("ptx")[0]


# ------------------------------------------------------------ whole sessions (pilot)


def test_pilot_session_split_drag_merge_vectorize_undo_redo_write(tmp_path):
    out = tmp_path / "tuned.mlir"
    app = LtUi(new_session(path=str(out)))

    async def script(pilot):
        await settle(pilot)
        assert "GFLOP/s" in shown(app, "#figures")
        # split m by 4
        await pilot.press("s")
        await pilot.press("4", "enter")
        await settle(pilot)
        assert "for m in 2 r 1 : L0" in tree_of(app) and "for m' in 4 : L1" in tree_of(app)
        assert "result = start" in shown(app, "#figures")
        # drag n (L2) below k: enter, down, enter
        await pilot.press("down", "down")
        assert app.session.selected_loop == 2
        await pilot.press("enter", "down", "enter")
        loops = [ln.text.split(" in ")[0].strip() for ln in app.session.lines if ln.loop is not None]
        assert loops == ["for m", "for m'", "for n", "for k", "for n"]  # n distributed over init and k, then swapped
        assert not app.dragging and app.session.selected_loop == 4
        # a refused move: merging n into k changes nothing and says why
        before = tree_of(app)
        await pilot.press("backspace")
        assert tree_of(app) == before
        assert "lt-merge" in shown(app, "#status")
        # vectorize n (the innermost loop, L4), the width proposed: this CPU's (8 or 16 floats)
        await pilot.press("v")
        await pilot.press("enter")
        await settle(pilot)
        assert f"[vectorize {WIDTH}]" in tree_of(app)
        assert "result = start" in shown(app, "#figures")
        # undo, redo
        await pilot.press("u")
        assert "vectorize" not in tree_of(app)
        await pilot.press("r")
        assert f"[vectorize {WIDTH}]" in tree_of(app)
        await settle(pilot)
        # write, then quit (a path was given: quitting writes too)
        await pilot.press("w")
        assert "wrote" in shown(app, "#status")
        await pilot.press("W")  # object + header beside the module
        assert "tuned.o" in shown(app, "#status") and "tuned.h" in shown(app, "#status")
        assert "lt-opt -p 'builtin.module(lt-split{loop=0 factor=4}, lt-swap{loop=2}, lt-vectorize{loop=4 width=" + str(WIDTH) + "})'" in shown(app, "#pipeline")

    drive(app, script)
    assert out.exists() and (tmp_path / "tuned.o").exists() and "void clipped_matmul(" in (tmp_path / "tuned.h").read_text()
    A = np.random.default_rng(3).standard_normal((M, K)).astype(np.float32)
    B = np.random.default_rng(4).standard_normal((K, N)).astype(np.float32)
    got = lt_mlir.compile(out.read_text())(A, B)
    np.testing.assert_allclose(got, clipped(A, B), rtol=1e-4, atol=1e-4)
    assert f"lt.vectorize = {WIDTH}" in out.read_text()


def test_pilot_help_profile_views_and_bad_answers():
    app = LtUi(new_session())

    async def script(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        assert app.help_shown and "lt-ui keys" in shown(app, "#help")
        await pilot.press("x")
        assert not app.help_shown and tree_of(app) == lt_mlir.Schedule(TEXT).loop_tree
        # a non-number answer: a status message, nothing changes
        await pilot.press("s")
        await pilot.press("f", "o", "u", "r", "enter")
        assert "whole number" in shown(app, "#status") and tree_of(app) == lt_mlir.Schedule(TEXT).loop_tree
        # the profile column
        await pilot.press("P")
        await settle(pilot)
        assert "%" in shown(app, "#tree"), shown(app, "#status")
        assert "overhead" in shown(app, "#status")
        # code views cycle
        for view in ("scf", "llvm", "asm", "ptx"):
            await pilot.press("tab")
            await settle(pilot)
            assert app.session.code_view == view
        assert "ptx view needs target cuda" in app.query_one("#code").text
        # every key on a statement line: a message, never a crash
        await pilot.press("down", "down")  # C[m, n] <- 0.0
        assert app.session.selected_loop is None and "<- 0.0" in app.session.lines[app.session.cursor].text
        for key in ("s", "p", "d", "v", "n", "c", "g", "backspace", "shift+up", "shift+down"):
            await pilot.press(key)
            if app.prompt is not None:
                await pilot.press("escape")
        await settle(pilot)
        assert tree_of(app) == lt_mlir.Schedule(TEXT).loop_tree

    drive(app, script)


def test_ui_on_a_frontend_tensor_keeps_the_schedule():
    """loop_tool's ``lt.ui(T, path)``: the tensor computes with the schedule made."""
    A = np.random.default_rng(5).standard_normal((M, K)).astype(np.float32)
    B = np.random.default_rng(6).standard_normal((K, N)).astype(np.float32)
    s = lt_mlir.SymbolGenerator()
    c = (lt_mlir.Tensor(A).to(s.m, s.k) * lt_mlir.Tensor(B).to(s.k, s.n)).max(0.0).sum(s.k)
    from lt_mlir.tui.app import session_for

    session, on_exit = session_for(c)
    app = LtUi(session, on_exit)

    async def script(pilot):
        await settle(pilot)
        await pilot.press("s", "3", "enter")
        await settle(pilot)
        await pilot.press("q")

    drive(app, script)
    assert "for m in 3 : L0" in c.loop_tree
    np.testing.assert_allclose(c.numpy(), clipped(A, B), rtol=1e-4, atol=1e-4)


def test_lt_ui_command_errors(tmp_path, capsys):
    assert main([str(tmp_path / "missing.mlir")]) == 1
    assert capsys.readouterr().err.startswith("error: cannot read")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %x = arith.constant 1 : f32\n  return %y\n}\n")
    assert main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:23: error: unexpected decimal integer literal") and err.count("\n") == 1


# ------------------------------------------------------------ a real terminal


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (make test installs it from Debian's packages)")
def test_tmux_session_as_a_person_uses_it(tmp_path):
    src = tmp_path / "mm.mlir"
    src.write_text(TEXT)
    out = tmp_path / "out.mlir"
    name = f"ltui{os.getpid()}"
    env = dict(os.environ, PYTHONPATH=ROOT, TERM="xterm-256color")
    cmd = f"{sys.executable} -m lt_mlir.tui.app {src} -o {out}"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "45", cmd], check=True, env=env)

    def screen() -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout

    def wait_for(text: str, timeout: float = 60.0) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = screen()
            if text in s or text in " ".join(s.split()):  # the top and status lines wrap in a narrow window
                return s
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{screen()}")

    try:
        wait_for("GFLOP/s")
        subprocess.run(["tmux", "send-keys", "-t", name, "s"], check=True)
        wait_for("inner size?")
        subprocess.run(["tmux", "send-keys", "-t", name, "4", "Enter"], check=True)
        s = wait_for("for m' in 4 : L1")
        assert "for m in 2 r 1 : L0" in s
        wait_for("result = start")
        subprocess.run(["tmux", "send-keys", "-t", name, "q"], check=True)
        deadline = time.time() + 30
        while time.time() < deadline and not out.exists():
            time.sleep(0.2)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert out.exists()
    assert "lt-split" not in out.read_text()  # the module, not the pipeline
    assert lt_mlir.Schedule(out.read_text()).loop_tree.startswith("for m in 2 r 1 : L0")


def test_a_costly_move_says_so_in_the_status_line():
    """lt-parallel on the innermost k loop: the move is made, and the pass's
    remark (it will run on one thread) is what the status line shows."""
    s = new_session()
    s.cursor = [i for i, ln in enumerate(s.lines) if ln.loop == 2][0]
    assert s.move("parallel") is None
    assert s.last_remark is not None and "will run on one thread" in s.last_remark
    assert s.move("split", 4) is None and s.last_remark is None  # a plain move clears it
