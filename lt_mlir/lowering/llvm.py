"""From scf/memref/arith to the ``llvm`` dialect, and from there to LLVM IR.

Calling convention: functions take bare pointers to their memrefs
(``use-bare-ptr-memref-call-conv``): every lt memref is static and
contiguous, so a pointer says everything, and the AOT header is plain C.
Every memref argument is marked ``llvm.noalias`` (lt kernels, like
loop_tool's, never see aliasing arguments; the runtime checks that before a
call), which lets LLVM keep accumulators in registers.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct

from ..dialect import lt
from ..errors import CompileError, format_location, from_mlir_error
from ..mlir import MLIR_LIBS, func, ir, passmanager
from .alias_scopes import add_alias_scopes
from .lt_to_scf import SCHEDULE_ATTR, lower_lt_to_scf

# After lower-lt-to-scf.  Order matters: func-to-llvm with the bare-pointer
# convention first, then memref, then the control flow and scalar dialects;
# math ops become LLVM intrinsics where there is one, libm calls otherwise
# (math.erf: erf/erff, which the JIT resolves in the process's libm).
CPU_PIPELINE = (
    "builtin.module("
    "func.func(canonicalize, cse, loop-invariant-code-motion), "
    "expand-strided-metadata, "
    "convert-scf-to-cf, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, "
    "finalize-memref-to-llvm, "
    "convert-math-to-llvm, convert-math-to-libm, "
    "convert-to-llvm, "
    "reconcile-unrealized-casts, canonicalize)"
)


def mark_noalias(module: ir.Module | ir.Operation) -> None:
    """Add ``llvm.noalias`` to every memref argument of every function."""
    op = module.operation
    with op.context:
        for f in lt.functions(op):
            ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
            old = f.attributes["arg_attrs"] if "arg_attrs" in f.attributes else None
            new = []
            for i, t in enumerate(ftype.inputs):
                entries = {}
                if old is not None:
                    d = ir.DictAttr(ir.ArrayAttr(old)[i])
                    entries = {n.name: n.attr for n in d}
                if isinstance(t, ir.MemRefType):
                    entries["llvm.noalias"] = ir.UnitAttr.get()
                new.append(ir.DictAttr.get(entries))
            f.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


def run_pipeline(module: ir.Module | ir.Operation, pipeline: str) -> None:
    """Run an upstream textual pipeline, raising project errors."""
    op = module.operation
    with op.context:
        try:
            pm = passmanager.PassManager.parse(pipeline)
        except (ValueError, ir.MLIRError) as e:
            raise CompileError(f"error: bad pipeline {pipeline!r}: {' '.join(str(e).split())}") from None
        try:
            pm.run(op)
        except ir.MLIRError as e:
            raise from_mlir_error(e, CompileError) from None


# With parallel loops: scf.parallel -> OpenMP first, then this order
# (finalize-memref-to-llvm must lower the alloca_scope the OpenMP conversion
# creates before scf-to-cf runs; shared/STACK.md).  Between the two halves
# each omp.wsloop takes the schedule its scf.parallel asked for.
OPENMP_PIPELINE = (
    "builtin.module("
    "func.func(canonicalize, cse, loop-invariant-code-motion), "
    "expand-strided-metadata)",
    "builtin.module(convert-scf-to-openmp)",
    "builtin.module("
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, "
    "finalize-memref-to-llvm, "
    "convert-scf-to-cf, "
    "convert-math-to-llvm, convert-math-to-libm, "
    "convert-to-llvm, "
    "reconcile-unrealized-casts, canonicalize)"
)


def _allocas_per_thread(module) -> None:
    """Move the fixed-size ``memref.alloca`` ops inside each ``omp.parallel``
    (a parallel loop's per-iteration buffers: a scalar local, a cache tile)
    to the start of its region: one buffer a thread, reused by the
    iterations it runs (each writes before it reads, as a fresh alloca
    would need).  Outlined, they sit in the thread function's entry block,
    where LLVM promotes scalars to registers; in the loop body, every
    ``s += ...`` was a store and a load (and stack a run, in an
    alloca_scope)."""
    for par in _ops(module, "omp.parallel"):
        first = list(list(par.regions[0].blocks)[0].operations)[0]
        for o in _ops(par, "memref.alloca"):
            if not list(o.operands) and o.parent != par:
                o.move_before(first)


def _ops(module, name: str) -> list:
    """The ops called ``name`` in ``module`` (or an op), in walk order."""
    found = []
    getattr(module, "operation", module).walk(lambda o: (found.append(o) if o.name == name else None, ir.WalkResult.ADVANCE)[1])
    return found


def uses_openmp(module) -> bool:
    return bool(_ops(module, "scf.parallel"))


# math ops on vectors that libmvec has vector variants of (libm's name of the double version)
_VECTOR_MATH = {f"math.{op}": op for op in ("exp", "log", "erf", "tanh", "sin", "cos", "log1p", "expm1", "exp2", "log2")}


def use_vector_math(module: ir.Module | ir.Operation, function, scalar: set = frozenset()) -> int:
    """Replace each ``math.exp``/``log``/``erf``/``tanh``/... on a vector by a
    call of its vector variant in glibc's libmvec (``function(libm name,
    lanes, element bits)``: ``machine.vector_math_abi``), in every function
    but those named in ``scalar`` (``strict`` mode: libm's scalar functions,
    which convert-math-to-llvm/-libm call lane by lane).  Without this, LLVM
    splits a vector ``exp`` or ``erf`` into one libm call a lane.  Returns
    how many ops it replaced."""
    op = module.operation
    found = []

    def visit(o):
        if o.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value in scalar:
            return ir.WalkResult.SKIP
        if o.name in _VECTOR_MATH and len(o.results) == 1 and isinstance(o.results[0].type, ir.VectorType):
            found.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    declared: dict = {}
    replaced = 0
    with op.context:
        for o in found:
            vt = ir.VectorType(o.results[0].type)
            element = vt.element_type
            if vt.rank != 1 or not (isinstance(element, (ir.F32Type, ir.F64Type))):
                continue
            bits = 32 if isinstance(element, ir.F32Type) else 64
            base = _VECTOR_MATH[o.name]
            symbol = function(base + ("f" if bits == 32 else ""), vt.shape[0], bits)
            if symbol is None:
                continue
            if symbol not in declared:
                with ir.InsertionPoint.at_block_begin(module.body if hasattr(module, "body") else op.regions[0].blocks[0]):
                    declared[symbol] = func.FuncOp(symbol, ir.FunctionType.get([vt], [vt]), visibility="private",
                                                   loc=ir.Location.unknown())
            with ir.InsertionPoint(o), o.location:
                call = func.CallOp([vt], ir.FlatSymbolRefAttr.get(symbol), [o.operands[0]])
            o.results[0].replace_all_uses_with(call.results[0])
            o.erase()
            replaced += 1
    return replaced


def lower_to_llvm_dialect(module: ir.Module | ir.Operation, check_bounds: bool = True) -> bool:
    """lt -> scf -> llvm dialect, in place (``lower-lt-to-llvm``).  Returns
    whether the code calls the OpenMP runtime (parallel loops)."""
    lower_lt_to_scf(module, check_bounds)
    return scf_to_llvm_dialect(module)


def scf_to_llvm_dialect(module: ir.Module | ir.Operation) -> bool:
    """A module lowered to scf/memref/arith (by lower-lt-to-scf, or the GPU
    lowering emulated on the CPU) -> llvm dialect, in place.  Returns whether
    the code calls the OpenMP runtime."""
    mark_noalias(module)
    openmp = uses_openmp(module)
    if openmp:
        tidy, to_openmp, rest = OPENMP_PIPELINE
        run_pipeline(module, tidy)  # (folds a one-iteration scf.parallel away)
        schedules = _ops(module, "scf.parallel")
        schedules = [ir.StringAttr(o.attributes[SCHEDULE_ATTR]).value if SCHEDULE_ATTR in o.attributes else None for o in schedules]
        run_pipeline(module, to_openmp)
        loops = _ops(module, "omp.wsloop")
        if len(loops) != len(schedules):
            raise CompileError(f"error: convert-scf-to-openmp made {len(loops)} omp.wsloop from {len(schedules)} scf.parallel")
        with module.operation.context:
            for loop, schedule in zip(loops, schedules):
                if schedule:
                    loop.attributes["schedule_kind"] = ir.Attribute.parse(f"#omp<schedulekind {schedule}>")
            _allocas_per_thread(module)
        run_pipeline(module, rest)
    else:
        run_pipeline(module, CPU_PIPELINE)
    add_alias_scopes(module)
    return openmp


class _CAPI:
    """The two C API entry points the Python bindings do not expose."""

    _lib = None

    @classmethod
    def lib(cls):
        if cls._lib is None:
            path = os.path.join(MLIR_LIBS, "libTorchMLIRAggregateCAPI.so")
            lib = ctypes.CDLL(path)
            lib.mlirRegisterAllLLVMTranslations.argtypes = [ctypes.c_void_p]
            lib.mlirRegisterAllLLVMTranslations.restype = None
            lib.mlirTranslateModuleToLLVMIRToString.argtypes = [ctypes.c_void_p]
            lib.mlirTranslateModuleToLLVMIRToString.restype = ctypes.c_void_p
            cls._lib = lib
        return cls._lib


_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.argtypes = [ctypes.py_object]
_capsule_name.restype = ctypes.c_char_p
_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_ptr.restype = ctypes.c_void_p
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_registered_contexts: "set[int]" = set()


def _c_pointer(obj) -> int:
    capsule = obj._CAPIPtr
    return _capsule_ptr(capsule, _capsule_name(capsule))


def translate_to_llvm_ir(module: ir.Module | ir.Operation) -> str:
    """LLVM IR text of a module that is entirely in the ``llvm`` dialect."""
    op = module.operation
    # The C API's translator crashes (it does not fail) on an op it cannot
    # translate: check first, and say which op and where.
    stray = []
    op.walk(lambda o: (stray.append(o) if not o.name.startswith(("llvm.", "omp.", "nvvm.")) and o.name != "builtin.module" else None, ir.WalkResult.ADVANCE)[1])
    if stray:
        where = format_location(stray[0].location)
        raise CompileError(f"{where + ': ' if where else ''}error: {stray[0].name} has no lowering to LLVM IR on this target")
    lib = _CAPI.lib()
    ctx_ptr = _c_pointer(op.context)
    if ctx_ptr not in _registered_contexts:
        lib.mlirRegisterAllLLVMTranslations(ctx_ptr)
        _registered_contexts.add(ctx_ptr)
    raw = lib.mlirTranslateModuleToLLVMIRToString(_c_pointer(op))
    if not raw:
        raise CompileError("error: translation to LLVM IR failed (is the module fully in the llvm dialect?)")
    try:
        text = ctypes.string_at(raw).decode()
    finally:
        _libc.free(raw)
    if not text.strip():
        raise CompileError("error: translation to LLVM IR failed (is the module fully in the llvm dialect?)")
    return _hex_special_floats(text)


# The bundled translator spells infinities and NaNs as `float -inf`, newer
# syntax than llvmlite's LLVM 22 parser reads; the hex forms mean the same.
_SPECIAL_FLOATS = {
    ("float", "inf"): "0x7FF0000000000000",
    ("float", "-inf"): "0xFFF0000000000000",
    ("float", "nan"): "0x7FF8000000000000",
    ("float", "-nan"): "0xFFF8000000000000",
    ("half", "inf"): "0xH7C00",
    ("half", "-inf"): "0xHFC00",
    ("half", "nan"): "0xH7E00",
    ("half", "-nan"): "0xHFE00",
    ("bfloat", "inf"): "0xR7F80",
    ("bfloat", "-inf"): "0xRFF80",
    ("bfloat", "nan"): "0xR7FC0",
    ("bfloat", "-nan"): "0xRFFC0",
}
_SPECIAL_FLOAT = re.compile(r"(?<![\w.%@\"])([+-]?(?:inf|nan))\b")
# It also spells a float constant by the type's own bits when it has no
# short decimal form (`fmul float %9, f0x3E2AAAAB`), or by its shortest
# decimal (`1.200000e+00`), which the older parser reads as a double and
# refuses when a float cannot hold it exactly.  The older forms: `0x` with
# the value as a double for float and double, `0xH`/`0xR` with the bits for
# half/bfloat.  A constant's type is the last one named before it.
_FLOAT_CONSTANT = re.compile(r"(?<![\w.%@\"])(?:f0x([0-9A-Fa-f]+)\b|(-?\d+\.\d+e[+-]\d+))")
_FLOAT_TYPE = re.compile(r"\b(float|double|half|bfloat)\b")


def _double_hex(value: float) -> str:
    return "0x" + struct.pack(">d", value).hex().upper()


def _legacy_constant(line: str, m) -> str:
    kinds = _FLOAT_TYPE.findall(line, 0, m.start())
    bits, decimal = m.group(1), m.group(2)
    if decimal is not None:  # a double's decimal is exact; narrower types' need not be
        kind = kinds[-1] if kinds else "double"
        if kind == "float":
            return _double_hex(struct.unpack(">f", struct.pack(">f", float(decimal)))[0])
        if kind == "half":
            return "0xH" + struct.pack(">e", float(decimal)).hex().upper()
        return decimal  # (lt has no bfloat element type)
    kind = kinds[-1] if kinds else {4: "half", 8: "float"}.get(len(bits), "double")
    if kind == "half":
        return "0xH" + bits.upper()
    if kind == "bfloat":
        return "0xR" + bits.upper()
    if kind == "float":
        return _double_hex(struct.unpack(">f", bytes.fromhex(bits.zfill(8)))[0])
    return "0x" + bits.zfill(16).upper()


def _hex_special_floats(text: str) -> str:
    """``text`` in the float syntax llvmlite's parser reads."""

    def hexed(line, m):
        # the constant's type is the last one named before it (`float -inf`,
        # `phi float [ -inf, %4 ]`)
        kinds = _FLOAT_TYPE.findall(line, 0, m.start())
        if not kinds:
            return m.group(0)
        kind, value = kinds[-1], m.group(1).lstrip("+")
        return _SPECIAL_FLOATS[("float" if kind == "double" else kind, value)]

    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "f0x" in line or "e+" in line or "e-" in line:
            line = lines[i] = _FLOAT_CONSTANT.sub(lambda m, line=line: _legacy_constant(line, m), line)
        if "inf" in line or "nan" in line:
            lines[i] = _SPECIAL_FLOAT.sub(lambda m, line=line: hexed(line, m), line)
    return "\n".join(lines)
