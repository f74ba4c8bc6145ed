"""The Schedule API: the same passes as lt-opt, undo, figures."""

import numpy as np
import pytest

import lt_mlir
from lt_mlir import Schedule, programs
from lt_mlir.passes.registry import run_pipeline


def test_flops_count_every_executed_float_op_including_tails():
    # clipped matmul: mul, max, add per (m, n, k) point; splits and tails keep the count
    s = lt_mlir.Schedule(programs.matmul(33, 48, 64, m_blocks=[8], k_blocks=[10, 3], clipped=True))
    assert s.flops() == 3 * 33 * 48 * 64
    s.swap(2)  # n <-> k: the initialisation gets its own n loop
    assert s.flops() == 3 * 33 * 48 * 64
    assert lt_mlir.Schedule(programs.pointwise_add(1000, [16, 3])).flops() == 1000


def test_schedule_is_a_pipeline_and_matches_lt_opt():
    s = lt_mlir.Schedule(programs.matmul(33, 48, 64))
    s.split(0, 8).swap(2).vectorize(4, 16).unroll(3, 4)
    assert s.pipeline == (
        "builtin.module(lt-split{loop=0 factor=8}, lt-swap{loop=2}, lt-vectorize{loop=4 width=16}, "
        "lt-unroll{loop=3 factor=4})"
    )
    module = lt_mlir.parse_module(programs.matmul(33, 48, 64))
    run_pipeline(module, s.pipeline)
    assert lt_mlir.loop_tree(module) == s.loop_tree
    A = np.random.default_rng(0).standard_normal((33, 64)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    np.testing.assert_allclose(s.compile()(A, B), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_refused_move_leaves_the_schedule_unchanged_and_undo_steps_back():
    s = lt_mlir.Schedule(programs.matmul(8, 8, 8))
    before = s.loop_tree
    with pytest.raises(lt_mlir.PassError, match="lt-split: factor 9 exceeds the 8 iterations of L0"):
        s.split(0, 9)
    assert s.loop_tree == before and s.steps == []
    s.split(0, 4)
    assert s.loop_tree != before
    s.undo()
    assert s.loop_tree == before
    with pytest.raises(lt_mlir.LtError, match="nothing to undo"):
        s.undo()


def test_scratch_bytes():
    text = """
func.func @f(%A: memref<4x6xf32>, %B: memref<4x6xf32>) {
  %t = "lt.alloc"() {dims = ["m", "n"]} : () -> memref<4x6xf32>
  "lt.loop"() ({
  ^bb0(%i: index):
    "lt.loop"() ({
    ^bb0(%j: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<4x6xf32>
      memref.store %a, %t[%m, %n] : memref<4x6xf32>
      %b = memref.load %t[%m, %n] : memref<4x6xf32>
      memref.store %b, %B[%m, %n] : memref<4x6xf32>
    }) {dim = "n", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""
    assert lt_mlir.Schedule(text).scratch_bytes() == 4 * 6 * 4


def test_refusals_name_the_loop_and_the_line_that_asked():
    """From Python a refusal names the loop (not a line of IR the user
    never saw) and the line of the user's code that made the move."""
    import inspect

    s = Schedule(programs.matmul(33, 48, 64))
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(lt_mlir.PassError) as info:
        s.split(0, 0)
    assert str(info.value) == f'{__file__}:{line}: error: lt-split: L0 "for m in 33": factor must be at least 1, got 0'
    with pytest.raises(lt_mlir.PassError, match=r'test_schedule.py:\d+: error: lt-swap: L2 "for k in 64" has no inner loop to swap with$'):
        s.swap(2)
    assert s.steps == []


def test_move_options_are_type_checked():
    """``s.split(0, "4")`` is refused as lt-opt refuses ``factor=four``."""
    s = Schedule(programs.matmul(8, 8, 8))
    with pytest.raises(lt_mlir.PassError, match=r"option 'factor' takes an integer, got str '4'"):
        s.split(0, "4")
    with pytest.raises(lt_mlir.PassError, match=r"option 'loop' takes an integer, got bool True"):
        s.swap(True)
    with pytest.raises(lt_mlir.PassError, match=r"option 'to' takes a word, got str 'block thread'"):
        s.gpu_map(0, "block thread")
    assert s.split(0, np.int64(4)).steps == ["lt-split{loop=0 factor=4}"]


def test_every_public_schedule_method_documents_itself():
    for name, member in vars(Schedule).items():
        if not name.startswith("_") and callable(member):
            assert member.__doc__ and len(member.__doc__.split()) >= 5, name


def test_unroll_of_a_vectorized_loop_counts_vectors():
    """96 iterations in vectors of 16 are 6 vectors: full unrolling is
    allowed (6 vector bodies) and the factor is checked against 6."""
    s = Schedule(programs.pointwise_add(96)).vectorize(0, 16).unroll(0)
    assert "[unroll full, vectorize 16]" in s.loop_tree
    a, b = np.arange(96, dtype=np.float32), np.ones(96, np.float32)
    np.testing.assert_array_equal(s.compile()(a, b), a + b)
    with pytest.raises(lt_mlir.PassError, match="factor 7 exceeds the 6 vectors of 16 of L0"):
        Schedule(programs.pointwise_add(96)).vectorize(0, 16).unroll(0, 7)


def test_a_schedule_keeps_its_moves_and_replaying_them_gives_the_same_module():
    """``Schedule.moves``: what a search mutates.  A recipe's moves replayed
    from the start give the same module (bytecode-equal); a raw pipeline
    element is not a move, so the list is then None."""
    from lt_mlir import recipes
    from lt_mlir.moves import replay

    start = programs.matmul(48, 64, 32)
    s = Schedule(start).distribute(1).swap(2)
    recipes.register_tile(s, vectors=1, width=8)
    assert [str(m) for m in s.moves][:2] == ["distribute@L1", "swap_down@L2"]
    again = replay(Schedule(start), s.moves)
    assert again is not None and again.key == s.key and again.pipeline == s.pipeline
    s.apply("lt-canonicalize")
    assert s.moves is None


def test_unverified_moves_skip_the_verifier_only_inside_the_block(monkeypatch):
    """Moves under ``unverified_moves`` (a recipe's many internal moves) run
    their passes without the verifier, on every schedule and on copies;
    outside, and after the block ends with an error, they verify again;
    the result is the same IR, and ``verify`` checks it once."""
    from lt_mlir import schedule as schedule_module

    seen = []

    def recording(module, pipeline, restore=True, verify=True):
        seen.append(verify)
        return run_pipeline(module, pipeline, restore=restore, verify=verify)

    monkeypatch.setattr(schedule_module, "run_pipeline", recording)
    checked = Schedule(programs.matmul(33, 48, 64)).split(0, 8).swap(2)
    assert seen == [True, True]
    s = Schedule(programs.matmul(33, 48, 64))
    with schedule_module.unverified_moves():
        s.split(0, 8)
        s.copy().swap(2)
        s.swap(2)
    assert seen[2:] == [False, False, False]
    assert s.verify().loop_tree == checked.loop_tree
    with pytest.raises(lt_mlir.PassError), schedule_module.unverified_moves():
        s.split(0, 1000)
    s.unroll(3, 4)
    assert seen[-2:] == [False, True]
