"""lt_mlir.builder: the one writer of ``lt`` IR text.  What it builds parses
and verifies, compiles and computes what NumPy does; malformed use is a
BuilderError (an LtError) with a clear message, at the call that made it
or, for what only the finished tree shows, at ``text()``."""

import math

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.builder import Builder, BuilderError, levels, memref
from lt_mlir.dialect.lt import parse_module
from lt_mlir.errors import LtError


def test_every_op_parses_and_verifies():
    b = Builder()
    a, s = memref([13, 37], "f32"), memref([13], "f32")
    with b.func("every_op", [("A", a), ("S", s), ("k", memref([], "i64"), "count")], attributes={"lt.fastmath": "fast"}) as (A, S, K):
        ninf = b.constant(-math.inf, "f32", name="ninf")
        half = b.constant(0.5, "f64")
        zero = b.constant(0, "index")
        yes = b.constant(True, "i1")
        T = b.alloc(["m"], s, name="T")
        k = b.cast("index_cast", b.load(K, []), "index")
        with b.loop("m", 13, parallel=True, schedule="dynamic"):
            m = b.dim("m")
            b.store(ninf, T, [m])
            with b.nest("n", 37, [8]) as loops:
                assert [(l.size, l.tail) for l in loops] == [(4, 5), (8, 0)]
                n = b.dim("n")
                x = b.load(A, [m, n])
                y = b.unary("math.exp", b.binary("mulf", x, x))
                keep = b.binary("andi", b.binary("andi", b.cmp("ogt", y, ninf), b.cmp("slt", n, k)), yes)
                guard = b.if_(keep, has_else=True)
                with guard:
                    b.reduce("max", b.select(keep, x, y), T, [m])
                with b.at_end(guard.else_block):
                    wide = b.cast("extf", x, "f64")
                    b.store(b.cast("truncf", b.binary("addf", wide, half), "f32"), A, [m, n])
            with b.for_(zero, k, b.constant(1, "index")) as j:
                b.store(b.load(T, [m]), S, [b.binary("minsi", j, m)])
        with b.loop("v", 16, vectorize=8, unroll=2, gpu="thread"):
            b.dim("v")
    text = b.text()
    assert 'attributes {lt.fastmath = "fast"}' in text and '{lt.name = "count"}' in text
    assert "lt.parallel, lt.schedule = \"dynamic\"" in text and "lt.gpu = \"thread\"" in text
    assert "arith.constant 0xFF800000 : f32" in text and "arith.constant true" in text
    module = parse_module(text)  # parses and verifies (the dialect's verifiers included)
    assert str(module).count('"lt.loop"') == 4


def test_a_built_program_computes_what_numpy_does():
    """S[m] = sum_n max(A[m, n], 0) over n < m + 20, n split 37 by 8 (a
    tail), through a scratch row maximum."""
    M, N = 13, 37
    b = Builder()
    with b.func("clipped_rows", [("A", memref([M, N], "f32")), ("S", memref([M], "f32"))]) as (A, S):
        zero = b.constant(0.0, "f32")
        twenty = b.constant(20, "index")
        with b.loop("m", M):
            m = b.dim("m")
            b.store(zero, S, [m])
            with b.nest("n", N, [8]):
                n = b.dim("n")
                with b.if_(b.cmp("slt", n, b.binary("addi", m, twenty))):
                    b.reduce("add", b.binary("maximumf", b.load(A, [m, n]), zero), S, [m])
    kernel = lt_mlir.compile(b.text())
    A = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    mask = np.arange(N)[None, :] < np.arange(M)[:, None] + 20
    expected = np.where(mask, np.maximum(A, 0), 0).sum(1)
    np.testing.assert_allclose(kernel(A), expected, rtol=1e-5, atol=1e-5)


def test_the_reference_programs_are_built_with_it():
    text = programs.matmul(33, 48, 64, m_blocks=[8], clipped=True)
    parse_module(text)
    assert "tail = 1 : i64" in text and '%q = arith.maximumf %p, %zero : f32' in text


def test_float_formats():
    def const(fmt, value, t="f32"):
        b = Builder(float_format=fmt)
        with b.func("f"):
            b.constant(value, t, name="c")
        return b.text().splitlines()[1].strip()

    assert const("shortest", 0.0) == "%c = arith.constant 0.0 : f32"
    assert const("shortest", 1e-5) == "%c = arith.constant 1.0e-05 : f32"  # MLIR needs the point
    assert const("e17", 0.5, "f64") == "%c = arith.constant 5.00000000000000000e-01 : f64"
    assert const("hex", 1.0) == "%c = arith.constant 0x3F800000 : f32"
    assert const("shortest", math.inf, "f64") == "%c = arith.constant 0x7FF0000000000000 : f64"
    assert const("e17", -math.nan) == "%c = arith.constant 0x7FC00000 : f32"
    for fmt in ("shortest", "e17", "hex"):
        b = Builder(float_format=fmt)
        with b.func("f"):
            for v in (0.1, -2.5e-30, 3.0e38, math.inf, -math.inf, math.nan):
                b.constant(v, "f32")
        parse_module(b.text())


def test_levels():
    assert levels(33, 8) == [(4, 1), (8, 0)]
    assert programs.levels(100, 16, 4) == [(6, 4), (4, 0), (4, 0)]
    with pytest.raises(BuilderError, match="block sizes must be positive and decreasing"):
        levels(10, 16)
    with pytest.raises(ValueError):  # BuilderError is a ValueError too
        levels(0)


# ---------------------------------------------------------------- malformed use


def _func(b: Builder, *args):
    return b.func("f", [(f"a{i}", t) for i, t in enumerate(args)] or [("A", memref([8], "f32"))])


def test_a_tail_not_smaller_than_the_inner_extent_is_refused():
    b = Builder()
    with _func(b):
        with b.loop("i", 4, tail=8):  # one iteration covers 8 elements of i
            with b.loop("i", 8):
                b.dim("i")
    with pytest.raises(BuilderError, match=r"'lt.loop' tail 8 must be smaller than the inner extent 8 of dim 'i'"):
        b.text()
    b = Builder()
    with _func(b):
        with b.loop("i", 4, tail=1):  # no inner level over i: extent 1
            b.dim("i")
    with pytest.raises(BuilderError, match=r"tail 1 must be smaller than the inner extent 1"):
        b.text()


def test_unknown_reduce_kind():
    b = Builder()
    with _func(b) as (A,):
        with b.loop("i", 8):
            i = b.dim("i")
            with pytest.raises(BuilderError, match=r"'lt.reduce' unknown kind 'sum' \(expected one of add, mul, max, min\)"):
                b.reduce("sum", b.load(A, [i]), A, [i])


def test_a_loop_index_used_outside_its_loop():
    b = Builder()
    with _func(b) as (A,):
        with b.loop("i", 8) as index:
            i = b.dim("i")
        with pytest.raises(BuilderError, match=r"'memref.load' uses %i\d+ outside the region that defines it \(the body of an lt.loop"):
            b.load(A, [index])
        with pytest.raises(BuilderError, match=r"uses %d\d+ outside the region that defines it"):
            b.load(A, [i])


def test_dim_outside_a_loop_over_it():
    b = Builder()
    with _func(b):
        with b.loop("i", 8):
            with pytest.raises(BuilderError, match=r"'lt.dim' unknown dim 'j': no enclosing lt.loop iterates it"):
                b.dim("j")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda b, A, i: b.load(A, [i, i]), r"'memref.load' needs 1 indices for memref<8xf32>, got 2"),
        (lambda b, A, i: b.store(i, A, [i]), r"'memref.store' of Value\(%d\d+: index\) into memref<8xf32>: the types differ"),
        (lambda b, A, i: b.binary("addf", i, i), r"'arith.addf' does not take index operands"),
        (lambda b, A, i: b.binary("addf", b.load(A, [i]), i), r"'arith.addf' operands have different types: f32, index"),
        (lambda b, A, i: b.binary("pow", i, i), r"unknown binary op 'pow'"),
        (lambda b, A, i: b.cmp("olt", i, i), r"'arith.cmpi' unknown predicate 'olt'"),
        (lambda b, A, i: b.if_(i), r"'scf.if' condition Value\(%d\d+: index\) is not an i1"),
        (lambda b, A, i: b.constant(1.5, "index"), r"'arith.constant' of type index must be an int, got 1.5"),
        (lambda b, A, i: b.alloc(["m", "m"], memref([2, 2], "f32")), r"'lt.alloc' dims must be distinct"),
        (lambda b, A, i: b.alloc(["m"], memref([2, 2], "f32")), r"'lt.alloc' has 1 dims but its memref memref<2x2xf32> has rank 2"),
        (lambda b, A, i: b.loop("j", 0), r"'lt.loop' size must be positive, got 0"),
        (lambda b, A, i: b.loop("j", 4, -1), r"'lt.loop' tail must not be negative"),
        (lambda b, A, i: b.loop("j", 4, gpu="warp"), r"'lt.loop' gpu must be one of block, thread"),
        (lambda b, A, i: b.loop("j", 4, schedule="dynamic"), r"schedule needs parallel=True"),
        (lambda b, A, i: b.constant(0, "index", name="d" + str(i)[2:]), r"redefinition of SSA value %d\d+"),
        (lambda b, A, i: b.constant(0, "index", name="1x"), r"'%1x' is not a valid SSA name"),
        (lambda b, A, i: b.cast("sitofp", b.load(A, [i]), "f64"), r"'arith.sitofp' cannot convert f32 to f64"),
    ],
)
def test_malformed_use_is_a_builder_error(make, message):
    b = Builder()
    with _func(b) as (A,):
        with b.loop("i", 8):
            i = b.dim("i")
            with pytest.raises(BuilderError, match=message) as e:
                make(b, A, i)
    assert isinstance(e.value, LtError)


def test_ops_need_a_function():
    with pytest.raises(BuilderError, match=r"no insertion point for 'arith.constant': open a function first"):
        Builder().constant(1, "index")


def test_numpy_numbers_and_the_listener():
    seen = []
    b = Builder(listener=lambda op: seen.append(op.name))
    with b.func("f", [("A", memref([np.int64(8)], "f32"))]) as (A,):
        with b.loop("i", np.int64(8), unroll=np.int32(2)):
            i = b.dim("i")
            b.store(b.constant(np.float32(0.5), "f32"), A, [i])
    text = b.text()
    assert "size = 8 : i64" in text and "lt.unroll = 2 : i64" in text and "arith.constant 0.5 : f32" in text
    assert seen == ["lt.loop", "lt.dim", "arith.constant", "memref.store"]
    parse_module(text)
