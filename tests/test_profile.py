"""The per-loop profile (lt_mlir/profile.py, lowering/profile.py): the slow
loop gets the largest share, own times add up to the total, the
instrumented build computes what the plain one does, loops entered more than
max_entries times a call are left untimed (their time in their parent's).
The GPU profile: tests/test_profile_gpu.py."""

import re

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.dialect import lt
from lt_mlir.dialect.loop_tree import loop_tree, preorder_loops
from lt_mlir.lowering.profile import define_cycle_counter, instrument_loops
from lt_mlir.profile import LoopProfile, LoopTime, compile_instrumented, profile_loops

# Two sibling nests: L0 doubles 64 elements (cheap), L1/L2 sum exp over
# 256 x 256 elements (about a thousand times the work).
CHEAP = """
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<256xf32>
    %b = arith.addf %a, %a : f32
    memref.store %b, %B[%i] : memref<64xf32>
  }) {dim = "i", size = 64 : i64, tail = 0 : i64} : () -> ()
"""
SLOW = """
  "lt.loop"() ({
  ^bb0(%i1: index):
    %j = "lt.dim"() {dim = "j"} : () -> index
    memref.store %zero, %C[%j] : memref<256xf32>
    "lt.loop"() ({
    ^bb0(%i2: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %x = memref.load %A[%k] : memref<256xf32>
      %y = memref.load %A[%j] : memref<256xf32>
      %p = arith.mulf %x, %y : f32
      %e = math.exp %p : f32
      "lt.reduce"(%e, %C, %j) {kind = "add"} : (f32, memref<256xf32>, index) -> ()
    }) {dim = "k", size = 256 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "j", size = 256 : i64, tail = 0 : i64} : () -> ()
"""


def two_nests(slow_first: bool) -> str:
    body = SLOW + CHEAP if slow_first else CHEAP + SLOW
    return (
        "func.func @two(%A: memref<256xf32>, %B: memref<64xf32>, %C: memref<256xf32>) {\n"
        "  %zero = arith.constant 0.0 : f32\n" + body + "  return\n}\n"
    )


def by_dim(module_text: str) -> dict:
    """L-number of the top loop over each dim."""
    loops = {}
    for line in loop_tree(module_text).splitlines():
        m = re.match(r"\s*for (\w+) in .* : L(\d+)", line)
        if m and m.group(1) not in loops:
            loops[m.group(1)] = int(m.group(2))
    return loops


@pytest.mark.parametrize("slow_first", [False, True])
def test_slow_loop_gets_the_largest_share(slow_first):
    src = two_nests(slow_first)
    p = profile_loops(src, repeat=5)
    n = by_dim(src)
    share = {d: p.loops[i].share for d, i in n.items()}
    assert share["j"] == max(share.values())
    assert share["j"] > 0.9 and share["i"] < 0.1, share
    # the inner loop (256 entries a call: timed under the default bound) holds nearly all of its parent's time
    assert p.loops[n["k"]].timed and p.loops[n["k"]].entries == 256
    assert p.loops[n["k"]].inclusive_s > 0.8 * p.loops[n["j"]].inclusive_s


def test_loops_entered_too_often_are_untimed():
    src = two_nests(slow_first=True)
    n = by_dim(src)
    p = profile_loops(src, repeat=5, max_entries=255)  # k is entered 256 times a call
    k, j, i = p.loops[n["k"]], p.loops[n["j"]], p.loops[n["i"]]
    assert not k.timed and k.entries == 256 and k.within == n["j"]
    assert (k.inclusive_s, k.own_s, k.share) == (0.0, 0.0, 0.0)
    assert j.timed and i.timed and j.entries == i.entries == 1
    # k's time is j's own time now; the own times of the timed loops still sum to the total
    assert j.own_s == j.inclusive_s and j.share > 0.9
    assert sum(l.own_s for l in p.loops if l.timed) == pytest.approx(p.total_s, rel=1e-6)
    assert f"   ·  in L{n['j']} (256 entries a call)" in p.annotate(loop_tree(src))


# The README's tuned clipped matmul with a shorter k: L4 is entered 9 * 512
# = 4608 times a call, L5 four times that: both over the default bound.
TUNED = (
    lt_mlir.Schedule(programs.matmul(33, 48, 512, m_blocks=[4], clipped=True))
    .swap(2).distribute(1).swap(3).vectorize(5, 16).unroll(5).unroll(4).text
)

SCHEDULES = {
    "matmul": programs.matmul(33, 48, 64, m_blocks=[8]),
    "matmul-tuned": TUNED,
    "matmul-parallel": lt_mlir.Schedule(programs.matmul(33, 48, 64, m_blocks=[8])).parallel(0).text,
    "softmax-parallel": lt_mlir.Schedule(programs.softmax(37, 200, n_blocks=[16])).parallel(0).text,
    "conv1d": programs.conv1d(50, 7),
}


@pytest.mark.parametrize("name", ["matmul", "softmax-parallel"])
def test_own_times_add_up_to_the_total(name):
    p = profile_loops(SCHEDULES[name], repeat=5)
    assert len(p.loops) == len(preorder_loops(lt.parse_module(SCHEDULES[name]).operation))
    assert sum(l.own_s for l in p.loops) == pytest.approx(p.total_s, rel=1e-6)
    # inside a parallel loop the counters sum over threads; scaled back to wall time, no own time is negative
    assert all(l.own_s >= -1e-6 * p.total_s for l in p.loops), [(l.index, l.own_s) for l in p.loops]
    assert all(0.0 <= l.share <= 1.0 + 1e-9 for l in p.loops)
    # the cycles the top-level loops counted, at the counter's own rate, are
    # what the clock saw (medians vs means on a shared machine: a loose bound).
    # A parallel loop's counters sum over its threads: when the machine has
    # fewer free cores than threads (pytest-xdist's other worker), threads
    # wait their turn inside it and the sum grows past the wall time, so
    # there only the lower bound holds.
    assert 0.5 * p.total_s < p.counted_s, (p.counted_s, p.total_s)
    if "parallel" not in name:
        # the counters are means over the calls, the total a median: one
        # call descheduled for a few ms (the other xdist worker) inflates
        # the mean ten-fold in a 0.1 ms kernel, so the bound holds for the
        # best of three profiles
        ratios = [p.counted_s / p.total_s]
        while min(ratios) >= 2.0 and len(ratios) < 3:
            q = profile_loops(SCHEDULES[name], repeat=5)
            ratios.append(q.counted_s / q.total_s)
        assert min(ratios) < 2.0, ratios
    assert p.plain_s > 0 and p.overhead == pytest.approx(p.total_s / p.plain_s - 1)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_instrumentation_changes_no_result(name):
    src = SCHEDULES[name]
    plain = lt_mlir.compile(src)
    inst = compile_instrumented(src)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(s.shape).astype(s.dtype) for s in plain.inputs]
    expected, got = plain(*inputs), inst.kernel(*inputs)
    # The same arithmetic in the same order; only where LLVM contracts a
    # multiply and an add into one FMA may differ (the timing calls change its
    # unrolling and vectorization: conv1d's last bits differ on AVX2).
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6 * float(np.abs(expected).max()))
    counters, timed = inst.counters(), np.array(inst.layout.timed)
    assert counters[: inst.layout.loops][timed].min() > 0  # every timed loop ran and was timed
    assert not counters[: inst.layout.loops][~timed].any()
    inst.zero()
    assert not inst.counters().any()


def test_parallel_layout_times_the_parallel_bodies():
    module = lt.parse_module(SCHEDULES["matmul-parallel"])
    layout = instrument_loops(module)
    assert layout.loops == 4 and layout.parents == [None, 0, 1, 2]
    assert layout.concurrent == [True, False, False, False] and layout.bodies == {0: 4} and layout.size == 5
    text = str(module)
    assert text.count("memref.atomic_rmw") == 4  # L1, L2, L3 and L0's bodies: inside the parallel loop
    assert len(re.findall(r"= (?:func\.)?call @lt_cycles\(\)", text)) == 10  # before and after L0..L3 and L0's body
    assert 'memref.global "private" @lt_profile_counters : memref<5xi64> = dense<0>' in text


def test_layout_entries_and_the_bound():
    layout = instrument_loops(lt.parse_module(TUNED))
    # L0: 8 r 1 (9 launches); L1: 4; L2: 48 (under L1); L3: 512 (under L0); L4: 4 (unrolled); L5: 48 (unrolled, vectorized)
    assert layout.parents == [None, 0, 1, 0, 3, 4]
    assert layout.entries == [1, 9, 36, 9, 4608, 18432] and layout.max_entries == 4096
    assert layout.timed == [True, True, True, True, False, False]
    module = lt.parse_module(TUNED)
    assert instrument_loops(module, max_entries=4608).timed == [True] * 5 + [False]
    assert len(re.findall(r"= (?:func\.)?call @lt_cycles\(\)", str(module))) == 10
    # large enough a bound: every loop timed, as before the bound
    module = lt.parse_module(TUNED)
    assert all(instrument_loops(module, max_entries=10**9).timed)
    assert len(re.findall(r"= (?:func\.)?call @lt_cycles\(\)", str(module))) == 12
    # the bound is on the entries, not on where the loops are: untimed inside untimed
    assert instrument_loops(lt.parse_module(TUNED), max_entries=8).timed == [True, False, False, False, False, False]
    with pytest.raises(lt_mlir.CompileError, match="max_entries must be a positive integer"):
        instrument_loops(lt.parse_module(TUNED), max_entries=0)


def test_untimed_loops_under_a_parallel_loop():
    # L0 parallel over 37; L1/L3/L5 (13 launches each) are entered 37 times a call
    module = lt.parse_module(SCHEDULES["softmax-parallel"])
    layout = instrument_loops(module, max_entries=100)
    assert layout.timed == [True, True, False, True, False, True, False] and layout.bodies == {0: 7}
    module = lt.parse_module(SCHEDULES["softmax-parallel"])
    layout = instrument_loops(module, max_entries=36)  # only L0: no timed loop in its bodies, nothing to scale
    assert layout.timed == [True] + [False] * 6 and layout.bodies == {} and layout.size == 7
    text = str(module)
    assert "memref.atomic_rmw" not in text and len(re.findall(r"= (?:func\.)?call @lt_cycles\(\)", text)) == 2
    p = profile_loops(SCHEDULES["softmax-parallel"], repeat=3, max_entries=100)
    assert sum(l.own_s for l in p.loops if l.timed) == pytest.approx(p.total_s, rel=1e-6)
    assert [l.within for l in p.loops] == [None, None, 1, None, 3, None, 5]
    assert all(l.own_s >= -1e-6 * p.total_s for l in p.loops)


def test_every_loop_timed_under_a_large_bound():
    src = SCHEDULES["matmul"]  # L3 is entered 5 * 8 * 48 = 1920 times a call
    p = profile_loops(src, repeat=3, max_entries=10**9)
    assert all(l.timed for l in p.loops) and [l.entries for l in p.loops] == [1, 5, 40, 1920]
    assert all(l.inclusive_s > 0 for l in p.loops)
    assert sum(l.own_s for l in p.loops) == pytest.approx(p.total_s, rel=1e-6)
    assert "·" not in p.annotate(loop_tree(src))
    p = profile_loops(src, repeat=3, max_entries=1919)
    assert [l.timed for l in p.loops] == [True, True, True, False] and p.loops[3].within == 2
    assert p.loops[2].own_s == p.loops[2].inclusive_s > 0


def test_gpu_targets_go_to_the_gpu_profile():
    # (tests/test_profile_gpu.py tests it; an unmapped schedule runs as one-thread launches there)
    p = profile_loops(SCHEDULES["matmul"], target="cuda-emulated", repeat=2)
    assert p.loops[0].timed and p.loops[0].inclusive_s == pytest.approx(p.total_s, rel=0.05)


def test_profile_refuses_bad_inputs_and_taken_names():
    with pytest.raises(lt_mlir.ArgumentError, match="takes 2 input arrays"):
        profile_loops(SCHEDULES["matmul"], inputs=[np.zeros((33, 64), np.float32)])
    taken = SCHEDULES["matmul"] + "func.func private @lt_cycles() -> i64\n"
    with pytest.raises(lt_mlir.CompileError, match="already defines @lt_cycles"):
        compile_instrumented(taken)
    with pytest.raises(lt_mlir.CompileError, match="was the module instrumented"):
        define_cycle_counter("define void @f() {\n  ret void\n}\n")


def test_annotate():
    p = LoopProfile([LoopTime(0, 2e-3, 0.5e-3, 1.0), LoopTime(1, 1.5e-3, 1.5e-3, 0.75)], 2e-3, 1.6e-3, 2.1e-3, 7)
    tree = "for m in 8 : L0\n for k in 4 : L1 [unroll 2]\n  C[m] += %0"
    assert p.annotate(tree).splitlines() == [
        "100.0%     0.500 ms own  for m in 8 : L0",
        " 75.0%     1.500 ms own   for k in 4 : L1 [unroll 2]",
        "                           C[m] += %0",
        "total 2.000 ms per call instrumented, 1.600 ms plain: overhead +25.0% (median of 7 runs)",
    ]
    fast = LoopProfile([LoopTime(0, 2e-6, 2e-6, 1.0)], 2e-6, 1e-6)
    assert fast.annotate("for m in 8 : L0").splitlines()[0] == "100.0%     2.000 us own  for m in 8 : L0"


def test_annotate_untimed():
    loops = [LoopTime(0, 2e-3, 2e-3, 1.0), LoopTime(1, 0.0, 0.0, 0.0, timed=False, entries=36864, within=0)]
    p = LoopProfile(loops, 2e-3, 1.9e-3, 2e-3, 5)
    tree = "for k in 4096 : L0\n for m' in 4 : L1 [unroll full]\n  C[m] += %0"
    # one column width for all: the loop tree stays aligned
    assert p.annotate(tree).splitlines() == [
        "100.0%     2.000 ms own             for k in 4096 : L0",
        "   ·  in L0 (36864 entries a call)   for m' in 4 : L1 [unroll full]",
        "                                      C[m] += %0",
        "total 2.000 ms per call instrumented, 1.900 ms plain: overhead +5.3% (median of 5 runs)",
    ]
