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
import re
from dataclasses import dataclass, field

import numpy as np

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


_DEFINES = re.compile(r"\s*(%[\w.]+)\s*=\s*(.*)")
_SSA = re.compile(r"%[\w.]+")
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
    ssa: str
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
    """Builds the lt text of one nest (see the module docs)."""

    def __init__(self, nest: ast.For, values: dict, filename: str, line_offset: int, name: str):
        self.nest, self.values, self.filename, self.offset = nest, values, filename, line_offset
        self.name = name
        self.lines: list[str] = []
        self.counter = 0
        self.args: list[str] = []  # free names that are kernel arguments, in order
        self.arg_types: dict = {}
        self.loops: list = []  # (ast.For, dim) in pre-order: the L-numbers
        self.dynamic_loops: list = []  # loops with data-dependent bounds (scf.for, not lt loops)
        self.default_float = "f64"
        # SSA names whose value depends on data (loads, data-dependent loop
        # variables): an index computed from one is clamped into its array
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
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * (depth + 1) + text)
        m = _DEFINES.match(text)
        if m and ("memref.load" in m.group(2) or any(t in self.tainted for t in _SSA.findall(m.group(2)))):
            self.tainted.add(m.group(1))

    def constant(self, depth: int, value, type_: str) -> Value:
        name = self.fresh("c")
        if type_ in FLOATS:
            value = float(value)
            if value != value or value in (float("inf"), float("-inf")):
                bits = {"f32": {1: "0x7F800000", -1: "0xFF800000", 0: "0x7FC00000"}, "f64": {1: "0x7FF0000000000000", -1: "0xFFF0000000000000", 0: "0x7FF8000000000000"}}
                text = bits[type_][0 if value != value else (1 if value > 0 else -1)]
            else:
                text = f"{value:.17e}"
            self.emit(depth, f"{name} = arith.constant {text} : {type_}")
        else:
            self.emit(depth, f"{name} = arith.constant {int(value)} : {type_}")
        return Value(name, type_)

    # ------------------------------------------------------------ entry
    def translate(self) -> str:
        floats = {element_type(v.dtype) for v in self.values.values() if isinstance(v, np.ndarray) and element_type(v.dtype) in FLOATS}
        self.default_float = "f32" if floats == {"f32"} else "f64"
        body_lines = self.lines
        self.loop(self.nest, 0, _Scope())
        params = []
        for n in self.args:
            params.append(f"%{n}: {self.arg_types[n]} {{lt.name = \"{n}\"}}")
        head = f"func.func @{self.name}({', '.join(params)}) {{"
        return "\n".join([head, *body_lines, "  return", "}"]) + "\n"

    def arg(self, node, name: str) -> str:
        """The SSA name of free variable ``name`` as a kernel argument."""
        if name not in self.arg_types:
            v = self.values[name]
            if isinstance(v, np.ndarray):
                et = element_type(v.dtype)
                shape = "x".join(str(s) for s in v.shape)
                self.arg_types[name] = f"memref<{shape + 'x' if shape else ''}{et}>"
            else:
                raise self.error(node, f"'{name}' is a {type(v).__name__}, not an array")
            self.args.append(name)
        return f"%{name}"

    # ------------------------------------------------------------ statements
    def loop(self, node: ast.For, depth: int, scope: _Scope) -> None:
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
                self.data_loop(node, exprs, depth, scope)
                return
            raise
        dynamic = [self.uses_loop_var(e, scope) for e in exprs]
        size = stop - start
        dim = node.target.id
        if size < 1:
            return  # no iterations: nothing to emit
        self.loops.append((node, dim))
        block = self.fresh("i")
        self.emit(depth, '"lt.loop"() ({')
        self.emit(depth, f"^bb0({block}: index):")
        inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
        d = self.fresh("d")
        self.emit(depth + 1, f'{d} = "lt.dim"() {{dim = "{dim}"}} : () -> index')
        value = Value(d, "index")
        if start:
            c = self.fresh("c")
            self.emit(depth + 1, f"{c} = arith.constant {start} : index")
            v = self.fresh("v")
            self.emit(depth + 1, f"{v} = arith.addi {d}, {c} : index")
            value = Value(v, "index")
        inner.vars[dim] = value
        inner.ranges[dim] = (start, stop - 1)
        body_depth = depth + 1
        if any(dynamic):
            conds = []
            for e, is_dynamic, pred in zip(exprs, dynamic, ("sge", "slt")):
                if is_dynamic:
                    bound = self.cast(self.expr(e, depth + 1, scope), "index", depth + 1)
                    c = self.fresh()
                    self.emit(depth + 1, f"{c} = arith.cmpi {pred}, {value.ssa}, {bound.ssa} : index")
                    conds.append(c)
            cond = conds[0]
            if len(conds) == 2:
                cond = self.fresh()
                self.emit(depth + 1, f"{cond} = arith.andi {conds[0]}, {conds[1]} : i1")
            self.emit(depth + 1, f"scf.if {cond} {{")
            body_depth = depth + 2
        for stmt in node.body:
            self.statement(stmt, body_depth, inner)
        if any(dynamic):
            self.emit(depth + 1, "}")
        self.emit(depth, f'}}) {{dim = "{dim}", size = {size} : i64, tail = 0 : i64}} : () -> ()')

    def static_or_data(self, node, scope: _Scope) -> bool:
        """Whether a bound can be computed at run time: numbers, loop
        variables, locals and array elements combined by arithmetic."""
        return all(
            isinstance(n, (ast.Constant, ast.Name, ast.Subscript, ast.BinOp, ast.Attribute, ast.Load, ast.Tuple, ast.UnaryOp))
            or isinstance(n, (ast.operator, ast.unaryop, ast.expr_context))
            for n in ast.walk(node)
        )

    def data_loop(self, node: ast.For, exprs: list, depth: int, scope: _Scope) -> None:
        """``for j in range(a, b)`` with bounds known only at run time (CSR's
        ``range(indptr[i], indptr[i + 1])``): an ``scf.for`` inside the
        lt loops, not an lt loop: no lt pass reorders, splits or maps it
        (it runs sequentially in each iteration of the loops around it), and
        its variable is data (indices computed from it are checked)."""
        lo, hi = (self.expr(e, depth, scope) for e in exprs)
        lo, hi = (v if v.type == "index" else self.to_index(v, depth, node) for v in (lo, hi))
        extent, direct = self.direct_extent(node)
        if extent:
            # The arrays the body indexes by the variable itself (CSR's
            # A_data[j], A_indices[j]): the bounds are clamped into them once
            # here, reported if that changed a loop that runs, and those
            # accesses need no check an element.
            lo, hi = self.clamped_bounds(lo, hi, extent, direct, node, depth)
        one = self.constant(depth, 1, "index")
        iv = self.fresh("j")
        self.tainted.add(iv)
        if extent:
            self.in_range[iv] = extent
        self.dynamic_loops.append(node)
        self.emit(depth, f"scf.for {iv} = {lo.ssa} to {hi.ssa} step {one.ssa} {{")
        inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
        inner.vars[node.target.id] = Value(iv, "index")
        for stmt in node.body:
            self.statement(stmt, depth + 1, inner)
        self.emit(depth, "}")

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

    def clamped_bounds(self, lo: Value, hi: Value, extent: int, names: list, node: ast.For, depth: int) -> tuple:
        """``(max(lo, 0), min(hi, extent))``; a loop that runs (lo < hi)
        with bounds outside ``[0, extent]`` reports the site."""
        zero, top = self.constant(depth, 0, "index"), self.constant(depth, extent, "index")
        low, high, runs, below, above, outside, bad = (self.fresh() for _ in range(7))
        self.emit(depth, f"{low} = arith.maxsi {lo.ssa}, {zero.ssa} : index")
        self.emit(depth, f"{high} = arith.minsi {hi.ssa}, {top.ssa} : index")
        self.emit(depth, f"{runs} = arith.cmpi slt, {lo.ssa}, {hi.ssa} : index")
        self.emit(depth, f"{below} = arith.cmpi ne, {low}, {lo.ssa} : index")
        self.emit(depth, f"{above} = arith.cmpi ne, {high}, {hi.ssa} : index")
        self.emit(depth, f"{outside} = arith.ori {below}, {above} : i1")
        self.emit(depth, f"{bad} = arith.andi {runs}, {outside} : i1")
        self.emit(depth, f"scf.if {bad} {{")
        self.report(node.iter, depth + 1, f"the loop's bounds, from the data, run outside {', '.join(names)}, which it indexes by '{node.target.id}'")
        self.emit(depth, "}")
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

    def statement(self, node, depth: int, scope: _Scope) -> None:
        if isinstance(node, ast.For):
            self.loop(node, depth, scope)
        elif isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.error(node, "one target an assignment")
            self.assign(node.targets[0], node.value, depth, scope, node)
        elif isinstance(node, ast.AugAssign):
            self.augassign(node, depth, scope)
        elif isinstance(node, ast.If):
            self.branch(node, depth, scope)
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            pass  # a docstring or a bare constant
        else:
            raise self.error(node, f"{type(node).__name__} statements are not supported in an annotated loop")

    def branch(self, node: ast.If, depth: int, scope: _Scope) -> None:
        """``if c: ... else: ...`` -> ``scf.if`` (locals first assigned in
        a branch stay in it; assign them before the ``if`` to use them
        after it)."""
        cond = self.compare(node.test, depth, scope)
        self.emit(depth, f"scf.if {cond.ssa} {{")
        inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
        for stmt in node.body:
            self.statement(stmt, depth + 1, inner)
        if node.orelse:
            self.emit(depth, "} else {")
            inner = _Scope(dict(scope.vars), dict(scope.scalars), dict(scope.ranges))
            for stmt in node.orelse:
                self.statement(stmt, depth + 1, inner)
        self.emit(depth, "}")

    def assign(self, target, value_node, depth: int, scope: _Scope, node) -> None:
        kind, other = self.reduction_form(target, value_node, scope)
        if kind is not None:  # s = max(s, e), s = s + e, A[i] = min(A[i], e): an lt.reduce
            self.reduce(kind, target, self.expr(other, depth, scope), depth, scope, node)
            return
        if isinstance(target, ast.Tuple):
            if not isinstance(value_node, ast.Tuple) or len(value_node.elts) != len(target.elts):
                raise self.error(node, "a tuple assignment needs a tuple of as many values")
            values = [self.expr(v, depth, scope) for v in value_node.elts]  # all read before any is written
            for t, v in zip(target.elts, values):
                self.store(t, v, depth, scope, node)
            return
        self.store(target, self.expr(value_node, depth, scope), depth, scope, node)

    def store(self, target, value: Value, depth: int, scope: _Scope, node) -> None:
        if isinstance(target, ast.Subscript):
            try:
                buf, idx, t = self.subscript(target, depth, scope)
            except _NoElements:
                return
            v = self.cast(value, t, depth)
            self.emit(depth, f"memref.store {v.ssa}, {buf}[{', '.join(idx)}] : {self.arg_types[target.value.id]}")
        elif isinstance(target, ast.Name):
            name = target.id
            if name in scope.vars:
                raise self.error(node, f"cannot assign to loop variable '{name}'")
            if name not in scope.scalars:
                t = value.type if not value.weak else (self.default_float if value.type in FLOATS + ("float",) else "i64")
                if t == "index":
                    t = "i64"
                buf = self.fresh("s")
                self.emit(depth, f'{buf} = "lt.alloc"() {{dims = []}} : () -> memref<{t}>')
                scope.scalars[name] = (buf, t)
            buf, t = scope.scalars[name]
            v = self.cast(value, t, depth)
            self.emit(depth, f"memref.store {v.ssa}, {buf}[] : memref<{t}>")
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

    def augassign(self, node: ast.AugAssign, depth: int, scope: _Scope) -> None:
        kind = {ast.Add: "add", ast.Sub: "add", ast.Mult: "mul"}.get(type(node.op))
        if kind is None:
            raise self.error(node, f"'{type(node.op).__name__}=' is not supported (+=, -=, *=)")
        value = self.expr(node.value, depth, scope)
        if isinstance(node.op, ast.Sub):
            value = self.negate(value, depth)
        self.reduce(kind, node.target, value, depth, scope, node)

    def reduce(self, kind: str, target, value: Value, depth: int, scope: _Scope, node) -> None:
        """``target <kind>= value`` as an ``lt.reduce``."""
        if isinstance(target, ast.Subscript):
            try:
                buf, idx, t = self.subscript(target, depth, scope)
            except _NoElements:
                return
            mtype = self.arg_types[target.value.id]
        elif isinstance(target, ast.Name) and target.id in scope.scalars:
            buf, t = scope.scalars[target.id]
            idx, mtype = [], f"memref<{t}>"
        else:
            raise self.error(node, f"'{ast.unparse(target)}' must be an array element or a local scalar assigned before")
        v = self.cast(value, t, depth)
        operands = ", ".join([v.ssa, buf, *idx])
        types = ", ".join([t, mtype] + ["index"] * len(idx))
        self.emit(depth, f'"lt.reduce"({operands}) {{kind = "{kind}"}} : ({types}) -> ()')

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

    def subscript(self, node: ast.Subscript, depth: int, scope: _Scope):
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
            self.report(node, depth)
            raise _NoElements()
        idx = []
        for item in items:
            if isinstance(item, ast.Slice):
                raise self.error(node, "slices inside annotated loops are not supported yet")
            v = self.expr(item, depth, scope)
            if v.type != "index":
                v = self.to_index(v, depth, item)
            extent = int(arr.shape[len(idx)])
            if v.ssa in self.tainted and not (arr.ndim == 1 and self.in_range.get(v.ssa, extent + 1) <= extent):
                v = self.checked(v, extent, node, depth)
            idx.append(v.ssa)
        return buf, idx, element_type(arr.dtype)

    def report(self, node, depth: int, what: str = "an index computed from the data is outside its array") -> None:
        """Flag a new check site at ``node`` (where this code runs): the
        flag keeps the largest code, and sites earlier in the program get
        larger codes, so the first site that went wrong is the one reported
        (``checks``: its message)."""
        self.checks.append(
            f"{self.where(node)}: '{ast.unparse(node)}': error: {what} "
            "(this and any other such access read or wrote the nearest element instead)"
        )
        if OOB_FLAG not in self.arg_types:
            self.arg_types[OOB_FLAG] = "memref<1xi64>"
            self.args.append(OOB_FLAG)
        code, first = self.constant(depth, OOB_SITES - len(self.checks), "i64"), self.constant(depth, 0, "index")
        self.emit(depth, f'"lt.reduce"({code.ssa}, %{OOB_FLAG}, {first.ssa}) {{kind = "max"}} : (i64, memref<1xi64>, index) -> ()')

    def checked(self, v: Value, extent: int, node, depth: int) -> Value:
        """Index ``v``, computed from data, clamped into ``[0, extent)``
        (so the access stays in the array whatever the data hold: the
        kernel's bounds are proven statically); where clamping changed it,
        the site's number goes to the check flag (a max-reduction, which
        parallel iterations may share) and the call reports it, located."""
        zero, top = self.constant(depth, 0, "index"), self.constant(depth, max(extent - 1, 0), "index")
        low, out, bad = self.fresh(), self.fresh(), self.fresh()
        self.emit(depth, f"{low} = arith.maxsi {v.ssa}, {zero.ssa} : index")
        self.emit(depth, f"{out} = arith.minsi {low}, {top.ssa} : index")
        self.emit(depth, f"{bad} = arith.cmpi ne, {out}, {v.ssa} : index")
        self.emit(depth, f"scf.if {bad} {{")
        self.report(node, depth + 1)
        self.emit(depth, "}")
        self.tainted.discard(out)  # proven in range: what it indexes is data again only through the load
        return Value(out, "index")

    def to_index(self, v: Value, depth: int, node) -> Value:
        if v.type not in INTS:
            raise self.error(node, "an index must be an integer")
        out = self.fresh()
        self.emit(depth, f"{out} = arith.index_cast {v.ssa} : {v.type} to index")
        return Value(out, "index")

    def expr(self, node, depth: int, scope: _Scope) -> Value:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise self.error(node, f"constant {node.value!r} is not a number")
            if isinstance(node.value, int):
                c = self.fresh("c")
                self.emit(depth, f"{c} = arith.constant {node.value} : index")
                return Value(c, "index", weak=True)
            return Value(repr(float(node.value)), "float", weak=True)  # materialised once its type is known
        if isinstance(node, ast.Name):
            return self.load_name(node, depth, scope)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy", "math"):
            value = _NAMED_CONSTANTS.get(node.attr)
            if value is None:
                raise self.error(node, f"{node.value.id}.{node.attr} is not a number lt_mlir.appy knows (inf, nan, pi, e)")
            return Value(repr(value), "float", weak=True)
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                return self.constant(depth, self.static_int(node, scope), "index")
            try:
                buf, idx, t = self.subscript(node, depth, scope)
            except _NoElements:
                return self.constant(depth, 0, element_type(self.values[node.value.id].dtype))
            out = self.fresh()
            self.emit(depth, f"{out} = memref.load {buf}[{', '.join(idx)}] : {self.arg_types[node.value.id]}")
            return Value(out, t)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr))):
            return self.compare(node, depth, scope)  # a condition as a value (i1): mask = (a <= x) & (x < b)
        if isinstance(node, ast.BinOp):
            return self.binop(node, depth, scope)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return self.negate(self.expr(node.operand, depth, scope), depth)
            if isinstance(node.op, ast.UAdd):
                return self.expr(node.operand, depth, scope)
            raise self.error(node, f"unary {type(node.op).__name__} is not supported")
        if isinstance(node, ast.Call):
            return self.call(node, depth, scope)
        if isinstance(node, ast.IfExp):
            cond = self.compare(node.test, depth, scope)
            a, b = self.expr(node.body, depth, scope), self.expr(node.orelse, depth, scope)
            a, b = self.unify(a, b, depth)
            out = self.fresh()
            self.emit(depth, f"{out} = arith.select {cond.ssa}, {a.ssa}, {b.ssa} : {a.type}")
            return Value(out, a.type)
        raise self.error(node, f"{type(node).__name__} expressions are not supported in an annotated loop")

    def load_name(self, node: ast.Name, depth: int, scope: _Scope) -> Value:
        n = node.id
        if n in scope.vars:
            return scope.vars[n]
        if n in scope.scalars:
            buf, t = scope.scalars[n]
            out = self.fresh()
            self.emit(depth, f"{out} = memref.load {buf}[] : memref<{t}>")
            return Value(out, t)
        if n not in self.values:
            raise self.error(node, f"name '{n}' is not defined")
        v = self.values[n]
        if isinstance(v, (bool, np.bool_)):
            raise self.error(node, f"'{n}' is a bool")
        if isinstance(v, (int, np.integer)) and n in self.static:
            return self.constant(depth, int(v), "index")
        if isinstance(v, (int, np.integer)):
            # an int that sizes no loop: a run-time value (a 0-d i64 array;
            # a new value needs no new compile), checked where it indexes
            if n not in self.arg_types:
                self.arg_types[n] = "memref<i64>"
                self.args.append(n)
            raw, out = self.fresh(), self.fresh()
            self.emit(depth, f"{raw} = memref.load %{n}[] : memref<i64>")
            self.emit(depth, f"{out} = arith.index_cast {raw} : i64 to index")
            self.tainted.add(out)
            return Value(out, "index")
        if isinstance(v, (float, np.floating)):
            # a runtime value: a 0-d array argument (new values need no new compile)
            if n not in self.arg_types:
                t = "f32" if isinstance(v, np.float32) else "f64"
                self.arg_types[n] = f"memref<{t}>"
                self.args.append(n)
            t = self.arg_types[n][7:-1]
            out = self.fresh()
            self.emit(depth, f"{out} = memref.load %{n}[] : memref<{t}>")
            return Value(out, t, weak=not isinstance(v, np.floating))
        if isinstance(v, np.ndarray):
            raise self.error(node, f"array '{n}' used as a number: index it")
        raise self.error(node, f"'{n}' is a {type(v).__name__}: annotated loops use numbers and NumPy arrays")

    def materialise(self, v: Value, t: str, depth: int) -> Value:
        if v.type == "float":
            return self.constant(depth, float(v.ssa), t)
        return v

    def cast(self, v: Value, t: str, depth: int) -> Value:
        """``v`` converted to type ``t`` (NumPy's conversions on store)."""
        if v.type == "float":
            if t not in FLOATS:
                raise AppyError(f"error: a float stored into an {t} location")
            return self.constant(depth, float(v.ssa), t)
        if v.type == t:
            return v
        out = self.fresh()
        source = v
        if v.type == "index":
            if t in INTS:
                self.emit(depth, f"{out} = arith.index_cast {v.ssa} : index to {t}")
                return Value(out, t)
            source = Value(self.fresh(), "i64")
            self.emit(depth, f"{source.ssa} = arith.index_cast {v.ssa} : index to i64")
        op = _CONVERT.get((source.type, t))
        if op is not None:
            self.emit(depth, f"{out} = arith.{op} {source.ssa} : {source.type} to {t}")
            return Value(out, t)
        raise AppyError(f"error: cannot convert {v.type} to {t}")

    def unify(self, a: Value, b: Value, depth: int) -> tuple:
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
        return self.cast(a, t, depth), self.cast(b, t, depth)

    def negate(self, v: Value, depth: int) -> Value:
        if v.type == "float":
            return Value(repr(-float(v.ssa)), "float", weak=True)
        out = self.fresh()
        if v.type in FLOATS:
            self.emit(depth, f"{out} = arith.negf {v.ssa} : {v.type}")
        else:
            zero = self.constant(depth, 0, v.type)
            self.emit(depth, f"{out} = arith.subi {zero.ssa}, {v.ssa} : {v.type}")
        return Value(out, v.type, v.weak)

    def binop(self, node: ast.BinOp, depth: int, scope: _Scope) -> Value:
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2:
            a = self.expr(node.left, depth, scope)
            a, b = self.unify(a, a, depth)
            return self.arith("mul", a, b, depth)
        a, b = self.expr(node.left, depth, scope), self.expr(node.right, depth, scope)
        op = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv", ast.Mod: "rem"}.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported")
        if op == "div" and a.type in ("index", "i32", "i64") and b.type in ("index", "i32", "i64"):
            a, b = self.cast(a, self.default_float, depth), self.cast(b, self.default_float, depth)  # true division
        a, b = self.unify(a, b, depth)
        return self.arith(op, a, b, depth)

    def arith(self, op: str, a: Value, b: Value, depth: int) -> Value:
        t = a.type
        out = self.fresh()
        if t in FLOATS:
            name = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf", "rem": "remf"}.get(op)
            if name is None:
                raise AppyError(f"error: '{op}' of floats is not supported")
        else:
            name = {"add": "addi", "sub": "subi", "mul": "muli", "div": "divsi", "floordiv": "floordivsi", "rem": "remsi"}[op]
        self.emit(depth, f"{out} = arith.{name} {a.ssa}, {b.ssa} : {t}")
        return Value(out, t, a.weak and b.weak)

    def compare(self, node, depth: int, scope: _Scope) -> Value:
        if isinstance(node, ast.BoolOp):
            values = [self.compare(v, depth, scope) for v in node.values]
            op = "andi" if isinstance(node.op, ast.And) else "ori"
            out = values[0]
            for v in values[1:]:
                name = self.fresh()
                self.emit(depth, f"{name} = arith.{op} {out.ssa}, {v.ssa} : i1")
                out = Value(name, "i1")
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            # NumPy's elementwise ``(a < b) & (c < d)`` on one element: and/or
            a, b = self.compare(node.left, depth, scope), self.compare(node.right, depth, scope)
            out = self.fresh()
            self.emit(depth, f"{out} = arith.{'andi' if isinstance(node.op, ast.BitAnd) else 'ori'} {a.ssa}, {b.ssa} : i1")
            return Value(out, "i1")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.compare(node.operand, depth, scope)
            true, out = self.fresh("c"), self.fresh()
            self.emit(depth, f"{true} = arith.constant true")
            self.emit(depth, f"{out} = arith.xori {v.ssa}, {true} : i1")
            return Value(out, "i1")
        if not isinstance(node, ast.Compare):
            v = self.expr(node, depth, scope)  # a condition held in a local: mask = a < b
            if v.type == "i1":
                return v
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP):
            raise self.error(node, "conditions must be comparisons (a < b), joined by and/or (& and | too), or locals holding one")
        a, b = self.unify(self.expr(node.left, depth, scope), self.expr(node.comparators[0], depth, scope), depth)
        fpred, ipred = _CMP[type(node.ops[0])]
        out = self.fresh()
        if a.type in FLOATS:
            self.emit(depth, f"{out} = arith.cmpf {fpred}, {a.ssa}, {b.ssa} : {a.type}")
        else:
            self.emit(depth, f"{out} = arith.cmpi {ipred}, {a.ssa}, {b.ssa} : {a.type}")
        return Value(out, "i1")

    def call(self, node: ast.Call, depth: int, scope: _Scope) -> Value:
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
        args = [self.expr(a, depth, scope) for a in node.args]
        if name in ("min", "max", "minimum", "maximum", "fmin", "fmax") and len(args) == 2:
            a, b = self.unify(args[0], args[1], depth)
            out = self.fresh()
            is_max = "max" in name
            if a.type in FLOATS:
                op = "maximumf" if is_max else "minimumf"
            else:
                op = "maxsi" if is_max else "minsi"
            self.emit(depth, f"{out} = arith.{op} {a.ssa}, {b.ssa} : {a.type}")
            return Value(out, a.type, a.weak and b.weak)
        if name in ("abs", "fabs", "absolute") and len(args) == 1:
            a = args[0]
            if a.type in FLOATS or a.type == "float":
                a = self.materialise(a, self.default_float, depth)
                out = self.fresh()
                self.emit(depth, f"{out} = math.absf {a.ssa} : {a.type}")
                return Value(out, a.type)
            a = self.cast(a, "i64", depth) if a.type == "index" else a
            out = self.fresh()
            self.emit(depth, f"{out} = math.absi {a.ssa} : {a.type}")
            return Value(out, a.type)
        if name in _MATH and len(args) == 1:
            a = args[0]
            t = a.type if a.type in FLOATS else self.default_float
            a = self.cast(a, t, depth)
            out = self.fresh()
            self.emit(depth, f"{out} = {_MATH[name]} {a.ssa} : {t}")
            return Value(out, t)
        raise self.error(node, f"call of '{ast.unparse(f)}' with {len(args)} arguments is not supported")
