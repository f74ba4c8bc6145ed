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
call — arrays by shape and dtype, ints by value (they size loops), floats
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
error.

``jit`` options: ``backend`` ("cpu", "cuda-emulated"; APPy's "triton" and
"cuda" mean the CUDA target), ``dump_code`` (print each nest's lt module
and loop tree when it compiles), ``auto_simd`` (vectorize the innermost
loop of parallel nests without a pragma), ``unsafe``.  Unknown options are
an error.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
import tokenize
import warnings
from io import StringIO

import numpy as np

from ..errors import LtError, PassError
from ..lowering.machine import host_vector_width
from ..schedule import Schedule
from .translate import AppyError, Translator, element_type

__all__ = ["AppyError", "jit"]

BACKENDS = {"cpu": "cpu", "cuda-emulated": "cuda-emulated", "triton": "cuda", "cuda": "cuda"}
_PRAGMA = re.compile(r"#\s*pragma\s+(.*)$")
_CLAUSE = re.compile(r"(shared|reduction|private|firstprivate)\s*\([^)]*\)")


def jit(fn=None, *, backend: str = "cpu", dump_code: bool = False, auto_simd: bool = False, unsafe: bool = False, **options):
    """Compile ``fn``'s annotated loops (module docs); bare (``@appy.jit``)
    or with options (``@appy.jit(backend="cpu", dump_code=True)``)."""
    if options:
        raise AppyError(f"error: unknown appy.jit option(s): {', '.join(sorted(options))} (backend, dump_code, auto_simd, unsafe)")
    if backend not in BACKENDS:
        raise AppyError(f"error: unknown backend '{backend}' (one of: {', '.join(BACKENDS)})")

    def wrap(f):
        return Program(f, BACKENDS[backend], dump_code, auto_simd, unsafe)

    return wrap(fn) if fn is not None else wrap


class Nest:
    """One annotated loop nest: its AST, pragmas and compiled kernels."""

    def __init__(self, node: ast.For, pragmas: dict, program: "Program", index: int):
        self.node, self.pragmas, self.program, self.index = node, pragmas, program, index
        self.cache: dict = {}  # signature -> (kernel, argument names)
        self.schedule_tree = ""  # the loop tree of the kernel compiled last

    def signature(self, values: dict) -> tuple:
        key = []
        for name in sorted(values):
            v = values[name]
            if isinstance(v, np.ndarray):
                key.append((name, "array", v.shape, v.dtype.str))
            elif isinstance(v, (bool, np.bool_)):
                key.append((name, "bool", bool(v)))
            elif isinstance(v, (int, np.integer)):
                key.append((name, "int", int(v)))
            elif isinstance(v, (float, np.floating)):
                key.append((name, "float", type(v).__name__))
            else:
                key.append((name, type(v).__name__))
        return tuple(key)

    def run(self, values: dict) -> None:
        key = self.signature(values)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = self.compile(values)
        kernel, names = entry
        args = []
        for n in names:
            v = values[n]
            if isinstance(v, np.ndarray):
                if not v.flags.c_contiguous:
                    raise AppyError(f"{self.program.where(self.node)}: error: array '{n}' is not contiguous (pass np.ascontiguousarray)")
                args.append(v)
            else:
                args.append(np.asarray(v, dtype=np.float32 if isinstance(v, np.float32) else np.float64))
        kernel(*args)

    def compile(self, values: dict):
        p = self.program
        t = Translator(self.node, values, p.filename, 1, f"{p.fn.__name__}_{self.index}")
        text = t.translate()
        s = Schedule(text)
        width = None
        for i, (loop_node, _dim) in enumerate(t.loops):
            pragma = self.pragmas.get(loop_node.lineno)
            innermost = i == len(t.loops) - 1
            if pragma is None and not (p.auto_simd and innermost and p.target == "cpu"):
                continue
            pragma = pragma or {"text": "simd (auto_simd)", "simd": True}
            line = loop_node.lineno
            gpu = p.target != "cpu"
            if "parallel" in pragma and gpu and "simd" in pragma:
                continue  # one loop for blocks and threads: lt-gpu-auto splits it (below)
            if "parallel" in pragma:
                if not gpu and p.unsafe:
                    s = _forced_parallel(s, i)
                else:
                    try:
                        s.parallel(i) if not gpu else s.gpu_map(i, "block")
                    except PassError as e:
                        raise AppyError(f"{p.filename}:{line}: error: #pragma {pragma['text']} refused: {_reason(e)}") from None
            if "simd" in pragma:
                try:
                    if p.target == "cpu":
                        width = width or host_vector_width(4 if element_type(_first_array(values).dtype) == "f32" else 8)
                        s.vectorize(i, width)
                    elif "parallel" not in pragma:
                        s.gpu_map(i, "thread")
                except PassError as e:
                    warnings.warn_explicit(
                        f"#pragma {pragma['text']}: {_reason(e)}; the loop runs sequentially in each iteration of the loops around it",
                        RuntimeWarning,
                        p.filename,
                        line,
                    )
        if p.target != "cpu":
            try:
                s.gpu_auto()  # what the pragmas left unmapped (a "parallel for simd" loop: blocks x threads)
            except PassError as e:
                raise AppyError(f"{p.where(self.node)}: error: {_reason(e)}") from None
        self.schedule_tree = s.loop_tree
        if p.dump_code:
            print(text)
            print(self.schedule_tree)
        try:
            kernel = s.compile(target=p.target)
        except LtError as e:
            raise AppyError(f"{p.where(self.node)}: error: {e}") from None
        return kernel, t.args


def _forced_parallel(s: Schedule, loop: int) -> Schedule:
    """``jit(unsafe=True)``: L``loop`` in parallel without the dependence
    test (the user vouches for it, as APPy assumes)."""
    from ..dialect.loop_tree import preorder_loops
    from ..mlir import ir

    module = s.module
    with module.context:
        preorder_loops(module)[loop].attributes["lt.parallel"] = ir.UnitAttr.get()
    return Schedule(module.operation.get_asm(enable_debug_info=True))


def _first_array(values: dict):
    return next((v for v in values.values() if isinstance(v, np.ndarray)), np.empty(0, np.float64))


def _reason(e: Exception) -> str:
    text = str(e)
    return text.split("error: ", 1)[-1]


class Program:
    """An ``@appy.jit`` function: Python with its annotated nests compiled."""

    def __init__(self, fn, target: str, dump_code: bool, auto_simd: bool, unsafe: bool):
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
        fdef.body = [self._rewrite(stmt) for stmt in fdef.body]
        ast.fix_missing_locations(tree)
        namespace = dict(fn.__globals__)
        namespace["__appy_nests__"] = self.nests
        exec(compile(tree, self.filename, "exec"), namespace)
        self._python = namespace[fdef.name]

    def where(self, node) -> str:
        return f"{self.filename}:{node.lineno}"

    def _pragmas(self, source: str) -> dict:
        """Source line of the statement below a pragma -> the pragma."""
        found, pending = {}, None
        for tok in tokenize.generate_tokens(StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                m = _PRAGMA.match(tok.string.strip())
                if m:
                    pending = (tok.start[0], m.group(1).strip())
            elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) and pending is not None:
                found[tok.start[0]] = self._parse(pending[1], pending[0])
                pending = None
        return found

    def _parse(self, text: str, line: int) -> dict:
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

    def _rewrite(self, stmt):
        """Annotated ``for`` statements become calls of their kernels; a
        plain ``for``/``if``/``while`` keeps its body, rewritten."""
        if isinstance(stmt, ast.For) and stmt.lineno in self.pragmas and ("parallel" in self.pragmas[stmt.lineno] or "simd" in self.pragmas[stmt.lineno]):
            nest = Nest(stmt, self.pragmas, self, len(self.nests))
            self.nests.append(nest)
            names = sorted({n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)})
            values = ast.Dict(
                keys=[ast.Constant(n) for n in names],
                values=[_lookup(n) for n in names],
            )
            call = ast.Expr(
                ast.Call(
                    func=ast.Attribute(ast.Subscript(ast.Name("__appy_nests__", ast.Load()), ast.Constant(nest.index), ast.Load()), "run", ast.Load()),
                    args=[values],
                    keywords=[],
                )
            )
            return ast.copy_location(call, stmt)
        for field_name in ("body", "orelse"):
            if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With)) and hasattr(stmt, field_name):
                setattr(stmt, field_name, [self._rewrite(s) for s in getattr(stmt, field_name)])
        return stmt

    def __call__(self, *args, **kwargs):
        return self._python(*args, **kwargs)


def _lookup(name: str):
    """``locals().get(name, globals().get(name))`` spelt so that names bound
    later (loop variables of the nest) are skipped without NameError."""
    def get(scope: str, *args):
        table = ast.Call(func=ast.Name(scope, ast.Load()), args=[], keywords=[])
        return ast.Call(func=ast.Attribute(table, "get", ast.Load()), args=list(args), keywords=[])

    return get("locals", ast.Constant(name), get("globals", ast.Constant(name)))
