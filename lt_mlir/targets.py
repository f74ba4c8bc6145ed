"""Targets: where compiled lt code runs, as objects.

A ``Target`` says what the rest of the code would otherwise learn by
comparing target names, and compiles for itself::

    >>> from lt_mlir.targets import CompileOptions, get_target
    >>> t = get_target("cuda-emulated")
    >>> t.gpu_mapping, t.native, t.on_device
    (True, True, False)
    >>> kernel = t.compile(text, None, CompileOptions(fastmath="strict"))

The registered targets (``TARGETS``, in this order):

- ``cpu``: native code for this CPU or a named one (llvmlite, JIT or AOT
  objects); ``lt-parallel`` loops run on CPU threads (OpenMP).
- ``cuda``: PTX for NVIDIA GPUs (``lowering/gpu/nvptx.py``), run by
  ``runtime.cuda.CudaKernel``; compiling needs no GPU, running does.
- ``cuda-emulated``: the GPU lowering with blocks and threads run one after
  another as native CPU code: a schedule's GPU semantics checked anywhere.

Attributes, for code that must not compare names: ``gpu_mapping`` (loops
may be mapped to GPU blocks/threads), ``cpu_threads`` (``lt-parallel`` runs
on CPU threads), ``on_device`` (runs only with an NVIDIA device),
``native`` (produces host LLVM IR and assembly: ``lower`` gives a
``Lowered``), ``lowering`` (the registered pipeline element that takes
``lt`` down one level), ``vector_width(element_bytes, options)``.

``CompileOptions`` holds everything else a compile depends on (CPU and
features, fastmath, GPU architecture, bounds checks, optimisation level);
it is frozen and hashable, so ``(text, target.name, options)`` keys a cache.
``lt_mlir.compile(..., target=, **fields)`` builds one from keyword
arguments (``cpu="znver2"``, ``fastmath="fast"``); an unknown field is a
``CompileError`` that names it.

Adding a target
---------------
The files a new target touches:

- ``lt_mlir/targets.py`` (this file): subclass ``Target`` (or instantiate
  ``NativeTarget`` with another ``lowering`` element), set the attributes,
  implement ``lower``/``compile`` (``compile_aot`` if it writes artifacts;
  the base class refuses with a ``CompileError``) and ``register_target``
  it at the bottom.  ``get_target``, ``lt_mlir.compile``/``lower``/
  ``compile_aot``, the frontend's ``set_default_hardware``,
  ``appy.jit(backend=)`` and ``lt-opt --target`` then know it by name, and
  code that decides by attribute (``frontend/tensor.py``: GPU
  auto-mapping; ``appy/__init__.py``: pragmas; ``env/datasets.py``: the
  threaded loop) needs no change.
- ``lt_mlir/lowering/``: its lowering, a pass registered in
  ``lowering/passes.py`` with a ``check-bounds`` option (the name goes in
  ``Target.lowering``; ``run_lowering`` runs it).
- ``lt_mlir/runtime/``: what loads and calls its code, if not the native
  ``Kernel`` or the ``CudaKernel``.
- ``tests/test_target_registry.py``: its row of attributes, checked
  against what compiling with it does.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

# At the top only what loads without the MLIR bindings and LLVM: the
# registry and the options are read where only compiled artifacts run
# (appy's saved CUDA kernels on a GPU machine); compiling imports the rest.
from .dtypes import ArgSpec
from .errors import CompileError, LtError, with_filename
from .runtime import cuda
from .runtime.cuda import CudaKernel

if TYPE_CHECKING:
    from .lowering.machine import CpuTarget

__all__ = [
    "TARGETS",
    "CompileOptions",
    "CudaTarget",
    "JitObject",
    "Lowered",
    "NativeTarget",
    "Target",
    "c_header",
    "get_target",
    "register_target",
    "unregister_target",
]


# ------------------------------------------------------------ options


@dataclass(frozen=True)
class CompileOptions:
    """What a compile depends on besides the module and the target.

    ``cpu``: an LLVM CPU name (``"znver2"``; None, ``"host"``, ``"native"``:
    this host) and ``features`` (``"+avx512f,-fma"``) for native targets;
    ``arch``: the GPU architecture for cuda (None:
    ``lowering.gpu.nvptx.DEFAULT_ARCH``, sm_90); ``fastmath``: the
    floating-point mode of every function (README, "Floating point"; None
    keeps each function's ``lt.fastmath``); ``check_bounds=False`` skips
    the proof that accesses are in bounds (only for testing what happens
    when they are not); ``opt``: LLVM's optimisation level (0-3) for native
    code.  Fields a target does not use are ignored by it."""

    cpu: str | None = None
    features: str | None = None
    fastmath: str | None = None
    arch: str | None = None
    check_bounds: bool = True
    opt: int = 3

    def __post_init__(self):
        # one spelling per meaning, so equal options hash equal
        if self.cpu in ("", "host", "native"):
            object.__setattr__(self, "cpu", None)
        if self.features is not None and not self.features.strip():
            object.__setattr__(self, "features", None)
        if self.fastmath is not None:
            object.__setattr__(self, "fastmath", self.fastmath.strip())
        if not isinstance(self.check_bounds, bool):
            raise CompileError(f"error: compile option check_bounds must be True or False, got {self.check_bounds!r}")
        if isinstance(self.opt, bool) or not isinstance(self.opt, int) or not 0 <= self.opt <= 3:
            raise CompileError(f"error: compile option opt must be an optimisation level 0-3, got {self.opt!r}")
        for name in ("cpu", "features", "fastmath", "arch"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise CompileError(f"error: compile option {name} must be a string, got {value!r}")

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The option names, in order (what ``compile`` takes as keywords)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def build(cls, options: "CompileOptions | None" = None, **fields) -> "CompileOptions":
        """``options`` (default: all defaults) with ``fields`` replaced: the
        one place loose keyword arguments become options.  A field that
        does not exist is a ``CompileError`` naming it."""
        unknown = sorted(set(fields) - set(cls.fields()))
        if unknown:
            names = ", ".join(f"'{n}'" for n in unknown)
            raise CompileError(f"error: unknown compile option {names} (options: {', '.join(cls.fields())})")
        if options is None:
            return cls(**fields)
        if not isinstance(options, cls):
            raise CompileError(f"error: options must be a CompileOptions, got {type(options).__name__}")
        return dataclasses.replace(options, **fields) if fields else options

    def replace(self, **fields) -> "CompileOptions":
        """These options with ``fields`` changed (checked as ``build`` does)."""
        return CompileOptions.build(self, **fields)

    def key(self) -> tuple:
        """The options as a tuple (hashable, stable across processes)."""
        return dataclasses.astuple(self)


# ------------------------------------------------------------ shared steps


@dataclass
class Lowered:
    """A module on its way down: its entry signature and LLVM IR."""

    name: str
    specs: list[ArgSpec]
    llvm_ir: str
    openmp: bool = False  # calls the OpenMP runtime (parallel loops)


@dataclass(frozen=True)
class JitObject:
    """A native target's compiled entry point as an object file for this
    host's JIT (``NativeTarget.compile_object``); ``kernel()`` loads it."""

    name: str
    specs: list[ArgSpec]
    openmp: bool  # calls the OpenMP runtime (parallel loops)
    data: bytes
    cpu_target: CpuTarget  # what it was compiled for

    def kernel(self):
        from .runtime.kernel import Kernel
        from .runtime.native import JitModule

        jit = JitModule.from_object(self.data, self.openmp, self.cpu_target)
        return Kernel(self.name, self.specs, jit.address(self.name), jit)


def as_module(module_or_text, filename: str = "-"):
    """A private module to lower (lowering rewrites in place)."""
    from .dialect.lt import parse_module, shared_context

    if isinstance(module_or_text, str):
        return parse_module(module_or_text, filename, shared_context())
    op = module_or_text.operation
    return parse_module(op.get_asm(enable_debug_info=True), filename, op.context)


def _options(options) -> CompileOptions:
    return CompileOptions() if options is None else CompileOptions.build(options)


def _prepare(module_or_text, entry, options: CompileOptions, filename: str):
    """(module, entry name, specs): a private copy with ``fastmath`` set."""
    from .dialect.entry import find_function, function_name, signature
    from .lowering.lt_to_scf import set_fastmath

    module = as_module(module_or_text, filename)
    set_fastmath(module.operation, options.fastmath)
    f = find_function(module.operation, entry)
    return module, function_name(f), signature(f)


@functools.cache
def _lowering_stage(element: str):
    from . import passes as _loop_passes  # noqa: F401  (registers the loop passes)
    from .lowering import passes as _lowering_passes  # noqa: F401  (registers the lowering steps)
    from .passes.registry import parse_pipeline

    (stage,) = parse_pipeline(element)
    if stage.lt_pass is None or "check-bounds" not in stage.lt_pass.options:
        raise CompileError(f"error: '{element}' is not an lt lowering pass (lowering/passes.py registers them)")
    return stage


def run_lowering(module, element: str, check_bounds: bool = True) -> None:
    """Run the registered lowering ``element`` (``lower-lt-to-scf``,
    ``lower-lt-to-gpu{emulate=1}``) on ``module``, in place, as its function
    (without the pipeline driver's verification between passes)."""
    stage = _lowering_stage(element)
    values = {k.replace("-", "_"): v for k, v in stage.options.items()}
    values["check_bounds"] = check_bounds
    stage.lt_pass.run(module.operation, **values)


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


def _make_directory(out_prefix: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(out_prefix)), exist_ok=True)


# ------------------------------------------------------------ vector widths


_PROBE = """define void @probe(ptr %p) {
  %v = load <16 x float>, ptr %p, align 4
  %w = fadd <16 x float> %v, %v
  store <16 x float> %w, ptr %p, align 4
  ret void
}
"""


@functools.cache
def _vector_bits(cpu: str | None, features: str | None) -> int:
    """The widest vector register LLVM uses for an explicit 16-float vector
    on ``cpu`` with ``features`` (as the code lt's vectorizer emits)."""
    from .lowering import machine

    target = machine.cpu_target(cpu, features)
    asm = machine.emit_assembly(machine.optimize(_PROBE, target), target)
    for bits, register in ((512, "zmm"), (256, "ymm")):
        if re.search(rf"%{register}\d", asm):
            return bits
    return 128


def native_vector_width(element_bytes: int = 4, options: CompileOptions | None = None) -> int:
    """Elements of ``element_bytes`` in a vector register of the CPU that
    ``options`` names (this host's without one: ``machine.host_vector_width``)."""
    if options is None or (options.cpu is None and options.features is None):
        from .lowering.machine import host_vector_width

        return host_vector_width(element_bytes)
    return max(1, _vector_bits(options.cpu, options.features) // 8 // element_bytes)


# ------------------------------------------------------------ targets


class Target:
    """Where compiled code runs (module docs).  Subclasses implement
    ``lower`` and ``compile``; ``compile_aot`` where they can write files."""

    name: str = ""
    gpu_mapping: bool = False  # loops may be mapped to GPU blocks and threads
    cpu_threads: bool = False  # lt-parallel loops run on CPU threads
    on_device: bool = False  # runs only with an NVIDIA device
    native: bool = False  # host LLVM IR / assembly; lower() gives a Lowered
    lowering: str = ""  # the pipeline element that takes lt down one level
    description: str = ""

    def vector_width(self, element_bytes: int = 4, options: CompileOptions | None = None) -> int:
        """Elements of ``element_bytes`` a vectorized loop should do at once."""
        raise NotImplementedError

    def lower(self, module_or_text, entry: str | None = None, options: CompileOptions | None = None, filename: str = "-"):
        """lt module (or its text) -> this target's lowered form."""
        raise NotImplementedError

    def compile(self, module_or_text, entry: str | None = None, options: CompileOptions | None = None, filename: str = "-"):
        """lt module (or its text) -> a callable kernel."""
        raise NotImplementedError

    def compile_aot(self, module_or_text, out_prefix: str, entry: str | None = None, options: CompileOptions | None = None,
                    *, shared: bool = True, filename: str = "-") -> dict:
        """Write artifacts under ``out_prefix``; returns {kind: path}."""
        able = ", ".join(n for n, t in TARGETS.items() if type(t).compile_aot is not Target.compile_aot)
        raise CompileError(f"error: target '{self.name}' cannot compile ahead of time (compile_aot targets: {able})")

    def __repr__(self) -> str:
        return f"<Target {self.name}>"


class NativeTarget(Target):
    """Host code through llvmlite: the lowering element, then the CPU
    pipeline to the llvm dialect, O``opt`` for ``options.cpu``, MCJIT."""

    native = True

    def __init__(self, name: str, lowering: str, *, gpu_mapping: bool = False, cpu_threads: bool = False, description: str = ""):
        self.name, self.lowering, self.description = name, lowering, description
        self.gpu_mapping, self.cpu_threads = gpu_mapping, cpu_threads

    def vector_width(self, element_bytes: int = 4, options: CompileOptions | None = None) -> int:
        """This host's vector register (``options.cpu``'s when it names one)."""
        return native_vector_width(element_bytes, options)

    def lower(self, module_or_text, entry=None, options=None, filename="-", vector_math: bool | str = False) -> Lowered:
        """lt module (or its text) -> unoptimised LLVM IR of the whole module.
        ``vector_math``: vector ``exp``/``log``/``erf``/``tanh``... call glibc's
        libmvec (code for this process: the JIT; ``lowering.llvm.use_vector_math``)
        except in functions whose fastmath mode is ``strict``; ``"as_host"``:
        the calls a JIT on a host of ``options.cpu`` makes, for code that is
        read, not run (the cost model's IR of the CPU that measured a schedule).  f32 ``erf``
        becomes inline polynomials in every mode but ``strict``, JIT or not
        (``lowering.erf``)."""
        from .dialect import lt
        from .dialect.entry import function_name
        from .lowering import machine
        from .lowering.erf import expand_erf
        from .lowering.llvm import scf_to_llvm_dialect, translate_to_llvm_ir, use_vector_math
        from .lowering.lt_to_scf import function_fastmath

        options = _options(options)
        module, name, specs = _prepare(module_or_text, entry, options, filename)
        bits = 32 * native_vector_width(4, options) if vector_math == "as_host" else None
        abi = machine.vector_math_abi(machine.cpu_target(options.cpu, options.features), bits) if vector_math else None
        strict = {function_name(f) for f in lt.functions(module.operation) if function_fastmath(f) == "strict"}
        try:
            run_lowering(module, self.lowering, options.check_bounds)
            expand_erf(module, strict)
            if abi is not None:
                use_vector_math(module, abi, strict)
            openmp = scf_to_llvm_dialect(module)
        except LtError as e:
            raise with_filename(e, filename) from None
        return Lowered(name, specs, translate_to_llvm_ir(module), openmp)

    def optimized(self, module_or_text, entry=None, options=None, filename="-", vector_math: bool | str = False):
        """(its ``Lowered``, the optimised llvmlite module, the ``CpuTarget``):
        what compiling runs before code generation (``vector_math=True``:
        as ``compile`` for this process; ``"as_host"``: as ``compile`` on a
        host of ``options.cpu``, ``lower``)."""
        from .lowering import machine

        options = _options(options)
        cpu_target = machine.cpu_target(options.cpu, options.features)  # bad names: an error before any work
        lowered = self.lower(module_or_text, entry, options, filename, vector_math)
        return lowered, machine.optimize(lowered.llvm_ir, cpu_target, options.opt), cpu_target

    def compile(self, module_or_text, entry=None, options=None, filename="-"):
        """A ``Kernel``: JIT-compiled native code in this process."""
        from .runtime.kernel import Kernel
        from .runtime.native import JitModule

        lowered, mod, cpu_target = self.optimized(module_or_text, entry, options, filename, vector_math=True)
        jit = JitModule(mod, lowered.openmp, cpu_target)
        return Kernel(lowered.name, lowered.specs, jit.address(lowered.name), jit, str(mod))

    def compile_optimized(self, llvm_ir: str, module_or_text, entry=None, options=None, filename="-"):
        """The ``Kernel`` that ``compile`` makes of ``module_or_text``, from
        ``llvm_ir``: the optimised LLVM IR that ``optimized`` made of it for
        this host and ``options`` (in another process of this host: the
        search's lowering processes), so that only code generation is left
        (parsing the IR: a millisecond or two; lowering and optimising a
        512^3 GEMM's schedule: about 0.1 s)."""
        import llvmlite.binding as llvm

        from .lowering import machine
        from .runtime.kernel import Kernel
        from .runtime.native import JitModule

        options = _options(options)
        cpu_target = machine.cpu_target(options.cpu, options.features)
        _, name, specs = _prepare(module_or_text, entry, options, filename)
        openmp = "@__kmpc_" in llvm_ir  # it calls the OpenMP runtime (what ``Lowered.openmp`` says of a parallel loop)
        mod = llvm.parse_assembly(llvm_ir)
        mod.verify()
        machine.libmvec()  # vector math calls, if the code has any (lowering them loads it in the process that lowers)
        jit = JitModule(mod, openmp, cpu_target)
        return Kernel(name, specs, jit.address(name), jit, llvm_ir)

    def compile_functions(self, module_or_text, options=None, filename="-") -> dict:
        """Every function of the module as a ``Kernel`` (name -> Kernel), all
        from one JIT module compiled once: for functions that work together
        (``lt-prepack``'s pack functions and the function that reads what
        they make)."""
        from .dialect import lt
        from .dialect.entry import function_name, signature
        from .runtime.kernel import Kernel
        from .runtime.native import JitModule

        module = as_module(module_or_text, filename)
        specs = {function_name(f): signature(f) for f in lt.functions(module.operation) if f.regions[0].blocks}
        lowered, mod, cpu_target = self.optimized(module, None, options, filename, vector_math=True)
        jit = JitModule(mod, lowered.openmp, cpu_target)
        return {name: Kernel(name, s, jit.address(name), jit, str(mod)) for name, s in specs.items()}

    def compile_object(self, module_or_text, entry=None, options=None, filename="-") -> JitObject:
        """What ``compile`` makes, as bytes: a ``JitObject`` (picklable) whose
        ``kernel()`` loads it without optimising or generating code again,
        in this process or another on this host (the fuzzer's workers share
        what they compile this way).  ``lower(..., vector_math=True)``, then
        ``object_from_lowered``."""
        from .lowering import machine

        options = _options(options)
        machine.cpu_target(options.cpu, options.features)  # bad names: an error before any work
        return self.object_from_lowered(self.lower(module_or_text, entry, options, filename, vector_math=True), options)

    def object_from_lowered(self, lowered: Lowered, options=None) -> JitObject:
        """Optimise and generate code for what ``lower`` made (what it
        depends on: ``lowered.llvm_ir`` and ``options``; the fuzzer keys
        its shared objects by them, as modules that differ may lower alike)."""
        from .lowering import machine

        options = _options(options)
        cpu_target = machine.cpu_target(options.cpu, options.features)
        mod = machine.optimize(lowered.llvm_ir, cpu_target, options.opt)
        return JitObject(lowered.name, lowered.specs, lowered.openmp, machine.emit_jit_object(mod, cpu_target), cpu_target)

    def compile_aot(self, module_or_text, out_prefix, entry=None, options=None, *, shared=True, filename="-") -> dict:
        """``<prefix>.o``, ``<prefix>.h`` and (``shared``) ``<prefix>.so``."""
        from .lowering import machine

        lowered, mod, cpu_target = self.optimized(module_or_text, entry, options, filename)
        _make_directory(out_prefix)
        paths = {"object": out_prefix + ".o", "header": out_prefix + ".h"}
        with open(paths["object"], "wb") as fh:
            fh.write(machine.emit_object(mod, cpu_target))
        with open(paths["header"], "w") as fh:
            fh.write(c_header(lowered.name, lowered.specs))
        if shared:
            paths["shared"] = out_prefix + ".so"
            cc = os.environ.get("CC", "cc")
            try:
                subprocess.run([cc, "-shared", "-o", paths["shared"], paths["object"], "-lm"], check=True, capture_output=True, text=True)
            except (OSError, subprocess.CalledProcessError) as e:
                detail = getattr(e, "stderr", "") or str(e)
                raise CompileError(f"error: linking {paths['shared']} failed: {' '.join(detail.split())}") from None
        return paths


class CudaTarget(Target):
    """PTX for NVIDIA GPUs of ``options.arch`` and its launch plan."""

    gpu_mapping = True
    on_device = True

    def __init__(self, name: str, lowering: str, description: str = ""):
        self.name, self.lowering, self.description = name, lowering, description

    def vector_width(self, element_bytes: int = 4, options: CompileOptions | None = None) -> int:
        """A thread's widest access: 16 bytes (``ld.global.v4``; every
        kernel pointer is 16-byte aligned, ``nvptx.ALIGNMENT``)."""
        from .lowering.gpu.nvptx import ALIGNMENT

        return max(1, ALIGNMENT // element_bytes)

    def lower(self, module_or_text, entry=None, options=None, filename="-"):
        """lt module (or its text) -> PTX and the launch plan (``.ptx``,
        ``.meta``, ``.llvm_ir``: ``lowering/gpu/nvptx.py``)."""
        from .lowering.gpu.nvptx import DEFAULT_ARCH, compile_to_ptx

        options = _options(options)
        module, name, specs = _prepare(module_or_text, entry, options, filename)
        try:
            return compile_to_ptx(module, name, specs, options.arch or DEFAULT_ARCH, options.check_bounds)
        except LtError as e:
            raise with_filename(e, filename) from None

    def compile(self, module_or_text, entry=None, options=None, filename="-") -> CudaKernel:
        """A ``CudaKernel`` (NumPy arrays copied in and out, or DLPack device
        arrays); building it needs no GPU, calling it does."""
        lowered = self.lower(module_or_text, entry, options, filename)
        return CudaKernel(lowered.meta, lowered.ptx)

    def compile_aot(self, module_or_text, out_prefix, entry=None, options=None, *, shared=True, filename="-") -> dict:
        """``<prefix>.ptx`` and ``<prefix>.json`` (entry point, argument
        layout, launch plan), which ``lt_mlir.runtime.cuda.load`` runs
        without MLIR or LLVM installed (``shared`` does not apply)."""
        lowered = self.lower(module_or_text, entry, options, filename)
        _make_directory(out_prefix)
        return cuda.save(out_prefix, lowered.meta, lowered.ptx)


# ------------------------------------------------------------ the registry


TARGETS: dict[str, Target] = {}


def register_target(target: Target, *, replace: bool = False) -> Target:
    """Make ``target`` known by its name (``get_target``, every ``--target``
    and ``target=``); a name taken by another target needs ``replace``."""
    if not isinstance(target, Target) or not isinstance(target.name, str) or not target.name:
        raise CompileError(f"error: register_target takes a Target with a name, got {target!r}")
    held = TARGETS.get(target.name)
    if held is not None and held is not target and not replace:
        raise CompileError(f"error: target '{target.name}' is registered already (register_target(..., replace=True) replaces it)")
    TARGETS[target.name] = target
    return target


def unregister_target(name: str) -> Target | None:
    """Forget the target called ``name`` (returns it, or None)."""
    return TARGETS.pop(name, None)


def get_target(name_or_target) -> Target:
    """The registered target called ``name_or_target`` (a Target passes
    through).  Raises ``CompileError`` for any other name."""
    if isinstance(name_or_target, Target):
        return name_or_target
    target = TARGETS.get(name_or_target) if isinstance(name_or_target, str) else None
    if target is None:
        raise CompileError(f"error: unknown target '{name_or_target}' (targets: {', '.join(TARGETS)})")
    return target


register_target(NativeTarget(
    "cpu", "lower-lt-to-scf", cpu_threads=True,
    description="native code for this CPU (or options.cpu): JIT or AOT objects; lt-parallel on CPU threads",
))
register_target(CudaTarget(
    "cuda", "lower-lt-to-gpu",
    description="PTX for NVIDIA GPUs (options.arch); compiles anywhere, runs on a GPU",
))
register_target(NativeTarget(
    "cuda-emulated", "lower-lt-to-gpu{emulate=1}", gpu_mapping=True,
    description="the GPU lowering with blocks and threads run one after another on the CPU",
))
