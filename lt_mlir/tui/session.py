"""The model behind ``lt-ui``: a ``Schedule`` with a cursor, the moves the
keys make, the code views, and the live benchmark.  It knows nothing of
widgets (the Textual app in ``app.py`` renders it), so tests and scripts
drive it directly.

Every move is a method of ``Schedule``, i.e. a pass of the registry: the
same code ``lt-opt`` and the Python API run.  A refused move returns the
pass's own message and leaves everything as it was.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field

from ..agent import Policy
from ..compiler import compile_aot, lower, lower_cuda
from ..dialect import lt
from ..dialect.entry import find_function, signature
from ..dialect.loop_tree import preorder_loops, value_names
from ..errors import LtError
from ..evaluate import Evaluator, Limits
from ..lowering import machine
from ..mlir import ir
from ..moves import MOVES, Move
from ..passes.registry import run_pipeline
from ..profile import profile_loops
from ..runtime.specs import random_inputs
from ..runtime.timing import time_call
from ..schedule import Schedule
from ..targets import get_target

CODE_VIEWS = ("lt", "scf", "llvm", "asm", "ptx")
# Moves that need what a target may lack: the Target attribute that says it has it
NEEDS = {"gpu_map": ("gpu_mapping", "GPU mapping"), "gpu_auto": ("gpu_mapping", "GPU mapping")}
MEASURE_SECONDS = 0.1  # loop_tool's UI: as many runs as fit in 100 ms (a first figure after a tenth of it)
_LOOP_LINE = re.compile(r": L(\d+)(?: \[|$)")
# The MLIR Python bindings keep process-wide state that two threads must not
# touch at once: every use of MLIR here (the UI's thread and its workers)
# holds this lock.  Running a compiled kernel needs no MLIR and does not.
MLIR_LOCK = threading.RLock()


def _with_mlir(method):
    def locked(*args, **kwargs):
        with MLIR_LOCK:
            return method(*args, **kwargs)

    locked.__name__, locked.__doc__ = method.__name__, method.__doc__
    return locked


@dataclass
class Figures:
    """One measurement of the current schedule."""

    text: str
    runtime_s: float | None = None
    compile_s: float | None = None
    runs: int = 0
    flops: int = 0
    bytes: int = 0
    start_s: float | None = None  # the starting schedule's runtime
    spread: float | None = None  # the timing's interquartile range over its median
    numpy_s: float | None = None
    matches: bool | None = None  # against the starting schedule's result
    mismatch: str = ""
    error: str = ""
    note: str = ""

    @property
    def memory_bound(self) -> bool:
        return self.flops < self.bytes  # under one FLOP per byte moved

    def line(self) -> str:
        """The status line's figures."""
        if self.error:
            return f"no figures: {self.error}"
        t = self.runtime_s
        parts = [f"{_time(t)}" + (f" +-{50 * self.spread:.0f}%" if self.spread is not None and self.spread >= 0.02 else "")]
        if self.memory_bound:
            parts.append(f"{self.bytes / t / 1e9:.1f} GB/s")
        else:
            parts.append(f"{self.flops / t / 1e9:.2f} GFLOP/s")
        if self.start_s is not None:
            parts.append(f"{self.start_s / t:.2f}x start")
        if self.numpy_s is not None:
            parts.append(f"{self.numpy_s / t:.2f}x NumPy")
        parts.append(f"{_count(self.flops)}FLOP")
        parts.append(f"compile {self.compile_s * 1e3:.0f} ms")
        if self.matches is not None:
            parts.append("result = start" if self.matches else f"RESULT DIFFERS: {self.mismatch}")
        if self.note:
            parts.append(self.note)
        return " | ".join(parts)


def _time(seconds: float) -> str:
    if seconds >= 1e-1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-4:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} us"


def _count(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} "


@dataclass
class Line:
    text: str
    loop: int | None  # L-number, None for a statement
    depth: int


@dataclass
class Session:
    """A schedule being optimised by hand.

    ``inputs``: the arrays the benchmark runs on (default: random, fixed
    seed); ``reference``: a NumPy function of the inputs, timed as the peer;
    ``path``: where ``write`` puts the module."""

    schedule: Schedule
    target: str = "cpu"
    inputs: list | None = None
    limits: Limits = field(default_factory=Limits)
    reference: object = None
    path: str | None = None
    cursor: int = 0
    code_view: str = "lt"
    history: list = field(default_factory=list)  # runtimes of the schedules measured, in order
    _figures: dict = field(default_factory=dict)  # text -> Figures
    _expected: list | None = None  # the starting schedule's outputs
    _start_s: float | None = None
    _numpy_s: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    reference_error: str = ""
    last_remark: str | None = None  # what the pass of the last move remarked (the status line shows it)
    _evaluator: Evaluator | None = None
    _measuring: bool = False
    _cancelled: bool = False
    _policy: Policy | None = None  # the trained policy (suggest), loaded on first use

    def __post_init__(self):
        self.target = get_target(self.target)
        with MLIR_LOCK:
            module = self.schedule.module
            f = find_function(module.operation, self.schedule.entry)
            self.specs = signature(f)
            self.flops = self.schedule.flops()
        self.input_specs = [s for s in self.specs if not s.written]
        if self.inputs is None:
            self.inputs = random_inputs(self.input_specs)
        self.start_text = self.schedule.text

    # ------------------------------------------------------------ the tree
    @property
    @_with_mlir
    def lines(self) -> list[Line]:
        out = []
        for text in self.schedule.loop_tree.splitlines():
            m = _LOOP_LINE.search(text)
            depth = len(text) - len(text.lstrip(" "))
            out.append(Line(text, int(m.group(1)) if m else None, depth))
        return out

    @property
    def selected_loop(self) -> int | None:
        lines = self.lines
        return lines[self.cursor].loop if lines else None

    def move_cursor(self, delta: int) -> None:
        self.cursor = max(0, min(len(self.lines) - 1, self.cursor + delta))

    def _place_cursor(self, loop: int | None = None) -> None:
        lines = self.lines
        if loop is not None:
            for i, line in enumerate(lines):
                if line.loop == loop:
                    self.cursor = i
                    return
        self.cursor = max(0, min(len(lines) - 1, self.cursor))

    # ------------------------------------------------------------ moves
    def annotations(self) -> dict:
        """The selected loop's annotations ({} on a statement)."""
        loop = self.selected_loop
        if loop is None:
            return {}
        with MLIR_LOCK:
            return lt.annotations(preorder_loops(self.schedule.module.operation)[loop])

    def refusal(self, name: str) -> str | None:
        """Why this session's target refuses move ``name`` (None: it does not)."""
        need = NEEDS.get(name)
        if need is None or getattr(self.target, need[0]):
            return None
        return f"error: {name}: target {self.target.name} has no {need[1]} (lt-ui --target cuda or cuda-emulated has)"

    def _loop_or_refuse(self) -> int:
        loop = self.selected_loop
        if loop is None:
            raise LtError("error: the cursor is on a statement: select a loop")
        return loop

    @_with_mlir
    def move(self, name: str, *args) -> str | None:
        """Make move ``name`` on the selected loop (``split``, ``swap_down``,
        ``swap_up``, ``merge``, ``vectorize``, ``unroll``, ``parallel``,
        ``distribute``, ``gpu_map``, ``gpu_auto``, ``cache``); returns None,
        or the message of the pass that refused it (nothing changed)."""
        before = len(self.schedule.remarks)
        self.last_remark = None
        try:
            follow = self._move(name, *args)
        except LtError as e:
            return str(e)
        except Exception as e:  # a bug in a pass: reported, never a crash
            return f"internal error in {name}: {type(e).__name__}: {e}"
        if len(self.schedule.remarks) > before:  # what the pass said (a costly move says so)
            self.last_remark = self.schedule.remarks[-1]
        self.schedule.text  # noqa: B018  (printed now, under the lock: the UI thread reads it next)
        self._place_cursor(follow)
        return None

    def _move(self, name: str, *args) -> int | None:
        kind = MOVES.get(name)
        if kind is None:
            raise LtError(f"error: unknown move '{name}' (moves: {', '.join(MOVES)})")
        refused = self.refusal(name)
        if refused:
            raise LtError(refused)
        loop = self._loop_or_refuse() if kind.loop else None
        if len(args) > 1:
            raise LtError(f"error: {name} takes one argument, got {len(args)}")
        follow = self.schedule.play(Move(name, loop, args[0] if args else None), self.target)
        return self.selected_loop if follow is None else follow

    @_with_mlir
    def suggest(self) -> tuple[str | None, str | None]:
        """(the action the trained policy takes here, None) -- made: a
        program move is one undoable step, a cursor move moves the cursor --
        or (None, why not).  The selected loop is the policy's cursor."""
        try:
            if self._policy is None:
                self._policy = Policy(os.environ.get("LT_MLIR_POLICY") or None)
            name, cursor, _, refused = self._policy.step(self.schedule, self.selected_loop or 0, True, self.target)
        except LtError as e:
            return None, str(e)
        if refused:
            return None, refused
        self.schedule.text  # noqa: B018  (printed under the lock)
        self._place_cursor(cursor)
        return name, None

    def undo(self) -> str | None:
        return self._history_step(self.schedule.undo)

    def redo(self) -> str | None:
        return self._history_step(self.schedule.redo)

    @_with_mlir
    def _history_step(self, step) -> str | None:
        try:
            step()
        except LtError as e:
            return str(e)
        self.schedule.text  # noqa: B018  (printed under the lock)
        self._place_cursor()
        return None

    # ------------------------------------------------------------ facts
    @_with_mlir
    def facts(self) -> list[str]:
        """What the panel under the tree says about the cursor's line."""
        lines = self.lines
        if not lines:
            return ["(no loops)"]
        line = lines[self.cursor]
        module = self.schedule.module
        if line.loop is None:
            return self._statement_facts(module, line.text)
        loop = preorder_loops(module.operation)[line.loop]
        size, tail = lt.loop_size(loop), lt.loop_tail(loop)
        inner = lt.inner_extent(loop)
        notes = lt.annotations(loop)
        scratch = []
        loop.walk(lambda o: (scratch.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1])
        nbytes = sum(lt.nbytes(ir.MemRefType(a.results[0].type).shape, ir.MemRefType(a.results[0].type).element_type) for a in scratch)
        return [
            f"L{line.loop}: dim {lt.loop_dim(loop)}, {size} iterations" + (f" + a tail of {tail}" if tail else ""),
            f"covers {size * inner + tail} elements, {inner} an iteration",
            "annotations: " + (", ".join(f"{k}={v}" if v is not True else k for k, v in notes.items()) or "none"),
            f"scratch under it: {nbytes} bytes",
        ]

    def _statement_facts(self, module, text: str) -> list[str]:
        f = find_function(module.operation, self.schedule.entry)
        sizes = {}
        for value, name in value_names(f).items():
            if isinstance(value.type, ir.MemRefType):
                t = ir.MemRefType(value.type)
                sizes[name] = (list(t.shape), str(t.element_type), lt.nbytes(t.shape, t.element_type))
        out = [text.strip()]
        for name in dict.fromkeys(re.findall(r"([A-Za-z_]\w*)\[", text)):
            if name in sizes:
                shape, element, nbytes = sizes[name]
                out.append(f"{name}: {element}{shape}, {nbytes} bytes allocated")
        return out

    # ------------------------------------------------------------ code
    @_with_mlir
    def code(self, view: str | None = None) -> tuple[str, int]:
        """(text of the code view, line to show: the selected loop's where
        the view can tell)."""
        view = view or self.code_view
        text = self.schedule.text
        if view == "lt":
            shown = str(self.schedule.module)  # without the locations
            return shown, self._loop_line(shown)
        if view == "scf":
            module = self.schedule.module
            run_pipeline(module, f"builtin.module({self.target.lowering}, canonicalize, cse)")
            return str(module), 0
        if view in ("llvm", "asm"):
            if not self.target.native:
                raise LtError(f"error: the {view} view shows CPU code; this session's target is {self.target.name} (the ptx view)")
            mod = machine.optimize(lower(text, self.schedule.entry, target=self.target, vector_math=True).llvm_ir)  # what runs
            return (str(mod) if view == "llvm" else machine.emit_assembly(mod)), 0
        if view == "ptx":
            if self.target.native:
                raise LtError("error: the ptx view needs target cuda (lt-ui --target cuda)")
            return lower_cuda(text, self.schedule.entry).ptx, 0
        raise LtError(f"error: unknown code view '{view}' (views: {', '.join(CODE_VIEWS)})")

    def _loop_line(self, text: str) -> int:
        """Line of the selected loop in the module text: lt.loop ops print in
        pre-order, so the i-th one is L<i>."""
        loop = self.selected_loop
        if loop is None:
            return 0
        count = -1
        for number, line in enumerate(text.splitlines()):
            if '"lt.loop"' in line:
                count += 1
                if count == loop:
                    return number
        return 0

    # ------------------------------------------------------------ benchmark
    def cached_figures(self, text: str | None = None) -> Figures | None:
        return self._figures.get(text or self.schedule.text)

    def latest_figures(self) -> Figures | None:
        """The figures measured last (of any schedule), or None."""
        return next(reversed(self._figures.values()), None)

    def benchmark(self, text: str | None = None, on_first=None) -> Figures:
        """Compile and time ``text`` (default: the current schedule), check
        its result against the starting schedule's; cached per text.
        ``on_first(figures)`` gets a first figure after a tenth of the
        timing; the one returned (and cached) comes from ``MEASURE_SECONDS``.
        The evaluator compiles and runs in a child process within the
        session's ``limits``: past one, the figures carry the error and the
        UI goes on.  Safe to call from a worker thread."""
        with MLIR_LOCK:
            text = text or self.schedule.text
        with self._lock:
            if text in self._figures:
                return self._figures[text]
            self._measuring, self._cancelled = True, False
            try:
                if self.start_text not in self._figures and text != self.start_text:
                    start = self._measure(self.start_text)
                    if self._cancelled:
                        return self._cancelled_figures(text)
                    self._figures[self.start_text] = start
                figures = self._measure(text, on_first)
                if self._cancelled:  # not kept: asked again, it is measured again
                    return self._cancelled_figures(text)
            finally:
                self._measuring = False
            self._figures[text] = figures
            if not figures.error:
                self.history.append(figures.runtime_s)
            return figures

    def _cancelled_figures(self, text: str) -> Figures:
        return Figures(text, flops=self.flops, error="measurement cancelled")

    def cancel(self) -> bool:
        """Stop the measurement under way now, killing the evaluator's
        process (the next benchmark starts another); False if none was
        under way."""
        evaluator = self._evaluator
        if not self._measuring or evaluator is None:
            return False
        self._cancelled = True
        if not evaluator.cancel():  # nothing running after all
            self._cancelled = False
            return False
        return True

    def _measure(self, text: str, on_first=None) -> Figures:
        evaluator = self._evaluator
        if evaluator is None:
            evaluator = self._evaluator = Evaluator(self.start_text, self.schedule.entry, self.target, inputs=self.inputs, limits=self.limits,
                                        samples=10, min_sample_s=MEASURE_SECONDS / 10, budget_s=MEASURE_SECONDS, baseline=False)
        base = Figures(text, flops=self.flops, bytes=sum(s.nbytes for s in self.specs))

        def figures_of(m, note="") -> Figures:
            f = Figures(text, flops=base.flops, bytes=base.bytes, compile_s=m.compile_s, note=note)
            if not m.ok:
                f.error = m.error
                return f
            f.runtime_s, f.spread = m.runtime_s, m.timing.spread
            f.runs = m.timing.samples * m.timing.number
            if text != self.start_text:
                f.matches, f.mismatch = m.correct, m.mismatch
            f.start_s = m.runtime_s if text == self.start_text else self._start_s
            f.numpy_s = self._numpy_s
            return f

        partial = None
        if on_first is not None and self._start_s is not None:
            partial = lambda m: on_first(figures_of(m, "refining"))  # noqa: E731
        try:
            m = evaluator.measure(text, partial)
        except (OSError, ValueError) as e:  # the session closed under it (quitting)
            base.error = f"error: the measurement stopped ({type(e).__name__})"
            return base
        if text == self.start_text and m.ok:
            self._start_s = m.runtime_s
            if self.reference is not None:
                try:
                    self._numpy_s = time_call(lambda: self.reference(*self.inputs), 10, MEASURE_SECONDS / 10, MEASURE_SECONDS).median_s
                except Exception as e:  # the user's function: reported, never a crash
                    self.reference = None
                    self.reference_error = f"the NumPy reference failed: {type(e).__name__}: {e}"
        figures = figures_of(m, self.reference_error)
        return figures

    def close(self) -> None:
        """Stop the evaluator's process now (a benchmark under way ends
        with an error; a later benchmark starts another process)."""
        evaluator, self._evaluator = self._evaluator, None
        if evaluator is not None:
            evaluator.close()

    # ------------------------------------------------------------ profile
    def profile(self):
        """The per-loop profile of the current schedule (an instrumented build)."""
        with MLIR_LOCK:  # compiles, then runs (a short profile: the lock is held throughout)
            return profile_loops(self.schedule.text, self.schedule.entry, inputs=self.inputs, target=self.target.name)

    # ------------------------------------------------------------ output
    def write(self, path: str | None = None) -> str:
        path = path or self.path
        if not path:
            raise LtError("error: no path to write to (lt-ui -o PATH, or lt_mlir.ui(x, path))")
        try:
            with open(path, "w") as fh:
                fh.write(self.schedule.file_text)
        except OSError as e:
            raise LtError(f"error: cannot write '{path}': {e.strerror}") from None
        return path

    @_with_mlir
    def write_aot(self, prefix: str | None = None) -> list[str]:
        """An object + header (cpu) or PTX + JSON (cuda) next to ``path``."""
        prefix = prefix or (self.path.rsplit(".", 1)[0] if self.path else None)
        if not prefix:
            raise LtError("error: no path to write to (lt-ui -o PATH, or lt_mlir.ui(x, path))")
        paths = compile_aot(self.schedule.text, prefix, self.schedule.entry, shared=False, target=self.target)
        return sorted(paths.values())

    @property
    def pipeline(self) -> str:
        return self.schedule.pipeline
