"""Performance cliffs of the lowering, checked by structure (never by time)
on pinned CPUs, so the checks mean the same on every host.

1. A split alone must not change the code: ``lower-lt-to-scf`` runs a chain
   of levels of one dim that nothing came between as one loop
   (``coalesce_levels``).  Lowered as two ``scf.for`` loops, LLVM fully
   unrolled the inner one and vectorized the outer one across strided
   accesses: a 128^3 matmul split ``for n in 8 { for n' in 16 }`` became
   gathers and scatters of C in every k step on AVX-512 CPUs (30x slower),
   and a split k kept C in memory between the unrolled copies.
2. An in-order reduction (default float semantics) whose innermost loop
   runs along it is one dependence chain: the add that carries it must not
   absorb the multiply (an FMA on the chain is 4 cycles a step against 2-3
   for an add), so layernorm's variance runs at the speed of loop_tool's C
   (``mark_in_order_chains``).
"""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.lowering import machine
from lt_mlir.schedule import Schedule

N = 128


def contraction_text(n: int = N) -> str:
    """loop_tool's default schedule of a matmul (the frontend's):
    ``for m { for n: C <- 0 }  for k { for n: C += A*B }`` under m."""
    s = Schedule(programs.matmul(n, n, n))
    s.swap(1)
    return s.text


def layernorm(lt, X, eps: float = 1e-5):
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.r, s.c)
    n = X.shape[1]
    mean = x.sum(s.c) * (1.0 / n)
    d = x - mean
    var = (d * d).sum(s.c) * (1.0 / n)
    return d / (var + eps).sqrt()


def optimized(text: str, cpu: str, fastmath: str | None = None):
    """(LLVM IR after O3, assembly) for ``cpu``, whatever this host is."""
    target = machine.cpu_target(cpu)
    lowered = lt_mlir.compiler.lower(text, cpu=cpu, fastmath=fastmath)
    mod = machine.optimize(lowered.llvm_ir, target)
    body = "\n".join(line for line in str(mod).splitlines() if not line.startswith("; ModuleID"))
    return body, machine.emit_assembly(mod, target)


def split(text: str, loop: int, factor: int) -> str:
    s = Schedule(text)
    s.split(loop, factor)
    return s.text


@pytest.fixture(scope="module")
def unsplit():
    text = contraction_text()
    return text, {cpu: optimized(text, cpu)[0] for cpu in ("skylake-avx512", "znver3")}


@pytest.mark.parametrize("cpu", ["skylake-avx512", "znver3"])
@pytest.mark.parametrize("loop, factor", [(0, 16), (1, 4), (2, 8), (2, 16), (3, 2), (3, 16), (3, 32)])
def test_a_split_alone_compiles_to_the_unsplit_code(unsplit, cpu, loop, factor):
    text, reference = unsplit
    ir_text, _ = optimized(split(text, loop, factor), cpu)
    assert "masked.gather" not in ir_text and "masked.scatter" not in ir_text
    assert ir_text == reference[cpu]


def test_split_n_by_16_keeps_c_in_vector_registers_on_avx512(unsplit):
    """The reported cliff: no gathers or scatters, and no store in the k loop
    (C's row lives in registers while k runs, as unsplit)."""
    text, _ = unsplit
    ir_text, _ = optimized(split(text, 3, 16), "skylake-avx512")
    k_loop = ir_text[ir_text.index(".preheader:"):]
    k_loop = k_loop[: k_loop.index("br i1")]
    assert "store" not in k_loop and "gather" not in k_loop
    assert "fadd contract <8 x float>" in k_loop or "fadd contract <16 x float>" in k_loop


def test_split_chain_keeps_its_levels_when_annotated():
    """An annotation asks for the structure: an unrolled inner level stays a
    level of its own (``lower-lt-to-scf``'s output keeps two loops)."""
    s = Schedule(contraction_text(32))
    s.split(3, 8).unroll(4, 2)
    from lt_mlir.compiler import parse_module
    from lt_mlir.passes.registry import run_pipeline

    module = parse_module(s.text)
    run_pipeline(module, "builtin.module(lower-lt-to-scf)")
    text = str(module)
    # m, the init's n, k, and the two levels of the split n: five loops.
    assert text.count("scf.for") == 5


def test_splits_give_exactly_the_unsplit_numbers():
    rng = np.random.default_rng(7)
    n = 48
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    outs = {}
    for text_fn in (lambda: contraction_text(n), lambda: programs.matmul(n, n, n)):
        base = text_fn()
        for name, text in [("unsplit", base)] + [
            (f"L{loop}/{f}", split(base, loop, f)) for loop in range(Schedule(base).loops()) for f in (5, 16)
        ]:
            C = np.full((n, n), np.nan, np.float32)
            lt_mlir.compile(text)(A, B, C)
            outs[name] = C
        for name, C in outs.items():
            assert np.array_equal(C, outs["unsplit"]), name
        bound = 2 * (n + 1) * np.finfo(np.float32).eps * (np.abs(A).astype(np.float64) @ np.abs(B))
        assert np.all(np.abs(outs["unsplit"] - ref) <= bound)
        outs.clear()


def dot_text() -> str:
    s = lt_mlir.SymbolGenerator()
    X = np.zeros((8, 256), np.float32)
    return (lt_mlir.Tensor(X).to(s.r, s.c) * lt_mlir.Tensor(X).to(s.r, s.c)).sum(s.c).code


@pytest.mark.parametrize("cpu", ["znver3", "haswell", "sapphirerapids"])
def test_in_order_reduction_keeps_the_multiply_off_the_chain(cpu):
    _, asm = optimized(dot_text(), cpu)
    assert "vfmadd" not in asm
    assert "vmulss" in asm and "vaddss" in asm


def test_parallel_accumulators_keep_their_fmas():
    _, asm = optimized(contraction_text(64), "znver3")
    assert "vfmadd231ps" in asm


def test_reassoc_keeps_contraction():
    ir_text, _ = optimized(dot_text(), "znver3", fastmath="reassoc,contract")
    assert "fadd reassoc contract" in ir_text


def test_layernorm_default_is_the_in_order_unfused_result():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((16, 256)).astype(np.float32) * 3 + 1
    t = layernorm(lt_mlir, X)
    outs = {}
    for mode in ("default", "strict"):
        k = lt_mlir.compile(t.code, fastmath=mode)
        Y = np.full(X.shape, np.nan, np.float32)
        k(X, Y)
        outs[mode] = Y
    assert np.array_equal(outs["default"], outs["strict"])
    x = X.astype(np.float64)
    d = x - x.mean(1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(outs["default"], ref, rtol=1e-5, atol=1e-5)
