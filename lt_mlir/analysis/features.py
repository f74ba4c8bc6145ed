"""Observations of an lt module for a reinforcement-learning agent.

The features LoopTune (CompilerGym's ``loop_tool`` environment) gives its
agent, computed from the lt IR alone (pure analysis: nothing is compiled or
run):

``loops_tensor``    one row per loop (L0, L1, ... in pre-order across the
                    module, as passes number them): cursor, size, tail,
                    depth, annotations and a 16-bin histogram of the memory
                    strides of the accesses inside the loop.
``stride_tensor``   the 32-bin stride histogram pooled over every loop.
``ir_tree_networkx``   the loop tree as a ``networkx.DiGraph``.
``ir_graph_networkx``  the tree plus buffers, memory and SSA edges
                    (``networkx.MultiDiGraph``).

Strides
-------
The stride of an access (``memref.load``, ``memref.store``, ``lt.reduce``)
with respect to an enclosing loop L over dim d is how many elements its
row-major linearised address moves when L's iteration number grows by one:
the sum over the index axes of (coefficient of ``lt.dim d`` in that index)
x (row-major stride of the axis) x ``inner_extent(L)``.  Only the ``lt.dim
d`` ops *inside* L count: one taken outside L (the base of a tile, as
lt-shrink-buffers writes ``m - m``) does not move while L iterates.  Index
expressions are read as linear forms over ``lt.dim``, ``arith.constant``,
``arith.addi``, ``arith.subi`` and ``arith.muli`` by a constant; an access
with any other index (a loop's block argument, a clamp through
``minsi``/``maxsi``, a loaded value) has an unknown stride and is left out
of the histograms.

A stride falls in bin 0 when it is 0, else in bin
``min(STRIDE_BINS - 1, 1 + floor(log2(|stride|)))`` (1: unit stride, 2:
stride 2 or 3, ...).  Each access counts with a weight: how many times it
runs per kernel call, the product over its enclosing loops of
``size + (1 if tail else 0)``.  With tails this is an upper bound: the tail
iteration of a level runs the inner levels over fewer elements, and the
weight counts it as a full one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..dialect import lt
from ..dialect.loop_tree import loop_tree, preorder_loops, value_names
from ..mlir import ir
from .dependence import accesses

STRIDE_BINS = 32
# the stride histogram of one loop in loops_tensor: bins >= 15 fold into the last
LOOP_STRIDE_BINS = 16

LOOP_FEATURES: list[str] = [
    "is_cursor",
    "size",
    "tail",
    "depth",
    "parallel",
    "unroll",
    "vectorize",
    "gpu_block",
    "gpu_thread",
    *(f"stride_{b}" for b in range(LOOP_STRIDE_BINS)),
]
_FIRST_STRIDE_COLUMN = LOOP_FEATURES.index("stride_0")

__all__ = [
    "LOOP_FEATURES",
    "STRIDE_BINS",
    "ir_graph_networkx",
    "ir_tree_networkx",
    "loops_tensor",
    "stride_tensor",
]


# ------------------------------------------------------------------ strides


def stride_bin(stride: int, bins: int = STRIDE_BINS) -> int:
    """0 for stride 0, else ``min(bins - 1, 1 + floor(log2(|stride|)))``."""
    return min(bins - 1, abs(int(stride)).bit_length())


def _linear(value, memo: dict):
    """``(constant, {lt.dim op: coefficient})`` of an index value, or None
    when it is not a linear form over ``lt.dim`` ops."""
    if value in memo:
        return memo[value]
    memo[value] = None  # cycles cannot occur in SSA; this only guards re-entry
    owner = value.owner
    result = None
    if not isinstance(owner, ir.Block):  # a block argument (a loop's iteration) is unknown
        op = owner.operation
        name = op.name
        if name == "lt.dim":
            result = (0, {op: 1})
        elif name == "arith.constant":
            a = op.attributes["value"]
            if isinstance(a, ir.IntegerAttr):
                result = (a.value, {})
        elif name in ("arith.addi", "arith.subi", "arith.muli") and len(op.operands) == 2:
            x, y = (_linear(v, memo) for v in op.operands)
            if x is not None and y is not None:
                if name == "arith.muli":
                    if not y[1]:
                        result = _scale(x, y[0])
                    elif not x[1]:
                        result = _scale(y, x[0])
                else:
                    sign = 1 if name == "arith.addi" else -1
                    terms = dict(x[1])
                    for d, c in y[1].items():
                        terms[d] = terms.get(d, 0) + sign * c
                    result = (x[0] + sign * y[0], {d: c for d, c in terms.items() if c})
    memo[value] = result
    return result


def _scale(form, factor: int):
    return (form[0] * factor, {d: c * factor for d, c in form[1].items() if c * factor})


def _row_major_strides(shape) -> list[int]:
    out = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        out[axis] = out[axis + 1] * shape[axis + 1]
    return out


@dataclass
class _AccessInfo:
    op: object
    buffer: object
    kind: str  # "read" | "write" | "reduce:<kind>"
    weight: int
    loops: list  # enclosing loop indices, innermost first
    strides: dict = field(default_factory=dict)  # loop index -> stride; empty when unknown


class _Analysis:
    """Loops, their numbering and every access's strides, for one module."""

    def __init__(self, module):
        self.root = module.operation
        self.loops = preorder_loops(self.root)
        self.index = {op: i for i, op in enumerate(self.loops)}
        self.parent: list[int | None] = []
        self.depth: list[int] = []
        for op in self.loops:
            enclosing = lt.enclosing_loops(op)
            self.parent.append(self.index[enclosing[0]] if enclosing else None)
            self.depth.append(len(enclosing))
        self.inner_extent = [lt.inner_extent(op) for op in self.loops]
        self.trips = [lt.loop_size(op) + (1 if lt.loop_tail(op) else 0) for op in self.loops]
        self.accesses = [self._access(a) for a in accesses(self.root)]

    def _access(self, a) -> _AccessInfo:
        loops = [self.index[l] for l in lt.enclosing_loops(a.op)]
        weight = 1
        for i in loops:
            weight *= self.trips[i]
        info = _AccessInfo(a.op, a.buffer, a.kind, weight, loops)
        t = a.buffer.type
        if not isinstance(t, ir.MemRefType):
            return info
        t = ir.MemRefType(t)
        if not t.has_static_shape or t.rank != len(a.indices):
            return info
        memo: dict = {}
        terms: dict = {}  # lt.dim op -> coefficient in the linearised address
        for index, axis_stride in zip(a.indices, _row_major_strides(t.shape)):
            form = _linear(index, memo)
            if form is None:
                return info
            for d, c in form[1].items():
                terms[d] = terms.get(d, 0) + c * axis_stride
        # lt.dim op -> (its dim, the loops around it)
        dims = {d: (ir.StringAttr(d.attributes["dim"]).value, {self.index[l] for l in lt.enclosing_loops(d)}) for d in terms}
        for i in loops:
            dim = lt.loop_dim(self.loops[i])
            coefficient = sum(c for d, c in terms.items() if dims[d][0] == dim and i in dims[d][1])
            info.strides[i] = coefficient * self.inner_extent[i]
        return info

    def loop_histograms(self, bins: int = STRIDE_BINS) -> np.ndarray:
        """[loops, bins]: each loop's weighted histogram of the strides, w.r.t.
        that loop, of the accesses inside it."""
        out = np.zeros((len(self.loops), bins), dtype=np.float64)
        for a in self.accesses:
            for i, stride in a.strides.items():
                out[i, stride_bin(stride, bins)] += a.weight
        return out


# ------------------------------------------------------------------ tensors


def loops_tensor(module, cursor: int | None, max_loops: int) -> np.ndarray:
    """float32 ``[max_loops, len(LOOP_FEATURES)]``: one row per loop in
    pre-order (L0 first); rows past the last loop are zeros and loops past
    ``max_loops`` are dropped.

    Columns (``LOOP_FEATURES``): ``is_cursor`` (1 on row ``cursor``),
    ``size``, ``tail``, ``depth`` (0 outermost), ``parallel`` (0/1),
    ``unroll`` (factor, 0 none, ``size`` for a full unroll), ``vectorize``
    (width or 0), ``gpu_block``, ``gpu_thread`` (0/1), then ``stride_0`` ..
    ``stride_15``: the histogram of the strides, with respect to this loop,
    of the accesses directly or indirectly inside it, each counted with its
    execution count (see the module docstring); strides of bin 15 and above
    share the last column.  Raw values: normalising is the caller's job."""
    if max_loops < 0:
        raise ValueError(f"max_loops must not be negative, got {max_loops}")
    analysis = _Analysis(module)
    n = len(analysis.loops)
    if cursor is not None and not 0 <= cursor < n:
        raise ValueError(f"cursor L{cursor} is not a loop of the module ({n} loops)")
    out = np.zeros((max_loops, len(LOOP_FEATURES)), dtype=np.float32)
    histograms = analysis.loop_histograms(LOOP_STRIDE_BINS)
    for i, op in enumerate(analysis.loops[:max_loops]):
        notes = lt.annotations(op)
        size = lt.loop_size(op)
        unroll = notes.get("unroll")
        row = out[i]
        row[0] = 1.0 if cursor == i else 0.0
        row[1] = size
        row[2] = lt.loop_tail(op)
        row[3] = analysis.depth[i]
        row[4] = 1.0 if notes.get("parallel") else 0.0
        row[5] = 0 if unroll is None else (size if unroll == 0 else unroll)
        row[6] = notes.get("vectorize", 0)
        row[7] = 1.0 if notes.get("gpu") == "block" else 0.0
        row[8] = 1.0 if notes.get("gpu") == "thread" else 0.0
        row[_FIRST_STRIDE_COLUMN:] = histograms[i]
    return out


def stride_tensor(module) -> np.ndarray:
    """float32 ``[STRIDE_BINS]``: the weighted stride histogram pooled over
    every loop (the sum over loops of each loop's histogram of the strides,
    with respect to it, of the accesses inside it).  Accesses outside every
    loop and accesses of unknown stride do not count."""
    analysis = _Analysis(module)
    return analysis.loop_histograms(STRIDE_BINS).sum(axis=0).astype(np.float32)


# ------------------------------------------------------------------ graphs


def _is_index_op(op) -> bool:
    return op.name.startswith("arith.") and len(op.results) == 1 and isinstance(op.results[0].type, ir.IndexType)


def _is_statement(op) -> bool:
    """What the loop tree prints as a statement: not loops, allocs, lt.dim,
    constants, index arithmetic or the return."""
    name = op.name
    return not (
        name in ("lt.loop", "lt.alloc", "lt.dim", "arith.constant", "func.return") or _is_index_op(op)
    )


def _prints_a_line(op) -> bool:
    """The loop tree gives ``op`` a line of its own."""
    return op.name in ("lt.loop", "lt.alloc") or _is_statement(op)


def _function_name(f) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


class _GraphBuilder:
    def __init__(self, module):
        self.module = module
        self.analysis = _Analysis(module)
        self.functions = lt.functions(self.module.operation)
        self.features = loops_tensor(module, None, len(self.analysis.loops))
        self.tree = nx.DiGraph()
        self.statements: dict = {}  # op -> node id
        self.names: dict = {}  # value -> loop-tree name, all functions
        self.root_ids: list[str] = []
        self.function_of: dict = {}  # statement or loop node id -> function index
        self.scope: dict = {}  # lt.alloc op -> node id of its enclosing loop or function
        for fi, f in enumerate(self.functions):
            self._function(fi, f)

    def root_id(self, fi: int) -> str:
        if len(self.functions) == 1:
            return "root"
        return f"root:{_function_name(self.functions[fi])}"

    def _function(self, fi: int, f) -> None:
        root = self.root_id(fi)
        self.root_ids.append(root)
        self.tree.add_node(root, kind="function", name=_function_name(f))
        self.names.update(value_names(f))
        # the loop tree's lines, in the order its printer visits the ops
        text = loop_tree(self.module, _function_name(f))
        lines = [line.strip() for line in text.split("\n")] if text else []
        ops: list = []
        self._collect(f.regions[0].blocks[0], ops)
        if len(ops) != len(lines):  # a construct the printer renders differently
            lines = [None] * len(ops)
        self.line = dict(zip(ops, lines))
        self._block(f.regions[0].blocks[0], root, 0, fi)

    def _collect(self, block, ops: list) -> None:
        for op in lt.body_ops(block):
            if _prints_a_line(op):
                ops.append(op)
            for region in op.regions:
                for b in region.blocks:
                    self._collect(b, ops)

    def _block(self, block, parent: str, depth: int, fi: int) -> None:
        order = 0
        for op in lt.body_ops(block):
            if lt.is_loop(op):
                i = self.analysis.index[op]
                node = f"L{i}"
                self.tree.add_node(
                    node,
                    kind="loop",
                    index=i,
                    dim=lt.loop_dim(op),
                    size=lt.loop_size(op),
                    tail=lt.loop_tail(op),
                    annotations=lt.annotations(op),
                    features=[float(x) for x in self.features[i]],
                    depth=depth,
                )
                self.tree.add_edge(parent, node, kind="control", order=order)
                order += 1
                self._block(lt.loop_body(op), node, depth + 1, fi)
                continue
            if op.name == "lt.alloc":
                self.scope[op] = parent
                continue
            if not _is_statement(op):
                continue
            node = f"S{len(self.statements)}"
            self.statements[op] = node
            self.tree.add_node(node, kind="statement", op=op.name, text=self.line.get(op) or op.name, depth=depth)
            self.tree.add_edge(parent, node, kind="control", order=order)
            order += 1
            for region in op.regions:
                for b in region.blocks:
                    self._block(b, node, depth + 1, fi)


def ir_tree_networkx(module) -> nx.DiGraph:
    """The loop tree as a DiGraph.

    Nodes: ``"root"`` per function (``kind="function"``, ``name``; with
    several functions in the module their ids are ``"root:<name>"``),
    ``"L<i>"`` per loop (``kind="loop"``, ``index``, ``dim``, ``size``,
    ``tail``, ``annotations`` (dict), ``features`` (its ``loops_tensor`` row
    as a list), ``depth``), ``"S<j>"`` per statement in program order
    (loads, stores, reduces, arithmetic and math ops: ``kind="statement"``,
    ``op`` (the op name), ``text`` (its loop-tree line, e.g. ``"C[m, n] +=
    %2"``), ``depth``).  Index arithmetic, ``lt.dim``, constants and
    ``lt.alloc`` are not nodes.  Edges go from a parent (function root or
    loop) to each child, ``kind="control"``, ``order`` = the child's
    position among its siblings."""
    return _GraphBuilder(module).tree


def ir_graph_networkx(module) -> nx.MultiDiGraph:
    """The nodes and control edges of ``ir_tree_networkx``, plus:

    * ``"buf:<name>"`` per buffer (memref function arguments and ``lt.alloc``
      results; ``"buf:<function>:<name>"`` when the module has several
      functions): ``kind="buffer"``, ``name`` (the loop tree's name: ``A``,
      ``%0``), ``shape`` (tuple), ``element`` (e.g. ``"f32"``), ``nbytes``,
      ``scratch`` (True for ``lt.alloc``), ``scope`` (the node that holds an
      ``lt.alloc``: a loop or the function root; the root for arguments);
    * memory edges: buffer -> statement for loads (``kind="read"``),
      statement -> buffer for stores (``kind="write"``) and reduces
      (``kind="reduce"``, ``reduce_kind``), each with ``stride``, the
      access's stride with respect to its innermost loop, when that is known
      (and the access sits in a loop), and ``weight``, its execution count;
    * value edges statement -> statement (``kind="data"``, ``operand``) from
      the definition of a value to each use, looking through index
      arithmetic (a loaded value used as an index links the load to the
      access)."""
    builder = _GraphBuilder(module)
    graph = nx.MultiDiGraph(builder.tree)
    buffers: dict = {}  # value -> node id
    several = len(builder.functions) > 1

    def add_buffer(value, fi: int | None, scope: str, scratch: bool) -> str:
        name = builder.names.get(value, "?")
        prefix = f"{_function_name(builder.functions[fi])}:" if several and fi is not None else ""
        node = f"buf:{prefix}{name}"
        while node in graph:  # an unnamed or duplicate name
            node += "'"
        attrs = dict(kind="buffer", name=name, scratch=scratch, scope=scope)
        if isinstance(value.type, ir.MemRefType):
            t = ir.MemRefType(value.type)
            attrs.update(shape=tuple(t.shape), element=str(t.element_type), nbytes=lt.nbytes(t.shape, t.element_type) if t.has_static_shape else 0)
        graph.add_node(node, **attrs)
        buffers[value] = node
        return node

    for fi, f in enumerate(builder.functions):
        for arg in f.regions[0].blocks[0].arguments:
            if isinstance(arg.type, ir.MemRefType):
                add_buffer(arg, fi, builder.root_ids[fi], False)
    for op, scope in builder.scope.items():
        add_buffer(op.results[0], None if not several else _function_index(builder, op), scope, True)

    for a in builder.analysis.accesses:
        node = builder.statements.get(a.op)
        if node is None:
            continue
        buffer = buffers.get(a.buffer)
        if buffer is None:  # a memref from some other op (a view, a cast)
            fi = _function_index(builder, a.op)
            buffer = add_buffer(a.buffer, fi, builder.root_ids[fi or 0], False)
        attrs: dict = {"weight": a.weight}
        if a.loops and a.strides:
            attrs["stride"] = a.strides[a.loops[0]]
        if a.kind == "read":
            graph.add_edge(buffer, node, kind="read", **attrs)
        elif a.kind == "write":
            graph.add_edge(node, buffer, kind="write", **attrs)
        else:
            graph.add_edge(node, buffer, kind="reduce", reduce_kind=a.kind.split(":", 1)[1], **attrs)

    for op, node in builder.statements.items():
        for operand_index, value in enumerate(op.operands):
            if isinstance(value.type, ir.MemRefType):
                continue  # a buffer: the memory edges say it
            for source in _defining_statements(value, builder.statements, set()):
                graph.add_edge(source, node, kind="data", operand=operand_index)
    return graph


def _function_index(builder: _GraphBuilder, op) -> int | None:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    for fi, f in enumerate(builder.functions):
        if parent is not None and f == parent:
            return fi
    return None


def _defining_statements(value, statements: dict, seen: set) -> list:
    """The statement nodes whose results ``value`` is, or is computed from
    through non-statement ops (index arithmetic)."""
    if value in seen:
        return []
    seen.add(value)
    owner = value.owner
    if isinstance(owner, ir.Block):
        return []
    op = owner.operation
    if op in statements:
        return [statements[op]]
    if op.name == "lt.alloc":
        return []
    out = []
    for v in op.operands:
        out.extend(_defining_statements(v, statements, seen))
    return out
