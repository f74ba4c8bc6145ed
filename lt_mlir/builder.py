"""Builds ``lt`` IR as text: the one place lt_mlir writes the dialect's text.

Pure Python (no MLIR import), so the lowest layer — ``programs`` — and every
frontend can use it.  It reads like MLIR's Python builders: a ``Builder``
holds an insertion point, each op method creates the op there and returns
its result (a typed ``Value``), region ops are context managers that move the
insertion point into their body::

    b = Builder()
    with b.func("add", [("A", "memref<33xf32>"), ("B", "memref<33xf32>")]) as (A, B):
        with b.loop("i", 4, tail=1):           # 4 r 1 over 8: the levels of 33 split by 8
            with b.loop("i", 8):
                i = b.dim("i")
                x = b.load(A, [i])
                b.store(b.binary("mulf", x, x), B, [i])
    text = b.text()                            # verified, then printed

The API (each op's text is the exact generic/custom form the dialect and
upstream parsers accept):

========================================  =====================================================
``b.func(name, args, attributes=)``       ``func.func`` over memrefs; ``args``: ``(name, type)``
                                          or ``(name, type, lt_name)``; each argument carries
                                          ``{lt.name = ...}``; ``with`` yields the arguments;
                                          ``f.add_argument(...)`` adds one later
``b.loop(dim, size, tail=0, index=,``     one ``lt.loop`` level; annotations ``parallel``,
``parallel=, schedule=, unroll=,``        ``schedule``, ``unroll``, ``vectorize``, ``gpu``;
``vectorize=, gpu=)``                     ``with`` yields its ``index`` block argument
``b.nest(dim, extent, blocks)``           the levels of ``extent`` split by ``blocks``
                                          (``levels``), outer to inner; ``with`` yields the loops
``b.dim(dim)``                            ``lt.dim`` (an enclosing loop must iterate ``dim``)
``b.alloc(dims, type)``                   ``lt.alloc`` scratch over named dims
``b.reduce(kind, value, acc, indices)``   ``lt.reduce`` (kind add | mul | max | min)
``b.load(buf, indices)``                  ``memref.load``
``b.store(value, buf, indices)``          ``memref.store``
``b.constant(value, type)``               ``arith.constant`` (int, float, bool)
``b.binary(op, lhs, rhs)``                ``arith.addf`` ... ``arith.maxsi``, ``arith.andi`` ...
``b.unary(op, x)``                        ``arith.negf``, ``math.exp`` ...
``b.cmp(predicate, lhs, rhs)``            ``arith.cmpi`` / ``arith.cmpf`` (by operand type)
``b.select(cond, a, b)``                  ``arith.select``
``b.cast(op, x, to)``                     ``arith.index_cast``, ``extf``, ``sitofp`` ...
``b.if_(cond, has_else=False)``           ``scf.if``; ``with`` enters the then-block,
                                          ``with b.at_end(op.else_block)`` the else-block
``b.for_(lower, upper, step)``            ``scf.for``; ``with`` yields its induction variable
``b.at_end(block)`` / ``b.at(block, i)``  insertion points (context managers), as MLIR's
``b.before(op)`` / ``b.after(op)``        ``InsertionPoint``
``b.fresh(prefix)``                       a new SSA name, ``%<prefix><n>`` (one counter)
``op.walk(order)``                        an op and the ops nested in it, pre- or post-order
``b.text()``                              the module's text (``verify()`` first)
``loop_lines`` / ``loop_attributes``      an ``lt.loop``'s text around body lines that are text
                                          already (``programs.Nest``, kept for such callers)
========================================  =====================================================

Types are MLIR type strings (``"f32"``, ``"index"``, ``"memref<4x8xf32>"``;
``memref(shape, element)`` writes one).  Every op with a result takes
``name=`` (``"x"`` or ``"%x"``); without it the result gets ``fresh`` of a
prefix per op (``c`` constants, ``d`` dims, ``i`` loop indices, ``buf``
allocs, ``v`` otherwise).  Names may be changed (``value.name = ...``) until
the text is printed.  Floating-point constants print as the builder's
``float_format`` says: ``"shortest"`` (Python's shortest round-trip
decimal), ``"e17"`` (``%.17e``) or ``"hex"`` (the bit pattern); infinities
and NaNs always print as bit patterns (MLIR has no decimal form for them).
No locations are printed (every op is ``loc(unknown)`` when parsed).

Malformed use raises ``BuilderError`` (an ``lt_mlir.LtError``) at the call,
or, for what only the finished loop tree shows (a tail not smaller than the
inner extent), at ``verify()``/``text()``: unknown reduce kinds and ops,
mismatched types, index counts that do not match a memref's rank, ``lt.dim``
of a dim no enclosing loop iterates, a value (a loop's index, say) used
outside the region that defines it, an SSA name defined twice in one scope.
``listener``, if given, is called with every op inserted (MLIR's
``OpBuilder::Listener``): the APPy translator tracks which values come from
data with it.
"""

from __future__ import annotations

import math
import numbers
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from .errors import LtError

# The dialect's lists (lt_mlir.dialect.lt's verifiers import them from here).
REDUCE_KINDS = ("add", "mul", "max", "min")
GPU_MAPPINGS = ("block", "thread")
SCHEDULES = ("dynamic", "guided")  # lt.schedule: OpenMP schedules other than the default, static
FLOAT_FORMATS = ("shortest", "e17", "hex")

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
_INT_TYPE = re.compile(r"i[1-9][0-9]*$")
_NAME = re.compile(r"%([A-Za-z_$.-][\w$.-]*|[0-9]+)$")
_SYMBOL = re.compile(r"[A-Za-z_][\w$.]*$")
_MEMREF = re.compile(r"memref<((?:[0-9]+x)*)([A-Za-z0-9_]+)>$")

# op name -> kind of operand type it takes: "float", "int" (integers and index), "bool" (i1 and integers)
_BINARY = {
    **{f"arith.{op}": "float" for op in ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf")},
    **{
        f"arith.{op}": "int"
        for op in ("addi", "subi", "muli", "divsi", "divui", "floordivsi", "ceildivsi", "remsi", "remui", "maxsi", "minsi", "maxui", "minui")
    },
    **{f"arith.{op}": "bool" for op in ("andi", "ori", "xori")},
    "math.powf": "float",
}
_UNARY = {
    "arith.negf": "float",
    **{f"math.{op}": "float" for op in ("exp", "log", "sqrt", "absf", "tanh", "erf", "sin", "cos", "rsqrt", "floor", "ceil",
                                         "log2", "exp2", "roundeven", "trunc")},
    "math.absi": "int",
}
_CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
_CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
# cast op -> (source kind, result kind)
_CASTS = {
    "arith.index_cast": ("int", "int"),
    "arith.extf": ("float", "float"),
    "arith.truncf": ("float", "float"),
    "arith.extsi": ("int", "int"),
    "arith.extui": ("int", "int"),
    "arith.trunci": ("int", "int"),
    "arith.sitofp": ("int", "float"),
    "arith.uitofp": ("int", "float"),
    "arith.fptosi": ("float", "int"),
    "arith.fptoui": ("float", "int"),
}


class BuilderError(LtError, ValueError):
    """Malformed use of the IR builder (lt_mlir.builder): the IR it would
    write is not valid ``lt``."""


# ---------------------------------------------------------------- types


def levels(extent: int, *blocks: int) -> list[tuple[int, int]]:
    """(size, tail) per level, outer to inner, for ``extent`` split by ``blocks``.

    >>> levels(33, 8)
    [(4, 1), (8, 0)]
    >>> levels(100, 16, 4)
    [(6, 4), (4, 0), (4, 0)]
    """
    if extent <= 0:
        raise BuilderError(f"extent must be positive, got {extent}")
    chunks = [extent, *blocks]
    out = []
    for i, chunk in enumerate(chunks):
        step = chunks[i + 1] if i + 1 < len(chunks) else 1
        if step <= 0 or step > chunk:
            raise BuilderError(f"block sizes must be positive and decreasing, got {list(blocks)} for {extent}")
        out.append((chunk // step, chunk % step))
    return out


def memref(shape: Sequence[int], element: str) -> str:
    """``memref<4x8xf32>`` (``memref<f32>`` for no dims)."""
    return f"memref<{''.join(f'{int(s)}x' for s in shape)}{element}>"


def memref_shape(type_: str) -> tuple[tuple[int, ...], str] | None:
    """(shape, element type) of a static memref type string, else None."""
    m = _MEMREF.match(type_)
    if m is None:
        return None
    return tuple(int(s) for s in m.group(1).split("x") if s), m.group(2)


def _kind(type_: str) -> str:
    """"float", "index", "int" or "other" for a type string."""
    if type_ in FLOAT_TYPES:
        return "float"
    if type_ == "index":
        return "index"
    if _INT_TYPE.match(type_):
        return "int"
    return "other"


def _accepts(kind: str, type_: str) -> bool:
    k = _kind(type_)
    if kind == "float":
        return k == "float"
    return k in ("int", "index")  # "int" and "bool": integers, index included (arith takes it)


def _int(value, what: str) -> int:
    """``value`` as a Python int (NumPy's integers too; not bools)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise BuilderError(f"{what} must be an int, got {value!r}")
    return int(value)


def _string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attr(value) -> str:
    """An attribute value in MLIR syntax: strings, ints (i64), bools, lists of strings."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attr(v) for v in value) + "]"
    raise BuilderError(f"cannot write attribute value {value!r}")


# ---------------------------------------------------------------- IR objects


class Value:
    """An SSA value: its name (``%x``, printed), its type (a string), the op
    that defines it (None for a block argument) and the block whose scope it
    belongs to.  Compared by identity."""

    __slots__ = ("_name", "type", "owner", "block")

    def __init__(self, name: str, type_: str, owner: Operation | None, block: Block):
        self._name, self.type, self.owner, self.block = _check_name(name), type_, owner, block

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, name: str) -> None:
        name = _check_name(name)
        names = self.block.names
        if names.get(self._name) is self:
            del names[self._name]
        if any(name in b.names for b in self.block.ancestors()):
            raise BuilderError(f"cannot rename {self._name} to {name}: {name} is already defined in its scope")
        names[name] = self
        self._name = name

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"Value({self._name}: {self.type})"


def _check_name(name: str) -> str:
    if not isinstance(name, str):
        raise BuilderError(f"an SSA name must be a string, got {name!r}")
    if not name.startswith("%"):
        name = "%" + name
    if not _NAME.match(name):
        raise BuilderError(f"'{name}' is not a valid SSA name")
    return name


class Block:
    """A region's one block: its arguments and ops, in order."""

    __slots__ = ("ops", "arguments", "parent", "names")

    def __init__(self, parent: Operation | None):
        self.ops: list[Operation] = []
        self.arguments: list[Value] = []
        self.parent = parent  # the op whose region this block is
        self.names: dict[str, Value] = {}  # SSA names defined in this block

    def ancestors(self) -> Iterator[Block]:
        """This block, then the blocks around it, innermost first."""
        b = self
        while b is not None:
            yield b
            b = b.parent.parent if b.parent is not None else None

    def scope(self) -> tuple[Block, ...]:
        """The blocks whose values are visible here (``ancestors``)."""
        return tuple(self.ancestors())


class Operation:
    """One op: its name, operands, results, regions (one block each) and a
    printer (the op's line(s), from its values' names at print time)."""

    __slots__ = ("name", "operands", "results", "blocks", "parent", "_line", "_builder", "_saved")

    def __init__(self, name: str, operands: Sequence[Value] = (), line: Callable[[], str] | None = None):
        self.name = name
        self.operands = tuple(operands)
        self.results: tuple[Value, ...] = ()
        self.blocks: list[Block] = []
        self.parent: Block | None = None
        self._line = line
        self._builder: Builder | None = None
        self._saved: list = []

    # Region ops are context managers: inside, their (first) block is the
    # builder's insertion point.
    def _enter(self, result):
        b = self._builder
        self._saved.append((b._block, b._before))
        b._block, b._before = self.blocks[0], None
        return result

    def __exit__(self, *exc) -> bool:
        b = self._builder
        b._block, b._before = self._saved.pop()
        return False

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise BuilderError(f"'{self.name}' has {len(self.results)} results, not one")
        return self.results[0]

    def walk(self, order: str = "pre") -> Iterator[Operation]:
        """This op and every op nested in it, in pre-order or post-order."""
        if order == "pre":
            yield self
        for block in self.blocks:
            for op in list(block.ops):
                yield from op.walk(order)
        if order == "post":
            yield self

    def _new_block(self) -> Block:
        block = Block(self)
        self.blocks.append(block)
        return block

    def print(self, out: list[str], depth: int) -> None:
        out.append("  " * depth + self._line())


class _IndexedOp(Operation):
    """An op with one region of one block whose argument is the index
    (``lt.loop``, ``scf.for``): ``with op as i`` builds its body."""

    __slots__ = ()

    @property
    def body(self) -> Block:
        return self.blocks[0]

    @property
    def index(self) -> Value:
        return self.blocks[0].arguments[0]

    def __enter__(self) -> Value:
        return self._enter(self.index)


class LoopOp(_IndexedOp):
    """``lt.loop``: one level over ``dim``; ``body`` has one ``index`` argument."""

    __slots__ = ("dim", "size", "tail", "annotations")

    def __init__(self, dim: str, size: int, tail: int, annotations: dict):
        super().__init__("lt.loop")
        self.dim, self.size, self.tail, self.annotations = dim, size, tail, annotations

    def attributes(self) -> str:
        """The attribute dictionary's contents, as printed."""
        return loop_attributes(self.dim, self.size, self.tail, self.annotations)

    def print(self, out: list[str], depth: int) -> None:
        body: list[str] = []
        for op in self.body.ops:
            op.print(body, depth + 1)
        out.extend(loop_lines(str(self.index), self.attributes(), body, "  " * depth))


def loop_attributes(dim: str, size: int, tail: int, annotations: dict | None = None) -> str:
    """The contents of an ``lt.loop``'s attribute dictionary (annotations:
    ``parallel`` True, ``unroll`` 4, ...; None or False: absent)."""
    parts = [f"dim = {_string(dim)}", f"size = {size} : i64", f"tail = {tail} : i64"]
    for key in ("gpu", "parallel", "schedule", "unroll", "vectorize"):
        v = (annotations or {}).get(key)
        if v is None or v is False:
            continue
        parts.append(f"lt.{key}" if v is True else f"lt.{key} = {_attr(v)}")
    return ", ".join(parts)


def loop_lines(index: str, attributes: str, body: list[str], pad: str = "") -> list[str]:
    """The text of an ``lt.loop`` around ``body`` (its lines, indented
    already): ``index`` names the block argument, ``attributes`` is the
    dictionary's contents (``loop_attributes``).  For code that holds a
    loop body as text (``programs.Nest``); build with ``Builder.loop``."""
    return [pad + '"lt.loop"() ({', pad + f"^bb0({index}: index):", *body, pad + f"}}) {{{attributes}}} : () -> ()"]


class IfOp(Operation):
    """``scf.if`` without results: ``then_block``, optional ``else_block``."""

    __slots__ = ()

    @property
    def then_block(self) -> Block:
        return self.blocks[0]

    @property
    def else_block(self) -> Block | None:
        return self.blocks[1] if len(self.blocks) > 1 else None

    def __enter__(self) -> None:
        return self._enter(None)

    def print(self, out: list[str], depth: int) -> None:
        pad = "  " * depth
        out.append(f"{pad}scf.if {self.operands[0]} {{")
        for i, block in enumerate(self.blocks):
            if i:
                out.append(pad + "} else {")
            for op in block.ops:
                op.print(out, depth + 1)
        out.append(pad + "}")


class ForOp(_IndexedOp):
    """``scf.for`` without iteration arguments: ``body``, ``index``."""

    __slots__ = ()

    def print(self, out: list[str], depth: int) -> None:
        pad = "  " * depth
        lo, hi, step = self.operands
        out.append(f"{pad}scf.for {self.index} = {lo} to {hi} step {step} {{")
        for op in self.body.ops:
            op.print(out, depth + 1)
        out.append(pad + "}")


class FuncOp(Operation):
    """``func.func @name`` over its arguments (each with an ``lt.name``),
    ending in ``return``."""

    __slots__ = ("symbol", "lt_names", "attributes", "argument_attributes")

    def __init__(self, symbol: str, attributes: dict):
        super().__init__("func.func")
        self.symbol, self.attributes = symbol, attributes
        self.lt_names: list[str] = []
        self.argument_attributes: list[dict] = []

    @property
    def body(self) -> Block:
        return self.blocks[0]

    @property
    def arguments(self) -> list[Value]:
        return self.blocks[0].arguments

    def __enter__(self) -> tuple[Value, ...]:
        return self._enter(tuple(self.arguments))

    def add_argument(self, name: str, type_: str, lt_name: str | None = None, attributes: dict | None = None,
                     position: int | None = None) -> Value:
        """A new last argument, or one at ``position`` (``lt_name``: the name
        the loop tree and the kernel's signature show; by default ``name``
        without ``%``; ``attributes``: more argument attributes, e.g.
        ``{"lt.repeats": True}``)."""
        v = Value(name, type_, None, self.body)
        if v.name in self.body.names:
            raise BuilderError(f"function @{self.symbol} has two arguments named {v.name}")
        at = len(self.body.arguments) if position is None else position
        if not 0 <= at <= len(self.body.arguments):
            raise BuilderError(f"function @{self.symbol} has no argument position {at}")
        self.body.names[v.name] = v
        self.body.arguments.insert(at, v)
        self.lt_names.insert(at, lt_name if lt_name is not None else v.name[1:])
        self.argument_attributes.insert(at, dict(attributes or {}))
        return v

    def print(self, out: list[str], depth: int) -> None:
        def attrs_of(n, more):
            extra = "".join(f", {k}" if v is True else f", {k} = {_attr(v)}" for k, v in more.items())
            return f"{{lt.name = {_string(n)}{extra}}}"

        args = ", ".join(f"{v}: {v.type} {attrs_of(n, m)}" for v, n, m in zip(self.arguments, self.lt_names, self.argument_attributes))
        attrs = ""
        if self.attributes:
            attrs = " attributes {" + ", ".join(f"{k} = {_attr(v)}" for k, v in self.attributes.items()) + "}"
        pad = "  " * depth
        out.append(f"{pad}func.func @{self.symbol}({args}){attrs} {{")
        for op in self.body.ops:
            op.print(out, depth + 1)
        out.extend([pad + "  return", pad + "}"])


# ---------------------------------------------------------------- the builder


class Builder:
    """Creates ops at an insertion point and prints the module (the
    module docstring lists the API)."""

    def __init__(self, float_format: str = "shortest", listener: Callable[[Operation], None] | None = None):
        if float_format not in FLOAT_FORMATS:
            raise BuilderError(f"unknown float format '{float_format}' (one of {', '.join(FLOAT_FORMATS)})")
        self.float_format = float_format
        self.listener = listener
        self.functions: list[FuncOp] = []
        self._counter = 0
        self._block: Block | None = None  # insertion point: before _before in _block (None: at the end)
        self._before: Operation | None = None

    # ------------------------------------------------------------ names
    def fresh(self, prefix: str = "v") -> str:
        """A new SSA name ``%<prefix><n>``; ``n`` counts every call."""
        self._counter += 1
        return f"%{prefix}{self._counter}"

    # ------------------------------------------------------------ insertion points
    @property
    def block(self) -> Block | None:
        """The block ops are inserted into."""
        return self._block

    @contextmanager
    def _at(self, block: Block, before: Operation | None):
        saved = self._block, self._before
        self._block, self._before = block, before
        try:
            yield block
        finally:
            self._block, self._before = saved

    def at_end(self, block: Block):
        """Insert at the end of ``block`` (a context manager)."""
        return self._at(block, None)

    def at(self, block: Block, position: int):
        """Insert before ``block``'s op number ``position`` (at the end when
        there is none): later ops go after the ones inserted here first."""
        return self._at(block, block.ops[position] if position < len(block.ops) else None)

    def before(self, op: Operation):
        """Insert just before ``op``."""
        return self._at(op.parent, op)

    def after(self, op: Operation):
        """Insert just after ``op``."""
        ops = op.parent.ops
        i = ops.index(op) + 1
        return self._at(op.parent, ops[i] if i < len(ops) else None)

    # ------------------------------------------------------------ plumbing
    def _insert(self, op: Operation, names: Sequence[tuple[str, str]] = ()) -> Operation:
        """Insert ``op`` at the insertion point with results ``(name, type)``."""
        block = self._block
        if block is None:
            raise BuilderError(f"no insertion point for '{op.name}': open a function first (Builder.func)")
        scope = block.scope()
        for v in op.operands:
            self._check_visible(v, scope, op.name)
        results = []
        for name, type_ in names:
            v = Value(name, type_, op, block)
            self._define(v, block, scope)
            results.append(v)
        op.results = tuple(results)
        op.parent = block
        op._builder = self
        if self._before is None:
            block.ops.append(op)
        else:
            block.ops.insert(block.ops.index(self._before), op)
        if self.listener is not None:
            self.listener(op)
        return op

    @staticmethod
    def _define(v: Value, block: Block, scope: tuple | None = None) -> None:
        for b in scope if scope is not None else block.scope():
            if v.name in b.names:
                raise BuilderError(f"redefinition of SSA value {v.name} (already defined in an enclosing scope)")
        block.names[v.name] = v

    @staticmethod
    def _check_visible(v, scope: tuple, what: str) -> None:
        if not isinstance(v, Value):
            raise BuilderError(f"'{what}' operand {v!r} is not a Value made by the builder")
        if v.block not in scope:  # blocks compare by identity
            owner = "the body of an lt.loop (its index)" if isinstance(v.block.parent, LoopOp) and v.owner is None else "another region"
            raise BuilderError(f"'{what}' uses {v.name} outside the region that defines it ({owner})")

    def _result(self, op: Operation, name: str | None, prefix: str, type_: str) -> Value:
        return self._insert(op, [(name if name is not None else self.fresh(prefix), type_)]).result

    @staticmethod
    def _memref(buf: Value, what: str) -> tuple[tuple[int, ...], str]:
        parts = memref_shape(buf.type) if isinstance(buf, Value) else None
        if parts is None:
            raise BuilderError(f"'{what}' needs a memref, got {buf!r}")
        return parts

    @staticmethod
    def _indices(indices: Sequence[Value], rank: int, buf: Value, what: str) -> list[Value]:
        indices = list(indices)
        if len(indices) != rank:
            raise BuilderError(f"'{what}' needs {rank} indices for {buf.type}, got {len(indices)}")
        for i in indices:
            if not isinstance(i, Value) or i.type != "index":
                raise BuilderError(f"'{what}' index {i!r} is not an index value")
        return indices

    @staticmethod
    def _same_type(what: str, *values: Value) -> str:
        for v in values:
            if not isinstance(v, Value):
                raise BuilderError(f"'{what}' operand {v!r} is not a Value made by the builder")
        types = {v.type for v in values}
        if len(types) != 1:
            raise BuilderError(f"'{what}' operands have different types: {', '.join(v.type for v in values)}")
        return values[0].type

    # ------------------------------------------------------------ func
    def func(self, name: str, args: Sequence[tuple] = (), attributes: dict | None = None) -> FuncOp:
        """A new function at the end of the module; ``args``: ``(name,
        type)``, ``(name, type, lt_name)`` or ``(name, type, lt_name, attributes)``.  ``with`` it to build its body
        (yields the argument values)."""
        if not _SYMBOL.match(name):
            raise BuilderError(f"'{name}' is not a valid function name")
        f = FuncOp(name, dict(attributes or {}))
        f._builder = self
        f._new_block()
        for a in args:
            f.add_argument(*a)
        self.functions.append(f)
        return f

    # ------------------------------------------------------------ lt ops
    def loop(
        self,
        dim: str,
        size: int,
        tail: int = 0,
        index: str | None = None,
        *,
        parallel: bool = False,
        schedule: str | None = None,
        unroll: int | None = None,
        vectorize: int | None = None,
        gpu: str | None = None,
    ) -> LoopOp:
        """One ``lt.loop`` level: ``size`` full iterations of the body, then
        one over ``tail`` elements of the inner levels (``tail`` must be
        smaller than what one iteration covers of ``dim``: checked by
        ``verify``).  ``index`` names its block argument.  ``with`` it to
        build the body (yields the index)."""
        if not isinstance(dim, str) or not dim:
            raise BuilderError(f"'lt.loop' dim must be a non-empty string, got {dim!r}")
        size, tail = _int(size, "'lt.loop' size"), _int(tail, "'lt.loop' tail")
        if size <= 0:
            raise BuilderError(f"'lt.loop' size must be positive, got {size}")
        if tail < 0:
            raise BuilderError(f"'lt.loop' tail must not be negative, got {tail}")
        if schedule is not None and schedule not in SCHEDULES:
            raise BuilderError(f"'lt.loop' schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
        if schedule is not None and not parallel:
            raise BuilderError("'lt.loop' schedule needs parallel=True (it says how a parallel loop's iterations are dealt to threads)")
        if unroll is not None and _int(unroll, "'lt.loop' unroll") < 0:
            raise BuilderError(f"'lt.loop' unroll must be a non-negative int (0: full), got {unroll!r}")
        if vectorize is not None and _int(vectorize, "'lt.loop' vectorize") <= 0:
            raise BuilderError(f"'lt.loop' vectorize must be a positive int, got {vectorize!r}")
        if gpu is not None and gpu not in GPU_MAPPINGS:
            raise BuilderError(f"'lt.loop' gpu must be one of {', '.join(GPU_MAPPINGS)}, got {gpu!r}")
        annotations = {
            "parallel": bool(parallel),
            "schedule": schedule,
            "unroll": None if unroll is None else int(unroll),
            "vectorize": None if vectorize is None else int(vectorize),
            "gpu": gpu,
        }
        return self._indexed(LoopOp(dim, size, tail, annotations), index, "i")

    @contextmanager
    def nest(self, dim: str, extent: int, blocks: Sequence[int] = ()):
        """The levels of ``dim`` for ``extent`` split by ``blocks``
        (``levels``), nested outer to inner; inside, the insertion point is
        the innermost body.  Yields the loops, outer first."""
        loops = []
        saved = self._block, self._before
        try:
            for size, tail in levels(extent, *blocks):
                loops.append(self.loop(dim, size, tail))
                self._block, self._before = loops[-1].body, None
            yield loops
        finally:
            self._block, self._before = saved

    def dim(self, dim: str, name: str | None = None) -> Value:
        """``lt.dim``: the logical index of ``dim`` here."""
        block = self._block
        if block is not None and not any(isinstance(b.parent, LoopOp) and b.parent.dim == dim for b in block.ancestors()):
            raise BuilderError(f"'lt.dim' unknown dim '{dim}': no enclosing lt.loop iterates it")
        op = Operation("lt.dim")
        op._line = lambda: f'{op.result} = "lt.dim"() {{dim = {_string(dim)}}} : () -> index'
        return self._result(op, name, "d", "index")

    def alloc(self, dims: Sequence[str], type_: str, name: str | None = None) -> Value:
        """``lt.alloc``: scratch over named ``dims`` (a static memref, one dim a named dim)."""
        dims = list(dims)
        if not all(isinstance(d, str) and d for d in dims):
            raise BuilderError(f"'lt.alloc' dims must be non-empty strings, got {dims}")
        if len(set(dims)) != len(dims):
            raise BuilderError(f"'lt.alloc' dims must be distinct, got {dims}")
        parts = memref_shape(type_)
        if parts is None:
            raise BuilderError(f"'lt.alloc' needs a static memref type, got {type_!r}")
        if len(parts[0]) != len(dims):
            raise BuilderError(f"'lt.alloc' has {len(dims)} dims but its memref {type_} has rank {len(parts[0])}")
        op = Operation("lt.alloc")
        op._line = lambda: f'{op.result} = "lt.alloc"() {{dims = {_attr(dims)}}} : () -> {type_}'
        return self._result(op, name, "buf", type_)

    def reduce(self, kind: str, value: Value, acc: Value, indices: Sequence[Value] = ()) -> Operation:
        """``lt.reduce``: ``acc[indices] = acc[indices] <kind> value`` (it never initialises ``acc``)."""
        if kind not in REDUCE_KINDS:
            raise BuilderError(f"'lt.reduce' unknown kind '{kind}' (expected one of {', '.join(REDUCE_KINDS)})")
        shape, element = self._memref(acc, "lt.reduce")
        indices = self._indices(indices, len(shape), acc, "lt.reduce")
        if not isinstance(value, Value) or value.type != element:
            raise BuilderError(f"'lt.reduce' value {value!r} does not match the accumulator's element type {element}")
        operands = [value, acc, *indices]
        types = ", ".join([value.type, acc.type] + ["index"] * len(indices))

        def line():
            return f'"lt.reduce"({", ".join(map(str, operands))}) {{kind = {_string(kind)}}} : ({types}) -> ()'

        return self._insert(Operation("lt.reduce", operands, line))

    # ------------------------------------------------------------ memref
    def load(self, buf: Value, indices: Sequence[Value] = (), name: str | None = None) -> Value:
        """``memref.load buf[indices]``."""
        shape, element = self._memref(buf, "memref.load")
        indices = self._indices(indices, len(shape), buf, "memref.load")
        op = Operation("memref.load", [buf, *indices])
        op._line = lambda: f"{op.result} = memref.load {buf}[{', '.join(map(str, indices))}] : {buf.type}"
        return self._result(op, name, "v", element)

    def store(self, value: Value, buf: Value, indices: Sequence[Value] = ()) -> Operation:
        """``memref.store value, buf[indices]``."""
        shape, element = self._memref(buf, "memref.store")
        indices = self._indices(indices, len(shape), buf, "memref.store")
        if not isinstance(value, Value) or value.type != element:
            raise BuilderError(f"'memref.store' of {value!r} into {buf.type}: the types differ")
        return self._insert(
            Operation("memref.store", [value, buf, *indices], lambda: f"memref.store {value}, {buf}[{', '.join(map(str, indices))}] : {buf.type}")
        )

    # ------------------------------------------------------------ arith / math
    def constant(self, value: int | float | bool, type_: str, name: str | None = None) -> Value:
        """``arith.constant`` of ``value`` (bools for ``i1``)."""
        kind = _kind(type_)
        if kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise BuilderError(f"'arith.constant' of type {type_} needs a number, got {value!r}")
            text = f"{self.float_literal(float(value), type_)} : {type_}"
        elif type_ == "i1" and isinstance(value, bool):
            text = "true" if value else "false"
        elif kind in ("int", "index"):
            what = f"'arith.constant' of type {type_}"
            text = f"{_int(value, what)} : {type_}"
        else:
            raise BuilderError(f"'arith.constant' of type {type_!r} is not supported")
        op = Operation("arith.constant")
        op._line = lambda: f"{op.result} = arith.constant {text}"
        return self._result(op, name, "c", type_)

    def float_literal(self, value: float, type_: str) -> str:
        """How ``constant`` writes ``value`` of float type ``type_`` (``float_format``)."""
        pack = {"f32": ">f", "f64": ">d", "f16": ">e"}.get(type_)
        if math.isnan(value) and self.float_format != "hex":
            value = math.nan  # the canonical quiet NaN
        if self.float_format == "hex" or not math.isfinite(value):
            if pack is None:
                raise BuilderError(f"cannot write {value!r} as a {type_} bit pattern")
            try:
                return "0x" + struct.pack(pack, value).hex().upper()
            except OverflowError:
                raise BuilderError(f"{value!r} is out of range for {type_}") from None
        if self.float_format == "e17":
            return f"{value:.17e}"
        text = repr(value)
        if "." not in text:  # 1e-05: MLIR's float literals need a point
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}"
        return text

    @staticmethod
    def _op_name(op: str, table: dict, what: str) -> str:
        full = op if "." in op else f"arith.{op}"
        if full not in table and "." not in op and f"math.{op}" in table:
            full = f"math.{op}"
        if full not in table:
            raise BuilderError(f"unknown {what} op '{op}' (known: {', '.join(sorted(table))})")
        return full

    def binary(self, op: str, lhs: Value, rhs: Value, name: str | None = None) -> Value:
        """``%r = arith.<op> lhs, rhs : T`` (``op``: ``addf``, ``arith.addi``, ...)."""
        full = self._op_name(op, _BINARY, "binary")
        t = self._same_type(full, lhs, rhs)
        if not _accepts(_BINARY[full], t):
            raise BuilderError(f"'{full}' does not take {t} operands")
        o = Operation(full, [lhs, rhs])
        o._line = lambda: f"{o.result} = {full} {lhs}, {rhs} : {t}"
        return self._result(o, name, "v", t)

    def unary(self, op: str, x: Value, name: str | None = None) -> Value:
        """``%r = <op> x : T`` (``op``: ``negf``, ``math.exp``, ``exp``, ...)."""
        full = self._op_name(op, _UNARY, "unary")
        t = self._same_type(full, x)
        if not _accepts(_UNARY[full], t):
            raise BuilderError(f"'{full}' does not take a {t} operand")
        o = Operation(full, [x])
        o._line = lambda: f"{o.result} = {full} {x} : {t}"
        return self._result(o, name, "v", t)

    def cmp(self, predicate: str, lhs: Value, rhs: Value, name: str | None = None) -> Value:
        """``arith.cmpf`` (float operands) or ``arith.cmpi`` (integers, index): an ``i1``."""
        t = self._same_type("arith.cmp", lhs, rhs)
        full, preds = ("arith.cmpf", _CMPF) if _kind(t) == "float" else ("arith.cmpi", _CMPI)
        if _kind(t) == "other":
            raise BuilderError(f"cannot compare {t} values")
        if predicate not in preds:
            raise BuilderError(f"'{full}' unknown predicate '{predicate}' (one of {', '.join(preds)})")
        o = Operation(full, [lhs, rhs])
        o._line = lambda: f"{o.result} = {full} {predicate}, {lhs}, {rhs} : {t}"
        return self._result(o, name, "v", "i1")

    def select(self, cond: Value, a: Value, b: Value, name: str | None = None) -> Value:
        """``arith.select cond, a, b``."""
        if not isinstance(cond, Value) or cond.type != "i1":
            raise BuilderError(f"'arith.select' condition {cond!r} is not an i1")
        t = self._same_type("arith.select", a, b)
        o = Operation("arith.select", [cond, a, b])
        o._line = lambda: f"{o.result} = arith.select {cond}, {a}, {b} : {t}"
        return self._result(o, name, "v", t)

    def cast(self, op: str, x: Value, to: str, name: str | None = None) -> Value:
        """``%r = arith.<op> x : T to U`` (``index_cast``, ``extf``, ``sitofp``, ...)."""
        full = self._op_name(op, _CASTS, "cast")
        t = self._same_type(full, x)
        src, dst = _CASTS[full]
        if not (_accepts(src, t) and _accepts(dst, to)) or (full == "arith.index_cast" and (t == "index") == (to == "index")):
            raise BuilderError(f"'{full}' cannot convert {t} to {to}")
        o = Operation(full, [x])
        o._line = lambda: f"{o.result} = {full} {x} : {t} to {to}"
        return self._result(o, name, "v", to)

    # ------------------------------------------------------------ scf
    def if_(self, cond: Value, has_else: bool = False) -> IfOp:
        """``scf.if cond`` (no results); ``with`` it to build the then-block."""
        if not isinstance(cond, Value) or cond.type != "i1":
            raise BuilderError(f"'scf.if' condition {cond!r} is not an i1")
        op = IfOp("scf.if", [cond])
        op._new_block()
        if has_else:
            op._new_block()
        return self._insert(op)

    def for_(self, lower: Value, upper: Value, step: Value, index: str | None = None) -> ForOp:
        """``scf.for index = lower to upper step step`` (no iteration
        arguments); ``with`` it to build the body (yields the index)."""
        for v in (lower, upper, step):
            if not isinstance(v, Value) or v.type != "index":
                raise BuilderError(f"'scf.for' bound {v!r} is not an index value")
        return self._indexed(ForOp("scf.for", [lower, upper, step]), index, "j")

    def _indexed(self, op, index: str | None, prefix: str):
        """Insert ``op`` (an lt.loop or scf.for) with a body block whose one
        argument is its index value (named ``index`` or a fresh ``prefix``N)."""
        body = op._new_block()
        self._insert(op)
        v = Value(index if index is not None else self.fresh(prefix), "index", None, body)
        self._define(v, body)
        body.arguments.append(v)
        return op

    # ------------------------------------------------------------ output
    def verify(self) -> None:
        """What only the finished tree shows: every loop's tail is smaller
        than its inner extent, and the inner levels of a dim agree."""
        for f in self.functions:
            for op in f.walk():
                if isinstance(op, LoopOp):
                    extents = {_level_extent(inner) for inner in _inner_levels(op)}
                    if len(extents) > 1:
                        raise BuilderError(f"'lt.loop' inner levels over dim '{op.dim}' cover different extents {sorted(extents)}")
                    inner = extents.pop() if extents else 1
                    if op.tail >= inner:
                        raise BuilderError(f"'lt.loop' tail {op.tail} must be smaller than the inner extent {inner} of dim '{op.dim}'")

    def text(self) -> str:
        """The module: its functions, verified, as MLIR text."""
        self.verify()
        out: list[str] = []
        for f in self.functions:
            f.print(out, 0)
            out.append("")
        return "\n".join(out)


def _inner_levels(loop: LoopOp) -> list[LoopOp]:
    """The outermost loops over ``loop``'s dim inside its body."""
    found = []

    def visit(block: Block) -> None:
        for o in block.ops:
            if isinstance(o, LoopOp) and o.dim == loop.dim:
                found.append(o)
                continue
            for b in o.blocks:
                visit(b)

    visit(loop.body)
    return found


def _level_extent(loop: LoopOp) -> int:
    levels_ = _inner_levels(loop)
    return loop.size * (_level_extent(levels_[0]) if levels_ else 1) + loop.tail

