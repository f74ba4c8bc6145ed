"""Host loops run as one kernel (Intrepydd: the host loop compiled with
its body).

A host loop of a kernel's body runs its first iterations as Python, one
kernel an iteration (the first computes the values invariant in the loop,
kept for the call; with loop rotation, ``graph.rotated``, the first two
differ from the rest).  Once two iterations in a row made the same
kernel (equal signatures: the steady state), if the body is a *pure
array step* -- the same array expressions of the values the loop
carries, whatever the iteration -- this iteration and the ones left run
in one kernel: the nests inside an ``scf.for`` over a trip count given at
run time, the values the loop carries copied from the outputs to the
inputs at the end of each trip.  The names the body assigns then hold
their last iteration's values, and the loop ends as it would have.

Which loops (``analyse``, from the source): ``for t in range(...)`` whose
variable is never read, and ``while c < bound:`` whose body ends with
``c += step`` (an integer constant) and reads ``c`` nowhere else, ``bound``
a name the body does not assign or a constant.  The rest of the body only
assigns to names (``=``, ``op=``, tuples of names); its calls are
``np.<function>(...)`` and the array methods ``sum/max/min/mean/
transpose`` (no host function that could print, count or read a
number); no ``break``, ``continue``, ``if`` or inner loop.  At run time
(``take_over``): a ``for`` loop runs over a ``range``, a ``while`` loop's
counter and bound are ints; every name the body assigns holds an array
computed in this iteration (or left for the next by loop rotation), of
the shape and dtype of the value it held at the iteration's start
wherever the body reads that value (or the same value as at the start,
one invariant in the loop, which the body assigns again each time).  Otherwise the loop runs as before,
a kernel an iteration.  A ``for`` loop stops early (its variable never
read, nothing tells); a ``while`` loop's counter is advanced by the
iterations the kernel ran (the end cut returns their number).
"""

from __future__ import annotations

import ast

from ..dialect import lt
from ..mlir import arith, ir, memref, scf
from . import expr as E
from .lower import leaves, signature

METHODS = frozenset(("sum", "max", "min", "mean", "transpose"))
_NOT_PURE = (ast.NamedExpr, ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp)


class Spec:
    """What ``analyse`` read off a loop: the names its body assigns; for a
    ``while`` loop its counter, its bound (a name or an int) and step."""

    def __init__(self, names: tuple, counter: str | None = None, bound=None, step: int = 0):
        self.names, self.counter, self.bound, self.step = names, counter, bound, step


def _reads(tree: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Store) for n in ast.walk(tree))


def _array_step(body: list, numpy_names: set) -> list | None:
    """The names ``body`` assigns if it is a pure array step, else None."""
    names: list = []
    for stmt in body:
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
    return names


def replayable(function: ast.FunctionDef, numpy_names: set, builtin_range: bool = True) -> bool:
    """Whether what ``function`` computes is decided by the kinds of its
    arguments alone (shapes, dtypes, numbers), never by their values: its
    body is assignments to names, loops ``analyse`` accepts (a ``for`` over
    ``range(...)``) and a return, each statement pure as a loop's array
    step is, and the names it reads are its arguments, the names it
    assigns, NumPy's and ``range`` (no global that could change between
    calls).  ``Kernel`` then records a call's kernels and replays them for
    arguments of the same kinds without running the function again."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return False
    names: set = set()
    pure = []  # expressions outside array statements: the return value, range()'s arguments
    for stmt in body[:-1]:
        if isinstance(stmt, (ast.For, ast.While)):
            spec = analyse(stmt, function, numpy_names)
            if spec is None:
                return False
            if isinstance(stmt, ast.For):
                it = stmt.iter
                if not (builtin_range and isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                        and not it.keywords):
                    return False
                pure += it.args
                names.add(stmt.target.id)
            else:
                names.add(spec.counter)
            names |= set(spec.names)
        else:
            assigned = _array_step([stmt], numpy_names)
            if assigned is None:
                return False
            names |= set(assigned)
    pure.append(body[-1].value)
    if _array_step([ast.Assign(targets=[ast.Name("__lt_value__", ast.Store())], value=e) for e in pure], numpy_names) is None:
        return False
    a = function.args
    known = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | names | numpy_names | {"range"}
    return all(n.id in known for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name))


def analyse(loop: ast.AST, function: ast.AST, numpy_names: set) -> Spec | None:
    """A ``Spec`` if ``loop`` (a ``for`` or ``while``) can run as one
    kernel once steady (the module's documentation), else None."""
    if isinstance(loop, ast.For):
        if not isinstance(loop.target, ast.Name) or _reads(function, loop.target.id):
            return None
        names = _array_step(loop.body, numpy_names)
        if not names or loop.target.id in names:
            return None
        return Spec(tuple(dict.fromkeys(names)))
    if not isinstance(loop, ast.While) or loop.orelse:
        return None
    test = loop.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Lt)
            and isinstance(test.left, ast.Name)):
        return None
    counter, (bound,) = test.left.id, test.comparators
    if isinstance(bound, ast.Name):
        bound = bound.id
    elif isinstance(bound, ast.Constant) and type(bound.value) is int:
        bound = bound.value
    else:
        return None
    last = loop.body[-1]
    if not (isinstance(last, ast.AugAssign) and isinstance(last.op, ast.Add) and isinstance(last.target, ast.Name)
            and last.target.id == counter and isinstance(last.value, ast.Constant) and type(last.value.value) is int
            and last.value.value > 0):
        return None
    rest = loop.body[:-1]
    names = _array_step(rest, numpy_names)
    if not names or counter in names or bound in names or any(_reads(stmt, counter) for stmt in rest):
        return None
    return Spec(tuple(dict.fromkeys(names)), counter, bound, last.value.value)


class HostLoop:
    """A loop ``analyse`` accepted, at run time: for a ``for`` loop also
    its iterator (its iterable's, stopped early once the iterations left
    ran in one kernel)."""

    def __init__(self, iterable, spec: Spec, enabled: bool = True):
        self.spec, self.enabled = spec, enabled
        self.range = iterable if isinstance(iterable, range) else None
        self._it = iter(iterable) if iterable is not None else None
        self.names = spec.names
        self.started = 0  # iterations begun
        self.stopped = False
        self.start: dict = {}  # name -> its value at the current iteration's start
        self.last_key = None  # the previous iteration's kernel (its signature and carried pairs)

    def __iter__(self):
        return self

    def __next__(self):
        if self.stopped:
            raise StopIteration
        return next(self._it)

    def begin(self, frame_locals: dict) -> None:
        """An iteration starts (after its start cut)."""
        self.started += 1
        self.start = {name: frame_locals.get(name) for name in self.names}

    def left(self, frame_locals: dict) -> int:
        """Iterations after the current one (0 where that cannot be told)."""
        spec = self.spec
        if spec.counter is None:
            return len(self.range) - self.started if self.range is not None else 0
        c = frame_locals.get(spec.counter)
        bound = frame_locals.get(spec.bound) if isinstance(spec.bound, str) else spec.bound
        if type(c) is not int or type(bound) is not int or bound <= c:
            return 0
        return -(-(bound - c) // spec.step)


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


def take_over(frame_locals: dict, loop: HostLoop, graph, values: list) -> tuple:
    """At the end of an iteration of ``loop``, ``values`` the lazy values
    of ``frame_locals`` (all of ``graph``): ``(extra, None)`` where this
    iteration and the ``extra`` ones left ran in one kernel, each name the
    body assigns left its last iteration's value; else ``(0, plan)``, the
    iteration's ``graph.plan`` for ``graph.sync`` to run as usual."""
    plan = graph.plan(values)
    left = loop.left(frame_locals) if loop.enabled else 0
    if left < 1:
        return 0, plan
    roots, todo, later = plan
    ends = [frame_locals.get(name) for name in loop.names]
    if not todo or not all(isinstance(e, E.Lazy) and e.graph is graph for e in ends):
        return 0, plan
    if any(not v.deferred and all(v is not e for e in ends) for v in values):
        return 0, plan  # a lazy value of another variable than the body's (none is expected: a guard)
    root = {id(r): k for k, r in enumerate(roots)}
    lv = leaves(todo)
    position = {id(x): k for k, x in enumerate(lv)}
    carried = []
    for name, e in zip(loop.names, ends):
        s = loop.start.get(name)
        if id(e) not in root and e is not later:
            # a value computed before this iteration's end: only one invariant
            # in the loop (interned: the same node every iteration) the body
            # assigned again (np.tanh(b) each time), kept as it is
            if e is s and e._invariant:
                continue
            return 0, plan
        if isinstance(s, E.Lazy) and id(s) in position:
            if e is later or s.sparse or s.value is None or s.shape != e.shape or s.dtype != e.dtype:
                return 0, plan
            carried.append((position[id(s)], root[id(e)]))
        elif not isinstance(s, E.Lazy):
            return 0, plan
    key = (signature(todo, roots, lv), later is not None, tuple(carried))
    steady, loop.last_key = loop.last_key == key, key
    if not steady:
        return 0, plan  # not yet the same kernel two iterations in a row
    graph.sync(values, plan, loop=(tuple(carried), left + 1))
    loop.stopped = True
    return left, None
