"""``Tensor``: a lazy, pure-functional node of a DAG over named dims.

Nothing runs until a result is asked for (``numpy()``, ``resolve()``,
``compile()``, ``loop_tree``, ``code``).  Then the sizes of every dim are
inferred (``sizes.py``, over every tensor connected to this one, so setting
an output's size fixes its inputs'), the DAG below the tensor becomes one
``lt`` module with loop_tool's default schedule (``lower.py``), an optional
schedule set with ``set(...)`` is applied (without one, after
``set_default_schedule("tuned")``, the tuning database's for the same
program: ``optimize()`` or ``lt-tune`` put it there), and the module is compiled by
``lt_mlir.compile`` — the pipeline ``lt-opt`` runs.  Kernels are cached by
their IR text, which encodes the graph's structure, its sizes, its element
type and the schedule, so the same program with new data (or a
structurally equal program) does not compile again.

Element type (loop_tool's rule): float32, whatever the data's NumPy type
(float64 arrays, ``np.ones(...)``, integer arrays are converted); a Python
number, ``lt.Tensor(0.0)`` included, never widens a tensor.  float64 only
when asked: an input made with ``dtype=np.float64`` makes the whole graph
compute in float64.

Looking inside: ``loop_tree`` (loop_tool's picture, lt_mlir's printer),
``code`` (the lt module, input for ``lt-opt``), ``llvm`` (the optimised
LLVM IR), ``ir`` (the DAG in Graphviz DOT), ``schedule`` (a fresh
``lt_mlir.Schedule``; change it and hand it back with ``set``).
``numpy()`` hands over the kernel's output array (no copy) and computes
again on the next call; ``resolve()`` computes ahead and keeps the result
until an input's data changes (``set``) or ``force_recompute()``.  Data
given with ``copy=False`` is shared, so call ``force_recompute()`` after
changing it in place.  The module is lowered again only when the program
changes (a new node, a size, a schedule, data of a new shape or type).

Departures from loop_tool 0.1.0, where its behaviour is a bug or a crash:
``a.shape`` works after ``b.set_size(...)`` without ``unify()``;
``A.to(n, m)`` of a tensor over ``m, n`` is a transpose (dims are names);
``sum()`` with no dims sums over all of them; ``X[s.No + s.K]`` names its
dims in the order written (``No, K``).
"""

from __future__ import annotations

import importlib
import weakref
from collections import OrderedDict

import numpy as np

from ..compiler import compile as compile_module
from ..compiler import parse_module
from ..dialect.entry import find_function, signature
from ..dialect.loop_tree import loop_tree
from ..errors import CompileError, LtError
from ..lowering.lt_to_scf import fastmath_flags
from ..runtime import cuda
from ..schedule import Schedule
from ..targets import TARGETS, Target, get_target
from ..tuning import lookup as tuned_entry
from . import sizes as _sizes
from .errors import FrontendError, SizeError
from .lower import Lowered, is_compute, lower, topological
from .symbols import IDX, SIZE, Expr, Symbol, as_expr

_KERNELS: "OrderedDict[str, object]" = OrderedDict()
_KERNEL_CACHE_SIZE = 256
_SCHEDULED: dict = {}  # (default text, pipeline) -> scheduled text
_CHECKED: dict = {}  # (default text, schedule text) -> None (signature checked)
stats = {"compiles": 0, "kernel_hits": 0, "runs": 0, "lowerings": 0}
# Bumped by everything that can change a lowered module (a new node, a size,
# data of a new shape or type, a schedule): a tensor re-lowers only then.
_EPOCH = [0]

_UNARY_NAMES = ("neg", "exp", "log", "sqrt", "abs", "reciprocal")


_DEFAULT_HARDWARE: list[Target] = [get_target("cpu")]


def set_default_hardware(name: str | Target) -> None:
    """Where tensors compute from now on: a target of ``lt_mlir.targets``,
    ``"cpu"`` (the default), ``"cuda"`` (an NVIDIA GPU; schedules without
    GPU mappings get ``lt-gpu-auto``) or ``"cuda-emulated"`` (the GPU
    lowering run on the CPU).  Hardware that needs a device it cannot open
    here is a ``FrontendError`` naming what runs without one."""
    if not isinstance(name, Target) and name not in TARGETS:
        raise FrontendError(f"unknown hardware '{name}' (one of: {', '.join(TARGETS)})")
    target = get_target(name)
    if target.on_device:
        problem = cuda.device_problem()
        if problem is not None:
            usable = " or ".join(f'"{n}"' for n, t in TARGETS.items() if not t.on_device)
            raise FrontendError(f"hardware '{target.name}' needs a CUDA device and this machine has no usable one: use {usable} ({problem})")
    _DEFAULT_HARDWARE[0] = target
    if _DEFAULT_SCHEDULE[0] == "tuned":
        _EPOCH[0] += 1  # the tuned schedule is the hardware's: look it up again


def default_hardware() -> str:
    """Where tensors compute: the name of a target (``"cpu"``, ``"cuda"``
    or ``"cuda-emulated"``)."""
    return _DEFAULT_HARDWARE[0].name


SCHEDULES = ("default", "tuned")
_DEFAULT_SCHEDULE = ["default"]


def set_default_schedule(name: str) -> None:
    """The schedule of tensors that have none of their own (``set``):
    ``"default"`` (loop_tool's) or ``"tuned"``: the tuning database's
    schedule (``lt_mlir.tuning``: what ``Tensor.optimize`` or ``lt-tune``
    found for the same program on the default hardware and this host),
    loop_tool's where the database has none.  No search runs."""
    if name not in SCHEDULES:
        raise FrontendError(f"unknown default schedule {name!r} (one of: {', '.join(SCHEDULES)})")
    _DEFAULT_SCHEDULE[0] = name
    _EPOCH[0] += 1


def default_schedule() -> str:
    """``"default"`` or ``"tuned"`` (``set_default_schedule``)."""
    return _DEFAULT_SCHEDULE[0]


_OPTIMIZER: list = [None]


def register_optimizer(optimize) -> None:
    """The search ``Tensor.optimize`` runs: ``optimize(tensor, budget=,
    seconds=, strategy=, workers=, **options)`` gives the tensor the best
    schedule it finds.  ``lt_mlir.search`` registers its own when imported."""
    _OPTIMIZER[0] = optimize


def _optimizer():
    """The registered optimizer.  The search sits above the frontend in the
    layers (it tunes tensors, and its command imports them), so the frontend
    cannot name it in an import: when nothing is registered yet it imports
    the package by name at run time, which registers ``lt_mlir.search``'s."""
    if _OPTIMIZER[0] is None:
        importlib.import_module("lt_mlir.search")
    if _OPTIMIZER[0] is None:
        raise FrontendError("no optimizer is registered (lt_mlir.search registers one when imported)")
    return _OPTIMIZER[0]


# loop_tool's code generators (``lt.backends()``): "cpp" compiles C,
# "cpu_interpreted" interprets the loop tree.  lt_mlir has one code generator,
# MLIR -> LLVM ("llvm"); loop_tool's names are accepted so its programs run
# unchanged, and compute the same numbers (every backend is exact).
BACKENDS = ("llvm",)
_BACKEND_ALIASES = {"cpp": "llvm", "cpu_interpreted": "llvm"}
_DEFAULT_BACKEND = ["llvm"]


def backends() -> list[str]:
    """The code generators lt_mlir has (loop_tool's ``lt.backends()``):
    ``["llvm"]``; ``set_default_backend`` also takes loop_tool's names."""
    return list(BACKENDS)


def set_default_backend(name: str) -> None:
    """Choose the code generator (loop_tool's API): ``"llvm"``, or
    loop_tool's ``"cpp"``/``"cpu_interpreted"``, which lt_mlir runs with
    ``"llvm"`` (the same numbers; there is no interpreter).  Where the code
    runs is ``set_default_hardware``."""
    if not isinstance(name, str) or (name not in BACKENDS and name not in _BACKEND_ALIASES):
        known = ", ".join(list(BACKENDS) + list(_BACKEND_ALIASES))
        raise FrontendError(f"unknown backend {name!r} (one of: {known})")
    _DEFAULT_BACKEND[0] = name


def get_default_backend() -> str:
    """The name last given to ``set_default_backend`` (``"llvm"`` at first)."""
    return _DEFAULT_BACKEND[0]


class Backend:
    """``with lt.Backend("cpp"): ...``: a default backend for a block (loop_tool's)."""

    def __init__(self, name: str):
        self.name, self.old = name, get_default_backend()

    def __enter__(self) -> "Backend":
        set_default_backend(self.name)
        return self

    def __exit__(self, *exc) -> None:
        set_default_backend(self.old)


_FASTMATH = ["default"]


def set_fastmath(mode: str = "default") -> None:
    """The floating-point mode of the kernels tensors compile from now on:
    ``"default"`` (FMA contraction; NaNs propagate through ``max``/``min``
    as in NumPy, the sign of a zero they return unspecified), ``"strict"``
    (IEEE 754), ``"fast"``, or LLVM flags such as ``"nnan,nsz"`` (README,
    "Floating point").  The module says it: ``lt.fastmath`` on its function."""
    try:
        fastmath_flags(mode)
    except LtError as e:
        raise FrontendError(str(e).removeprefix("error: ")) from None
    _FASTMATH[0] = mode.strip()
    _EPOCH[0] += 1


def fastmath() -> str:
    return _FASTMATH[0]


def _target(target: str | Target | None) -> Target:
    try:
        return get_target(_DEFAULT_HARDWARE[0] if target is None else target)
    except CompileError as e:
        raise FrontendError(str(e).removeprefix("error: ")) from None


def _for_target(text: str, target: Target) -> str:
    """The module to compile for ``target``: on a GPU, a schedule with no
    GPU mapping gets lt-gpu-auto's (loop_tool's default schedule mapped to
    blocks and threads)."""
    if not target.gpu_mapping or "lt.gpu" in text:
        return text
    key = (text, "lt-gpu-auto")
    mapped = _SCHEDULED.get(key)
    if mapped is None:
        mapped = Schedule(text).gpu_auto().text
        _SCHEDULED[key] = mapped
    return mapped


_CLEARED = [0]  # clear_cache() calls so far
_DATA_VERSION = [0]  # data given to any tensor so far: a result computed before another set() may be stale


def _stamp() -> tuple:
    """What a tensor's kernel for the default target depends on beyond the
    tensor: schedules and graphs (the epoch), data, clears, the hardware."""
    return (_EPOCH[0], _DATA_VERSION[0], _CLEARED[0], _DEFAULT_HARDWARE[0])


def clear_cache() -> None:
    """Forget every compiled kernel (tests use it to count compiles)."""
    _KERNELS.clear()
    _SCHEDULED.clear()
    _CHECKED.clear()
    _CLEARED[0] += 1  # tensors' kernels bound to their inputs go too


def _kernel(text: str, target: str | Target | None = None):
    target = _target(target)
    text = _for_target(text, target)
    key = (text, target.name)
    k = _KERNELS.get(key)
    if k is not None:
        _KERNELS.move_to_end(key)
        stats["kernel_hits"] += 1
        return k
    k = compile_module(text, target=target)
    stats["compiles"] += 1
    _KERNELS[key] = k
    if len(_KERNELS) > _KERNEL_CACHE_SIZE:
        _KERNELS.popitem(last=False)
    return k


def _dtype_name(dtype) -> str:
    if dtype is None:
        return "f32"
    if isinstance(dtype, str) and dtype in ("f32", "f64"):
        return dtype
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise FrontendError(f"unsupported dtype {dtype!r}: use numpy.float32 or numpy.float64") from None
    if d == np.float64:
        return "f64"
    if d == np.float32:
        return "f32"
    raise FrontendError(f"unsupported dtype {d}: use numpy.float32 or numpy.float64")


_NP = {"f32": np.float32, "f64": np.float64}


def _describe_dims(dims) -> str:
    """``[m, n]``; unnamed dims by their axes and tensor (``[axes 0, 1 of
    Tensor(3, 4)]``, ``[m, axis 1 of Tensor(m, 4)]``)."""
    dims = list(dims)
    origins = [d.origin.split(" of ", 1) for d in dims if d.origin is not None]
    if dims and len(origins) == len(dims) > 1 and len({o[1] for o in origins}) == 1:
        return f"[axes {', '.join(o[0].split()[1] for o in origins)} of {origins[0][1]}]"
    return "[" + ", ".join(d.name if d.origin is None else d.origin for d in dims) + "]"


class Tensor:
    """A tensor over named dims.

    ``Tensor(array)``            an input holding ``array`` (dims named later with ``to``)
    ``Tensor(128, 7)``           an input of that shape, data set later
    ``Tensor(s.m, s.k)``         an input over symbols, sizes inferred or set later
    ``Tensor()``                 a scalar; ``Tensor().set(1.0)``
    """

    def __init__(self, *args, dtype=None, copy: bool = True):
        self._init_node("leaf", (), (), {})
        self._dtype = None if dtype is None else _dtype_name(dtype)
        if (
            len(args) == 1
            and isinstance(args[0], (np.ndarray, list, tuple, float, np.floating))
            and not isinstance(args[0], bool)
        ):
            arr = np.asarray(args[0])
            made = f"Tensor(data of shape {arr.shape})"
            self._dims = tuple(Symbol("X", f"axis {i} of {made}") for i in range(arr.ndim))
            self._set_data(args[0] if isinstance(args[0], (float, list, tuple)) else arr, copy)
            return
        dims = []
        made = f"Tensor({', '.join(a.name if isinstance(a, Symbol) else repr(a) for a in args)})"
        for i, a in enumerate(args):
            if isinstance(a, Symbol):
                dims.append(a)
            elif isinstance(a, (int, np.integer)) and not isinstance(a, bool):
                s = Symbol("X", f"axis {i} of {made}")
                dims.append(s)
                self._size_facts[s] = _sizes.fix(s, int(a), f"Tensor(...) argument {i}")
            else:
                raise FrontendError(
                    f"Tensor() takes a numpy array, sizes (ints) or Symbols; argument {i} is {type(a).__name__} {a!r}"
                )
        if len({id(d) for d in dims}) != len(dims):
            raise FrontendError(f"Tensor{_describe_dims(dims)} names a dim twice")
        self._dims = tuple(dims)

    # ------------------------------------------------------------ nodes
    def _init_node(self, op, inputs, dims, attrs, eqs=()):
        self._op = op
        self._inputs = tuple(inputs)
        self._dims = tuple(dims)
        self._attrs = attrs
        self._eqs = list(eqs)  # structural equations (views, pads, concat)
        self._size_facts: dict = {}  # symbol -> Eq from set_size / Tensor(128)
        self._data_eqs: list = []
        self._data = None
        self._weak = False  # a Python number: takes the graph's dtype
        self._dtype = None
        self._data_dtype = None
        self._converted: dict = {}
        self._consumers = weakref.WeakSet()
        self._schedule = None
        self._result = None
        self._bound = None  # (the key of _result, the kernel bound to the inputs, _CLEARED then)
        self._fast = None  # _stamp() when _bound was made for the default target: _run's shortcut
        self._code = None  # (epoch, Lowered, scheduled text)
        _EPOCH[0] += 1
        for x in self._inputs:
            x._consumers.add(self)

    @classmethod
    def _node(cls, op, inputs, dims, attrs, eqs=()) -> "Tensor":
        t = cls.__new__(cls)
        t._init_node(op, inputs, dims, attrs, eqs)
        return t

    @classmethod
    def _constant(cls, value) -> "Tensor":
        t = cls._node("leaf", (), (), {})
        t._weak = True
        t._set_data(np.asarray(value, dtype=np.float64), copy=True)
        return t

    # ------------------------------------------------------------ data
    def _set_data(self, value, copy: bool) -> None:
        arr = np.asarray(value)
        if arr.dtype.kind not in "fiub":
            raise FrontendError(f"tensor data must be numeric, got dtype {arr.dtype}")
        if arr.ndim == 0 and self._dims:
            arr = np.full(self.shape, arr)
        if arr.ndim != len(self._dims):
            raise FrontendError(
                f"data of shape {arr.shape} does not fit a tensor over {len(self._dims)} dims {_describe_dims(self._dims)}"
            )
        # The data follows the graph's element type (float32 unless some
        # input was made with dtype=np.float64: loop_tool's rule, float64
        # only when asked), whatever its NumPy type.  It is kept in full
        # precision (float32 data as float32, other data as float64) and
        # converted once for the graph's type when a kernel runs.
        dtype = self._dtype
        if dtype:
            target = _NP[dtype]
        else:
            target = np.float32 if arr.dtype == np.float32 else np.float64
        if copy or arr.dtype != target or not arr.flags.c_contiguous:
            arr = np.array(arr, dtype=target, order="C", copy=True)
        eqs = [_sizes.fix(d, int(n), f"data of shape {arr.shape}") for d, n in zip(self._dims, arr.shape)]
        _sizes.solve(eqs + list(self._size_facts.values()))  # contradicts set_size?
        if self._data is None or self._data.shape != arr.shape or self._data_dtype != dtype:
            _EPOCH[0] += 1
        self._data = arr
        self._data_dtype = dtype
        self._data_eqs = eqs
        _DATA_VERSION[0] += 1
        self._converted = {}

    def _array(self, dtype: str, position: int) -> np.ndarray:
        if self._data is None:
            raise FrontendError(
                f"input {position} over {_describe_dims(self._dims)} has no data: call .set(array) on it first"
            )
        arr = self._converted.get(dtype)
        if arr is None:
            arr = self._data if self._data.dtype == _NP[dtype] else self._data.astype(_NP[dtype])
            self._converted[dtype] = arr
        return arr

    def _leaf_dtype(self) -> str | None:
        """f32 or f64, or None for data that follows the graph's type."""
        return self._dtype or self._data_dtype

    def set(self, value, copy: bool = True) -> "Tensor":
        """Data for an input (array or number), or a schedule for a computed
        tensor: an ``lt_mlir.Schedule``, scheduled lt IR text, or a pipeline
        string of loop passes applied to the default schedule."""
        if isinstance(value, Schedule):
            return self._set_schedule(("ir", value.text))
        if isinstance(value, str):
            if value.lstrip().startswith("for ") or " : L0" in value:
                raise FrontendError(
                    "a printed loop tree cannot be read back; change tensor.schedule (an lt_mlir.Schedule) "
                    "and pass it to set(), or pass lt IR text or a pipeline of loop passes"
                )
            kind = "ir" if "func.func" in value else "pipeline"
            return self._set_schedule((kind, value.strip()))
        if hasattr(value, "operation") and hasattr(value.operation, "get_asm"):
            return self._set_schedule(("ir", value.operation.get_asm(enable_debug_info=True)))
        if self._op != "leaf":
            raise FrontendError(
                f"cannot set data on a computed tensor ({self._describe()}); only inputs hold data "
                "(set() on a computed tensor takes a schedule)"
            )
        if self._weak:
            raise FrontendError("cannot set a Python constant")
        self._set_data(value, copy)
        return self

    def _set_schedule(self, schedule) -> "Tensor":
        if self._op == "leaf":
            raise FrontendError("a schedule applies to a computed tensor, not to an input")
        if schedule[0] == "pipeline":
            p = schedule[1]
            if p.startswith("builtin.module(") and p.endswith(")"):
                schedule = ("pipeline", p[len("builtin.module(") : -1])
        old = self._schedule
        self._schedule = schedule
        _EPOCH[0] += 1
        try:
            low = self._lowered()
        except SizeError:
            return self  # sizes not known yet: checked when the tensor runs
        except BaseException:
            self._schedule = old
            raise
        try:
            self._scheduled_text(low)
        except BaseException:
            self._schedule = old
            raise
        self._result = None
        return self

    def set_size(self, *sizes) -> "Tensor":
        """Sizes of this tensor's dims (``None`` leaves one open)."""
        if len(sizes) != len(self._dims):
            raise FrontendError(
                f"set_size got {len(sizes)} sizes for a tensor over {len(self._dims)} dims {_describe_dims(self._dims)}"
            )
        facts = dict(self._size_facts)
        for d, n in zip(self._dims, sizes):
            if n is None:
                continue
            if isinstance(n, np.integer):
                n = int(n)
            facts[d] = _sizes.fix(d, n, "set_size")
        _sizes.solve(list(facts.values()) + self._data_eqs)
        self._size_facts = facts
        _EPOCH[0] += 1
        return self

    # ------------------------------------------------------------ shapes
    @property
    def symbolic_shape(self) -> list:
        """The tensor's dims (``Symbol``s), in order."""
        return list(self._dims)

    @property
    def shape(self) -> list:
        """The size of each dim, inferred over every connected tensor
        (``SizeError`` names a dim whose size nothing fixes)."""
        sizes = self._solve()
        missing = [d for d in self._dims if d not in sizes]
        if missing:
            raise SizeError(self._unknown_message(missing))
        return [sizes[d] for d in self._dims]

    @property
    def ndim(self) -> int:
        """How many dims the tensor has."""
        return len(self._dims)

    def _component(self) -> list:
        """Every live tensor connected to this one (constants do not connect)."""
        seen = {id(self): self}
        stack = [self]
        while stack:
            n = stack.pop()
            if n._op == "leaf" and not n._dims and n is not self:
                continue
            for m in (*n._inputs, *list(n._consumers)):
                if id(m) not in seen:
                    seen[id(m)] = m
                    stack.append(m)
        return list(seen.values())

    def _all_eqs(self) -> list:
        return self._eqs + list(self._size_facts.values()) + self._data_eqs

    def _solve(self) -> dict:
        eqs = []
        for n in self._component():
            eqs.extend(n._all_eqs())
        return _sizes.solve(eqs)

    def unify(self) -> "Tensor":
        """Infer every size the program determines (raises on contradictions)."""
        self._solve()
        return self

    def _unknown_message(self, missing) -> str:
        names = ", ".join(d.describe() for d in dict.fromkeys(missing))
        return (
            f"unknown size of dim {names}: nothing in the program determines it "
            "(give it with .set_size(...), set data, or relate it to a sized dim)"
        )

    # ------------------------------------------------------------ building
    def _describe(self) -> str:
        if self._op == "leaf":
            return f"input over {_describe_dims(self._dims)}"
        what = self._attrs.get("fn") or self._attrs.get("kind") or self._op
        return f"{what} over {_describe_dims(self._dims)}"

    def _unary(self, fn: str) -> "Tensor":
        return Tensor._node("unary", (self,), self._dims, {"fn": fn})

    def _binary(self, other, fn: str, swap: bool = False) -> "Tensor":
        other = as_tensor(other, fn)
        a, b = (other, self) if swap else (self, other)
        dims = a._dims + tuple(d for d in b._dims if d not in a._dims)
        return Tensor._node("binary", (a, b), dims, {"fn": fn})

    def __add__(self, other):
        return self._binary(other, "add")

    def __radd__(self, other):
        return self._binary(other, "add", swap=True)

    def __sub__(self, other):
        return self._binary(other, "sub")

    def __rsub__(self, other):
        return self._binary(other, "sub", swap=True)

    def __mul__(self, other):
        return self._binary(other, "mul")

    def __rmul__(self, other):
        return self._binary(other, "mul", swap=True)

    def __truediv__(self, other):
        return self._binary(other, "div")

    def __rtruediv__(self, other):
        return self._binary(other, "div", swap=True)

    def __neg__(self):
        return self._unary("neg")

    def __abs__(self):
        return self._unary("abs")

    def max(self, other) -> "Tensor":
        """Elementwise maximum (``max_reduce`` reduces)."""
        return self._binary(other, "max")

    def min(self, other) -> "Tensor":
        """Elementwise minimum (``min_reduce`` reduces)."""
        return self._binary(other, "min")

    def exp(self):
        """Elementwise e**x (lazy, like every op)."""
        return self._unary("exp")

    def log(self):
        """Elementwise natural logarithm."""
        return self._unary("log")

    def sqrt(self):
        """Elementwise square root."""
        return self._unary("sqrt")

    def abs(self):
        """Elementwise absolute value."""
        return self._unary("abs")

    def reciprocal(self):
        """Elementwise 1 / x."""
        return self._unary("reciprocal")

    def negate(self):
        """Elementwise -x."""
        return self._unary("neg")

    def _reduce(self, kind: str, dims) -> "Tensor":
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        if not dims:
            dims = self._dims
        if not dims:
            raise FrontendError("nothing to reduce: the tensor has no dims")
        rdims = []
        for d in dims:
            if not isinstance(d, Symbol):
                raise FrontendError(f"reductions take Symbols, got {type(d).__name__} {d!r}")
            if d not in self._dims:
                raise FrontendError(
                    f"cannot reduce over {d.describe()}: the tensor's dims are {_describe_dims(self._dims)}"
                )
            if d not in rdims:
                rdims.append(d)
        out = tuple(d for d in self._dims if d not in rdims)
        return Tensor._node("reduce", (self,), out, {"kind": kind, "rdims": tuple(rdims)})

    def sum(self, *dims) -> "Tensor":
        """Sum over ``dims`` (all dims when none are given)."""
        return self._reduce("add", dims)

    def max_reduce(self, *dims) -> "Tensor":
        """Maximum over ``dims`` (all dims when none are given); ``max``
        is the elementwise maximum."""
        return self._reduce("max", dims)

    def min_reduce(self, *dims) -> "Tensor":
        """Minimum over ``dims`` (all dims when none are given)."""
        return self._reduce("min", dims)

    def prod(self, *dims) -> "Tensor":
        """Product over ``dims`` (all dims when none are given)."""
        return self._reduce("mul", dims)

    # ------------------------------------------------------------ views
    def flatten(self, *dims) -> "Tensor":
        """One dim for ``dims`` (all dims when none are given), in the order
        given, row-major (the last varies fastest), as loop_tool's
        ``flatten``: ``T[m, n]`` of 3 x 4 flattened is ``F[mn]`` of 12 with
        ``F[i] = T[i // 4, i % 4]``.  The new dim takes the place of the
        first; the sizes of ``dims`` must be known (``set_size`` or data).
        A view: nothing is copied until a kernel reads it."""
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        dims = tuple(dims) or self._dims
        for d in dims:
            if not isinstance(d, Symbol):
                raise FrontendError(f"flatten() takes Symbols, got {type(d).__name__} {d!r}")
            if d not in self._dims:
                raise FrontendError(f"cannot flatten {d.describe()}: the tensor's dims are {_describe_dims(self._dims)}")
        if len({id(d) for d in dims}) != len(dims):
            raise FrontendError(f"flatten{_describe_dims(dims)} names a dim twice")
        sizes = self._solve()
        unknown = [d for d in dims if d not in sizes]
        if unknown:
            raise SizeError(f"flatten needs the sizes of its dims: {self._unknown_message(unknown)}")
        new = Symbol("".join(d.name for d in dims) if all(d.origin is None for d in dims) else "X")
        total, strides = 1, {}
        for d in reversed(dims):
            strides[d] = total
            total *= sizes[d]
        maps = []
        for i, d in enumerate(self._dims):
            if d in strides:
                radix = 0 if d is dims[0] else sizes[d]  # the first digit needs no modulo
                maps.append(Expr._term(f"digit:{strides[d]}:{radix}", new))
            else:
                maps.append(Expr(d))
        out_dims = tuple(new if d is dims[0] else d for d in self._dims if d is dims[0] or d not in strides)
        origin = f"flatten of {_describe_dims(dims)}"
        return self._view(out_dims, maps, [_sizes.fix(new, total, origin)])

    def _view(self, dims, maps, eqs) -> "Tensor":
        return Tensor._node("view", (self,), dims, {"maps": tuple(maps)}, eqs)

    def to(self, *syms, constraints=()) -> "Tensor":
        """The same values over new dims.

        Without constraints, dims already named keep their place (so this
        can transpose) and the others are renamed in order.  A constraint
        ``(old, expr)`` reads the old dim at ``expr`` over the new ones
        (``(Ni, No + K)``: a sliding window; the old dim's size follows);
        ``(new, old + c)`` places the old dim at an offset (zero outside);
        ``(new, c)`` broadcasts; ``(Size(new), expr)`` fixes a size."""
        if len(syms) == 1 and isinstance(syms[0], (list, tuple)):
            syms = tuple(syms[0])
        new = list(syms)
        for s in new:
            if not isinstance(s, Symbol):
                raise FrontendError(f"to() takes Symbols, got {type(s).__name__} {s!r}")
        if len({id(s) for s in new}) != len(new):
            raise FrontendError(f"to{_describe_dims(new)} names a dim twice")
        old = list(self._dims)
        maps: dict = {}
        inverse: dict = {}  # old dim -> (new dim, offset)
        explicit: set = set()
        eqs = []
        for pair in constraints:
            try:
                lhs, rhs = pair
            except (TypeError, ValueError):
                raise FrontendError(f"a constraint is a pair (Symbol or Size(Symbol), Expr), got {pair!r}") from None
            rhs = as_expr(rhs)
            if isinstance(lhs, Expr):
                s = lhs.single_symbol(SIZE)
                if s is None:
                    raise FrontendError(f"the left side of a size constraint must be Size(symbol), got {lhs}")
                if IDX in rhs.kinds():
                    raise FrontendError(f"size constraint on '{s.name}' mixes in an index: {rhs}")
                terms = [(c, t) for (_, t), c in rhs.terms.items()]
                eqs.append(_sizes.Eq("lin", s, rhs.const, terms, f"constraint |{s.name}| = {rhs}"))
                explicit.add(s)
                continue
            if not isinstance(lhs, Symbol):
                raise FrontendError(f"the left side of a constraint must be a Symbol or Size(Symbol), got {lhs!r}")
            if SIZE in rhs.kinds():
                raise FrontendError(f"index constraint on '{lhs.name}' mixes in a size: {rhs}")
            if lhs in old:
                if lhs in maps or lhs in inverse:
                    raise FrontendError(f"two constraints map dim '{lhs.name}'")
                strays = [t for t in rhs.symbols() if t not in new]
                if strays:
                    raise FrontendError(
                        f"constraint {lhs.name} = {rhs} uses {_describe_dims(strays)}, which are not dims of to{_describe_dims(new)}"
                    )
                maps[lhs] = rhs
            elif lhs in new:
                if rhs.is_constant:
                    continue  # broadcast over `lhs` (loop_tool's idiom in nn.mean)
                src = rhs.single_symbol() if rhs.const == 0 else None
                syms_ = rhs.symbols()
                if len(syms_) != 1 or rhs.coefficient(syms_[0]) != 1 or syms_[0] not in old:
                    raise FrontendError(
                        f"constraint {lhs.name} = {rhs}: a new dim can only be an old dim plus a constant"
                    )
                src = syms_[0]
                if src in maps or src in inverse:
                    raise FrontendError(f"two constraints map dim '{src.name}'")
                inverse[src] = (lhs, rhs.const)
                maps[src] = Expr(lhs) - rhs.const
            else:
                raise FrontendError(
                    f"constraint on '{lhs.name}', which is neither a dim of the tensor {_describe_dims(old)} "
                    f"nor of to{_describe_dims(new)}"
                )
        for d in old:
            if d not in maps and d in new:
                maps[d] = Expr(d)
        rest_old = [d for d in old if d not in maps]
        if rest_old:
            used = {t for e in maps.values() for t in e.symbols()}
            free = [d for d in new if d not in used]
            if len(free) != len(rest_old):
                raise FrontendError(
                    f"to{_describe_dims(new)}: cannot tell which new dims rename {_describe_dims(rest_old)} "
                    f"of the tensor over {_describe_dims(old)}; name each old dim or give a constraint for it"
                )
            for o, n in zip(rest_old, free):
                maps[o] = Expr(n)
        for o in old:
            m = maps[o]
            if o in inverse:
                n, c = inverse[o]
                if n not in explicit:
                    eqs.append(_sizes.Eq("lin", n, c, [(1, o)], f"constraint {n.name} = {o.name} + {c}"))
                continue
            terms = [(c, t) for (_, t), c in m.terms.items()]
            what = f"{o.describe()} = {m}" if m.single_symbol() is not o else o.describe()
            eqs.append(_sizes.Eq("idx", o, m.const, terms, f"view {what}"))
        return self._view(tuple(new), [maps[o] for o in old], eqs)

    def __getitem__(self, index) -> "Tensor":
        """``X[s.No + s.K]``, ``X[s.C, s.H + s.Kh, s.W + s.Kw]``: one index
        expression per dim; the result's dims are the symbols used, in order."""
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) != len(self._dims):
            raise FrontendError(
                f"index with {len(index)} expressions into a tensor over {len(self._dims)} dims {_describe_dims(self._dims)}"
            )
        exprs = [as_expr(e) for e in index]
        new = []
        for e in exprs:
            if SIZE in e.kinds():
                raise FrontendError(f"index expression {e} uses a size")
            for s in e.symbols():
                if s not in new:
                    new.append(s)
        return self.to(*new, constraints=list(zip(self._dims, exprs)))

    def transpose(self, *dims) -> "Tensor":
        """The same tensor with its dims in the order given."""
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        if len(dims) != len(self._dims) or {id(d) for d in dims} != {id(d) for d in self._dims}:
            raise FrontendError(
                f"transpose{_describe_dims(dims)} must list each dim of {_describe_dims(self._dims)} once"
            )
        return self._view(tuple(dims), [Expr(d) for d in self._dims], [])

    def pad(self, dim, pre: int, post: int | None = None) -> "Tensor":
        """Zeros around ``dim``: ``pad(d, n)`` on both sides, ``pad(d, pre, post)``."""
        if post is None:
            post = pre
        if not isinstance(dim, Symbol) or dim not in self._dims:
            raise FrontendError(f"cannot pad '{getattr(dim, 'name', dim)}': the tensor's dims are {_describe_dims(self._dims)}")
        for v in (pre, post):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise FrontendError(f"pad amounts are non-negative ints, got {v!r}")
        pre, post = int(pre), int(post)
        new = Symbol(f"{dim.name}_p_{pre}_{post}")
        dims = tuple(new if d is dim else d for d in self._dims)
        maps = [Expr(new) - pre if d is dim else Expr(d) for d in self._dims]
        eq = _sizes.Eq("lin", new, pre + post, [(1, dim)], f"pad of {dim.describe()} by {pre}+{post}")
        return self._view(dims, maps, [eq])

    def __or__(self, other) -> "Tensor":
        """Concatenation along the one dim the two tensors name differently."""
        other = as_tensor(other)
        if len(self._dims) != len(other._dims):
            raise FrontendError(
                f"cannot concatenate {_describe_dims(self._dims)} with {_describe_dims(other._dims)}: ranks differ"
            )
        differ = [i for i, (a, b) in enumerate(zip(self._dims, other._dims)) if a is not b]
        if len(differ) != 1:
            raise FrontendError(
                f"cannot concatenate {_describe_dims(self._dims)} with {_describe_dims(other._dims)}: "
                "exactly one dim must differ (the one to join along)"
            )
        k = differ[0]
        a, b = self._dims[k], other._dims[k]
        new = Symbol(a.name + b.name)
        dims = tuple(new if i == k else d for i, d in enumerate(self._dims))
        eq = _sizes.Eq("lin", new, 0, [(1, a), (1, b)], f"concatenation of {a.describe()} and {b.describe()}")
        return Tensor._node("concat", (self, other), dims, {"axis": k}, [eq])

    # ------------------------------------------------------------ lowering
    def _graph(self) -> list:
        return topological(self)

    def _current(self) -> tuple:
        """(Lowered, scheduled text), lowered again only when something that
        changes the module changed since the last time."""
        cached = self._code
        if cached is not None and cached[0] == _EPOCH[0]:
            return cached[1], cached[2]
        low = self._lowered()
        text = self._scheduled_text(low)
        self._code = (_EPOCH[0], low, text)
        return low, text

    def _lowered(self) -> Lowered:
        stats["lowerings"] += 1
        nodes = self._graph()
        sizes = self._solve()
        missing = [d for n in nodes for d in n._dims if d not in sizes]
        if missing:
            raise SizeError(self._unknown_message(missing))
        f64 = any(n._op == "leaf" and not n._weak and n._leaf_dtype() == "f64" for n in nodes)
        return lower(self, sizes, "f64" if f64 else "f32", fastmath=_FASTMATH[0])

    def _scheduled_text(self, low: Lowered, tuned: bool = True) -> str:
        """The module this tensor runs: its own schedule applied, else the
        tuning database's (``tuned``, when the default schedule is "tuned"),
        else loop_tool's default."""
        if self._schedule is None:
            if tuned and _DEFAULT_SCHEDULE[0] == "tuned":
                entry = tuned_entry(low.text, _DEFAULT_HARDWARE[0].name)
                return entry.schedule if entry is not None else low.text
            return low.text
        kind, value = self._schedule
        if kind == "pipeline":
            key = (low.text, value)
            text = _SCHEDULED.get(key)
            if text is None:
                text = Schedule(low.text).apply(value).text
                _SCHEDULED[key] = text
            return text
        key = (low.text, value)
        if key not in _CHECKED:
            _check_signature(low.text, value)
            _CHECKED[key] = None
        return value

    @property
    def code(self) -> str:
        """The lt module this tensor runs (its schedule applied): input for
        ``lt-opt`` or ``lt_mlir.Schedule``."""
        return self._current()[1]

    @property
    def untuned_code(self) -> str:
        """The lt module this tensor runs without the tuning database's
        schedule: its own (``set``) or loop_tool's default.  A search starts
        here, so its winner is recorded under the program that
        ``set_default_schedule("tuned")`` looks up."""
        return self._scheduled_text(self._current()[0], tuned=False)

    def optimize(self, budget: int = 300, seconds: float | None = None, strategy: str = "evolution", workers=1, **options):
        """Search for a fast schedule of this tensor and keep the best
        (``lt_mlir.tune``; a progress bar on a terminal), on the default
        hardware; the winner goes to the tuning database.  ``options``:
        ``model``, ``seed``, ``log``, ``resume``, ``limits``, ``target``.
        Returns the search's ``TuneResult``."""
        if self._op == "leaf":
            raise FrontendError(f"{self._describe()} is an input, not a computation: it has no schedule to optimize")
        return _optimizer()(self, budget=budget, seconds=seconds, strategy=strategy, workers=workers, **options)

    @property
    def mlir(self) -> str:
        """The lt module (the same as ``code``)."""
        return self.code

    @property
    def loop_tree(self) -> str:
        """The loop nest, in loop_tool's format (lt_mlir's printer)."""
        return loop_tree(self.code)

    @property
    def schedule(self):
        """A new ``lt_mlir.Schedule`` over this tensor's current IR; change it
        and hand it back with ``tensor.set(schedule)``."""
        return Schedule(self.code)

    def compile(self, target: str | None = None):
        """Compile (or fetch from the cache) the kernel for ``target``
        (default: ``lt.set_default_hardware``'s); returns it."""
        return _kernel(self.code, _target(target))

    @property
    def compiled(self):
        """The compiled kernel (loop_tool's name for ``compile()``)."""
        return self.compile()

    @property
    def llvm(self) -> str:
        """The optimised LLVM IR of the compiled kernel."""
        return self.compile().llvm_ir

    def _run(self, target: str | None = None) -> np.ndarray:
        if target is None and self._fast == _stamp():
            # nothing that makes the module, its inputs or the target changed since the
            # kernel was bound for the default target: run it without finding it again
            # (a microsecond, 7% of a 15 us kernel)
            key, run = self._bound[0], self._bound[1]
        else:
            stamp, default, target = _stamp(), target is None, _target(target)
            if self._op == "leaf":
                if self._data is None:
                    raise FrontendError(f"{self._describe()} has no data: call .set(array) on it first")
                return self._array(self._leaf_dtype() or "f32", 0)
            key, run = self._bind(target)
            self._fast = stamp if default else None
        result = self._result
        if result is not None and result[0] == key:
            return result[1]
        out = run()
        stats["runs"] += 1
        self._result = (key, out)
        return out

    def _bind(self, target: Target) -> tuple:
        """(the key of a result, the kernel for ``target`` bound to the inputs)."""
        low, text = self._current()
        # the leaves are this tensor's graph's (fixed while ``text`` is): any
        # data given to any tensor since makes a new key (cheaper to form,
        # a call, than each leaf's own version)
        key = (text, target.name, _DATA_VERSION[0])
        bound = self._bound
        if bound is None or bound[0] != key or bound[2] != _CLEARED[0]:
            arrays = [leaf._array(low.dtype, i) for i, leaf in enumerate(low.leaves)]
            # Every program the frontend emits writes each element of its
            # output before anything reads it, so the output need not be zeroed.
            bound = self._bound = (key, _kernel(text, target).bind_inputs(*arrays, zero_outputs=False), _CLEARED[0])
        return key, bound[1]

    @property
    def arguments(self) -> list:
        """The input arrays of this tensor's kernel, in argument order (what
        ``numpy()`` passes it)."""
        if self._op == "leaf":
            raise FrontendError(f"{self._describe()} is an input, not a computation: it has no kernel")
        low = self._current()[0]
        return [leaf._array(low.dtype, i) for i, leaf in enumerate(low.leaves)]

    def numpy(self, target: str | None = None) -> np.ndarray:
        """The values as a NumPy array of your own, computed on ``target``
        (default: ``lt.set_default_hardware``'s).

        The kernel's output array itself is handed over, not a copy of it
        (copying costs as much as an elementwise kernel): the tensor keeps no
        reference to it, so the next ``numpy()`` runs the kernel again.
        ``resolve()`` computes ahead and keeps the result for the next
        ``numpy()``."""
        out = self._run(target)
        if self._op != "leaf":
            self._result = None
            return out
        return np.array(out, copy=True)

    def resolve(self, target: str | None = None) -> "Tensor":
        """Compute now (``numpy()`` then returns the stored result)."""
        self._run(target)
        return self

    def force_recompute(self) -> "Tensor":
        """Drop the stored result: the next ``numpy()`` runs the kernel again."""
        self._result = None
        return self

    def clear_cache(self) -> "Tensor":
        """Forget the computed result (loop_tool's name for
        ``force_recompute()``)."""
        return self.force_recompute()

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out.astype(dtype, copy=False) if dtype is not None else out

    def __iter__(self):
        raise TypeError("a Tensor is not iterable; use .numpy() for its values or X[...] with Symbols for a view")

    # ------------------------------------------------------------ pictures
    @property
    def ir(self) -> str:
        """The DAG in Graphviz DOT: one record per node (op, dims, sizes)."""
        return _dot(self)

    def __repr__(self) -> str:
        try:
            sizes = self._solve()
        except SizeError:
            sizes = {}
        dims = ", ".join(f"{d.name}={sizes.get(d, '?')}" for d in self._dims)
        return f"<lt.Tensor {self._describe().split(' over ')[0]} [{dims}]>"


def as_tensor(value, op: str | None = None) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return Tensor._constant(float(value))
    if isinstance(value, Symbol) and op in ("max", "min"):
        raise FrontendError(
            f"{op}() is elementwise (a Tensor or a number); to reduce over {value.describe()} use "
            f"{op}_reduce({value.name})"
        )
    raise FrontendError(f"expected a Tensor or a number, got {type(value).__name__}")


def _check_signature(default_text: str, text: str) -> None:
    default = parse_module(default_text)  # keep each module alive while its ops are used
    want = signature(find_function(default.operation, None))
    module = parse_module(text)
    got = signature(find_function(module.operation, None))
    a = [(s.shape, s.element, s.written) for s in want]
    b = [(s.shape, s.element, s.written) for s in got]
    if a != b:
        fmt = lambda specs: ", ".join(f"{'out ' if w else ''}{e}{list(sh)}" for sh, e, w in specs)  # noqa: E731
        raise FrontendError(
            f"the schedule's function takes ({fmt(b)}) but this tensor's program takes ({fmt(a)}); "
            "build the schedule from tensor.schedule or tensor.code"
        )


def _dot(root: Tensor) -> str:
    try:
        sizes = root._solve()
    except SizeError:
        sizes = {}
    nodes = topological(root)
    number = {id(n): i for i, n in enumerate(nodes)}
    symbols = []
    for n in nodes:
        for d in n._dims:
            if d not in symbols:
                symbols.append(d)

    def esc(text: str) -> str:
        for ch in "{}|<>\"":
            text = text.replace(ch, "\\" + ch)
        return text

    lines = ["digraph G {", ' node [fontname = "courier", fontsize=12];']
    var_label = "|".join(f"<{i}>{esc(d.name)}" for i, d in enumerate(symbols))
    lines.append(f' {{ rank=sink; vars[shape=record,label="{var_label}"]; }}')
    for n in nodes:
        i = number[id(n)]
        if n._op == "leaf":
            what = "constant" if n._weak else "read"
        elif n._op == "view":
            what = "view"
        else:
            what = n._attrs.get("fn") or n._attrs.get("kind") or n._op
            if n._op == "reduce":
                what = {"add": "sum", "max": "max_reduce", "min": "min_reduce", "mul": "prod"}[what]
        loop_dims = n._inputs[0]._dims if n._op == "reduce" else n._dims
        dims = ", ".join(d.name for d in n._dims)
        loops = "|".join(f"<{k}>{esc(d.name)}:{sizes.get(d, '?')}" for k, d in enumerate(loop_dims))
        lines.append(f' {i}[shape=record,label="{{{esc(what)} : [{esc(dims)}]|{{{loops}}}}}"];')
        for x in n._inputs:
            lines.append(f" {number[id(x)]} -> {i};")
        if is_compute(n):
            for k, d in enumerate(loop_dims):
                lines.append(f' "vars":{symbols.index(d) if d in symbols else 0} -> "{i}":{k}[style=dotted,arrowhead=none,weight=0];')
    lines.append("}")
    return "\n".join(lines) + "\n"
