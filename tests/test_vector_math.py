"""Vector exp/log/erf/tanh in JIT code: glibc's libmvec variants
(``lowering.llvm.use_vector_math``), checked against float64 NumPy/SciPy
on ordinary and special values, and left out in strict mode; f32 erf as
inline polynomials (``lowering.erf``), checked on a dense sample of every
binade."""

import numpy as np
import pytest

import lt_mlir
from lt_mlir.lowering import machine

scipy_special = pytest.importorskip("scipy.special")

ABI = machine.vector_math_abi(machine.cpu_target())
needs_libmvec = pytest.mark.skipif(ABI is None, reason="this host has no AVX2/AVX-512F or no glibc libmvec")

FUNCTIONS = {
    "exp": np.exp,
    "log": np.log,
    "erf": scipy_special.erf,
    "tanh": np.tanh,
}


def _kernel_text(fn: str, n: int, element: str) -> str:
    return f"""
func.func @f(%A: memref<{n}x{element}>, %B: memref<{n}x{element}>) {{
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    %a = memref.load %A[%i] : memref<{n}x{element}>
    %e = math.{fn} %a : {element}
    memref.store %e, %B[%i] : memref<{n}x{element}>
  }}) {{dim = "i", size = {n} : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""


def _vectorized(fn: str, element: str = "f32", n: int = 1024, **options):
    width = lt_mlir.get_target("cpu").vector_width(4 if element == "f32" else 8)
    s = lt_mlir.Schedule(_kernel_text(fn, n, element)).vectorize(0, width)
    return lt_mlir.compile(s.module, **options)


def _inputs(fn: str, dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    if fn == "log":
        x = np.exp(rng.uniform(-80, 80, 1000))
        special = [0.0, 1.0, np.inf, np.nan, -1.0, np.finfo(dtype).tiny]
    else:
        x = rng.uniform(-20, 20, 1000) if fn != "exp" else rng.uniform(-100, 88, 1000)
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30]
    x = np.concatenate([special, x, np.zeros(1024 - 1000 - len(special))]).astype(dtype)
    return x


@needs_libmvec
@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
@pytest.mark.parametrize("element", ["f32", "f64"])
def test_vector_variant_called_and_accurate(fn, element):
    dtype = np.float32 if element == "f32" else np.float64
    k = _vectorized(fn, element)
    if fn == "erf" and element == "f32":  # inline polynomials (lowering/erf.py), no call at all
        assert "_ZGV" not in k.llvm_ir and "erff" not in k.llvm_ir
    else:
        assert "_ZGV" in k.llvm_ir, "the vector loop should call libmvec"
    x = _inputs(fn, dtype)
    with np.errstate(all="ignore"):
        got = k(x)
        ref = FUNCTIONS[fn](x.astype(np.float64))
    both_nan = np.isnan(got) & np.isnan(ref)
    assert np.array_equal(np.isnan(got), np.isnan(ref)), x[np.isnan(got) != np.isnan(ref)]
    finite = np.isfinite(ref) & ~both_nan
    assert np.array_equal(got[~finite & ~both_nan], ref[~finite & ~both_nan].astype(dtype))  # +-inf exactly
    ulp = np.spacing(np.abs(ref[finite]).astype(dtype)).astype(np.float64)
    ulp = np.maximum(ulp, np.finfo(dtype).smallest_subnormal)
    err = np.abs(got[finite].astype(np.float64) - ref[finite]) / ulp
    assert err.max() <= 4, f"{fn} {element}: {err.max():.1f} ulp at x = {x[finite][err.argmax()]}"


@needs_libmvec
def test_strict_mode_keeps_libm():
    """strict: each lane calls libm's scalar function (the IEEE-faithful
    one), so results equal the scalar loop's bit for bit."""
    k = _vectorized("erf", fastmath="strict")
    assert "_ZGV" not in k.llvm_ir
    scalar = lt_mlir.compile(_kernel_text("erf", 1024, "f32"), fastmath="strict")
    x = _inputs("erf", np.float32)
    np.testing.assert_array_equal(k(x), scalar(x))


def test_aot_object_needs_no_libmvec(tmp_path):
    """An AOT library links with libm only: its code calls no libmvec function."""
    s = lt_mlir.Schedule(_kernel_text("exp", 64, "f32")).vectorize(0, 8)
    paths = lt_mlir.compile_aot(s.module, str(tmp_path / "k"), shared=False)
    data = open(paths["object"], "rb").read()
    assert b"_ZGV" not in data


def test_not_for_another_cpu():
    """Code for a named CPU (not this host's JIT) keeps libm's calls: the
    vector variant is looked up in this process's libmvec."""
    assert machine.vector_math_abi(machine.cpu_target("znver3")) is None


@pytest.mark.skipif(machine.libmvec() is None, reason="no glibc libmvec here")
def test_what_a_jit_on_a_named_cpu_would_call():
    """``bits``: the functions a JIT on a host of a named CPU calls (for IR
    that is read, not run: the cost model's), by its vector register."""
    avx2 = machine.vector_math_abi(machine.cpu_target("znver1"), 256)
    assert avx2("expf", 8, 32) == "_ZGVdN8v_expf" and avx2("expf", 16, 32) is None
    avx512 = machine.vector_math_abi(machine.cpu_target("skylake-avx512"), 512)
    assert avx512("expf", 16, 32) == "_ZGVeN16v_expf" and avx512("exp", 4, 64) == "_ZGVdN4v_exp"
    assert machine.vector_math_abi(machine.cpu_target("x86-64"), 128) is None


@needs_libmvec
def test_what_is_shown_and_profiled_is_what_runs(tmp_path):
    """lt-opt --emit=llvm and the per-loop profile's instrumented build have
    the JIT's vector math calls, as the kernel compile() runs does; code
    for a named CPU (--mcpu) keeps libm's."""
    import subprocess
    import sys

    from lt_mlir.profile import compile_instrumented

    s = lt_mlir.Schedule(_kernel_text("exp", 64, "f32")).vectorize(0, 8)
    assert "_ZGV" in lt_mlir.compile(s.module).llvm_ir
    assert "_ZGV" in compile_instrumented(s.module).kernel.llvm_ir
    path = tmp_path / "k.mlir"
    path.write_text(s.text)
    lt_opt = [sys.executable, "-m", "lt_mlir.tools.lt_opt", str(path), "--emit=llvm"]
    assert "_ZGV" in subprocess.run(lt_opt, check=True, capture_output=True, text=True).stdout
    named = subprocess.run([*lt_opt, "--mcpu=znver3"], check=True, capture_output=True, text=True).stdout
    assert "_ZGV" not in named and "llvm.exp" in named


def _erf_ulps(k, x):
    got = k(x).astype(np.float64)
    ref = scipy_special.erf(x.astype(np.float64))
    ulp = np.maximum(np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64), np.finfo(np.float32).smallest_subnormal)
    return np.abs(got - ref) / ulp


@pytest.mark.parametrize("vector", [True, False])
def test_erf_f32_inline_polynomials(vector):
    """f32 erf is ``lowering.erf``'s polynomials, vector or scalar, JIT or
    another CPU: every 4099th positive float (all binades, the region
    boundaries 1 and 3.9192059 and their neighbours) within 2 ulp of
    float64 SciPy (the fit's bound is 1.45 ulp; the contract is 4), odd,
    exact at 0, ±inf and NaN."""
    n = 1 << 20
    text = _kernel_text("erf", n, "f32")
    k = lt_mlir.compile(lt_mlir.Schedule(text).vectorize(0, 16).module if vector else text)
    assert "erff" not in k.llvm_ir
    bits = np.arange(0, np.float32(np.inf).view(np.int32), 4099, dtype=np.int32)
    x = bits.view(np.float32)
    edges = np.array([1.0, 2.2, 3.9192059, 0.5, 1e-30, 2e-38], np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges, np.float32(9))])
    x = np.concatenate([edges, x])
    errs = []
    for lo in range(0, len(x), n):
        chunk = x[lo:lo + n]
        padded = np.concatenate([chunk, np.zeros(n - len(chunk), np.float32)])
        errs.append(_erf_ulps(k, padded)[: len(chunk)])
        np.testing.assert_array_equal(k(-padded), -k(padded))  # odd, -0 included
    err = np.concatenate(errs)
    assert err.max() <= 2, f"{err.max():.2f} ulp at x = {x[err.argmax()]}"
    special = np.zeros(n, np.float32)
    special[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    out = k(special)
    assert out[0] == 0 and not np.signbit(out[0]) and out[1] == 0 and np.signbit(out[1])
    assert out[2] == 1 and out[3] == -1 and np.isnan(out[4])


def test_erf_f32_same_bits_on_another_cpu():
    """The polynomials are fma by fma: code for AVX2 (haswell) gives the
    JIT's results bit for bit."""
    text = _kernel_text("erf", 4096, "f32")
    x = np.random.default_rng(1).uniform(-5, 5, 4096).astype(np.float32)
    here = lt_mlir.compile(lt_mlir.Schedule(text).vectorize(0, 8).module)(x)
    avx2 = lt_mlir.compile(lt_mlir.Schedule(text).vectorize(0, 8).module, cpu="haswell")(x)
    np.testing.assert_array_equal(here, avx2)


def _erf_of_quotient_text(n: int, c: float) -> str:
    return f"""
func.func @f(%A: memref<{n}xf32>, %B: memref<{n}xf32>) {{
  %c = arith.constant {c!r} : f32
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    %a = memref.load %A[%i] : memref<{n}xf32>
    %q = arith.divf %a, %c : f32
    %e = math.erf %q : f32
    memref.store %e, %B[%i] : memref<{n}xf32>
  }}) {{dim = "i", size = {n} : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""


@pytest.mark.parametrize("c", [1.4142135381698608, -3.0, 0.7])
@pytest.mark.parametrize("vector", [True, False])
def test_erf_of_a_quotient_by_a_constant_multiplies(c, vector):
    """GELU's ``erf(x / sqrt(2))``: the division by a constant becomes a
    multiply by its float32 reciprocal (no ``fdiv`` left), and the result
    stays within 3 ulp of float64 SciPy's erf of the float32 quotient, on
    every 4099th positive float and its negative; strict mode keeps the
    division."""
    n = 1 << 20
    text = _erf_of_quotient_text(n, c)
    k = lt_mlir.compile(lt_mlir.Schedule(text).vectorize(0, 16).module if vector else text)
    assert "fdiv" not in k.llvm_ir
    x = np.arange(0, np.float32(np.inf).view(np.int32), 4099, dtype=np.int32).view(np.float32)
    x = np.concatenate([x, -x])
    worst = 0.0
    for lo in range(0, len(x), n):
        chunk = x[lo:lo + n]
        padded = np.concatenate([chunk, np.zeros(n - len(chunk), np.float32)])
        q = padded / np.float32(c)  # float32 division, rounded as the program's divf would
        ref = scipy_special.erf(q.astype(np.float64))
        got = k(padded).astype(np.float64)
        ulp = np.maximum(np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64), np.finfo(np.float32).smallest_subnormal)
        err = (np.abs(got - ref) / ulp)[: len(chunk)]
        worst = max(worst, float(err.max()))
    assert worst <= 3, f"{worst:.2f} ulp"
    strict = lt_mlir.compile(text, fastmath="strict")
    assert "fdiv" in strict.llvm_ir
