"""lt_mlir: loop_tool's interactive loop optimisation on MLIR and LLVM."""

from .compiler import c_header, compile, compile_aot, lower, parse_module  # noqa: A004
from .dialect.loop_tree import loop_tree
from .schedule import Schedule
from .errors import (
    ArgumentError,
    CompileError,
    LtError,
    ParseError,
    PassError,
    PipelineError,
    VerifyError,
)
from .frontend import (
    Expr,
    FrontendError,
    Size,
    SizeError,
    Symbol,
    SymbolGenerator,
    Tensor,
    symbols,
)
from .frontend import abs, add, divide, exp, log, max, min, multiply, negate, reciprocal, sqrt, subtract  # noqa: A004
from . import nn

__all__ = [
    "ArgumentError",
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
    "LtError",
    "ParseError",
    "PassError",
    "PipelineError",
    "Schedule",
    "VerifyError",
    "c_header",
    "compile",
    "compile_aot",
    "loop_tree",
    "lower",
    "parse_module",
]
