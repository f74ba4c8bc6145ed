"""lowering/ir_counts.py: what optimised LLVM IR executes, against loops
whose counts are known by hand and against the arithmetic of lt programs."""

import pytest

from lt_mlir import compiler, programs
from lt_mlir.lowering import machine
from lt_mlir.lowering.ir_counts import CHAIN_LATENCY, FORK_CYCLES, SPILL_COST, UNKNOWN_TRIPS, code_key, ir_counts
from lt_mlir.moves import Move, replay
from lt_mlir.schedule import Schedule

# s = sum_i x[i] * 2 over 100 elements, y[i] = s: one chain (the sum), one load, one
# store, two floating-point operations an iteration
ONE_LOOP = """
define void @f(ptr %x, ptr %y) {
entry:
  br label %loop

loop:                                             ; preds = %loop, %entry
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %p = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %p, align 4, !tbaa !1
  %w = fmul float %v, 2.0
  %s.next = fadd float %s, %w
  %q = getelementptr inbounds float, ptr %y, i64 %i
  store float %s.next, ptr %q, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, 100
  br i1 %done, label %exit, label %loop

exit:                                             ; preds = %loop
  ret void
}
"""

# 10 x 25 iterations (the inner loop steps by 4 up to 100), and an inner loop
# whose bound is an argument
NESTED = """
define void @g(ptr %x, i64 %n) {
entry:
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  br label %inner

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %p = getelementptr inbounds float, ptr %x, i64 %j
  %v = load <4 x float>, ptr %p, align 4
  %w = fadd <4 x float> %v, %v
  store <4 x float> %w, ptr %p, align 4
  %j.next = add nuw nsw i64 %j, 4
  %c = icmp samesign ult i64 %j.next, 100
  br i1 %c, label %inner, label %outer.latch

outer.latch:
  %i.next = add nuw nsw i64 %i, 1
  %d = icmp eq i64 %i.next, 10
  br i1 %d, label %tail, label %outer

tail:
  %k = phi i64 [ 0, %outer.latch ], [ %k.next, %tail ]
  %k.next = add nuw nsw i64 %k, 1
  %e = icmp eq i64 %k.next, %n
  br i1 %e, label %exit, label %tail

exit:
  ret void
}
"""


def test_one_loop_counts_each_instruction_per_iteration_and_its_chain():
    c = ir_counts(ONE_LOOP)
    assert c.loops == 1 and c.unknown_trips == 0
    assert c.counts["scalar_loads"] == 100 and c.counts["scalar_stores"] == 100
    assert c.counts["scalar_flops"] == 200 and c.counts["vector_flops"] == 0 and c.counts["lanes"] == 200
    # getelementptr x2, load, fmul, fadd, store, add, icmp: 8 an iteration (phis and branches are not issued work)
    assert c.counts["instructions"] == 800
    # the sum's fadd carries from one iteration to the next: its latency bounds the loop
    assert c.cycles == pytest.approx(100 * CHAIN_LATENCY)


def test_nested_loops_multiply_and_an_unknown_bound_is_counted_as_such():
    c = ir_counts(NESTED)
    assert c.loops == 3 and c.unknown_trips == 1
    assert c.counts["vector_loads"] == 250 and c.counts["vector_stores"] == 250
    assert c.counts["vector_flops"] == 250 and c.counts["lanes"] == 1000
    assert c.static["vector_flops"] == 1
    # the inner body: getelementptr, load, fadd, store, add, icmp; the outer latch: add and
    # icmp, 10 times; the tail loop: add and icmp, UNKNOWN_TRIPS times
    assert c.counts["instructions"] == 250 * 6 + 10 * 2 + UNKNOWN_TRIPS * 2


# A body SLP-vectorised after a full unroll: one <128 x float> add, then its sum
WIDE = """
define float @w(ptr %x) {
  %v = load <128 x float>, ptr %x, align 4
  %w = fadd <128 x float> %v, %v
  %s = tail call reassoc float @llvm.vector.reduce.fadd.v128f32(float 0.0, <128 x float> %w)
  ret float %s
}
"""


@pytest.mark.parametrize("bits, registers, halvings", [(256, 16, 3), (512, 8, 4), (128, 32, 2)])
def test_a_vector_wider_than_the_register_counts_once_a_register(bits, registers, halvings):
    """The backend splits <128 x float> into 128 / (bits / 32) registers:
    the add is that many adds; the reduction adds the registers into one
    (registers - 1 adds), then halves it (a shuffle and an add a halving)."""
    c = ir_counts(WIDE, vector_bits=bits)
    assert c.counts["vector_loads"] == registers
    assert c.counts["lanes"] == 128  # the elements computed do not change
    assert c.counts["vector_flops"] == registers + (registers - 1) + halvings
    assert c.counts["shuffles"] == halvings and c.counts["horizontal"] == 1
    assert c.counts["instructions"] == registers + registers + (registers + 2 * halvings)


# The loop's exit block printed between the entry and the loop (as LLVM
# prints a loop's preheader after it): a forward branch to an earlier
# printed block is no back edge
PRINTED_OUT_OF_ORDER = """
define void @o(ptr %x) {
  br label %loop

done:
  %z = fadd float 1.0, 2.0
  store float %z, ptr %x, align 4
  ret void

loop:
  %i = phi i64 [ 0, %0 ], [ %next, %loop ]
  %p = getelementptr inbounds float, ptr %x, i64 %i
  store float 0.0, ptr %p, align 4
  %next = add nuw nsw i64 %i, 1
  %c = icmp eq i64 %next, 64
  br i1 %c, label %done, label %loop
}
"""


def test_loops_are_found_from_the_control_flow_not_the_printed_order():
    c = ir_counts(PRINTED_OUT_OF_ORDER)
    assert c.loops == 1 and c.unknown_trips == 0
    assert c.counts["scalar_stores"] == 64 + 1 and c.counts["scalar_flops"] == 1


def _lanes(text: str) -> float:
    return ir_counts(str(machine.optimize(compiler.lower(text).llvm_ir))).counts["lanes"]


@pytest.mark.parametrize("moves, extra", [([], 0), (["split_8@L2"], 0), (["split_5@L0"], 0), (["split_4@L2", "unroll@L3"], 0),
                                          (["vectorize_8@L2"], 24 * 32)])
def test_compiled_matmul_executes_its_arithmetic_once(moves, extra):
    """Whatever LLVM makes of a schedule (scalar, unrolled, with a tail), a
    matmul executes 2 m n k floating-point lanes: a multiply and an add for
    each product; with k vectorised, each of the m n sums also adds its
    vector's total (a horizontal reduction, not a lane) into C once."""
    s = replay(Schedule(programs.matmul(24, 32, 16)), [Move.parse(m) for m in moves])
    assert s is not None
    assert _lanes(s.text) == 2 * 24 * 32 * 16 + extra


def test_compiled_row_sum_executes_one_add_an_element():
    assert _lanes(programs.row_sum(48, 96)) == pytest.approx(48 * 96, rel=0.03)


def _accumulators(n: int) -> str:
    """A loop of 64 iterations adding one loaded vector into each of ``n``
    <8 x float> accumulators it carries."""
    phis = "\n".join(f"  %a{j} = phi <8 x float> [ zeroinitializer, %0 ], [ %b{j}, %loop ]" for j in range(n))
    adds = "\n".join(f"  %b{j} = fadd <8 x float> %a{j}, %v" for j in range(n))
    return f"""
define void @acc(ptr %x) {{
  br label %loop

loop:
  %i = phi i64 [ 0, %0 ], [ %next, %loop ]
{phis}
  %p = getelementptr inbounds float, ptr %x, i64 %i
  %v = load <8 x float>, ptr %p, align 4
{adds}
  %next = add nuw nsw i64 %i, 1
  %c = icmp eq i64 %next, 64
  br i1 %c, label %done, label %loop

done:
  ret void
}}
"""


@pytest.mark.parametrize("carried, bits, spilled", [(8, 256, 0), (12, 256, 0), (20, 256, 8), (20, 512, 0), (32, 512, 4)])
def test_a_loop_carrying_more_vectors_than_registers_spills_the_rest(carried, bits, spilled):
    """16 vector registers with AVX2, 32 with AVX-512, 4 (SPARE_REGISTERS) of
    them for the body's operands: each carried vector beyond that is
    stored and loaded again every iteration."""
    c = ir_counts(_accumulators(carried), vector_bits=bits)
    assert c.loops == 1 and c.counts["vector_flops"] == 64 * carried
    assert c.counts["spills"] == 64 * spilled
    assert c.counts["vector_stores"] == 64 * spilled * SPILL_COST
    assert c.counts["vector_loads"] == 64 * (1 + spilled * SPILL_COST)


def _counts(s: Schedule, threads: int):
    """Compiled for an AVX2 CPU whatever this host is, counted with its 256-bit registers."""
    return ir_counts(str(machine.optimize(compiler.lower(s.text).llvm_ir, machine.cpu_target("znver1"))), vector_bits=256, threads=threads)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_parallel_loop_counts_one_thread_s_share_once_a_fork(threads):
    """OpenMP's static schedule hands each of ``threads`` threads a share of
    the 48 rows (the bounds stored before ``__kmpc_for_static_init``): the
    outlined body counts the largest share's arithmetic, once for the one
    fork; the team's time is that thread's, plus FORK_CYCLES."""
    mm = programs.matmul(48, 32, 16)
    serial = _counts(Schedule(mm), 1)
    par = replay(Schedule(mm), [Move.parse("parallel@L0")])
    assert par is not None and "parallel" in par.text
    c = _counts(par, threads)
    share = -(-48 // threads)
    assert c.counts["forks"] == 1 and c.unknown_trips == 0
    assert c.counts["lanes"] == 2 * share * 32 * 16
    assert serial.counts["lanes"] == 2 * 48 * 32 * 16 and serial.counts["forks"] == 0
    assert c.cycles >= FORK_CYCLES and c.cycles - FORK_CYCLES < serial.cycles * share / 48 * 1.2


# A team forked in each of 10 iterations, its body a loop over the share of
# 64 iterations __kmpc_for_static_init hands a thread
FORKED_IN_A_LOOP = """
define void @k(ptr %x) {
  br label %loop

loop:
  %i = phi i64 [ 0, %0 ], [ %next, %loop ]
  call void (ptr, i32, ptr, ...) @__kmpc_fork_call(ptr nonnull @1, i32 1, ptr nonnull @k..omp_par, ptr %x)
  %next = add nuw nsw i64 %i, 1
  %c = icmp eq i64 %next, 10
  br i1 %c, label %done, label %loop

done:
  ret void
}

define internal void @k..omp_par(ptr %tid, ptr %zero, ptr %x) {
omp.par.entry:
  %p.lowerbound = alloca i64, align 8
  %p.upperbound = alloca i64, align 8
  store i64 0, ptr %p.lowerbound, align 8
  store i64 63, ptr %p.upperbound, align 8
  call void @__kmpc_for_static_init_8u(ptr nonnull @2, i32 0, i32 34, ptr null, ptr nonnull %p.lowerbound, ptr nonnull %p.upperbound, ptr null, i64 1, i64 0)
  %lb = load i64, ptr %p.lowerbound, align 8
  %ub = load i64, ptr %p.upperbound, align 8
  br label %body

body:
  %j = phi i64 [ %lb, %omp.par.entry ], [ %j.next, %body ]
  %p = getelementptr inbounds float, ptr %x, i64 %j
  store float 1.0, ptr %p, align 4
  %j.next = add nuw nsw i64 %j, 1
  %e = icmp ugt i64 %j.next, %ub
  br i1 %e, label %exit, label %body

exit:
  ret void
}
"""


@pytest.mark.parametrize("threads, share", [(1, 64), (2, 32), (3, 22)])
def test_a_team_forked_in_a_loop_counts_once_a_fork(threads, share):
    c = ir_counts(FORKED_IN_A_LOOP, threads=threads)
    assert c.counts["forks"] == 10 and c.unknown_trips == 0
    assert c.counts["scalar_stores"] == 10 * (share + 2)  # the body's, and the two bounds a fork
    assert c.cycles >= 10 * FORK_CYCLES


# y = exp(x) over 64 floats, 8 at a time: by LLVM's intrinsic, which the backend
# splits into one libm call a lane (no vector library), or by libmvec's function
VECTOR_EXP = """
define void @e(ptr %x, ptr %y) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %p = getelementptr inbounds float, ptr %x, i64 %i
  %v = load <8 x float>, ptr %p, align 4
  %w = CALL
  %q = getelementptr inbounds float, ptr %y, i64 %i
  store <8 x float> %w, ptr %q, align 4
  %next = add nuw nsw i64 %i, 8
  %done = icmp eq i64 %next, 64
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
"""


@pytest.mark.parametrize("call, calls_a_lane", [("tail call <8 x float> @llvm.exp.v8f32(<8 x float> %v)", True),
                                                ("tail call <8 x float> @_ZGVdN8v_expf(<8 x float> %v)", False)])
def test_a_vector_exp_is_a_libm_call_a_lane_unless_libmvec_s(call, calls_a_lane):
    c = ir_counts(VECTOR_EXP.replace("CALL", call))
    assert c.counts["transcendental"] == (64 if calls_a_lane else 8)
    assert c.counts["element_moves"] == (128 if calls_a_lane else 0)  # a lane out and its result back in


@pytest.mark.skipif(machine.libmvec() is None, reason="no glibc libmvec here")
@pytest.mark.parametrize("cpu", ["znver1", "skylake-avx512"])
def test_the_code_of_a_named_cpu_calls_libmvec_as_a_jit_on_that_host(cpu):
    """space.ir_counts_of compiles for the CPU that measured a schedule:
    softmax's exp vectorised by lt calls libmvec there, one call a register
    (8 rows of 256: 2048 exps), however the IR names the CPU."""
    from lt_mlir.search.space import ir_counts_of
    from lt_mlir.targets import CompileOptions

    lanes = 16 if cpu == "skylake-avx512" else 8
    s = Schedule(programs.softmax(8, 256)).vectorize(3, lanes)
    c = ir_counts_of(s, options=CompileOptions(cpu=cpu))
    exps = 8 * 256
    # the loop lt vectorised: exps / lanes libmvec calls; the other exp loop's lanes as they come
    assert exps / lanes + exps <= c.counts["transcendental"] < 2 * exps


def test_code_key_is_the_code_not_its_names():
    renamed = ONE_LOOP.replace("%s.next", "%acc").replace("loop", "body.7").replace("%i", "%iv").replace("; preds = %body.7, %entry", "")
    assert renamed != ONE_LOOP and code_key(renamed) == code_key(ONE_LOOP)
    assert code_key(ONE_LOOP.replace("2.0", "3.0")) != code_key(ONE_LOOP)  # another constant
    assert code_key(ONE_LOOP.replace("fadd float %s, %w", "fadd float %w, %s")) != code_key(ONE_LOOP)  # operands swapped
    assert code_key(ONE_LOOP.replace("icmp eq i64 %next, 100", "icmp eq i64 %next, 101")) != code_key(ONE_LOOP)
