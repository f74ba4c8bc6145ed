"""``lt_mlir.appy``: APPy's annotated Python loops, compiled through ``lt``.

APPy (Annotated Parallelism for Python, CC'24) lets people write ordinary
sequential loops over NumPy arrays and mark them with OpenMP-like comments::

    import numpy as np
    import lt_mlir.appy as appy

    @appy.jit
    def gesummv(alpha, beta, A, B, x):
        y = np.empty((A.shape[0],), dtype=x.dtype)
        #pragma parallel for
        for i in range(A.shape[0]):
            s = 0.0
            #pragma simd
            for j in range(A.shape[1]):
                s += alpha * A[i, j] * x[j] + beta * B[i, j] * x[j]
            y[i] = s
        return y

How it runs: the function is Python, except that every ``for`` statement
with a pragma (an *annotated nest*) becomes an lt kernel
(``translate.py``), compiled for the values its free names have at the
call — arrays by shape and dtype, ints that size loops by value (other
ints, like a time step indexing ``fict[t]``, are run-time arguments), floats
by type (runtime arguments) — and cached per such signature, so a call
with other shapes compiles again and never reuses a wrong kernel.  Code
outside annotated nests (``np.empty``, time loops around nests, ``return``)
runs as Python.

Pragmas (a comment line above the ``for``): ``#pragma parallel for`` runs
the loop's iterations in parallel (``lt-parallel`` on the CPU): iterations
that conflict (two write one element, or one writes what another reads) are
refused with the loop and the conflict named — the dependence test of every
lt pass — unless ``jit(unsafe=True)``; reductions (``s += ...``,
``y[0] += ...``) are recognised without clauses.  ``#pragma simd`` asks for
vector code (``lt-vectorize`` at this CPU's width); where the loop cannot be
vectorized the call warns (located) and the loop runs scalar.  Clauses
``shared(...)``, ``reduction(op:vars)`` and ``atomic`` are accepted (lt
derives what they say and checks it); other pragma text is a located
error.  A function's scalar that a nest only ever sets to one value and
never reads (``a = 1`` under ``shared(a)``, ``found = True``) is no race:
the kernel counts the stores and the scalar takes the value if any
iteration stored it; any other store of a function scalar from every
iteration is refused as a race.

``jit`` options: ``backend`` (a target of ``lt_mlir.targets``: "cpu",
"cuda", "cuda-emulated"; APPy's "triton" means "cuda"), ``dump_code`` (print each nest's lt module
and loop tree when it compiles), ``auto_simd`` (vectorize the innermost
loop of parallel nests without a pragma), ``unsafe``.  Unknown options are
an error.  Where the CUDA runtime cannot open a device (no driver, no GPU),
a "cuda" function called with NumPy arrays runs its nests on the CPU, as
"cpu", with one ``NoCudaDeviceWarning`` a process naming the runtime's
reason (``LT_APPY_BACKEND=cpu`` asks for the CPU and does not warn).

APPy's legacy array helpers ``empty``, ``zeros``, ``empty_like`` and
``zeros_like`` (torch tensors in APPy's CC'24 version) make NumPy arrays.

On the CUDA target arrays may be NumPy arrays (copied to the GPU and back
by each nest) or GPU arrays that export DLPack (``torch`` and ``cupy``
CUDA tensors, as APPy's own programs pass), used in place.  A GPU machine
need not have the MLIR bindings: with ``LT_APPY_KERNELS=<dir>`` every CUDA
kernel compiled is also saved there (PTX and launch plan, named by the
function, the nest and a hash of the signature), and a kernel found there
is loaded instead of compiled.  ``compile_only()`` fills such a directory
on a machine without a GPU: calls inside it compile (and save) every
nest's kernel and launch none::

    LT_APPY_KERNELS=kernels python build.py   # here: with appy.compile_only(): f(*numpy stand-ins)
    LT_APPY_KERNELS=kernels python run.py     # on the GPU machine: f(*cuda tensors)
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import itertools
import json
import os
import re
import sys
import textwrap
import tokenize
import warnings
import weakref
from io import StringIO
from typing import TYPE_CHECKING

import numpy as np

from ..errors import LtError, PassError
from ..targets import TARGETS, Target, get_target
from . import tensor_expr
from .slices import desugar as desugar_slices
from .translate import OOB_FLAG, OOB_SITES, AppyError, Translator, element_type, static_names

if TYPE_CHECKING:  # the compiler (MLIR bindings) loads when a nest compiles: a
    from ..schedule import Schedule  # GPU machine running saved kernels has none

__all__ = ["AppyError", "NoCudaDeviceWarning", "compile_only", "empty", "empty_like", "jit", "zeros", "zeros_like"]
BACKEND_ENV = "LT_APPY_BACKEND"  # overrides every jit's backend (run a GPU program on the CPU)
KERNELS_ENV = "LT_APPY_KERNELS"  # a directory of saved CUDA kernels (module docs)
_compile_only = False


# APPy's legacy array helpers (its CC'24 interface, there on torch): here NumPy arrays.
def empty(shape, dtype=np.float64) -> np.ndarray:
    return np.empty(shape, dtype=dtype)


def zeros(shape, dtype=np.float64) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


def empty_like(a, dtype=None) -> np.ndarray:
    return np.empty_like(a, dtype=dtype)


def zeros_like(a, dtype=None) -> np.ndarray:
    return np.zeros_like(a, dtype=dtype)


class NoCudaDeviceWarning(UserWarning):
    """A GPU backend's nests ran on the CPU: this machine has no usable CUDA device."""


class _CudaCheck:
    """Whether this process can run CUDA kernels, asked of the runtime once,
    and whether the fall-back to the CPU was announced."""

    def __init__(self):
        self.checked, self.problem, self.warned = False, None, False

    def missing(self) -> str | None:
        """Why no CUDA kernel can run here (the runtime's message), or None."""
        if not self.checked:
            from ..runtime import cuda

            self.problem = cuda.device_problem()
            self.checked = True
        return self.problem


_cuda_check = _CudaCheck()


@contextlib.contextmanager
def compile_only():
    """Calls of ``@appy.jit`` functions in this block compile each
    annotated nest's kernel (and save it under ``LT_APPY_KERNELS``) but run
    none: the host code between nests runs on arrays the nests never filled."""
    global _compile_only
    before, _compile_only = _compile_only, True
    try:
        yield
    finally:
        _compile_only = before


def _on_gpu(v) -> bool:
    """A GPU array that exports DLPack (a torch or cupy CUDA tensor)."""
    if isinstance(v, np.ndarray) or not hasattr(v, "__dlpack_device__"):
        return False
    try:
        return v.__dlpack_device__()[0] != 1  # kDLCPU
    except Exception:  # noqa: BLE001 (an exporter that cannot say is not one we can use)
        return False


def _layout(v) -> tuple:
    """What a kernel bound to array ``v`` depends on: its shape (a GPU
    array), or its shape, strides, dtype and data address (a NumPy one)."""
    if isinstance(v, np.ndarray):
        return (v.shape, v.strides, v.dtype, v.ctypes.data)
    return tuple(v.shape)


def _snapshot(v, on_gpu: bool) -> tuple:
    """What ``_unchanged`` compares: an array weakly, with its layout;
    anything else by type and value."""
    if on_gpu or isinstance(v, np.ndarray):
        return (weakref.ref(v), _layout(v))
    return (None, type(v), v)


def _unchanged(values: list, snapshots: list) -> bool:
    for v, snap in zip(values, snapshots):
        ref = snap[0]
        if ref is not None:
            if ref() is not v or _layout(v) != snap[1]:
                return False
        elif type(v) is not snap[1] or not (v is snap[2] or v == snap[2]):
            return False
    return True


def _to_gpu_like(a: np.ndarray, like):
    """``a`` copied to the GPU by the library of GPU array ``like`` (torch or
    cupy), without importing either here."""
    library = sys.modules.get(type(like).__module__.split(".")[0])
    if library is not None and hasattr(library, "from_numpy") and hasattr(like, "device"):
        return library.from_numpy(a).to(like.device)  # torch
    if library is not None and hasattr(library, "asarray"):
        return library.asarray(a)  # cupy
    raise AppyError(f"error: cannot pass a scalar to a kernel beside GPU arrays of {type(like).__module__}.{type(like).__name__}")


@functools.lru_cache(maxsize=64)
def _numpy_dtype(dtype) -> np.dtype:
    """NumPy's dtype for a GPU array's (``torch.float32`` -> float32)."""
    return dtype if isinstance(dtype, np.dtype) else np.dtype(str(dtype).rsplit(".", 1)[-1])


def _stand_in(v) -> np.ndarray:
    """A NumPy array of ``v``'s shape and dtype that owns no memory (what
    the translator reads of an array: its shape and element type)."""
    return np.broadcast_to(np.zeros((), _numpy_dtype(v.dtype)), tuple(int(n) for n in v.shape))

BACKEND_ALIASES = {"triton": "cuda"}  # APPy's backend names that are not target names
_PRAGMA = re.compile(r"#\s*pragma\s+(.*)$")
_CLAUSE = re.compile(r"(shared|reduction|private|firstprivate)\s*\([^)]*\)")


def jit(fn=None, *, backend: str = "cpu", dump_code: bool = False, auto_simd: bool = False, unsafe: bool = False, dry_run: bool = False, **options):
    """Compile ``fn``'s annotated loops (module docs); bare (``@appy.jit``)
    or with options (``@appy.jit(backend="cpu", dump_code=True)``).
    ``dry_run`` (APPy's): run ``fn`` as the plain Python it is."""
    if options:
        raise AppyError(f"error: unknown appy.jit option(s): {', '.join(sorted(options))} (backend, dump_code, auto_simd, unsafe, dry_run)")
    if dry_run:
        return fn if fn is not None else (lambda f: f)
    backend = os.environ.get(BACKEND_ENV) or backend
    name = BACKEND_ALIASES.get(backend, backend)
    if name not in TARGETS:
        raise AppyError(f"error: unknown backend '{backend}' (one of: {', '.join([*TARGETS, *BACKEND_ALIASES])})")
    target = get_target(name)

    def wrap(f):
        return Program(f, target, dump_code, auto_simd, unsafe)

    return wrap(fn) if fn is not None else wrap


class Nest:
    """One annotated loop nest: its AST, pragmas and compiled kernels."""

    def __init__(self, node: ast.For, pragmas: dict, program: "Program", index: int):
        self.node, self.pragmas, self.program, self.index = node, pragmas, program, index
        self.inputs: list = []  # the names it reads from outside (_nest_inputs)
        self.static = static_names(node)  # ints that size its loops: part of the signature by value
        self.outs: list = []  # the function's scalars it assigns (one-element arrays while it runs)
        self.set_once: dict = {}  # those it only sets to one value: name -> (its flag, the value's code)
        self.cache: dict = {}  # signature -> (kernel, argument names)
        self.scalars: dict = {}  # name -> (dtype, value, its GPU copy): scalars beside GPU arrays
        self._last = None  # (snapshot of the inputs, kernel, arguments, check flag, checks) to rerun
        self.schedule_tree = ""  # the loop tree of the kernel compiled last

    def signature(self, values: dict, gpu: frozenset = frozenset()) -> tuple:
        """What the kernel depends on: arrays by shape and dtype (``gpu``:
        the names of GPU arrays, read the same way), ints that size loops by
        value (the others by type: run-time arguments), floats by
        type."""
        key = []
        for name in sorted(values):
            v = values[name]
            if name in gpu:
                key.append((name, "array", tuple(v.shape), _numpy_dtype(v.dtype).str))
            elif isinstance(v, np.ndarray):
                key.append((name, "array", v.shape, v.dtype.str))
            elif isinstance(v, (bool, np.bool_)):
                key.append((name, "bool", bool(v)))
            elif isinstance(v, (int, np.integer)):
                key.append((name, "int", int(v)) if name in self.static else (name, "int"))
            elif isinstance(v, (float, np.floating)):
                key.append((name, "float", type(v).__name__))
            else:
                key.append((name, type(v).__name__))
        return tuple(key)

    def call(self, local_names: dict, global_names: dict) -> None:
        """Run the nest with its inputs looked up where the function's code
        stood (locals first; a name bound nowhere is None).  A call with the
        arrays of the last one (same objects, same layout) and the same other
        values runs its kernel again without the signature and the checks."""
        values = [local_names[n] if n in local_names else global_names.get(n) for n in self.inputs]
        last = self._last
        if last is not None and not _compile_only and _unchanged(values, last[0]):
            flag = last[3]
            if flag is None:
                last[1](*last[2])
                return None
            flag[0] = 0  # a bound CPU kernel with index checks: its flag, reset
            last[1]()
            self._report(int(flag[0]), last[4])
            return None
        values = dict(zip(self.inputs, values))
        if not self.outs:
            self.run(values)
            return None
        held = [n for n in self.outs if n not in self.set_once]  # one-element arrays in the kernel
        before = {n: values[n] for n in held}
        for n, v in before.items():
            if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
                raise AppyError(f"{self.program.where(self.node)}: error: '{n}' is assigned in the loop but holds {type(v).__name__}, not a number, before it")
            values[n] = np.array([v], dtype=np.float64 if isinstance(v, (float, np.floating)) else np.int64)
        for n, (flag, _) in self.set_once.items():
            if n not in local_names:
                raise AppyError(f"{self.program.where(self.node)}: error: '{n}' is assigned in the loop but not bound before it")
            before[n] = local_names[n]
            values[flag] = np.zeros(1, np.int64)  # how many iterations stored it
            held.append(flag)
        gpu = [v for v in values.values() if _on_gpu(v)]
        if gpu:
            values.update({n: _to_gpu_like(values[n], gpu[0]) for n in held})
        self.run(values)
        out = []
        for n in self.outs:
            if n in self.set_once:
                flag, value = self.set_once[n]
                out.append(eval(value, global_names, local_names) if values[flag][0].item() else before[n])
            else:
                out.append(type(before[n])(values[n][0].item()))
        return tuple(out)

    def run(self, values: dict) -> None:
        gpu = {n for n, v in values.items() if _on_gpu(v)}
        target = self.program.target_for(bool(gpu))
        if gpu and not target.on_device:
            on_device = ", ".join(f"'{n}'" for n, t in TARGETS.items() if t.on_device)
            raise AppyError(
                f"{self.program.where(self.node)}: error: array '{sorted(gpu)[0]}' is on a GPU; "
                f"the {target.name} backend takes NumPy arrays (use backend={on_device})"
            )
        key = self.signature(values, frozenset(gpu))
        entry = self.cache.get((target.name, key))
        if entry is None:
            plain = {n: (_stand_in(v) if n in gpu else v) for n, v in values.items()}
            entry = self.cache[target.name, key] = self._stored(key, target) or self.compile(plain, key, target)
        if _compile_only:
            return
        kernel, names, checks = entry
        args = []
        flag = None
        for n in names:
            v = values.get(n)
            if n == OOB_FLAG:  # data-dependent indices report here (translate.Translator.checked)
                flag = np.zeros(1, np.int64)
                if gpu:
                    flag = _to_gpu_like(flag, values[min(gpu)])
                args.append(flag)
            elif n in gpu:
                args.append(v)
            elif isinstance(v, np.ndarray):
                if not v.flags.c_contiguous:
                    raise AppyError(f"{self.program.where(self.node)}: error: array '{n}' is not contiguous (pass np.ascontiguousarray)")
                args.append(v)
            else:
                if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                    scalar = np.asarray(v, dtype=np.int64)  # an int that sizes no loop (translate.static_names)
                else:
                    scalar = np.asarray(v, dtype=np.float32 if isinstance(v, np.float32) else np.float64)
                if gpu:
                    # with GPU arrays, a scalar goes to the GPU too (one launch:
                    # one kind of array); kept for the next call with that value
                    held = self.scalars.get(n)
                    if held is None or held[0] != scalar.dtype or held[1] != scalar:
                        held = self.scalars[n] = (scalar.dtype, scalar, _to_gpu_like(scalar, values[min(gpu)]))
                    args.append(held[2])
                else:
                    args.append(scalar)
        self._last = None
        kernel(*args)
        code = int(flag[0].item() if gpu else flag[0]) if flag is not None else 0
        if self.outs:
            self._report(code, checks)
            return
        try:
            if gpu and flag is None and not any(isinstance(values[n], np.ndarray) for n in self.inputs):
                self._last = ([_snapshot(values[n], n in gpu) for n in self.inputs], kernel, args, None, checks)
            elif not gpu:
                # the CPU: the next call with these very arrays (same layout,
                # same address) and values runs the bound kernel directly
                self._last = ([_snapshot(values[n], False) for n in self.inputs], kernel.bind(*args), (), flag, checks)
        except TypeError:  # an array that cannot be weakly referenced
            pass
        self._report(code, checks)

    def _report(self, code: int, checks: list) -> None:
        """Raise the located error of the first index check that fired."""
        if code:
            raise AppyError(checks[OOB_SITES - code - 1])

    def _store_prefix(self, key: tuple, target: Target) -> str | None:
        """Where this nest's CUDA kernel for signature ``key`` is saved
        (``LT_APPY_KERNELS``), or None."""
        directory = os.environ.get(KERNELS_ENV)
        if not directory or not target.on_device:
            return None
        digest = hashlib.sha1(repr(key).encode()).hexdigest()[:16]
        return os.path.join(directory, f"{self.program.fn.__name__}_{self.index}_{digest}")

    def _stored(self, key: tuple, target: Target):
        """(kernel, argument names) saved for ``key``, or None."""
        prefix = self._store_prefix(key, target)
        if prefix is None or not os.path.exists(prefix + ".json"):
            return None
        from ..runtime import cuda

        with open(prefix + ".args.json") as fh:
            saved = json.load(fh)
        return cuda.load(prefix + ".json"), saved["args"], saved["checks"]

    def pragma_of(self, loop_node) -> dict | None:
        """The pragma of a loop: its own where a tensor-expression statement
        made it (``tensor_expr``), else the comment above it."""
        if hasattr(loop_node, "appy_pragma"):
            return loop_node.appy_pragma
        return self.pragmas.get(loop_node.lineno)

    def compile(self, values: dict, key: tuple | None = None, target: Target | None = None):
        from ..schedule import Schedule

        p = self.program
        target = target or p.target
        cpu = not target.gpu_mapping  # pragmas map to CPU threads and vectors, else to GPU blocks and threads
        t = Translator(self.node, values, p.filename, 1, f"{p.fn.__name__}_{self.index}")
        text = t.translate()
        s = Schedule(text)
        width = None
        for k, loop_node in enumerate(t.dynamic_loops):
            pragma = self.pragma_of(loop_node)
            if pragma is None:
                continue
            why = "the loop's bounds are data: only simd applies (on the CPU)"
            if "simd" in pragma and "parallel" not in pragma and cpu:
                width = width or target.vector_width(4 if element_type(_first_array(values).dtype) == "f32" else 8)
                try:
                    s.vectorize_data(k, width)
                    continue
                except PassError as e:
                    why = _reason(e)
            warnings.warn_explicit(
                f"#pragma {pragma['text']}: {why} ({ast.unparse(loop_node.iter)}); "
                "it runs sequentially in each iteration of the loops around it",
                RuntimeWarning,
                p.filename,
                loop_node.lineno,
            )
        blocks = []  # the GPU's parallel loops: (index, dim)
        outer_parallel: list = []  # the nodes inside each outermost parallel loop
        for i, (loop_node, _dim) in enumerate(t.loops):
            pragma = self.pragma_of(loop_node)
            innermost = i == len(t.loops) - 1
            if pragma is None and not (p.auto_simd and innermost and cpu):
                continue
            pragma = pragma or {"text": "simd (auto_simd)", "simd": True}
            line = loop_node.lineno
            gpu = not cpu
            if "parallel" in pragma and gpu and "simd" in pragma:
                continue  # one loop for blocks and threads: lt-gpu-auto splits it (below)
            if "parallel" in pragma:
                nested = any(id(loop_node) in inside for inside in outer_parallel)
                if not gpu and p.unsafe:
                    if not nested:
                        s.assume_parallel(i)
                        outer_parallel.append({id(n) for n in ast.walk(loop_node)})
                else:
                    try:
                        # on the GPU only checked here (the same dependence
                        # test); lt-gpu-auto maps it below, with the loops
                        # inside.  A parallel loop inside another is checked
                        # and runs in the outer one's threads (blocks).
                        if nested:
                            Schedule(text).parallel(i)
                        elif gpu:
                            Schedule(text).gpu_map(i, "block")
                        else:
                            # iterations of unequal work (a triangle's rows,
                            # CSR rows) are dealt to threads as they finish
                            s.parallel(i, schedule="guided" if _uneven(loop_node, t.dynamic_loops) else "static")
                        if not nested:
                            outer_parallel.append({id(n) for n in ast.walk(loop_node)})
                    except PassError as e:
                        raise AppyError(f"{p.filename}:{line}: error: #pragma {pragma['text']} refused: {_reason(e)}") from None
                    if gpu and not nested:
                        blocks.append((i, _dim))
            if "simd" in pragma:
                try:
                    if cpu:
                        width = width or target.vector_width(4 if element_type(_first_array(values).dtype) == "f32" else 8)
                        far = _far_gather(s, i)
                        if far:
                            raise PassError(
                                f"the loop would gather elements {far} bytes apart (a column: measured slower than the "
                                "scalar loop); write the loop along the rows to vectorize it"
                            )
                        s.vectorize(i, width)
                    # on the GPU a simd loop is the block's threads: lt-gpu-auto
                    # (below) maps it, thread-strided and split to fit a block
                except PassError as e:
                    warnings.warn_explicit(
                        f"#pragma {pragma['text']}: {_reason(e)}; the loop runs sequentially in each iteration of the loops around it",
                        RuntimeWarning,
                        p.filename,
                        line,
                    )
        if not cpu:
            # lt-gpu-auto maps the nest: a parallel loop's iterations to
            # blocks, the simd loops in its body to the block's threads
            # (thread-strided, 128-bit, split to fit a block; reductions
            # combined across the block), a "parallel for simd" loop to
            # blocks x threads.  Where it leaves a parallel loop unmapped,
            # the pragmas map it: the parallel loop to blocks.
            try:
                mapped = Schedule(s.text)
                mapped.gpu_auto()
                if not all(_block_mapped(mapped, dim) for _, dim in blocks):
                    # (a nest lt-gpu-auto leaves alone, e.g. one whose iterations
                    # share a reduction it would have to make atomic): the
                    # parallel loop's iterations on blocks of 256 threads
                    mapped = s
                    for i, _ in sorted(blocks, reverse=True):
                        if _loop_size(mapped, i) > GPU_THREADS:
                            mapped.split(i, GPU_THREADS)
                            mapped.gpu_map(i, "block").gpu_map(i + 1, "thread")
                        else:
                            mapped.gpu_map(i, "block")
                    mapped.gpu_auto()
                s = mapped
            except PassError as e:
                raise AppyError(f"{p.where(self.node)}: error: {_reason(e)}") from None
        self.schedule_tree = s.loop_tree
        if p.dump_code:
            print(text)
            print(self.schedule_tree)
        try:
            kernel = s.compile(target=target.name)
        except LtError as e:
            raise AppyError(f"{p.where(self.node)}: error: {_reason(e)}") from None
        prefix = self._store_prefix(key, target) if key is not None else None
        if prefix is not None:
            from ..runtime import cuda

            os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
            cuda.save(prefix, kernel.meta, kernel.ptx)
            with open(prefix + ".args.json", "w") as fh:
                json.dump({"args": list(t.args), "checks": t.checks}, fh)
        return kernel, t.args, t.checks


def _uneven(loop_node, dynamic_loops: list) -> bool:
    """Whether the iterations of ``loop_node`` may do unequal work: a loop
    inside has bounds that move with its variable or come from data."""
    var = loop_node.target.id
    for n in ast.walk(loop_node):
        if n is loop_node or not isinstance(n, ast.For):
            continue
        if any(n is d for d in dynamic_loops):
            return True
        if any(isinstance(m, ast.Name) and m.id == var for m in ast.walk(n.iter)):
            return True
    return False


GPU_THREADS = 256  # threads a block for a parallel loop the pragmas map themselves


def _loop_size(s: Schedule, loop: int) -> int:
    from ..dialect import lt
    from ..dialect.loop_tree import preorder_loops

    module = s.module
    with module.context:
        return lt.inner_loop_extent(preorder_loops(module)[loop])


GATHER_LIMIT = 4096  # bytes between gathered elements beyond which a simd loop stays scalar


def _far_gather(s: Schedule, loop: int) -> int:
    """The largest distance in bytes between the elements vectorizing
    L``loop`` would gather, if beyond ``GATHER_LIMIT`` (each lane another
    page: measured slower than the scalar loop, gemver's column sums); else 0."""
    from ..analysis.vector_plan import gather_distances
    from ..dialect.loop_tree import preorder_loops

    module = s.module
    with module.context:
        far = max(gather_distances(preorder_loops(module)[loop]), default=0)
    return far if far > GATHER_LIMIT else 0


def _block_mapped(s: Schedule, dim: str) -> bool:
    """Whether some loop over ``dim`` runs on GPU blocks."""
    from ..dialect import lt
    from ..dialect.loop_tree import preorder_loops

    module = s.module
    with module.context:
        return any(lt.loop_dim(l) == dim and lt.annotations(l).get("gpu") == "block" for l in preorder_loops(module))


def _first_array(values: dict):
    return next((v for v in values.values() if isinstance(v, np.ndarray)), np.empty(0, np.float64))


def _reason(e: Exception) -> str:
    text = str(e)
    return text.split("error: ", 1)[-1]


class Program:
    """An ``@appy.jit`` function: Python with its annotated nests compiled."""

    def __init__(self, fn, target: Target, dump_code: bool, auto_simd: bool, unsafe: bool):
        self.fn, self.target, self.dump_code, self.auto_simd, self.unsafe = fn, target, dump_code, auto_simd, unsafe
        functools.update_wrapper(self, fn)
        try:
            source = inspect.getsource(fn)
            self.filename = inspect.getsourcefile(fn) or "<appy>"
            self.first_line = fn.__code__.co_firstlineno
        except (OSError, TypeError):
            raise AppyError(f"error: cannot read the source of {fn.__name__}: appy.jit needs functions defined in files") from None
        source = textwrap.dedent(source)
        shift = self.first_line - 1  # every line number below is the file's
        self.pragmas = {line + shift: p for line, p in self._pragmas(source).items()}
        tree = ast.parse(source)
        ast.increment_lineno(tree, shift)
        fdef = tree.body[0]
        if not isinstance(fdef, (ast.FunctionDef,)):
            raise AppyError(f"{self.filename}:{self.first_line}: error: appy.jit decorates functions")
        fdef.decorator_list = []
        self.nests: list[Nest] = []
        self._fdef = fdef
        self._check_placement(fdef)
        self._expand_tensor_statements(fdef)
        self._annotated = [n for n in ast.walk(fdef) if isinstance(n, ast.For) and self._is_annotated(n)]
        fdef.body = [self._rewrite(stmt) for stmt in fdef.body]
        ast.fix_missing_locations(tree)
        namespace = dict(fn.__globals__)
        namespace["__appy_nests__"] = self.nests
        exec(compile(tree, self.filename, "exec"), namespace)
        self._python = namespace[fdef.name]

    def where(self, node) -> str:
        return f"{self.filename}:{node.lineno}"

    def target_for(self, gpu_arrays: bool) -> Target:
        """Where a nest of this function runs: its backend, or the CPU when
        the backend needs a CUDA device, the arrays are NumPy's and this
        machine has no usable device (announced once a process with a
        ``NoCudaDeviceWarning``).  ``compile_only`` keeps the backend: it
        compiles GPU kernels to run elsewhere."""
        if not self.target.on_device or gpu_arrays or _compile_only:
            return self.target
        problem = _cuda_check.missing()
        if problem is None:
            return self.target
        if not _cuda_check.warned:
            _cuda_check.warned = True
            warnings.warn_explicit(
                f"no usable CUDA device ({problem}): the nests of @appy.jit functions for the {self.target.name} backend "
                "(APPy's 'triton') run on the CPU, as backend 'cpu'; set LT_APPY_BACKEND=cpu to ask for that",
                NoCudaDeviceWarning,
                self.filename,
                self.first_line,
            )
        return get_target("cpu")

    def _pragmas(self, source: str) -> dict:
        """Source line of the statement below a pragma -> the pragma."""
        found, pending = {}, None
        for tok in tokenize.generate_tokens(StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                m = _PRAGMA.match(tok.string.strip())
                if m:
                    if pending is not None:
                        raise AppyError(
                            f"{self.filename}:{self.first_line + tok.start[0] - 1}: error: a second pragma above one statement "
                            f"('#pragma {pending[1]}' and '#pragma {m.group(1).strip()}'): write them as one"
                        )
                    pending = (tok.start[0], m.group(1).strip())
            elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) and pending is not None:
                found[tok.start[0]] = self._parse(pending[1], pending[0])
                pending = None
        return found

    def _parse(self, text: str, line: int) -> dict:
        if tensor_expr.is_tensor_pragma(text):  # ':M=>parallel :N=>reduce(sum)' over a sliced statement
            where = f"{self.filename}:{self.first_line + line - 1}"
            return {"text": text, "tensor": tensor_expr.parse(text, where, self.first_line + line - 1)}
        rest = _CLAUSE.sub("", text).strip()
        words = rest.split()
        known = {"parallel", "for", "simd", "atomic"}
        unknown = [w for w in words if w not in known]
        if unknown or not words and text == rest:
            raise AppyError(
                f"{self.filename}:{self.first_line + line - 1}: error: unknown pragma '#pragma {text}' "
                "(parallel for, simd, parallel for simd, atomic; clauses shared(...), reduction(op:vars))"
            )
        out = {"text": text}
        for w in words:
            out[w] = True
        return out

    def _check_placement(self, fdef) -> None:
        """Every pragma stands above a statement it applies to: a loop
        pragma above a ``for``, a tensor-expression pragma or ``atomic``
        above an assignment.  A tensor-expression pragma elsewhere is an
        error; a loop pragma or ``atomic`` elsewhere warns, located, and is
        ignored (APPy's own tests have ``#pragma simd`` above ``s = 0.0``)."""
        kinds = {n.lineno: n for n in ast.walk(fdef) if isinstance(n, ast.stmt) and n is not fdef}
        for line, pragma in self.pragmas.items():
            stmt = kinds.get(line)
            if "tensor" in pragma or "atomic" in pragma:
                ok, what = isinstance(stmt, (ast.Assign, ast.AugAssign)), "an assignment"
            else:
                ok, what = isinstance(stmt, ast.For), "a for loop"
            if ok:
                continue
            below = f"'{ast.unparse(stmt).splitlines()[0]}'" if stmt is not None else "no statement"
            if "tensor" in pragma:
                raise AppyError(f"{self.filename}:{line}: error: #pragma {pragma['text']} needs {what} below it, not {below}")
            warnings.warn_explicit(f"#pragma {pragma['text']} needs {what} below it, not {below}: ignored", SyntaxWarning, self.filename, line)

    def _expand_tensor_statements(self, node) -> None:
        """Statements under a tensor-expression pragma -> their loop nests
        (``tensor_expr``), wherever they stand."""
        counter = itertools.count()
        taken = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
        for n in list(ast.walk(node)):
            for name in ("body", "orelse", "finalbody"):
                stmts = getattr(n, name, None)
                if not isinstance(stmts, list) or not stmts or not isinstance(stmts[0], ast.stmt):
                    continue
                out = []
                for stmt in stmts:
                    pragma = self.pragmas.get(stmt.lineno)
                    if pragma is None or "tensor" not in pragma:
                        out.append(stmt)
                        continue
                    before, nest = tensor_expr.expand(stmt, pragma["tensor"], self.filename, counter, taken)
                    nest.appy_tensor = True
                    out.extend([*before, nest])
                setattr(n, name, out)

    def _is_annotated(self, stmt) -> bool:
        if getattr(stmt, "appy_tensor", False):
            return True
        pragma = self.pragmas.get(stmt.lineno)
        return pragma is not None and ("parallel" in pragma or "simd" in pragma)

    def _rewrite(self, stmt):
        """Annotated ``for`` statements become calls of their kernels; a
        plain ``for``/``if``/``while`` keeps its body, rewritten."""
        if isinstance(stmt, ast.For) and self._is_annotated(stmt):
            # Scalars of the function that the nest assigns (a sum, a flag:
            # ``sum += ...`` under ``shared(sum)``) live in a one-element
            # array while it runs (``sum[0] += ...``: a reduction, or a store
            # the dependence test judges), and go back to the function after.
            # A scalar the nest only ever sets to one value (``a = 1`` under
            # ``shared(a)``, ``found = True``) is no race: whichever
            # iterations store it, it ends as that value.  The kernel counts
            # the stores (a reduction); the value is set after it, in Python.
            outs = sorted(_assigned(stmt) & _bound_outside(self._fdef, self._annotated))
            kernel_stmt = desugar_slices(stmt, self.filename)  # slice statements as loops (slices.py)
            set_once = {}
            taken = {n.id for n in ast.walk(self._fdef) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(self._fdef) if isinstance(a, ast.arg)}
            for name in outs:
                value = _one_value(kernel_stmt, name)
                if value is not None:
                    flag = next(f for f in (f"{name}_stored{k or ''}" for k in itertools.count()) if f not in taken)
                    taken.add(flag)
                    kernel_stmt = _CountStores(name, flag).visit(kernel_stmt)
                    set_once[name] = (flag, compile(ast.Expression(value), self.filename, "eval"))
            if outs:
                kernel_stmt = _ScalarsToElements(set(outs) - set(set_once)).visit(kernel_stmt)
            nest = Nest(kernel_stmt, self.pragmas, self, len(self.nests))
            self.nests.append(nest)
            nest.inputs = _nest_inputs(kernel_stmt)
            nest.outs = outs
            nest.set_once = set_once
            scope = [ast.Call(func=ast.Name(n, ast.Load()), args=[], keywords=[]) for n in ("locals", "globals")]
            run = ast.Call(
                func=ast.Attribute(ast.Subscript(ast.Name("__appy_nests__", ast.Load()), ast.Constant(nest.index), ast.Load()), "call", ast.Load()),
                args=scope,
                keywords=[],
            )
            if outs:
                target = ast.Tuple([ast.Name(n, ast.Store()) for n in outs], ast.Store())
                return ast.copy_location(ast.Assign(targets=[target], value=run), stmt)
            return ast.copy_location(ast.Expr(run), stmt)
        for field_name in ("body", "orelse"):
            if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With)) and hasattr(stmt, field_name):
                setattr(stmt, field_name, [self._rewrite(s) for s in getattr(stmt, field_name)])
        return stmt

    def __call__(self, *args, **kwargs):
        return self._python(*args, **kwargs)


def _assigned(stmt) -> set:
    """Names a nest assigns (``x = ``, ``x += ``), not its loop variables."""
    loops = {n.target.id for n in ast.walk(stmt) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)}
    stored = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return stored - loops


def _bound_outside(fdef, nests: list) -> set:
    """The function's parameters and the names it binds outside every
    annotated nest (a nest's own locals are not the function's)."""
    inside = {id(n) for nest in nests for n in ast.walk(nest)}
    names = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in inside:
            names.add(n.id)
    return names


_INVARIANT = (ast.Constant, ast.Name, ast.Attribute, ast.UnaryOp, ast.BinOp, ast.operator, ast.unaryop, ast.Load)


def _one_value(stmt, name: str):
    """The value expression if every store of ``name`` in nest ``stmt`` is
    ``name = v`` with one ``v`` the same in every iteration (numbers, and
    names the nest does not bind) and the nest never reads ``name``; else None."""
    stores = [n for n in ast.walk(stmt) if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    uses = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name]
    if not stores or len(uses) != len(stores) or len({ast.dump(s.value) for s in stores}) != 1:
        return None
    value = stores[0].value
    bound = _assigned(stmt) | {n.target.id for n in ast.walk(stmt) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)}
    if not all(isinstance(n, _INVARIANT) for n in ast.walk(value)):
        return None
    if any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(value)):
        return None
    return value


class _CountStores(ast.NodeTransformer):
    """``name = v`` -> ``flag[0] += 1`` (``_one_value``'s stores)."""

    def __init__(self, name: str, flag: str):
        self.name, self.flag = name, flag

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id == self.name:
            count = ast.AugAssign(ast.Subscript(ast.Name(self.flag, ast.Load()), ast.Constant(0), ast.Store()), ast.Add(), ast.Constant(1))
            return ast.copy_location(count, node)
        return node


class _ScalarsToElements(ast.NodeTransformer):
    """``x`` -> ``x[0]`` for the function's scalars a nest assigns."""

    def __init__(self, names: set):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Subscript(ast.Name(node.id, ast.Load()), ast.Constant(0), node.ctx), node)
        return node


class _FirstUse(ast.NodeVisitor):
    """Each name's first use in a nest, in evaluation order: "load" or
    "store" (the value of an assignment before its targets, an augmented
    assignment's target a load, a for's iterable before its target)."""

    def __init__(self):
        self.first: dict = {}

    def visit_Name(self, node):
        self.first.setdefault(node.id, "load" if isinstance(node.ctx, ast.Load) else "store")

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.first.setdefault(node.target.id, "load")
        else:
            self.visit(node.target)
        self.visit(node.value)

    def visit_For(self, node):
        self.visit(node.iter)
        self.visit(node.target)
        for s in node.body + node.orelse:
            self.visit(s)


def _nest_inputs(stmt) -> list[str]:
    """The names a nest reads from outside it: used before the nest binds
    them (its loop variables and the locals it assigns first are its own,
    whatever values they had before it)."""
    uses = _FirstUse()
    uses.visit(stmt)
    return sorted(n for n, kind in uses.first.items() if kind == "load")
