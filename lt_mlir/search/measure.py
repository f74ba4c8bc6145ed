"""Measurement backends of the schedule search (``lt-tune``): compile a
batch of candidate schedules (lt module texts), check them against the
start schedule and time them, in this process, in a pool of local worker
processes, or on Ray actors.

Comparability across workers.  Raw times from different workers (other
cores, other machines, other load) are never compared.  Every worker
compiles the *start* schedule itself, makes the same seeded inputs,
computes the reference outputs from it, and times it: once at startup and
again after every 20 measurements (the latest baseline counts, so slow
drift in a worker's speed is followed).  A candidate's ``speedup`` is that
worker's baseline over that worker's time for the candidate; the search
compares speedups only.  ``correct`` likewise compares the candidate's
outputs with the start schedule's outputs computed on the same worker from
the same inputs.  (Workers on one machine still share its memory bandwidth,
and a ``parallel`` schedule wants every core: give timings that matter few
workers per machine.)

A bad candidate (parse, verify, bounds, compile or argument error) gives a
``Result`` with ``error`` set; ``measure`` never raises for one.  A worker
that dies while measuring (killed, segfault, actor died) is replaced by a
fresh one and its unfinished text retried, at most twice; after that the
text's ``Result`` says ``error="worker died"``.  Every text gets exactly one
``Result``, in the order given.

The pool backend starts worker processes with ``spawn``: a script that
makes one needs the usual ``if __name__ == "__main__":`` guard.

Test hook: with ``LT_SEARCH_DIE_ON=<substring>`` in the environment, a pool
or Ray worker given a text containing the substring exits (``os._exit(1)``)
the first time it sees that text; the first time is remembered by a marker
file in ``LT_SEARCH_DIE_DIR`` (default: the temp directory).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait as _wait_ready

from ..errors import LtError
from ..evaluate import Bench, Config, Evaluator, Limits, Measurement
from ..targets import get_target

MAX_RETRIES = 2  # a text whose worker died is tried at most 1 + MAX_RETRIES times
_HOOK_VARS = ("LT_SEARCH_DIE_ON", "LT_SEARCH_DIE_DIR")


@dataclass
class Result:
    text: str  # the schedule's lt module text (what was measured)
    runtime_s: float | None  # median seconds per call on the worker that measured it
    baseline_s: float | None  # the start schedule's median on that same worker
    speedup: float | None  # baseline_s / runtime_s (what the search compares)
    correct: bool | None  # outputs equal the start schedule's outputs on the same inputs
    worker: str  # "local", "pool-3", "ray-<actor id>"
    error: str = ""  # a compile/run error, a time limit, or "worker died" after the retries
    attempts: int = 1
    spread: float | None = None  # the timing's interquartile range over its median

    @classmethod
    def of(cls, m: Measurement, attempts: int = 1) -> "Result":
        """The search's record of one evaluator ``Measurement``."""
        ok = m.ok
        return cls(m.text, m.runtime_s if ok else None, m.baseline_s if ok else None, m.speedup if ok else None,
                   m.correct if ok else None, m.worker, m.error, attempts, m.timing.spread if m.timing else None)


@dataclass(frozen=True)
class _Config:
    bench: Config
    limits: Limits
    hooks: tuple = ()  # (name, value) pairs of the test hook's environment variables


def _start_specs(start_text: str, entry: str | None) -> list:
    from ..dialect.entry import find_function, signature
    from ..dialect.lt import parse_module

    module = parse_module(start_text)
    return signature(find_function(module.operation, entry))


class _WorkerState:
    """What one pool worker or Ray actor keeps: an evaluator ``Bench``."""

    def __init__(self, config: _Config, name: str):
        self.bench = Bench(config.bench, name)
        self.name = name

    def remote_measure(self, text: str, attempts: int) -> Result:
        """``Bench.measure`` in a worker process, after the test hook."""
        _maybe_die(text)
        return Result.of(self.bench.measure(text), attempts)


def _maybe_die(text: str) -> None:
    victim = os.environ.get("LT_SEARCH_DIE_ON")
    if not victim or victim not in text:
        return
    marker_dir = os.environ.get("LT_SEARCH_DIE_DIR") or tempfile.gettempdir()
    marker = os.path.join(marker_dir, "lt-search-died-" + hashlib.sha1(text.encode()).hexdigest()[:16])
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # died on this text before: measure it this time
    os.close(fd)
    os._exit(1)


def _hook_env() -> tuple:
    return tuple((k, os.environ[k]) for k in _HOOK_VARS if k in os.environ)


class Measurer:
    """Measures batches of schedule texts; ``measure`` blocks and returns one
    ``Result`` per text, in order.  ``remeasure`` times texts again,
    interleaved in one process (the search's last word on its best)."""

    config: _Config

    def measure(self, texts: list[str]) -> list[Result]:
        raise NotImplementedError

    def remeasure(self, texts: list[str], rounds: int = 5) -> list[Result]:
        evaluator = self._evaluator()
        return [Result.of(m) for m in evaluator.remeasure(texts, rounds)]

    def _evaluator(self) -> Evaluator:
        if getattr(self, "_remeasurer", None) is None:
            c = self.config.bench
            self._remeasurer = Evaluator(c.start_text, c.entry, c.target, c.options, seed=c.seed, limits=self.config.limits,
                                         samples=c.samples, min_sample_s=c.min_sample_s, budget_s=c.budget_s)
        return self._remeasurer

    def close(self) -> None:
        if getattr(self, "_remeasurer", None) is not None:
            self._remeasurer.close()
            self._remeasurer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalMeasurer(Measurer):
    """One text after another in one child process of this one (the
    evaluator's: compile and run time limits hold, a crash is a result)."""

    def __init__(self, config: _Config):
        self.config = config

    def measure(self, texts: list[str]) -> list[Result]:
        evaluator = self._evaluator()
        return [Result.of(evaluator.measure(t)) for t in texts]


# -- the pool of worker processes ---------------------------------------------


def _pool_worker_main(conn, config: _Config, name: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops its workers
    os.environ.update(dict(config.hooks))
    state = _WorkerState(config, name)
    conn.send(("ready", None))  # the time limits count from here (not the start-up: imports, the start schedule)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if task is None:
            return
        index, text, attempts = task
        conn.send((index, state.remote_measure(text, attempts)))


class _PoolWorker:
    def __init__(self, ctx, config: _Config, name: str):
        self.name = name
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_pool_worker_main, args=(child, config, name), daemon=True, name=f"lt-search-{name}")
        self.process.start()
        child.close()
        self.task: tuple | None = None  # (index, attempts) being measured
        self.ready = False  # started up (said "ready")
        self.since: float | None = None  # when the task's clock started (sent to a ready worker, or it became ready)

    def stop(self, timeout: float) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)
        self.conn.close()


class PoolMeasurer(Measurer):
    """``workers`` local processes (spawned), each with its own
    ``_WorkerState``; every idle worker gets the next text."""

    def __init__(self, config: _Config, workers: int):
        self.config = config
        self._ctx = multiprocessing.get_context("spawn")
        self._next_id = 0
        self.workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> _PoolWorker:
        name = f"pool-{self._next_id}"
        self._next_id += 1
        return _PoolWorker(self._ctx, self.config, name)

    def measure(self, texts: list[str]) -> list[Result]:
        if not self.workers:
            raise LtError("error: the measurer is closed")
        results: list[Result | None] = [None] * len(texts)
        pending = deque((i, 1) for i in range(len(texts)))
        while pending or any(w.task for w in self.workers):
            for k, w in enumerate(self.workers):
                if w.task is None and not w.process.is_alive():
                    w.stop(0)
                    self.workers[k] = w = self._spawn()
                if w.task is None and pending:
                    index, attempts = pending.popleft()
                    w.task, w.since = (index, attempts), time.monotonic() if w.ready else None
                    try:
                        w.conn.send((index, texts[index], attempts))
                    except (OSError, ValueError):
                        pass  # dead: noticed below through its sentinel
            busy = [w for w in self.workers if w.task]
            limit = self.config.limits.compile_s + self.config.limits.run_s
            left = min((limit - (time.monotonic() - w.since) for w in busy if w.since is not None), default=limit)
            ready = set(_wait_ready([w.conn for w in busy] + [w.process.sentinel for w in busy], max(0.0, left)))
            for k, w in enumerate(self.workers):
                if (w.task and w.since is not None and w.conn not in ready and w.process.sentinel not in ready
                        and time.monotonic() - w.since >= limit):
                    index, attempts = w.task
                    results[index] = Result(texts[index], None, None, None, None, w.name,
                                            f"error: compile and run ran past their limit of {limit:g} s (abandoned)", attempts)
                    w.task = None
                    w.process.kill()
                    w.stop(1.0)
                    self.workers[k] = self._spawn()
            for k, w in enumerate(self.workers):
                if w.task is None or (w.conn not in ready and w.process.sentinel not in ready):
                    continue
                index, attempts = w.task
                try:
                    if w.conn.poll():
                        got, result = w.conn.recv()
                        if got == "ready":
                            w.ready, w.since = True, time.monotonic()
                            continue
                        results[got] = result
                        w.task = None
                        continue
                except (EOFError, OSError):
                    pass
                # end of file or the process gone with nothing sent: it died with the text unfinished
                w.task = None
                if attempts <= MAX_RETRIES:
                    pending.append((index, attempts + 1))
                else:
                    results[index] = Result(texts[index], None, None, None, None, w.name, "worker died", attempts)
                w.stop(0)
                self.workers[k] = self._spawn()
        return results  # type: ignore[return-value]

    def close(self) -> None:
        super().close()
        workers, self.workers = self.workers, []
        for w in workers:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 2.0
        for w in workers:
            w.stop(max(0.0, deadline - time.monotonic()))


# -- Ray ------------------------------------------------------------------------


def _import_ray():
    try:
        import ray
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken installation
        raise LtError(f"error: Ray is not available: {e}") from None
    return ray


class RayMeasurer(Measurer):
    """One actor per CPU that Ray reports, each with its own ``_WorkerState``;
    every idle actor gets the next text."""

    def __init__(self, config: _Config, address: str | None = None):
        ray = _import_ray()
        self.config = config
        self._started = False
        if not ray.is_initialized():
            try:
                if address is None:
                    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=address, log_to_driver=False)
            except Exception as e:  # noqa: BLE001
                raise LtError(f"error: Ray is not available: {e}") from None
            self._started = True
        self._ray = ray

        class _Actor:
            def __init__(self, config: _Config):
                os.environ.update(dict(config.hooks))
                actor_id = ray.get_runtime_context().get_actor_id() or "?"
                self.state = _WorkerState(config, f"ray-{actor_id[:12]}")

            def measure(self, text: str, attempts: int) -> Result:
                return self.state.remote_measure(text, attempts)

        self._actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Actor)
        n = int(ray.cluster_resources().get("CPU", 0)) or 2
        self.actors = [self._spawn() for _ in range(n)]

    def _spawn(self):
        return self._actor_class.remote(self.config)

    def measure(self, texts: list[str]) -> list[Result]:
        ray = self._ray
        if not self.actors:
            raise LtError("error: the measurer is closed")
        results: list[Result | None] = [None] * len(texts)
        pending = deque((i, 1) for i in range(len(texts)))
        in_flight: dict = {}  # ref -> (actor slot, index, attempts)
        idle = list(range(len(self.actors)))
        while pending or in_flight:
            while idle and pending:
                slot = idle.pop(0)
                index, attempts = pending.popleft()
                ref = self.actors[slot].measure.remote(texts[index], attempts)
                in_flight[ref] = (slot, index, attempts)
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                slot, index, attempts = in_flight.pop(ref)
                try:
                    results[index] = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                    if attempts <= MAX_RETRIES:
                        pending.append((index, attempts + 1))
                    else:
                        results[index] = Result(texts[index], None, None, None, None, "ray", "worker died", attempts)
                    try:
                        ray.kill(self.actors[slot])
                    except Exception:  # noqa: BLE001 - dead already
                        pass
                    self.actors[slot] = self._spawn()
                except ray.exceptions.RayError as e:
                    results[index] = Result(texts[index], None, None, None, None, "ray", f"error: {e}", attempts)
                idle.append(slot)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        super().close()
        ray = self._ray
        actors, self.actors = self.actors, []
        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        if self._started and ray.is_initialized():
            ray.shutdown()
            self._started = False


def make_measurer(
    start_text: str,
    entry: str | None = None,
    target="cpu",
    workers=1,
    ray_address: str | None = None,
    repeat: int = 10,
    seed: int = 0,
    limits: Limits | None = None,
    min_sample_s: float = 1e-3,
) -> Measurer:
    """A measurer of schedules of ``start_text`` (speedups are against it).

    ``workers=1``: in this process; ``workers=N``: N spawned worker
    processes; ``workers="ray"``: one Ray actor per CPU of the Ray cluster
    at ``ray_address`` (a local instance when None and Ray is not running).
    ``target``: ``cpu``, ``cuda-emulated`` or ``cuda`` (without a device
    every result carries the CUDA runtime's error).  ``repeat``: timing
    samples of at least ``min_sample_s`` each (``evaluate.Evaluator``);
    ``limits``: a compile's and a run's time limits (``evaluate.Limits``;
    this process and the pool enforce them, Ray's actors do not)."""
    target = get_target(target).name
    _start_specs(start_text, entry)  # an unreadable start schedule: an error now, in this process
    bench = Config(start_text, entry, target, seed=int(seed), samples=max(3, int(repeat)), min_sample_s=min_sample_s, cache_size=128)
    config = _Config(bench, limits or Limits(), _hook_env())
    if workers == "ray":
        return RayMeasurer(config, ray_address)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LtError(f"error: workers must be a positive integer or 'ray', got {workers!r}")
    if workers == 1:
        return LocalMeasurer(config)
    return PoolMeasurer(config, workers)
