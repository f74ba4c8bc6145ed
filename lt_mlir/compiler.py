"""The lowering API: text -> module -> native code.

    >>> import lt_mlir
    >>> kernel = lt_mlir.compile(open("matmul.mlir").read())
    >>> C = kernel(A, B)

Each step is a function of its own so ``lt-opt`` and tests can stop anywhere.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from . import passes as _loop_passes  # noqa: F401  (registers the loop passes)
from .dialect.lt import parse_module, shared_context
from .errors import CompileError, LtError, with_filename
from .lowering import machine
from .lowering import passes as _lowering_passes  # noqa: F401  (registers the lowering steps)
from .lowering.gpu.lt_to_gpu import lower_lt_to_gpu
from .lowering.gpu.nvptx import DEFAULT_ARCH, compile_to_ptx
from .lowering.llvm import lower_to_llvm_dialect, scf_to_llvm_dialect, translate_to_llvm_ir
from .lowering.lt_to_scf import set_fastmath
from .mlir import ir
from .runtime import cuda, native
from .runtime.cuda import CudaKernel
from .runtime.kernel import ArgSpec, Kernel, find_function, function_name, signature

__all__ = ["Lowered", "c_header", "compile", "compile_aot", "lower", "lower_cuda", "parse_module"]

TARGETS = ("cpu", "cuda", "cuda-emulated")


def _as_module(module_or_text, filename: str = "-") -> ir.Module:
    if isinstance(module_or_text, str):
        return parse_module(module_or_text, filename, shared_context())
    # Work on a copy: lowering rewrites in place.
    op = module_or_text.operation
    return parse_module(op.get_asm(enable_debug_info=True), filename, op.context)


@dataclass
class Lowered:
    """A module on its way down: its entry signature and LLVM IR."""

    name: str
    specs: list[ArgSpec]
    llvm_ir: str
    openmp: bool = False  # calls the OpenMP runtime (parallel loops)


def lower(
    module_or_text,
    entry: str | None = None,
    filename: str = "-",
    check_bounds: bool = True,
    target: str = "cpu",
    fastmath: str | None = None,
) -> Lowered:
    """lt module (or its text) -> unoptimised LLVM IR of the whole module
    (``target="cuda-emulated"``: GPU mappings run as sequential loops).
    ``fastmath``: the floating-point mode of every function (``default``,
    ``strict``, ``fast`` or LLVM flags such as ``"nnan,nsz"``; README,
    "Floating point"); None keeps each function's ``lt.fastmath``."""
    if target not in ("cpu", "cuda-emulated"):
        known = ", ".join(TARGETS)
        raise CompileError(
            f"error: unknown target '{target}' (targets: {known})" if target not in TARGETS
            else "error: lower() makes CPU code; target cuda compiles with lower_cuda()"
        )
    module = _as_module(module_or_text, filename)
    set_fastmath(module.operation, fastmath)
    f = find_function(module.operation, entry)
    name, specs = function_name(f), signature(f)
    try:
        if target == "cpu":
            openmp = lower_to_llvm_dialect(module, check_bounds)
        else:
            lower_lt_to_gpu(module, check_bounds, emulate=True)
            openmp = scf_to_llvm_dialect(module)
    except LtError as e:
        raise with_filename(e, filename) from None
    return Lowered(name, specs, translate_to_llvm_ir(module), openmp)


def lower_cuda(
    module_or_text,
    entry: str | None = None,
    filename: str = "-",
    check_bounds: bool = True,
    arch: str = DEFAULT_ARCH,
    fastmath: str | None = None,
):
    """lt module (or its text) -> PTX and the launch plan (``lowering/gpu/nvptx.py``)."""
    module = _as_module(module_or_text, filename)
    set_fastmath(module.operation, fastmath)
    f = find_function(module.operation, entry)
    name, specs = function_name(f), signature(f)
    try:
        return compile_to_ptx(module, name, specs, arch, check_bounds)
    except LtError as e:
        raise with_filename(e, filename) from None


def compile(  # noqa: A001
    module_or_text,
    entry: str | None = None,
    filename: str = "-",
    check_bounds: bool = True,
    target: str = "cpu",
    arch: str = DEFAULT_ARCH,
    cpu: str | None = None,
    features: str | None = None,
    fastmath: str | None = None,
):
    """Compile an lt module to a callable.

    ``target="cpu"``: native code (JIT, O3), a ``Kernel``, for this CPU or
    for ``cpu`` (an LLVM CPU name such as ``"znver2"`` or
    ``"skylake-avx512"``) with ``features`` (``"+avx512f,-fma"``) added or
    removed; code for a CPU other than this one runs only if this one has
    its features (``compile_aot`` builds for other machines).
    ``target="cuda"``: PTX for NVIDIA GPUs of ``arch``, a
    ``runtime.cuda.CudaKernel`` taking NumPy arrays (copied in and out) or
    device arrays (DLPack: torch, cupy).  Compiling needs no GPU.
    ``target="cuda-emulated"``: the GPU lowering (kernels, predicated
    tails, atomics) with blocks and threads run one after another as CPU
    code, a ``Kernel``: a schedule's GPU semantics checked on any machine.

    ``fastmath``: the floating-point mode (``lower``; README, "Floating
    point").  Accesses are proven in bounds first; ``check_bounds=False``
    skips that (only for testing what happens when they are not)."""
    if target == "cuda":
        lowered = lower_cuda(module_or_text, entry, filename, check_bounds, arch, fastmath)
        return CudaKernel(lowered.meta, lowered.ptx)
    if target not in ("cpu", "cuda-emulated"):
        raise CompileError(f"error: unknown target '{target}' (targets: cpu, cuda, cuda-emulated)")
    cpu_target = machine.cpu_target(cpu, features)
    lowered = lower(module_or_text, entry, filename, check_bounds, target, fastmath)
    mod = machine.optimize(lowered.llvm_ir, cpu_target)
    jit = native.JitModule(mod, lowered.openmp, cpu_target)
    return Kernel(lowered.name, lowered.specs, jit.address(lowered.name), jit, str(mod))


def c_header(name: str, specs: list[ArgSpec]) -> str:
    """A C declaration of an entry point, with its buffers documented."""
    guard = f"LT_MLIR_{name.upper()}_H"
    lines = [
        f"/* Generated by lt_mlir: entry point @{name}.",
        " * Every buffer is dense, row-major and must not overlap an output. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "#include <stdint.h>",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
    ]
    params = []
    for s in specs:
        role = "output" if s.written else "input"
        dims = "x".join(str(d) for d in s.shape) or "scalar"
        lines.append(f"/* arg{s.index}: {role} {s.element}[{dims}] ({s.nbytes} bytes) */")
        params.append(f"{'' if s.written else 'const '}{s.c_type} *arg{s.index}")
    lines += [
        f"void {name}({', '.join(params) or 'void'});",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(lines)


def compile_aot(
    module_or_text,
    out_prefix: str,
    entry: str | None = None,
    shared: bool = True,
    target: str = "cpu",
    arch: str = DEFAULT_ARCH,
    cpu: str | None = None,
    features: str | None = None,
    fastmath: str | None = None,
) -> dict:
    """Write ``<prefix>.o``, ``<prefix>.h`` and (``shared``) ``<prefix>.so``.

    Returns the paths written.  The object targets this host's CPU, or
    ``cpu`` with ``features`` (as for ``compile``).  With
    ``target="cuda"``: ``<prefix>.ptx`` and ``<prefix>.json`` (entry point,
    argument layout, launch plan), which ``lt_mlir.runtime.cuda.load``
    runs without MLIR or LLVM installed."""
    if target == "cuda":
        lowered = lower_cuda(module_or_text, entry, arch=arch, fastmath=fastmath)
        os.makedirs(os.path.dirname(os.path.abspath(out_prefix)), exist_ok=True)
        return cuda.save(out_prefix, lowered.meta, lowered.ptx)
    if target != "cpu":
        raise CompileError(f"error: unknown target '{target}' (targets: cpu, cuda)")
    cpu_target = machine.cpu_target(cpu, features)
    lowered = lower(module_or_text, entry, fastmath=fastmath)
    mod = machine.optimize(lowered.llvm_ir, cpu_target)
    os.makedirs(os.path.dirname(os.path.abspath(out_prefix)), exist_ok=True)
    paths = {"object": out_prefix + ".o", "header": out_prefix + ".h"}
    with open(paths["object"], "wb") as fh:
        fh.write(machine.emit_object(mod, cpu_target))
    with open(paths["header"], "w") as fh:
        fh.write(c_header(lowered.name, lowered.specs))
    if shared:
        paths["shared"] = out_prefix + ".so"
        cc = os.environ.get("CC", "cc")
        try:
            subprocess.run(
                [cc, "-shared", "-o", paths["shared"], paths["object"], "-lm"],
                check=True,
                capture_output=True,
                text=True,
            )
        except (OSError, subprocess.CalledProcessError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            raise CompileError(f"error: linking {paths['shared']} failed: {' '.join(detail.split())}") from None
    return paths
