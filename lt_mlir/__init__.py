"""lt_mlir: loop_tool's interactive loop optimisation on MLIR and LLVM."""

# Everything but the CUDA runtime (lt_mlir.runtime.cuda, which loads and runs
# compiled PTX artifacts) needs the MLIR bindings from the torch-mlir wheel.
# Without them the package still imports, so that runtime works on a GPU
# machine where only the artifacts were copied; the compiler's names then
# raise an ImportError that says what is missing.
from .errors import (  # noqa: E402
    ArgumentError,
    CompileError,
    CudaError,
    LtError,
    ParseError,
    PassError,
    PipelineError,
    VerifyError,
)
from .targets import TARGETS, CompileOptions, Target, get_target, register_target  # noqa: E402  (no MLIR needed)

try:
    from . import mlir as _mlir  # noqa: F401
except ModuleNotFoundError as _e:  # pragma: no cover - exercised in a subprocess test
    _MISSING = str(_e)
else:
    _MISSING = None
    from . import nn
    from .compiler import c_header, compile, compile_aot, lower, parse_module  # noqa: A004
    from .dialect.loop_tree import loop_tree
    from .evaluate import Evaluator, Limits, Measurement
    from .frontend import (  # noqa: A004
        Backend,
        Expr,
        FrontendError,
        Size,
        SizeError,
        Symbol,
        SymbolGenerator,
        Tensor,
        abs,
        add,
        backends,
        default_hardware,
        default_schedule,
        divide,
        exp,
        get_default_backend,
        log,
        max,
        min,
        multiply,
        negate,
        reciprocal,
        set_default_backend,
        set_default_hardware,
        set_default_schedule,
        set_fastmath,
        sqrt,
        subtract,
        symbols,
    )
    from .moves import MOVES, Move, MoveKind, register_move
    from .schedule import Schedule


def ui(obj, path=None, **options):
    """Optimise ``obj`` (a tensor, Schedule, module or lt text) by hand in the
    terminal (``lt-ui``; loop_tool's ``lt.ui(T, path)``).  ``options``:
    ``entry``, ``target``, ``reference`` (a NumPy function of the inputs,
    timed as the peer).  Returns the session."""
    from .tui.app import ui as run_ui  # Textual loads only when the UI starts

    return run_ui(obj, path, **options)


def tune(source, **options):
    """Search for a fast schedule of ``source`` (a tensor, Schedule, lt text
    or ``"matmul:512,512,512"``); a tensor keeps the best one.  ``options``:
    ``strategy`` (random, greedy, lookahead, beam, evolution), ``budget``
    (evaluations), ``seconds``, ``workers`` (a number or "ray"),
    ``model`` (the learned cost model, default on), ``seed``, ``log``,
    ``resume``.  Returns a ``TuneResult`` (``lt-tune`` is the command)."""
    from .search.cli import tune as run_tune

    return run_tune(source, **options)


def from_torch(module, *example_inputs, **options):
    """A PyTorch ``nn.Module`` as an ``lt_mlir.importers.Model`` for the
    shapes of ``example_inputs``: torch.export, torch-mlir to linalg, then
    lt loop nests with the default schedule.  ``model(*inputs)`` runs it
    (NumPy arrays or torch CPU tensors); ``model.loop_tree``,
    ``model.schedule``, ``model.optimize()``.  Needs torch (CPU build)."""
    from .importers import from_torch as run

    return run(module, *example_inputs, **options)


def from_onnx(model, **options):
    """An ONNX model (a path or an ``onnx.ModelProto``) as an
    ``lt_mlir.importers.Model`` (see ``from_torch``).  Needs ``onnx``."""
    from .importers import from_onnx as run

    return run(model, **options)


def from_linalg(source, **options):
    """A linalg-on-tensors module (text or a file) as an ``lt_mlir.importers.Model``."""
    from .importers import from_linalg as run

    return run(source, **options)


def __getattr__(name):
    if _MISSING is not None and name in __all__:
        raise ImportError(
            f"lt_mlir.{name} needs the MLIR bindings of the torch-mlir wheel ({_MISSING}); "
            "only lt_mlir.runtime.cuda works without them"
        )
    raise AttributeError(f"module 'lt_mlir' has no attribute {name!r}")


__all__ = [
    "ArgumentError",
    "from_linalg",
    "from_onnx",
    "from_torch",
    "Expr",
    "FrontendError",
    "Size",
    "SizeError",
    "Symbol",
    "SymbolGenerator",
    "Tensor",
    "abs",
    "add",
    "divide",
    "exp",
    "log",
    "max",
    "min",
    "multiply",
    "negate",
    "nn",
    "reciprocal",
    "sqrt",
    "subtract",
    "symbols",
    "CompileError",
    "CompileOptions",
    "CudaError",
    "LtError",
    "ParseError",
    "PassError",
    "PipelineError",
    "Schedule",
    "Move",
    "MoveKind",
    "MOVES",
    "register_move",
    "Evaluator",
    "Limits",
    "Measurement",
    "TARGETS",
    "Target",
    "VerifyError",
    "c_header",
    "compile",
    "compile_aot",
    "Backend",
    "backends",
    "default_hardware",
    "default_schedule",
    "get_default_backend",
    "get_target",
    "set_default_backend",
    "set_default_hardware",
    "set_default_schedule",
    "set_fastmath",
    "loop_tree",
    "lower",
    "parse_module",
    "register_target",
    "tune",
    "ui",
]
