"""The lowering API: text -> module -> native code.

    >>> import lt_mlir
    >>> kernel = lt_mlir.compile(open("matmul.mlir").read())
    >>> C = kernel(A, B)

Each step is a function of its own so ``lt-opt`` and tests can stop anywhere.
Where code runs is a ``Target`` (``lt_mlir.targets``: cpu, cuda,
cuda-emulated); everything else a compile depends on is one
``CompileOptions``, built here from the keyword arguments users pass
(``cpu=``, ``features=``, ``fastmath=``, ``arch=``, ``check_bounds=``, ``opt=``).
"""

from __future__ import annotations

from . import passes as _loop_passes  # noqa: F401  (registers the loop passes)
from .dialect.lt import parse_module
from .errors import CompileError
from .lowering import passes as _lowering_passes  # noqa: F401  (registers the lowering steps)
from .targets import TARGETS, CompileOptions, Lowered, Target, c_header, get_target

__all__ = ["CompileOptions", "Lowered", "c_header", "compile", "compile_aot", "compile_functions", "lower", "lower_cuda", "parse_module"]


def _target_and_options(target, options, option_fields) -> tuple[Target, CompileOptions]:
    return get_target(target), CompileOptions.build(options, **option_fields)


def lower(
    module_or_text,
    entry: str | None = None,
    filename: str = "-",
    *,
    target: str | Target = "cpu",
    options: CompileOptions | None = None,
    vector_math: bool = False,
    **option_fields,
) -> Lowered:
    """lt module (or its text) -> unoptimised LLVM IR of the whole module,
    for a target that makes host code (``target="cuda-emulated"``: GPU
    mappings run as sequential loops).  ``fastmath=``: the floating-point
    mode of every function (``default``, ``strict``, ``fast`` or LLVM flags
    such as ``"nnan,nsz"``; README, "Floating point"); None keeps each
    function's ``lt.fastmath``.  ``vector_math=True``: the code ``compile``
    runs in this process (vector ``exp``/``log``... call glibc's libmvec on
    this host), not the code of ``compile_aot``'s objects."""
    t, opts = _target_and_options(target, options, option_fields)
    if not t.native:
        native = ", ".join(n for n, x in TARGETS.items() if x.native)
        raise CompileError(
            f"error: lower() makes host LLVM IR, which target '{t.name}' does not (targets that do: {native}); "
            f"get_target('{t.name}').lower() lowers for it"
        )
    if vector_math:
        return t.lower(module_or_text, entry, opts, filename, vector_math=True)
    return t.lower(module_or_text, entry, opts, filename)


def lower_cuda(module_or_text, entry: str | None = None, filename: str = "-", *, options: CompileOptions | None = None, **option_fields):
    """lt module (or its text) -> PTX and the launch plan (``lowering/gpu/nvptx.py``):
    the cuda target's ``lower`` (``arch=``, ``fastmath=``, ``check_bounds=``)."""
    return TARGETS["cuda"].lower(module_or_text, entry, CompileOptions.build(options, **option_fields), filename)


def compile(  # noqa: A001
    module_or_text,
    entry: str | None = None,
    filename: str = "-",
    *,
    target: str | Target = "cpu",
    options: CompileOptions | None = None,
    **option_fields,
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
    ``target`` is a name or a ``Target`` (``lt_mlir.targets``).

    The options are a ``CompileOptions`` (``options=``) or its fields as
    keywords (both: the keywords replace those fields): ``fastmath``, the
    floating-point mode (``lower``; README, "Floating point"); ``opt``,
    LLVM's level (default 3).  Accesses are proven in bounds first;
    ``check_bounds=False`` skips that (only for testing what happens when
    they are not)."""
    t, opts = _target_and_options(target, options, option_fields)
    return t.compile(module_or_text, entry, opts, filename)


def compile_functions(module_or_text, filename: str = "-", *, target: str | Target = "cpu",
                      options: CompileOptions | None = None, **option_fields) -> dict:
    """Every function of an lt module as a ``Kernel`` (name -> Kernel),
    compiled together once for a native target (``cpu``, ``cuda-emulated``):
    an ``lt-prepack`` module's pack functions and the function that reads
    what they make.  Options as ``compile``'s."""
    t, opts = _target_and_options(target, options, option_fields)
    if not t.native:
        raise CompileError(f"error: target '{t.name}' compiles one entry point at a time (compile_functions: native targets)")
    return t.compile_functions(module_or_text, opts, filename)


def compile_aot(
    module_or_text,
    out_prefix: str,
    entry: str | None = None,
    shared: bool = True,
    *,
    target: str | Target = "cpu",
    options: CompileOptions | None = None,
    **option_fields,
) -> dict:
    """Write ``<prefix>.o``, ``<prefix>.h`` and (``shared``) ``<prefix>.so``.

    Returns the paths written.  The object targets this host's CPU, or
    ``cpu`` with ``features`` (as for ``compile``).  With
    ``target="cuda"``: ``<prefix>.ptx`` and ``<prefix>.json`` (entry point,
    argument layout, launch plan), which ``lt_mlir.runtime.cuda.load``
    runs without MLIR or LLVM installed."""
    t, opts = _target_and_options(target, options, option_fields)
    return t.compile_aot(module_or_text, out_prefix, entry, opts, shared=shared)
