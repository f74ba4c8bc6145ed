"""One evaluator: schedule text -> compiled kernel -> inputs -> checked,
timed figures, for the UI, the environment, the search and the benchmarks.

    >>> ev = Evaluator(programs.matmul(64, 64, 64))       # the start schedule
    >>> m = ev.measure(schedule)                           # a Schedule or its text
    >>> m.runtime_s, m.timing.spread, m.correct, m.speedup
    >>> ev.remeasure([a.text, b.text], rounds=5)          # interleaved, one process
    >>> ev.close()

What it does, once for every tool:

* compiles each text once (an LRU cache keyed by text, target and
  ``CompileOptions``, ``cache_size`` kernels);
* runs every candidate on the same seeded inputs (or the caller's) and
  checks its outputs against the start schedule's (``correct``);
* times the bound kernel only (``Kernel.bind``: no argument checks, the
  outputs reused), ``number`` calls a sample so a sample lasts
  ``min_sample_s`` (``runtime.timing.time_call``), and reports the median
  with its spread;
* ``remeasure`` times several texts round-robin, so drift in the machine's
  load hits them alike (a search re-measures its best before naming one);
* enforces time limits (``Limits``): with ``isolated=True`` (the default)
  the compiling and the timing happen in a child process, and a compile or
  a run that passes its limit is abandoned -- the child is killed, the
  ``Measurement`` says ``timed_out`` -- and the next request starts a fresh
  child (or, with ``spare=True``, takes the one kept started in reserve).
  The caller's process never waits past a limit.

``Bench`` is what one process keeps (inputs, reference outputs, baseline,
kernel cache); the search's worker pools and Ray actors run one each.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection

import numpy as np

from .dialect.entry import find_function, signature
from .errors import LtError
from .runtime.specs import random_inputs
from .runtime.timing import OPENMP_SETTLE_S, WARM_S, Timing, sample_times
from .targets import CompileOptions, get_target

MAX_LIMIT_S = 86400.0  # a day: the longest limit (no limit is no isolation: isolated=False)
BASELINE_EVERY = 20  # re-time the start schedule after this many measurements (slow drift is followed)
# Where a kernel's arrays lie changes its speed: a 512^3 matmul schedule the
# search found ran 0.67-0.96 ms on copies of the same inputs made at other
# addresses (other page offsets, other physical pages: cache sets), a
# schedule that packs B 0.75-0.80 ms at each.  Measured on one allocation,
# a search picks what is fast there only.  So every CPU timing is taken on
# ``PLACEMENTS`` copies of the arguments -- as allocated, and at other
# offsets into fresh pages (``PLACEMENT_OFFSETS``) -- and its figure is the
# median of the slowest copy's samples (``Timing.slowest``; not when the
# copies would take more than ``PLACEMENT_BYTES``).  Pooled instead, an
# unpacked schedule fast on two of the three sets (0.70 ms) won a search
# and ran 0.85-1.0 ms on six of ten placements, NumPy's own allocation
# among them; the packed winners ran 0.69-0.74 ms on all ten.
PLACEMENTS = 3
PLACEMENT_OFFSETS = ((), (1088, 2112, 3136, 64, 1600, 2624), (2624, 576, 3648, 1600, 3136, 64))
PLACEMENT_BYTES = 1 << 28
PAGE = 4096


@dataclass(frozen=True)
class Limits:
    """Seconds a compile, and a run (warm-up, check and timing of one
    schedule), may take before they are abandoned."""

    compile_s: float = 10.0
    run_s: float = 10.0

    def __post_init__(self):
        for name in ("compile_s", "run_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= MAX_LIMIT_S:
                raise LtError(f"error: time limit {name} must be a number of seconds in (0, {MAX_LIMIT_S:g}], got {value!r}")


@dataclass
class Measurement:
    """What evaluating one schedule gave."""

    text: str
    runtime_s: float | None = None  # median seconds a call
    timing: Timing | None = None  # with the spread and the sample counts
    compile_s: float | None = None  # 0.0 when the kernel came from the cache
    correct: bool | None = None  # outputs equal the start schedule's on the same inputs
    mismatch: str = ""  # where they differ first
    baseline_s: float | None = None  # the start schedule's median in the same process
    error: str = ""
    timed_out: str = ""  # "compile" or "run": the limit that abandoned it
    worker: str = "local"
    outputs: list | None = None  # the written arguments after one call (when asked for)

    @property
    def ok(self) -> bool:
        """Measured: no error, a runtime."""
        return not self.error and self.runtime_s is not None

    @property
    def speedup(self) -> float | None:
        """The start schedule's time over this one's (same process)."""
        if self.baseline_s is None or not self.runtime_s:
            return None
        return self.baseline_s / self.runtime_s


@dataclass(frozen=True)
class Config:
    """What a ``Bench`` is made from (picklable: it travels to workers)."""

    start_text: str
    entry: str | None = None
    target: str = "cpu"
    options: CompileOptions = field(default_factory=CompileOptions)
    seed: int = 0
    inputs: tuple | None = None  # the read-only arguments; None: seeded random ones
    samples: int = 10
    min_sample_s: float = 1e-3
    budget_s: float = 1.0  # timing one schedule takes about this long at most
    cache_size: int = 64
    baseline: bool = True  # time the start schedule (speedups)
    keep_outputs: bool = False  # return each schedule's outputs
    placements: int = PLACEMENTS  # the argument copies each CPU timing runs on, the slowest counted (1: the inputs as given)


def message(e: BaseException) -> str:
    """An error as one line: the project's own text, or the exception's type and text."""
    text = str(e) or type(e).__name__
    if isinstance(e, LtError):
        return text if "error:" in text else f"error: {text}"
    return f"error: {type(e).__name__}: {text}"


def same_outputs(outputs: list, expected: list) -> tuple[bool, str]:
    """Whether ``outputs`` equal ``expected`` (relative 1e-4, absolute
    1e-5 of the largest), and where they differ first."""
    for j, (got, want) in enumerate(zip(outputs, expected)):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        tol = dict(rtol=1e-4, atol=1e-5 * (scale + 1.0))
        if got.shape != want.shape or not np.allclose(got, want, equal_nan=True, **tol):
            if got.shape != want.shape:
                return False, f"output {j} has shape {got.shape}, not {want.shape}"
            where = np.argwhere(~np.isclose(got, want, equal_nan=True, **tol))
            return False, f"output {j} at {tuple(where[0].tolist()) if len(where) else ()}"
    return True, ""


def _target(name: str):
    try:
        return get_target(name)
    except LtError as e:
        raise LtError(f"{e}; a target registered at run time is measured in this process: Evaluator(..., isolated=False)") from None


class Bench:
    """What one process keeps to evaluate schedules of one start schedule:
    the argument specs, the inputs, the start's outputs and time, and the
    compiled kernels (LRU).  ``stage(name)`` is told "compile" and "run"
    as each begins (the isolated runner's limits follow them)."""

    def __init__(self, config: Config, name: str = "local", stage: Callable | None = None, defer_baseline: bool = False):
        self.config, self.name = config, name
        self.target = None
        self.kernels: OrderedDict = OrderedDict()
        self.count = 0
        self.baseline_s: float | None = None
        self.reference: list | None = None
        self.start_error = ""
        self._placed: list | None = None
        self._stage = stage or (lambda name: None)
        try:
            from .dialect.lt import parse_module

            self.target = _target(config.target)
            module = parse_module(config.start_text)
            self.specs = signature(find_function(module.operation, config.entry))
            read = [s for s in self.specs if not s.written]
            inputs = list(config.inputs) if config.inputs is not None else random_inputs(self.specs, config.seed)
            if len(inputs) != len(read):
                raise LtError(f"error: {len(inputs)} inputs given; the kernel reads {len(read)} arguments")
            self.inputs = [np.ascontiguousarray(a, dtype=s.dtype) for a, s in zip(inputs, read)]
            start, _ = self.kernel(config.start_text)
            self._stage("run")
            self.reference = self._outputs(start)
            if config.baseline and not defer_baseline:  # deferred: timed with the first measurement
                self.baseline_s = self._time(start).median_s
        except Exception as e:  # noqa: BLE001 - a bad start schedule, no device: every measurement says so
            self.start_error = message(e)

    # ------------------------------------------------------------ kernels
    def kernel(self, text: str, llvm_ir: str | None = None):
        """(compiled kernel, seconds it took: 0.0 from the cache).
        ``llvm_ir``: the optimised LLVM IR of ``text`` for this host and
        these options, made elsewhere (the search's lowering processes):
        only code generation is left (``compile_optimized``)."""
        kernel = self.kernels.get(text)
        if kernel is not None:
            self.kernels.move_to_end(text)
            return kernel, 0.0
        self._stage("compile")
        t0 = time.perf_counter()
        if llvm_ir is not None and hasattr(self.target, "compile_optimized"):
            kernel = self.target.compile_optimized(llvm_ir, text, self.config.entry, self.config.options)
        else:
            kernel = self.target.compile(text, self.config.entry, self.config.options)
        elapsed = time.perf_counter() - t0
        self.kernels[text] = kernel
        while len(self.kernels) > self.config.cache_size:
            self.kernels.popitem(last=False)
        return kernel, elapsed

    def _arguments(self) -> list:
        inputs = iter(self.inputs)
        return [np.zeros(s.shape, s.dtype) if s.written else next(inputs) for s in self.specs]

    def placed(self) -> list[list]:
        """The argument sets timings run on (``PLACEMENTS``): the inputs as
        given with fresh outputs, then copies of all at other offsets into
        fresh pages; one set where the copies would be too large."""
        if self._placed is None:
            sets = [self._arguments()]
            nbytes = sum(a.nbytes for a in sets[0])
            k = max(1, min(self.config.placements, len(PLACEMENT_OFFSETS)))
            if nbytes * (k - 1) <= PLACEMENT_BYTES:
                for offsets in PLACEMENT_OFFSETS[1:k]:
                    sets.append([_copy_at(a, offsets[j % len(offsets)]) for j, a in enumerate(sets[0])])
            self._placed = sets
        return self._placed

    def _outputs(self, kernel) -> list:
        """The written arguments after one call on zeroed outputs."""
        arrays = self._arguments()
        kernel(*arrays)
        return [a for s, a in zip(self.specs, arrays) if s.written]

    def _time(self, kernel, samples: int | None = None, min_sample_s: float | None = None, budget_s: float | None = None) -> Timing:
        """``time_call`` on each argument set (``placed``), a share of the
        samples and of the budget each; the slowest set's figure
        (``Timing.slowest``)."""
        c = self.config
        samples, min_sample_s = samples or c.samples, min_sample_s or c.min_sample_s
        budget_s = c.budget_s if budget_s is None else budget_s
        if hasattr(kernel, "time"):  # CudaKernel: CUDA events around the launches, no copies
            return Timing.of(kernel.time(*self._arguments(), warmup=1, repeat=samples))
        runs = [kernel.bind(*arrays) for arrays in self.placed()]
        return Timing.slowest(*_by_set(runs, -(-samples // len(runs)), min_sample_s, budget_s / len(runs)))

    # ------------------------------------------------------------ measuring
    def measure(self, text: str, partial: Callable | None = None, llvm_ir: str | None = None) -> Measurement:
        """Compile (cached; from ``llvm_ir``, its optimised LLVM IR, when
        given: ``kernel``), check against the start's outputs, time.
        ``partial(measurement)`` gets a rough first figure (a tenth of the
        timing) before the final one.  Never raises for a bad schedule."""
        if self.start_error:
            return Measurement(text, error=self.start_error, worker=self.name)
        m = Measurement(text, worker=self.name)
        try:
            if self.config.baseline and (self.baseline_s is None or self.count and self.count % BASELINE_EVERY == 0):
                start, _ = self.kernel(self.config.start_text)
                self._stage("run")
                self.baseline_s = self._time(start).median_s
            self.count += 1
            kernel, m.compile_s = self.kernel(text, llvm_ir)
            self._stage("run")
            outputs = self._outputs(kernel)
            m.correct, m.mismatch = same_outputs(outputs, self.reference)
            if self.config.keep_outputs:
                m.outputs = outputs
            m.baseline_s = self.baseline_s
            if partial is not None:
                first = self._time(kernel, samples=3, budget_s=self.config.budget_s / 10)
                partial(replace(m, runtime_s=first.median_s, timing=first))
            m.timing = self._time(kernel)
            m.runtime_s = m.timing.median_s
        except Exception as e:  # noqa: BLE001 - a bad candidate is a result, never an exception
            m.error = message(e)
        return m

    def remeasure(self, texts: list[str], rounds: int = 5) -> list[Measurement]:
        """Each text timed ``rounds`` times, one sample of each a round
        (drift hits them alike), a sample after a parallel schedule's
        after a pause (``OPENMP_SETTLE_S``: its threads spin on after it),
        each sample after ``WARM_S`` of untimed calls (the cores back to
        steady speed: one text must not gain from following another), one
        on each argument set (``placed``); the slowest set's medians
        (``Timing.slowest``), with the start's time taken in the same
        rounds as the baseline."""
        if self.start_error:
            return [Measurement(t, error=self.start_error, worker=self.name) for t in texts]
        order = [self.config.start_text] + [t for t in dict.fromkeys(texts) if t != self.config.start_text]
        sample, errors, samples = {}, {}, {t: {} for t in order}  # per text, per argument set: its samples
        c = self.config
        for t in order:
            try:
                kernel, _ = self.kernel(t)
                self._stage("run")
                if hasattr(kernel, "time"):  # CudaKernel: CUDA events
                    sample[t] = lambda k=kernel, a=self._arguments(): [[float(np.median(k.time(*a, warmup=1, repeat=3)))]]
                else:  # a sample on each argument set (``placed``), the first after the warm-up
                    runs = [kernel.bind(*arrays) for arrays in self.placed()]
                    sample[t] = lambda runs=runs: _by_set(runs, 1, c.min_sample_s, None, warm_s=WARM_S)[0]
            except Exception as e:  # noqa: BLE001
                errors[t] = message(e)
        after_parallel = False
        for _ in range(max(1, rounds)):
            self._stage("run")  # each round within the run limit
            for t, take in sample.items():
                if after_parallel:  # the last one's OpenMP threads still spin on the cores
                    time.sleep(OPENMP_SETTLE_S)
                for j, got in enumerate(take()):
                    samples[t].setdefault(j, []).extend(got)
                after_parallel = has_parallel_loop(t)
        base = Timing.slowest(list(samples[self.config.start_text].values())).median_s if samples[self.config.start_text] else None
        out = []
        for t in texts:
            if t in errors:
                out.append(Measurement(t, error=errors[t], worker=self.name))
                continue
            timing = Timing.slowest(list(samples[t].values()), 0)
            out.append(Measurement(t, timing.median_s, timing, baseline_s=base, worker=self.name))
        return out


def _by_set(runs: list, samples: int, min_sample_s: float, budget_s: float | None, warm_s: float = 0.0) -> tuple[list, int]:
    """``sample_times`` of each run (one per argument set), ``samples``
    each and ``budget_s`` each, the first after ``warm_s`` of warm-up: (a
    list of samples per set, calls a sample of the first)."""
    times, number = [], 0
    for i, run in enumerate(runs):
        got, n = sample_times(run, samples, min_sample_s, budget_s, warm_s=warm_s if i == 0 else 0.0)
        times.append(got)
        number = number or n
    return times, number


def _copy_at(a: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``a`` starting ``offset`` bytes past a page boundary, in
    memory of its own (fresh pages)."""
    buf = np.empty(a.nbytes + offset + PAGE, np.uint8)
    start = (-buf.ctypes.data) % PAGE + offset
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


_PARALLEL = re.compile(r"[{,]\s*lt\.parallel\b")


def has_parallel_loop(text: str) -> bool:
    """Whether an lt module text has a loop annotated ``lt.parallel``."""
    return bool(_PARALLEL.search(text))


# ------------------------------------------------------------ the isolated runner


def _serve(fd: int) -> None:
    """A child process's loop (``python -c``, so a user's script is never
    re-imported): the config, then requests in, stages and results out."""
    conn = Connection(fd)
    config, name, spare = conn.recv()

    def stage(which: str) -> None:
        conn.send(("stage", which))

    conn.send(("stage", "compile"))
    bench = Bench(config, name, stage, defer_baseline=spare)
    conn.send(("ready", bench.start_error))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if request is None:
            return
        kind, payload, want_partial = request
        try:
            if kind == "measure":
                partial = (lambda m: conn.send(("partial", m))) if want_partial else None
                text, llvm_ir = payload if isinstance(payload, tuple) else (payload, None)
                result = bench.measure(text, partial, llvm_ir)
            else:
                result = bench.remeasure(*payload)
        except Exception as e:  # noqa: BLE001 - a bug: reported, the child goes on
            result = Measurement(payload if isinstance(payload, str) else "", error=message(e), worker=name)
        conn.send(("done", result))



def _wait_stopped(pid: int, limit_s: float = 0.2) -> None:
    """Wait (up to ``limit_s``) until ``pid`` has stopped: SIGSTOP is
    delivered asynchronously, and a thread of the process running on the
    other core goes on until the kernel reaches it (the state read from
    /proc; where there is none, no wait)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] in "TtZX":
                    return
        except (OSError, IndexError):
            return
        time.sleep(0.0005)

class _Child:
    """One child process running ``_serve`` over a socket pair."""

    STARTUP_S = 120.0  # importing MLIR in a fresh process, on a loaded machine

    def __init__(self, config: Config, name: str, spare: bool = False):
        ours, theirs = socket.socketpair()
        code = f"from lt_mlir.evaluate import _serve; _serve({theirs.fileno()})"
        # what the child prints (LLVM's and MLIR's diagnostics, a crash's
        # last words) goes to a file, not into lt-ui's terminal; its stdout
        # too, so that a child outliving this process for a moment never
        # holds the caller's pipe open (a shell's `| tee`, a test's communicate)
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                        stdout=self.stderr, stderr=self.stderr)
        theirs.close()
        self.conn = Connection(ours.detach())
        # a spare starts while another child measures: it leaves the start's
        # time to its first measurement, so that figure is not skewed
        self.conn.send((config, name, spare))
        self.ready = self.paused = False

    def alive(self) -> bool:
        return self.process.poll() is None

    def pause(self, paused: bool) -> None:
        """Stop (SIGSTOP) or continue the process: a spare still starting
        must not share the cores with a kernel being timed.  (If this
        process dies while it is stopped, the kernel sends the orphaned
        group SIGHUP and SIGCONT, and it ends.)"""
        if paused != self.paused and self.alive() and hasattr(signal, "SIGSTOP"):
            try:
                os.kill(self.process.pid, signal.SIGSTOP if paused else signal.SIGCONT)
                self.paused = paused
            except OSError:
                return
            if paused:
                _wait_stopped(self.process.pid)

    def last_words(self) -> str:
        """The last line the child wrote to stderr, as ``": <line>"``."""
        try:
            self.stderr.seek(max(0, self.stderr.seek(0, 2) - 2000))
            lines = [ln.strip() for ln in self.stderr.read().decode(errors="replace").splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return f": {lines[-1]}" if lines else ""

    def kill(self) -> None:
        self.pause(False)
        if self.alive():
            self.process.kill()
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()
        self.stderr.close()

    def stop(self) -> None:
        self.pause(False)
        try:
            self.conn.send(None)
            self.process.wait(2.0)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()


class Evaluator:
    """Evaluates schedules of ``start`` (a ``Schedule`` or lt module text;
    speedups and the results check are against it).

    ``target``: a name or ``Target``; ``options``: ``CompileOptions``;
    ``inputs``: the read-only arguments (default: seeded random, ``seed``);
    ``samples``/``min_sample_s``/``budget_s``: the timing (``time_call``);
    ``limits``: ``Limits`` of a compile and a run (enforced with
    ``isolated``; in-process, nothing can stop native code);
    ``baseline``: time the start schedule (``Measurement.speedup``);
    ``keep_outputs``: return each schedule's outputs;
    ``spare``: keep a second child started in reserve (isolated only), so
    the request after one abandoned at a limit does not wait for a fresh
    process to import MLIR and compile the start (the env's steps each
    stay within their limit); it is stopped while the other child times a
    kernel (so the two never share the cores then), and it times the start
    with its first measurement."""

    def __init__(self, start, entry: str | None = None, target="cpu", options: CompileOptions | None = None, inputs=None,
                 seed: int = 0, limits: Limits | None = None, samples: int = 10, min_sample_s: float = 1e-3,
                 budget_s: float = 1.0, isolated: bool = True, cache_size: int = 64, baseline: bool = True,
                 keep_outputs: bool = False, name: str = "local", spare: bool = False):
        text = start if isinstance(start, str) else start.text
        if entry is None and not isinstance(start, str):
            entry = getattr(start, "entry", None)
        t = get_target(target)
        self.config = Config(text, entry, t.name, options or CompileOptions(), int(seed),
                             None if inputs is None else tuple(np.asarray(a) for a in inputs), max(3, int(samples)),
                             float(min_sample_s), float(budget_s), int(cache_size), bool(baseline), bool(keep_outputs))
        self.limits = limits or Limits()
        self.isolated, self.name = isolated, name
        self._bench: Bench | None = None
        self._child: _Child | None = None
        self.spare, self._spare = bool(spare) and isolated, None
        self.start_error = ""

    # ------------------------------------------------------------ requests
    def measure(self, schedule, on_partial: Callable | None = None, llvm_ir: str | None = None) -> Measurement:
        """Evaluate one schedule (a ``Schedule`` or its text); ``llvm_ir``:
        its optimised LLVM IR for this host and the evaluator's options,
        made elsewhere (``Bench.kernel``)."""
        text = schedule if isinstance(schedule, str) else schedule.text
        if not self.isolated:
            return self._local().measure(text, on_partial, llvm_ir)
        payload = text if llvm_ir is None else (text, llvm_ir)
        return self._ask(("measure", payload, on_partial is not None), text, on_partial)

    def measure_many(self, schedules) -> list[Measurement]:
        """``measure`` of each schedule, in order."""
        return [self.measure(s) for s in schedules]

    def remeasure(self, schedules, rounds: int = 5) -> list[Measurement]:
        """The schedules timed again, interleaved over ``rounds`` rounds."""
        texts = [s if isinstance(s, str) else s.text for s in schedules]
        if not self.isolated:
            return self._local().remeasure(texts, rounds)
        result = self._ask(("remeasure", (texts, rounds), False), "", None, run_limit=self.limits.run_s * max(1, len(texts)))
        if isinstance(result, Measurement):  # the whole batch failed (a limit, a crash)
            return [replace(result, text=t) for t in texts]
        return result

    def close(self) -> None:
        """Stop the child processes (a later request starts another)."""
        for child in (self._child, self._spare):
            if child is not None:
                child.stop()
        self._child = self._spare = None

    def cancel(self) -> bool:
        """Kill the child process now, from any thread: a measurement under
        way ends at once (its ``Measurement`` says the process died) and the
        next request starts a fresh child.  ``close`` instead waits for the
        kernel running to finish.  False when no child is running."""
        child = self._child
        if child is None or not child.alive():
            return False
        child.process.kill()
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # ------------------------------------------------------------ in this process
    def _local(self) -> Bench:
        if self._bench is None:
            self._bench = Bench(self.config, self.name)
            self.start_error = self._bench.start_error
        return self._bench

    # ------------------------------------------------------------ in a child
    def _ask(self, request: tuple, text: str, on_partial, run_limit: float | None = None):
        if self._child is None:
            self._child = self._take_spare() or _Child(self.config, self.name)
        try:
            result = self._exchange(self._child, request, text, on_partial, run_limit)
        except BaseException:  # an interrupt, a callback's error: the child's answer would come to the next request
            self._lost(text, "interrupted", replace=False)
            raise
        finally:
            if self._spare is not None:
                self._spare.pause(False)  # it starts up while nothing is timed
        if self.spare and self._spare is None and self._child is not None:  # the first one in reserve, started after an answer
            self._spare = _Child(self.config, self.name, spare=True)
        return result

    def _take_spare(self) -> "_Child | None":
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        spare.pause(False)
        if not spare.alive():
            spare.kill()
            return None
        return spare

    def _exchange(self, child: "_Child", request: tuple, text: str, on_partial, run_limit: float | None):
        limits = {"compile": self.limits.compile_s, "run": run_limit or self.limits.run_s}
        sent = False
        stage, started = "start", time.monotonic()
        while True:
            if child.ready and not sent:
                try:
                    child.conn.send(request)
                except (OSError, ValueError):
                    return self._lost(text, "the evaluator's process died" + child.last_words())
                sent = True
                stage, started = "compile", time.monotonic()
            limit = _Child.STARTUP_S if stage == "start" else limits[stage]
            left = limit - (time.monotonic() - started)
            if left <= 0 or not child.conn.poll(min(left, 3600.0)):
                if left > 3600.0:
                    continue
                if not child.alive():
                    return self._lost(text, "the evaluator's process died" + child.last_words())
                if stage == "start":
                    return self._lost(text, f"the evaluator's process did not start in {limit:.0f} s")
                return self._lost(text, f"{stage} ran past its limit of {limit:g} s (abandoned)", stage)
            try:
                kind, value = child.conn.recv()
            except (EOFError, OSError):
                return self._lost(text, "the evaluator's process died (a crash in compiled code?)" + child.last_words())
            if kind == "stage":  # the first one: the child has imported MLIR (the start schedule compiles next)
                stage, started = value, time.monotonic()
                if self._spare is not None and self._spare is not child:  # no spare starting up while a kernel is timed
                    self._spare.pause(stage == "run")
            elif kind == "ready":
                child.ready, self.start_error = True, value
            elif kind == "partial":
                on_partial(value)
            elif kind == "done":
                return value

    def _lost(self, text: str, why: str, timed_out: str = "", replace: bool = True) -> Measurement:
        """Kill the child (a fresh one serves the next request).  With a
        spare, the spare takes its place now and another starts in reserve
        at once: a second request abandoned in a row is covered too."""
        if self._child is not None:
            self._child.kill()
            self._child = None
        if self.spare and replace:
            self._child = self._take_spare()
            if self._child is not None:
                self._spare = _Child(self.config, self.name, spare=True)
        return Measurement(text, error=f"error: {why}", timed_out=timed_out, worker=self.name)
