"""One call's expression graph: building nodes (with NumPy's rules for
shapes) and evaluating them with compiled lt kernels."""

from __future__ import annotations

import numpy as np

from . import expr as E
from .errors import KernelError, where


class Graph:
    """The nodes of one call of a kernel.  ``run(nodes)`` is given by the
    kernel (``Kernel._run``): it compiles (or finds) the lt kernel for the
    nodes without a value and fills them in."""

    def __init__(self, run):
        self._run = run
        self._interned: dict = {}
        self.looping = False  # in a host loop of the kernel (a cut was made)
        self.host_read = False  # a value was read by the host (Lazy.numpy: float(), a condition, np.asarray)

    def release(self) -> None:
        """The call is over: drop the interned nodes.  Nodes point at their
        graph and the graph at its interned nodes, a cycle that would keep
        the call's arrays alive until the next garbage collection; without
        it a result the caller drops is freed at once, and the next call
        writes its output into the same array (``Kernel._run``'s ``spare``:
        no fresh pages to fault in)."""
        self._interned.clear()

    # -------------------------------------------------------------- nodes
    def node(self, cls, *args):
        n = cls(self, *args)
        if not n.invariant:
            return n  # interned are only values fixed for the call (their operands live as long)
        key = n.key()
        old = self._interned.get(key)
        if old is not None:
            return old
        self._interned[key] = n
        return n

    def wrap(self, x) -> E.Lazy:
        if isinstance(x, E.Lazy):
            if x.graph is not self:
                raise KernelError(f"{where()}: error: an array of another kernel call is used here")
            return x
        if isinstance(x, (bool, np.bool_)):
            raise KernelError(f"{where()}: error: a bool operand is not supported in an array expression")
        if E.is_number(x):
            weak = not isinstance(x, np.generic)
            dtype = np.float64 if weak else np.result_type(x, np.float32)
            key = ("scalar", float(x), np.dtype(dtype).str, weak)
            node = self._interned.get(key)
            if node is None:
                node = self._interned[key] = E.Scalar(self, x, dtype)
                node.weak = weak
            return node
        if isinstance(x, np.ndarray):
            if x.dtype not in (np.float32, np.float64):
                raise KernelError(f"{where()}: error: arrays of {x.dtype} are not supported (float32 and float64 are)")
            return E.Computed(self, np.ascontiguousarray(x), False)
        raise KernelError(f"{where()}: error: a {type(x).__name__} is not an array or a number")

    @staticmethod
    def _dtype(*nodes) -> np.dtype:
        strong = [n.dtype for n in nodes if not getattr(n, "weak", False) and n.dtype != np.bool_]
        return E.result_dtype(*strong) if strong else np.dtype(np.float64)

    def binary(self, op: str, a: E.Lazy, b: E.Lazy) -> E.Lazy:
        what = f"'{op}' of arrays"
        if op == "pow" and not (isinstance(b, E.Scalar) and float(b.value) in E.POWERS):
            given = f"{float(b.value):g}" if isinstance(b, E.Scalar) else f"an array {b.shape}"
            raise KernelError(f"{where()}: error: ** takes the exponents 2..8, 0.5, 1 and -1 written as numbers (got {given})")
        dtype = np.dtype(np.bool_) if op in E.COMPARE else self._dtype(a, b)
        if a.sparse or b.sparse:
            return self._sparse_map(op, (a, b), dtype)
        for x in (a, b):
            if x.dtype == np.bool_ and op not in ("eq", "ne"):
                raise KernelError(f"{where()}: error: {what}: a boolean array is not a number (use np.where)")
        return self.node(E.Map, op, (a, b), E.broadcast_shape([a.shape, b.shape], what), dtype)

    def unary(self, op: str, x: E.Lazy) -> E.Lazy:
        if x.dtype == np.bool_:
            raise KernelError(f"{where()}: error: np.{op} of a boolean array")
        if x.sparse:
            return self._sparse_map(op, (x,), x.dtype)
        return self.node(E.Map, op, (x,), x.shape, x.dtype)

    def _sparse_map(self, op: str, operands: tuple, dtype) -> E.Lazy:
        structures = {id(o.structure): o.structure for o in operands if o.sparse}
        if len(structures) > 1:
            raise KernelError(f"{where()}: error: '{op}' of two sparse matrices with different structures is not supported")
        s = next(iter(structures.values()))
        for o in operands:
            if not o.sparse:
                E.broadcast_shape([o.shape, s.shape], f"'{op}' of a sparse matrix {s.shape} and an array {o.shape}")
                if len(np.broadcast_shapes(o.shape, s.shape)) != 2 or np.broadcast_shapes(o.shape, s.shape) != s.shape:
                    raise KernelError(f"{where()}: error: '{op}': an array {o.shape} does not broadcast to the sparse matrix's shape {s.shape}")
        self._lay_out_sampled(operands)
        return self.node(E.SparseMap, op, operands, s, dtype)

    def _lay_out_sampled(self, operands) -> None:
        """The dense products an element-wise operation on a CSR reads at
        its stored positions (``lower.sampled_products``) are one dot
        product an element (an SDDMM), so an operand read across its rows
        along k -- ``K.T @ u``'s K columns and u columns, a page apart -- is
        copied first into a buffer where k runs along rows (``E.Copy``;
        K's copy, invariant in a host loop, once a call)."""
        from .lower import contiguous, sampled_products

        for x in sampled_products(operands):
            if x.ndim == 2 and x.operands[0].ndim == 2 and x.operands[1].ndim == 2:
                a, m = x.operands
                if not contiguous(a, 1):
                    a = self.node(E.Copy, a)
                if not contiguous(m, 0):
                    m = self.transpose(self.node(E.Copy, self.transpose(m)))
                x.operands = (a, m)

    def select(self, c: E.Lazy, a: E.Lazy, b: E.Lazy) -> E.Lazy:
        if any(x.sparse for x in (c, a, b)):
            raise KernelError(f"{where()}: error: np.where with a sparse operand is not supported")
        shape = E.broadcast_shape([c.shape, a.shape, b.shape], "np.where")
        return self.node(E.Select, (c, a, b), shape, self._dtype(a, b))

    def reduce(self, name: str, x: E.Lazy, axis) -> E.Lazy:
        kind = E.REDUCTIONS[name]
        if x.dtype == np.bool_:
            raise KernelError(f"{where()}: error: np.{name} of a boolean array")
        if x.sparse:
            axes = E._axes(axis, 2, f"{name} of a sparse matrix")
            if axes == (0, 1):
                return self.node(E.Reduce, kind, self.node(E.SparseReduce, kind, x), (0,))
            if axes != (1,):
                raise KernelError(f"{where()}: error: {name} of a sparse matrix along axis 0 is not supported (axis=1 or none)")
            return self.node(E.SparseReduce, kind, x)
        axes = E._axes(axis, x.ndim, name)
        if not axes:
            return x
        return self.node(E.Reduce, kind, x, axes)

    def mean(self, x: E.Lazy, axis) -> E.Lazy:
        if x.sparse:
            raise KernelError(f"{where()}: error: mean of a sparse matrix is not supported")
        axes = E._axes(axis, x.ndim, "mean")
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        return self.binary("div", self.reduce("sum", x, axis), self.wrap(float(count)))

    def matmul(self, a: E.Lazy, b: E.Lazy) -> E.Lazy:
        if a.sparse and b.sparse:
            raise KernelError(f"{where()}: error: sparse @ sparse is not supported")
        if a.ndim == 0 or b.ndim == 0 or a.ndim > 2 or b.ndim > 2:
            raise KernelError(f"{where()}: error: @ of arrays of {a.ndim} and {b.ndim} dimensions (1-D and 2-D are supported)")
        k_a = a.shape[-1]
        k_b = b.shape[0]
        if k_a != k_b:
            raise KernelError(f"{where()}: error: @: shapes {a.shape} and {b.shape} do not agree ({k_a} != {k_b})")
        shape = a.shape[:-1] + b.shape[1:]
        if a.sparse:
            return self.node(E.SpMM, a, b, shape, self._dtype(a, b))
        if b.sparse:
            if a.ndim == 2:  # read as a[i, k] with i innermost (lower.dense_spmm): k along rows
                a = self.transpose(self.node(E.Copy, self.transpose(a)))
            return self.node(E.DenseSpMM, a, b, shape, self._dtype(a, b))
        return self.node(E.MatMul, a, b, shape, self._dtype(a, b))

    def transpose(self, x: E.Lazy) -> E.Lazy:
        if x.sparse:
            raise KernelError(f"{where()}: error: transposing a sparse matrix is not supported")
        if x.ndim < 2:
            return x
        if x.ndim > 2:
            raise KernelError(f"{where()}: error: .T of a {x.ndim}-D array is not supported")
        return self.node(E.Transpose, x)

    def index(self, x: E.Lazy, index) -> E.Lazy:
        """``:`` and None only: a view with new axes; integers and slices
        with constant bounds and step 1: an ``Index``."""
        items = index if isinstance(index, tuple) else (index,)
        if x.sparse:
            raise KernelError(f"{where()}: error: indexing a sparse matrix is not supported")
        if any(item is Ellipsis for item in items):
            raise KernelError(f"{where()}: error: indexing with ... is not supported in a kernel")
        taking = [item for item in items if item is not None]
        if len(taking) > x.ndim:
            raise KernelError(f"{where()}: error: too many indices for an array of {x.ndim} dimension(s)")
        if all(item is None or (isinstance(item, slice) and item == slice(None)) for item in items):
            new, axis = [], 0
            for item in items:
                if item is None:
                    new.append(len(new) + axis)
                else:
                    axis += 1
            return self.node(E.View, x, tuple(new)) if new else x
        spec, fixed, shape, axis = [], [], [], 0
        for item in list(items) + [slice(None)] * (x.ndim - len(taking)):
            if item is None:
                spec.append(None)
                shape.append(1)
                continue
            size = x.shape[axis]
            if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
                i = int(item) + (size if item < 0 else 0)
                if not 0 <= i < size:
                    raise KernelError(f"{where()}: error: index {int(item)} is out of bounds for axis {axis} of size {size}")
                fixed.append((axis, i))
            elif isinstance(item, slice):
                if item.step not in (None, 1):
                    raise KernelError(f"{where()}: error: slices with a step ({item.step}) are not supported in a kernel yet")
                for bound in (item.start, item.stop):
                    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, np.integer))):
                        raise KernelError(f"{where()}: error: slice bounds must be integers known when the kernel runs, got {bound!r}")
                start, stop, _ = item.indices(size)
                if stop <= start:
                    raise KernelError(f"{where()}: error: the slice {start}:{stop} of axis {axis} (size {size}) is empty")
                spec.append((axis, start))
                shape.append(stop - start)
            else:
                raise KernelError(f"{where()}: error: indexing with {type(item).__name__} is not supported in a kernel (integers, slices with constant bounds, None)")
            axis += 1
        return self.node(E.Index, x, tuple(spec), tuple(fixed), tuple(shape))

    # --------------------------------------------------------- evaluation
    def pending(self, roots) -> list:
        """The nodes without a value that ``roots`` need, operands first."""
        order, seen = [], set()

        def visit(n):
            if id(n) in seen or n.value is not None:
                return
            seen.add(id(n))
            for o in n.operands:
                visit(o)
            order.append(n)

        for r in roots:
            visit(r)
        visit = None  # noqa: F841 - the recursive closure and its cell form a cycle that would hold ``order`` (release)
        return order

    def evaluate(self, roots: list) -> list:
        todo = self.pending(roots)
        if todo:
            self._run(self, [r for r in roots if r.value is None], todo)
        return [r.value for r in roots]

    def rotation(self, todo: list, roots: list):
        """The root ``sync`` leaves for the next iteration (``rotated``), or None."""
        return rotated(todo, roots) if self.looping and any(_row_product(r) for r in roots) else None

    def plan(self, values) -> tuple:
        """``(roots, todo, later)`` of ``sync(values)``: the values computed,
        the nodes that takes, and the root ``rotated`` leaves for the next
        iteration (or None)."""
        # a root left over at the end of the last iteration stays so at the
        # start of the next (the cuts there come one after the other)
        roots = [v for v in values if isinstance(v, E.Lazy) and v.graph is self and v.value is None and not v.deferred]
        todo = self.pending(roots) if roots else []
        later = self.rotation(todo, roots)
        if later is not None:
            roots = [r for r in roots if r is not later]
            roots += [o for o in later.operands if o.value is None and not o.invariant and all(o is not r for r in roots)]
            todo = self.pending(roots)
        return roots, todo, later

    def sync(self, values, plan: tuple | None = None, loop: tuple | None = None) -> None:
        """Compute every lazy value among ``values`` (a host loop's
        iteration ends: the graph is cut here, one kernel for all) -- but
        the one ``rotated`` picks, left for the next iteration's kernel
        with its operands computed.  ``plan``: ``self.plan(values)`` if
        made already; ``loop``: the nests run as a host loop's iterations
        (``Kernel._run``)."""
        roots, todo, later = self.plan(values) if plan is None else plan
        if later is not None:
            later.deferred = True
        if todo:
            if loop is None:
                self._run(self, roots, todo)
            else:
                self._run(self, roots, todo, loop=loop)
        for v in values:
            if isinstance(v, E.Lazy) and v.graph is self and not isinstance(v, (E.Input, E.CSRInput)):
                v.carried = True  # what the loop's variables hold now changes from one iteration to the next


# ------------------------------------------------------ loop rotation


def rotated(todo: list, roots: list):
    """The root of a host loop's iteration to compute in the next
    iteration's kernel instead (the loop rotated by one product), or None.

    Sinkhorn's iteration reads K twice: ``w = K.T @ f(x)`` (a column sum:
    row i of K times f(x)[i]), then ``x = M @ v`` (row i of M = s[i] * K[i]
    dotted with v).  The next iteration's ``K.T @ f(x)`` takes x row by
    row, so computed in one kernel with the ``M @ v`` before it, row i's dot
    product and row i's update of w follow each other (``lt-merge
    {rename=true}``, as for logistic regression): one pass over K an
    iteration instead of two.  The root R left over is a matrix-vector
    product ``M @ v`` (M invariant, two-dimensional) that no other root
    needs, while this iteration's graph holds ``A.T @ y`` with A built from
    the same input as M and y element-wise in a value the loop carries --
    the next iteration's graph, made by the same code, will too.  Exactly
    one such root, else None."""
    found = []
    for r in roots:
        if not _row_product(r):
            continue
        m = r.operands[0]
        bases = _row_inputs(m, m.shape) if m.invariant else set()
        if not bases:
            continue
        if not any(
            isinstance(c, E.MatMul) and isinstance(c.operands[0], E.Transpose) and len(c.operands[1].shape) == 1
            and c.operands[0].operands[0].invariant and _row_inputs(c.operands[0].operands[0], m.shape) & bases
            and _elementwise_of_carried(c.operands[1])
            for c in todo if c is not r
        ):
            continue
        if any(_needs(o, r) for o in roots if o is not r):
            continue
        found.append(r)
    return found[0] if len(found) == 1 else None


def _row_product(n) -> bool:
    """Whether ``n`` is a matrix times a vector (``M @ v``)."""
    return isinstance(n, E.MatMul) and len(n.operands[0].shape) == 2 and len(n.operands[1].shape) == 1


def _row_inputs(n, shape) -> set:
    """ids of the argument arrays of ``shape`` that ``n`` is made from
    element by element (broadcast factors and views allowed)."""
    if isinstance(n, E.Input):
        return {id(n)} if n.shape == shape else set()
    if isinstance(n, (E.Map, E.Select, E.View)):
        out: set = set()
        for o in n.operands:
            out |= _row_inputs(o, shape)
        return out
    return set()


def _elementwise_of_carried(n) -> bool:
    """Whether ``n`` is a value a host loop carries, or element-wise ops on one."""
    if n.carried:
        return True
    return isinstance(n, (E.Map, E.Select, E.View)) and any(_elementwise_of_carried(o) for o in n.operands)


def _needs(n, target) -> bool:
    """Whether computing ``n`` needs ``target`` (through nodes without a value)."""
    stack, seen = [n], set()
    while stack:
        x = stack.pop()
        if x is target:
            return True
        if id(x) in seen or x.value is not None:
            continue
        seen.add(id(x))
        stack.extend(x.operands)
    return False
