"""``lt-ui`` under the misuse people found: keys typed in a burst, an
internal error, a binary input, what ``q`` writes, moves the target or the
loop cannot take, quitting during a long measurement, and the view's
details (scrolling, clicks, narrow terminals, the profile, the sparkline)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from test_tui import ROOT, TEXT, WIDTH, drive, settle, shown, tree_of
from textual import events

import lt_mlir
from lt_mlir import programs
from lt_mlir.tui.app import KEYS, LtUi, _arg_parser, app_for, main, session_for, spark_points
from lt_mlir.tui.session import Session

MM128 = programs.matmul(128, 128, 128)


def burst(app, *keys):
    """Keys as a paste or ``tmux send-keys`` deliver them: all queued at once."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def loops(app) -> list[str]:
    return [ln.text.strip() for ln in app.session.lines if ln.loop is not None]


# ------------------------------------------------------------ 1. bursts and internal errors


def test_a_burst_of_keys_reaches_every_prompt_in_order():
    app = LtUi(Session(lt_mlir.Schedule(MM128)))

    async def script(pilot):
        await settle(pilot)
        burst(app, "s", "2", "enter", "s", "2", "enter")
        await pilot.pause(0.5)
        await settle(pilot)
        assert loops(app)[:3] == ["for m in 32 : L0", "for m' in 2 : L1", "for m'' in 2 : L2"], tree_of(app)
        assert app.prompt is None and app.crash is None and app.status_text == "split done"
        # the proposed answer is replaced by what is typed; escape cancels a prompt
        burst(app, "down", "down", "down", "down", "down", "v", "4", "enter", "n", "escape")
        await pilot.pause(0.5)
        assert "[vectorize 4]" in tree_of(app) and app.status_text == "cancelled"

    drive(app, script)
    assert app.return_code in (None, 0)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_burst_then_quit_writes_the_module(tmp_path):
    """The report: ``send-keys s 2 Enter s 2 Enter`` crashed lt-ui (status 0, nothing written)."""
    src, out = tmp_path / "mm128.mlir", tmp_path / "out.mlir"
    src.write_text(MM128)
    name, status = f"ltuib{os.getpid()}", tmp_path / "status"
    env = dict(os.environ, PYTHONPATH=ROOT, TERM="xterm-256color")
    cmd = f"{sys.executable} -m lt_mlir.tui.app {src} -o {out}; echo $? > {status}; sleep 30"  # Textual draws on stderr
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "45", cmd], check=True, env=env)

    def screen() -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout

    try:
        deadline = time.time() + 60
        while "GFLOP/s" not in screen() and time.time() < deadline:
            time.sleep(0.2)
        subprocess.run(["tmux", "send-keys", "-t", name, "s", "2", "Enter", "s", "2", "Enter"], check=True)
        deadline = time.time() + 30
        while "for m'' in 2 : L2" not in screen() and time.time() < deadline:
            time.sleep(0.2)
        assert "for m'' in 2 : L2" in screen(), screen()
        subprocess.run(["tmux", "send-keys", "-t", name, "q"], check=True)
        deadline = time.time() + 30
        while not status.exists() and time.time() < deadline:
            time.sleep(0.2)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert status.read_text().strip() == "0"
    assert lt_mlir.Schedule(out.read_text()).loop_tree.startswith("for m in 32 : L0\n for m' in 2 : L1\n  for m'' in 2 : L2")


def test_an_internal_error_keeps_the_work_and_ends_with_status_1(tmp_path, monkeypatch):
    def broken(self):
        raise RuntimeError("a bug in a key's action")

    monkeypatch.setattr(LtUi, "action_redo", broken)
    out = tmp_path / "out.mlir"
    s = lt_mlir.SymbolGenerator()
    A = np.ones((8, 16), np.float32)
    B = np.ones((16, 4), np.float32)
    c = (lt_mlir.Tensor(A).to(s.m, s.k) * lt_mlir.Tensor(B).to(s.k, s.n)).sum(s.k)
    session, on_exit = session_for(c, str(out))
    app = LtUi(session, on_exit, write_on_quit=True)

    async def script(pilot):
        await settle(pilot)
        await pilot.press("s", "4", "enter")
        burst(app, "r")
        await pilot.pause(0.5)

    drive(app, script)
    assert app.return_code == 1 and app.crash == "RuntimeError: a bug in a key's action"
    message = app.crash_message()
    assert message.startswith("error: lt-ui stopped on an internal error") and "\n" not in message and str(out) in message
    assert lt_mlir.Schedule(out.read_text()).loop_tree.startswith("for m in 2 : L0")  # written out
    assert c.loop_tree.startswith("for m in 2 : L0")  # and the tensor keeps it
    details = message.rsplit("details in ", 1)[1]
    assert "a bug in a key's action" in open(details).read()
    os.unlink(details)


# ------------------------------------------------------------ 3. a binary input


def test_a_binary_input_is_one_line_error(tmp_path, capsys):
    for data, why in ((b"\x7fELF\x02\x01\x01\x00\xff\xfe", "not a text file (byte 8 is not UTF-8)"),
                      (b"func.func\x00", "not a text file (it holds NUL bytes)")):
        path = tmp_path / "a.out"
        path.write_bytes(data)
        assert main([str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"{path}: error: {why}; lt-ui reads MLIR modules") and err.count("\n") == 1


def test_ctrl_c_while_loading_exits_130_without_a_traceback(tmp_path, monkeypatch, capsys):
    """A Ctrl-C before the screen is up (parsing, the first compile) ends
    lt-ui with 130 and one line, also where it lands in an IR walk's Python
    callback and MLIR's bindings re-raise it as a RuntimeError; any other
    error there is not taken for one."""
    import lt_mlir.tui.app as ui
    from lt_mlir.mlir import ir
    from lt_mlir.schedule import Schedule

    src = tmp_path / "m.mlir"
    src.write_text(TEXT)

    def loading(error):
        def load(argv):
            module = Schedule(src.read_text()).parsed

            def visit(op):
                raise error

            module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        return load

    def plain(argv):
        raise KeyboardInterrupt

    for load in (loading(KeyboardInterrupt()), plain):
        monkeypatch.setattr(ui, "app_for", load)
        assert main([str(src)]) == 130
        assert capsys.readouterr().err == "lt-ui: interrupted while loading\n"
    monkeypatch.setattr(ui, "app_for", loading(ValueError("not a Ctrl-C")))
    with pytest.raises(RuntimeError, match="not a Ctrl-C"):
        main([str(src)])


# ------------------------------------------------------------ 4. what q and w write


def test_q_writes_only_to_o_and_w_writes_to_o_or_the_input(tmp_path):
    src, out = tmp_path / "mm.mlir", tmp_path / "out.mlir"
    src.write_text(TEXT)
    help_o = " ".join(_arg_parser().format_help().split())
    assert "without -o: q writes nothing, w writes the input file" in help_o
    assert dict(KEYS)["q"] == "quit; writes the module first only to -o PATH (lt.ui's path), if given"
    assert dict(KEYS)["w"] == "write the module to -o PATH, else to the input file"

    async def split_then(pilot, *keys):
        await settle(pilot)
        await pilot.press("s", "3", "enter")
        await pilot.press(*keys)

    app = app_for([str(src)])  # no -o: q writes nothing
    drive(app, lambda pilot: split_then(pilot, "q"))
    assert src.read_text() == TEXT and not out.exists()
    app = app_for([str(src), "-o", str(out)])  # -o: q writes there, never the input
    drive(app, lambda pilot: split_then(pilot, "q"))
    assert src.read_text() == TEXT and "for m in 3 : L0" in lt_mlir.Schedule(out.read_text()).loop_tree
    app = app_for([str(src)])  # w without -o: the input file
    drive(app, lambda pilot: split_then(pilot, "w"))
    assert "for m in 3 : L0" in lt_mlir.Schedule(src.read_text()).loop_tree


# ------------------------------------------------------------ 5. moves refused, toggles


def test_moves_the_target_or_the_loop_cannot_take_are_refused():
    app = LtUi(Session(lt_mlir.Schedule(MM128)))
    start = lt_mlir.Schedule(MM128).loop_tree

    async def script(pilot):
        await settle(pilot)
        for key in ("g", "G"):
            await pilot.press(key)
            assert app.prompt is None and "target cpu" in shown(app, "#status") and "GPU mapping" in shown(app, "#status")
        await pilot.press("m", *"gpu_block", "enter")
        assert "target cpu" in shown(app, "#status")
        await pilot.press("down", "down", "down")  # k, the innermost loop (128 iterations)
        await pilot.press("v", "1", "0", "2", "4", "enter")
        assert "width 1024 exceeds the 128 iterations of L2" in shown(app, "#status")
        await pilot.press("n", "1", "enter")
        assert "factor 1 unrolls nothing" in shown(app, "#status")
        assert tree_of(app) == start
        # v and n on a loop that has it: taken off (one undoable move), as loop_tool's v/u
        await pilot.press("v", "enter")
        assert f"[vectorize {WIDTH}]" in tree_of(app)
        await pilot.press("v")
        assert tree_of(app) == start and app.prompt is None and "vectorize removed" in shown(app, "#status")
        await pilot.press("n", "4", "enter")
        assert "[unroll 4]" in tree_of(app)
        await pilot.press("n")
        assert tree_of(app) == start and "unroll removed" in shown(app, "#status")
        await pilot.press("u")
        assert "[unroll 4]" in tree_of(app)
        await pilot.press("U")
        assert "u undoes" in shown(app, "#status") and "n unrolls" in shown(app, "#status")
        await settle(pilot)

    drive(app, script)


# ------------------------------------------------------------ 6. quitting and cancelling


def slow_app() -> LtUi:
    """A default-schedule matmul whose one run takes seconds."""
    return LtUi(Session(lt_mlir.Schedule(programs.matmul(1024, 1024, 1024))))


def test_quitting_during_a_long_measurement_returns_at_once():
    app = slow_app()
    quit_at = []

    async def script(pilot):
        deadline = time.time() + 60
        while not app.session._measuring and time.time() < deadline:
            await pilot.pause(0.1)
        await pilot.pause(2.0)  # the child is compiling or running the kernel
        quit_at.append(time.perf_counter())
        await pilot.press("q")

    drive(app, script)
    assert time.perf_counter() - quit_at[0] < 2.0


def test_escape_cancels_the_measurement_under_way():
    app = slow_app()

    async def script(pilot):
        deadline = time.time() + 60
        while not app.session._measuring and time.time() < deadline:
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        started = time.perf_counter()
        await pilot.press("escape")
        await settle(pilot)
        assert time.perf_counter() - started < 2.0
        assert "measurement cancelled" in shown(app, "#status")
        assert "measurement cancelled" in shown(app, "#figures")
        assert app.session.cached_figures() is None  # not kept: measured again when asked
        await pilot.press("escape")
        assert "no measurement under way" in shown(app, "#status")

    drive(app, script)


# ------------------------------------------------------------ 7. the view


def test_code_scrolls_by_keys_and_a_click_selects_a_row():
    app = LtUi(Session(lt_mlir.Schedule(MM128)))

    async def script(pilot):
        await settle(pilot)
        area = app.query_one("#code")
        top = area.scroll_offset.y
        await pilot.press("pagedown")
        assert area.scroll_offset.y > top
        await pilot.press("pageup")
        assert area.scroll_offset.y == top
        await pilot.click("#tree", offset=(4, 2))
        assert app.session.cursor == 2 and app.session.selected_loop is None  # C[m, n] <- 0.0
        await pilot.click("#tree", offset=(4, 3))
        assert app.session.selected_loop == 2
        await settle(pilot)

    drive(app, script, size=(120, 30))


def test_long_top_and_status_lines_wrap_in_80_columns():
    app = LtUi(Session(lt_mlir.Schedule(TEXT)))

    async def script(pilot):
        await settle(pilot)
        await pilot.press("s", "3", "enter")  # the figures gain "result = start"
        await settle(pilot)
        line = app.session.cached_figures().line()
        assert len(line) > 78 and app.query_one("#figures").region.height >= 2
        assert " ".join(shown(app, "#figures").split()) == " ".join(line.split())
        await pilot.press("G")  # a refusal longer than the line
        message = app.status_text
        assert len(message) > 78 and app.query_one("#status").region.height >= 2
        assert " ".join(shown(app, "#status").split()) == " ".join(message.split())

    drive(app, script, size=(80, 40))


def test_profile_on_the_emulated_gpu_says_which_loops_are_mapped():
    from lt_mlir import programs, recipes

    text = recipes.gpu_tiled_matmul(lt_mlir.Schedule(programs.matmul(64, 64, 32))).text
    app = LtUi(Session(lt_mlir.Schedule(text), target="cuda-emulated"))

    async def script(pilot):
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        tree = shown(app, "#tree")
        assert app.show_profile and app.profile[0] == app.session.schedule.text, shown(app, "#status")
        assert "threads, in L" in tree and "blocks, in L" in tree and "unrolled, in L" in tree
        assert "%" in tree.splitlines()[1]

    drive(app, script, size=(120, 50))


def test_profile_has_a_header_and_one_p_after_a_move_profiles_again():
    app = LtUi(Session(lt_mlir.Schedule(TEXT)))

    async def script(pilot):
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        assert shown(app, "#tree").splitlines()[0].split() == ["share", "own", "time"]
        await pilot.press("s", "3", "enter")
        await settle(pilot)
        assert "(stale)" in shown(app, "#tree") and "P: profile again" in shown(app, "#tree")
        await pilot.press("P")
        await settle(pilot)
        assert app.show_profile and app.profile[0] == app.session.schedule.text
        assert "(stale)" not in shown(app, "#tree") and "%" in shown(app, "#tree")
        await pilot.press("P")
        assert not app.show_profile

    drive(app, script)


def test_the_sparkline_is_logarithmic():
    """One slow schedule does not flatten the rest: 1 ms, 10 ms, 1 s sit at 0, 1/3, 1."""
    low, mid, high = spark_points([1e-3, 1e-2, 1.0])
    assert (mid - low) / (high - low) == pytest.approx(1 / 3)
    app = LtUi(Session(lt_mlir.Schedule(TEXT)))

    async def script(pilot):
        await settle(pilot)
        assert list(app.query_one("#spark").data) == spark_points(app.session.history)

    drive(app, script)
