"""A compiled entry point callable with NumPy arrays.

The entry function takes one bare pointer per memref argument.  The wrapper
checks every array against the memref type (shape, dtype, C-contiguity,
writability of outputs, no overlap with an output) and raises
``ArgumentError`` instead of letting native code read the wrong memory.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..dialect import lt
from ..dtypes import ELEMENT_TYPES
from ..errors import ArgumentError, CompileError
from ..mlir import ir
from .specs import ArgSpec, EntryPoint, check_host_arrays  # noqa: F401  (ArgSpec is re-exported)


def find_function(module_op, name: str | None):
    """The ``func.func`` called ``name``, or the module's only/first public one."""
    funcs = lt.functions(module_op)
    funcs = [f for f in funcs if f.regions[0].blocks]
    if not funcs:
        raise CompileError("error: the module has no func.func with a body to compile (was it lowered already?)")
    if name is None:
        return funcs[0]
    for f in funcs:
        if ir.StringAttr(f.attributes["sym_name"]).value == name:
            return f
    names = ", ".join("@" + ir.StringAttr(f.attributes["sym_name"]).value for f in funcs)
    raise CompileError(f"error: no function @{name} in the module (it has {names})")


def function_name(f) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


def signature(f) -> list[ArgSpec]:
    """Argument specs of ``f`` (before lowering: arguments are memrefs)."""
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    if len(ftype.results):
        raise CompileError(f"error: @{function_name(f)} must return nothing; results go through memref arguments")
    entry = f.regions[0].blocks[0]
    written = _written_arguments(f, entry)
    specs = []
    for i, t in enumerate(ftype.inputs):
        if not isinstance(t, ir.MemRefType):
            raise CompileError(f"error: @{function_name(f)} argument {i} has type {t}; only memrefs are supported")
        t = ir.MemRefType(t)
        if not t.has_static_shape:
            raise CompileError(f"error: @{function_name(f)} argument {i} ({t}) must have a static shape")
        if not _identity_layout(t):
            raise CompileError(f"error: @{function_name(f)} argument {i} ({t}) must have the identity layout")
        element = str(t.element_type)
        if element not in ELEMENT_TYPES:
            raise CompileError(f"error: @{function_name(f)} argument {i} has unsupported element type {element}")
        specs.append(ArgSpec(i, tuple(t.shape), element, i in written))
    return specs


def _identity_layout(t: ir.MemRefType) -> bool:
    layout = t.layout
    if not isinstance(layout, ir.AffineMapAttr):
        return False
    return layout.value == ir.AffineMap.get_identity(t.rank, context=t.context)


def _written_arguments(f, entry) -> set:
    args = list(entry.arguments)
    written = set()

    def visit(o):
        target = None
        if o.name == "memref.store":
            target = o.operands[1]
        elif o.name == "lt.reduce":
            target = o.operands[1]
        if target is not None:
            for i, a in enumerate(args):
                if target == a:
                    written.add(i)
        return ir.WalkResult.ADVANCE

    f.walk(visit)
    return written


class Kernel(EntryPoint):
    """A native entry point.  ``kernel(*inputs)`` allocates and returns the
    outputs (written arguments that come after every read-only one);
    ``kernel(*all_arguments)`` writes into the arrays given."""

    def __init__(self, name: str, specs: list[ArgSpec], address: int, owner, llvm_ir: str = ""):
        self.name = name
        self._owner = owner  # keeps the JIT engine (and the code) alive
        self.llvm_ir = llvm_ir
        self._fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(specs)))(address)
        self._set_specs(specs)

    def __call__(self, *arrays):
        n = len(arrays)
        if n == len(self.specs):
            out = None
        elif n == self._n_inputs:
            out = [np.zeros(s.shape, s.dtype) for s in self.outputs]
            arrays = tuple(arrays) + tuple(out)
        else:
            raise ArgumentError(
                f"@{self.name} takes {len(self.specs)} arrays ({self._n_inputs} inputs"
                f" + {len(self.specs) - self._n_inputs} outputs); got {n}"
            )
        self._check(arrays)
        self._fn(*[a.ctypes.data for a in arrays])
        if out is None:
            return None
        return out[0] if len(out) == 1 else tuple(out)

    def bind(self, *arrays):
        """A call of this kernel on ``arrays`` (all of its arguments),
        checked now: the returned function runs it again without the checks
        or the pointer lookups, for a caller that knows the arrays are the
        same (a loop calling it many times).  It holds the arrays alive."""
        if len(arrays) != len(self.specs):
            raise ArgumentError(f"@{self.name} takes {len(self.specs)} arrays; got {len(arrays)}")
        self._check(arrays)
        fn, pointers = self._fn, [a.ctypes.data for a in arrays]

        def run(arrays=arrays) -> None:
            fn(*pointers)

        return run

    def _check(self, arrays) -> None:
        for spec, a in zip(self.specs, arrays):
            if not isinstance(a, np.ndarray):
                raise ArgumentError(f"@{self.name} argument {spec.index}: expected a numpy.ndarray, got {type(a).__name__}")
        check_host_arrays(self.name, self.specs, arrays)

    def __repr__(self) -> str:
        return f"<lt_mlir.Kernel @{self.name}({self._signature_text()})>"
