"""Floating-point modes (README, "Floating point"), checked against NumPy on
NaN and signed-zero inputs, and Python numbers as compile-time constants."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir
import lt_mlir as lt

NAN = np.nan
# every pairing of NaN, signed zeros and ordinary values, in both orders
X = np.array([NAN, 1, -0.0, 0.0, -1, 2, NAN, -0.0, 3, -2.5, 0.0, NAN], np.float32)
Y = np.array([1, NAN, 0.0, -0.0, 0.0, NAN, NAN, -0.0, -3, -2.5, 5, -0.0], np.float32)


@pytest.fixture(autouse=True)
def default_mode():
    yield
    lt.set_fastmath("default")


def run(mode: str, fn: str, dtype=np.float32, constant: float | None = None) -> np.ndarray:
    lt.set_fastmath(mode)
    s = lt.SymbolGenerator()
    a = lt.Tensor(X.astype(dtype)).to(s.n)
    other = constant if constant is not None else lt.Tensor(Y.astype(dtype)).to(s.n)
    return getattr(a, fn)(other).numpy()


def same_bits(got, want) -> bool:
    """Equal values with NaN equal to NaN and -0 distinct from +0."""
    return np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(
        np.nan_to_num(got, nan=7.0), np.nan_to_num(want, nan=7.0)
    ) and np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,ref", [("max", np.maximum), ("min", np.minimum)])
def test_default_propagates_nan_like_numpy(fn, ref, dtype):
    x, y = X.astype(dtype), Y.astype(dtype)
    got = run("default", fn, dtype)
    want = ref(x, y)
    # NaN exactly where NumPy has NaN; equal values elsewhere (the sign of
    # a zero from max(-0, +0) is unspecified: -0 == +0 compares equal)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    for c in (0.0, -1.5):
        got = run("default", fn, dtype, constant=c)
        want = ref(x, dtype(c))
        assert np.array_equal(np.isnan(got), np.isnan(want)), c
        assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)]), c


@pytest.mark.parametrize("fn", ["max", "min"])
def test_strict_is_ieee_maximum(fn):
    """strict: IEEE 754-2019 maximum/minimum — NaN if either is NaN, and
    -0 < +0 (NumPy leaves the order of zeros to the operand order)."""
    got = run("strict", fn)
    pick = np.maximum if fn == "max" else np.minimum
    want = []
    for a, b in zip(X, Y):
        if np.isnan(a) or np.isnan(b):
            want.append(np.float32(NAN))
        elif a == 0 and b == 0:  # the zero with the larger (max) or smaller (min) sign order
            neg = np.signbit(a) and np.signbit(b) if fn == "max" else np.signbit(a) or np.signbit(b)
            want.append(np.float32(-0.0 if neg else 0.0))
        else:
            want.append(pick(a, b))
    assert same_bits(got, np.array(want, np.float32))
    got = run("strict", fn, constant=0.0)
    assert same_bits(got[~np.isnan(X)], np.array([pick(a, np.float32(0.0)) if a != 0 else np.float32(0.0 if fn == "max" else -0.0 if np.signbit(a) else 0.0) for a in X[~np.isnan(X)]]))
    assert np.isnan(got[np.isnan(X)]).all()


@pytest.mark.parametrize("mode", ["nnan,nsz", "fast"])
def test_no_nans_modes_agree_on_ordinary_values(mode):
    """With nnan a NaN input gives an unspecified result; every other input
    still gives NumPy's value."""
    ok = ~np.isnan(X) & ~np.isnan(Y)
    for fn, ref in (("max", np.maximum), ("min", np.minimum)):
        got = run(mode, fn)
        assert np.array_equal(got[ok], ref(X, Y)[ok])
    s = lt.SymbolGenerator()
    lt.set_fastmath(mode)
    a, b = np.random.default_rng(0).standard_normal((2, 8, 64)).astype(np.float32)
    c = (lt.Tensor(a).to(s.m, s.k) * lt.Tensor(b.T.copy()).to(s.k, s.n)).sum(s.k)
    np.testing.assert_allclose(c.numpy(), a @ b.T, rtol=1e-4, atol=1e-4)


def test_mode_is_in_the_module_and_checked():
    lt.set_fastmath("nnan,nsz")
    s = lt.SymbolGenerator()
    t = lt.Tensor(X).to(s.n).max(0.0)
    assert 'attributes {lt.fastmath = "nnan,nsz"}' in t.code
    assert "nnan nsz" in t.llvm
    lt.set_fastmath("default")
    assert "lt.fastmath" not in t.code  # the tensor lowers again for the new mode
    with pytest.raises(lt.FrontendError, match="unknown fastmath mode 'sloppy'"):
        lt.set_fastmath("sloppy")
    with pytest.raises(lt.CompileError, match="unknown fastmath mode"):
        lt.compile(t.code, fastmath="nnan,,fastest")


def test_compile_option_overrides_default():
    s = lt.SymbolGenerator()
    t = lt.Tensor(X).to(s.n).max(lt.Tensor(Y).to(s.n))
    strict = lt.compile(t.code, fastmath="strict")
    out = np.empty_like(X)
    strict(X, Y, out)
    assert np.signbit(out[2]) == 0 and np.signbit(out[3]) == 0  # max(-0, +0) = max(+0, -0) = +0
    assert "nsz" not in strict.llvm_ir and "nsz" in lt.compile(t.code).llvm_ir


def test_python_numbers_are_constants():
    """x.max(0.0), x * 2: constants in the kernel, not 0-d input arrays."""
    s = lt.SymbolGenerator()
    a = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    t = (lt.Tensor(a).to(s.m, s.n) * 1.2).max(0.0) + 1 / 6
    assert "memref<f32>" not in t.code and "read C[]" not in t.loop_tree
    assert len(t.arguments) == 1  # only the array
    np.testing.assert_allclose(t.numpy(), np.maximum(a * np.float32(1.2), 0) + np.float32(1 / 6), rtol=1e-6)
    # 1/6 has no short decimal form: LLVM spells it by its bits (f0x...);
    # 1.2 as a float is 1.2000000476837158: LLVM writes 1.200000e+00
    assert "f0x" not in t.compile().llvm_ir
    u = lt.Tensor(a).to(s.m, s.n).max(lt.Tensor(0.0))  # a tensor is an input, settable later
    assert len(u.arguments) == 2


# math ops without an LLVM intrinsic (erf) call libm; an op the translator
# cannot take is a located CompileError, never a crash of the C translator

_ERF = """
func.func @f(%X: memref<67xf64> {lt.name = "X"}, %Y: memref<67xf64> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %x = memref.load %X[%i] : memref<67xf64>
    %e = math.erf %x : f64
    memref.store %e, %Y[%i] : memref<67xf64>
  }) {dim = "i", size = 67 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


@pytest.mark.parametrize("steps", [[], ["lt-split{loop=0 factor=4}", "lt-vectorize{loop=1 width=4}"]], ids=["scalar", "vector"])
def test_erf_calls_libm_and_matches_it(steps):
    import math

    s = lt_mlir.Schedule(_ERF)
    for step in steps:
        s.apply(step)
    x = np.linspace(-3, 3, 67)
    got = s.compile()(x)
    np.testing.assert_allclose(got, [math.erf(v) for v in x], rtol=1e-15, atol=1e-16)


def test_a_module_not_all_in_llvm_is_refused_before_translation():
    from lt_mlir.errors import CompileError
    from lt_mlir.lowering.llvm import translate_to_llvm_ir

    module = lt_mlir.parse_module('func.func @g(%a: f32) -> f32 {\n  %b = math.erf %a : f32\n  return %b : f32\n}\n')
    with pytest.raises(CompileError, match=r"^-:2:8: error: math.erf has no lowering to LLVM IR on this target"):
        translate_to_llvm_ir(module)


def test_half_constants_without_a_short_decimal_compile_exactly():
    """f16 constants such as 0.1 (LLVM writes 9.997550e-02, which the
    parser refuses as inexact for ``half``) reach the kernel with the f16
    value NumPy rounds them to."""
    values = [0.1, 1 / 3, 65504.0, 6e-8, -2.5, float("-inf")]
    body = "\n".join(
        f"    %c{j} = arith.constant {v:.17e} : f16\n"
        f"    %s{j} = arith.addf {'%a' if j == 0 else f'%s{j - 1}'}, %c{j} : f16" for j, v in enumerate(values[:-1])
    )
    text = f"""
func.func @f(%A: memref<8xf16>, %B: memref<8xf16>, %C: memref<8xf16>) {{
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    %a = memref.load %A[%i] : memref<8xf16>
{body}
    memref.store %s{len(values) - 2}, %B[%i] : memref<8xf16>
    %n = arith.constant 0xFC00 : f16
    %m = arith.maximumf %a, %n : f16
    memref.store %m, %C[%i] : memref<8xf16>
  }}) {{dim = "i", size = 8 : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""
    a = np.arange(8, dtype=np.float16)
    b, c = lt.compile(text, fastmath="strict")(a)
    expected = a.copy()
    for v in values[:-1]:
        expected = expected + np.float16(v)
    np.testing.assert_array_equal(b, expected)
    np.testing.assert_array_equal(c, a)
