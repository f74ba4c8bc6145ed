"""The ``lt`` dialect: tiled loops over named dimensions.

Defined with the upstream Python ``dialects.ext`` API (IRDL-backed, so ops
print in MLIR's generic form; extensible dialects keep attributes in the
attribute dictionary, printed after the region).

Ops
---
``lt.loop``   one level of a tiled loop over dim ``dim``.  Runs ``size`` full
              iterations of its body, then, when ``tail > 0``, one more in
              which the inner levels over ``dim`` cover only ``tail``
              elements.  One region, one block, one ``index`` argument (this
              level's iteration number), no terminator.  With inner extent
              ``E`` (what one iteration of the body covers of ``dim``; 1 when
              no inner level iterates ``dim``) the level covers
              ``size * E + tail`` elements and requires ``tail < E``.
              Optional annotations: ``lt.parallel``, ``lt.schedule =
              "dynamic"|"guided"`` (how a parallel loop's iterations are
              dealt to threads; with ``lt.parallel`` only, static when
              absent), ``lt.unroll = N``, ``lt.vectorize = W``, ``lt.gpu =
              "block"|"thread"``.
``lt.dim``    the logical index of ``dim`` here: the sum over enclosing levels
              of ``iteration * E``.  Index arithmetic on it is plain ``arith``.
``lt.alloc``  scratch memory over named dims (``dims = ["m", "n"]``), a static
              memref at full logical size.
``lt.reduce`` ``acc[indices] = acc[indices] <kind> value`` for kind
              add|mul|max|min.  It is an ordinary op, not a terminator.

Initialisation rule: ``lt.reduce`` never initialises.  The program stores the
identity (``lt.reduce_identity``) into the accumulator explicitly, with a
plain ``memref.store``, at the point the reduction starts; transformations
treat that store like any other and must keep it before the reduction.
"""


import io
import math as _math
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any

from ..builder import GPU_MAPPINGS, REDUCE_KINDS, SCHEDULES  # noqa: F401  (the one list of each; lt.SCHEDULES etc.)
from ..errors import ParseError, from_mlir_error
from ..mlir import ext, ir, register_dialect_module

# annotation name -> check(attr) returning an error message or None
_ANNOTATIONS = {
    "lt.parallel": lambda a: None if isinstance(a, ir.UnitAttr) else "must be a unit attribute",
    "lt.schedule": lambda a: None
    if isinstance(a, ir.StringAttr) and a.value in SCHEDULES
    else f"must be one of {', '.join(repr(s) for s in SCHEDULES)}",
    "lt.unroll": lambda a: None if isinstance(a, ir.IntegerAttr) and a.value >= 0 else "must be a non-negative integer (0: full)",
    "lt.vectorize": lambda a: _positive_int(a),
    "lt.prefetch": lambda a: _positive_int(a),
    "lt.double_buffer": lambda a: None if isinstance(a, ir.UnitAttr) else "must be a unit attribute",
    "lt.min_blocks": lambda a: _positive_int(a),
    "lt.gpu": lambda a: None
    if isinstance(a, ir.StringAttr) and a.value in GPU_MAPPINGS
    else f"must be one of {', '.join(repr(g) for g in GPU_MAPPINGS)}",
}


def _positive_int(a) -> str | None:
    if isinstance(a, ir.IntegerAttr) and a.value > 0:
        return None
    return "must be a positive integer"


def _fail(op, message: str) -> bool:
    op.location.emit_error(message)
    return False


class Lt(ext.Dialect, name="lt"):
    pass


register_dialect_module("lt", sys.modules[__name__])


class LoopOp(Lt.Operation, name="loop", traits=[ir.NoTerminatorTrait]):
    dim: ir.StringAttr
    size: ir.IntegerAttr
    tail: ir.IntegerAttr
    body: ir.Region

    @staticmethod
    def verify_invariants(op) -> bool:
        attrs = op.operation.attributes
        # Missing attributes are reported by IRDL's own check, after this one.
        if not all(n in attrs for n in ("dim", "size", "tail")):
            return True
        dim, size, tail = attrs["dim"], attrs["size"], attrs["tail"]
        if not isinstance(dim, ir.StringAttr) or not dim.value:
            return _fail(op, "'lt.loop' dim must be a non-empty string")
        if not isinstance(size, ir.IntegerAttr) or not isinstance(tail, ir.IntegerAttr):
            return True
        if size.value <= 0:
            return _fail(op, f"'lt.loop' size must be positive, got {size.value}")
        if tail.value < 0:
            return _fail(op, f"'lt.loop' tail must not be negative, got {tail.value}")
        region = op.operation.regions[0]
        blocks = list(region.blocks)
        if len(blocks) != 1:
            return _fail(op, f"'lt.loop' body must have exactly one block, got {len(blocks)}")
        args = list(blocks[0].arguments)
        if len(args) != 1 or not isinstance(args[0].type, ir.IndexType):
            return _fail(op, "'lt.loop' body must have exactly one 'index' block argument")
        extents = {inner_loop_extent(o) for o in inner_levels(op.operation)}
        if len(extents) > 1:
            return _fail(
                op,
                f"'lt.loop' inner levels over dim '{dim.value}' cover different extents "
                f"{sorted(extents)}",
            )
        inner = extents.pop() if extents else 1
        if tail.value >= inner:
            return _fail(
                op,
                f"'lt.loop' tail {tail.value} must be smaller than the inner extent {inner} "
                f"of dim '{dim.value}'",
            )
        for name in attrs:
            if name.startswith("lt."):
                check = _ANNOTATIONS.get(name)
                if check is None:
                    known = ", ".join(_ANNOTATIONS)
                    return _fail(op, f"'lt.loop' unknown annotation '{name}' (known: {known})")
                problem = check(attrs[name])
                if problem:
                    return _fail(op, f"'lt.loop' annotation '{name}' {problem}")
        if "lt.schedule" in attrs and "lt.parallel" not in attrs:
            return _fail(op, "'lt.loop' annotation 'lt.schedule' needs 'lt.parallel' (it says how a parallel loop's iterations are dealt to threads)")
        return True


# Not Pure: the value depends on where the op sits (which loops enclose it),
# so CSE must never merge two lt.dim ops of one dim at different depths.
class DimOp(Lt.Operation, name="dim"):
    dim: ir.StringAttr
    result: ext.Result[ir.IndexType]

    @staticmethod
    def verify_invariants(op) -> bool:
        attrs = op.operation.attributes
        if "dim" not in attrs or not isinstance(attrs["dim"], ir.StringAttr):
            return True
        name = attrs["dim"].value
        if not any(loop_dim(l) == name for l in enclosing_loops(op.operation)):
            return _fail(op, f"'lt.dim' unknown dim '{name}': no enclosing lt.loop iterates it")
        return True


class AllocOp(Lt.Operation, name="alloc"):
    dims: ir.ArrayAttr
    result: ext.Result[ir.MemRefType]

    @staticmethod
    def verify_invariants(op) -> bool:
        attrs = op.operation.attributes
        if "dims" not in attrs or not isinstance(attrs["dims"], ir.ArrayAttr):
            return True
        names = [a for a in attrs["dims"]]
        if not all(isinstance(a, ir.StringAttr) and a.value for a in names):
            return _fail(op, "'lt.alloc' dims must be non-empty strings")
        names = [a.value for a in names]
        if len(set(names)) != len(names):
            return _fail(op, f"'lt.alloc' dims must be distinct, got {names}")
        t = op.operation.results[0].type
        if not isinstance(t, ir.MemRefType):
            return True
        t = ir.MemRefType(t)
        if not t.has_static_shape:
            return _fail(op, f"'lt.alloc' result must have a static shape, got {t}")
        if t.rank != len(names):
            return _fail(op, f"'lt.alloc' has {len(names)} dims but its memref has rank {t.rank}")
        return True


class ReduceOp(Lt.Operation, name="reduce"):
    value: ext.Operand[Any]
    acc: ext.Operand[ir.MemRefType]
    indices: Sequence[ext.Operand[ir.IndexType]]
    kind: ir.StringAttr

    @staticmethod
    def verify_invariants(op) -> bool:
        o = op.operation
        attrs = o.attributes
        if "kind" in attrs and isinstance(attrs["kind"], ir.StringAttr):
            kind = attrs["kind"].value
            if kind not in REDUCE_KINDS:
                return _fail(
                    op, f"'lt.reduce' unknown kind '{kind}' (expected one of {', '.join(REDUCE_KINDS)})"
                )
        if len(o.operands) < 2 or not isinstance(o.operands[1].type, ir.MemRefType):
            return True
        acc = ir.MemRefType(o.operands[1].type)
        if o.operands[0].type != acc.element_type:
            return _fail(
                op,
                f"'lt.reduce' value type {o.operands[0].type} does not match the accumulator's "
                f"element type {acc.element_type}",
            )
        if len(o.operands) - 2 != acc.rank:
            return _fail(
                op, f"'lt.reduce' needs {acc.rank} indices for {acc}, got {len(o.operands) - 2}"
            )
        return True


# ---------------------------------------------------------------- helpers


def is_loop(op) -> bool:
    return op.name == "lt.loop"


def loop_dim(op) -> str:
    return ir.StringAttr(op.attributes["dim"]).value


def loop_size(op) -> int:
    return ir.IntegerAttr(op.attributes["size"]).value


def loop_tail(op) -> int:
    return ir.IntegerAttr(op.attributes["tail"]).value


def loop_body(op) -> ir.Block:
    return op.regions[0].blocks[0]


def body_ops(block: ir.Block) -> list:
    return [o.operation for o in block.operations]


def enclosing_loops(op) -> list:
    """The lt.loop ops around ``op``, innermost first."""
    out = []
    parent = op.parent
    while parent is not None:
        if parent.name == "lt.loop":
            out.append(parent)
        if parent.name in ("func.func", "builtin.module"):
            break
        parent = parent.parent
    return out


def inner_levels(loop) -> list:
    """The outermost lt.loops over ``loop``'s dim inside its body (the levels
    one step further in), not descending into them."""
    dim = loop_dim(loop)
    top = loop.operation
    found = []

    def visit(o):
        if o.name == "lt.loop" and o != top:
            attrs = o.attributes
            if "dim" in attrs and ir.StringAttr(attrs["dim"]).value == dim:
                found.append(o)
                return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    top.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def inner_extent(loop) -> int:
    """How much of its dim one iteration of ``loop``'s body covers."""
    levels = inner_levels(loop)
    return inner_loop_extent(levels[0]) if levels else 1


def inner_loop_extent(loop) -> int:
    """Elements of its dim a whole level covers: ``size * E + tail``."""
    return loop_size(loop) * inner_extent(loop) + loop_tail(loop)


def annotations(loop) -> dict:
    """Annotation name (without the ``lt.`` prefix) -> Python value."""
    out = {}
    for name in loop.attributes:
        if name in _ANNOTATIONS:
            a = loop.attributes[name]
            key = name[3:]
            if isinstance(a, ir.UnitAttr):
                out[key] = True
            elif isinstance(a, ir.IntegerAttr):
                out[key] = a.value
            elif isinstance(a, ir.StringAttr):
                out[key] = a.value
    return out


def nbytes(shape, element_type) -> int:
    """Bytes of a dense buffer of ``shape`` and ``element_type``."""
    n = 1
    for s in shape:
        n *= s
    width = element_type.width if hasattr(element_type, "width") else 64
    return n * max(1, width // 8)


def reduce_identity(kind: str, element_type) -> float | int:
    """The value an accumulator of ``kind`` starts from."""
    is_float = isinstance(element_type, (ir.F32Type, ir.F64Type, ir.F16Type, ir.BF16Type))
    if kind == "add":
        return 0.0 if is_float else 0
    if kind == "mul":
        return 1.0 if is_float else 1
    width = ir.IntegerType(element_type).width if not is_float else 0
    if kind == "max":
        return -_math.inf if is_float else -(1 << (width - 1))
    if kind == "min":
        return _math.inf if is_float else (1 << (width - 1)) - 1
    raise ValueError(f"unknown reduce kind {kind!r}")


def _skip_dialect_module_lookup() -> None:
    """The bindings try ``import torch_mlir.dialects.lt`` whenever they wrap
    an lt op, and a failed import is not cached: each wrap searched the file
    system (a third of a pass's time).  ``None`` in ``sys.modules`` makes
    that import fail at once, with the same ModuleNotFoundError."""
    import sys

    sys.modules.setdefault("torch_mlir.dialects.lt", None)


_skip_dialect_module_lookup()


def new_context() -> ir.Context:
    """A context with every upstream dialect and the ``lt`` dialect loaded."""
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        Lt.load()
    return ctx


_SHARED = threading.local()
_SHARED_USES = 64


def shared_context() -> ir.Context:
    """A context that successive compiles on this thread share: making one
    costs ~15 ms (a quarter of compiling a small kernel).  A context never
    frees what its modules interned, so a fresh one replaces it after
    ``_SHARED_USES`` uses; modules keep their own context alive."""
    ctx, uses = getattr(_SHARED, "entry", (None, _SHARED_USES))
    if uses >= _SHARED_USES:
        ctx, uses = new_context(), 0
    _SHARED.entry = (ctx, uses + 1)
    return ctx


LT_OPS = ("alloc", "dim", "loop", "reduce")
# an lt op in generic form ("lt.loop"() ...) or custom form (lt.loop ... / %x = lt.dim ...)
_LT_OP = re.compile(r'"lt\.([A-Za-z_][\w.$]*)"\s*\(|^[ \t]*(?:%[^=\n]*=[ \t]*)?lt\.([A-Za-z_][\w.$]*)', re.M)


def _unknown_op(text: str, filename: str) -> ParseError | None:
    """An ``lt.<name>`` op the dialect does not define, located where it is
    written (the parser accepts it as an unregistered op, and the first
    error would otherwise come from what it broke, lines later)."""
    for m in _LT_OP.finditer(text):
        name = m.group(1) or m.group(2)
        if name not in LT_OPS:
            start = m.start() if m.group(1) else m.start(2) - len("lt.")
            line = text.count("\n", 0, start) + 1
            col = start - text.rfind("\n", 0, start)
            return ParseError(f"{filename}:{line}:{col}: error: unknown op 'lt.{name}' (the lt dialect has {', '.join(LT_OPS)})")
    return None


def parse_module(text: str, filename: str = "-", context: ir.Context | None = None) -> ir.Module:
    """Parse and verify textual IR; errors name ``filename:line:col``."""
    unknown = _unknown_op(text, filename) if "lt." in text else None
    if unknown is not None:
        raise unknown
    ctx = context or new_context()
    with ctx, ir.Location.unknown():
        try:
            return ir.Module.parse(text)
        except ir.MLIRError as e:
            raise from_mlir_error(e, ParseError, filename) from None


def clone_module(module: ir.Module) -> ir.Module:
    """A copy of ``module`` in its context (locations kept): what a move
    tries on and what undo keeps, at a hundredth of the cost of printing
    and parsing it again."""
    op = module.operation
    with op.context:
        copy = ir.Module.create(loc=op.location)
        for name in op.attributes:
            copy.operation.attributes[name] = op.attributes[name]
        at = ir.InsertionPoint(copy.body)
        for o in module.body.operations:
            o.operation.clone(ip=at)
    return copy


def module_text(module) -> str:
    """The module's text with locations: the form a schedule is keyed,
    cached and saved by (printing assumes it verified: it was, when it was
    parsed or after the pass that made it)."""
    return module.operation.get_asm(enable_debug_info=True, assume_verified=True)


def module_key(module) -> bytes:
    """The module as MLIR bytecode (locations kept): equal for equal
    modules, a fifth of the cost of ``module_text``; what a search tells
    states apart by without printing them."""
    out = io.BytesIO()
    module.operation.write_bytecode(out)
    return out.getvalue()


def element_bytes(module_op) -> int:
    """Bytes of the elements of a module's first memref argument (what a
    vector of the host's width packs); 4 when it has none."""
    for f in functions(module_op):
        for t in ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value).inputs:
            if isinstance(t, ir.MemRefType):
                return nbytes([1], ir.MemRefType(t).element_type)
    return 4


def functions(module_op) -> list:
    """The ``func.func`` operations at the top of a module (as Operations:
    ``FuncOp.name`` is the symbol name, not the op name)."""
    ops = [o.operation for o in module_op.operation.regions[0].blocks[0].operations]
    return [o for o in ops if o.name == "func.func"]
