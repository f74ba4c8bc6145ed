"""LLVM IR -> machine code with llvmlite: parsing, O3, and target machines
for the host CPU or a named one (``lt-opt --mcpu=NAME --mattr=+f1,-f2``,
``compile(..., cpu=, features=)``).

``cpu_target()`` is the host: its CPU name and every feature it has, as
before.  ``cpu_target("znver2")`` is that CPU with the features LLVM gives
it, whatever this machine is, so IR and assembly can be checked for an
AVX2 or an AVX-512 CPU on either; ``features`` adds or removes features
(``+avx512f``, ``-fma``) on top.  Names are checked against LLVM's own
lists (``help_text()``, ``lt-opt --mcpu=help``): a
misspelt name is an error here, not a warning LLVM prints and ignores.
Code built for a CPU runs only on machines that have its features.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from dataclasses import dataclass

import llvmlite.binding as llvm

from ..errors import CompileError


@functools.cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def _captured_stderr(call) -> str:
    """What ``call()`` writes to file descriptor 2 (LLVM prints there)."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode(errors="replace")


@functools.cache
def _llvm_help() -> tuple[dict, dict]:
    """({cpu: description}, {feature: description}) of the host's LLVM target."""
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    text = _captured_stderr(lambda: target.create_target_machine(cpu="help"))
    cpus, features, section = {}, {}, None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            section = cpus
        elif line.startswith("Available features"):
            section = features
        elif section is not None:
            m = re.match(r"\s+(\S+)\s+- (.*)", line)
            if m:
                section[m.group(1)] = m.group(2).strip()
    return cpus, features


def help_text() -> str:
    """The CPU and feature names, for ``lt-opt --mcpu=help``."""
    cpus, features = _llvm_help()
    width = max(map(len, [*cpus, *features]), default=0)
    lines = [f"CPUs of {llvm.get_process_triple()} (this host: {llvm.get_host_cpu_name()}):"]
    lines += [f"  {name}" for name in sorted(cpus)]
    lines.append("Features (--mattr=+name,-name):")
    lines += [f"  {name:<{width}}  {text}" for name, text in sorted(features.items())]
    return "\n".join(lines)


@dataclass(frozen=True)
class CpuTarget:
    """A CPU to generate code for: LLVM's CPU name and feature string."""

    cpu: str
    features: str
    host: bool


_FEATURE = re.compile(r"[+-][A-Za-z0-9][A-Za-z0-9_.\-]*")


def _check_features(features: str) -> list[str]:
    items = [f.strip() for f in features.split(",") if f.strip()]
    known = _llvm_help()[1]
    for item in items:
        if not _FEATURE.fullmatch(item):
            raise CompileError(f"error: bad CPU feature '{item}': write +name to enable a feature, -name to disable it")
        if item[1:] not in known:
            raise CompileError(f"error: unknown CPU feature '{item[1:]}' (lt-opt --mcpu=help lists them)")
    return items


def cpu_target(cpu: str | None = None, features: str | None = None) -> CpuTarget:
    """The host (``cpu=None``) or CPU ``cpu``, with ``features`` (``+f1,-f2``)
    on top.  Raises ``CompileError`` for a name LLVM does not know."""
    _init()
    extra = _check_features(features or "")
    if cpu in (None, "", "host", "native"):
        base = llvm.get_host_cpu_features().flatten()
        joined = ",".join(([base] if base else []) + extra)
        return CpuTarget(llvm.get_host_cpu_name(), joined, host=not extra)
    if cpu not in _llvm_help()[0]:
        raise CompileError(f"error: unknown CPU '{cpu}' (lt-opt --mcpu=help lists them)")
    return CpuTarget(cpu, ",".join(extra), host=False)


def target_machine(target: CpuTarget | None = None, opt: int = 3):
    """A fresh TargetMachine for ``target`` (default: this host).  MCJIT
    takes ownership of the one it is given, so every engine needs its own
    (shared/STACK.md)."""
    _init()
    target = target or cpu_target()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=target.cpu, features=target.features, opt=opt, reloc="pic", codemodel="default"
    )


def jit_target_machine(target: CpuTarget | None = None, opt: int = 3):
    """A fresh TargetMachine for MCJIT: the large code model with static
    relocations, so every reference between the JIT's sections (code,
    constant pools, the OpenMP and libm entry points) is a 64-bit absolute
    address.  The small model's 32-bit PC-relative offsets overflow when the
    JIT's memory manager places a kernel's sections more than 2 GiB apart,
    which happens after many kernels in one process (RuntimeDyldELF's
    ``isInt<32>(RealOffset)`` abort in a search worker; halide/Halide#3208,
    llvm/llvm-project#71963).  Objects and assembly for files keep
    ``target_machine``'s small PIC model."""
    _init()
    target = target or cpu_target()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=target.cpu, features=target.features, opt=opt, reloc="static", codemodel="large"
    )


@functools.cache
def host_vector_width(element_bytes: int = 4) -> int:
    """Elements of ``element_bytes`` in the widest vector register this host
    has: 512-bit with AVX-512, 256-bit with AVX, else 128-bit."""
    _init()
    have = {f for f, on in llvm.get_host_cpu_features().items() if on}
    bits = 512 if "avx512f" in have else 256 if "avx" in have else 128
    return max(1, bits // 8 // element_bytes)


def parse_ir(llvm_ir: str):
    """Parse and verify LLVM IR text into an llvmlite module."""
    _init()
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.verify()
    except RuntimeError as e:
        raise CompileError(f"error: invalid LLVM IR: {' '.join(str(e).split())}") from None
    return mod


def run_o3(mod, tm, opt: int = 3):
    """Retarget ``mod`` to ``tm`` and run the new pass manager's O``opt``."""
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


@functools.cache
def libmvec():
    """glibc's vector math library (``ctypes.CDLL``), loaded so that the JIT
    resolves its functions, or None where there is none."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("mvec")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        llvm.load_library_permanently(name)
    except (OSError, RuntimeError):
        return None
    return lib


def vector_math_abi(target: CpuTarget, bits: int | None = None):
    """(the ``_ZGV<isa>N<lanes>v_<name>`` function of libmvec for a libm
    function and a lane count, or None) for code that runs on this host
    with AVX2 (``d``: 8 floats, 4 doubles) or AVX-512F (``e``: 16, 8);
    None when the target is not this host, has neither, or there is no
    libmvec (glibc's vector math: at most 4 ulp of error, documented).
    ``bits`` (256 or 512: a named CPU's vector register): the functions a
    JIT on a host of that CPU calls, for code that is only read (the cost
    model's IR of the CPU that measured a schedule), not run here."""
    features = set(target.features.split(","))
    if bits is not None:  # AVX2 at 256 bits (libmvec's ``d`` variants need it), AVX-512F at 512
        features = {"+avx2", "+avx512f"} if bits >= 512 else {"+avx2"} if bits >= 256 else set()
    elif not target.host:
        return None
    if "+avx2" not in features and "+avx512f" not in features:
        return None
    lib = libmvec()
    if lib is None:
        return None
    isas = (("e", 512), ("d", 256)) if "+avx512f" in features else (("d", 256),)

    def function(name: str, lanes: int, bits: int):
        for isa, width in isas:
            if lanes * bits == width and hasattr(lib, f"_ZGV{isa}N{lanes}v_{name}"):
                return f"_ZGV{isa}N{lanes}v_{name}"
        return None

    return function


def optimize(llvm_ir: str, target: CpuTarget | None = None, opt: int = 3):
    """Parse and optimise LLVM IR text for ``target`` (default: this host);
    returns the llvmlite module."""
    return run_o3(parse_ir(llvm_ir), target_machine(target, opt), opt)


def emit_assembly(mod, target: CpuTarget | None = None) -> str:
    return target_machine(target).emit_assembly(mod)


def emit_object(mod, target: CpuTarget | None = None) -> bytes:
    return target_machine(target).emit_object(mod)


def emit_jit_object(mod, target: CpuTarget | None = None) -> bytes:
    """An object file for this process's JIT (``jit_target_machine``'s
    large code model): what ``runtime.native.JitModule.from_object`` loads,
    in this process or another on the same host."""
    return jit_target_machine(target).emit_object(mod)
