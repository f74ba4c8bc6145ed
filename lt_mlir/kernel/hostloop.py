"""Host ``for`` loops run as one kernel (Intrepydd: the host loop compiled
with its body).

A loop ``for t in range(...)`` of a kernel's body runs its first two
iterations as Python, one kernel an iteration (the first computes the
values invariant in the loop, kept for the call).  At the end of the second,
if the body is a *pure array step* -- the same array expressions of the
values the loop carries, whatever the iteration -- the iterations left run
in one kernel: the second iteration's nests inside an ``scf.for`` over a
trip count given at run time, the values the loop carries copied from the
outputs to the inputs at the end of each trip.  Python's loop then stops
(its variable is never read, so nothing tells it ended early), the names
the body assigns holding their last iteration's values.

Pure array step, read from the source (``body_names``): the loop variable
is never read; the body only assigns to names (``=``, ``op=``, tuples of
names); its calls are ``np.<function>(...)`` and the array methods
``sum/max/min/mean/transpose`` (no host function that could print, count
or read a number); no ``break``, ``continue``, ``if`` or inner loop.  And
at run time (``take_over``): every name the body assigns holds an array
computed in this iteration, of the shape and dtype of the value it held
at the iteration's start wherever the body reads that value; the loop
runs over a ``range``.  Otherwise the loop runs as before, a kernel an
iteration.
"""

from __future__ import annotations

import ast

from ..dialect import lt
from ..mlir import arith, ir, memref, scf
from . import expr as E
from .lower import leaves

METHODS = frozenset(("sum", "max", "min", "mean", "transpose"))
_NOT_PURE = (ast.NamedExpr, ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp)


def body_names(loop: ast.For, function: ast.AST, numpy_names: set) -> tuple | None:
    """The names a ``for`` loop's body assigns, in order, if the body is a
    pure array step (the module's documentation); else None."""
    if not isinstance(loop.target, ast.Name):
        return None
    var = loop.target.id
    if any(isinstance(n, ast.Name) and n.id == var and not isinstance(n.ctx, ast.Store) for n in ast.walk(function)):
        return None
    names: list = []
    for stmt in loop.body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AugAssign):
            targets, value = [stmt.target], stmt.value
        else:
            return None
        for target in targets:
            for x in target.elts if isinstance(target, ast.Tuple) else [target]:
                if not isinstance(x, ast.Name):
                    return None
                names.append(x.id)
        for n in ast.walk(value):
            if isinstance(n, _NOT_PURE):
                return None
            if isinstance(n, ast.Call):
                f = n.func
                if not isinstance(f, ast.Attribute):
                    return None
                if not ((isinstance(f.value, ast.Name) and f.value.id in numpy_names) or f.attr in METHODS):
                    return None
    if var in names or not names:
        return None
    return tuple(dict.fromkeys(names))


class HostLoop:
    """The iterator of a pure-array-step ``for`` loop: its iterable's,
    stopped early once the iterations left ran in one kernel."""

    def __init__(self, iterable, names: tuple, enabled: bool = True):
        self.range = iterable if isinstance(iterable, range) and enabled else None
        self._it = iter(iterable)
        self.names = names
        self.started = 0  # iterations begun
        self.stopped = False
        self.start: dict = {}  # name -> its value at the current iteration's start

    def __iter__(self):
        return self

    def __next__(self):
        if self.stopped:
            raise StopIteration
        v = next(self._it)
        self.started += 1
        return v

    def left(self) -> int:
        """Iterations not begun yet (0 unless over a range)."""
        return len(self.range) - self.started if self.range is not None else 0


def repeat_module(module: ir.Module, trips: int, copies: list) -> ir.Module:
    """A copy of ``module`` whose function runs its body ``load(arg
    trips)`` times (an ``scf.for``), copying argument ``src`` into argument
    ``dst`` at the end of each trip for each ``(src, dst)`` of ``copies``
    (argument positions).  The function's top-level ``lt.alloc`` buffers
    are made once, before the loop (each trip writes them before reading)."""
    m = lt.clone_module(module)
    with m.context, ir.Location.unknown():
        (f,) = lt.functions(m.operation)
        block = f.regions[0].blocks[0]
        ops = list(block.operations)
        body, ret = ops[:-1], ops[-1]
        index = ir.IndexType.get()
        at = ir.InsertionPoint(ret)
        count = memref.LoadOp(block.arguments[trips], [], ip=at)
        upper = arith.IndexCastOp(index, count.result, ip=at)
        zero = arith.ConstantOp(index, 0, ip=at)
        one = arith.ConstantOp(index, 1, ip=at)
        loop = scf.ForOp(zero.result, upper.result, one.result, ip=at)
        with ir.InsertionPoint(loop.body):
            end = scf.YieldOp([])
        for op in body:
            if op.name == "lt.alloc":
                op.move_before(count.operation)
            else:
                op.move_before(end)
        for src, dst in copies:
            memref.CopyOp(block.arguments[src], block.arguments[dst], ip=ir.InsertionPoint(end))
    return m


def take_over(frame_locals: dict, loop: HostLoop) -> bool:
    """At the end of an iteration of ``loop``: run this iteration and the
    ones left in one kernel (``Kernel._run`` with a ``loop``), leaving each
    name the body assigns its last iteration's value, and stop the loop.
    False (nothing done) where that cannot be (the module's documentation)."""
    left = loop.left()
    if loop.started < 2 or left < 1:
        return False
    ends = [frame_locals.get(name) for name in loop.names]
    if not all(isinstance(e, E.Lazy) and e.value is None and not e.sparse and not e.deferred for e in ends):
        return False
    graph = ends[0].graph
    if any(e.graph is not graph for e in ends) or len({id(e) for e in ends}) != len(ends) or not graph.looping:
        return False
    if any(isinstance(v, E.Lazy) and v.value is None and all(v is not e for e in ends) for v in frame_locals.values()):
        return False  # a lazy value the body does not assign
    todo = graph.pending(ends)
    if graph.rotation(todo, ends) is not None:
        return False  # graph.sync rotates this loop instead
    position = {id(x): k for k, x in enumerate(leaves(todo))}
    carried = []
    for r, (name, e) in enumerate(zip(loop.names, ends)):
        s = loop.start.get(name)
        if not isinstance(s, E.Lazy):
            return False
        if id(s) in position:
            if s.sparse or s.value is None or s.shape != e.shape or s.dtype != e.dtype:
                return False
            carried.append((position[id(s)], r))
    graph._run(graph, ends, todo, loop=(tuple(carried), left + 1))
    loop.stopped = True
    for e in ends:
        e.carried = True
    return True
