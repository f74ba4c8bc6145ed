"""Moves as data (lt_mlir/moves.py): one table that Schedule's methods,
lt-ui's keys, the environment's actions and the search's neighbourhood are
all made from; the Schedule holding its parsed module."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.dialect import lt
from lt_mlir.dialect.loop_tree import preorder_loops
from lt_mlir.dialect.lt import module_text
from lt_mlir.env import LoopToolEnv
from lt_mlir.mlir import ir
from lt_mlir.moves import MOVES, Move, MoveKind, element, neighbours, register_move, search_moves, try_move
from lt_mlir.schedule import Schedule
from lt_mlir.tui.session import Session

TEXT = programs.matmul(16, 16, 32)


def test_every_search_move_prints_and_parses_back():
    for target in ("cpu", "cuda", "cuda-emulated"):
        for kind, arg in search_moves(target):
            move = Move(kind, 3, arg)
            assert Move.parse(str(move)) == move, str(move)
    assert Move.parse("gpu_block@L1") == Move("gpu_map", 1, "block")
    assert Move.parse("resize_-1@L0") == Move("resize", 0, -1)
    with pytest.raises(lt_mlir.LtError, match="unknown move 'twist'"):
        Move.parse("twist@L0")


def test_schedule_methods_are_moves():
    """Each method runs the element its move makes: one copy of the options."""
    s = Schedule(TEXT)
    for method, args, move in [
        ("split", (0, 4), Move("split", 0, 4)),
        ("swap", (1,), Move("swap_down", 1)),
        ("vectorize", (-1, 8), Move("vectorize", -1, 8)),
        ("unroll", (-1, 2), Move("unroll", -1, 2)),
        ("parallel", (0,), Move("parallel", 0)),
    ]:
        if args[0] == -1:  # the innermost loop
            args, move = (s.loops() - 1, *args[1:]), Move(move.kind, s.loops() - 1, move.arg)
        want = element(move, s.parsed)
        getattr(s, method)(*args)
        assert s.steps[-1] == want
    assert s.pipeline == "builtin.module(" + ", ".join(s.steps) + ")"


def _dims(schedule, follow):
    loop = preorder_loops(schedule.parsed)[follow]
    return lt.loop_dim(loop), len(lt.enclosing_loops(loop))


def test_the_selected_loop_follows_a_swap():
    """loop_tool's cursor: after swap_down the cursor is on the same loop,
    one level in; after swap_up one level out."""
    s = Schedule(TEXT)  # for m : L0 { for n : L1 { init; for k : L2 } }
    follow = s.play(Move("swap_down", 0))  # m <-> n (the init gets a loop of its own first)
    assert _dims(s, follow) == ("m", 1)
    back = s.play(Move("swap_up", follow))
    assert _dims(s, back) == ("m", 0)


def test_a_refusal_is_said_once_for_every_surface():
    """The swap-up refusal at the outermost loop: the Schedule, the UI and
    the environment report the same text (written once, in moves.py)."""
    want = "L0 is outermost: nothing to swap it with above"
    with pytest.raises(lt_mlir.LtError, match=want):
        Schedule(TEXT).play(Move("swap_up", 0))
    session = Session(Schedule(TEXT))
    assert want in session.move("swap_up")
    env = LoopToolEnv(TEXT, "extended", observations=(), reward=None, action_mask=False)
    env.reset()
    *_, info = env.step(env.actions.index("swap_up"))
    assert want in info["refused"]


def test_a_registered_move_reaches_every_surface():
    """One MoveKind registered: Schedule.play, the search's neighbours, the
    UI's session and the environment's extended actions all have it."""
    kind = MoveKind("tile3", lambda m, module, target: f"lt-split{{loop={m.loop} factor=3}}", "split by three",
                    search_args=lambda target: (None,))
    register_move(kind)
    try:
        s = Schedule(TEXT)
        s.play(Move("tile3", 0))
        assert s.loop_tree.startswith("for m in 5 r 1 : L0\n for m' in 3 : L1")
        assert any(m.kind == "tile3" for m, _ in neighbours(Schedule(TEXT)))
        session = Session(Schedule(TEXT))
        assert session.move("tile3") is None and "m' in 3" in session.schedule.loop_tree
        env = LoopToolEnv(TEXT, "extended", observations=("loop_tree",), reward=None)
        env.reset()
        obs, _, _, _, info = env.step(env.actions.index("tile3"))
        assert "refused" not in info and "m' in 3" in obs["loop_tree"]
    finally:
        del MOVES["tile3"]


def test_neighbours_parse_nothing_and_are_distinct():
    """The schedule holds its parsed module: expanding a state clones it,
    never parses text again."""
    parses = [0]
    original = ir.Module.parse

    def counting(*args, **kwargs):
        parses[0] += 1
        return original(*args, **kwargs)

    s = Schedule(programs.matmul(64, 64, 64))
    ir.Module.parse = counting
    try:
        got = neighbours(s)
    finally:
        ir.Module.parse = original
    assert parses[0] == 0 and len(got) > 10
    texts = [t.text for _, t in got]
    assert len(set(texts)) == len(texts) and module_text(s.parsed) not in texts
    assert len({t.key for _, t in got}) == len(got) and s.key not in {t.key for _, t in got}
    # each neighbour is its move applied to the start, and computes the same
    A = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    for move, t in got[:: max(1, len(got) // 6)]:
        again, _ = try_move(s, move)
        assert again.text == t.text
        np.testing.assert_allclose(lt_mlir.compile(t.text)(A, B), A @ B, rtol=1e-4, atol=1e-3)


def test_undo_and_copy_share_states_without_reparsing():
    s = Schedule(TEXT).split(0, 4)
    held = s.parsed
    c = s.copy().swap(1)
    assert s.parsed is held and c.parsed is not held  # the copy moved on, the original did not
    s.module.operation.attributes["x"] = ir.UnitAttr.get(s.parsed.context)  # a copy: the schedule stays
    assert "x" not in s.parsed.operation.attributes
    c.undo()
    assert c.text == s.text


def test_the_selected_loop_follows_a_merge():
    """Merged into its parent level or its preceding sibling: the cursor
    goes to the loop that remains, not to the number it had."""
    s = Schedule(TEXT).split(0, 4)  # for m in 4 : L0 { for m' in 4 : L1 { ... } }
    follow = s.play(Move("merge", 1))
    assert follow == 0 and s.loop_tree.startswith("for m in 16 : L0")
    d = Schedule(TEXT)
    d.distribute(1)  # for m : L0 { for n : L1 { init }  for n : L2 { for k : L3 } }
    assert d.play(Move("merge", 2)) == 1


def test_a_copy_keeps_module_attributes():
    text = TEXT.replace("func.func", 'module attributes {lt.origin = "test"} {\nfunc.func', 1) + "}\n"
    s = Schedule(text)
    assert 'lt.origin = "test"' in s.copy().split(0, 4).text


def test_state_keys_are_equal_exactly_when_the_modules_print_the_same():
    """``Schedule.key`` (bytecode) is what neighbours deduplicate by: the
    same moves made twice give equal keys, different results differ, and
    that agrees with comparing printed texts."""
    start = programs.matmul(33, 48, 64)
    a, b = Schedule(start), Schedule(start)
    for s in (a, b):
        s.split(0, 8).swap(2)
    assert a.key == b.key and a.text == b.text
    got = [t for _, t in neighbours(a)]
    for x in got[:8]:
        for y in got[:8]:
            assert (x.key == y.key) == (module_text(x.parsed) == module_text(y.parsed))
