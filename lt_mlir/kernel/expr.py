"""The kernel frontend's values: lazy arrays that record NumPy expressions.

A ``Lazy`` is a node of an expression graph: an argument (``Input``), a
number the host computed (``Scalar``), an element-wise operation with
NumPy's broadcasting (``Map``), a reduction along axes (``Reduce``), a
matrix product (``MatMul``), a transposition (``Transpose``), or their
sparse forms over a CSR matrix's stored values (``SparseMap``,
``SparseReduce``, ``SpMM``).  NumPy's own functions reach these classes
through NumPy's dispatch protocols (``__array_ufunc__`` and
``__array_function__``, NEP 13 and 18), so ``np.exp(x - m)`` and
``np.sum(e, axis=1)`` in a kernel build nodes instead of computing.

Nodes are interned per call (``Graph.node``): building the same
expression over the same operands again (a host ``while`` loop's next
iteration) returns the same node, which is how values invariant in a host
loop are computed once (``Graph.evaluate``).

Sparse semantics: an element-wise operation with a CSR operand is
evaluated at the CSR's stored positions only, and its result is a CSR of
the same structure (``A * (B @ C.T)`` is SDDMM; ``np.exp(A - m[:, None])``
the numerator of a sparse softmax, as ``torch.sparse.softmax`` treats
positions not stored as absent).  Reductions of a CSR along ``axis=1``
reduce each row's stored values (an empty row gives the identity: 0 for
``sum``, ``-inf``/``inf`` for ``max``/``min``).
"""

from __future__ import annotations

import numbers

import numpy as np

from .errors import KernelError, where

# element-wise operations: name -> (arity, NumPy function for constant folding)
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}
UNARY = {"neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs, "tanh": np.tanh}
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
POWERS = (2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 0.5, 1.0, -1.0)  # the exponents ** takes (multiplies, sqrt, 1/x)
_UFUNCS = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.divide: "div", np.true_divide: "div",
    np.maximum: "max", np.minimum: "min", np.power: "pow", np.less: "lt", np.less_equal: "le",
    np.greater: "gt", np.greater_equal: "ge", np.equal: "eq", np.not_equal: "ne",
    np.negative: "neg", np.exp: "exp", np.log: "log", np.sqrt: "sqrt", np.absolute: "abs", np.tanh: "tanh",
}
REDUCTIONS = {"sum": "add", "max": "max", "min": "min"}


def _axes(axis, ndim: int, what: str) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise KernelError(f"{where()}: error: {what}: axis {a!r} is out of range for an array of {ndim} dimension(s)")
        out.append(int(a) % ndim)
    return tuple(sorted(set(out)))


def broadcast_shape(shapes: list, what: str) -> tuple:
    if len(shapes) == 2:  # the common cases, without NumPy's general rule (a host loop builds these every iteration)
        a, b = shapes
        if a == b or not b:
            return tuple(a)
        if not a:
            return tuple(b)
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise KernelError(
            f"{where()}: error: {what}: shapes {' and '.join(str(tuple(s)) for s in shapes)} do not broadcast"
        ) from None


def result_dtype(*dtypes) -> np.dtype:
    """float64 if any operand is float64, else float32 (a kernel computes in
    the arguments' floating-point type; Python numbers take it)."""
    return np.dtype(np.float64) if any(np.dtype(d) == np.float64 for d in dtypes if d is not None) else np.dtype(np.float32)


class Lazy:
    """A node: ``shape``, ``dtype``, ``graph``; ``value`` once computed."""

    __array_priority__ = 1000
    sparse = False

    def __init__(self, graph, shape: tuple, dtype, operands: tuple = ()):
        self.graph = graph
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.operands = operands
        self.value = None  # a NumPy array (or CSR data) once evaluated
        self.carried = False  # bound to a variable of a host loop at an iteration's end (Graph.sync)
        self.deferred = False  # left for the next iteration's kernel (graph.rotated)
        self._invariant = all(o.invariant for o in operands)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def invariant(self) -> bool:
        """Whether the node's value is the same in every iteration of the
        host loops around it: it depends only on the call's arguments and
        on numbers written in the code, not on values a host loop carries
        from one iteration to the next (those are ``carried``).  Decided
        when the node is made, from its operands."""
        return self._invariant and not self.carried

    def key(self) -> tuple:
        raise NotImplementedError

    # ---------------------------------------------------------- operators
    def _bin(self, op, other, reflected=False):
        other = self.graph.wrap(other)
        a, b = (other, self) if reflected else (self, other)
        return self.graph.binary(op, a, b)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __pow__(self, o): return self._bin("pow", o)
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __eq__(self, o): return self._bin("eq", o)  # noqa: PLE0302
    def __ne__(self, o): return self._bin("ne", o)
    def __neg__(self): return self.graph.unary("neg", self)
    def __abs__(self): return self.graph.unary("abs", self)
    __hash__ = object.__hash__

    def __matmul__(self, o): return self.graph.matmul(self, self.graph.wrap(o))
    def __rmatmul__(self, o): return self.graph.matmul(self.graph.wrap(o), self)

    @property
    def T(self):  # noqa: N802
        return self.graph.transpose(self)

    def transpose(self):
        return self.graph.transpose(self)

    def sum(self, axis=None):
        return self.graph.reduce("sum", self, axis)

    def max(self, axis=None):
        return self.graph.reduce("max", self, axis)

    def min(self, axis=None):
        return self.graph.reduce("min", self, axis)

    def mean(self, axis=None):
        return self.graph.mean(self, axis)

    def __getitem__(self, index):
        return self.graph.index(self, index)

    # ------------------------------------------------ host-side conversions
    def numpy(self):
        """The value (computes what it needs)."""
        self.graph.host_read = True  # the host saw a value: this call's trace depends on data (no replay)
        return self.graph.evaluate([self])[0]

    def __array__(self, dtype=None, copy=None):
        v = self.numpy()
        return v if dtype is None else v.astype(dtype)

    def __float__(self):
        return float(self._scalar("float()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __bool__(self):
        return bool(self._scalar("a condition"))

    def __len__(self):
        if not self.shape:
            raise KernelError(f"{where()}: error: len() of a 0-d array")
        return self.shape[0]

    def _scalar(self, what: str):
        if self.shape:
            raise KernelError(f"{where()}: error: {what} needs a single number; this array has shape {self.shape}")
        return self.numpy().reshape(())[()]

    def __iter__(self):
        raise KernelError(f"{where()}: error: iterating over an array element by element is not supported in a kernel (write the loop as an array expression)")

    def __repr__(self) -> str:
        return f"<lt kernel {type(self).__name__} {self.shape} {self.dtype}>"

    # ----------------------------------------------------- NumPy dispatch
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__" and not kwargs:
            a, b = (self.graph.wrap(x) for x in inputs)
            return self.graph.matmul(a, b)
        name = _UFUNCS.get(ufunc)
        if method != "__call__" or name is None or kwargs:
            raise KernelError(f"{where()}: error: np.{ufunc.__name__}{'' if method == '__call__' else '.' + method} is not supported in a kernel")
        if name in UNARY:
            return self.graph.unary(name, self.graph.wrap(inputs[0]))
        a, b = (self.graph.wrap(x) for x in inputs)
        return self.graph.binary(name, a, b)

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise KernelError(f"{where()}: error: np.{func.__name__} is not supported in a kernel")
        return handler(self.graph, *args, **kwargs)


class Input(Lazy):
    """A dense array argument of the kernel (``name`` in the signature)."""

    def __init__(self, graph, name: str, array: np.ndarray):
        super().__init__(graph, array.shape, array.dtype)
        self.name = name
        self.value = array

    @property
    def invariant(self) -> bool:
        return not self.carried

    def key(self):
        return ("input", self.name)


class Scalar(Lazy):
    """A number from the host (a Python float or a 0-d value): a run-time
    argument of the kernel, so a new value does not compile again."""

    def __init__(self, graph, value, dtype):
        super().__init__(graph, (), dtype)
        self.value = np.asarray(value, dtype=self.dtype)

    @property
    def invariant(self) -> bool:
        return True  # a number in the code, interned by value (Graph.wrap)

    def key(self):
        return ("scalar", id(self))


class Computed(Lazy):
    """A value computed by an earlier kernel of this call: an argument of
    the kernels that use it."""

    def __init__(self, graph, value: np.ndarray, invariant: bool):
        super().__init__(graph, value.shape, value.dtype)
        self.value = value
        self._invariant = invariant

    def key(self):
        return ("computed", id(self))


class Map(Lazy):
    """An element-wise operation; operands broadcast to ``shape``."""

    def __init__(self, graph, op: str, operands: tuple, shape, dtype):
        super().__init__(graph, shape, dtype, operands)
        self.op = op

    def key(self):
        return ("map", self.op, tuple(id(o) for o in self.operands))


class Select(Lazy):
    """``np.where(cond, a, b)``; operands broadcast to ``shape``."""

    def __init__(self, graph, operands: tuple, shape, dtype):
        super().__init__(graph, shape, dtype, operands)

    def key(self):
        return ("select", tuple(id(o) for o in self.operands))


class View(Lazy):
    """``x[:, None]``-style indexing: ``x`` with axes of one element
    inserted where ``new`` says (a position in the result)."""

    def __init__(self, graph, x: Lazy, new: tuple):
        shape = list(x.shape)
        for a in new:
            shape.insert(a, 1)
        super().__init__(graph, tuple(shape), x.dtype, (x,))
        self.new = new

    def key(self):
        return ("view", self.new, id(self.operands[0]))


class Index(Lazy):
    """Basic indexing with constant bounds (``x[1:-1]``, ``A[:, 2:]``,
    ``A[0]``, mixed with None): ``spec`` gives, for each result axis, the
    operand axis and the offset into it (or None for a new axis of one
    element); ``fixed`` the operand axes an integer selects."""

    def __init__(self, graph, x: Lazy, spec: tuple, fixed: tuple, shape: tuple):
        super().__init__(graph, shape, x.dtype, (x,))
        self.spec, self.fixed = spec, fixed

    def key(self):
        return ("index", self.spec, self.fixed, self.shape, id(self.operands[0]))


class Reduce(Lazy):
    """``kind`` (add, max, min) of ``operands[0]`` along ``axes``."""

    def __init__(self, graph, kind: str, x: Lazy, axes: tuple):
        shape = tuple(s for a, s in enumerate(x.shape) if a not in axes)
        super().__init__(graph, shape, x.dtype, (x,))
        self.kind, self.axes = kind, axes

    def key(self):
        return ("reduce", self.kind, self.axes, id(self.operands[0]))


class MatMul(Lazy):
    """``a @ b`` for 1-D and 2-D operands (NumPy's rules)."""

    def __init__(self, graph, a: Lazy, b: Lazy, shape, dtype):
        super().__init__(graph, shape, dtype, (a, b))

    def key(self):
        return ("matmul", id(self.operands[0]), id(self.operands[1]))


class Transpose(Lazy):
    def __init__(self, graph, x: Lazy):
        super().__init__(graph, x.shape[::-1], x.dtype, (x,))

    def key(self):
        return ("transpose", id(self.operands[0]))


# ------------------------------------------------------------------ sparse


class Sparse(Lazy):
    """A CSR matrix: ``structure`` (a ``CSRInput``) gives indptr and indices;
    the node's values are the stored values (``nnz`` of them)."""

    sparse = True

    @property
    def structure(self):
        raise NotImplementedError

    @property
    def nnz(self) -> int:
        return self.structure.nnz


class CSRInput(Sparse):
    """A CSR argument: ``indptr``, ``indices``, ``data`` (validated)."""

    def __init__(self, graph, name: str, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, shape, memo=None):
        super().__init__(graph, shape, data.dtype)
        self.name = name
        self.indptr, self.indices, self.value = indptr, indices, data
        self._memo = memo  # a csr.RowMemo kept by the kernel for this argument, or None

    @property
    def structure(self):
        return self

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    @property
    def rows(self) -> np.ndarray:
        """The row of each stored position (COO's row array), made once a
        call (or kept from the last call with the same ``indptr``: the
        argument's ``RowMemo``): what an element-wise operation over the
        positions reads to broadcast a value along the rows (``m[:, None]``)."""
        if getattr(self, "_rows", None) is None:
            if self._memo is not None:
                self._rows = self._memo.rows(self.indptr, self.shape[0], self.indices.dtype)
            else:
                self._rows = np.repeat(np.arange(self.shape[0], dtype=self.indices.dtype), np.diff(self.indptr))
        return self._rows

    @property
    def invariant(self) -> bool:
        return True

    def key(self):
        return ("csr", self.name)


class SparseMap(Sparse):
    """An element-wise operation at the stored positions of ``structure``;
    dense operands broadcast to the matrix's shape, sparse ones share the
    structure."""

    def __init__(self, graph, op: str, operands: tuple, structure: CSRInput, dtype):
        super().__init__(graph, structure.shape, dtype, operands)
        self.op = op
        self._structure = structure

    @property
    def structure(self):
        return self._structure

    def key(self):
        return ("spmap", self.op, tuple(id(o) for o in self.operands))


class SparseReduce(Lazy):
    """``kind`` of each row's stored values (axis 1): a dense vector."""

    def __init__(self, graph, kind: str, x: Sparse):
        super().__init__(graph, (x.shape[0],), x.dtype, (x,))
        self.kind = kind

    def key(self):
        return ("spreduce", self.kind, id(self.operands[0]))


class SpMM(Lazy):
    """CSR ``a`` @ dense ``b`` (1-D or 2-D): a dense result."""

    def __init__(self, graph, a: Sparse, b: Lazy, shape, dtype):
        super().__init__(graph, shape, dtype, (a, b))

    def key(self):
        return ("spmm", id(self.operands[0]), id(self.operands[1]))


class Copy(Lazy):
    """``x`` written to a buffer of its own in its logical layout: a
    transposed view made row-major, for a sampled product that reads it
    along k (``Graph._lay_out_sampled``)."""

    def __init__(self, graph, x: Lazy):
        super().__init__(graph, x.shape, x.dtype, (x,))

    def key(self):
        return ("copy", id(self.operands[0]))


class DenseSpMM(Lazy):
    """Dense ``a`` (1-D or 2-D) @ CSR ``b``: a dense result (the sparse
    Sinkhorn's ``K @ v``)."""

    def __init__(self, graph, a: Lazy, b: Sparse, shape, dtype):
        super().__init__(graph, shape, dtype, (a, b))

    def key(self):
        return ("dspmm", id(self.operands[0]), id(self.operands[1]))


# ------------------------------------------------- NumPy functions handled


def _reduction(kind):
    def handler(graph, x, axis=None, **kwargs):
        if kwargs:
            raise KernelError(f"{where()}: error: np.{kind}: arguments {', '.join(kwargs)} are not supported in a kernel")
        return graph.reduce(kind, graph.wrap(x), axis)

    return handler


def _where(graph, cond, a, b):
    return graph.select(graph.wrap(cond), graph.wrap(a), graph.wrap(b))


def _mean(graph, x, axis=None, **kwargs):
    if kwargs:
        raise KernelError(f"{where()}: error: np.mean: arguments {', '.join(kwargs)} are not supported in a kernel")
    return graph.mean(graph.wrap(x), axis)


def _matmul(graph, a, b):
    return graph.matmul(graph.wrap(a), graph.wrap(b))


def _transpose(graph, x, axes=None):
    if axes is not None:
        raise KernelError(f"{where()}: error: np.transpose with axes is not supported in a kernel")
    return graph.transpose(graph.wrap(x))


_FUNCTIONS = {
    np.sum: _reduction("sum"),
    np.max: _reduction("max"),
    np.amax: _reduction("max"),
    np.min: _reduction("min"),
    np.amin: _reduction("min"),
    np.mean: _mean,
    np.where: _where,
    np.dot: _matmul,
    np.matmul: _matmul,
    np.transpose: _transpose,
}


def is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool) or isinstance(x, np.generic) and x.shape == ()
