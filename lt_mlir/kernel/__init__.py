"""``lt_mlir.kernel``: whole NumPy kernels, dense and sparse, compiled
through ``lt`` (Intrepydd's programs, ReACT's fusion).

A kernel is an ordinary Python function whose arguments are annotated::

    import numpy as np
    from lt_mlir.kernel import kernel, Array, CSR, float64

    @kernel
    def sinkhorn(r: Array(float64, 1), c: Array(float64, 1), K: Array(float64, 2), max_iter: int):
        x = np.full_like(r, 1.0 / r.shape[0])     # (host NumPy: not an lt array)
        it = 0
        while it < max_iter:
            u = 1.0 / x
            v = c * (1.0 / (K.T @ u))
            x = ((1.0 / r)[:, None] * K) @ v
            it += 1
        return x

    @kernel
    def sddmm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return A * (B @ C.T)                       # only at A's stored positions

How it runs.  The body runs as Python: host control flow (``while``,
``for``, ``if`` on numbers) is Python's.  The annotated arguments arrive as
lazy arrays; NumPy expressions over them (operators, ``@``, ``.T``,
``x[:, None]``, ``np.sum/max/min/mean`` along axes, ``np.exp/log/sqrt/abs/
tanh/maximum/minimum/where``) record an expression graph instead of
computing (``expr.py``).  The graph is compiled and run when a value is
needed: a number for the host (``float(...)``, a condition), the return
value, and the end of each iteration of a host loop in the kernel's body
(the frontend adds that cut when it reads the function).  Each cut
becomes one lt module (``lower.py``: one nest per operation, as NumPy
would run them) scheduled by the registered passes (``fusion.py``:
redundancy-aware fusion by default), compiled once per structure, shapes
and dtypes (a cache per kernel: the next iteration of a host loop reuses
the kernel), and called.

A ``for _ in range(n)`` loop or a counted ``while i < n: ...; i += 1``
loop whose body only assigns array expressions runs, once two iterations
in a row made the same kernel, the rest of its iterations in one kernel,
the body's nests in a loop over the trip count (``hostloop.py``).  A
function of assignments, such loops and a return only is traced once per
kinds of arguments (shapes, dtypes, numbers): later calls replay its
kernels (``hostloop.replayable``, ``_Recorder``).

Values computed only from the call's arguments are computed once a call
(Intrepydd's loop-invariant code motion out of host loops): nodes are
interned, and an invariant value that stays a buffer of its own after
fusion becomes an output of its kernel, kept for the call.

Arguments: ``Array(dtype, ndim)`` takes a NumPy array of that dtype and
rank (C-contiguous; made so otherwise); ``CSR(dtype)`` takes a
``scipy.sparse`` CSR matrix or array (or a ``(data, indices, indptr,
shape)`` tuple), checked once a call (``csr.py``: ``indptr`` monotone from
0 to nnz, column indices in range and strictly increasing in each row);
``int``/``float`` take numbers.  A CSR result is a ``scipy.sparse.csr_array``
sharing its operand's structure.

Options: ``kernel(fusion="redundancy-aware" | "maximal" | "none",
parallel=True, vectorize=True, fastmath=None, dump=False,
host_loops=True)`` (``host_loops=False``: a kernel every iteration); ``fastmath``
as ``lt_mlir.compile`` takes it (``"fast"`` lets ``lt-factor`` take
factors out of sums).  ``f.modules`` holds the schedules compiled so far.

Sparse semantics are the CSR's: see ``expr.py``.  What the frontend does
not take (slices with a step, 3-D arrays, sparse @ sparse, a transposed
sparse matrix) is a ``KernelError`` naming the line.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
import weakref

import numpy as np

from ..compiler import compile as compile_module
from ..schedule import Schedule
from ..targets import get_target
from . import expr as E
from . import fusion
from .csr import RowMemo, as_csr, to_scipy
from .errors import KernelError
from .graph import Graph
from .hostloop import HostLoop, analyse, repeat_module, replayable, take_over
from .lower import Lowering, leaves, signature, structures

float32 = np.float32
float64 = np.float64

__all__ = ["kernel", "Array", "CSR", "float32", "float64", "KernelError"]


class Array:
    """Annotation: a dense NumPy array of ``dtype`` and ``ndim`` dimensions."""

    def __init__(self, dtype, ndim: int):
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise KernelError(f"error: Array({self.dtype}, {ndim}): float32 and float64 are supported")
        if not isinstance(ndim, int) or not 0 <= ndim <= 2:
            raise KernelError(f"error: Array({self.dtype}, {ndim!r}): 0, 1 or 2 dimensions are supported")
        self.ndim = ndim

    def __repr__(self) -> str:
        return f"Array({self.dtype}, {self.ndim})"


class CSR:
    """Annotation: a sparse matrix in CSR form with values of ``dtype``."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise KernelError(f"error: CSR({self.dtype}): float32 and float64 are supported")

    def __repr__(self) -> str:
        return f"CSR({self.dtype})"


def kernel(fn=None, *, fusion: str = "redundancy-aware", parallel: bool = True, vectorize: bool = True,
           fastmath: str | None = None, dump: bool = False, host_loops: bool = True):
    """Compile ``fn`` as an lt kernel (see the module's documentation)."""
    options = dict(fusion=fusion, parallel=parallel, vectorize=vectorize, fastmath=fastmath, dump=dump, host_loops=host_loops)
    if fusion not in _fusion_strategies():
        raise KernelError(f"error: kernel: fusion={fusion!r} is not one of {', '.join(_fusion_strategies())}")
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


def _fusion_strategies():
    return fusion.STRATEGIES


class Kernel:
    """A decorated kernel: call it like the function."""

    def __init__(self, fn, *, fusion: str, parallel: bool, vectorize: bool, fastmath, dump: bool, host_loops: bool = True):
        self.fn = fn
        self.fusion, self.parallel, self.vectorize, self.fastmath, self.dump = fusion, parallel, vectorize, fastmath, dump
        self.host_loops = host_loops
        self.signature = inspect.signature(fn)
        self.annotations = {}
        filename = inspect.getsourcefile(fn) or "<kernel>"
        line = fn.__code__.co_firstlineno
        for name, p in self.signature.parameters.items():
            a = p.annotation
            if a is inspect.Parameter.empty:
                raise KernelError(
                    f"{filename}:{line}: error: argument '{name}' of kernel '{fn.__name__}' has no annotation "
                    "(Array(dtype, ndim), CSR(dtype), int or float)"
                )
            if isinstance(a, str):  # from __future__ import annotations
                try:
                    a = eval(a, fn.__globals__)  # noqa: S307  (the user's own annotation, as typing.get_type_hints does)
                except Exception as e:
                    raise KernelError(f"{filename}:{line}: error: argument '{name}': annotation {a!r} cannot be evaluated: {e}") from None
            if not (isinstance(a, (Array, CSR)) or a in (int, float)):
                raise KernelError(f"{filename}:{line}: error: argument '{name}': annotation {a!r} is not Array(dtype, ndim), CSR(dtype), int or float")
            self.annotations[name] = a
        self._traced, self._loop_specs, self._replayable = _with_cuts(fn)
        self._replays: dict = {}  # the kinds of the arguments -> _replay_record (hostloop.replayable kernels)
        self._recorder = None  # during a call of a replayable kernel: its runs, as a replay will make them
        self.cache: dict = {}
        self.modules: list = []  # the schedules compiled, in order
        self.compiles = 0
        self.hoisted: list = []  # (op, shape) of the invariant values the last call computed once and kept
        self.launches = 0  # kernels the last call ran
        self.trips = 0  # host-loop iterations the last call ran inside kernels (hostloop.py)
        self._row_memos: dict = {}  # CSR argument -> csr.RowMemo (its rows array, kept between calls)
        functools.update_wrapper(self, fn)

    # -------------------------------------------------------------- calls
    def __call__(self, *args, **kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise KernelError(f"error: {self.fn.__name__}: {e}") from None
        prepared = {name: self._prepare(name, v) for name, v in bound.arguments.items()}
        key = None
        if self._replayable:
            key = tuple(_kind(p) for p in prepared.values())
            record = self._replays.get(key)
            if record is not None:
                return self._replay(record, prepared)
        graph = Graph(self._run)
        self.hoisted, self.launches, self.trips = [], 0, 0
        self._recorder = _Recorder() if key is not None else None
        values = {name: self._node(graph, name, p) for name, p in prepared.items()}
        try:
            result = self._traced(**values, __lt_cut__=_cut, __lt_loop__=self._host_loop)
            out = self._result(graph, result)
            if key is not None and not graph.host_read:
                record = self._recorder.finish(result, self.hoisted)
                if record is not None and len(self._replays) < 64:
                    self._replays[key] = record
            return out
        finally:
            self._recorder = None
            graph.release()

    def _replay(self, record, prepared: dict):
        """A call of a replayable kernel made before with arguments of the
        same kinds (``_Recorder``): its kernels run again, in order, on this
        call's arrays, without running the function."""
        steps, results, hoisted, drops = record
        csr = {}
        made = []  # the arrays of each run, by plan position
        trips = 0
        for compiled, sources in steps:
            arrays = []
            for source in sources:
                kind, what = source[0], source[1]
                if kind == "out":
                    a = compiled.output(what, source[2], source[3])
                elif kind == "arg":
                    a = prepared[what]
                elif kind == "const":
                    a = what
                elif kind == "made":
                    a = made[what[0]][what[1]]
                elif kind == "trips":
                    a = what
                    trips += int(what)
                else:  # a CSR argument's indptr, indices, rows or data
                    node = csr.get(what)
                    if node is None:
                        indptr, indices, data, shape = prepared[what]
                        node = csr[what] = E.CSRInput(None, what, indptr, indices, data, shape, self._row_memos.setdefault(what, RowMemo()))
                    a = node.value if kind == "data" else getattr(node, kind)
                arrays.append(a.copy() if kind != "out" and source[-1] is True else a)  # a loop's carried input: its working copy
            compiled.kernel.call_unchecked(*arrays)
            made.append([a if source[0] == "out" else None for a, source in zip(arrays, sources)])
            arrays = None
            for r, p in drops[len(made) - 1]:
                made[r][p] = None  # used for the last time: free for the output pool (Kernel._run drops operands so)
        self.hoisted, self.launches, self.trips = list(hoisted), len(steps), trips
        got = []
        for kind, what, scalar, structure, boolean in results:
            if kind == "value":
                got.append(what)
                continue
            a = prepared[what] if kind == "arg" else made[what[0]][what[1]]
            a = a.view(np.bool_) if boolean else a
            if structure is not None:
                node = csr.get(structure)
                got.append(to_scipy(node if node is not None else _structure(prepared[structure]), a))
            else:
                got.append(a.reshape(())[()] if scalar else a)
        return got[0] if len(results) == 1 and not isinstance(results, tuple) else tuple(got)

    def _host_loop(self, iterable, k: int) -> HostLoop:
        return HostLoop(iterable, self._loop_specs[k], enabled=self.host_loops)

    def _prepare(self, name: str, v):
        """Argument ``name`` checked against its annotation: a number, a
        CSR's ``(indptr, indices, data, shape)`` or a C-contiguous array."""
        a = self.annotations[name]
        where = f"{self.fn.__name__}: argument '{name}'"
        if a in (int, float):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise KernelError(f"error: {where}: expected {a.__name__}, got {type(v).__name__}")
            if a is int and not isinstance(v, (int, np.integer)):
                raise KernelError(f"error: {where}: expected int, got {type(v).__name__}")
            return a(v)
        if isinstance(a, CSR):
            return as_csr(v, a.dtype, where)
        if not isinstance(v, np.ndarray):
            raise KernelError(f"error: {where}: expected a NumPy array ({a!r}), got {type(v).__name__}")
        if v.dtype != a.dtype or v.ndim != a.ndim:
            raise KernelError(f"error: {where}: expected {a!r}, got an array of {v.dtype} with {v.ndim} dimension(s)")
        if v.size == 0:
            raise KernelError(f"error: {where}: the array is empty")
        return np.ascontiguousarray(v)

    def _node(self, graph, name: str, p):
        """The value the traced function is given for a prepared argument."""
        if isinstance(p, tuple):
            indptr, indices, data, shape = p
            return graph.node(E.CSRInput, name, indptr, indices, data, shape, self._row_memos.setdefault(name, RowMemo()))
        if isinstance(p, np.ndarray):
            return graph.node(E.Input, name, p)
        return p

    def _result(self, graph, result):
        lazy = []

        def collect(x):
            if isinstance(x, E.Lazy):
                lazy.append(x)
            elif isinstance(x, (tuple, list)):
                for y in x:
                    collect(y)
            elif isinstance(x, dict):
                for y in x.values():
                    collect(y)

        collect(result)
        graph.evaluate(lazy)

        def convert(x):
            if isinstance(x, E.Lazy):
                if x.sparse:
                    return to_scipy(x.structure, x.value)
                return x.value if x.shape else x.value.reshape(())[()]
            if isinstance(x, tuple):
                return tuple(convert(y) for y in x)
            if isinstance(x, list):
                return [convert(y) for y in x]
            if isinstance(x, dict):
                return {k: convert(y) for k, y in x.items()}
            return x

        try:
            return convert(result)
        finally:
            # recursive closures and their cells form cycles that would hold ``lazy`` (and so
            # the call's arrays) until the next garbage collection (``Graph.release``)
            collect = convert = None  # noqa: F841

    # ---------------------------------------------------------- compiling
    def _run(self, graph: Graph, roots: list, todo: list, loop: tuple | None = None) -> None:
        """Compute ``todo`` (``roots`` the values wanted); ``loop``: ``(carried,
        trips)``, the nests run ``trips`` times, ``carried`` the (leaf, root)
        positions whose root's value is the next trip's leaf (``hostloop.py``)."""
        lv, st = leaves(todo), structures(todo)
        carried = loop[0] if loop else None
        key = (signature(todo, roots, lv, st), graph.looping, carried)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = self._compile(todo, roots, graph.looping, carried)
        compiled, kept_positions = entry
        kept = [todo[k] for k in kept_positions]
        outputs = roots + kept
        if self._recorder is not None:
            self._recorder.add(compiled, lv, st, outputs, loop)
        arrays = []
        out_arrays = []
        for role, index in compiled.plan:
            if role in ("indptr", "indices", "rows"):
                arrays.append(getattr(st[index], role))
            elif role == "in":
                a = np.asarray(lv[index].value)
                a = a.view(np.int8) if a.dtype == np.bool_ else a
                # a carried leaf is the loop's working copy: the kernel writes it
                arrays.append(a.copy() if carried and any(index == c[0] for c in carried) else a)
            elif role == "trips":
                arrays.append(np.array(loop[1], np.int64))
            else:
                n = outputs[index]
                a = compiled.output(index, (n.structure.nnz,) if n.sparse else n.shape, n.dtype)
                out_arrays.append((n, a))
                arrays.append(a)
        # the key holds every argument's shape and dtype: the arrays match
        # the kernel's signature by construction (checked on its first call)
        if compiled.checked:
            compiled.kernel.call_unchecked(*arrays)
        else:
            compiled.kernel(*arrays)
            compiled.checked = True
        self.launches += 1
        self.trips += loop[1] if loop else 0
        for n, a in out_arrays:
            n.value = a.view(np.bool_) if n.dtype == np.bool_ else a
            if not n.invariant:
                # a value needs its operands no more: dropping them frees the
                # arrays of a host loop's earlier iterations (x = f(x) held
                # every x before it), so the output pool above reuses them.
                # (Invariant nodes are interned by their operands' ids: they
                # keep theirs, which the intern table holds anyway.)
                n.operands = ()
        self.hoisted += [(getattr(n, "op", getattr(n, "kind", type(n).__name__)), n.shape) for n in kept]

    def _compile(self, todo: list, roots: list, looping: bool, carried: tuple | None = None):
        width = 1
        if self.vectorize:
            width = get_target("cpu").vector_width(np.dtype(todo[-1].dtype if todo[-1].dtype != np.bool_ else np.float32).itemsize)
        sparse = any(n.sparse or isinstance(n, (E.SparseReduce, E.SpMM, E.DenseSpMM)) for n in todo)
        root_ids = {id(r) for r in roots}
        concordant = self.fusion == "maximal"
        # the fastmath mode on the function, for the passes (lt-factor, lt-sink-factor) as for the compile
        attributes = None if self.fastmath is None else {"lt.fastmath": self.fastmath}
        low, text = _lowered(todo, roots, concordant, attributes, trips=bool(carried))
        kept = []
        if looping and not carried:
            # the invariant values that stay buffers after fusion are kept
            # for the call: which ones, lt-fuse on this module tells
            fused: set = set()
            if self.fusion != "none":
                fused = fusion.fuse(Schedule(text), list(low.owners), root_ids, recompute=concordant)
            kept = [k for k, n in enumerate(todo) if n.invariant and id(n) not in root_ids and id(n) not in fused
                    and not isinstance(n, (E.View, E.Transpose, E.Index))]
        outputs = roots + [todo[k] for k in kept]
        if kept:
            low, text = _lowered(todo, outputs, concordant, attributes)
        keep = {id(n) for n in outputs} | {id(n) for n in todo if isinstance(n, E.Copy)}  # a layout copy is the point: never fused away
        if self.fusion == "redundancy-aware" and any(a.role == "rows" for a in low.arguments):
            # the element-wise ops on a CSR's values that read its rows' values
            # and that lt-fuse leaves nests of their own (read twice: sparse
            # softmax's exponentials) become row nests, for lt-merge
            by_rows = fusion.row_nests(text, low.owners, keep, todo)
            if by_rows[0]:
                low, text = _lowered(todo, outputs, concordant, attributes, trips=bool(carried), by_rows=by_rows)
        s, _ = fusion.schedule(text, low.owners, keep, self.fusion, parallel=self.parallel, width=width, sparse=sparse)
        if carried:
            position = {(a.role, id(a.node)): k for k, a in enumerate(low.arguments)}
            lv = leaves(todo)
            copies = [(position["out", id(roots[r])], position["in", id(lv[x])]) for x, r in carried]
            s = Schedule(repeat_module(s.module, len(low.arguments) - 1, copies))
        options = {} if self.fastmath is None else {"fastmath": self.fastmath}
        kern = compile_module(s.module, **options)
        self.compiles += 1
        self.modules.append(s)
        if self.dump:
            print(f"// kernel {self.fn.__name__}, compile {self.compiles} ({self.fusion})")
            print(s.loop_tree)
        plan = []
        lv, st = leaves(todo), structures(todo)
        for a in low.arguments:
            if a.role in ("indptr", "indices", "rows"):
                plan.append((a.role, next(k for k, x in enumerate(st) if x is a.node)))
            elif a.role == "in":
                plan.append(("in", next(k for k, x in enumerate(lv) if x is a.node)))
            elif a.role == "trips":
                plan.append(("trips", None))
            else:
                plan.append(("out", next(k for k, x in enumerate(outputs) if x is a.node)))
        return _Compiled(kern, plan), kept


class _Compiled:
    def __init__(self, kernel, plan):
        self.kernel, self.plan = kernel, plan
        self.checked = False
        self.spare: dict = {}  # output position -> the arrays the last two runs wrote (reused once nothing else holds them)

    def output(self, index: int, shape: tuple, dtype) -> np.ndarray:
        """The array output ``index`` is written into this run.  An output
        array of an earlier run that nothing holds any more is written
        again: a large fresh array is fresh pages from the OS, first touched
        by the kernel.  Two a position: in a host loop the previous
        iteration's result is this one's input (x = f(x)), the one before it
        is free."""
        pool = self.spare.setdefault(index, [])
        free = [k for k in range(len(pool)) if sys.getrefcount(pool[k]) <= 2]  # held by the pool (and the call) only
        a = pool.pop(free[0]) if free else None
        if a is None:
            a = np.empty(shape, np.int8 if dtype == np.bool_ else dtype)  # a bool is an i8 in memory
            if len(pool) >= 2:
                pool.pop(0)
        pool.append(a)
        return a


def _kind(p):
    """What of a prepared argument the trace of a straight-line kernel can
    depend on: a number's value, an array's shape and dtype, a CSR's shape,
    nnz and dtypes (not its values: the kernel reads those)."""
    if isinstance(p, tuple):
        indptr, indices, data, shape = p
        return ("csr", shape, data.shape[0], indptr.dtype.str, indices.dtype.str, data.dtype.str)
    if isinstance(p, np.ndarray):
        return ("array", p.shape, p.dtype.str)
    return (type(p), p.hex() if isinstance(p, float) else p)  # -0.0 and 0.0 apart, NaN equal to itself


def _structure(p: tuple):
    """A CSR argument's structure (for ``to_scipy``) from its prepared tuple."""
    indptr, indices, data, shape = p
    return E.CSRInput(None, "", indptr, indices, data, shape)


class _Recorder:
    """How to run a replayable kernel's call again from the arguments
    alone, written down run by run (``add``) while the call is traced;
    ``finish`` gives ``(steps, results, hoisted, drops)``, or None where the
    call made something else (a view of an argument returned, a structure
    not an argument's).

    A step per kernel run, in order: its compiled kernel and a source per
    argument -- one of the call's arguments (or a CSR argument's part), a
    number or array the function made from numbers alone (a constant for
    these kinds of arguments), an array an earlier step made, a trip count,
    an output -- with whether the run writes it (a host loop's carried
    input: a copy).  A result is an array a step made (a 0-d one as a
    number, a sparse one with its CSR argument's structure, a bool one
    viewed so), an argument, or a Python number.  ``drops``: the arrays each
    step reads for the last time.  Nodes are known by weak references, so
    recording holds no array beyond the call's own use of it."""

    def __init__(self):
        self.steps: list = []
        self.made: dict = {}  # id(node) -> (weakref to it, (step, plan position))
        self.failed = False

    def _made(self, node):
        entry = self.made.get(id(node))
        return entry[1] if entry is not None and entry[0]() is node else None

    def add(self, compiled, lv: list, st: list, outputs: list, loop) -> None:
        if self.failed:
            return
        carried = {c[0] for c in loop[0]} if loop else set()
        sources = []
        for role, index in compiled.plan:
            if role in ("indptr", "indices", "rows"):
                if not isinstance(st[index], E.CSRInput) or not st[index].name:
                    self.failed = True
                    return
                sources.append((role, st[index].name, False))
            elif role == "in":
                leaf, copy = lv[index], index in carried
                at = self._made(leaf)
                if at is not None:
                    sources.append(("made", at, copy))
                elif isinstance(leaf, E.CSRInput):
                    sources.append(("data", leaf.name, copy))
                elif isinstance(leaf, E.Input):
                    sources.append(("arg", leaf.name, copy))
                elif isinstance(leaf, (E.Scalar, E.Computed)):
                    a = np.array(leaf.value)  # made by the function from numbers: the same for these kinds
                    sources.append(("const", a.view(np.int8) if a.dtype == np.bool_ else a, copy))
                else:
                    self.failed = True
                    return
            elif role == "trips":
                sources.append(("trips", np.array(loop[1], np.int64), False))
            else:
                n = outputs[index]
                sources.append(("out", index, (n.structure.nnz,) if n.sparse else n.shape, n.dtype))
        r = len(self.steps)
        for p, (role, index) in enumerate(compiled.plan):
            if role == "out":
                self.made[id(outputs[index])] = (weakref.ref(outputs[index]), (r, p))
        self.steps.append((compiled, sources))

    def finish(self, result, hoisted: list) -> tuple | None:
        if self.failed or not self.steps:
            return None
        items = result if isinstance(result, tuple) else (result,)
        results = []
        for x in items:
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                results.append(("value", x, False, None, False))
                continue
            if not isinstance(x, E.Lazy):
                return None
            structure = None
            if x.sparse:
                if not isinstance(x.structure, E.CSRInput) or not x.structure.name:
                    return None
                structure = x.structure.name
            at = self._made(x)
            if at is not None:
                results.append(("made", at, x.shape == (), structure, x.dtype == np.bool_))
            elif isinstance(x, E.Input):
                results.append(("arg", x.name, x.shape == (), None, False))
            else:
                return None
        # each array a step made is let go after the last step that reads it (results kept)
        last = {}
        for s, (compiled, sources) in enumerate(self.steps):
            for p, source in enumerate(sources):
                if source[0] == "out":
                    last.setdefault((s, p), s)
                elif source[0] == "made":
                    last[source[1]] = s
        kept = {what for kind, what, *_ in results if kind == "made"}
        drops = [[] for _ in self.steps]
        for made_at, s in last.items():
            if made_at not in kept:
                drops[s].append(made_at)
        return self.steps, tuple(results) if isinstance(result, tuple) else results, list(hoisted), drops


def _lowered(todo: list, outputs: list, concordant: bool = False, attributes: dict | None = None, trips: bool = False,
             by_rows: tuple = (frozenset(), frozenset())) -> tuple:
    """(the Lowering: its arguments and the node of each outermost loop, the module text)."""
    low = Lowering(todo, outputs, concordant=concordant, attributes=attributes, trips=trips, by_rows=by_rows)
    return low, low.text()


# ------------------------------------------------------- host-loop cuts


def _cut(frame_locals: dict, loop: HostLoop | None = None, end: bool = False) -> int:
    """The start or end of a host loop's iteration: compute the lazy values
    bound to the function's variables (one kernel), so the next iteration's
    graph starts from values.  ``loop``: the loop's ``HostLoop`` where
    ``hostloop.analyse`` accepted it: at an iteration's end, once steady,
    this iteration and the ones left run in one kernel instead
    (``hostloop.take_over``); the number of iterations run beyond this
    one is returned (0 otherwise)."""
    graphs: dict = {}
    for v in frame_locals.values():
        if isinstance(v, E.Lazy) and v.value is None:
            graphs.setdefault(id(v.graph), (v.graph, []))[1].append(v)
    extra = 0
    for graph, values in graphs.values():
        graph.looping = True  # from now on, invariant values that stay buffers are kept for the call
        plan = None
        if loop is not None and end and len(graphs) == 1:
            extra, plan = take_over(frame_locals, loop, graph, values)
            if extra:
                continue
        graph.sync(values, plan)
    if loop is not None and not end:
        loop.begin(frame_locals)
    return extra


class _AddCuts(ast.NodeTransformer):
    """Cuts at the start and end of each host loop's body.  A loop
    ``hostloop.analyse`` accepts has a ``HostLoop`` (``__lt_loop__``) its
    cuts are given: a ``for`` loop iterates through it; a ``while`` loop's
    counter is advanced by what the end cut returns."""

    def __init__(self, numpy_names: set):
        self.numpy_names = numpy_names
        self.specs: list = []  # hostloop.Spec of each loop given a HostLoop, by the number its code passes

    def visit_FunctionDef(self, node):  # nested functions keep their own semantics
        if getattr(self, "_top", None) is None:
            self._top = node
            self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _loop(self, node):
        spec = analyse(node, self._top, self.numpy_names)
        self.generic_visit(node)
        start = end = "__lt_cut__(locals())"
        before = []
        if spec is not None:
            it = f"__lt_loop{len(self.specs)}__"
            make = ast.Call(ast.Name("__lt_loop__", ast.Load()), [node.iter if isinstance(node, ast.For) else ast.Constant(None),
                                                                 ast.Constant(len(self.specs))], [])
            self.specs.append(spec)
            if isinstance(node, ast.For):
                node.iter = ast.copy_location(ast.NamedExpr(target=ast.Name(it, ast.Store()), value=make), node.iter)
            else:
                before = [ast.copy_location(ast.Assign(targets=[ast.Name(it, ast.Store())], value=make), node)]
            start, end = f"__lt_cut__(locals(), {it})", f"__lt_cut__(locals(), {it}, True)"
            if isinstance(node, ast.While):
                end = f"{spec.counter} += {spec.step} * {end}"
        cut = ast.parse(end).body[0]
        ast.copy_location(cut, node.body[-1])
        node.body.append(cut)
        node.body.insert(0, ast.copy_location(ast.parse(start).body[0], node.body[0]))
        for x in before + [node]:
            ast.fix_missing_locations(x)
        return before + [node] if before else node

    visit_While = _loop
    visit_For = _loop


def _with_cuts(fn) -> tuple:
    """``fn`` with ``__lt_cut__(locals())`` at the start and end of each
    host loop's body, compiled at its own file and lines, the
    ``hostloop.Spec`` of each loop that has a ``HostLoop``, and whether
    its calls can be replayed (``hostloop.replayable``)."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or "<kernel>"
    except (OSError, TypeError):
        raise KernelError(f"error: kernel '{fn.__name__}': its source is not available (define it in a file)") from None
    if fn.__code__.co_freevars:
        names = ", ".join(fn.__code__.co_freevars)
        raise KernelError(
            f"{filename}:{fn.__code__.co_firstlineno}: error: kernel '{fn.__name__}' uses variables of an enclosing function ({names}): pass them as arguments"
        )
    tree = ast.parse(source)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise KernelError(f"{filename}:{fn.__code__.co_firstlineno}: error: @kernel takes a function defined with def")
    fdef.decorator_list = []
    numpy_names = {name for name, v in fn.__globals__.items() if v is np}
    replay = replayable(fdef, numpy_names, builtin_range="range" not in fn.__globals__)
    cuts = _AddCuts(numpy_names)
    fdef = cuts.visit(fdef)
    for arg in ("__lt_cut__", "__lt_loop__"):
        fdef.args.kwonlyargs.append(ast.arg(arg=arg))
        fdef.args.kw_defaults.append(None)
    ast.fix_missing_locations(fdef)
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    code = compile(tree, filename, "exec")
    namespace: dict = {}
    exec(code, fn.__globals__, namespace)  # noqa: S102  (the user's own function, read from its file)
    return namespace[fdef.name], cuts.specs, replay
