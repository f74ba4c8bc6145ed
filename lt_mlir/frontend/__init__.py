"""The Python frontend: loop_tool's lazy named-dimension tensors on lt_mlir.

    import lt_mlir as lt
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.m, s.k).set(A)
    b = lt.Tensor(s.k, s.n).set(B)
    c = (a * b).sum(s.k)          # nothing runs yet
    print(c.loop_tree)            # loop_tool's default schedule, as an lt module
    c.numpy()                     # compiled once (cached), run on A and B

See ``tensor.py`` (the Tensor API), ``sizes.py`` (size inference) and
``lower.py`` (the default schedule and the IR it emits).
"""

from .errors import FrontendError, SizeError
from .symbols import Expr, Size, Symbol, SymbolGenerator, symbols
from .tensor import (
    Backend,
    Tensor,
    as_tensor,
    backends,
    clear_cache,
    default_hardware,
    default_schedule,
    fastmath,
    get_default_backend,
    register_optimizer,
    set_default_backend,
    set_default_hardware,
    set_default_schedule,
    set_fastmath,
    stats,
)


def _unary(fn: str):
    def op(x):
        return as_tensor(x)._unary(fn)

    op.__name__ = fn
    op.__doc__ = f"Elementwise {fn} of a tensor."
    return op


def _binary(fn: str):
    def op(a, b):
        return as_tensor(a)._binary(b, fn)

    op.__name__ = fn
    op.__doc__ = f"Elementwise {fn} of two tensors, broadcast by dim name."
    return op


exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
abs = _unary("abs")  # noqa: A001 (loop_tool's name)
reciprocal = _unary("reciprocal")
negate = _unary("neg")
add = _binary("add")
subtract = _binary("sub")
multiply = _binary("mul")
divide = _binary("div")
max = _binary("max")  # noqa: A001
min = _binary("min")  # noqa: A001

__all__ = [
    "Expr",
    "FrontendError",
    "Size",
    "SizeError",
    "Symbol",
    "SymbolGenerator",
    "Tensor",
    "abs",
    "add",
    "clear_cache",
    "Backend",
    "backends",
    "default_hardware",
    "default_schedule",
    "get_default_backend",
    "set_default_backend",
    "divide",
    "exp",
    "fastmath",
    "log",
    "max",
    "min",
    "multiply",
    "negate",
    "reciprocal",
    "register_optimizer",
    "set_default_hardware",
    "set_default_schedule",
    "set_fastmath",
    "sqrt",
    "stats",
    "subtract",
    "symbols",
]
