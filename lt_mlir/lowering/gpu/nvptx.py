"""From ``gpu.launch`` to PTX, and the launch plan the runtime follows.

    lt (mapped loops) --lower-lt-to-gpu--> func with gpu.launch ops
      --gpu-launch-sink-index-computations, gpu-kernel-outlining-->
    host func of gpu.launch_func ops + gpu.module kernels
      --convert-gpu-to-nvvm (bare pointers)--> llvm/nvvm dialect
      --MLIR C API--> LLVM IR --llvmlite NVPTX (O3, libdevice)--> PTX

The host function is not compiled: it is read into the artifact's launch
plan (``runtime/cuda.py`` documents the format): for each ``launch_func``
in order, the kernel's name, its grid and block sizes (constants: lt sizes
are static) and where each kernel parameter comes from (an argument of the
entry function, a top-level scratch buffer, or a constant).  The runtime
replays that plan with the CUDA driver, so running needs neither MLIR nor
LLVM.

Math functions (``math.exp`` ...) become libdevice calls (``__nv_expf``);
libdevice comes from the ``nvidia-cuda-nvcc`` wheel (``pip install
'lt_mlir[cuda]'``) and is linked in before optimisation, then everything
but the kernels is internalised so unused libdevice code disappears.
"""

from __future__ import annotations

import functools
import glob
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import llvmlite.binding as llvm

from ...dialect import lt
from ...dtypes import ELEMENT_TYPES
from ...errors import CompileError
from ...mlir import ir
from .. import machine
from ..llvm import run_pipeline, translate_to_llvm_ir
from .lt_to_gpu import MIN_BLOCKS, lower_lt_to_gpu

DEFAULT_ARCH = "sm_90"
# arch -> the PTX ISA version llvmlite's NVPTX backend should emit for it
ARCHS = {
    "sm_75": "+ptx64",
    "sm_80": "+ptx70",
    "sm_86": "+ptx71",
    "sm_89": "+ptx78",
    "sm_90": "+ptx80",
    "sm_90a": "+ptx80",
    "sm_100": "+ptx86",
    "sm_120": "+ptx87",
}

HOST_PIPELINE = (
    "builtin.module("
    "func.func(canonicalize, cse), "
    "gpu-launch-sink-index-computations, "
    "gpu-kernel-outlining)"
)
DEVICE_PIPELINE = (
    "builtin.module(gpu.module("
    "canonicalize, cse, loop-invariant-code-motion, "
    "expand-strided-metadata, "
    "convert-scf-to-cf, "
    "convert-nvgpu-to-nvvm, "
    "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}, "
    "reconcile-unrealized-casts, canonicalize))"
)


def check_arch(arch: str) -> str:
    if arch not in ARCHS:
        raise CompileError(f"error: unknown GPU architecture '{arch}' (known: {', '.join(ARCHS)})")
    return arch


def outline(module) -> None:
    """``gpu.launch`` -> host ``gpu.launch_func`` + ``gpu.module`` kernels;
    a launch marked ``lt.min_blocks`` (lt-min-blocks) gives its kernel
    ``nvvm.minctasm`` (PTX ``.minnctapersm``)."""
    wanted = []
    module.operation.walk(lambda o: (wanted.append(o.attributes[MIN_BLOCKS] if MIN_BLOCKS in o.attributes else None)
                                     if o.name == "gpu.launch" else None, ir.WalkResult.ADVANCE)[1])
    run_pipeline(module, HOST_PIPELINE)
    if not any(w is not None for w in wanted):
        return
    calls = []
    module.operation.walk(lambda o: (calls.append(o) if o.name == "gpu.launch_func" else None, ir.WalkResult.ADVANCE)[1])
    kernels = {}
    module.operation.walk(lambda o: (kernels.setdefault(_kernel_key(o), o) if o.name == "gpu.func" else None, ir.WalkResult.ADVANCE)[1])
    if len(calls) != len(wanted):  # (each launch becomes one launch_func, in order)
        raise CompileError(f"error: lt-min-blocks: {len(wanted)} launches became {len(calls)} kernel calls: cannot tell which kernel asked")
    with module.operation.context:
        for call, blocks in zip(calls, wanted):
            if blocks is not None:
                kernel = kernels[str(ir.SymbolRefAttr(call.attributes["kernel"]))]
                kernel.attributes["nvvm.minctasm"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), ir.IntegerAttr(blocks).value)


def _kernel_key(func) -> str:
    """``@module::@kernel``, as a gpu.launch_func names the gpu.func."""
    return f"@{ir.StringAttr(func.parent.attributes['sym_name']).value}::@{ir.StringAttr(func.attributes['sym_name']).value}"


def lower_kernels_to_nvvm(module) -> None:
    """Kernels in gpu.module ops -> llvm + nvvm dialects."""
    _mark_kernel_noalias(module)
    run_pipeline(module, DEVICE_PIPELINE)


ALIGNMENT = 16  # bytes; runtime/cuda.py checks every pointer it passes


def _mark_kernel_noalias(module) -> None:
    """Kernel pointer parameters never overlap: entry arguments are checked
    by the runtime, scratch buffers are separate allocations, and outlining
    passes each value once.  Lets LLVM use the read-only data cache.  They
    are also 16-byte aligned (cuMemAlloc gives 256; the runtime refuses
    device arrays that are not), so LLVM can merge a thread's neighbouring
    accesses into one vector access (ld.global.v4)."""
    kernels = []
    module.operation.walk(lambda o: (kernels.append(o) if o.name == "gpu.func" else None, ir.WalkResult.ADVANCE)[1])
    with module.operation.context:
        for k in kernels:
            ftype = ir.FunctionType(ir.TypeAttr(k.attributes["function_type"]).value)
            i64 = ir.IntegerType.get_signless(64)
            pointer = {"llvm.noalias": ir.UnitAttr.get(), "llvm.align": ir.IntegerAttr.get(i64, ALIGNMENT)}
            attrs = [ir.DictAttr.get(pointer if isinstance(t, ir.MemRefType) else {}) for t in ftype.inputs]
            k.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def launch_plan(module, entry: str) -> tuple[list[dict], list[dict]]:
    """(launches, scratch) of function ``entry`` after outlining."""
    f = next(f for f in lt.functions(module.operation) if ir.StringAttr(f.attributes["sym_name"]).value == entry)
    block = f.regions[0].blocks[0]
    args = list(block.arguments)
    scratch: list[dict] = []
    scratch_values: list = []
    launches = []
    for op in lt.body_ops(block):
        name = op.name
        if name in ("arith.constant", "memref.alloc", "memref.alloca", "memref.dealloc", "func.return"):
            continue
        if name != "gpu.launch_func":
            raise CompileError(f"error: lower-lt-to-gpu left '{name}' on the host; every statement must run in a kernel")
        launch = op.opview
        sizes = [
            _constant(v, "launch size")
            for v in (launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ, launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ)
        ]
        params = []
        for v in launch.kernelOperands:
            params.append(_param(v, args, scratch, scratch_values))
        # gpu.module names are unique; the functions in them need not be
        # (device_module renames each kernel after its module).
        kernel = ir.SymbolRefAttr(op.attributes["kernel"]).value[0]
        launches.append({"kernel": kernel, "grid": sizes[:3], "block": sizes[3:], "shared_bytes": 0, "params": params})
    return launches, scratch


def _param(v, args, scratch, scratch_values) -> dict:
    for i, a in enumerate(args):
        if v == a:
            return {"kind": "arg", "index": i}
    for i, s in enumerate(scratch_values):
        if v == s:
            return {"kind": "scratch", "index": i}
    op = v.owner.operation if not isinstance(v.owner, ir.Block) else None
    if op is not None and op.name in ("memref.alloc", "memref.alloca"):
        t = ir.MemRefType(v.type)
        if str(t.element_type) not in ELEMENT_TYPES:
            raise CompileError(
                f"error: a scratch buffer of {t.element_type} cannot be passed to a CUDA kernel "
                f"(supported: {', '.join(ELEMENT_TYPES)})"
            )
        scratch_values.append(v)
        scratch.append({"shape": list(t.shape), "element": str(t.element_type)})
        return {"kind": "scratch", "index": len(scratch) - 1}
    if op is not None and op.name == "arith.constant":
        t = v.type
        if isinstance(t, ir.IndexType):
            return {"kind": "i64", "value": _constant(v, "kernel parameter")}
        if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width in (32, 64):
            return {"kind": f"i{ir.IntegerType(t).width}", "value": ir.IntegerAttr(op.attributes["value"]).value}
        if isinstance(t, (ir.F32Type, ir.F64Type)):
            return {"kind": str(t), "value": ir.FloatAttr(op.attributes["value"]).value}
    raise CompileError(f"error: a kernel parameter of type {v.type} is not an argument, scratch buffer or constant")


def _constant(v, what: str) -> int:
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        raise CompileError(f"error: {what} is not a constant")
    return ir.IntegerAttr(owner.operation.attributes["value"]).value


def device_module(module) -> ir.Module:
    """One builtin module with every kernel (and declaration) of the
    module's gpu.module ops, for translation to LLVM IR; each kernel takes
    the name of its gpu.module (unique, unlike the functions in them)."""
    out = ir.Module.create(loc=ir.Location.unknown(module.operation.context))
    seen = set()
    for op in lt.body_ops(module.body):
        if op.name != "gpu.module":
            continue
        module_name = ir.StringAttr(op.attributes["sym_name"]).value
        for inner in lt.body_ops(op.regions[0].blocks[0]):
            kernel = "nvvm.kernel" in inner.attributes
            sym = module_name if kernel else ir.StringAttr(inner.attributes["sym_name"]).value
            if sym in seen:
                continue  # libdevice declarations repeat in every gpu.module
            seen.add(sym)
            clone = inner.clone(ip=ir.InsertionPoint(out.body))
            if kernel:
                clone.attributes["sym_name"] = ir.StringAttr.get(sym)
    return out


@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def nvptx_target_machine(arch: str):
    _init()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    return target.create_target_machine(cpu=arch, features=ARCHS[check_arch(arch)], opt=3)


def _wheel_file(variable: str, patterns: tuple) -> str | None:
    """$``variable`` if set (and present), else the newest file matching one
    of ``patterns`` under a ``sys.path`` entry (the nvidia-cuda-nvcc wheel)."""
    env = os.environ.get(variable)
    if env:
        return env if os.path.exists(env) else None
    for root in dict.fromkeys(sys.path):
        for pattern in patterns:
            found = sorted(glob.glob(os.path.join(root, pattern)))
            if found:
                return found[-1]
    return None


def libdevice_path() -> str | None:
    """libdevice.10.bc from the nvidia-cuda-nvcc wheel (or $LT_LIBDEVICE)."""
    return _wheel_file("LT_LIBDEVICE", ("nvidia/cu*/nvvm/libdevice/libdevice*.bc", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice*.bc"))


def ptxas_path() -> str | None:
    """ptxas from the nvidia-cuda-nvcc wheel (or $LT_PTXAS), if installed."""
    return _wheel_file("LT_PTXAS", ("nvidia/cu*/bin/ptxas",))


def assemble(ptx: str, arch: str = DEFAULT_ARCH) -> str | None:
    """Assemble ``ptx`` with ptxas; None when it assembles, else ptxas's
    complaint.  Raises CompileError when ptxas is not installed."""
    path = ptxas_path()
    if path is None:
        raise CompileError("error: ptxas not found: pip install 'lt_mlir[cuda]' (the nvidia-cuda-nvcc wheel) or set LT_PTXAS")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run([path, f"-arch={arch}", src, "-o", os.path.join(tmp, "kernel.cubin")], capture_output=True, text=True)
    return None if proc.returncode == 0 else " ".join(proc.stderr.split())[:2000]


def ptx_from_llvm_ir(llvm_ir: str, arch: str) -> str:
    """Optimise device LLVM IR (O3, libdevice linked when needed) and emit PTX."""
    tm = nvptx_target_machine(arch)
    mod = machine.parse_ir(llvm_ir)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    # The kernels are this module's own (before libdevice's hundreds of
    # functions are linked in: printing each to look costs seconds).
    kernels = {f.name for f in mod.functions if not f.is_declaration and "ptx_kernel" in str(f)}
    needed = sorted(f.name for f in mod.functions if f.is_declaration and f.name.startswith("__nv_"))
    if needed:
        path = libdevice_path()
        if path is None:
            raise CompileError(
                f"error: the kernels call {', '.join(needed)} from libdevice, which was not found: "
                "pip install 'lt_mlir[cuda]' (the nvidia-cuda-nvcc wheel) or set LT_LIBDEVICE"
            )
        with open(path, "rb") as fh:
            lib = llvm.parse_bitcode(fh.read())
        lib.triple = mod.triple
        lib.data_layout = mod.data_layout
        mod.link_in(lib)
    for f in mod.functions:
        if not f.is_declaration and f.name not in kernels:
            f.linkage = "internal"
    machine.run_o3(mod, tm)
    return tm.emit_assembly(mod)


@dataclass
class CudaLowered:
    """A module compiled for CUDA: PTX, its launch plan, and the device LLVM IR."""

    meta: dict
    ptx: str
    llvm_ir: str


def compile_to_ptx(module, entry: str, specs, arch: str = DEFAULT_ARCH, check_bounds: bool = True) -> CudaLowered:
    """lt module (a private copy; rewritten in place) -> PTX and launch plan."""
    check_arch(arch)
    with module.operation.context:
        for f in lt.functions(module.operation):
            if ir.StringAttr(f.attributes["sym_name"]).value != entry:
                f.erase()
    lower_lt_to_gpu(module, check_bounds, async_copies=int(arch[3:].rstrip("a")) >= 80)  # cp.async: sm_80 and later
    outline(module)
    launches, scratch = launch_plan(module, entry)
    if not launches:
        raise CompileError(f"error: @{entry} has no statements: nothing to run on the GPU")
    lower_kernels_to_nvvm(module)
    with module.operation.context:
        dev = device_module(module)
        llvm_ir = translate_to_llvm_ir(dev)
    ptx = ptx_from_llvm_ir(llvm_ir, arch)
    meta = {
        "format": "lt_mlir-cuda-v1",
        "entry": entry,
        "arch": arch,
        "alignment": ALIGNMENT,
        "args": [s.to_json() for s in specs],
        "scratch": scratch,
        "launches": launches,
    }
    return CudaLowered(meta, ptx, llvm_ir)
