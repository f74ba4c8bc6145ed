"""NumPy slice statements inside annotated loops, as loops.

APPy programs write whole rows and columns with slices inside their loops::

    C[i, :i + 1] *= beta
    C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]
    y[i] = np.sum(alpha * A[i, :] * x[:] + beta * B[i, :] * x[:])
    temp2[j] = B[:i, j] @ A[i, :i]

``desugar`` rewrites a nest's AST so that the translator sees only element
accesses:

* a statement whose target has a slice becomes a loop over the slice's
  length, every slice of the statement (target and value) indexed at its
  own start plus the loop's variable (NumPy's elementwise semantics for
  slices of one length; a slice that would run past its array is refused
  by the bounds check of the kernel, located);
* ``np.sum(e)``, ``np.dot(a, b)`` and ``a @ b`` over sliced operands become
  a local accumulator summed by such a loop before the statement.

One slice a subscript (1-D slices of the array's last or any dim), no
steps.  Anything else stays for the translator, which refuses it located.
"""

from __future__ import annotations

import ast
import copy
import itertools

from .translate import AppyError

_REDUCERS = {"sum", "dot"}


def desugar(nest: ast.For, filename: str) -> ast.For:
    """A copy of ``nest`` with its slice statements as loops."""
    counter = itertools.count()
    nest = copy.deepcopy(nest)

    def rewrite_body(body: list) -> list:
        out = []
        for stmt in body:
            out.extend(rewrite(stmt))
        return out

    def rewrite(stmt) -> list:
        for field in ("body", "orelse"):
            if isinstance(stmt, (ast.For, ast.If, ast.While)) and getattr(stmt, field, None):
                setattr(stmt, field, rewrite_body(getattr(stmt, field)))
        if not isinstance(stmt, (ast.Assign, ast.AugAssign)):
            return [stmt]
        before = []
        # reductions over slices: a local summed by a loop first
        reducer = _Reductions(counter, filename, before)
        stmt.value = reducer.visit(stmt.value)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        sliced = [s for t in targets for s in _slices(t)]
        if not sliced:
            if _slices(stmt.value):
                raise _error(filename, stmt, "a slice in the value needs one in the target (or np.sum/np.dot/@ around it)")
            return before + [stmt]
        var = f"_appy_s{next(counter)}"
        length = _length(sliced[0], filename)
        body = _Index(var, filename).visit(stmt)
        return before + [_loop(var, length, [body], stmt)]

    nest.body = rewrite_body(nest.body)
    return nest


def _error(filename: str, node, message: str) -> AppyError:
    return AppyError(f"{filename}:{node.lineno}: error: {message}")


def _slices(node) -> list:
    """The (subscript, its slice element's position) of ``node``'s sliced
    subscripts (not inside a reduction's call)."""
    found = []
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript):
            elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            positions = [k for k, e in enumerate(elts) if isinstance(e, ast.Slice)]
            if positions:
                found.append((n, positions))
    return found


def _bounds(sub: ast.Subscript, position: int, filename: str):
    """(start, stop) expressions of the slice at ``position`` of ``sub``."""
    elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    s = elts[position]
    if s.step is not None:
        raise _error(filename, sub, "slices with a step are not supported in annotated loops")
    start = s.lower if s.lower is not None else ast.Constant(0)
    if s.upper is not None:
        stop = s.upper
    else:  # to the end: the array's extent along that dim
        stop = ast.Subscript(ast.Attribute(copy.deepcopy(sub.value), "shape", ast.Load()), ast.Constant(position), ast.Load())
    return start, stop


def _length(entry, filename: str):
    sub, positions = entry
    if len(positions) != 1:
        raise _error(filename, sub, "one slice a subscript in annotated loops (a row or a column)")
    start, stop = _bounds(sub, positions[0], filename)
    if isinstance(start, ast.Constant) and start.value == 0:
        return copy.deepcopy(stop)
    return ast.BinOp(copy.deepcopy(stop), ast.Sub(), copy.deepcopy(start))


class _Index(ast.NodeTransformer):
    """Every slice ``a:b`` -> ``a + var`` (``var`` for ``:b``)."""

    def __init__(self, var: str, filename: str):
        self.var, self.filename = var, filename

    def visit_Subscript(self, node):
        self.generic_visit(node)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        positions = [k for k, e in enumerate(elts) if isinstance(e, ast.Slice)]
        if not positions:
            return node
        if len(positions) != 1:
            raise _error(self.filename, node, "one slice a subscript in annotated loops (a row or a column)")
        start, _ = _bounds(node, positions[0], self.filename)
        index = ast.Name(self.var, ast.Load())
        if not (isinstance(start, ast.Constant) and start.value == 0):
            index = ast.BinOp(copy.deepcopy(start), ast.Add(), index)
        elts = list(elts)
        elts[positions[0]] = index
        node.slice = ast.Tuple(elts, ast.Load()) if len(elts) > 1 else elts[0]
        return node


class _Reductions(ast.NodeTransformer):
    """``np.sum(e)``, ``np.dot(a, b)``, ``a @ b`` over slices -> a fresh
    local, computed by statements appended to ``before``."""

    def __init__(self, counter, filename: str, before: list):
        self.counter, self.filename, self.before = counter, filename, before

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy") else None
        if name not in _REDUCERS or node.keywords:
            return node
        if name == "sum" and len(node.args) == 1 and _slices(node.args[0]):
            return self.reduce(node.args[0], node)
        if name == "dot" and len(node.args) == 2 and _slices(node.args[0]) and _slices(node.args[1]):
            return self.reduce(ast.BinOp(node.args[0], ast.Mult(), node.args[1]), node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult) and _slices(node.left) and _slices(node.right):
            return self.reduce(ast.BinOp(node.left, ast.Mult(), node.right), node)
        return node

    def reduce(self, elementwise, node):
        k = next(self.counter)
        acc, var = f"_appy_r{k}", f"_appy_s{k}"
        length = _length(_slices(elementwise)[0], self.filename)
        init = ast.copy_location(ast.Assign([ast.Name(acc, ast.Store())], ast.Constant(0.0)), node)
        step = ast.copy_location(ast.AugAssign(ast.Name(acc, ast.Store()), ast.Add(), _Index(var, self.filename).visit(elementwise)), node)
        self.before.extend([init, _loop(var, length, [step], node)])
        return ast.copy_location(ast.Name(acc, ast.Load()), node)


def _loop(var: str, length, body: list, where) -> ast.For:
    loop = ast.For(
        target=ast.Name(var, ast.Store()),
        iter=ast.Call(ast.Name("range", ast.Load()), [length], []),
        body=body,
        orelse=[],
    )
    ast.copy_location(loop, where)
    for n in ast.walk(loop):
        if not hasattr(n, "lineno"):
            ast.copy_location(n, where)
    return loop
