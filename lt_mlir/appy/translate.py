"""One annotated loop nest of an APPy function -> an ``lt`` module.

The nest is a ``for`` statement (with its pragma) from the function's AST;
``translate(nest, values, ...)`` turns it into lt IR text for the values its
free names have at this call (the *signature*: arrays by shape and dtype,
ints that size loops by value, floats by type), and says which names are
kernel arguments (arrays, floats, and ints that size no loop).

What it translates (the Python subset of APPy's loop bodies):

* ``for v in range([start,] stop)`` with bounds from ints and shapes
  (``A.shape[0]``) -> ``lt.loop`` over dim ``v`` (``v`` itself is ``lt.dim
  v + start``); a bound affine in enclosing loop variables (a triangular
  loop, ``range(i + 1)``) -> a loop over every value it can take, its body
  under ``scf.if`` where this iteration is in range;
* ``A[i, j - 1] = expr``, ``A[i] += expr`` (``-=``, ``*=``; a reduction the
  dependence test understands: ``lt.reduce``), scalar locals ``s = 0.0`` /
  ``s += expr`` (one ``lt.alloc`` of no dims in the loop body: each
  iteration's own);
* expressions: numbers, loop variables, scalars (float arguments are
  runtime values, 0-d arrays), loads with affine indices, ``+ - * / //
  % **2``, unary ``-``, ``min``/``max``/``abs``, ``np.exp``/``log``/
  ``sqrt``/``tanh``/``erf`` (or ``math.``), conditional expressions
  ``a if c else b`` with comparisons; ``if``/``else`` statements
  (``scf.if``) on comparisons joined by ``and``/``or``.

Everything else raises ``AppyError`` located at the statement
(``file.py:line: ...``).  Arithmetic follows NumPy's rules: Python numbers
take the array's type, float32 with float64 is float64, ints with floats
are floats.
"""

from __future__ import annotations

import ast
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from ..builder import Builder, memref, memref_shape
from ..errors import LtError

FLOATS = ("f32", "f64")
INTS = ("i32", "i64")
_NP_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
_MATH = {"exp": "math.exp", "log": "math.log", "sqrt": "math.sqrt", "tanh": "math.tanh", "erf": "math.erf", "fabs": "math.absf"}
# arith's conversion between two element types (NumPy's casts)
_CONVERT = {
    ("f32", "f64"): "extf", ("f64", "f32"): "truncf",
    ("i32", "i64"): "extsi", ("i64", "i32"): "trunci",
    **{(i, f): "sitofp" for i in INTS for f in FLOATS},
    **{(f, i): "fptosi" for f in FLOATS for i in INTS},
}
_CMP = {ast.Lt: ("olt", "slt"), ast.LtE: ("ole", "sle"), ast.Gt: ("ogt", "sgt"), ast.GtE: ("oge", "sge"), ast.Eq: ("oeq", "eq"), ast.NotEq: ("une", "ne")}


class AppyError(LtError):
    """An APPy program lt_mlir cannot compile, located at the statement."""


OOB_FLAG = "appy_index_check"  # the kernel argument a clamped index reports through
OOB_SITES = 1 << 40  # a site k reports OOB_SITES - k

_NAMED_CONSTANTS = {"inf": float("inf"), "nan": float("nan"), "pi": 3.141592653589793, "e": 2.718281828459045}


def static_names(nest: ast.For) -> set:
    """The names whose int values size the nest's loops (``range``
    arguments, ``A.shape[k]``'s k): kernels are specialised on them.  Any
    other int (a time step indexing ``fict[t]``) is a run-time argument."""
    out = set()
    for n in ast.walk(nest):
        if isinstance(n, ast.For):
            out |= {m.id for m in ast.walk(n.iter) if isinstance(m, ast.Name)}
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape":
            out |= {m.id for m in ast.walk(n.slice) if isinstance(m, ast.Name)}
    return out


def element_type(dtype) -> str:
    t = _NP_TYPES.get(np.dtype(dtype))
    if t is None:
        raise AppyError(f"error: arrays of {np.dtype(dtype)} are not supported (float32, float64, int32, int64)")
    return t


@dataclass
class Value:
    ssa: object  # the builder's value (lt_mlir.builder.Value); for a Python float not yet typed ("float"), its repr
    type: str  # "index", "f32", "f64", "i32", "i64", "i1"
    weak: bool = False  # a Python number: takes the other operand's type


@dataclass
class _Scope:
    vars: dict = field(default_factory=dict)  # loop variable -> Value (index)
    scalars: dict = field(default_factory=dict)  # local name -> (ssa of its memref<T>, T)
    ranges: dict = field(default_factory=dict)  # loop variable -> (lowest, highest) value


class _NoElements(Exception):
    """An access to an array with no elements (reported, not emitted)."""


class Translator:
    """Builds the lt text of one nest (see the module docs) with
    lt_mlir.builder: statements and expressions become ops at the
    builder's insertion point, inside the loops and ``scf.if``s that
    enclose them."""

    def __init__(self, nest: ast.For, values: dict, filename: str, line_offset: int, name: str):
        self.nest, self.values, self.filename, self.offset = nest, values, filename, line_offset
        self.name = name
        self.b = Builder(float_format="e17", listener=self._taint)
        self.func = None  # the builder's function (translate)
        self.args: list[str] = []  # free names that are kernel arguments, in order
        self.arg_types: dict = {}
        self.arg_values: dict = {}  # argument name -> its value in the function
        self.loops: list = []  # (ast.For, dim) in pre-order: the L-numbers
        self.dynamic_loops: list = []  # loops with data-dependent bounds (scf.for, not lt loops)
        self.default_float = "f64"
        # values that depend on data (loads, data-dependent loop variables,
        # what is computed from them): an index computed from one is clamped into its array
        # and, where clamping changed it, reports the site (``checks``)
        self.tainted: set = set()
        self.checks: list = []  # the source text of each data-dependent index, by site number - 1
        self.in_range: dict = {}  # a data loop's variable -> E: its bounds were clamped into [0, E]
        self.static = static_names(nest)  # ints known when compiling; the others are arguments

    # ------------------------------------------------------------ helpers
    def where(self, node) -> str:
        return f"{self.filename}:{self.offset + getattr(node, 'lineno', 1) - 1}"

    def error(self, node, message: str) -> AppyError:
        return AppyError(f"{self.where(node)}: error: {message}")

    def fresh(self, prefix: str = "v") -> str:
        return self.b.fresh(prefix)

    def _taint(self, op) -> None:
        """The builder's listener: what a load or a tainted value computes is tainted."""
        if op.results and (op.name == "memref.load" or any(o in self.tainted for o in op.operands)):
            self.tainted.update(op.results)

    def constant(self, value, type_: str) -> Value:
        name = self.fresh("c")
        value = float(value) if type_ in FLOATS else int(value)
        return Value(self.b.constant(value, type_, name=name), type_)

    # ------------------------------------------------------------ entry
    def translate(self) -> str:
        floats = {element_type(v.dtype) for v in self.values.values() if isinstance(v, np.ndarray) and element_type(v.dtype) in FLOATS}
        self.default_float = "f32" if floats == {"f32"} else "f64"
        self.func = self.b.func(self.name)  # arguments are added as the nest uses them
        with self.func:
            self.loop(self.nest, _Scope())
        return self.b.text()

    def add_arg(self, name: str, type_: str):
        """Free variable ``name`` as the kernel's next argument, of ``type_``."""
        self.arg_types[name] = type_
        self.args.append(name)
        self.arg_values[name] = self.func.add_argument(name, type_)
        return self.arg_values[name]

    def arg(self, node, name: str):
        """The value of free variable ``name`` (an array) as a kernel argument."""
        if name not in self.arg_types:
            v = self.values[name]
            if isinstance(v, np.ndarray):
                self.add_arg(name, memref(v.shape, element_type(v.dtype)))
            else:
                raise self.error(node, f"'{name}' is a {type(v).__name__}, not an array")
        return self.arg_values[name]

    # ------------------------------------------------------------ statements
    def loop(self, node: ast.For, scope: _Scope) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "a loop variable must be a name")
        if node.orelse:
            raise self.error(node, "for ... else is not supported")
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range" and 1 <= len(call.args) <= 3 and not call.keywords):
            raise self.error(node, "loops must be 'for v in range(...)'")
        exprs = [ast.Constant(0), call.args[0]] if len(call.args) == 1 else list(call.args[:2])
        if len(call.args) == 3 and self.static_int(call.args[2], scope) != 1:
            raise self.error(node, f"range steps other than 1 are not supported yet (step {ast.unparse(call.args[2])})")
        # A bound may move with an enclosing loop's variable (a triangular
        # loop, range(i + 1)): the lt loop covers every value it can take
        # and the body runs under a guard where this iteration is in range.
        try:
            (start, _), (_, stop) = (self.bound_range(e, scope) for e in exprs)
        except AppyError:
            if all(self.static_or_data(e, scope) for e in exprs):
                self.data_loop(node, exprs, scope)
                return
            raise
        dynamic = [self.uses_loop_var(e, scope) for e in exprs]
        size = stop - start
        dim = node.target.id
        if size < 1:
            return  # no iterations: nothing to emit
        self.loops.append((node, dim))
        with self.b.loop(dim, size, 0, index=self.fresh("i")):
            inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
            d = self.b.dim(dim, name=self.fresh("d"))
            value = Value(d, "index")
            if start:
                c = self.b.constant(start, "index", name=self.fresh("c"))
                value = Value(self.b.binary("addi", d, c, name=self.fresh("v")), "index")
            inner.vars[dim] = value
            inner.ranges[dim] = (start, stop - 1)
            guard = None
            if any(dynamic):
                conds = []
                for e, is_dynamic, pred in zip(exprs, dynamic, ("sge", "slt")):
                    if is_dynamic:
                        bound = self.cast(self.expr(e, scope), "index")
                        conds.append(self.b.cmp(pred, value.ssa, bound.ssa, name=self.fresh()))
                cond = conds[0]
                if len(conds) == 2:
                    cond = self.b.binary("andi", conds[0], conds[1], name=self.fresh())
                guard = self.b.if_(cond)
            with guard or nullcontext():
                for stmt in node.body:
                    self.statement(stmt, inner)

    def static_or_data(self, node, scope: _Scope) -> bool:
        """Whether a bound can be computed at run time: numbers, loop
        variables, locals and array elements combined by arithmetic."""
        return all(
            isinstance(n, (ast.Constant, ast.Name, ast.Subscript, ast.BinOp, ast.Attribute, ast.Load, ast.Tuple, ast.UnaryOp))
            or isinstance(n, (ast.operator, ast.unaryop, ast.expr_context))
            for n in ast.walk(node)
        )

    def data_loop(self, node: ast.For, exprs: list, scope: _Scope) -> None:
        """``for j in range(a, b)`` with bounds known only at run time (CSR's
        ``range(indptr[i], indptr[i + 1])``): an ``scf.for`` inside the
        lt loops, not an lt loop: no lt pass reorders, splits or maps it
        (it runs sequentially in each iteration of the loops around it), and
        its variable is data (indices computed from it are checked)."""
        lo, hi = (self.expr(e, scope) for e in exprs)
        lo, hi = (v if v.type == "index" else self.to_index(v, node) for v in (lo, hi))
        extent, direct = self.direct_extent(node)
        if extent:
            # The arrays the body indexes by the variable itself (CSR's
            # A_data[j], A_indices[j]): the bounds are clamped into them once
            # here, reported if that changed a loop that runs, and those
            # accesses need no check an element.
            lo, hi = self.clamped_bounds(lo, hi, extent, direct, node)
        one = self.constant(1, "index")
        self.dynamic_loops.append(node)
        with self.b.for_(lo.ssa, hi.ssa, one.ssa, index=self.fresh("j")) as iv:
            self.tainted.add(iv)
            if extent:
                self.in_range[iv] = extent
            inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
            inner.vars[node.target.id] = Value(iv, "index")
            for stmt in node.body:
                self.statement(stmt, inner)

    def direct_extent(self, node: ast.For) -> tuple[int, list]:
        """(the smallest extent, the names) of the 1-D arrays the loop's
        body indexes by its variable alone (``a[j]``); (0, []) if none."""
        var = node.target.id
        extents = {}
        for n in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and isinstance(n.slice, ast.Name) and n.slice.id == var:
                v = self.values.get(n.value.id)
                if isinstance(v, np.ndarray) and v.ndim == 1 and v.size:
                    extents[n.value.id] = int(v.shape[0])
        return min(extents.values(), default=0), sorted(extents)

    def clamped_bounds(self, lo: Value, hi: Value, extent: int, names: list, node: ast.For) -> tuple:
        """``(max(lo, 0), min(hi, extent))``; a loop that runs (lo < hi)
        with bounds outside ``[0, extent]`` reports the site."""
        zero, top = self.constant(0, "index"), self.constant(extent, "index")
        low, high, runs, below, above, outside, bad = (self.fresh() for _ in range(7))
        b = self.b
        low = b.binary("maxsi", lo.ssa, zero.ssa, name=low)
        high = b.binary("minsi", hi.ssa, top.ssa, name=high)
        runs = b.cmp("slt", lo.ssa, hi.ssa, name=runs)
        below = b.cmp("ne", low, lo.ssa, name=below)
        above = b.cmp("ne", high, hi.ssa, name=above)
        outside = b.binary("ori", below, above, name=outside)
        with b.if_(b.binary("andi", runs, outside, name=bad)):
            self.report(node.iter, f"the loop's bounds, from the data, run outside {', '.join(names)}, which it indexes by '{node.target.id}'")
        return Value(low, "index"), Value(high, "index")

    def uses_loop_var(self, node, scope: _Scope) -> bool:
        return any(isinstance(n, ast.Name) and n.id in scope.vars for n in ast.walk(node))

    def bound_range(self, node, scope: _Scope) -> tuple:
        """(lowest, highest) value of a loop bound: ints, shapes, and
        enclosing loop variables over their ranges, combined by + - *."""
        if isinstance(node, ast.Name) and node.id in scope.ranges:
            return scope.ranges[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult) and self.uses_loop_var(node, scope):
            a, b = self.bound_range(node.left, scope), self.bound_range(node.right, scope)
            if isinstance(node.op, ast.Add):
                return (a[0] + b[0], a[1] + b[1])
            if isinstance(node.op, ast.Sub):
                return (a[0] - b[1], a[1] - b[0])
            products = [x * y for x in a for y in b]
            return (min(products), max(products))
        if self.uses_loop_var(node, scope):
            raise self.error(node, f"loop bound '{ast.unparse(node)}' is not affine in the enclosing loop variables")
        v = self.static_int(node, scope)
        return (v, v)

    def statement(self, node, scope: _Scope) -> None:
        if isinstance(node, ast.For):
            self.loop(node, scope)
        elif isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.error(node, "one target an assignment")
            self.assign(node.targets[0], node.value, scope, node)
        elif isinstance(node, ast.AugAssign):
            self.augassign(node, scope)
        elif isinstance(node, ast.If):
            self.branch(node, scope)
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            pass  # a docstring or a bare constant
        else:
            raise self.error(node, f"{type(node).__name__} statements are not supported in an annotated loop")

    def branch(self, node: ast.If, scope: _Scope) -> None:
        """``if c: ... else: ...`` -> ``scf.if`` (locals first assigned in
        a branch stay in it; assign them before the ``if`` to use them
        after it)."""
        cond = self.compare(node.test, scope)
        op = self.b.if_(cond.ssa, has_else=bool(node.orelse))
        with op:
            inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
            for stmt in node.body:
                self.statement(stmt, inner)
        if node.orelse:
            with self.b.at_end(op.else_block):
                inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
                for stmt in node.orelse:
                    self.statement(stmt, inner)

    def assign(self, target, value_node, scope: _Scope, node) -> None:
        kind, other = self.reduction_form(target, value_node, scope)
        if kind is not None:  # s = max(s, e), s = s + e, A[i] = min(A[i], e): an lt.reduce
            self.reduce(kind, target, self.expr(other, scope), scope, node)
            return
        if isinstance(target, ast.Tuple):
            if not isinstance(value_node, ast.Tuple) or len(value_node.elts) != len(target.elts):
                raise self.error(node, "a tuple assignment needs a tuple of as many values")
            values = [self.expr(v, scope) for v in value_node.elts]  # all read before any is written
            for t, v in zip(target.elts, values):
                self.store(t, v, scope, node)
            return
        self.store(target, self.expr(value_node, scope), scope, node)

    def store(self, target, value: Value, scope: _Scope, node) -> None:
        if isinstance(target, ast.Subscript):
            try:
                buf, idx, t = self.subscript(target, scope)
            except _NoElements:
                return
            v = self.cast(value, t)
            self.b.store(v.ssa, buf, idx)
        elif isinstance(target, ast.Name):
            name = target.id
            if name in scope.vars:
                raise self.error(node, f"cannot assign to loop variable '{name}'")
            if name not in scope.scalars:
                t = value.type if not value.weak else (self.default_float if value.type in FLOATS + ("float",) else "i64")
                if t == "index":
                    t = "i64"
                buf = self.b.alloc([], memref([], t), name=self.fresh("s"))
                scope.scalars[name] = (buf, t)
            buf, t = scope.scalars[name]
            v = self.cast(value, t)
            self.b.store(v.ssa, buf, [])
        else:
            raise self.error(node, f"cannot assign to {type(target).__name__}")

    def reduction_form(self, target, value_node, scope: _Scope):
        """(kind, the other operand) when ``target = value`` updates
        ``target`` by a reduction of it: ``max(t, e)``, ``min(e, t)``,
        ``t + e``, ``e * t``; else (None, None)."""
        if not (isinstance(target, ast.Subscript) or (isinstance(target, ast.Name) and target.id in scope.scalars)):
            return None, None
        same = ast.dump(target, annotate_fields=False).replace("Store()", "Load()")

        def is_target(n) -> bool:
            return ast.dump(n, annotate_fields=False) == same

        v = value_node
        if isinstance(v, ast.Call) and isinstance(v.func, (ast.Name, ast.Attribute)) and len(v.args) == 2 and not v.keywords:
            name = v.func.id if isinstance(v.func, ast.Name) else v.func.attr
            kind = {"max": "max", "maximum": "max", "fmax": "max", "min": "min", "minimum": "min", "fmin": "min"}.get(name)
            if kind:
                if is_target(v.args[0]) and not any(is_target(n) for n in ast.walk(v.args[1])):
                    return kind, v.args[1]
                if is_target(v.args[1]) and not any(is_target(n) for n in ast.walk(v.args[0])):
                    return kind, v.args[0]
        if isinstance(v, ast.BinOp) and type(v.op) in (ast.Add, ast.Mult):
            kind = "add" if isinstance(v.op, ast.Add) else "mul"
            if is_target(v.left) and not any(is_target(n) for n in ast.walk(v.right)):
                return kind, v.right
            if is_target(v.right) and not any(is_target(n) for n in ast.walk(v.left)):
                return kind, v.left
        return None, None

    def augassign(self, node: ast.AugAssign, scope: _Scope) -> None:
        kind = {ast.Add: "add", ast.Sub: "add", ast.Mult: "mul"}.get(type(node.op))
        if kind is None:
            raise self.error(node, f"'{type(node.op).__name__}=' is not supported (+=, -=, *=)")
        value = self.expr(node.value, scope)
        if isinstance(node.op, ast.Sub):
            value = self.negate(value)
        self.reduce(kind, node.target, value, scope, node)

    def reduce(self, kind: str, target, value: Value, scope: _Scope, node) -> None:
        """``target <kind>= value`` as an ``lt.reduce``."""
        if isinstance(target, ast.Subscript):
            try:
                buf, idx, t = self.subscript(target, scope)
            except _NoElements:
                return
        elif isinstance(target, ast.Name) and target.id in scope.scalars:
            buf, t = scope.scalars[target.id]
            idx = []
        else:
            raise self.error(node, f"'{ast.unparse(target)}' must be an array element or a local scalar assigned before")
        v = self.cast(value, t)
        self.b.reduce(kind, v.ssa, buf, idx)

    # ------------------------------------------------------------ expressions
    def static_int(self, node, scope: _Scope) -> int:
        """An int known when the kernel is specialised: constants, int
        arguments, ``A.shape[k]``, ``len(A)`` and arithmetic on them."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in scope.vars:
                raise self.error(node, f"'{node.id}' varies with the loop; a value known when compiling is needed here")
            v = self.values.get(node.id)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                return int(v)
            raise self.error(node, f"loop bound '{node.id}' is not an int")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            arr = node.value.value
            if isinstance(arr, ast.Name) and isinstance(self.values.get(arr.id), np.ndarray):
                k = self.static_int(node.slice, scope)
                return int(self.values[arr.id].shape[k])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
            a = node.args[0]
            if isinstance(a, ast.Name) and isinstance(self.values.get(a.id), np.ndarray):
                return int(self.values[a.id].shape[0])
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv):
            a, b = self.static_int(node.left, scope), self.static_int(node.right, scope)
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.FloorDiv: a // b if b else 0}[type(node.op)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.static_int(node.operand, scope)
        raise self.error(node, f"cannot tell '{ast.unparse(node)}' when compiling (loop bounds: ints, shapes, len)")

    def subscript(self, node: ast.Subscript, scope: _Scope):
        if not isinstance(node.value, ast.Name):
            raise self.error(node, "only arrays named by a variable can be indexed")
        buf = self.arg(node, node.value.id)
        arr = self.values[node.value.id]
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) != arr.ndim:
            raise self.error(node, f"'{node.value.id}' has {arr.ndim} dims, indexed with {len(items)}")
        if arr.size == 0:
            # an array with no elements (an empty CSR matrix's data): no access
            # can be in it; one that runs at all is reported like a bad index
            self.report(node)
            raise _NoElements()
        idx = []
        for item in items:
            if isinstance(item, ast.Slice):
                raise self.error(node, "slices inside annotated loops are not supported yet")
            v = self.expr(item, scope)
            if v.type != "index":
                v = self.to_index(v, item)
            extent = int(arr.shape[len(idx)])
            if v.ssa in self.tainted and not (arr.ndim == 1 and self.in_range.get(v.ssa, extent + 1) <= extent):
                v = self.checked(v, extent, node)
            idx.append(v.ssa)
        return buf, idx, element_type(arr.dtype)

    def report(self, node, what: str = "an index computed from the data is outside its array") -> None:
        """Flag a new check site at ``node`` (where this code runs): the
        flag keeps the largest code, and sites earlier in the program get
        larger codes, so the first site that went wrong is the one reported
        (``checks``: its message)."""
        self.checks.append(
            f"{self.where(node)}: '{ast.unparse(node)}': error: {what} "
            "(this and any other such access read or wrote the nearest element instead)"
        )
        if OOB_FLAG not in self.arg_types:
            self.add_arg(OOB_FLAG, memref([1], "i64"))
        code, first = self.constant(OOB_SITES - len(self.checks), "i64"), self.constant(0, "index")
        self.b.reduce("max", code.ssa, self.arg_values[OOB_FLAG], [first.ssa])

    def checked(self, v: Value, extent: int, node) -> Value:
        """Index ``v``, computed from data, clamped into ``[0, extent)``
        (so the access stays in the array whatever the data hold: the
        kernel's bounds are proven statically); where clamping changed it,
        the site's number goes to the check flag (a max-reduction, which
        parallel iterations may share) and the call reports it, located."""
        zero, top = self.constant(0, "index"), self.constant(max(extent - 1, 0), "index")
        low, out, bad = self.fresh(), self.fresh(), self.fresh()
        low = self.b.binary("maxsi", v.ssa, zero.ssa, name=low)
        out = self.b.binary("minsi", low, top.ssa, name=out)
        with self.b.if_(self.b.cmp("ne", out, v.ssa, name=bad)):
            self.report(node)
        self.tainted.discard(out)  # proven in range: what it indexes is data again only through the load
        return Value(out, "index")

    def to_index(self, v: Value, node) -> Value:
        if v.type not in INTS:
            raise self.error(node, "an index must be an integer")
        return Value(self.b.cast("index_cast", v.ssa, "index", name=self.fresh()), "index")

    def expr(self, node, scope: _Scope) -> Value:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise self.error(node, f"constant {node.value!r} is not a number")
            if isinstance(node.value, int):
                return Value(self.b.constant(node.value, "index", name=self.fresh("c")), "index", weak=True)
            return Value(repr(float(node.value)), "float", weak=True)  # materialised once its type is known
        if isinstance(node, ast.Name):
            return self.load_name(node, scope)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy", "math"):
            value = _NAMED_CONSTANTS.get(node.attr)
            if value is None:
                raise self.error(node, f"{node.value.id}.{node.attr} is not a number lt_mlir.appy knows (inf, nan, pi, e)")
            return Value(repr(value), "float", weak=True)
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                return self.constant(self.static_int(node, scope), "index")
            try:
                buf, idx, t = self.subscript(node, scope)
            except _NoElements:
                return self.constant(0, element_type(self.values[node.value.id].dtype))
            return Value(self.b.load(buf, idx, name=self.fresh()), t)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr))):
            return self.compare(node, scope)  # a condition as a value (i1): mask = (a <= x) & (x < b)
        if isinstance(node, ast.BinOp):
            return self.binop(node, scope)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return self.negate(self.expr(node.operand, scope))
            if isinstance(node.op, ast.UAdd):
                return self.expr(node.operand, scope)
            raise self.error(node, f"unary {type(node.op).__name__} is not supported")
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, ast.IfExp):
            cond = self.compare(node.test, scope)
            a, b = self.expr(node.body, scope), self.expr(node.orelse, scope)
            a, b = self.unify(a, b)
            return Value(self.b.select(cond.ssa, a.ssa, b.ssa, name=self.fresh()), a.type)
        raise self.error(node, f"{type(node).__name__} expressions are not supported in an annotated loop")

    def load_name(self, node: ast.Name, scope: _Scope) -> Value:
        n = node.id
        if n in scope.vars:
            return scope.vars[n]
        if n in scope.scalars:
            buf, t = scope.scalars[n]
            return Value(self.b.load(buf, [], name=self.fresh()), t)
        if n not in self.values:
            raise self.error(node, f"name '{n}' is not defined")
        v = self.values[n]
        if isinstance(v, (bool, np.bool_)):
            raise self.error(node, f"'{n}' is a bool")
        if isinstance(v, (int, np.integer)) and n in self.static:
            return self.constant(int(v), "index")
        if isinstance(v, (int, np.integer)):
            # an int that sizes no loop: a run-time value (a 0-d i64 array;
            # a new value needs no new compile), checked where it indexes
            if n not in self.arg_types:
                self.add_arg(n, memref([], "i64"))
            raw, out = self.fresh(), self.fresh()
            raw = self.b.load(self.arg_values[n], [], name=raw)
            out = self.b.cast("index_cast", raw, "index", name=out)
            self.tainted.add(out)
            return Value(out, "index")
        if isinstance(v, (float, np.floating)):
            # a runtime value: a 0-d array argument (new values need no new compile)
            if n not in self.arg_types:
                self.add_arg(n, memref([], "f32" if isinstance(v, np.float32) else "f64"))
            t = memref_shape(self.arg_types[n])[1]
            return Value(self.b.load(self.arg_values[n], [], name=self.fresh()), t, weak=not isinstance(v, np.floating))
        if isinstance(v, np.ndarray):
            raise self.error(node, f"array '{n}' used as a number: index it")
        raise self.error(node, f"'{n}' is a {type(v).__name__}: annotated loops use numbers and NumPy arrays")

    def materialise(self, v: Value, t: str) -> Value:
        if v.type == "float":
            return self.constant(float(v.ssa), t)
        return v

    def cast(self, v: Value, t: str) -> Value:
        """``v`` converted to type ``t`` (NumPy's conversions on store)."""
        if v.type == "float":
            if t not in FLOATS:
                raise AppyError(f"error: a float stored into an {t} location")
            return self.constant(float(v.ssa), t)
        if v.type == t:
            return v
        out = self.fresh()
        source = v
        if v.type == "index":
            if t in INTS:
                return Value(self.b.cast("index_cast", v.ssa, t, name=out), t)
            source = Value(self.b.cast("index_cast", v.ssa, "i64", name=self.fresh()), "i64")
        op = _CONVERT.get((source.type, t))
        if op is not None:
            return Value(self.b.cast(op, source.ssa, t, name=out), t)
        raise AppyError(f"error: cannot convert {v.type} to {t}")

    def unify(self, a: Value, b: Value) -> tuple:
        """Both operands in one type (NumPy's promotion; numbers are weak)."""
        def rank(v: Value):
            return {"index": 0, "i32": 1, "i64": 2, "float": 3, "f32": 4, "f64": 5}[v.type]

        if a.type == b.type and a.type != "float":
            return a, b
        if a.type == "float" and b.type == "float":
            t = self.default_float
        elif a.weak and not b.weak and b.type != "index":
            t = b.type if b.type in FLOATS or a.type not in ("float",) else self.default_float
            if a.type == "float" and b.type in INTS:
                t = self.default_float
        elif b.weak and not a.weak and a.type != "index":
            t = a.type if a.type in FLOATS or b.type not in ("float",) else self.default_float
            if b.type == "float" and a.type in INTS:
                t = self.default_float
        else:
            top = max(a, b, key=rank)
            t = top.type if top.type != "float" else self.default_float
        if t == "index" and (a.type != "index" or b.type != "index"):
            t = "i64"
        return self.cast(a, t), self.cast(b, t)

    def negate(self, v: Value) -> Value:
        if v.type == "float":
            return Value(repr(-float(v.ssa)), "float", weak=True)
        out = self.fresh()
        if v.type in FLOATS:
            out = self.b.unary("negf", v.ssa, name=out)
        else:
            zero = self.constant(0, v.type)
            out = self.b.binary("subi", zero.ssa, v.ssa, name=out)
        return Value(out, v.type, v.weak)

    def binop(self, node: ast.BinOp, scope: _Scope) -> Value:
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2:
            a = self.expr(node.left, scope)
            a, b = self.unify(a, a)
            return self.arith("mul", a, b)
        a, b = self.expr(node.left, scope), self.expr(node.right, scope)
        op = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv", ast.Mod: "rem"}.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported")
        if op == "div" and a.type in ("index", "i32", "i64") and b.type in ("index", "i32", "i64"):
            a, b = self.cast(a, self.default_float), self.cast(b, self.default_float)  # true division
        a, b = self.unify(a, b)
        return self.arith(op, a, b)

    def arith(self, op: str, a: Value, b: Value) -> Value:
        t = a.type
        out = self.fresh()
        if t in FLOATS:
            name = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf", "rem": "remf"}.get(op)
            if name is None:
                raise AppyError(f"error: '{op}' of floats is not supported")
        else:
            name = {"add": "addi", "sub": "subi", "mul": "muli", "div": "divsi", "floordiv": "floordivsi", "rem": "remsi"}[op]
        return Value(self.b.binary(name, a.ssa, b.ssa, name=out), t, a.weak and b.weak)

    def compare(self, node, scope: _Scope) -> Value:
        if isinstance(node, ast.BoolOp):
            values = [self.compare(v, scope) for v in node.values]
            op = "andi" if isinstance(node.op, ast.And) else "ori"
            out = values[0]
            for v in values[1:]:
                out = Value(self.b.binary(op, out.ssa, v.ssa, name=self.fresh()), "i1")
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            # NumPy's elementwise ``(a < b) & (c < d)`` on one element: and/or
            a, b = self.compare(node.left, scope), self.compare(node.right, scope)
            return Value(self.b.binary("andi" if isinstance(node.op, ast.BitAnd) else "ori", a.ssa, b.ssa, name=self.fresh()), "i1")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.compare(node.operand, scope)
            true, out = self.fresh("c"), self.fresh()
            true = self.b.constant(True, "i1", name=true)
            return Value(self.b.binary("xori", v.ssa, true, name=out), "i1")
        if not isinstance(node, ast.Compare):
            v = self.expr(node, scope)  # a condition held in a local: mask = a < b
            if v.type == "i1":
                return v
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP):
            raise self.error(node, "conditions must be comparisons (a < b), joined by and/or (& and | too), or locals holding one")
        a, b = self.unify(self.expr(node.left, scope), self.expr(node.comparators[0], scope))
        fpred, ipred = _CMP[type(node.ops[0])]
        return Value(self.b.cmp(fpred if a.type in FLOATS else ipred, a.ssa, b.ssa, name=self.fresh()), "i1")

    def call(self, node: ast.Call, scope: _Scope) -> Value:
        f = node.func
        name = None
        if isinstance(f, ast.Name):
            name = f.id
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy", "math"):
            name = f.attr
        if name is None or node.keywords:
            raise self.error(node, f"call of '{ast.unparse(f)}' is not supported")
        if name == "float" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            try:
                return Value(repr(float(node.args[0].value)), "float", weak=True)
            except (TypeError, ValueError):
                raise self.error(node, f"float({node.args[0].value!r}) is not a number") from None
        args = [self.expr(a, scope) for a in node.args]
        if name in ("min", "max", "minimum", "maximum", "fmin", "fmax") and len(args) == 2:
            a, b = self.unify(args[0], args[1])
            out = self.fresh()
            is_max = "max" in name
            if a.type in FLOATS:
                op = "maximumf" if is_max else "minimumf"
            else:
                op = "maxsi" if is_max else "minsi"
            return Value(self.b.binary(op, a.ssa, b.ssa, name=out), a.type, a.weak and b.weak)
        if name in ("abs", "fabs", "absolute") and len(args) == 1:
            a = args[0]
            if a.type in FLOATS or a.type == "float":
                a = self.materialise(a, self.default_float)
                return Value(self.b.unary("math.absf", a.ssa, name=self.fresh()), a.type)
            a = self.cast(a, "i64") if a.type == "index" else a
            return Value(self.b.unary("math.absi", a.ssa, name=self.fresh()), a.type)
        if name in _MATH and len(args) == 1:
            a = args[0]
            t = a.type if a.type in FLOATS else self.default_float
            a = self.cast(a, t)
            return Value(self.b.unary(_MATH[name], a.ssa, name=self.fresh()), t)
        raise self.error(node, f"call of '{ast.unparse(f)}' with {len(args)} arguments is not supported")
