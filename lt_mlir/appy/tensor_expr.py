"""APPy's tensor-expression form: a sliced statement under a pragma that
maps each slice to a loop, as that loop nest.

APPy writes whole-array statements with a pragma naming what each slice's
dim does::

    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = appy.mv(alpha * A[:M, :N], x[:N])
    #pragma 1:M-1=>parallel 1:N-1=>parallel
    B[1:M-1, 1:N-1] = 0.2 * (A[1:M-1, 1:N-1] + A[1:M-1, :N-2] + A[1:M-1, 2:N] + ...)

Each ``lo:hi=>props`` item is a dim: a loop ``for v in range(lo, hi)``,
outermost first.  A slice of the statement is that dim's variable where
its bounds are the item's (``1:M-1`` -> ``v``), or the variable plus a
constant where both bounds are the item's plus that constant (``:N-2``
against ``1:N-1`` -> ``v - 1``).  The props of an item (comma-separated):

* ``parallel``: the loop gets ``#pragma parallel for`` (the dependence
  test decides, as for any loop);
* ``simd``: the loop gets ``#pragma simd``;
* ``reduce(op)``, ``reduce(op:x)``, ``reduction(op:x)`` with op ``sum``,
  ``max`` or ``min`` (``x``, if given, names the statement's target): the
  statement's value is reduced over this dim.  Reduced dims come last; the
  value is accumulated in a local before them and the statement stores
  the local after them (``y[i] = acc``; ``y[i] += acc`` for ``+=``).

Inside the value, APPy's reducing calls over the reduced dims are their
elementwise operands: ``mv(a, b)``/``dot(a, b)``/``a @ b`` -> ``a * b``,
``sum(e, axis=..)`` -> ``e`` (for ``sum``), ``max``/``min``(e, axis=..) ->
``e`` (for that op); ``e[None, :]``/``e[:, None]`` broadcasts are ``e``;
``torch.``/``appy.`` math (``exp``, ``sqrt`` ...) is NumPy's.

What is not understood is a located error: a slice matching no item (or
two), an item without props or with one lt_mlir cannot honour
(``block(n)``, ``single_block``), a reduced dim the value never reads, a
reducing call with no reduced dim or of another op.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field

from .translate import AppyError

_ITEM = re.compile(r"^([^=\s]*:[^=\s]*)=>(\S*)$")
_PROP = re.compile(r"^(\w+)(?:\((.*)\))?$")
_INIT = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}
_TENSOR_LIBS = ("np", "numpy", "torch", "appy", "tl", "math")
_REDUCING = {"mv": "sum", "dot": "sum", "matmul": "sum", "sum": "sum", "max": "max", "amax": "max", "min": "min", "amin": "min"}


@dataclass
class Dim:
    low: ast.expr
    high: ast.expr
    text: str
    parallel: bool = False
    simd: bool = False
    reduce: str | None = None  # "sum", "max", "min"
    reduce_target: str | None = None
    var: str = ""


@dataclass
class TensorPragma:
    text: str
    line: int  # the pragma's line in the file
    dims: list = field(default_factory=list)


def is_tensor_pragma(text: str) -> bool:
    return "=>" in text


def parse(text: str, where: str, line: int) -> TensorPragma:
    """``:M=>parallel :N=>reduce(sum)`` -> its dims (``where``: ``file:line``)."""

    def fail(message: str) -> AppyError:
        return AppyError(f"{where}: error: #pragma {text}: {message}")

    pragma = TensorPragma(text, line)
    for item in text.split():
        m = _ITEM.match(item)
        if m is None:
            raise fail(f"'{item}' is not 'lo:hi=>props' (a tensor-expression pragma maps each slice of the statement: ':M=>parallel :N=>reduce(sum)')")
        key, props = m.groups()
        low_text, _, high_text = key.partition(":")
        if not high_text:
            raise fail(f"slice '{key}' needs its upper bound")
        try:
            low = ast.parse(low_text or "0", mode="eval").body
            high = ast.parse(high_text, mode="eval").body
        except SyntaxError:
            raise fail(f"slice '{key}' is not lo:hi with Python expressions") from None
        dim = Dim(low, high, key)
        if not props:
            raise fail(f"'{key}=>' says nothing (parallel, simd, reduce(op))")
        for prop in props.split(","):
            pm = _PROP.match(prop)
            name, arg = (pm.group(1), pm.group(2)) if pm else (prop, None)
            if name == "parallel" and arg is None:
                dim.parallel = True
            elif name == "simd" and arg is None:
                dim.simd = True
            elif name in ("reduce", "reduction") and arg:
                op, _, target = arg.partition(":")
                if op not in _INIT:
                    raise fail(f"reduction '{op}' is not supported (sum, max, min)")
                dim.reduce, dim.reduce_target = op, target or None
            elif name in ("block", "single_block"):
                raise fail(f"'{prop}' is not honoured: lt_mlir sizes vector blocks itself (write simd)")
            else:
                raise fail(f"unknown property '{prop}' of '{key}' (parallel, simd, reduce(op), reduction(op:x))")
        if any(_same(dim.low, d.low) and _same(dim.high, d.high) for d in pragma.dims):
            raise fail(f"two dims are '{key}': a slice of the statement could be either")
        pragma.dims.append(dim)
    if not pragma.dims:
        raise fail("no dims")
    reduced = [d.reduce is not None for d in pragma.dims]
    if any(reduced) and not all(reduced[reduced.index(True):]):
        raise fail("reduced dims come after the others")
    if len({d.reduce for d in pragma.dims if d.reduce}) > 1:
        raise fail("one reduction op a statement")
    return pragma


def expand(stmt, pragma: TensorPragma, filename: str, counter, taken: set) -> tuple[list, ast.For]:
    """(Python statements to run first, the loop nest) that ``stmt`` (an
    assignment under ``pragma``) means.  Each loop carries its pragma in
    ``appy_pragma`` (None: none).  ``taken``: the names the function uses
    (the loops' variables are none of them)."""

    def fail(node, message: str) -> AppyError:
        return AppyError(f"{filename}:{getattr(node, 'lineno', stmt.lineno)}: error: {message}")

    if not isinstance(stmt, (ast.Assign, ast.AugAssign)) or isinstance(stmt, ast.Assign) and len(stmt.targets) != 1:
        raise fail(stmt, f"#pragma {pragma.text} needs one assignment below it (a sliced statement)")
    k = next(counter)
    for i, d in enumerate(pragma.dims):
        # a dim's variable is its bound's name in lower case (``:M`` -> m)
        # where the function uses no such name
        names = [n.id.lower() for n in ast.walk(d.high) if isinstance(n, ast.Name)]
        mine = {e.var for e in pragma.dims[:i]}
        d.var = names[0] if names and names[0] not in taken | mine else f"_appy_t{k}_{i}"
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
    rewrite = _Substitute(pragma.dims, filename, stmt)
    target = rewrite.visit(copy.deepcopy(target))
    value = rewrite.visit(_Unbroadcast().visit(copy.deepcopy(stmt.value)))
    reduced = [d for d in pragma.dims if d.reduce]
    op = reduced[0].reduce if reduced else None
    value = _Elementwise(op, filename, stmt).visit(value)
    used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    in_target = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    for d in reduced:
        if d.var in in_target:
            raise fail(stmt, f"dim '{d.text}' is reduced but indexes the target '{ast.unparse(stmt_target(stmt))}'")
        if d.var not in used:
            raise fail(stmt, f"dim '{d.text}' is reduced but the value never reads it")
        root = target.value if isinstance(target, ast.Subscript) else target
        if d.reduce_target and not (isinstance(root, ast.Name) and root.id == d.reduce_target):
            raise fail(stmt, f"reduction({d.reduce}:{d.reduce_target}) names '{d.reduce_target}', but the statement assigns '{ast.unparse(stmt_target(stmt))}'")
    outer = [d for d in pragma.dims if not d.reduce]
    before: list = []
    if not outer:
        # every dim reduced (``s = np.sum(x[:N])``): the target itself
        # accumulates, set to the reduction's identity first (by Python)
        if isinstance(stmt, ast.AugAssign) and not (op == "sum" and isinstance(stmt.op, ast.Add)):
            raise fail(stmt, f"'{ast.unparse(stmt.op)}=' with reduce({op}) over every dim: write '='")
        if isinstance(stmt, ast.Assign):
            before = [ast.Assign([copy.deepcopy(stmt_target(stmt))], ast.Constant(_INIT[op]))]
        load = _as_load(copy.deepcopy(target))
        nest = _loops(reduced, [_accumulate(target, load, op, value)], stmt)
    elif reduced:
        acc = f"_appy_acc{k}"
        step = _accumulate(ast.Name(acc, ast.Store()), ast.Name(acc, ast.Load()), op, value)
        if isinstance(stmt, ast.Assign):
            store = ast.Assign([target], ast.Name(acc, ast.Load()))
        else:
            store = ast.AugAssign(target, stmt.op, ast.Name(acc, ast.Load()))
        body = [ast.Assign([ast.Name(acc, ast.Store())], ast.Constant(_INIT[op])), _loops(reduced, [step], stmt), store]
        nest = _loops(outer, body, stmt)
    else:
        body = [ast.Assign([target], value) if isinstance(stmt, ast.Assign) else ast.AugAssign(target, stmt.op, value)]
        nest = _loops(outer, body, stmt)
    for n in [*before, nest]:
        for m in ast.walk(n):
            if not hasattr(m, "lineno"):
                ast.copy_location(m, stmt)
    return before, nest


def stmt_target(stmt):
    return stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target


def _accumulate(target, load, op: str, value) -> ast.stmt:
    if op == "sum":
        return ast.AugAssign(target, ast.Add(), value)
    return ast.Assign([target], ast.Call(ast.Name(op, ast.Load()), [load, value], []))


def _as_load(node):
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return node


def _loops(dims: list, body: list, where) -> ast.For:
    for d in reversed(dims):
        args = [copy.deepcopy(d.high)] if _is_zero(d.low) else [copy.deepcopy(d.low), copy.deepcopy(d.high)]
        loop = ast.For(ast.Name(d.var, ast.Store()), ast.Call(ast.Name("range", ast.Load()), args, []), body, [])
        ast.copy_location(loop, where)
        words = (["parallel", "for"] if d.parallel else []) + (["simd"] if d.simd else [])
        loop.appy_pragma = {"text": f"{d.text}=>{','.join(w for w in words if w != 'for') or 'reduce'}", **{w: True for w in words}} if words else None
        body = [loop]
    return body[0]


def _is_zero(e) -> bool:
    return isinstance(e, ast.Constant) and e.value == 0


def _same(a, b) -> bool:
    return ast.dump(a) == ast.dump(b)


# ---------------------------------------------------------------- linear forms
def _linear(e) -> dict | None:
    """``e`` as {atom text: coefficient, "": constant} for + - and
    multiplication by constants; atoms are names, attributes, subscripts
    and calls (by their text).  None where ``e`` is not of that form."""
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {"": e.value}
    if isinstance(e, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return {ast.unparse(e): 1}
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _linear(e.operand)
        return None if inner is None else {k: -v for k, v in inner.items()}
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _linear(e.left), _linear(e.right)
        if a is None or b is None:
            return None
        if isinstance(e.op, ast.Mult):
            if set(a) <= {""}:
                a, b = b, a
            if not set(b) <= {""}:
                return None
            c = b.get("", 0)
            return {k: v * c for k, v in a.items()}
        sign = 1 if isinstance(e.op, ast.Add) else -1
        out = dict(a)
        for key, v in b.items():
            out[key] = out.get(key, 0) + sign * v
        return out
    return None


def _offset(e, base) -> int | None:
    """The constant ``e - base``, or None where it is not a constant."""
    a, b = _linear(e), _linear(base)
    if a is None or b is None:
        return None
    diff = dict(a)
    for key, v in b.items():
        diff[key] = diff.get(key, 0) - v
    if any(v for key, v in diff.items() if key != ""):
        return None
    return diff.get("", 0)


class _Substitute(ast.NodeTransformer):
    """Each slice of a subscript -> its dim's variable (plus an offset)."""

    def __init__(self, dims: list, filename: str, stmt):
        self.dims, self.filename, self.stmt = dims, filename, stmt

    def visit_Subscript(self, node):
        self.generic_visit(node)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not any(isinstance(e, ast.Slice) for e in elts):
            return node
        node.slice = ast.Tuple([self.index(e, node) if isinstance(e, ast.Slice) else e for e in elts], ast.Load()) if len(elts) > 1 else self.index(elts[0], node)
        return node

    def index(self, s: ast.Slice, node):
        text = ast.unparse(s)
        if s.step is not None or s.upper is None:
            raise AppyError(
                f"{self.filename}:{node.lineno}: error: slice '{text}' of '{ast.unparse(node)}' needs lo:hi bounds like the pragma's dims (no step, no open end)"
            )
        low = s.lower if s.lower is not None else ast.Constant(0)
        matches = []
        for d in self.dims:
            off_low, off_high = _offset(low, d.low), _offset(s.upper, d.high)
            if off_low is not None and off_low == off_high:
                matches.append((d, off_low))
        exact = [m for m in matches if m[1] == 0]
        if len(exact) == 1:
            matches = exact
        if len(matches) != 1:
            names = ", ".join(d.text for d in self.dims)
            what = "matches no dim" if not matches else f"matches dims {', '.join(d.text for d, _ in matches)} alike"
            raise AppyError(f"{self.filename}:{node.lineno}: error: slice '{text}' of '{ast.unparse(node)}' {what} of the pragma ({names})")
        d, off = matches[0]
        var = ast.Name(d.var, ast.Load())
        if off > 0:
            return ast.BinOp(var, ast.Add(), ast.Constant(off))
        if off < 0:
            return ast.BinOp(var, ast.Sub(), ast.Constant(-off))
        return var


class _Unbroadcast(ast.NodeTransformer):
    """``e[None, :]`` / ``e[:, None]`` -> ``e`` (an index broadcasts by itself)."""

    def visit_Subscript(self, node):
        self.generic_visit(node)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        bare = [isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None for e in elts]
        none = [isinstance(e, ast.Constant) and e.value is None for e in elts]
        if any(none) and all(b or n for b, n in zip(bare, none)):
            return node.value
        return node


class _Elementwise(ast.NodeTransformer):
    """APPy's reducing calls over the reduced dims -> their elementwise
    operands; ``torch.``/``appy.`` functions -> NumPy's."""

    def __init__(self, op: str | None, filename: str, stmt):
        self.op, self.filename, self.stmt = op, filename, stmt

    def fail(self, node, message: str) -> AppyError:
        return AppyError(f"{self.filename}:{getattr(node, 'lineno', self.stmt.lineno)}: error: {message}")

    def reducing(self, node, kind: str):
        if self.op is None:
            raise self.fail(node, f"'{ast.unparse(node)}' reduces, but no dim of the pragma is reduce({kind})")
        if self.op != kind:
            raise self.fail(node, f"'{ast.unparse(node)}' is a {kind} reduction; the pragma's reduced dims are reduce({self.op})")

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            self.reducing(node, "sum")
            return ast.copy_location(ast.BinOp(node.left, ast.Mult(), node.right), node)
        return node

    def visit_Call(self, node):
        f = node.func
        lib = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in _TENSOR_LIBS
        name = f.attr if lib else f.id if isinstance(f, ast.Name) else None
        if name in _REDUCING and (lib or name in ("mv", "dot", "sum")) and not (name in ("max", "min") and not lib):
            kind = _REDUCING[name]
            if any(k.arg not in ("axis", "dim", "keepdims") for k in node.keywords):
                raise self.fail(node, f"'{ast.unparse(node)}': only axis=/dim= keywords are understood")
            self.reducing(node, kind)
            args = [self.visit(a) for a in node.args]
            if name in ("mv", "dot", "matmul"):
                if len(args) != 2:
                    raise self.fail(node, f"'{ast.unparse(node)}' takes two operands")
                return ast.copy_location(ast.BinOp(args[0], ast.Mult(), args[1]), node)
            if len(args) != 1:
                raise self.fail(node, f"'{ast.unparse(node)}' takes one operand here")
            return args[0]
        self.generic_visit(node)
        if lib and f.value.id in ("torch", "appy", "tl"):
            node.func = ast.copy_location(ast.Attribute(ast.Name("np", ast.Load()), f.attr, ast.Load()), f)
        return node
