"""A linalg-on-tensors module -> an ``lt`` module (one loop nest per op).

torch-mlir's importers (``importers/torch.py``) bring PyTorch and ONNX
models to ``linalg`` on tensors; this module takes them from there.  Named
ops (matmul, batch_matmul, conv_2d_nchw_fchw, pooling, fill, transpose,
broadcast, reductions) are first rewritten as ``linalg.generic`` by the
upstream ``linalg-generalize-named-ops``, then canonicalized (dead results
of a generic, an argmax nobody reads, go); every ``linalg.generic`` then
becomes one ``lt`` loop nest:

* its iteration dims become ``lt.loop``s over named dims, the parallel ones
  outside the reduction ones, in the generic's order; a dim gets the name
  of the tensor axis it reads when a producer named that axis (so an
  element-wise chain iterates one set of dims and ``lt-fuse``/``lt-merge``
  can join its nests), else a fresh one (``i``, ``j``, ... ``i1`` ...);
* indexing maps become index arithmetic on ``lt.dim`` values (``d2 + d5``
  of a convolution window, ``d0 * 2`` of a stride, a constant 0 of a unit
  axis);
* the body's ``arith``/``math`` ops are copied; ``linalg.index`` is an
  ``lt.dim``; ``tensor.extract`` of a tensor (an embedding's gather) is a
  load whose data-dependent indices are clamped into the tensor (torch
  raises on such an index; the ``cf.assert``s that check it are dropped);
* a reduction (a reduction iterator whose output is combined with one
  ``addf``/``mulf``/``maximumf``/``minimumf`` (or the integer forms) of a
  value that does not read it) is an ``lt.reduce`` after a plain store of
  the initial value (the fill's constant, or the init tensor's element),
  the form ``lt-fuse`` takes.

Values live in buffers: a returned value is written straight into an
output argument, every other one into an ``lt.alloc`` over its axes' dim
names (``lt-shrink-buffers`` sizes it).  A fill of a constant is never
stored (its readers get the constant); a generic that only copies an input
(transpose, broadcast), ``tensor.expand_shape``, a ``collapse_shape`` of
unit axes and ``tensor.extract_slice`` are *views*: their readers index the
source.  ``tensor.pad`` and the other ``collapse_shape``s are copy nests.
Weights (``dense_resource`` and non-splat ``dense`` constants) become input
arguments after the model's inputs, bound to their data by the caller.

This is translation at the tensor level rather than after one-shot
bufferization: each SSA tensor is one named-dim buffer, so no memref views
with strided layouts or in-place aliasing reach the ``lt`` passes, which
reason about whole buffers over named dims.

An op outside this set is an ``ImportError`` naming the op and its source
location (torch-mlir keeps the model's ``file:line``), never a silent skip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..builder import Builder, BuilderError, memref
from ..dtypes import NUMPY
from ..errors import LtError, from_mlir_error, with_filename
from ..mlir import ir, passmanager

PREPARE = "builtin.module(func.func(linalg-generalize-named-ops), canonicalize, cse)"

# the combine of a reduction's output: op -> lt.reduce kind
_COMBINE = {
    "arith.addf": "add", "arith.addi": "add", "arith.mulf": "mul", "arith.muli": "mul",
    "arith.maximumf": "max", "arith.maxnumf": "max", "arith.maxsi": "max",
    "arith.minimumf": "min", "arith.minnumf": "min", "arith.minsi": "min",
}
_CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
_CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_CASTS = {"arith.index_cast", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp",
          "arith.uitofp", "arith.fptosi", "arith.fptoui"}
_DROPPED = {"cf.assert"}  # checks torch makes on data (an index in range): dropped, the index is clamped instead
_NAMES = "ijklmnpqrstuvwxyzabcdefgh"
FOLD_LIMIT = 1 << 24  # weight-only ops over at most this many elements are computed at import (NumPy)
# body ops NumPy computes when a weight-only op is folded (others leave the op to a nest)
_NP_BINARY = {
    "arith.addf": np.add, "arith.addi": np.add, "arith.subf": np.subtract, "arith.subi": np.subtract,
    "arith.mulf": np.multiply, "arith.muli": np.multiply, "arith.divf": np.divide,
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum, "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum, "math.powf": np.power,
}
_NP_UNARY = {
    "arith.negf": np.negative, "math.exp": np.exp, "math.log": np.log, "math.sqrt": np.sqrt, "math.absf": np.abs,
    "math.tanh": np.tanh, "math.rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
}
_NP_CMP = {"oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less, "ole": np.less_equal,
           "one": lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b), "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal,
           "sgt": np.greater, "sge": np.greater_equal}
_RESOURCE = re.compile(r"dense_resource<([^>]+)>")


class ImportError(LtError, ValueError):  # noqa: A001 (the project's import error; not Python's)
    """A model or linalg module that lt_mlir cannot import: the op, its location."""


@dataclass
class Argument:
    """One argument of the imported function."""

    name: str  # lt.name: the model's input name, the weight's name, "output0" ...
    shape: tuple
    element: str  # f32, i64, ...
    role: str  # "input", "weight" or "output"
    data: np.ndarray | None = None  # a weight's values

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY[self.element])


@dataclass
class Imported:
    """``import_linalg``'s result: the lt module and what its arguments are."""

    text: str  # the lt module, one nest per op (no schedule applied)
    arguments: list = field(default_factory=list)  # Argument, in the function's order: inputs, weights, outputs
    owners: list = field(default_factory=list)  # per outermost loop, the op (an int) it comes from
    contractions: set = field(default_factory=set)  # the ops that reduce into two or more dims (matmul, conv)
    entry: str = "main"
    layouts: set = field(default_factory=set)  # owners of the copies that lay a contraction's B out (never fused)

    @property
    def inputs(self) -> list:
        return [a for a in self.arguments if a.role == "input"]

    @property
    def weights(self) -> list:
        return [a for a in self.arguments if a.role == "weight"]

    @property
    def outputs(self) -> list:
        return [a for a in self.arguments if a.role == "output"]


def where(op) -> str:
    """``file:line:col`` or the location's text, for an error about ``op``."""
    text = str(op.location)
    m = re.search(r'"([^"]+)":(\d+):(\d+)', text)
    if m:
        return f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
    return "" if text in ("loc(unknown)", "") else text[4:-1] if text.startswith("loc(") else text


_EMPTY = "a tensor with a dimension of size 0 (no elements) cannot be imported: every lt loop runs at least once"


def _error(op, message: str) -> ImportError:
    at = where(op)
    return ImportError(f"{at}: error: {message}" if at else f"error: {message}")


def _tensor_type(value) -> tuple[tuple, str] | None:
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        return None
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        return None
    return tuple(rt.shape), str(rt.element_type)


def parse_resources(text: str) -> dict:
    """The blobs of a module's ``{-# dialect_resources: {builtin: ...} #-}``
    section as raw bytes, by name (a file written by ``mlir-opt`` or
    torch-mlir keeps a model's weights there)."""
    out = {}
    m = re.search(r"\{-#(.*)#-\}", text, re.S)
    if not m:
        return out
    for name, blob in re.findall(r'([A-Za-z_][\w.$-]*)\s*:\s*"0x([0-9A-Fa-f]*)"', m.group(1)):
        raw = bytes.fromhex(blob)
        out[name] = raw[4:]  # the first 4 bytes are the blob's alignment
    return out


class _IntIndex:
    """Index arithmetic on Python ints (a view's index function evaluated at a point)."""

    @staticmethod
    def const(v: int) -> int:
        return v

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def mul(a, b):
        return a * b

    @staticmethod
    def floordiv(a, b):
        return a // b

    @staticmethod
    def mod(a, b):
        return a % b


class _BuilderIndex:
    """Index arithmetic as ``arith`` ops on ``index`` values (the nests' code)."""

    def __init__(self, importer):
        self.importer = importer

    def const(self, v: int):
        return self.importer.index_constant(v)

    def add(self, a, b):
        return self.importer.b.binary("addi", a, b)

    def mul(self, a, b):
        return self.importer.b.binary("muli", a, b)

    def floordiv(self, a, b):
        return self.importer.b.binary("floordivsi", a, b)

    def mod(self, a, b):
        return self.importer.b.binary("remsi", a, b)


class _Buf:
    """Where a tensor value lives: a buffer (``value``), a constant
    (``splat``), a weight (``data``), or a view of another ``_Buf``
    (``source`` and ``index``, a function of this value's indices giving
    the source's)."""

    def __init__(self, shape, element, dims, value=None, splat=None, source=None, index=None, data=None, name=None):
        self.shape, self.element, self.dims = tuple(shape), element, list(dims)
        self.value, self.splat, self.source, self.index = value, splat, source, index
        self.data, self.name = data, name  # a weight's values (an argument once a nest reads it) and name
        self.kept = None  # the axes a scratch buffer stores (its unit axes are not), None: all


def _np_affine(expr, grids):
    """Affine ``expr`` over index arrays ``grids`` (one per dim, broadcastable)."""
    if isinstance(expr, ir.AffineDimExpr):
        return grids[expr.position]
    if isinstance(expr, ir.AffineConstantExpr):
        return np.int64(expr.value)
    if isinstance(expr, ir.AffineAddExpr):
        return _np_affine(expr.lhs, grids) + _np_affine(expr.rhs, grids)
    if isinstance(expr, ir.AffineMulExpr):
        return _np_affine(expr.lhs, grids) * _np_affine(expr.rhs, grids)
    if isinstance(expr, ir.AffineFloorDivExpr):
        return _np_affine(expr.lhs, grids) // _np_affine(expr.rhs, grids)
    if isinstance(expr, ir.AffineModExpr):
        return _np_affine(expr.lhs, grids) % _np_affine(expr.rhs, grids)
    raise KeyError(str(expr))


def _np_gather(data: np.ndarray, amap, grids, sizes) -> np.ndarray:
    """``data`` read through ``amap`` at every point of the iteration space ``sizes``."""
    idx = np.broadcast_arrays(*[np.asarray(_np_affine(e, grids)) for e in amap.results]) if amap.results else []
    value = data[tuple(idx)] if idx else data[()]
    return np.broadcast_to(value, sizes)


def _np_scatter(value: np.ndarray, amap, grids, sizes, shape, dtype) -> np.ndarray:
    out = np.empty(shape, dtype)
    idx = np.broadcast_arrays(*[np.asarray(_np_affine(e, grids)) for e in amap.results], np.empty(sizes, np.int8))[:-1]
    out[tuple(idx)] = np.broadcast_to(value, sizes)
    return out


class _Importer:
    def __init__(self, func_op, resources: dict, names: dict | None, text_resources: dict):
        self.func = func_op
        self.resources = resources  # resource name -> ndarray (from the front door), else from the text
        self.text_resources = text_resources
        self.names = names or {}  # resource name -> the weight's name in the model
        self.b = Builder(float_format="hex")
        self.bufs: dict = {}  # ir.Value -> _Buf
        self.scalars: dict = {}  # ir.Value -> (python value, type) of a scalar constant
        self.dim_sizes: dict[str, int] = {}
        self.fresh_count = 0
        self.arguments: list[Argument] = []
        self.owners: list = []
        self.contractions: set = set()
        self.layouts: set = set()
        self.index_constants: dict = {}
        self.ix = _BuilderIndex(self)
        self.top = None

    # ---------------------------------------------------------------- names
    def fresh_dim(self, size: int) -> str:
        while True:
            k = self.fresh_count
            self.fresh_count += 1
            name = _NAMES[k % len(_NAMES)] + (str(k // len(_NAMES)) if k >= len(_NAMES) else "")
            if name not in self.dim_sizes:
                self.dim_sizes[name] = size
                return name

    # ---------------------------------------------------------------- driver
    def run(self) -> Imported:
        block = self.func.regions[0].blocks[0]
        ops = [o.operation for o in block.operations]
        ret = ops[-1]
        if ret.name != "func.return":
            raise _error(ret, "the function does not end in func.return")
        returned = list(ret.operands)
        for k, arg in enumerate(block.arguments):
            tt = _tensor_type(arg)
            if tt is None:
                raise _error(self.func, f"input {k} has type {arg.type}: only tensors of static shape can be imported")
            if tt[1] not in NUMPY:
                raise _error(self.func, f"input {k} has element type {tt[1]}: the arguments can be {', '.join(NUMPY)}")
            if 0 in tt[0]:
                raise _error(self.func, f"input {k} has type {arg.type}: {_EMPTY}")
        self.returned = returned
        self.weights: list = []  # (ir.Value, Argument) in order of appearance
        # the weights first (their data), then the signature: inputs, the weights nests read, outputs
        for op in ops:
            if op.name == "arith.constant" and _tensor_type(op.results[0]) is not None:
                self.constant_tensor(op)
        f = self.b.func("main", [])
        self.top = f
        for k, arg in enumerate(block.arguments):
            shape, element = _tensor_type(arg)
            name = self.input_name(k)
            v = f.add_argument(f"x{k}", memref(shape, element), name)
            self.bufs[arg] = _Buf(shape, element, [None] * len(shape), value=v)
            self.arguments.append(Argument(name, shape, element, "input"))
        for val, a in self.weights:
            self.bufs[val] = _Buf(a.shape, a.element, [None] * len(a.shape), data=a.data, name=a.name)
        self.n_inputs = len(self.arguments)
        self.used_weights: list[Argument] = []  # an argument each, in the order nests first read them
        self.outputs: dict = {}  # ir.Value -> its output argument (the first return of it)
        for k, val in enumerate(returned):
            tt = _tensor_type(val)
            if tt is None or tt[1] not in NUMPY:
                raise _error(ret, f"result {k} has type {val.type}: only tensors of static shape and element type "
                                  f"{', '.join(NUMPY)} can be returned")
            if 0 in tt[0]:
                raise _error(ret, f"result {k} has type {val.type}: {_EMPTY}")
            v = f.add_argument(f"y{k}", memref(*tt), f"output{k}")
            self.outputs.setdefault(val, []).append(v)
        with f:
            for n, op in enumerate(ops[:-1]):
                self.op_id = n
                self.translate(op)
            for k, val in enumerate(returned):
                self.write_result(val, self.outputs[val])
        self.arguments += self.used_weights
        for k, val in enumerate(returned):
            shape, element = _tensor_type(val)
            self.arguments.append(Argument(f"output{k}", shape, element, "output"))
        try:
            text = self.b.text()
        except BuilderError as e:
            raise ImportError(f"error: the imported module is malformed: {e}") from None
        return Imported(text, self.arguments, self.owners, self.contractions, layouts=self.layouts)

    def materialize(self, buf: _Buf) -> None:
        """Make weight ``buf`` an argument (after the inputs and the weights read before it)."""
        k = len(self.used_weights)
        taken = {a.name for a in self.arguments} | {a.name for a in self.used_weights}
        name, n = buf.name, 2
        while name in taken:  # two arrays made of one weight (its halves, or it and its transpose): "w", "w#2"
            name, n = f"{buf.name}#{n}", n + 1
        buf.value = self.top.add_argument(f"w{k}", memref(buf.shape, buf.element), name, position=self.n_inputs + k)
        self.used_weights.append(Argument(name, buf.shape, buf.element, "weight", buf.data))

    def input_name(self, k: int) -> str:
        return self.names.get(("input", k), f"input{k}")

    # ---------------------------------------------------------------- ops
    def translate(self, op) -> None:
        name = op.name
        if name == "arith.constant":
            if _tensor_type(op.results[0]) is None:
                self.scalar_constant(op)
            return  # tensors: arguments or splats, made in pass 1
        if name == "tensor.empty":
            tt = _tensor_type(op.results[0])
            if tt is None:
                raise _error(op, f"tensor.empty of type {op.results[0].type}: only static shapes can be imported")
            self.bufs[op.results[0]] = _Buf(tt[0], tt[1], [None] * len(tt[0]))  # no value: reading it is an error
            return
        for v in [*op.operands, *op.results]:
            tt = _tensor_type(v)
            if tt is not None and 0 in tt[0]:
                raise _error(op, f"{'operand' if v in list(op.operands) else 'result'} {v.get_name()} has type {v.type}: {_EMPTY}")
        handler = {
            "linalg.generic": self.generic,
            "tensor.expand_shape": self.expand_shape,
            "tensor.collapse_shape": self.collapse_shape,
            "tensor.extract_slice": self.extract_slice,
            "tensor.pad": self.pad,
            "tensor.cast": self.cast,
            "tensor.concat": self.concat,
        }.get(name)
        if handler is None:
            raise _error(op, f"cannot import '{name}': lt_mlir takes linalg.generic and the named linalg ops, "
                             "tensor.empty/expand_shape/collapse_shape/extract_slice/pad/concat/cast and arith constants")
        handler(op)

    def scalar_constant(self, op) -> None:
        attr = op.attributes["value"]
        t = str(op.results[0].type)
        if isinstance(attr, ir.FloatAttr):
            self.scalars[op.results[0]] = (ir.FloatAttr(attr).value, t)
        elif isinstance(attr, ir.BoolAttr):
            self.scalars[op.results[0]] = (ir.BoolAttr(attr).value, t)
        elif isinstance(attr, ir.IntegerAttr):
            self.scalars[op.results[0]] = (ir.IntegerAttr(attr).value, t)
        else:
            raise _error(op, f"cannot import the constant {attr}")

    def constant_tensor(self, op) -> None:
        val = op.results[0]
        shape, element = _tensor_type(val)
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
            splat = ir.DenseElementsAttr(attr).get_splat_value()
            scalar = splat.value
            self.bufs[val] = _Buf(shape, element, [None] * len(shape), splat=(scalar, element))
            return
        if element not in NUMPY:
            raise _error(op, f"a constant tensor of element type {element} cannot be an argument (types: {', '.join(NUMPY)})")
        dtype = np.dtype(NUMPY[element])
        m = _RESOURCE.search(str(attr))
        if m:
            key = m.group(1)
            data = self.resources.get(key)
            if data is None:
                raw = self.text_resources.get(key)
                if raw is None:
                    raise _error(op, f"the weight '{key}' has no data (its dialect_resources entry is missing)")
                data = np.frombuffer(raw, dtype=dtype).copy()
            name = self.names.get(key, key)
        elif isinstance(attr, ir.DenseElementsAttr):
            data = np.array(ir.DenseElementsAttr(attr))
            name = self.names.get(("bytes", shape, np.ascontiguousarray(data).tobytes()), f"const{len(self.weights)}")
        else:
            raise _error(op, f"cannot import the constant {str(attr)[:60]}")
        data = np.ascontiguousarray(np.asarray(data, dtype=dtype).reshape(shape))
        self.weights.append((val, Argument(name, shape, element, "weight", data)))

    def cast(self, op) -> None:
        src = self.buf(op, op.operands[0])
        tt = _tensor_type(op.results[0])
        if tt is None or tt[0] != src.shape:
            raise _error(op, f"tensor.cast to {op.results[0].type}: only casts between static shapes of one size")
        self.bufs[op.results[0]] = src

    def buf(self, op, value) -> _Buf:
        buf = self.bufs.get(value)
        if buf is None:
            raise _error(op, f"operand {value.get_name()} comes from an op lt_mlir did not import")
        return buf

    # ---------------------------------------------------------------- reading
    def index_constant(self, v: int):
        c = self.index_constants.get(v)
        if c is None:
            with self.b.at(self.top.body, 0):
                c = self.index_constants[v] = self.b.constant(v, "index")
        return c

    def scalar(self, value, t: str):
        return self.b.constant(value, t)

    def read(self, op, buf: _Buf, idx: list):
        """The element of ``buf`` at ``idx`` (builder index values)."""
        if buf.splat is not None:
            return self.scalar(*buf.splat)
        if buf.source is not None:
            return self.read(op, buf.source, buf.index(idx, self.ix))
        if buf.value is None and buf.data is not None:
            self.materialize(buf)
        if buf.value is None:
            raise _error(op, "reads a tensor.empty (its values are undefined)")
        return self.b.load(buf.value, self.phys(buf, idx))

    @staticmethod
    def phys(buf: _Buf, idx: list) -> list:
        """``buf``'s indices ``idx`` as its memref takes them (a scratch buffer has no unit axes)."""
        return idx if buf.kept is None else [idx[a] for a in buf.kept]

    def affine(self, expr, dims: list, ix=None):
        """Index value of affine ``expr`` over the op's dim values (``ix``:
        the index arithmetic, by default the nests' ``arith`` ops)."""
        ix = ix or self.ix
        if isinstance(expr, ir.AffineDimExpr):
            return dims[expr.position]
        if isinstance(expr, ir.AffineConstantExpr):
            return ix.const(expr.value)
        binary = {ir.AffineAddExpr: ix.add, ir.AffineMulExpr: ix.mul, ir.AffineFloorDivExpr: ix.floordiv,
                  ir.AffineModExpr: ix.mod}
        for kind, fn in binary.items():
            if isinstance(expr, kind):
                return fn(self.affine(expr.lhs, dims, ix), self.affine(expr.rhs, dims, ix))
        raise ImportError(f"error: cannot import the index expression {expr}")

    def stride(self, buf: _Buf, amap, d: int, n_dims: int) -> int | None:
        """How far apart in memory ``buf``'s elements are, read through
        ``amap`` (and ``buf``'s views), for one step of dim ``d``; None
        for a constant (no memory)."""
        points = [[0] * n_dims, [1 if k == d else 0 for k in range(n_dims)]]
        offsets = []
        for p in points:
            idx, b = [self.affine(e, p, _IntIndex) for e in amap.results], buf
            while b.source is not None:
                idx, b = b.index(idx, _IntIndex), b.source
            if b.splat is not None:
                return None
            flat = 0
            for i, n in zip(idx, b.shape):
                flat = flat * n + i
            offsets.append(flat)
        return offsets[1] - offsets[0]

    # ---------------------------------------------------------------- generic
    def generic(self, op) -> None:
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        iters = ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        n_dims = len(iters)
        operands = list(op.operands)
        n_out = len(op.results)
        ins, outs = operands[: len(operands) - n_out], operands[len(operands) - n_out:]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        in_args, out_args = args[: len(ins)], args[len(ins):]
        body_ops = [o.operation for o in body.operations]
        yields = list(body_ops[-1].operands)
        live = [bool(list(r.uses)) for r in op.results]

        # sizes and names of the op's dims
        sizes: list = [None] * n_dims
        proposals: list = [[] for _ in range(n_dims)]
        for v, m in zip(operands, maps):
            tt = _tensor_type(v)
            if tt is None:
                continue
            buf = self.bufs.get(v)
            for axis, e in enumerate(m.results):
                if isinstance(e, ir.AffineDimExpr):
                    sizes[e.position] = sizes[e.position] or tt[0][axis]
                    if buf is not None and buf.dims[axis] is not None:
                        proposals[e.position].append(buf.dims[axis])
        if any(s is None for s in sizes):
            raise _error(op, "a loop dim of this linalg.generic is not the index of any operand axis: its extent is unknown")
        # weight-only work (a transposed weight, batch norm's scale) is done now, in NumPy
        if "reduction" not in iters and self.fold(op, ins, in_args, maps, n_out, body_ops, yields, sizes):
            return
        if self.fill(op, ins, in_args, n_out, yields, iters):
            return
        names: list = []
        for d in range(n_dims):
            name = next((p for p in proposals[d] if p not in names and self.dim_sizes.get(p) == sizes[d]), None)
            names.append(name or self.fresh_dim(sizes[d]))
        for v, m in zip(operands, maps):  # operands read along a dim take its name (an input read by several ops)
            buf = self.bufs.get(v)
            if buf is None:
                continue
            for axis, e in enumerate(m.results):
                if isinstance(e, ir.AffineDimExpr) and buf.dims[axis] is None and names[e.position] not in buf.dims:
                    buf.dims[axis] = names[e.position]

        # what each live result is
        reductions = any(t == "reduction" for t in iters)
        plan = []  # per live result: (kind or None, the value combined or yielded)
        for k in range(n_out):
            if not live[k]:
                plan.append(None)
                continue
            y = yields[k]
            combine = None
            if reductions:
                combine = self.combine_of(op, y, out_args[k], [yields[j] for j in range(n_out) if live[j]])
            plan.append(combine or (None, y))

        # pure copies (transpose, broadcast): views of their input
        if not reductions and self.view_of(op, ins, in_args, maps, n_out, yields, live, names, sizes):
            return

        for k in range(n_out):  # an output element no iteration writes would keep its init value: not imported
            out_shape = _tensor_type(op.results[k])[0]
            if any(not isinstance(e, ir.AffineDimExpr) and out_shape[a] != 1 for a, e in enumerate(maps[len(ins) + k].results)):
                raise _error(op, "cannot import a linalg.generic whose output map leaves elements of its output unwritten")
        # the result buffers
        results = []
        for k in range(n_out):
            if not live[k]:
                results.append(None)
                continue
            out_map = maps[len(ins) + k]
            shape, element = _tensor_type(op.results[k])
            dims = []
            for axis, e in enumerate(out_map.results):
                if isinstance(e, ir.AffineDimExpr):
                    dims.append(names[e.position])
                else:
                    dims.append(self.fresh_dim(shape[axis]))
            results.append(self.result_buffer(op.results[k], shape, element, dims))

        parallel = [d for d in range(n_dims) if iters[d] == "parallel"]
        reduction = [d for d in range(n_dims) if iters[d] == "reduction"]
        read = [v for v, a in zip(ins, in_args) if list(a.uses) and _tensor_type(v) is not None]
        if reduction and len(read) >= 2 and sum(1 for d in parallel if sizes[d] > 1) >= 2:
            self.contractions.add(self.op_id)  # a matmul, a convolution: two tensors multiplied and summed
        if self.op_id in self.contractions:
            self.lay_out_b(op, ins, in_args, maps, live, parallel, reduction, names, sizes)
        b = self.b
        dim_values: list = [None] * n_dims
        if any(n > 1 for n in sizes):
            self.owners.append(self.op_id)

        def emit(ds, inner):
            if not ds:
                inner()
                return
            d = ds[0]
            if sizes[d] == 1:  # no loop over a unit dim: its index is 0
                dim_values[d] = self.index_constant(0)
                emit(ds[1:], inner)
                return
            with b.loop(names[d], sizes[d]):
                dim_values[d] = b.dim(names[d])
                emit(ds[1:], inner)

        def computation(targets):
            env = {}
            for v, a, m in zip(ins, in_args, maps):
                if not list(a.uses):
                    continue
                if v in self.scalars:
                    env[a] = self.scalar(*self.scalars[v])
                elif _tensor_type(v) is None:
                    raise _error(op, f"a scalar operand {v.get_name()} that is not a constant")
                else:
                    env[a] = self.read(op, self.buf(op, v), [self.affine(e, dim_values) for e in m.results])
            return self.body(op, body_ops, env, targets, dim_values, names, out_args, outs, maps[len(ins):])

        def out_index(k):
            return [self.affine(e, dim_values) for e in maps[len(ins) + k].results]

        def init():
            for k, p in enumerate(plan):
                if p is None:
                    continue
                src = self.buf(op, outs[k])
                if src.value is None and src.splat is None and src.source is None and src.data is None:
                    raise _error(op, "a reduction into a tensor.empty (it has no initial value)")
                b.store(self.read(op, src, out_index(k)), results[k].value, self.phys(results[k], out_index(k)))

        def reduce_inner():
            values = computation([p[1] for p in plan if p is not None])
            it = iter(values)
            for k, p in enumerate(plan):
                if p is not None:
                    b.reduce(p[0], next(it), results[k].value, self.phys(results[k], out_index(k)))

        def elementwise():
            values = computation([p[1] for p in plan if p is not None])
            it = iter(values)
            for k, p in enumerate(plan):
                if p is not None:
                    b.store(next(it), results[k].value, self.phys(results[k], out_index(k)))

        last = self.last_output_dim(maps[len(ins):], live, parallel, sizes)
        if last is not None and reduction:
            # loop_tool's order only where the output's last dim is contiguous for as many accesses
            # as any reduction dim (a matmul with its weight transposed at import; not q @ k^T, whose
            # reduction dim is contiguous in both operands: a dot product a element there)
            accessed = [(self.bufs[v], m) for v, a, m in zip(ins, in_args, maps)
                        if list(a.uses) and _tensor_type(v) is not None and v in self.bufs]
            accessed += [(r, m) for r, m in zip(results, maps[len(ins):]) if r is not None]

            def contiguous(d):
                return sum(1 for buf, m in accessed if self.stride(buf, m, d, n_dims) in (1, -1))

            if contiguous(last) < max(contiguous(d) for d in reduction):
                last = None
        if self.op_id in self.contractions and last is not None:
            # loop_tool's order for a contraction: the output's last dim innermost in both the
            # initialisation and the reduction (contiguous stores, lanes that are independent outputs)
            outer = [d for d in parallel if d != last]

            def around():
                emit([last], init)
                emit(reduction + [last], reduce_inner)

            emit(outer, around)
        elif reduction:
            emit(parallel, lambda: (init(), emit(reduction, reduce_inner)))
        else:
            emit(parallel, elementwise)

    def lay_out_b(self, op, ins, in_args, maps, live, parallel, reduction, names, sizes) -> None:
        """A contraction's B (the operand read along the output's last dim j)
        that is an activation (an input, or a buffer computed here) not contiguous in j -- ``q @ k^T``,
        k read through a transpose -- is copied first into a scratch buffer
        with j as its last axis (a copy nest of its own, owner ``(op, "layout")``),
        and this op (and any later reader) reads it from there: each element is
        then read once across the copy and contiguously by the contraction's
        vectors (``recipes.register_tile``), instead of one dot product an
        output element.  Not for a weight (folded or packed: ``lt-cache``) nor
        when the reduction is not contiguous in B either."""
        n_dims = len(sizes)
        j = self.last_output_dim(maps[len(ins):], live, parallel, sizes)
        if j is None:
            return
        for v, a, m in zip(ins, in_args, maps):
            buf = self.bufs.get(v)
            if buf is None or not list(a.uses) or v in self.scalars or _tensor_type(v) is None:
                continue
            results = list(m.results)
            if not all(isinstance(e, ir.AffineDimExpr) for e in results):
                continue
            axes = [e.position for e in results]
            if j not in axes or len(set(axes)) != len(axes) or any(d not in axes for d in reduction):
                continue
            root = buf
            while root.source is not None:
                root = root.source
            if root.value is None or root.data is not None or root.splat is not None:
                continue  # a weight (an argument: lt-cache packs it), a constant
            if self.stride(buf, m, j, n_dims) in (1, -1) or not any(self.stride(buf, m, d, n_dims) in (1, -1) for d in reduction):
                continue
            order = [d for d in axes if d != j] + [j]
            shape = [sizes[d] for d in order]
            element = buf.element
            kept = [k for k in range(len(shape)) if shape[k] != 1]
            with self.b.at(self.top.body, len(self.index_constants)):
                value = self.b.alloc([names[order[k]] for k in kept], memref([shape[k] for k in kept], element))
            copy = _Buf(shape, element, [names[d] for d in order], value=value)
            copy.kept = kept
            where_in_v = [order.index(d) for d in axes]  # v's axis -> the copy's axis

            def inner(dv, buf=buf, axes=axes, order=order, copy=copy):
                idx = [dv[order.index(d)] for d in axes]
                self.b.store(self.read(op, buf, idx), copy.value, self.phys(copy, dv))

            outer_id, self.op_id = self.op_id, (self.op_id, "layout")
            self.layouts.add(self.op_id)
            self.nest([names[d] for d in order], shape, inner)
            self.op_id = outer_id

            def index(idx, ix, where_in_v=where_in_v, rank=len(order)):
                out = [None] * rank
                for axis, k in enumerate(where_in_v):
                    out[k] = idx[axis]
                return out

            self.bufs[v] = _Buf(buf.shape, element, list(buf.dims), source=copy, index=index)

    @staticmethod
    def last_output_dim(out_maps, live, parallel, sizes):
        """The dim of the last axis (of size > 1) of the first live output, or None."""
        for m, alive in zip(out_maps, live):
            if alive:
                for e in reversed(list(m.results)):
                    if isinstance(e, ir.AffineDimExpr) and sizes[e.position] > 1:
                        return e.position if e.position in parallel else None
                return None
        return None

    def combine_of(self, op, y, out_arg, live_yields):
        """(lt.reduce kind, the value combined) when yielded ``y`` is one
        combine of the output ``out_arg`` with a value that does not read it,
        and no other live result reads ``out_arg`` or ``y`` (an argmax that
        nobody reads may)."""
        owner = y.owner if isinstance(y.owner, ir.Block) else y.owner.operation
        message = ("cannot import this reduction: its output must be combined once, by an add, mul, max or min "
                   "of a value computed from the inputs")
        if isinstance(owner, ir.Block) or owner.name not in _COMBINE:
            raise _error(op, message)
        a, c = list(owner.operands)
        other = c if a == out_arg else a if c == out_arg else None
        if other is None or self.depends_on(other, out_arg):
            raise _error(op, message)
        if any(z != y and (self.depends_on(z, out_arg) or self.depends_on(z, y)) for z in live_yields):
            raise _error(op, message)
        return _COMBINE[owner.name], other

    def depends_on(self, v, target) -> bool:
        if v == target:
            return True
        owner = v.owner
        if isinstance(owner, ir.Block):
            return False
        return any(self.depends_on(o, target) for o in owner.operation.operands)

    def body(self, op, body_ops, env, targets, dim_values, names, out_args, outs, out_maps):
        """Emit the body ops ``targets`` need (in order); returns their values."""
        inside = {r: bop for bop in body_ops for r in bop.results}
        needed: set = set()
        todo = list(targets)
        while todo:
            v = todo.pop()
            if v in needed:
                continue
            needed.add(v)
            if v in inside:
                todo.extend(inside[v].operands)
        for k, a in enumerate(out_args):  # a parallel generic that reads its output's initial values
            if a in needed and a not in env:
                idx = [self.affine(e, dim_values) for e in out_maps[k].results]
                env[a] = self.read(op, self.buf(op, outs[k]), idx)
        for bop in body_ops[:-1]:
            if any(r in needed for r in bop.results):
                env[bop.results[0]] = self.body_op(op, bop, env, dim_values, names)
        return [self.value(op, env, t) for t in targets]

    def value(self, op, env, v):
        if v in env:
            return env[v]
        if v in self.scalars:
            return self.scalar(*self.scalars[v])
        raise _error(op, f"uses {v.get_name()}, which is neither a constant nor defined in the body")

    def body_op(self, op, bop, env, dim_values, names):
        b = self.b
        name = bop.name
        operands = [self.value(op, env, o) for o in bop.operands] if name not in ("tensor.extract",) else None
        try:
            if name == "arith.constant":
                attr = bop.attributes["value"]
                t = str(bop.results[0].type)
                if isinstance(attr, ir.FloatAttr):
                    return b.constant(ir.FloatAttr(attr).value, t)
                if isinstance(attr, ir.BoolAttr):
                    return b.constant(ir.BoolAttr(attr).value, t)
                return b.constant(ir.IntegerAttr(attr).value, t)
            if name == "linalg.index":
                return dim_values[ir.IntegerAttr(bop.attributes["dim"]).value]
            if name in ("arith.cmpf", "arith.cmpi"):
                table = _CMPF if name == "arith.cmpf" else _CMPI
                return b.cmp(table[ir.IntegerAttr(bop.attributes["predicate"]).value], *operands)
            if name == "arith.select":
                return b.select(*operands)
            if name in _CASTS:
                return b.cast(name, operands[0], str(bop.results[0].type))
            if name == "tensor.extract":
                return self.extract(op, bop, env)
            if name == "math.fpowi":
                return self.power(bop, operands[0], bop.operands[1], env)
            if len(operands) == 2:
                return b.binary(name, *operands)
            if len(operands) == 1:
                return b.unary(name, *operands)
        except BuilderError as e:
            raise _error(bop, f"cannot import '{name}' in a linalg.generic: {e}") from None
        raise _error(bop, f"cannot import '{name}' in a linalg.generic")

    def power(self, bop, x, exponent, env):
        """``math.fpowi x, n`` for a constant ``n``: multiplications (square and multiply)."""
        n = self.constant_int(exponent)
        if n is None or abs(n) > 64:
            raise _error(bop, "cannot import 'math.fpowi' with an exponent that is not a constant in [-64, 64]")
        b = self.b
        result, base, k = None, x, abs(n)
        while k:
            if k & 1:
                result = base if result is None else b.binary("mulf", result, base)
            k >>= 1
            if k:
                base = b.binary("mulf", base, base)
        if result is None:
            result = b.constant(1.0, x.type)
        return b.binary("divf", b.constant(1.0, x.type), result) if n < 0 else result

    def constant_int(self, v):
        if v in self.scalars:
            return int(self.scalars[v][0])
        owner = v.owner
        if not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant":
            attr = owner.operation.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                return attr.value
        return None

    def extract(self, op, bop, env):
        """``tensor.extract t[i, ...]`` in a body: a load at indices clamped into ``t``."""
        b = self.b
        t, *idx = list(bop.operands)
        buf = self.buf(bop, t)
        values = []
        for axis, i in enumerate(idx):
            v = self.value(bop, env, i)
            hi = self.index_constant(buf.shape[axis] - 1)
            v = b.binary("minsi", b.binary("maxsi", v, self.index_constant(0)), hi)
            values.append(v)
        return self.read(bop, buf, values)

    def fold(self, op, ins, in_args, maps, n_out, body_ops, yields, sizes) -> bool:
        """A parallel generic that reads only weights and constants, computed
        now with NumPy: its results become weights.  False (nothing done)
        when an input is not one, a result is returned, the op is too large
        or its body holds an op NumPy's table lacks."""
        if any(r in self.outputs for r in op.results) or int(np.prod(sizes, dtype=np.int64)) > FOLD_LIMIT:
            return False
        sources = []
        for v in ins:
            if v in self.scalars:
                continue
            buf = self.bufs.get(v)
            if buf is None or (buf.data is None and buf.splat is None):
                return False
            if buf.data is not None:
                sources.append(buf)
        if not sources:
            return False
        out_elements = sum(int(np.prod(_tensor_type(r)[0], dtype=np.int64)) for r in op.results)
        if out_elements > sum(b.data.size for b in sources):
            return False  # a broadcast (a conv's bias over its output): stays a view, not a larger weight
        grids = np.ix_(*[np.arange(n) for n in sizes]) if sizes else ()
        env = {}
        try:
            for v, a, m in zip(ins, in_args, maps):
                if v in self.scalars:
                    value, t = self.scalars[v]
                    env[a] = np.asarray(value, NUMPY.get(t, np.float64) if t != "i1" else np.bool_)
                elif self.bufs[v].data is None:  # a splat constant: the same value everywhere
                    env[a] = np.asarray(self.bufs[v].splat[0], NUMPY[self.bufs[v].element])
                else:
                    env[a] = _np_gather(self.bufs[v].data, m, grids, sizes)
            for bop in body_ops[:-1]:
                if bop.name not in _DROPPED:  # (a cf.assert: no result)
                    env[bop.results[0]] = self.np_op(bop, env)
            with np.errstate(all="ignore"):
                for k in range(n_out):
                    shape, element = _tensor_type(op.results[k])
                    y = yields[k]
                    value = env[y] if y in env else np.asarray(self.scalars[y][0])
                    data = _np_scatter(np.asarray(value).astype(NUMPY[element]), maps[len(ins) + k], grids, sizes, shape, NUMPY[element])
                    suffix = ".T" if self.is_transpose(maps, len(ins)) else ".folded"
                    base = sources[0].name
                    name = base[: -len(".T")] if suffix == ".T" and base.endswith(".T") else base + ("" if base.endswith(suffix) else suffix)
                    self.bufs[op.results[k]] = _Buf(shape, element, [None] * len(shape), data=data, name=name)
        except (KeyError, TypeError, ValueError):
            return False
        return True

    @staticmethod
    def is_transpose(maps, n_in) -> bool:
        """One input read through a permutation of the output's dims, in another order."""
        if n_in != 1 or not all(isinstance(e, ir.AffineDimExpr) for m in maps for e in m.results):
            return False
        a, b = [e.position for e in maps[0].results], [e.position for e in maps[1].results]
        return sorted(a) == sorted(b) and len(set(a)) == len(a) and a != b

    def np_op(self, bop, env):
        """One body op over NumPy arrays (``KeyError``: not in the table)."""
        name = bop.name

        def arg(v):
            if v in env:
                return env[v]
            if v in self.scalars:
                value, t = self.scalars[v]
                return np.asarray(value, NUMPY[t]) if t in NUMPY else np.asarray(value)
            raise KeyError(v.get_name())

        with np.errstate(all="ignore"):
            if name == "arith.constant":
                attr = bop.attributes["value"]
                t = str(bop.results[0].type)
                if isinstance(attr, ir.FloatAttr):
                    return np.asarray(attr.value, NUMPY[t])
                return np.asarray(ir.IntegerAttr(attr).value, NUMPY.get(t, np.int64))
            operands = [arg(o) for o in bop.operands]
            if name in _NP_BINARY:
                return _NP_BINARY[name](*operands)
            if name in _NP_UNARY:
                return _NP_UNARY[name](operands[0])
            if name in ("arith.cmpf", "arith.cmpi"):
                table = _CMPF if name == "arith.cmpf" else _CMPI
                pred = table[ir.IntegerAttr(bop.attributes["predicate"]).value]
                if pred.startswith("u") and name == "arith.cmpf":  # unordered: true with a NaN
                    base = _NP_CMP["o" + pred[1:]](*operands)
                    return base | np.isnan(operands[0]) | np.isnan(operands[1])
                return _NP_CMP[pred](*operands)
            if name == "arith.select":
                return np.where(*operands)
            if name in ("arith.truncf", "arith.extf", "arith.sitofp", "arith.fptosi", "arith.extsi", "arith.trunci"):
                x = operands[0]
                if x.dtype == np.bool_ and name in ("arith.sitofp", "arith.extsi"):
                    x = -x.astype(np.int64)  # a signed i1 true is -1
                return x.astype(NUMPY[str(bop.results[0].type)])
        raise KeyError(name)

    def fill(self, op, ins, in_args, n_out, yields, iters) -> bool:
        """A generic that yields a scalar constant everywhere (linalg.fill,
        generalized): its readers get the constant; nothing is stored."""
        if n_out != 1 or "reduction" in iters or op.results[0] in self.outputs or yields[0] not in in_args:
            return False
        value = self.scalars.get(ins[in_args.index(yields[0])])
        if value is None:
            return False
        shape, element = _tensor_type(op.results[0])
        self.bufs[op.results[0]] = _Buf(shape, element, [None] * len(shape), splat=value)
        return True

    def view_of(self, op, ins, in_args, maps, n_out, yields, live, names, sizes) -> bool:
        """A parallel generic that yields one input's element unchanged
        (transpose, broadcast, a copy): its result becomes a view of that
        input.  False when it is not one."""
        if n_out != 1 or not live[0] or op.results[0] in self.outputs:
            return False
        y = yields[0]
        if y not in in_args:
            return False
        k = in_args.index(y)
        v = ins[k]
        if v in self.scalars or _tensor_type(v) is None:
            return False
        out_map = maps[len(ins)]
        position = {}  # op dim -> output axis
        for axis, e in enumerate(out_map.results):
            if isinstance(e, ir.AffineDimExpr):
                position[e.position] = axis
        if len(position) != len(names):
            return False
        in_map = maps[k]
        src = self.buf(op, v)
        shape, element = _tensor_type(op.results[0])
        dims = [names[e.position] if isinstance(e, ir.AffineDimExpr) else None for e in out_map.results]

        def index(idx, ix, in_map=in_map, position=position):
            dim_values = [idx[position[d]] for d in range(len(position))]
            return [self.affine(e, dim_values, ix) for e in in_map.results]

        self.bufs[op.results[0]] = _Buf(shape, element, dims, source=src, index=index)
        return True

    def result_buffer(self, value, shape, element, dims) -> _Buf:
        outs = self.outputs.get(value)
        if outs:
            v = outs[0]
            buf = _Buf(shape, element, dims, value=v)
        else:
            kept = [a for a in range(len(shape)) if shape[a] != 1]
            with self.b.at(self.top.body, len(self.index_constants)):
                v = self.b.alloc([dims[a] for a in kept], memref([shape[a] for a in kept], element))
            buf = _Buf(shape, element, dims, value=v)
            buf.kept = kept
        self.bufs[value] = buf
        return buf

    # ---------------------------------------------------------------- tensor ops
    def folded(self, op, src: _Buf, make) -> bool:
        """A weight's reshape, slice or padding done now: ``make(data)``."""
        if src.data is None or op.results[0] in self.outputs:
            return False
        shape, element = _tensor_type(op.results[0])
        self.bufs[op.results[0]] = _Buf(shape, element, [None] * len(shape), data=np.ascontiguousarray(make(src.data)),
                                        name=src.name)
        return True

    def expand_shape(self, op) -> None:
        src = self.buf(op, op.operands[0])
        shape, element = _tensor_type(op.results[0])
        if self.folded(op, src, lambda d: d.reshape(shape)):
            return
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]

        def index(idx, ix, groups=groups, shape=shape):
            out = []
            for g in groups:  # the source axis: the row-major position within its group
                acc = None
                for axis in g:
                    if shape[axis] == 1 and len(g) > 1:
                        continue
                    acc = idx[axis] if acc is None else ix.add(ix.mul(acc, ix.const(shape[axis])), idx[axis])
                out.append(acc if acc is not None else ix.const(0))
            return out

        dims = [None] * len(shape)
        for k, g in enumerate(groups):
            real = [a for a in g if shape[a] != 1]
            if len(real) == 1 and src.dims[k] is not None:
                dims[real[0]] = src.dims[k]
        self.bufs[op.results[0]] = _Buf(shape, element, dims, source=src, index=index)

    def collapse_shape(self, op) -> None:
        src = self.buf(op, op.operands[0])
        shape, element = _tensor_type(op.results[0])
        if self.folded(op, src, lambda d: d.reshape(shape)):
            return
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
        if all(sum(1 for a in g if src.shape[a] != 1) <= 1 for g in groups):  # unit axes only: a view
            def index(idx, ix, groups=groups):
                out = [None] * len(src.shape)
                for k, g in enumerate(groups):
                    for a in g:
                        out[a] = idx[k] if src.shape[a] != 1 or len(g) == 1 else ix.const(0)
                    if all(src.shape[a] == 1 for a in g) and len(g) > 1:
                        out[g[0]] = idx[k]
                return out

            dims = []
            for g in groups:
                real = [a for a in g if src.shape[a] != 1]
                dims.append(src.dims[real[0]] if len(real) == 1 else None)
            self.bufs[op.results[0]] = _Buf(shape, element, dims, source=src, index=index)
            return
        # a copy over the source's axes into the collapsed buffer (row-major positions: no division)
        names = [src.dims[a] if src.dims[a] is not None and src.dims[a] not in src.dims[:a] else self.fresh_dim(n)
                 for a, n in enumerate(src.shape)]
        out_dims = [self.fresh_dim(n) for n in shape]
        res = self.result_buffer(op.results[0], shape, element, out_dims)
        self.nest(names, src.shape, lambda dv: self.b.store(self.read(op, src, dv), res.value,
                                                            self.phys(res, self.collapse_index(groups, src.shape, dv))))

    def collapse_index(self, groups, shape, dv):
        out = []
        for g in groups:
            acc = None
            for a in g:
                acc = dv[a] if acc is None else self.b.binary("addi", self.b.binary("muli", acc, self.index_constant(shape[a])), dv[a])
            out.append(acc)
        return out

    def nest(self, names, shape, inner) -> None:
        """A perfect nest over ``names`` (extents ``shape``) calling ``inner(dim values)``."""
        b = self.b
        self.owners.append(self.op_id)
        dv = []

        def emit(k):
            if k == len(names):
                inner(dv)
                return
            if shape[k] == 1:  # no loop over a unit axis
                dv.append(self.index_constant(0))
                emit(k + 1)
                return
            with b.loop(names[k], shape[k]):
                dv.append(b.dim(names[k]))
                emit(k + 1)

        if all(n == 1 for n in shape):  # no loop at all
            self.owners.pop()
        emit(0)

    def extract_slice(self, op) -> None:
        src = self.buf(op, op.operands[0])
        if len(op.operands) != 1:
            raise _error(op, "tensor.extract_slice with dynamic offsets, sizes or strides cannot be imported")
        offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
        strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        shape, element = _tensor_type(op.results[0])
        if self.folded(op, src, lambda d: d[tuple(slice(o, o + n * st, st) for o, n, st in zip(offsets, sizes, strides))].reshape(shape)):
            return
        kept, r = [], 0  # the source axes the result keeps: matched greedily, as MLIR's computeRankReductionMask
        for a in range(len(sizes)):
            if r < len(shape) and sizes[a] == shape[r]:
                kept.append(a)
                r += 1
            elif sizes[a] != 1:
                raise _error(op, "a rank-reducing tensor.extract_slice whose dropped axes are not of size 1")
        if r != len(shape):
            raise _error(op, "a rank-reducing tensor.extract_slice whose result axes match no source axes")

        def index(idx, ix):
            out = []
            it = iter(idx)
            for a in range(len(sizes)):
                i = next(it) if a in kept else ix.const(0)
                if strides[a] != 1:
                    i = ix.mul(i, ix.const(strides[a]))
                if offsets[a] != 0:
                    i = ix.add(i, ix.const(offsets[a]))
                out.append(i)
            return out

        dims = [src.dims[a] if offsets[a] == 0 and strides[a] == 1 and sizes[a] == src.shape[a] else None for a in kept]
        self.bufs[op.results[0]] = _Buf(shape, element, dims, source=src, index=index)

    def pad(self, op) -> None:
        src = self.buf(op, op.operands[0])
        if len(op.operands) != 1:
            raise _error(op, "tensor.pad with dynamic padding cannot be imported")
        low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
        body = op.regions[0].blocks[0]
        pad_value = list(body.operations)[-1].operation.operands[0]
        if pad_value not in self.scalars:
            raise _error(op, "tensor.pad with a padding value that is not a constant cannot be imported")
        shape, element = _tensor_type(op.results[0])
        high = [n - m - lo for n, m, lo in zip(shape, src.shape, low)]
        if self.folded(op, src, lambda d: np.pad(d, list(zip(low, high)), constant_values=self.scalars[pad_value][0])):
            return
        names = [self.fresh_dim(n) for n in shape]
        res = self.result_buffer(op.results[0], shape, element, names)
        b = self.b

        def inner(dv):
            inside = None
            idx = []
            for a, v in enumerate(dv):
                if low[a] == 0 and shape[a] == src.shape[a]:
                    idx.append(v)
                    continue
                s = b.binary("subi", v, self.index_constant(low[a])) if low[a] else v
                ok = b.binary("andi", b.cmp("sge", s, self.index_constant(0)), b.cmp("slt", s, self.index_constant(src.shape[a])))
                inside = ok if inside is None else b.binary("andi", inside, ok)
                idx.append(b.binary("minsi", b.binary("maxsi", s, self.index_constant(0)), self.index_constant(src.shape[a] - 1)))
            x = self.read(op, src, idx)
            if inside is not None:
                x = b.select(inside, x, self.scalar(*self.scalars[pad_value]))
            b.store(x, res.value, self.phys(res, dv))

        self.nest(names, shape, inner)

    def concat(self, op) -> None:
        """``tensor.concat``: a copy nest per input into its place along the axis (torch.cat)."""
        axis = ir.IntegerAttr(op.attributes["dim"]).value
        srcs = [self.buf(op, v) for v in op.operands]
        shape, element = _tensor_type(op.results[0])
        if all(b.data is not None for b in srcs) and op.results[0] not in self.outputs:
            self.bufs[op.results[0]] = _Buf(shape, element, [None] * len(shape), data=np.concatenate([b.data for b in srcs], axis),
                                            name=srcs[0].name)
            return
        dims = [self.fresh_dim(n) for n in shape]
        res = self.result_buffer(op.results[0], shape, element, dims)
        offset = 0
        for src in srcs:
            names = [d if a != axis else (src.dims[a] if src.dims[a] is not None and src.dims[a] not in dims else self.fresh_dim(n))
                     for a, (d, n) in enumerate(zip(dims, src.shape))]

            def inner(dv, src=src, offset=offset):
                at = list(dv)
                if offset:
                    at[axis] = self.b.binary("addi", dv[axis], self.index_constant(offset))
                self.b.store(self.read(op, src, dv), res.value, self.phys(res, at))

            self.nest(names, src.shape, inner)
            offset += src.shape[axis]

    def write_result(self, val, targets) -> None:
        """Copy a returned value into each output argument that no nest wrote."""
        buf = self.bufs.get(val)
        if buf is None:
            raise ImportError(f"error: a returned value ({val.get_name()}) comes from an op lt_mlir did not import")
        for t in targets:
            if buf.value is t:
                continue
            names = [d if d is not None and d not in buf.dims[:a] else self.fresh_dim(n) for a, (d, n) in enumerate(zip(buf.dims, buf.shape))]
            self.op_id = "return"
            self.nest(names, buf.shape, lambda dv, t=t: self.b.store(self.read(self.func, buf, dv), t, dv))


def prepare(module, filename: str = "-") -> None:
    """Generalize the named linalg ops and canonicalize (upstream passes), in place."""
    try:
        passmanager.PassManager.parse(PREPARE, context=module.context).run(module.operation)
    except ir.MLIRError as e:
        raise from_mlir_error(e, ImportError, filename) from None


def import_linalg(source, resources: dict | None = None, names: dict | None = None, filename: str = "-") -> Imported:
    """A linalg-on-tensors module (an ``ir.Module`` of any context, or its
    text) -> ``Imported`` (the lt module and its arguments).  ``resources``:
    a weight's data by its ``dense_resource`` name (else read from the
    text's ``dialect_resources``); ``names``: a resource's name in the
    model, ``("input", k)``'s name."""
    text_resources: dict = {}
    if isinstance(source, str):
        ctx = ir.Context()
        ctx.allow_unregistered_dialects = False
        try:
            module = ir.Module.parse(source, ctx)
        except ir.MLIRError as e:
            raise from_mlir_error(e, ImportError, filename) from None
        text_resources = parse_resources(source)
    else:
        module = source
    prepare(module, filename)
    funcs = [op for op in (o.operation for o in module.body.operations) if op.name == "func.func" and not _is_declaration(op)]
    if not funcs:
        raise ImportError(f"error: {'the module' if filename == '-' else filename} has no function to import")
    if len(funcs) > 1:
        names_ = ", ".join(ir.StringAttr(f.attributes["sym_name"]).value for f in funcs)
        raise _error(funcs[1], f"the module has {len(funcs)} functions ({names_}); import one model function at a time")
    if not text_resources and resources is None:
        text_resources = parse_resources(str(module))
    with module.context:
        try:
            return _Importer(funcs[0], resources or {}, names, text_resources).run()
        except ImportError as e:
            raise with_filename(e, filename) from None


def _is_declaration(op) -> bool:
    return len(op.regions[0].blocks) == 0
