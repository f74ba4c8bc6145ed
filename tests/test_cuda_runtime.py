"""The CUDA runtime (lt_mlir.runtime.cuda): artifacts, argument checks, DLPack
and launches.

Most of it runs without a GPU: the artifact round trip, the checks that
come before any driver call, the DLPack reader (on NumPy's own capsules and
on capsules built here), and the whole launch path against ``FakeDriver``,
which keeps "device" memory in host memory and runs the two PTX kernels
below in NumPy from the parameter array that ``cuLaunchKernel`` receives.
The tests marked ``gpu`` run the same PTX on a real device and are skipped
without one; ``ptxas`` (from nvidia-cuda-nvcc) checks that the PTX is valid.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest

from lt_mlir.errors import ArgumentError, CudaError
from lt_mlir.runtime import cuda as cuda_rt
from lt_mlir.runtime.specs import ArgSpec

ROOT = Path(__file__).resolve().parent.parent
N = 1000
BLOCK = 256

PTX = """\
.version 8.0
.target sm_90
.address_size 64

// c[i] = a[i] + b[i] for i < n
.visible .entry vadd(
    .param .u64 vadd_a,
    .param .u64 vadd_b,
    .param .u64 vadd_c,
    .param .u64 vadd_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [vadd_a];
    ld.param.u64 %rd2, [vadd_b];
    ld.param.u64 %rd3, [vadd_c];
    ld.param.u64 %rd4, [vadd_n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd5, %r4;
    setp.ge.u64 %p1, %rd5, %rd4;
    @%p1 bra VADD_DONE;
    shl.b64 %rd6, %rd5, 2;
    cvta.to.global.u64 %rd7, %rd1;
    add.s64 %rd8, %rd7, %rd6;
    cvta.to.global.u64 %rd9, %rd2;
    add.s64 %rd10, %rd9, %rd6;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd10];
    add.f32 %f3, %f1, %f2;
    cvta.to.global.u64 %rd11, %rd3;
    add.s64 %rd11, %rd11, %rd6;
    st.global.f32 [%rd11], %f3;
VADD_DONE:
    ret;
}

// y[i] = alpha * x[i] for i < n
.visible .entry vscale(
    .param .u64 vscale_x,
    .param .u64 vscale_y,
    .param .f32 vscale_alpha,
    .param .u64 vscale_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [vscale_x];
    ld.param.u64 %rd2, [vscale_y];
    ld.param.f32 %f1, [vscale_alpha];
    ld.param.u64 %rd3, [vscale_n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra VSCALE_DONE;
    shl.b64 %rd5, %rd4, 2;
    cvta.to.global.u64 %rd6, %rd1;
    add.s64 %rd7, %rd6, %rd5;
    ld.global.f32 %f2, [%rd7];
    mul.f32 %f3, %f1, %f2;
    cvta.to.global.u64 %rd8, %rd2;
    add.s64 %rd9, %rd8, %rd5;
    st.global.f32 [%rd9], %f3;
VSCALE_DONE:
    ret;
}
"""


def _grid(n: int) -> list:
    return [(n + BLOCK - 1) // BLOCK, 1, 1]


def vadd_meta(n: int = N) -> dict:
    """@vadd(a, b, out c): one launch of the vadd kernel."""
    return {
        "format": "lt_mlir-cuda-v1",
        "entry": "vadd",
        "arch": "sm_90",
        "args": [ArgSpec(i, (n,), "f32", i == 2).to_json() for i in range(3)],
        "scratch": [],
        "launches": [
            {
                "kernel": "vadd",
                "grid": _grid(n),
                "block": [BLOCK, 1, 1],
                "shared_bytes": 0,
                "params": [
                    {"kind": "arg", "index": 0},
                    {"kind": "arg", "index": 1},
                    {"kind": "arg", "index": 2},
                    {"kind": "i64", "value": n},
                ],
            }
        ],
    }


def scaled_add_meta(n: int = N, alpha: float = 1.5) -> dict:
    """@scaled_add(a, b, out c): c = alpha * (a + b) in two launches through
    a scratch buffer, with a by-value f32 parameter."""
    meta = vadd_meta(n)
    meta["entry"] = "scaled_add"
    meta["scratch"] = [{"shape": [n], "element": "f32"}]
    meta["launches"] = [
        {
            "kernel": "vadd",
            "grid": _grid(n),
            "block": [BLOCK, 1, 1],
            "shared_bytes": 0,
            "params": [
                {"kind": "arg", "index": 0},
                {"kind": "arg", "index": 1},
                {"kind": "scratch", "index": 0},
                {"kind": "index", "value": n},
            ],
        },
        {
            "kernel": "vscale",
            "grid": _grid(n),
            "block": [BLOCK, 1, 1],
            "shared_bytes": 0,
            "params": [
                {"kind": "scratch", "index": 0},
                {"kind": "arg", "index": 2},
                {"kind": "f32", "value": alpha},
                {"kind": "i64", "value": n},
            ],
        },
    ]
    return meta


def inputs(n: int = N):
    a = np.arange(n, dtype=np.float32)
    b = np.linspace(-1, 1, n, dtype=np.float32)
    return a, b


def _run_python(script: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


# --------------------------------------------------------------------------
# Import without the optional dependencies.


def test_runtime_works_without_torch_mlir(tmp_path):
    script = """
        import json, sys
        sys.modules["torch_mlir"] = None  # any import of it now fails
        import lt_mlir
        from lt_mlir.runtime import cuda
        job = json.load(sys.stdin)
        paths = cuda.save(job["dir"] + "/vadd", job["meta"], job["ptx"])
        kernel = cuda.load(paths["json"])
        assert kernel.meta == job["meta"] and kernel.ptx == job["ptx"], "round trip changed the artifact"
        print(repr(kernel))
        try:
            lt_mlir.compile
        except ImportError as exc:
            print("compile:", exc)
    """
    job = {"dir": str(tmp_path), "meta": vadd_meta(), "ptx": PTX}
    result = _run_python(script, json.dumps(job))
    assert result.returncode == 0, result.stderr
    assert "<lt_mlir.CudaKernel @vadd(f32[1000], f32[1000], out f32[1000]) sm_90>" in result.stdout
    assert "compile: lt_mlir.compile needs the MLIR bindings" in result.stdout


def test_runtime_imports_without_cuda_bindings():
    script = """
        import json, sys
        for name in ("cuda", "cuda.bindings", "cuda.bindings.driver"):
            sys.modules[name] = None
        import numpy as np
        from lt_mlir.errors import CudaError
        from lt_mlir.runtime import cuda
        job = json.load(sys.stdin)
        kernel = cuda.CudaKernel(job["meta"], job["ptx"])
        assert cuda.available() is False
        a = np.ones(1000, np.float32)
        try:
            kernel(a, a)
        except CudaError as exc:
            print("error:", exc)
    """
    result = _run_python(script, json.dumps({"meta": vadd_meta(), "ptx": PTX}))
    assert result.returncode == 0, result.stderr
    assert "error: running CUDA kernels needs cuda-python's driver bindings" in result.stdout
    assert "pip install 'lt_mlir[cuda]'" in result.stdout


# --------------------------------------------------------------------------
# Artifacts.


def test_save_writes_ptx_and_json_and_load_reads_them_back(tmp_path):
    meta = scaled_add_meta()
    paths = cuda_rt.save(tmp_path / "prog", meta, PTX)
    assert paths == {"ptx": str(tmp_path / "prog.ptx"), "json": str(tmp_path / "prog.json")}
    assert json.loads(Path(paths["json"]).read_text())["ptx"] == "prog.ptx"
    kernel = cuda_rt.load(paths["json"])
    assert kernel.meta == meta and kernel.ptx == PTX
    assert kernel.name == "scaled_add" and kernel.arch == "sm_90"
    assert [s.index for s in kernel.inputs] == [0, 1]
    assert [s.index for s in kernel.outputs] == [2]
    assert kernel.specs[2] == ArgSpec(2, (N,), "f32", True)


def test_load_errors_are_cuda_errors(tmp_path):
    with pytest.raises(CudaError, match="cannot read the CUDA artifact .*nope.json"):
        cuda_rt.load(tmp_path / "nope.json")

    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CudaError, match="bad.json: not valid JSON"):
        cuda_rt.load(tmp_path / "bad.json")

    paths = cuda_rt.save(tmp_path / "k", vadd_meta(), PTX)
    data = json.loads(Path(paths["json"]).read_text())

    def load_with(**changes):
        path = tmp_path / "k.json"
        path.write_text(json.dumps({**data, **changes}))
        return cuda_rt.load(path)

    with pytest.raises(CudaError, match="format 'lt_mlir-cuda-v0' is not 'lt_mlir-cuda-v1'"):
        load_with(format="lt_mlir-cuda-v0")
    with pytest.raises(CudaError, match="cannot read the PTX .*missing.ptx"):
        load_with(ptx="missing.ptx")
    with pytest.raises(CudaError, match="k.json: missing field 'launches'"):
        path = tmp_path / "k.json"
        path.write_text(json.dumps({k: v for k, v in data.items() if k != "launches"}))
        cuda_rt.load(path)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.pop("entry"), "missing field 'entry'"),
        (lambda m: m["args"][0].update(element="bf16"), "malformed argument .*unsupported element type 'bf16'"),
        (lambda m: m["launches"][0].update(grid=[4, 1]), "launch 0 grid: expected three positive integers"),
        (lambda m: m["launches"][0]["params"][0].update(index=3), "param 0: arg index 3 out of range"),
        (lambda m: m["launches"][0]["params"][0].update(kind="scratch"), "scratch index 0 out of range"),
        (lambda m: m["launches"][0]["params"][3].update(kind="u8"), "unknown parameter kind 'u8'"),
        (lambda m: m["launches"][0]["params"][3].update(kind="i32", value=2**31), "must be a 32-bit integer"),
        (lambda m: m.update(launches=[]), "'launches' must be a non-empty list"),
    ],
)
def test_malformed_metadata_is_rejected_when_the_kernel_is_built(change, message):
    meta = vadd_meta()
    change(meta)
    with pytest.raises(CudaError, match=message):
        cuda_rt.CudaKernel(meta, PTX)


# --------------------------------------------------------------------------
# Argument checks: they all come before the driver is touched.


@pytest.fixture
def no_driver(monkeypatch):
    """Fail the test if anything reaches the driver."""

    def driver():
        raise AssertionError("the driver was touched")

    monkeypatch.setattr(cuda_rt, "_driver", driver)


def test_building_a_kernel_does_not_touch_the_driver(no_driver):
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    assert repr(kernel) == "<lt_mlir.CudaKernel @vadd(f32[1000], f32[1000], out f32[1000]) sm_90>"
    kernel.close()


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda a, b: (a,), r"@vadd takes 3 arrays \(2 inputs \+ 1 outputs\); got 1"),
        (lambda a, b: (a, b.astype(np.float64)), "@vadd argument 1: expected dtype float32, got float64"),
        (lambda a, b: (a, b[:10]), r"@vadd argument 1: expected shape \(1000,\), got \(10,\)"),
        (lambda a, b: (a, np.repeat(b, 2)[::2]), "@vadd argument 1: the array must be C-contiguous"),
        (lambda a, b: (a, b, a), "@vadd arguments 2 and 0 overlap"),
        (lambda a, b: (a, list(b)), "@vadd argument 1: expected a numpy.ndarray or a CUDA array .*got list"),
    ],
)
def test_numpy_arguments_are_checked_before_the_driver(no_driver, make_args, message):
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    with pytest.raises(ArgumentError, match=message):
        kernel(*make_args(*inputs()))


def test_read_only_output_is_rejected(no_driver):
    a, b = inputs()
    c = np.zeros(N, np.float32)
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match="argument 2: the kernel writes this argument but the array is read-only"):
        cuda_rt.CudaKernel(vadd_meta(), PTX)(a, b, c)


def test_without_a_gpu_a_call_is_one_cuda_error():
    if cuda_rt.available():
        pytest.skip("a CUDA device is present")
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    with pytest.raises(CudaError, match=r"^cuInit failed: ") as info:
        kernel(*inputs())
    assert info.value.__cause__ is None and info.value.__suppress_context__


# --------------------------------------------------------------------------
# DLPack.


def test_dlpack_reader_on_numpy_capsules():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for array in (a, a.T, a[1:, 2:], np.arange(5, dtype=np.int64), np.zeros((2, 3), np.float16)):
        view = cuda_rt._dlpack_view(array)
        assert (view.device_type, view.device_id) == (1, 0)
        assert view.device == "cpu"
        assert view.shape == array.shape
        assert view.strides is None or view.strides == tuple(s // array.itemsize for s in array.strides)
        assert view.pointer == array.ctypes.data
        assert view.dtype == ({"f": 2, "i": 0}[array.dtype.kind], array.itemsize * 8, 1)
        assert view.type_name == array.dtype.name
        assert view.is_c_contiguous() == array.flags.c_contiguous


def test_dlpack_reader_leaves_the_capsule_to_its_producer():
    array = np.zeros(5)
    before = sys.getrefcount(array)
    view = cuda_rt._dlpack_view(array)
    assert cuda_rt._capsule_is_valid(view.capsule, b"dltensor")  # not renamed "used_dltensor"
    assert sys.getrefcount(array) == before + 1  # NumPy's DLManagedTensor holds the array
    del view
    gc.collect()
    assert sys.getrefcount(array) == before  # the capsule's destructor ran the deleter


class CpuExporter:
    """A non-NumPy object that exports a NumPy array (device: cpu)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_kernel_rejects_a_dlpack_array_that_is_not_on_a_cuda_device(no_driver):
    a, b = inputs()
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    message = r"@vadd argument 0 is on cpu, not on a CUDA device \(the kernel runs on cuda:0\)"
    with pytest.raises(ArgumentError, match=message):
        kernel(CpuExporter(a), CpuExporter(b))


_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_DLTENSOR = b"dltensor"  # the capsule keeps a pointer to this name


class FakeCudaArray:
    """A DLPack exporter that claims a CUDA device for host memory (a NumPy
    array's): lets the device path run against FakeDriver."""

    def __init__(self, array, device=(2, 0), dtype=None, strides=None):
        self.array = array
        self.device = device
        self._shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self._strides = None if strides is None else (ctypes.c_int64 * array.ndim)(*strides)
        code, bits = dtype or ({"f": 2, "i": 0}[array.dtype.kind], array.itemsize * 8)
        self._managed = cuda_rt._DLManagedTensor()
        t = self._managed.dl_tensor
        t.data = array.ctypes.data
        t.device.device_type, t.device.device_id = device
        t.ndim = array.ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        self.streams = []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self._managed), _DLTENSOR, None)

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize(
    "make_c, message",
    [
        (lambda c: FakeCudaArray(c, device=(2, 3)), r"argument 2 is on cuda:3; the kernel runs on cuda:0"),
        (lambda c: FakeCudaArray(c, device=(10, 0)), r"argument 2 is on rocm:0, not on a CUDA device"),
        (lambda c: FakeCudaArray(c, dtype=(4, 16)), "argument 2: expected dtype float32, got bfloat16"),
        (lambda c: FakeCudaArray(c[:500]), r"argument 2: expected shape \(1000,\), got \(500,\)"),
        (lambda c: FakeCudaArray(c, strides=(2,)), "argument 2: the array must be C-contiguous"),
    ],
)
def test_device_arguments_are_checked_before_the_driver(no_driver, monkeypatch, make_c, message):
    monkeypatch.delenv("LT_CUDA_DEVICE", raising=False)
    a, b = inputs()
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    with pytest.raises(ArgumentError, match=message):
        kernel(FakeCudaArray(a), FakeCudaArray(b), make_c(np.zeros(N, np.float32)))


def test_misaligned_device_arrays_are_rejected(no_driver, monkeypatch):
    """The compiler promises LLVM 16-byte aligned pointers (vector loads);
    a view one float into an allocation breaks that promise."""
    monkeypatch.delenv("LT_CUDA_DEVICE", raising=False)
    a, b = inputs()
    kernel = cuda_rt.CudaKernel({**vadd_meta(), "alignment": 16}, PTX)
    raw = np.zeros(N + 8, np.float32)
    start = (-(raw.ctypes.data // 4)) % 4  # floats to the next 16-byte boundary
    misaligned = raw[start + 1 : start + 1 + N]
    assert misaligned.ctypes.data % 16 == 4
    with pytest.raises(ArgumentError, match="argument 2: the data at 0x[0-9a-f]+ is not 16-byte aligned"):
        kernel(FakeCudaArray(a), FakeCudaArray(b), FakeCudaArray(misaligned))


def test_device_arguments_that_overlap_an_output_are_rejected(no_driver):
    a, b = inputs()
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    with pytest.raises(ArgumentError, match="@vadd arguments 2 and 1 overlap"):
        kernel(FakeCudaArray(a), FakeCudaArray(b), FakeCudaArray(b))


def test_numpy_and_device_arrays_do_not_mix(no_driver):
    a, b = inputs()
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    with pytest.raises(ArgumentError, match="argument 0 is a numpy.ndarray and argument 1 a device array"):
        kernel(a, FakeCudaArray(b))


def test_outputs_of_unknown_device_arrays_cannot_be_allocated(no_driver):
    a, b = inputs()
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX)
    with pytest.raises(ArgumentError, match="cannot allocate the outputs for .*FakeCudaArray inputs"):
        kernel(FakeCudaArray(a), FakeCudaArray(b))


# --------------------------------------------------------------------------
# The launch path against a fake driver.


class FakeDriver:
    """Stands in for ``cuda.bindings.driver``: the results are tuples
    ``(CUresult, value...)``, device memory is host memory, and a launch runs
    the kernel in NumPy from the parameter array it is given."""

    SIGNATURES = {"vadd": ("ptr", "ptr", "ptr", "i64"), "vscale": ("ptr", "ptr", "f32", "i64")}

    def __init__(self, cu):
        self.CUresult = cu.CUresult
        self.CUdeviceptr = cu.CUdeviceptr
        self.CUstream = cu.CUstream
        self.CUdevice_attribute = cu.CUdevice_attribute
        self.ok = cu.CUresult.CUDA_SUCCESS
        self.memory = {}  # address -> (ctypes buffer or array, size)
        self.allocations = 0
        self.images = []
        self.launches = []
        self.unloaded = []
        self.module_status = self.ok

    def register(self, array):
        """Count ``array``'s memory as device memory (for FakeCudaArray)."""
        self.memory[array.ctypes.data] = (array, array.nbytes)

    def _device(self, address: int, nbytes: int) -> None:
        assert any(base <= address and address + nbytes <= base + max(size, 1)
                   for base, (_, size) in self.memory.items()), f"{address:#x} is not device memory"

    def cuGetErrorName(self, status):
        return self.ok, status.name.encode()

    def cuGetErrorString(self, status):
        return self.ok, b"a PTX JIT compilation failed"

    def cuInit(self, flags):
        return (self.ok,)

    def cuDeviceGetCount(self):
        return self.ok, 1

    def cuDeviceGet(self, ordinal):
        return self.ok, ordinal

    def cuDeviceGetAttribute(self, attribute, device):
        return self.ok, 9 if attribute.name.endswith("MAJOR") else 0

    def cuDevicePrimaryCtxRetain(self, device):
        return self.ok, "context"

    def cuCtxSetCurrent(self, context):
        assert context == "context"
        return (self.ok,)

    def cuModuleLoadData(self, image):
        assert isinstance(image, bytes) and image.endswith(b"\0")
        self.images.append(image)
        return self.module_status, "module"

    def cuModuleGetFunction(self, module, name):
        assert isinstance(name, bytes)
        if name.decode() not in self.SIGNATURES:
            return self.CUresult.CUDA_ERROR_NOT_FOUND, None
        return self.ok, name.decode()

    def cuModuleUnload(self, module):
        self.unloaded.append(module)
        return (self.ok,)

    def cuMemAlloc(self, nbytes):
        buffer = ctypes.create_string_buffer(nbytes)
        self.memory[ctypes.addressof(buffer)] = (buffer, nbytes)
        self.allocations += 1
        return self.ok, self.CUdeviceptr(ctypes.addressof(buffer))

    def cuMemFree(self, pointer):
        del self.memory[int(pointer)]
        return (self.ok,)

    def cuMemcpyHtoD(self, destination, source, nbytes):
        self._device(int(destination), nbytes)
        ctypes.memmove(int(destination), source, nbytes)
        return (self.ok,)

    def cuMemcpyDtoH(self, destination, source, nbytes):
        self._device(int(source), nbytes)
        ctypes.memmove(destination, int(source), nbytes)
        return (self.ok,)

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra):
        assert int(stream) == 0 and extra == 0
        kinds = self.SIGNATURES[function]
        slots = (ctypes.c_void_p * len(kinds)).from_address(params)
        read = {"ptr": ctypes.c_uint64, "i64": ctypes.c_int64, "f32": ctypes.c_float}
        values = [read[k].from_address(slots[i]).value for i, k in enumerate(kinds)]
        n = values[-1]
        assert gx * bx >= n and (gy, gz, by, bz) == (1, 1, 1, 1)
        for kind, value in zip(kinds, values):
            if kind == "ptr":
                self._device(value, 4 * n)

        def array(address):
            return np.ctypeslib.as_array((ctypes.c_float * n).from_address(address))

        if function == "vadd":
            array(values[2])[:] = array(values[0]) + array(values[1])
        else:
            array(values[1])[:] = np.float32(values[2]) * array(values[0])
        self.launches.append((function, (gx, gy, gz), (bx, by, bz), shared_bytes, values))
        return (self.ok,)

    def cuCtxSynchronize(self):
        return (self.ok,)

    def cuEventCreate(self, flags):
        return self.ok, object()

    def cuEventRecord(self, event, stream):
        return (self.ok,)

    def cuEventSynchronize(self, event):
        return (self.ok,)

    def cuEventElapsedTime(self, start, end):
        return self.ok, 0.25

    def cuEventDestroy(self, event):
        return (self.ok,)


@pytest.fixture
def fake_driver(monkeypatch):
    cu = pytest.importorskip("cuda.bindings.driver")
    fake = FakeDriver(cu)
    monkeypatch.setattr(cuda_rt, "_driver", lambda: fake)
    monkeypatch.setattr(cuda_rt, "_CONTEXT", None)
    monkeypatch.delenv("LT_CUDA_DEVICE", raising=False)
    return fake


def test_fake_numpy_call_passes_device_pointers_and_scalars(fake_driver):
    a, b = inputs()
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        c = kernel(a, b)
        np.testing.assert_array_equal(c, a + b)
        (function, grid, block, shared, values), = fake_driver.launches
        assert (function, grid, block, shared, values[3]) == ("vadd", (4, 1, 1), (BLOCK, 1, 1), 0, N)
        assert fake_driver.images == [PTX.encode() + b"\0"]
        out = np.full(N, 7, np.float32)
        assert kernel(a, b, out) is None
        np.testing.assert_array_equal(out, a + b)
        assert fake_driver.allocations == 3  # argument buffers reused by the second call
    assert fake_driver.memory == {} and fake_driver.unloaded == ["module"]


def test_fake_two_launches_share_a_scratch_buffer(fake_driver):
    a, b = inputs()
    with cuda_rt.CudaKernel(scaled_add_meta(alpha=1.5), PTX) as kernel:
        np.testing.assert_allclose(kernel(a, b), np.float32(1.5) * (a + b), rtol=0)
        np.testing.assert_allclose(kernel(b, a), np.float32(1.5) * (a + b), rtol=0)
        assert [launch[0] for launch in fake_driver.launches] == ["vadd", "vscale"] * 2
        scratch = fake_driver.launches[0][4][2]
        assert fake_driver.launches[1][4][0] == scratch == fake_driver.launches[3][4][0]
        assert fake_driver.launches[1][4][2] == pytest.approx(1.5)
        assert fake_driver.allocations == 4  # one scratch + three arguments, once
    assert fake_driver.memory == {}


def test_fake_device_arrays_are_used_in_place(fake_driver):
    a, b = inputs()
    c = np.zeros(N, np.float32)
    arrays = [FakeCudaArray(x) for x in (a, b, c)]
    for x in (a, b, c):
        fake_driver.register(x)
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        assert kernel(*arrays) is None
        np.testing.assert_array_equal(c, a + b)
        assert fake_driver.allocations == 0
        assert fake_driver.launches[0][4][:3] == [a.ctypes.data, b.ctypes.data, c.ctypes.data]
    assert all(x.streams == [1] for x in arrays)  # the producer orders its work before stream 0


class FakeCaiArray(FakeCudaArray):
    """A CUDA array that also has ``__cuda_array_interface__`` (as torch and
    CuPy tensors do): read from it, with no DLPack export."""

    def __init__(self, array, stream=None, **kw):
        super().__init__(array, **kw)
        self.cai = {"shape": array.shape, "typestr": array.dtype.str, "data": (array.ctypes.data, False), "version": 2, "strides": None}
        if stream is not None:
            self.cai.update(version=3, stream=stream)

    @property
    def __cuda_array_interface__(self):
        return self.cai


def test_fake_cuda_array_interface_is_read_without_dlpack(fake_driver):
    a, b = inputs()
    c = np.zeros(N, np.float32)
    arrays = [FakeCaiArray(x) for x in (a, b, c)]
    for x in (a, b, c):
        fake_driver.register(x)
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        kernel(*arrays)
        np.testing.assert_array_equal(c, a + b)
        assert fake_driver.launches[0][4][:3] == [a.ctypes.data, b.ctypes.data, c.ctypes.data]
    assert all(x.streams == [] for x in arrays)  # no capsule exported
    # its dtype, shape and layout are checked like DLPack's
    arrays[2].cai["typestr"] = "<f8"
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel, pytest.raises(ArgumentError, match="argument 2: expected dtype float32, got float64"):
        kernel(*arrays)
    arrays[2].cai.update(typestr="<f4", strides=(8,))
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel, pytest.raises(ArgumentError, match="argument 2: the array must be C-contiguous"):
        kernel(*arrays)


class FakeTorchTensor:
    """What the runtime reads of a ``torch.Tensor`` (its class says module
    "torch"): shape, dtype, strides and data pointer, no export."""

    def __init__(self, array, requires_grad=False):
        self.array, self.requires_grad = array, requires_grad
        self.shape = array.shape
        self.dtype = FakeTorchDtype(f"torch.{array.dtype.name}")

    def is_contiguous(self):
        return self.array.flags.c_contiguous

    def stride(self):
        return tuple(b // self.array.itemsize for b in self.array.strides)

    def data_ptr(self):
        return self.array.ctypes.data

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")


class FakeTorchDtype(str):
    pass


FakeTorchTensor.__module__ = "torch"


def test_fake_torch_tensors_are_read_through_their_accessors(fake_driver):
    a, b = inputs()
    c = np.zeros(N, np.float32)
    for x in (a, b, c):
        fake_driver.register(x)
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        kernel(*[FakeTorchTensor(x) for x in (a, b, c)])
        np.testing.assert_array_equal(c, a + b)
        with pytest.raises(ArgumentError, match="argument 1: expected dtype float32, got float64"):
            kernel(FakeTorchTensor(a), FakeTorchTensor(b.astype(np.float64)), FakeTorchTensor(c))
        with pytest.raises(ArgumentError, match="argument 2: the array must be C-contiguous"):
            kernel(FakeTorchTensor(a), FakeTorchTensor(b), FakeTorchTensor(np.zeros(2 * N, np.float32)[::2]))
        # a tensor that requires grad goes to DLPack, which refuses it with torch's reason
        with pytest.raises(ArgumentError, match="argument 0: cannot export it through DLPack .*require gradient"):
            kernel(FakeTorchTensor(a, requires_grad=True), FakeTorchTensor(b), FakeTorchTensor(c))


def test_fake_torch_call_again_with_the_same_tensors_skips_binding(fake_driver, monkeypatch):
    a, b = inputs()
    c = np.zeros(N, np.float32)
    for x in (a, b, c):
        fake_driver.register(x)
    tensors = [FakeTorchTensor(x) for x in (a, b, c)]
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        kernel(*tensors)
        binds = []
        real_bind = kernel._bind
        monkeypatch.setattr(kernel, "_bind", lambda arrays: binds.append(1) or real_bind(arrays))
        kernel(*tensors)
        assert binds == [] and len(fake_driver.launches) == 2
        assert fake_driver.launches[1][4][:3] == [a.ctypes.data, b.ctypes.data, c.ctypes.data]
        # another tensor, or one whose storage moved, is bound (and checked) again
        c2 = np.zeros(N, np.float32)
        fake_driver.register(c2)
        tensors[2].array = c2
        kernel(*tensors)
        assert binds == [1] and fake_driver.launches[2][4][2] == c2.ctypes.data
        tensors[2].shape = (N // 2,)
        with pytest.raises(ArgumentError, match="argument 2: expected shape"):
            kernel(*tensors)


def test_fake_cuda_array_interface_on_another_stream_goes_through_dlpack(fake_driver):
    a, b = inputs()
    c = np.zeros(N, np.float32)
    arrays = [FakeCaiArray(x, stream=7) for x in (a, b, c)]  # CuPy's current, non-default stream
    for x in (a, b, c):
        fake_driver.register(x)
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        kernel(*arrays)
    np.testing.assert_array_equal(c, a + b)
    assert all(x.streams == [1] for x in arrays)  # DLPack orders that stream's work first


def test_fake_time_reports_seconds_per_run(fake_driver):
    a, b = inputs()
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        times = kernel.time(a, b, warmup=2, repeat=5)
    assert times == [0.25e-3] * 5
    assert len(fake_driver.launches) == 7


def test_fake_time_launches_records_an_event_between_launches(fake_driver):
    recorded = []
    fake_driver.cuEventRecord = lambda event, stream: (recorded.append((event, len(fake_driver.launches))), (fake_driver.ok,))[1]
    a, b = inputs()
    with cuda_rt.CudaKernel(scaled_add_meta(alpha=1.5), PTX) as kernel:
        runs = kernel.time_launches(a, b, warmup=1, repeat=3)
    assert runs == [[0.25e-3, 0.25e-3]] * 3  # a list a run, a time a launch
    assert len(fake_driver.launches) == 8
    # each run: an event before each launch and one after the last, in order
    assert [n for _, n in recorded] == [2, 3, 4, 4, 5, 6, 6, 7, 8]
    events = [e for e, _ in recorded[:3]]
    assert len(set(map(id, events))) == 3 and [e for e, _ in recorded[3:6]] == events


def test_fake_global_array_and_zero_global(fake_driver):
    counters = np.arange(6, dtype=np.int64)
    fake_driver.register(counters)
    asked = []

    def get_global(module, name):
        asked.append((module, name))
        return fake_driver.ok, fake_driver.CUdeviceptr(counters.ctypes.data), counters.nbytes

    def memset(pointer, value, nbytes):
        ctypes.memset(int(pointer), value, nbytes)
        return (fake_driver.ok,)

    fake_driver.cuModuleGetGlobal, fake_driver.cuMemsetD8 = get_global, memset
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        np.testing.assert_array_equal(kernel.global_array("lt_profile_counters", np.int64), np.arange(6))
        kernel.zero_global("lt_profile_counters")
        assert not counters.any()
    assert asked == [("module", b"lt_profile_counters")] * 2


def test_driver_failures_name_the_call(fake_driver):
    fake_driver.module_status = fake_driver.CUresult.CUDA_ERROR_INVALID_PTX
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel, pytest.raises(CudaError) as info:
        kernel(*inputs())
    assert str(info.value) == (
        "cuModuleLoadData failed (PTX of @vadd for sm_90, device sm_90): "
        "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)"
    )
    meta = vadd_meta()
    meta["launches"][0]["kernel"] = "vmul"
    fake_driver.module_status = fake_driver.ok
    message = r"cuModuleGetFunction failed \(kernel vmul\): CUDA_ERROR_NOT_FOUND"
    with cuda_rt.CudaKernel(meta, PTX) as kernel, pytest.raises(CudaError, match=message):
        kernel(*inputs())
    assert fake_driver.unloaded == ["module"]


def test_exceptions_inside_cuda_python_become_cuda_errors(fake_driver, monkeypatch):
    def missing_library(flags):
        raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')

    monkeypatch.setattr(fake_driver, "cuInit", missing_library)
    assert cuda_rt.available() is False
    with pytest.raises(CudaError, match=r"^cuInit failed: RuntimeError: \"cuda\" is an NVIDIA driver library"):
        cuda_rt.CudaKernel(vadd_meta(), PTX)(*inputs())


def test_bad_device_number(fake_driver, monkeypatch):
    monkeypatch.setenv("LT_CUDA_DEVICE", "1")
    with pytest.raises(CudaError, match=r"no CUDA device 1 \(LT_CUDA_DEVICE\); this machine has 1"):
        cuda_rt.CudaKernel(vadd_meta(), PTX)(*inputs())
    monkeypatch.setenv("LT_CUDA_DEVICE", "gpu0")
    assert cuda_rt.available() is False


# --------------------------------------------------------------------------
# PTX validity and real launches.


def _ptxas() -> str | None:
    bundled = Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13" / "bin" / "ptxas"
    return str(bundled) if bundled.exists() else shutil.which("ptxas")


def test_the_test_ptx_assembles(tmp_path):
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("ptxas not installed (pip install nvidia-cuda-nvcc)")
    source = tmp_path / "kernels.ptx"
    source.write_text(PTX)
    result = subprocess.run([ptxas, "-arch=sm_90", str(source), "-o", os.devnull], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _require_gpu() -> None:
    if not cuda_rt.available():
        pytest.skip("no CUDA device")


@pytest.mark.gpu
def test_gpu_vadd_on_numpy_arrays():
    _require_gpu()
    a, b = inputs()
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        np.testing.assert_array_equal(kernel(a, b), a + b)
        out = np.zeros(N, np.float32)
        kernel(b, a, out)
        np.testing.assert_array_equal(out, a + b)
        times = kernel.time(a, b, warmup=1, repeat=3)
    assert len(times) == 3 and all(t > 0 for t in times)


@pytest.mark.gpu
def test_gpu_two_launches_with_scratch_and_a_scalar():
    _require_gpu()
    a, b = inputs()
    with cuda_rt.CudaKernel(scaled_add_meta(alpha=1.5), PTX) as kernel:
        np.testing.assert_allclose(kernel(a, b), np.float32(1.5) * (a + b), rtol=1e-6)


@pytest.mark.gpu
def test_gpu_vadd_on_torch_tensors():
    _require_gpu()
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    a, b = (torch.from_numpy(x).cuda() for x in inputs())
    with cuda_rt.CudaKernel(vadd_meta(), PTX) as kernel:
        c = kernel(a, b)
        assert c.is_cuda and c.dtype == torch.float32
        torch.testing.assert_close(c, a + b, rtol=0, atol=0)
        out = torch.empty_like(a)
        kernel(a, b, out)
        torch.testing.assert_close(out, a + b, rtol=0, atol=0)
        with pytest.raises(ArgumentError, match="argument 1 is on cpu, not on a CUDA device"):
            kernel(a, b.cpu())
        with pytest.raises(ArgumentError, match="expected dtype float32, got float64"):
            kernel(a, b.double())


@pytest.mark.gpu
def test_gpu_invalid_ptx_is_a_cuda_error():
    _require_gpu()
    kernel = cuda_rt.CudaKernel(vadd_meta(), PTX.replace("add.f32", "add.f33"))
    with pytest.raises(CudaError, match="cuModuleLoadData failed"):
        kernel(*inputs())
