"""lt_mlir.targets: the registry of targets, each target's attributes
checked against what compiling with it does, CompileOptions, the keyword
form of ``lt_mlir.compile``, and registering a target of one's own."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import binding as llvm

import lt_mlir
from lt_mlir import programs
from lt_mlir.errors import CompileError
from lt_mlir.lowering.machine import host_vector_width
from lt_mlir.passes.registry import parse_pipeline
from lt_mlir.runtime.cuda import CudaKernel
from lt_mlir.runtime.kernel import Kernel
from lt_mlir.schedule import Schedule
from lt_mlir.targets import TARGETS, CompileOptions, Lowered, Target, get_target, register_target, unregister_target

NAMES = ("cpu", "cuda", "cuda-emulated")
UNKNOWN = "error: unknown target 'metal' (targets: cpu, cuda, cuda-emulated)"

# name -> (gpu_mapping, cpu_threads, on_device, native, lowering)
ATTRIBUTES = {
    "cpu": (False, True, False, True, "lower-lt-to-scf"),
    "cuda": (True, False, True, False, "lower-lt-to-gpu"),
    "cuda-emulated": (True, False, False, True, "lower-lt-to-gpu{emulate=1}"),
}

M, N, K = 8, 16, 12


def matmul_inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)


def gpu_mapped() -> str:
    return Schedule(programs.pointwise_add(1000)).gpu_auto().text


def on_x86() -> bool:
    return llvm.get_process_triple().startswith("x86_64")


# ------------------------------------------------------------ the registry


def test_every_target_by_name():
    assert tuple(TARGETS) == NAMES
    for name in NAMES:
        t = get_target(name)
        assert isinstance(t, Target) and t.name == name and TARGETS[name] is t
        assert get_target(t) is t  # a Target passes through
        assert lt_mlir.get_target(name) is t


@pytest.mark.parametrize("bad", ["metal", "CPU", "", None, 3])
def test_unknown_target_has_one_message(bad):
    with pytest.raises(CompileError) as e:
        get_target(bad)
    assert str(e.value) == UNKNOWN.replace("'metal'", f"'{bad}'")


def test_unknown_target_is_the_same_error_everywhere(tmp_path):
    src = programs.pointwise_add(4)
    for call in (
        lambda: lt_mlir.compile(src, target="metal"),
        lambda: lt_mlir.lower(src, target="metal"),
        lambda: lt_mlir.compile_aot(src, str(tmp_path / "x"), target="metal"),
    ):
        with pytest.raises(CompileError) as e:
            call()
        assert str(e.value) == UNKNOWN


@pytest.mark.parametrize("name", NAMES)
def test_attributes(name):
    t = get_target(name)
    assert (t.gpu_mapping, t.cpu_threads, t.on_device, t.native, t.lowering) == ATTRIBUTES[name]
    (stage,) = parse_pipeline(t.lowering)  # a registered lt lowering pass
    assert stage.lt_pass is not None and stage.lt_pass.name == t.lowering.split("{")[0]


# ------------------------------------------------------------ attributes = behaviour


def test_cpu_kernel_runs_and_matches_numpy():
    a, b = matmul_inputs()
    kernel = get_target("cpu").compile(programs.matmul(M, N, K), None, CompileOptions())
    assert isinstance(kernel, Kernel)
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_gpu_mapping_says_which_targets_compile_mapped_loops(name):
    t = get_target(name)
    text = gpu_mapped()
    if not t.gpu_mapping:
        with pytest.raises(CompileError, match="GPU-mapped loops compile for target cuda"):
            t.compile(text)
        return
    kernel = t.compile(text)
    if not t.on_device:  # cuda-emulated: runs here
        a, b = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
        np.testing.assert_array_equal(kernel(a, b), a + b)


@pytest.mark.parametrize("name", NAMES)
def test_cpu_threads_says_which_targets_run_lt_parallel(name, monkeypatch):
    monkeypatch.setenv("LT_PARALLEL_MIN_WORK", "0")  # threads even for a loop this small
    t = get_target(name)
    text = Schedule(programs.matmul(16, 16, 16)).parallel(0).text
    if t.cpu_threads:
        assert t.lower(text).openmp  # calls the OpenMP runtime
        a = np.ones((16, 16), np.float32)
        np.testing.assert_array_equal(t.compile(text)(a, a), a @ a)
    else:
        with pytest.raises(CompileError, match="lt.parallel runs a loop on CPU threads"):
            t.compile(text)


@pytest.mark.parametrize("name", NAMES)
def test_native_and_on_device(name):
    """native targets lower to host LLVM IR and give kernels that run here;
    on_device ones give PTX in a CudaKernel, built without a GPU."""
    t = get_target(name)
    text = gpu_mapped() if t.gpu_mapping else programs.pointwise_add(1000)
    kernel = lt_mlir.compile(text, target=name)
    if t.native:
        lowered = lt_mlir.lower(text, target=name)
        assert isinstance(lowered, Lowered) and "define void @add" in lowered.llvm_ir
        assert isinstance(kernel, Kernel)
    else:
        with pytest.raises(CompileError, match=rf"^error: lower\(\) makes host LLVM IR, which target '{name}' does not"):
            lt_mlir.lower(text, target=name)
    if t.on_device:
        assert isinstance(kernel, CudaKernel) and ".target sm_90" in kernel.ptx
        assert t.lower(text).ptx == lt_mlir.compiler.lower_cuda(text).ptx
    else:
        assert not isinstance(kernel, CudaKernel)


def test_vector_widths():
    cpu, cuda = get_target("cpu"), get_target("cuda")
    for nbytes in (4, 8):
        assert cpu.vector_width(nbytes) == host_vector_width(nbytes)
        assert cpu.vector_width(nbytes, CompileOptions()) == host_vector_width(nbytes)
        assert get_target("cuda-emulated").vector_width(nbytes) == host_vector_width(nbytes)
    assert cuda.vector_width(4) == 4 and cuda.vector_width(8) == 2  # ld.global.v4: 16 bytes
    if on_x86():  # the width of a CPU asked for, whatever this host is
        assert cpu.vector_width(4, CompileOptions(cpu="x86-64-v3")) == 8
        assert cpu.vector_width(8, CompileOptions(cpu="x86-64-v3")) == 4
        assert cpu.vector_width(4, CompileOptions(cpu="x86-64-v4", features="-prefer-256-bit")) == 16
        assert cpu.vector_width(4, CompileOptions(cpu="x86-64")) == 4
        assert cpu.vector_width(4, CompileOptions(cpu="x86-64-v3", features="-avx")) == 4


def test_compile_aot_where_supported(tmp_path):
    paths = get_target("cpu").compile_aot(programs.pointwise_add(16), str(tmp_path / "cpu" / "add"), shared=False)
    assert sorted(paths) == ["header", "object"]
    paths = lt_mlir.compile_aot(gpu_mapped(), str(tmp_path / "gpu" / "add"), target="cuda", arch="sm_80")
    assert sorted(paths) == ["json", "ptx"]
    assert ".target sm_80" in open(paths["ptx"]).read()


# ------------------------------------------------------------ options


def test_compile_options_are_values():
    a = CompileOptions(cpu="znver2", fastmath="fast", check_bounds=False)
    b = CompileOptions(cpu="znver2", fastmath="fast", check_bounds=False)
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert len({a, b, CompileOptions()}) == 2
    assert a != CompileOptions(cpu="znver2", fastmath="fast")
    assert CompileOptions(cpu="host") == CompileOptions(cpu="native") == CompileOptions()  # one spelling of the host
    assert CompileOptions(features="") == CompileOptions()
    assert {(programs.pointwise_add(4), "cpu", a): 1}[(programs.pointwise_add(4), "cpu", b)] == 1  # a cache key
    assert a.replace(opt=1) == CompileOptions(cpu="znver2", fastmath="fast", check_bounds=False, opt=1)
    with pytest.raises(Exception):
        a.cpu = "x"  # frozen
    assert CompileOptions.fields() == ("cpu", "features", "fastmath", "arch", "check_bounds", "opt")


def test_bad_option_values():
    with pytest.raises(CompileError, match="opt must be an optimisation level 0-3, got 4"):
        CompileOptions(opt=4)
    with pytest.raises(CompileError, match="check_bounds must be True or False"):
        CompileOptions(check_bounds="no")
    with pytest.raises(CompileError, match="cpu must be a string"):
        CompileOptions(cpu=3)


def test_keyword_form_of_compile_still_works():
    a, b = matmul_inputs(1)
    src = programs.matmul(M, N, K)
    want = a.astype(np.float64) @ b
    for kernel in (
        lt_mlir.compile(src),
        lt_mlir.compile(src, "matmul", "mm.mlir"),  # entry and filename stay positional
        lt_mlir.compile(src, check_bounds=False, fastmath="strict", cpu=None, features=None),
        lt_mlir.compile(src, target="cuda-emulated", check_bounds=True),
        lt_mlir.compile(src, target=get_target("cpu"), options=CompileOptions(fastmath="strict")),
    ):
        np.testing.assert_allclose(kernel(a, b), want, rtol=1e-5, atol=1e-5)
    strict = lt_mlir.compile(src, fastmath="strict")
    assert "contract" not in strict.llvm_ir


def test_keywords_replace_fields_of_options():
    src = programs.matmul(M, N, K)
    fast = CompileOptions(fastmath="fast")
    assert "fast" in lt_mlir.compile(src, options=fast).llvm_ir
    assert "fast" not in lt_mlir.compile(src, options=fast, fastmath="strict").llvm_ir


def test_opt_level_reaches_llvm():
    src = programs.matmul(M, N, K)
    o0, o3 = lt_mlir.compile(src, opt=0), lt_mlir.compile(src)
    assert o0.llvm_ir != o3.llvm_ir
    a, b = matmul_inputs(2)
    np.testing.assert_allclose(o0(a, b), o3(a, b), rtol=1e-5, atol=1e-5)


def test_unknown_option_keyword_is_named():
    src = programs.pointwise_add(4)
    for call in (
        lambda: lt_mlir.compile(src, fastmth="fast"),
        lambda: lt_mlir.lower(src, fastmth="fast"),
        lambda: lt_mlir.compiler.lower_cuda(src, fastmth="fast"),
        lambda: CompileOptions.build(fastmth="fast"),
    ):
        with pytest.raises(CompileError, match=re.escape("error: unknown compile option 'fastmth' (options: cpu, features, fastmath, arch, check_bounds, opt)")):
            call()


# ------------------------------------------------------------ a target of one's own


class Toy(Target):
    """Runs nothing: records what it was asked to compile."""

    name = "toy"
    lowering = "lower-lt-to-scf"

    def __init__(self):
        self.calls = []

    def vector_width(self, element_bytes=4, options=None):
        return 1

    def compile(self, module_or_text, entry=None, options=None, filename="-"):
        self.calls.append((entry, options, filename))
        return "toy kernel"


@pytest.fixture
def toy():
    t = register_target(Toy())
    try:
        yield t
    finally:
        unregister_target(t.name)


def test_registered_target_is_found_and_listed(toy):
    assert get_target("toy") is toy and TARGETS["toy"] is toy
    with pytest.raises(CompileError) as e:
        get_target("metal")
    assert str(e.value) == "error: unknown target 'metal' (targets: cpu, cuda, cuda-emulated, toy)"
    assert lt_mlir.compile(programs.pointwise_add(4), "add", target="toy", fastmath="fast") == "toy kernel"
    assert toy.calls == [("add", CompileOptions(fastmath="fast"), "-")]
    with pytest.raises(CompileError, match=r"^error: target 'toy' cannot compile ahead of time \(compile_aot targets: cpu, cuda, cuda-emulated\)$"):
        lt_mlir.compile_aot(programs.pointwise_add(4), "/nonexistent/x", target="toy")
    with pytest.raises(CompileError, match="target 'toy' is registered already"):
        register_target(Toy())
    lt_mlir.set_default_hardware("toy")  # the frontend knows it too
    try:
        assert lt_mlir.default_hardware() == "toy"
    finally:
        lt_mlir.set_default_hardware("cpu")


def test_registered_target_is_gone_after_the_test():
    assert "toy" not in TARGETS
    with pytest.raises(CompileError, match=re.escape("(targets: cpu, cuda, cuda-emulated)")):
        get_target("toy")
