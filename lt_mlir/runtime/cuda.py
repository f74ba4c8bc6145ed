"""Load and launch the PTX that lt_mlir compiles, through the CUDA driver API.

This module needs neither torch-mlir nor a GPU to import: a program compiled
on one machine runs on another that only has the NVIDIA driver, NumPy and
cuda-python's driver bindings (``pip install 'lt_mlir[cuda]'``).  The driver
is touched on a kernel's first call, never when it is built or loaded.

Artifact format
---------------
A program is PTX text plus a JSON-serialisable metadata dict::

    {"format": "lt_mlir-cuda-v1",
     "entry": "matmul",                # the lt function's name
     "arch": "sm_90",                  # what the PTX targets
     "alignment": 16,                  # bytes every pointer must be aligned to
     "args": [ArgSpec.to_json(), ...], # the entry's memref arguments, in order
     "scratch": [{"shape": [64, 32], "element": "f32"}, ...],
     "launches": [                     # run in this order on one stream
        {"kernel": "matmul_kernel", "grid": [gx, gy, gz], "block": [bx, by, bz],
         "shared_bytes": 0,
         "params": [{"kind": "arg", "index": 0}, {"kind": "scratch", "index": 0},
                    {"kind": "i64", "value": 256}, {"kind": "f32", "value": 1.5}]}]}

``alignment`` (optional, bytes) is what the kernels assume of every
pointer; device arrays that are not that aligned are refused.
``scratch`` lists device temporaries the kernels share; they are allocated
once per ``CudaKernel`` and reused across calls.  A kernel parameter is
either a 64-bit device pointer (``arg``/``scratch``: the address of that
argument or scratch buffer) or a scalar passed by value (``i32``, ``i64``,
``index`` (64-bit), ``f32``, ``f64``).

On disk (``save``/``load``) ``<prefix>.json`` holds the metadata plus
``"ptx": "<basename>.ptx"``, and ``<prefix>.ptx`` the PTX.

Calling convention
------------------
The same as the CPU ``Kernel``: pass every argument (the written ones are
updated in place) or only the inputs (the outputs, the written arguments
after the last read-only one, are allocated zero-filled and returned).
Arrays are either all NumPy arrays (copied to the device and back) or all
device arrays exported through DLPack (torch CUDA tensors, CuPy arrays),
which the kernels read and write in place.  A call on NumPy arrays returns
when the results are back; a call on device arrays returns once its
launches are queued on the legacy default stream (where torch's own
kernels run, so they are ordered with them), as a torch operation does:
an error of the running kernel surfaces at the next synchronisation.
torch tensors are read through their accessors and other arrays through
``__cuda_array_interface__`` when they have one (no DLPack capsule: a call
costs tens of microseconds less); see ``_cai_view`` for the ordering.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ArgumentError, CudaError
from .specs import ArgSpec, EntryPoint, check_host_arrays

FORMAT = "lt_mlir-cuda-v1"

_SCALARS = {
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "index": ctypes.c_int64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}
_POINTERS = ("arg", "scratch")

# DLPack device types (dlpack.h) that name a CUDA device, and names for the rest.
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
                    9: "vpi", 10: "rocm", 11: "rocm_host", 13: "cuda_managed", 14: "oneapi"}
# DLPack type codes and bit widths, spelled the NumPy way for messages.
_DL_TYPE_NAMES = {
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
    (4, 16): "bfloat16", (5, 64): "complex64", (5, 128): "complex128", (6, 8): "bool",
}
_DL_TYPE_CODES = {"i": 0, "u": 1, "f": 2}


# --------------------------------------------------------------------------
# The driver: every call goes through _call, which turns failures into CudaError.


_DRIVER = None


def _driver():
    """cuda-python's driver module, imported on first use (it is optional)."""
    global _DRIVER
    if _DRIVER is not None:
        return _DRIVER
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise CudaError(
            f"running CUDA kernels needs cuda-python's driver bindings ({exc}); "
            "install them with pip install 'lt_mlir[cuda]'"
        ) from None
    _DRIVER = driver
    return driver


def _call(name: str, *args, what: str = ""):
    """``driver.<name>(*args)`` without its status: None, the one value, or a
    tuple of values.  Any failure, a CUresult or an exception raised inside
    cuda-python (such as a missing libcuda), becomes a CudaError naming the call."""
    cu = _driver()
    try:
        result = getattr(cu, name)(*args)
    except Exception as exc:  # noqa: BLE001 - cuda-python raises several kinds
        raise CudaError(f"{name} failed{' ' + what if what else ''}: {type(exc).__name__}: {exc}") from None
    if not isinstance(result, tuple):
        result = (result,)
    status, values = result[0], result[1:]
    if status != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(f"{name} failed{' ' + what if what else ''}: {_describe(cu, status)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _describe(cu, status) -> str:
    """``CUDA_ERROR_X (explanation)`` for a CUresult."""
    name = getattr(status, "name", str(status))
    try:
        ok, text = cu.cuGetErrorName(status)
        if ok == cu.CUresult.CUDA_SUCCESS and text:
            name = text.decode()
        ok, text = cu.cuGetErrorString(status)
        if ok == cu.CUresult.CUDA_SUCCESS and text:
            return f"{name} ({text.decode()})"
    except Exception:  # noqa: BLE001 - the name alone is still worth reporting
        pass
    return name


def _device_pointer(address: int):
    return _driver().CUdeviceptr(address)


def _default_stream():
    return _driver().CUstream(0)


@dataclass(frozen=True)
class _Context:
    ordinal: int
    handle: object  # CUcontext: the device's primary context
    arch: str  # sm_XY of the device


_CONTEXT: _Context | None = None
_CONTEXT_LOCK = threading.Lock()


def _requested_ordinal() -> int:
    """The device the kernels run on: LT_CUDA_DEVICE, 0 by default (fixed
    once the process has a context)."""
    if _CONTEXT is not None:
        return _CONTEXT.ordinal
    text = os.environ.get("LT_CUDA_DEVICE", "0")
    try:
        ordinal = int(text)
    except ValueError:
        raise CudaError(f"LT_CUDA_DEVICE must be a device number, got {text!r}") from None
    if ordinal < 0:
        raise CudaError(f"LT_CUDA_DEVICE must be a device number, got {text!r}")
    return ordinal


def device_problem() -> str | None:
    """Why this process cannot run CUDA kernels (no driver, no device, a bad
    ``LT_CUDA_DEVICE``), or None when it can: the device is opened, as the
    first launch would open it."""
    try:
        _context()
    except CudaError as e:
        return str(e)
    return None


def _context() -> _Context:
    """The process's one context (the primary context of the chosen device),
    made current on the calling thread."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            ordinal = _requested_ordinal()
            _call("cuInit", 0)
            count = _call("cuDeviceGetCount")
            if count == 0:
                raise CudaError("no CUDA device: the driver reports none")
            if ordinal >= count:
                raise CudaError(f"no CUDA device {ordinal} (LT_CUDA_DEVICE); this machine has {count}")
            device = _call("cuDeviceGet", ordinal)
            attribute = _driver().CUdevice_attribute
            major = _call("cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
            minor = _call("cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
            handle = _call("cuDevicePrimaryCtxRetain", device)
            _CONTEXT = _Context(ordinal, handle, f"sm_{major}{minor}")
        context = _CONTEXT
    _call("cuCtxSetCurrent", context.handle)
    return context


def available() -> bool:
    """Whether kernels can run here: the driver loads and the device named by
    LT_CUDA_DEVICE (default 0) exists.  Never raises."""
    try:
        ordinal = _requested_ordinal()
        _call("cuInit", 0)
        return _call("cuDeviceGetCount") > ordinal
    except Exception:  # noqa: BLE001 - any failure means "no"
        return False


class _DeviceBuffer:
    """``nbytes`` of device memory (at least one byte is allocated, so that a
    zero-sized buffer still has a distinct address)."""

    def __init__(self, nbytes: int):
        self.nbytes = int(nbytes)
        self.ptr = int(_call("cuMemAlloc", max(self.nbytes, 1), what=f"({self.nbytes} bytes)"))

    def upload(self, array: np.ndarray) -> None:
        if self.nbytes:
            _call("cuMemcpyHtoD", _device_pointer(self.ptr), array.ctypes.data, self.nbytes)

    def download(self, array: np.ndarray) -> None:
        if self.nbytes:
            _call("cuMemcpyDtoH", array.ctypes.data, _device_pointer(self.ptr), self.nbytes)

    def free(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            _call("cuMemFree", _device_pointer(ptr))


# --------------------------------------------------------------------------
# DLPack: read a producer's DLManagedTensor without taking it over.


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


# Own prototypes rather than ctypes.pythonapi's shared ones, whose argtypes
# other libraries may set differently.
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


@dataclass(frozen=True)
class _DLView:
    """What a DLPack capsule describes.  ``capsule`` keeps the producer's
    tensor alive: the capsule is not renamed "used_dltensor", so its own
    destructor frees the tensor once the view is dropped."""

    device_type: int
    device_id: int
    shape: tuple
    strides: tuple | None  # in elements; None means row-major contiguous
    dtype: tuple  # DLDataType (code, bits, lanes)
    pointer: int  # data + byte_offset
    capsule: object

    @property
    def device(self) -> str:
        return _device_name(self.device_type, self.device_id)

    @property
    def type_name(self) -> str:
        code, bits, lanes = self.dtype
        name = _DL_TYPE_NAMES.get((code, bits), f"DLPack type (code {code}, {bits} bits)")
        return name if lanes == 1 else f"{name}x{lanes}"

    def is_c_contiguous(self) -> bool:
        if self.strides is None or 0 in self.shape:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


_TORCH_TYPES: dict = {}  # torch dtype -> DLDataType, filled as met


def _torch_view(obj, device_type: int, device_id: int) -> _DLView | None:
    """A ``torch.Tensor`` read through its own accessors (each a C call: a
    few microseconds a call in all, where ``__cuda_array_interface__``
    builds a dict in Python), or None for anything else.  Ordering as
    ``_cai_view``'s."""
    if type(obj).__module__ != "torch" or getattr(obj, "requires_grad", True):
        return None  # (a tensor that requires grad: the DLPack path says why it cannot be used)
    dl = _TORCH_TYPES.get(obj.dtype)
    if dl is None:
        try:
            dtype = np.dtype(str(obj.dtype).rsplit(".", 1)[-1])
        except TypeError:
            return None
        if dtype.kind not in _DL_TYPE_CODES:
            return None
        dl = _TORCH_TYPES[obj.dtype] = (_DL_TYPE_CODES[dtype.kind], dtype.itemsize * 8, 1)
    strides = None if obj.is_contiguous() else tuple(obj.stride())
    return _DLView(device_type, device_id, tuple(obj.shape), strides, dl, obj.data_ptr(), obj)


@functools.lru_cache(maxsize=64)
def _typestr_dtype(typestr: str) -> np.dtype:
    return np.dtype(typestr)


def _cai_view(obj, device_type: int, device_id: int) -> _DLView | None:
    """The array ``obj.__cuda_array_interface__`` describes (torch and CuPy
    CUDA tensors have one), or None: read without exporting a DLPack capsule,
    which costs a torch tensor tens of microseconds a call.  An interface
    that names a stream other than the legacy default one (CuPy's current
    stream, version 3) is left to the DLPack path, which orders that
    stream's work first; torch's (version 2) names none, its work on the
    default stream is ordered before ours, work on other torch streams is
    the caller's to synchronize, as with every consumer of the interface."""
    try:
        cai = obj.__cuda_array_interface__
        if cai.get("stream", 1) not in (None, 1):
            return None
        dtype = _typestr_dtype(cai["typestr"])
        pointer = int(cai["data"][0])
        shape = tuple(int(n) for n in cai["shape"])
        strides = cai.get("strides")
    except Exception:  # noqa: BLE001 - no interface, or one we do not read: DLPack decides
        return None
    if dtype.kind not in _DL_TYPE_CODES or dtype.byteorder == ">" or cai.get("mask") is not None:
        return None
    if strides is not None:
        if any(int(b) % dtype.itemsize for b in strides):
            return None
        strides = tuple(int(b) // dtype.itemsize for b in strides)
    return _DLView(device_type, device_id, shape, strides, (_DL_TYPE_CODES[dtype.kind], dtype.itemsize * 8, 1), pointer, obj)


def _dlpack_view(obj, stream: int | None = None) -> _DLView:
    """Export ``obj`` through ``__dlpack__`` (legacy, unversioned capsule) and
    read its DLTensor.  ``stream`` is passed on to the producer so that its
    pending work is ordered before work on that stream (1: CUDA's legacy
    default stream); None leaves it out, as CPU producers require."""
    capsule = obj.__dlpack__() if stream is None else obj.__dlpack__(stream=stream)
    if not _capsule_is_valid(capsule, b"dltensor"):
        raise ArgumentError("__dlpack__ did not return an unused DLPack capsule named 'dltensor'")
    managed = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    strides = tuple(int(t.strides[i]) for i in range(ndim)) if t.strides else None
    return _DLView(
        device_type=int(t.device.device_type),
        device_id=int(t.device.device_id),
        shape=shape,
        strides=strides,
        dtype=(int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)),
        pointer=(t.data or 0) + int(t.byte_offset),
        capsule=capsule,
    )


def _device_name(device_type: int, device_id: int) -> str:
    name = _DL_DEVICE_NAMES.get(device_type, f"DLPack device type {device_type}")
    return name if device_type == 1 else f"{name}:{device_id}"


def _dl_type(spec: ArgSpec) -> tuple:
    dtype = spec.dtype
    return (_DL_TYPE_CODES[dtype.kind], dtype.itemsize * 8, 1)


# --------------------------------------------------------------------------
# The artifact: metadata checked once, when a kernel is built or loaded.


@dataclass(frozen=True)
class _Param:
    kind: str
    index: int = -1  # arg / scratch
    value: object = None  # the ctypes scalar passed by value


@dataclass(frozen=True)
class _Launch:
    kernel: str
    grid: tuple
    block: tuple
    shared_bytes: int
    params: tuple


def _field(d: dict, key: str, where: str):
    if not isinstance(d, dict):
        raise CudaError(f"{where}: expected a JSON object, got {type(d).__name__}")
    if key not in d:
        raise CudaError(f"{where}: missing field {key!r}")
    return d[key]


def _dims(value, where: str) -> tuple:
    if not (isinstance(value, (list, tuple)) and len(value) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in value)):
        raise CudaError(f"{where}: expected three positive integers, got {value!r}")
    return tuple(value)


def _parse_param(p, n_args: int, n_scratch: int, where: str) -> _Param:
    kind = _field(p, "kind", where)
    if kind in _POINTERS:
        index = _field(p, "index", where)
        count = n_args if kind == "arg" else n_scratch
        if not (isinstance(index, int) and 0 <= index < count):
            raise CudaError(f"{where}: {kind} index {index!r} out of range (there are {count})")
        return _Param(kind, index=index)
    if kind in _SCALARS:
        value = _field(p, "value", where)
        if kind in ("f32", "f64"):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise CudaError(f"{where}: {kind} value must be a number, got {value!r}")
            return _Param(kind, value=_SCALARS[kind](float(value)))
        bits = 32 if kind == "i32" else 64
        if not isinstance(value, int) or isinstance(value, bool) or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise CudaError(f"{where}: {kind} value must be a {bits}-bit integer, got {value!r}")
        return _Param(kind, value=_SCALARS[kind](value))
    kinds = ", ".join((*_POINTERS, *_SCALARS))
    raise CudaError(f"{where}: unknown parameter kind {kind!r} (expected one of {kinds})")


def _parse_meta(meta, source: str):
    """(name, arch, specs, scratch specs, launches) of ``meta``, or CudaError."""
    fmt = _field(meta, "format", source)
    if fmt != FORMAT:
        raise CudaError(f"{source}: format {fmt!r} is not {FORMAT!r}")
    name = _field(meta, "entry", source)
    arch = _field(meta, "arch", source)
    if not isinstance(name, str) or not isinstance(arch, str):
        raise CudaError(f"{source}: 'entry' and 'arch' must be strings")
    try:
        specs = [ArgSpec.from_json(a) for a in _field(meta, "args", source)]
        scratch = [
            ArgSpec.from_json({"index": i, "shape": s["shape"], "element": s["element"], "written": True})
            for i, s in enumerate(meta.get("scratch", []))
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise CudaError(f"{source}: malformed argument or scratch description ({type(exc).__name__}: {exc})") from None
    for position, spec in enumerate(specs):
        if spec.index != position:
            raise CudaError(f"{source}: argument {position} has index {spec.index}")
    launches = []
    raw_launches = _field(meta, "launches", source)
    if not isinstance(raw_launches, list) or not raw_launches:
        raise CudaError(f"{source}: 'launches' must be a non-empty list")
    for i, launch in enumerate(raw_launches):
        where = f"{source}: launch {i}"
        kernel = _field(launch, "kernel", where)
        if not isinstance(kernel, str) or not kernel:
            raise CudaError(f"{where}: 'kernel' must be a kernel name")
        shared = launch.get("shared_bytes", 0)
        if not isinstance(shared, int) or shared < 0:
            raise CudaError(f"{where}: 'shared_bytes' must be a non-negative integer, got {shared!r}")
        params = _field(launch, "params", where)
        if not isinstance(params, list):
            raise CudaError(f"{where}: 'params' must be a list")
        launches.append(_Launch(
            kernel,
            _dims(_field(launch, "grid", where), f"{where} grid"),
            _dims(_field(launch, "block", where), f"{where} block"),
            shared,
            tuple(_parse_param(p, len(specs), len(scratch), f"{where} param {j}") for j, p in enumerate(params)),
        ))
    return name, arch, specs, scratch, launches


def save(prefix, meta: dict, ptx: str) -> dict:
    """Write ``<prefix>.ptx`` and ``<prefix>.json``; return their paths."""
    _parse_meta(meta, "the artifact")
    prefix = Path(prefix)
    paths = {"ptx": str(prefix.with_name(prefix.name + ".ptx")), "json": str(prefix.with_name(prefix.name + ".json"))}
    Path(paths["ptx"]).write_text(ptx)
    Path(paths["json"]).write_text(json.dumps({**meta, "ptx": Path(paths["ptx"]).name}, indent=2) + "\n")
    return paths


def load(path) -> "CudaKernel":
    """The kernel that ``save`` wrote (``path`` is the ``.json`` file)."""
    path = Path(path)
    try:
        meta = json.loads(path.read_text())
    except OSError as exc:
        raise CudaError(f"cannot read the CUDA artifact {str(path)!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CudaError(f"{path}: not valid JSON ({exc})") from None
    ptx_name = _field(meta, "ptx", str(path))
    if not isinstance(ptx_name, str):
        raise CudaError(f"{path}: 'ptx' must be a file name")
    ptx_path = path.parent / ptx_name
    try:
        ptx = ptx_path.read_text()
    except OSError as exc:
        raise CudaError(f"cannot read the PTX {str(ptx_path)!r} named by {path}: {exc.strerror or exc}") from None
    meta = {k: v for k, v in meta.items() if k != "ptx"}
    return CudaKernel(meta, ptx, source=str(path))


# --------------------------------------------------------------------------
# Arguments of one call.


class _HostCall:
    """A call on NumPy arrays: copied into the kernel's device buffers, the
    written ones copied back after the launches."""

    def __init__(self, arrays, result):
        self.arrays = arrays
        self.result = result

    def pointers(self, kernel: "CudaKernel") -> list[int]:
        buffers = kernel._argument_buffers()
        for buffer, a in zip(buffers, self.arrays):
            buffer.upload(a)
        return [b.ptr for b in buffers]

    def finish(self, kernel: "CudaKernel") -> None:
        for spec, buffer, a in zip(kernel.specs, kernel._argument_buffers(), self.arrays):
            if spec.written:
                buffer.download(a)


class _DeviceCall:
    """A call on device arrays: the kernels use their memory in place; the
    views keep the DLPack capsules (and so the arrays) alive."""

    def __init__(self, views, result):
        self.views = views
        self.result = result

    def pointers(self, kernel: "CudaKernel") -> list[int]:
        return [v.pointer for v in self.views]

    def finish(self, kernel: "CudaKernel") -> None:
        pass


def _zeros_like_producer(name: str, first, device_id: int, specs: list[ArgSpec]) -> list:
    """Zero-filled outputs made by the library of the first device input."""
    library = type(first).__module__.split(".")[0]
    if library == "torch":
        import torch

        return [torch.zeros(s.shape, dtype=getattr(torch, s.dtype.name), device=first.device) for s in specs]
    if library == "cupy":
        import cupy

        with cupy.cuda.Device(device_id):
            return [cupy.zeros(s.shape, dtype=s.dtype) for s in specs]
    raise ArgumentError(
        f"@{name}: cannot allocate the outputs for {type(first).__module__}.{type(first).__name__} inputs "
        "(torch and cupy are supported); pass all the arguments"
    )


# --------------------------------------------------------------------------
# The kernel.


class CudaKernel(EntryPoint):
    """A compiled lt program on the GPU.  ``kernel(*inputs)`` allocates and
    returns the outputs; ``kernel(*all_arguments)`` writes into the arrays
    given.  Building one checks the metadata but does not touch the driver."""

    def __init__(self, meta: dict, ptx: str, source: str = "the CUDA artifact"):
        # Driver state first, so that close() works on a half-built kernel.
        self._lock = threading.Lock()
        self._module = None
        self._packed = None  # (pointers, packed parameters) of the last launch
        self._last_tensors = None  # (weak refs, (pointer, shape) each, pointers) of the last torch call
        self._functions: dict = {}
        self._scratch_buffers: list[_DeviceBuffer] = []
        self._staging: list[_DeviceBuffer] = []
        if not isinstance(ptx, str) or not ptx.strip():
            raise CudaError(f"{source}: the PTX text is empty")
        self.name, self.arch, self.specs, self._scratch, self._launches = _parse_meta(meta, source)
        self.alignment = meta.get("alignment", 1)
        if not isinstance(self.alignment, int) or self.alignment < 1 or self.alignment & (self.alignment - 1):
            raise CudaError(f"{source}: 'alignment' must be a power of two, got {self.alignment!r}")
        self.meta = meta
        self.ptx = ptx
        self._set_specs(self.specs)

    def __call__(self, *arrays):
        pointers = self._same_tensors(arrays)
        if pointers is not None:  # the torch tensors of the last call, unchanged
            with self._lock:
                self._load()
                self._launch_all(pointers)
            return None
        call = self._bind(arrays)
        self._remember(arrays, call)
        with self._lock:
            self._load()
            self._launch_all(call.pointers(self))
            if not isinstance(call, _DeviceCall):
                self._synchronize()
            call.finish(self)
        return call.result

    def time(self, *arrays, warmup: int = 3, repeat: int = 20) -> list[float]:
        """Seconds per run of the launches, from CUDA events, ``repeat`` times
        after ``warmup`` runs.  NumPy arrays are copied to the device once,
        before timing, and not copied back; device arrays are written by
        every run."""
        call = self._bind_timed(arrays, warmup, repeat)
        with self._lock:
            pointers = self._warm_up(call, warmup)
            start = _call("cuEventCreate", 0)
            try:
                end = _call("cuEventCreate", 0)
                try:
                    times = [self._timed_run(pointers, start, end) for _ in range(repeat)]
                finally:
                    _call("cuEventDestroy", end)
            finally:
                _call("cuEventDestroy", start)
            self._synchronize()
        return times

    def time_launches(self, *arrays, warmup: int = 3, repeat: int = 20) -> list[list[float]]:
        """Seconds of each launch of a run, from CUDA events recorded between
        the launches: ``repeat`` lists (one a run) after ``warmup`` runs;
        arrays as ``time`` takes them."""
        call = self._bind_timed(arrays, warmup, repeat)
        with self._lock:
            pointers = self._warm_up(call, warmup)
            events = []
            try:
                for _ in range(len(self._launches) + 1):
                    events.append(_call("cuEventCreate", 0))
                runs = []
                for _ in range(repeat):
                    self._launch_all(pointers, events)
                    _call("cuEventSynchronize", events[-1], what=f"after the launches of @{self.name} ({self._kernel_names()})")
                    runs.append([_call("cuEventElapsedTime", a, b) / 1e3 for a, b in zip(events, events[1:])])
            finally:
                for e in events:
                    _call("cuEventDestroy", e)
            self._synchronize()
        return runs

    def _bind_timed(self, arrays, warmup: int, repeat: int):
        if warmup < 0 or repeat < 1:
            raise ValueError(f"need warmup >= 0 and repeat >= 1, got warmup={warmup}, repeat={repeat}")
        return self._bind(arrays)

    def _warm_up(self, call, warmup: int) -> list[int]:
        """(Under the lock) the call's pointers, after ``warmup`` runs."""
        self._load()
        pointers = call.pointers(self)
        for _ in range(warmup):
            self._launch_all(pointers)
        self._synchronize()
        return pointers

    def global_array(self, name: str, dtype) -> np.ndarray:
        """A copy of the module's global variable ``name`` (the GPU
        profile's counters), as an array of ``dtype``."""
        with self._lock:
            self._load()
            pointer, nbytes = self._global(name)
            out = np.zeros(int(nbytes) // np.dtype(dtype).itemsize, dtype)
            _call("cuMemcpyDtoH", out.ctypes.data, pointer, out.nbytes)
        return out

    def zero_global(self, name: str) -> None:
        """Set the module's global variable ``name`` to zero bytes."""
        with self._lock:
            self._load()
            pointer, nbytes = self._global(name)
            _call("cuMemsetD8", pointer, 0, int(nbytes))

    def _global(self, name: str):
        return _call("cuModuleGetGlobal", self._module, name.encode(), what=f"(global @{name} of @{self.name})")

    def _timed_run(self, pointers, start, end) -> float:
        _call("cuEventRecord", start, _default_stream())
        self._launch_all(pointers)
        _call("cuEventRecord", end, _default_stream())
        _call("cuEventSynchronize", end, what=f"after the launches of @{self.name} ({self._kernel_names()})")
        return _call("cuEventElapsedTime", start, end) / 1e3

    # -- arguments (no driver calls) --

    def _same_tensors(self, arrays) -> list | None:
        """The pointers of the last call when ``arrays`` are its torch
        tensors, each still at the same address with the same shape (what
        binding checked then still holds; a call in a loop skips it), else
        None."""
        last = self._last_tensors
        if last is None or len(arrays) != len(last[0]):
            return None
        for a, ref, (pointer, shape) in zip(arrays, last[0], last[1]):
            if ref() is not a or a.data_ptr() != pointer or a.shape != shape:
                return None
        return last[2]

    def _remember(self, arrays, call) -> None:
        """Keep (weakly) the torch tensors of a call that passed every
        argument, for ``_same_tensors``."""
        self._last_tensors = None
        if not isinstance(call, _DeviceCall) or call.result is not None:
            return
        if not all(type(a).__module__ == "torch" for a in arrays):
            return
        try:
            refs = [weakref.ref(a) for a in arrays]
        except TypeError:
            return
        self._last_tensors = (refs, [(a.data_ptr(), a.shape) for a in arrays], call.pointers(self))

    def _bind(self, arrays):
        n = len(arrays)
        if n not in (len(self.specs), self._n_inputs):
            raise ArgumentError(
                f"@{self.name} takes {len(self.specs)} arrays ({self._n_inputs} inputs"
                f" + {len(self.specs) - self._n_inputs} outputs); got {n}"
            )
        host = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
        device = [i for i, a in enumerate(arrays) if not isinstance(a, np.ndarray)]
        for i in device:
            if not (hasattr(arrays[i], "__dlpack__") and hasattr(arrays[i], "__dlpack_device__")):
                raise ArgumentError(
                    f"@{self.name} argument {i}: expected a numpy.ndarray or a CUDA array "
                    f"(DLPack), got {type(arrays[i]).__name__}"
                )
        if host and device:
            raise ArgumentError(
                f"@{self.name} argument {host[0]} is a numpy.ndarray and argument {device[0]} a device array; "
                "pass NumPy arrays only or device arrays only"
            )
        if device:
            return self._bind_device(list(arrays))
        return self._bind_host(list(arrays))

    def _bind_host(self, arrays) -> _HostCall:
        result = None
        if len(arrays) < len(self.specs):
            check_host_arrays(self.name, self.specs[: len(arrays)], arrays)  # the inputs before allocating
            out = [np.zeros(s.shape, s.dtype) for s in self.outputs]
            arrays += out
            result = out[0] if len(out) == 1 else tuple(out)
        check_host_arrays(self.name, self.specs, arrays)
        return _HostCall(arrays, result)

    def _bind_device(self, arrays) -> _DeviceCall:
        ordinal = _requested_ordinal()
        views = [self._device_view(spec, a, ordinal) for spec, a in zip(self.specs, arrays)]
        result = None
        if len(arrays) < len(self.specs):
            out = _zeros_like_producer(self.name, arrays[0], ordinal, self.outputs)
            views += [self._device_view(spec, a, ordinal) for spec, a in zip(self.outputs, out)]
            result = out[0] if len(out) == 1 else tuple(out)
        for spec, v in zip(self.specs, views):
            if not spec.written:
                continue
            for other, w in zip(self.specs, views):
                if other.index != spec.index and _overlap(v.pointer, spec.nbytes, w.pointer, other.nbytes):
                    raise ArgumentError(
                        f"@{self.name} arguments {spec.index} and {other.index} overlap; "
                        "the kernel writes one of them"
                    )
        return _DeviceCall(views, result)

    def _device_view(self, spec: ArgSpec, a, ordinal: int) -> _DLView:
        where = f"@{self.name} argument {spec.index}"
        try:
            device_type, device_id = (int(x) for x in a.__dlpack_device__())
        except Exception as exc:  # noqa: BLE001 - the producer's own error
            raise ArgumentError(f"{where}: __dlpack_device__ failed ({type(exc).__name__}: {exc})") from None
        _check_device(where, device_type, device_id, ordinal)
        view = _torch_view(a, device_type, device_id) or _cai_view(a, device_type, device_id)
        try:
            if view is None:
                view = _dlpack_view(a, stream=1)  # order the producer's pending work before stream 0
        except ArgumentError as exc:
            raise ArgumentError(f"{where}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - e.g. torch refuses tensors that require grad
            raise ArgumentError(f"{where}: cannot export it through DLPack ({type(exc).__name__}: {exc})") from None
        _check_device(where, view.device_type, view.device_id, ordinal)
        if view.dtype != _dl_type(spec):
            raise ArgumentError(f"{where}: expected dtype {spec.dtype}, got {view.type_name}")
        if view.shape != spec.shape:
            raise ArgumentError(f"{where}: expected shape {spec.shape}, got {view.shape}")
        if not view.is_c_contiguous():
            raise ArgumentError(f"{where}: the array must be C-contiguous (row-major without gaps; use .contiguous())")
        if view.pointer % self.alignment:
            raise ArgumentError(
                f"{where}: the data at 0x{view.pointer:x} is not {self.alignment}-byte aligned, which the kernel's "
                "vector accesses need (a view at an offset? use .clone())"
            )
        return view

    # -- the driver --

    def _load(self) -> None:
        """Context, module, functions and scratch buffers, made on first use."""
        context = _context()
        if self._module is None:
            image = self.ptx.encode() + b"\0"
            self._module = _call(
                "cuModuleLoadData", image, what=f"(PTX of @{self.name} for {self.arch}, device {context.arch})"
            )
        for launch in self._launches:
            if launch.kernel not in self._functions:
                self._functions[launch.kernel] = _call(
                    "cuModuleGetFunction", self._module, launch.kernel.encode(), what=f"(kernel {launch.kernel})"
                )
        while len(self._scratch_buffers) < len(self._scratch):
            self._scratch_buffers.append(_DeviceBuffer(self._scratch[len(self._scratch_buffers)].nbytes))

    def _argument_buffers(self) -> list[_DeviceBuffer]:
        """Device copies of the arguments for calls on NumPy arrays, kept for
        the next call (the shapes never change)."""
        while len(self._staging) < len(self.specs):
            self._staging.append(_DeviceBuffer(self.specs[len(self._staging)].nbytes))
        return self._staging

    def _launch_all(self, pointers: list[int], events: list | None = None) -> None:
        """Every launch of the plan, in order; ``events`` (one more than the
        launches): recorded before each launch and after the last."""
        stream = _default_stream()
        key = tuple(pointers)
        if self._packed is not None and self._packed[0] == key:
            packed = self._packed[1]  # the same arrays as the last call: the same parameters
        else:
            packed = [self._pack(launch, pointers) for launch in self._launches]
            self._packed = (key, packed)
        for k, (launch, (values, params)) in enumerate(zip(self._launches, packed)):
            if events:
                _call("cuEventRecord", events[k], stream)
            _call(
                "cuLaunchKernel",
                self._functions[launch.kernel],
                *launch.grid,
                *launch.block,
                launch.shared_bytes,
                stream,
                ctypes.addressof(params) if values else 0,
                0,
                what=f"(kernel {launch.kernel} of @{self.name})",
            )
        if events:
            _call("cuEventRecord", events[-1], stream)

    def _pack(self, launch, pointers: list[int]) -> tuple:
        """(the parameter values, cuLaunchKernel's array of pointers to them)."""
        values = []
        for p in launch.params:
            if p.kind == "arg":
                values.append(ctypes.c_void_p(pointers[p.index]))
            elif p.kind == "scratch":
                values.append(ctypes.c_void_p(self._scratch_buffers[p.index].ptr))
            else:
                values.append(p.value)
        # cuLaunchKernel's kernelParams: an array of pointers to each value.
        return values, (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])

    def _synchronize(self) -> None:
        _call("cuCtxSynchronize", what=f"after the launches of @{self.name} ({self._kernel_names()})")

    def _kernel_names(self) -> str:
        return ", ".join(dict.fromkeys(launch.kernel for launch in self._launches))

    def close(self) -> None:
        """Free the scratch and argument buffers and unload the module (the
        next call loads them again)."""
        with self._lock:
            if self._module is None and not self._scratch_buffers and not self._staging:
                return
            if _CONTEXT is None:  # made under another driver (a test's fake): nothing to free here
                self._module, self._functions, self._scratch_buffers, self._staging, self._packed = None, {}, [], [], None
                return
            _call("cuCtxSetCurrent", _CONTEXT.handle)
            self._packed = None  # it names the scratch buffers freed here
            buffers, self._scratch_buffers, self._staging = self._scratch_buffers + self._staging, [], []
            for buffer in buffers:
                buffer.free()
            module, self._module, self._functions = self._module, None, {}
            if module is not None:
                _call("cuModuleUnload", module)

    def __enter__(self) -> "CudaKernel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        # At interpreter shutdown the driver module may already be gone.
        if sys.is_finalizing() or not hasattr(self, "_lock"):
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to from a finaliser
            pass

    def __repr__(self) -> str:
        return f"<lt_mlir.CudaKernel @{self.name}({self._signature_text()}) {self.arch}>"


def _check_device(where: str, device_type: int, device_id: int, ordinal: int) -> None:
    if device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise ArgumentError(
            f"{where} is on {_device_name(device_type, device_id)}, not on a CUDA device "
            f"(the kernel runs on cuda:{ordinal})"
        )
    if device_id != ordinal:
        raise ArgumentError(
            f"{where} is on cuda:{device_id}; the kernel runs on cuda:{ordinal} (set LT_CUDA_DEVICE to change it)"
        )


def _overlap(a: int, a_bytes: int, b: int, b_bytes: int) -> bool:
    return a_bytes > 0 and b_bytes > 0 and a < b + b_bytes and b < a + a_bytes


__all__ = ["FORMAT", "CudaKernel", "available", "load", "save"]
