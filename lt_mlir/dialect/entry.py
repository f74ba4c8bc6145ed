"""The entry point of an lt module as the compiler and the tools see it:
which ``func.func`` runs (``find_function``), its name, and its arguments
as ``ArgSpec``s (``signature``: shapes, element types, which ones it
writes).  Read from the IR here, below the lowering, so the runtime that
calls compiled code needs no MLIR."""

from __future__ import annotations

from ..dtypes import ELEMENT_TYPES, ArgSpec
from ..errors import CompileError
from ..mlir import ir
from . import lt


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
        specs.append(ArgSpec(i, tuple(t.shape), element, i in written, arg_marked(f, i, "lt.monotone")))
    return specs


def arg_marked(f, index: int, attribute: str) -> bool:
    """Whether argument ``index`` of function ``f`` carries ``attribute``
    (``lt.monotone``, ``lt.repeats``)."""
    if "arg_attrs" not in f.attributes:
        return False
    return attribute in ir.DictAttr(ir.ArrayAttr(f.attributes["arg_attrs"])[index])


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
