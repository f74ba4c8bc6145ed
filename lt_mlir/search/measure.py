"""Measurement backends of the schedule search (``lt-tune``): compile a
batch of candidate schedules (lt module texts), check them against the
start schedule and time them, in this process, in a pool of local worker
processes, or on Ray actors (one machine or a cluster: docs/CLUSTER.md).

Comparability across workers.  Raw times from different workers (other
cores, other machines, other load) are never compared.  Every worker
compiles the *start* schedule itself, makes the same seeded inputs,
computes the reference outputs from it, and times it: once at startup and
again after every 20 measurements (the latest baseline counts, so slow
drift in a worker's speed is followed).  A candidate's ``speedup`` is that
worker's baseline over that worker's time for the candidate; the search
compares speedups only.  ``correct`` likewise compares the candidate's
outputs with the start schedule's outputs computed on the same worker from
the same inputs.

Cores (Ray).  Two timings never share a physical core: each Ray node runs
one measuring actor per physical core it may use, pinned to that core's
hardware threads (``os.sched_setaffinity``) and reserving them from Ray
(``num_cpus`` = the threads of the core), and nodes that share a machine
share out its cores (``plan_slots``).  A candidate with a parallel loop
(``lt.parallel``: OpenMP) on a one-core actor would run on one thread and
show no speedup, so it is timed on a whole machine instead: it waits until
every actor of one machine is idle, and that machine's *wide* actor,
pinned to all of the machine's measuring cores, times it (the others keep
still meanwhile).  When the start schedule itself has a parallel loop,
every text is timed on wide actors (its baseline is a parallel time).  The
pool's workers are not pinned: ``workers=N`` is N processes wherever the
OS puts them (give timings that matter few of them; a ``parallel``
schedule wants every core).

A bad candidate (parse, verify, bounds, compile or argument error) gives a
``Result`` with ``error`` set; ``measure`` never raises for one.  Every
text gets exactly one ``Result``, in the order given.

Crashes are never retried.  A worker (pool process or Ray actor) that dies
while measuring a text -- killed, a segfault in compiled code, its node
gone -- gives that text the ``Result`` ``error="worker died: <reason>"``
(``attempts`` 1), which the search logs with the schedule like any failed
candidate; the worker is replaced by a fresh one for the next texts.  (A
retry would either hide a candidate that crashes its worker, or, when the
crash was somebody else's kill, take the same text twice: the log would
record one line for two runs.  A text that failed can be measured again by
asking for it again.)  A compile and run that pass ``Limits`` together
(``compile_s + run_s`` from the text's dispatch) are abandoned: the worker
is killed and replaced, and the text's error says so.

The pool backend starts worker processes with ``spawn``: a script that
makes one needs the usual ``if __name__ == "__main__":`` guard.

Test hook: with ``LT_SEARCH_DIE_ON=<substring>`` in the environment, a pool
or Ray worker given a text containing the substring (``*``: any text but
the start schedule's) exits (``os._exit(1)``) the first time it sees that
text; the first time is remembered by a marker file in
``LT_SEARCH_DIE_DIR`` (default: the temp directory).  With
``LT_SEARCH_DIE_ONCE=1`` only the first such text of all kills its worker.
"""

from __future__ import annotations

import hashlib
import logging
import math
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait as _wait_ready

from ..errors import LtError
from ..evaluate import Bench, Config, Evaluator, Limits, Measurement, has_parallel_loop
from ..targets import get_target

_HOOK_VARS = ("LT_SEARCH_DIE_ON", "LT_SEARCH_DIE_DIR", "LT_SEARCH_DIE_ONCE")


@dataclass
class Result:
    text: str  # the schedule's lt module text (what was measured)
    runtime_s: float | None  # median seconds per call on the worker that measured it
    baseline_s: float | None  # the start schedule's median on that same worker
    speedup: float | None  # baseline_s / runtime_s (what the search compares)
    correct: bool | None  # outputs equal the start schedule's outputs on the same inputs
    worker: str  # "local", "pool-3", "ray-<actor>@<node ip>/<node id>:cpu<cores>"
    error: str = ""  # a compile/run error, a time limit, or "worker died: <reason>"
    attempts: int = 1  # always 1: a text is never retried (the field stays for old logs and callers)
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

    def remote_measure(self, text: str, attempts: int, llvm_ir: str | None = None) -> Result:
        """``Bench.measure`` in a worker process, after the test hook."""
        _maybe_die(text, self.bench.config.start_text)
        return Result.of(self.bench.measure(text, llvm_ir=llvm_ir), attempts)


def _maybe_die(text: str, start_text: str) -> None:
    victim = os.environ.get("LT_SEARCH_DIE_ON")
    if not victim or (victim not in text if victim != "*" else text == start_text):
        return
    marker_dir = os.environ.get("LT_SEARCH_DIE_DIR") or tempfile.gettempdir()
    once = os.environ.get("LT_SEARCH_DIE_ONCE") == "1"
    marker = os.path.join(marker_dir, "lt-search-died-" + ("once" if once else hashlib.sha1(text.encode()).hexdigest()[:16]))
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # died on this text (or, once, on any) before: measure it this time
    os.close(fd)
    os._exit(1)


def _hook_env() -> tuple:
    return tuple((k, os.environ[k]) for k in _HOOK_VARS if k in os.environ)


class Measurer:
    """Measures batches of schedule texts; ``measure`` blocks and returns one
    ``Result`` per text, in order.  ``remeasure`` times texts again,
    interleaved in one process (the search's last word on its best)."""

    config: _Config
    takes_code = False  # whether ``measure`` uses ``codes`` (its workers run on this host)

    def measure(self, texts: list[str], codes: list | None = None) -> list[Result]:
        """``codes``: for each text its optimised LLVM IR for this host and
        the measurer's options, or None (``Bench.kernel``: only code
        generation is left); workers on other hosts ignore them."""
        raise NotImplementedError

    @property
    def parallelism(self) -> int:
        """How many texts it times at once (the search sizes its batches by it)."""
        return 1

    def remeasure(self, texts: list[str], rounds: int = 5) -> list[Result]:
        evaluator = self._evaluator()
        return [Result.of(m) for m in evaluator.remeasure(texts, rounds)]

    def _evaluator(self) -> Evaluator:
        if getattr(self, "_remeasurer", None) is None:
            c = self.config.bench
            self._remeasurer = Evaluator(c.start_text, c.entry, c.target, c.options, inputs=c.inputs, seed=c.seed,
                                         limits=self.config.limits, samples=c.samples, min_sample_s=c.min_sample_s,
                                         budget_s=c.budget_s)
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

    takes_code = True

    def __init__(self, config: _Config):
        self.config = config

    def measure(self, texts: list[str], codes: list | None = None) -> list[Result]:
        evaluator = self._evaluator()
        codes = codes or [None] * len(texts)
        return [Result.of(evaluator.measure(t, llvm_ir=code)) for t, code in zip(texts, codes)]


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
        index, text, attempts, llvm_ir = task
        conn.send((index, state.remote_measure(text, attempts, llvm_ir)))


def _exit_reason(code: int | None) -> str:
    """A dead process's exit status, in words."""
    if code is None:
        return "its connection closed"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (" (a crash in compiled code?)" if name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGABRT", "SIGFPE") else "")
    return f"exit status {code}"


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

    takes_code = True

    def __init__(self, config: _Config, workers: int):
        self.config = config
        self._ctx = multiprocessing.get_context("spawn")
        self._next_id = 0
        self.workers = [self._spawn() for _ in range(workers)]

    @property
    def parallelism(self) -> int:
        return max(1, len(self.workers))

    def _spawn(self) -> _PoolWorker:
        name = f"pool-{self._next_id}"
        self._next_id += 1
        return _PoolWorker(self._ctx, self.config, name)

    def measure(self, texts: list[str], codes: list | None = None) -> list[Result]:
        if not self.workers:
            raise LtError("error: the measurer is closed")
        codes = codes or [None] * len(texts)
        results: list[Result | None] = [None] * len(texts)
        pending = deque((i, 1) for i in range(len(texts)))  # (index, attempts): always one attempt
        while pending or any(w.task for w in self.workers):
            for k, w in enumerate(self.workers):
                if w.task is None and not w.process.is_alive():
                    w.stop(0)
                    self.workers[k] = w = self._spawn()
                if w.task is None and pending:
                    index, attempts = pending.popleft()
                    w.task, w.since = (index, attempts), time.monotonic() if w.ready else None
                    try:
                        w.conn.send((index, texts[index], attempts, codes[index]))
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
                w.process.join(1.0)
                results[index] = Result(texts[index], None, None, None, None, w.name,
                                        f"worker died: {_exit_reason(w.process.exitcode)}", attempts)
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


# -- cores --------------------------------------------------------------------


def _cpu_list(text: str) -> list[int]:
    """Linux's CPU list format (``0-3,8,10-11``) as numbers."""
    out: list[int] = []
    for part in text.strip().split(","):
        if part.strip():
            first, _, last = part.partition("-")
            out.extend(range(int(first), int(last or first) + 1))
    return out


def _cpu_text(cpus) -> str:
    """CPU numbers in that format: (0, 1, 2, 5) -> ``0-2,5``."""
    runs: list[list[int]] = []
    for c in sorted(set(cpus)):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def allowed_cpus() -> list[int]:
    """The logical CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _cpuinfo_cores(path: str) -> dict[int, tuple]:
    """/proc/cpuinfo: logical CPU -> (physical id, core id)."""
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError:
        return {}
    out = {}
    for block in text.split("\n\n"):
        fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in block.splitlines())}
        if fields.get("processor", "").isdigit() and "core id" in fields:
            out[int(fields["processor"])] = (fields.get("physical id", "0"), fields["core id"])
    return out


def physical_cores(allowed=None, sysfs: str = "/sys/devices/system/cpu", cpuinfo: str = "/proc/cpuinfo") -> list[tuple[int, ...]]:
    """The physical cores this process may run on (``allowed``: logical
    CPUs, default its affinity), each as the sorted logical CPUs (hardware
    threads) of it among them: from the kernel's sibling lists (sysfs), else
    /proc/cpuinfo's (physical id, core id) pairs, else one core a CPU."""
    cpus = sorted(set(allowed_cpus() if allowed is None else allowed))
    core_of: dict[int, tuple] = {}
    try:
        for c in cpus:
            with open(f"{sysfs}/cpu{c}/topology/thread_siblings_list") as fh:
                core_of[c] = ("siblings", *_cpu_list(fh.read()))
    except (OSError, ValueError):
        core_of = _cpuinfo_cores(cpuinfo)
        if not all(c in core_of for c in cpus):
            core_of = {}
    groups: dict[tuple, list[int]] = {}
    for c in cpus:
        groups.setdefault(core_of.get(c, ("cpu", c)), []).append(c)
    return sorted(tuple(g) for g in groups.values())


def _machine() -> str:
    """Which machine (kernel) this is: its boot id, else its host name.
    Ray nodes on one machine (several raylets, containers) share its cores."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return socket.gethostname()


def node_facts() -> dict:
    """What the planner needs of a node (run there as a Ray task)."""
    return {"machine": _machine(), "host": socket.gethostname(), "cores": physical_cores()}


def _pin(cpus) -> None:
    """Run this process, every thread it has and any it starts (OpenMP's,
    MLIR's), on ``cpus`` only; OpenMP gets one thread a CPU."""
    os.environ["OMP_NUM_THREADS"] = str(len(cpus))
    if not hasattr(os, "sched_setaffinity"):
        return
    try:
        threads = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        threads = []
    for tid in threads:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass  # a thread that ended meanwhile
    os.sched_setaffinity(0, cpus)  # this one, or an error that says why not


@dataclass(frozen=True)
class Slot:
    """One measuring Ray actor: its node, the logical CPUs it is pinned to,
    the Ray CPUs it reserves."""

    node_id: str
    where: str  # "<node ip>/<node id, 8 hex digits>": what the log's worker names carry
    machine: str
    cpus: tuple[int, ...]
    num_cpus: float
    wide: bool = False  # times the parallel candidates, on all of its machine's measuring cores


def plan_slots(nodes: list[dict]) -> list[Slot]:
    """The measuring actors of a Ray cluster.  ``nodes``: dicts of
    ``node_id``, ``ip``, ``cpus`` (the node's Ray CPU resource) and
    ``node_facts()``'s ``machine`` and ``cores``.

    One actor a physical core, reserving the core's hardware threads as Ray
    CPUs, for as many cores as the node's Ray CPUs cover (``ray start
    --num-cpus 1`` on an 8-core machine: one actor; a 2-thread core on a
    node of one Ray CPU: reserves the one).  Nodes of one machine take
    disjoint cores, in the order of their node ids.  Then one wide actor a
    machine with more than one measuring core, on its first node, pinned to
    all of them and reserving no Ray CPU (``RayMeasurer`` runs it only
    while the machine's one-core actors wait).

    Why node affinity and not placement groups: each actor must know which
    cores of its node are its own, so the planner asks every node for its
    topology (a zero-CPU task pinned to it) and places each actor on its
    node (``NodeAffinitySchedulingStrategy``, hard); ``num_cpus`` keeps
    Ray from putting more of them, or other CPU tasks, on the node than it
    has CPUs.  A STRICT_SPREAD placement group puts one bundle a node (one
    actor a node, not a core), and a per-node STRICT_PACK group would only
    add an all-or-nothing reservation on top of what the node's CPU
    resource already bounds."""
    slots: list[Slot] = []
    taken: dict[str, set] = {}
    for n in sorted(nodes, key=lambda n: (n["machine"], n["node_id"])):
        used = taken.setdefault(n["machine"], set())
        budget = int(n["cpus"])
        where = f"{n['ip']}/{n['node_id'][:8]}"
        for core in n["cores"]:
            core = tuple(core)
            if budget < 1 or used & set(core):
                continue
            reserve = min(len(core), budget)
            slots.append(Slot(n["node_id"], where, n["machine"], core, float(reserve)))
            budget -= reserve
            used.update(core)
    wide = []
    for machine in dict.fromkeys(s.machine for s in slots):
        narrow = [s for s in slots if s.machine == machine]
        if len(narrow) > 1:
            cpus = tuple(sorted(c for s in narrow for c in s.cpus))
            wide.append(Slot(narrow[0].node_id, narrow[0].where, machine, cpus, 0.0, wide=True))
    return slots + wide


# -- Ray ------------------------------------------------------------------------


def _import_ray():
    try:
        import ray
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken installation
        raise LtError(f"error: Ray is not available: {e}") from None
    return ray


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


_GCS_PROBE = """
import sys
from ray._raylet import GcsClient
try:
    GcsClient(address=sys.argv[1]).internal_kv_get(b"lt-tune-probe", None)
except Exception as e:
    print(type(e).__name__ + ": " + (str(e).strip().splitlines() or [""])[0])
    sys.exit(2)
"""
PROBE_S = 30.0  # the longest wait for a Ray cluster's GCS to answer
CONNECT_S = 5.0  # ... and for its port to accept a connection
_ANSWERED: dict[str, float] = {}  # address -> when its GCS last answered (a check is good for a minute)


def check_ray_address(address: str) -> str:
    """``address`` (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``) if a
    Ray cluster answers there, else an ``LtError`` of one line: Ray's own
    connect retries for many minutes.  The port must accept a connection
    within ``CONNECT_S``; a GCS address must then answer a GCS client (in a
    child process with Ray's timeouts shortened, killed after ``PROBE_S``)."""
    text = address.strip()
    if text == "auto":  # Ray finds the cluster ``ray start`` recorded on this machine
        return text
    client = text.startswith("ray://")
    hostport = text[len("ray://"):] if client else text
    host, sep, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise LtError(f"error: bad Ray address '{address}': expected HOST:PORT (what `ray start --head` printed) "
                      "or ray://HOST:PORT (the Ray Client's port)")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_S).close()
    except OSError as e:
        why = e.strerror or str(e) or type(e).__name__
        raise LtError(f"error: cannot reach the Ray cluster at {text}: {why} "
                      f"(is `ray start --head --port {port}` running there? see docs/CLUSTER.md)") from None
    if client or time.monotonic() - _ANSWERED.get(text, -math.inf) < 60.0:
        return text
    env = dict(os.environ, RAY_gcs_rpc_server_connect_timeout_s="3", RAY_gcs_rpc_server_reconnect_timeout_s="5")
    try:
        probe = subprocess.run([sys.executable, "-c", _GCS_PROBE, hostport], env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=PROBE_S)
    except subprocess.TimeoutExpired:
        raise LtError(f"error: {text} accepts connections but did not answer as a Ray cluster in {PROBE_S:g} s "
                      "(the port `ray start --head` printed: 6379 unless --port; not the dashboard's 8265)") from None
    if probe.returncode != 0:
        said = (probe.stdout.strip().splitlines() or [""])[-1]
        if "Authentication" in said or "auth" in said.lower():
            raise LtError(f"error: the Ray cluster at {text} refused this process's token: set RAY_AUTH_MODE=token and "
                          "the cluster's token (RAY_AUTH_TOKEN, or ~/.ray/auth_token) as on its nodes; see docs/CLUSTER.md")
        raise LtError(f"error: {text} is not answering as a Ray cluster ({said or 'the GCS client gave up'}; "
                      "the port `ray start --head` printed: 6379 unless --port, not the dashboard's 8265)")
    _ANSWERED[text] = time.monotonic()
    return text


class _RayActor:
    """A measuring actor: pinned to its CPUs when made; ``start`` makes its
    ``_WorkerState`` (compiles and times the start schedule)."""

    def __init__(self, config: _Config, cpus: tuple, where: str):
        import ray

        os.environ.update(dict(config.hooks))
        _pin(cpus)
        self.config = config
        actor_id = ray.get_runtime_context().get_actor_id() or "?"
        self.name = f"ray-{actor_id[:8]}@{where}:cpu{_cpu_text(cpus)}"
        self.state: _WorkerState | None = None

    def pinned(self) -> str:
        return self.name

    def affinity(self) -> tuple[list[int], str]:
        """The CPUs this process runs on, and OpenMP's thread count (a check)."""
        return sorted(allowed_cpus()), os.environ.get("OMP_NUM_THREADS", "")

    def start(self) -> str:
        if self.state is None:
            self.state = _WorkerState(self.config, self.name)
        return self.name

    def measure(self, text: str) -> Result:
        self.start()
        return self.state.remote_measure(text, 1)


def _ray_reason(e: BaseException) -> str:
    """Why an actor died, in one line, from Ray's error."""
    text = str(e)
    m = re.search(r"Worker exit detail: (.*?)(?:\.\s|\n|$)", text)
    if m:
        reason = m.group(1).strip()
    elif "creation task" in text:
        reason = "its start-up raised: " + _first_line(e).split("creation task,", 1)[-1].strip()
    else:
        reason = _first_line(e)
    pid = re.search(r"\bpid: (\d+)", text)
    ip = re.search(r"\bip: (\S+)", text)
    where = ", ".join(x for x in (f"pid {pid.group(1)}" if pid else "", f"on {ip.group(1)}" if ip else "") if x)
    return f"{reason} ({where})" if where else reason


class RayMeasurer(Measurer):
    """Measuring actors on a Ray cluster (``plan_slots``): one a physical
    core, pinned to it, and one wide actor a machine for the parallel
    candidates; every idle actor gets the next text it may take.

    ``address``: a cluster (``check_ray_address``); None: ``RAY_ADDRESS``
    if set, else a fresh local instance of this machine's CPUs (stopped
    again by ``close``).  A Ray already initialised in this process is used
    as it is."""

    STARTUP_S = 120.0  # an actor's start-up (imports, the start schedule compiled and timed) on a loaded machine

    def __init__(self, config: _Config, address: str | None = None):
        ray = _import_ray()
        self.config = config
        self._ray = ray
        self._started = False
        self.actors: list | None = []
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS") or None
            if address is not None:
                address = check_ray_address(address)
            try:
                if address is None:
                    ray.init(address="local", num_cpus=len(allowed_cpus()), include_dashboard=False, log_to_driver=False,
                             logging_level=logging.ERROR)
                else:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            except Exception as e:  # noqa: BLE001
                raise LtError(f"error: Ray is not available: {_first_line(e)}") from None
            self._started = True
        try:
            self._all_wide = has_parallel_loop(config.bench.start_text)
            self.slots = plan_slots(self._nodes())
            if not self.slots:
                raise LtError("error: the Ray cluster has no live node with a CPU to measure on")
            n = len(self.slots)
            self.actors = [None] * n
            self.names = [f"ray@{s.where}:cpu{_cpu_text(s.cpus)}" for s in self.slots]
            self.ready = [False] * n
            self.busy = [False] * n
            self.gone: set = set()  # slots given up (their actor would not start)
            self.dropped: list[str] = []  # why
            self._starting: dict = {}  # a starting actor's ref -> (slot, when spawned)
            self._respawn: set = set()  # slots whose actor died: a fresh one when its machine is idle
            self._class = ray.remote(max_restarts=0, max_task_retries=0)(_RayActor)
            # Start-up in steps, so that no actor's start-up (imports, before it is
            # pinned) runs beside another's timing of the start schedule: the one-core
            # actors are made and pinned, then they time the start (each on its own
            # core), then the wide actors are made and time it (the others idle).
            narrow = [k for k, s in enumerate(self.slots) if not s.wide]
            for k in narrow:
                self._spawn(k, start=False)
            self._settle()
            for k in narrow:
                if self.actors[k] is not None:
                    self._starting[self.actors[k].start.remote()] = (k, time.monotonic())
                    self.ready[k] = False
            self._settle()
            for k, s in enumerate(self.slots):
                if s.wide and any(self.ready[j] for j, t in enumerate(self.slots) if t.machine == s.machine and not t.wide):
                    self._spawn(k)
            self._settle()
            if not any(self.ready):
                raise LtError("error: no Ray actor started: " + "; ".join(self.dropped))
            if self.dropped:
                sys.stderr.write(f"lt-tune: warning: {len(self.dropped)} of {n} Ray actors did not start: {self.dropped[0]}\n")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ the actors
    def _nodes(self) -> list[dict]:
        """The live nodes with a CPU, with their ``node_facts``."""
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        alive = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]
        probe = ray.remote(num_cpus=0, max_retries=0)(node_facts)
        refs = {probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(): n
                for n in alive}
        done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=self.STARTUP_S) if refs else ([], [])
        out = []
        for ref in done:
            n = refs[ref]
            try:
                facts = ray.get(ref)
            except ray.exceptions.RayError:
                continue  # a node that died meanwhile
            out.append({"node_id": n["NodeID"], "ip": n.get("NodeManagerAddress", "?"), "cpus": n["Resources"]["CPU"], **facts})
        return out

    def _spawn(self, k: int, start: bool = True) -> None:
        """A fresh actor for slot ``k``, on its node, pinned (and ``start``ed)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        s = self.slots[k]
        actor = self._class.options(num_cpus=s.num_cpus,
                                    scheduling_strategy=NodeAffinitySchedulingStrategy(s.node_id, soft=False)
                                    ).remote(self.config, s.cpus, s.where)
        self.actors[k], self.ready[k], self.busy[k] = actor, False, False
        self._starting[(actor.start if start else actor.pinned).remote()] = (k, time.monotonic())

    def _kill(self, k: int) -> None:
        actor, self.actors[k], self.ready[k], self.busy[k] = self.actors[k], None, False, False
        if actor is not None:
            try:
                self._ray.kill(actor)
            except Exception:  # noqa: BLE001 - dead already
                pass

    def _drop(self, k: int, why: str) -> None:
        self._kill(k)
        self.gone.add(k)
        self.dropped.append(f"{self.names[k]}: {why}")

    def _started_one(self, ref) -> None:
        k, _ = self._starting.pop(ref)
        try:
            self.names[k] = self._ray.get(ref)
            self.ready[k] = True
        except self._ray.exceptions.RayError as e:
            self._drop(k, _ray_reason(e))

    def _settle(self) -> None:
        """Wait for the actors starting (each up to ``STARTUP_S``)."""
        while self._starting:
            self._wait({})

    def _wait(self, in_flight: dict) -> list:
        """Wait for a measurement or a start-up, or a time limit: the
        measurements done (start-ups are taken in; actors past their
        start-up time are given up)."""
        ray = self._ray
        limit = self.config.limits.compile_s + self.config.limits.run_s
        now = time.monotonic()
        ends = [t + limit for (_, _, t) in in_flight.values()] + [t + self.STARTUP_S for (_, t) in self._starting.values()]
        done, _ = ray.wait(list(in_flight) + list(self._starting), num_returns=1, timeout=max(0.0, min(ends) - now))
        for ref in [r for r in done if r in self._starting]:
            self._started_one(ref)
        now = time.monotonic()
        for ref, (k, t) in list(self._starting.items()):
            if now - t >= self.STARTUP_S:
                del self._starting[ref]
                self._drop(k, f"did not start in {self.STARTUP_S:g} s (its node busy or gone?)")
        return [r for r in done if r in in_flight]

    # ------------------------------------------------------------ placing texts
    def _machines(self) -> dict:
        """machine -> its slots (the wide one last)."""
        out: dict = {}
        for k, s in enumerate(self.slots):
            out.setdefault(s.machine, []).append(k)
        return out

    def _occupied(self, k: int) -> bool:
        return self.busy[k] or (self.actors[k] is not None and not self.ready[k])  # measuring, or starting

    def _died(self, k: int) -> None:
        """Slot ``k``'s actor died: killed for good, a fresh one made when its machine is idle."""
        self._kill(k)
        self._respawn.add(k)

    def _wide_target(self, slots: list[int]) -> int | None:
        """The slot that times a machine's parallel texts now: its wide
        actor, or its one-core actor where it has no other (None: starting)."""
        wide = [k for k in slots if self.slots[k].wide and k not in self.gone]
        if wide:
            return wide[0] if self.ready[wide[0]] else None
        return next((k for k in slots if self.ready[k]), None)

    def _dispatch(self, texts: list[str], pending: deque, wide_text: list[bool], in_flight: dict) -> None:
        """Send the pending texts the actors can take now: a parallel one to a
        machine with nothing running (a machine is held for it otherwise, so
        that it empties), the others to the idle one-core actors of the
        machines neither held nor timing a parallel text."""
        machines = self._machines()
        starting = {k for k, _ in self._starting.values()}
        for m, slots in machines.items():  # replace dead actors where nothing is timed
            if self._respawn & set(slots) and not any(self.busy[j] or j in starting for j in slots):
                for k in sorted(self._respawn & set(slots)):
                    self._respawn.discard(k)
                    self._spawn(k)
        starting = {k for k, _ in self._starting.values()}
        held = {m for m, slots in machines.items() if any(j in starting for j in slots)}  # nothing beside a start-up
        for index in [i for i in pending if wide_text[i]] + [i for i in pending if not wide_text[i]]:
            k = None
            if wide_text[index]:
                for m, slots in machines.items():
                    if m not in held and not any(self._occupied(j) for j in slots):
                        k = self._wide_target(slots)
                        if k is not None:
                            break
                if k is None:
                    free = [m for m in machines if m not in held and self._wide_target(machines[m]) is not None]
                    if free:  # hold the machine with the fewest texts running
                        held.add(min(free, key=lambda m: sum(self.busy[j] for j in machines[m])))
                    continue
                held.add(self.slots[k].machine)
            else:
                for m, slots in machines.items():
                    if m in held or any(self._occupied(j) for j in slots if self.slots[j].wide):
                        continue
                    k = next((j for j in slots if not self.slots[j].wide and self.ready[j] and not self.busy[j]), None)
                    if k is not None:
                        break
                if k is None:
                    continue
            pending.remove(index)
            self.busy[k] = True
            in_flight[self.actors[k].measure.remote(texts[index])] = (k, index, time.monotonic())

    # ------------------------------------------------------------ measuring
    @property
    def parallelism(self) -> int:
        if not self.actors:
            return 1
        if self._all_wide:
            return max(1, len(self._machines()))
        return max(1, sum(1 for k, s in enumerate(self.slots) if not s.wide and k not in self.gone))

    def measure(self, texts: list[str], codes: list | None = None) -> list[Result]:
        # ``codes`` ignored: an actor may run on another host, whose code is its own
        ray = self._ray
        if not self.actors:
            raise LtError("error: the measurer is closed")
        results: list[Result | None] = [None] * len(texts)
        wide_text = [self._all_wide or has_parallel_loop(t) for t in texts]
        pending = deque(range(len(texts)))
        in_flight: dict = {}  # ref -> (slot, index, when sent)
        limit = self.config.limits.compile_s + self.config.limits.run_s
        try:
            while pending or in_flight:
                self._dispatch(texts, pending, wide_text, in_flight)
                if pending and not in_flight and not self._starting:
                    raise LtError("error: no Ray actor is left to measure on: " + "; ".join(self.dropped[-3:]))
                for ref in self._wait(in_flight):
                    k, index, _ = in_flight.pop(ref)
                    self.busy[k] = False
                    try:
                        results[index] = ray.get(ref)
                    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as e:
                        results[index] = Result(texts[index], None, None, None, None, self.names[k], f"worker died: {_ray_reason(e)}")
                        self._died(k)
                    except ray.exceptions.RayError as e:
                        results[index] = Result(texts[index], None, None, None, None, self.names[k], f"error: {_first_line(e)}")
                now = time.monotonic()
                for ref, (k, index, t) in list(in_flight.items()):
                    if now - t >= limit:
                        del in_flight[ref]
                        results[index] = Result(texts[index], None, None, None, None, self.names[k],
                                                f"error: compile and run ran past their limit of {limit:g} s (abandoned)")
                        self.busy[k] = False
                        self._died(k)
        except BaseException:  # Ctrl-C, a lost cluster: what was sent is abandoned, its actors replaced
            for k, _, _ in in_flight.values():
                self._died(k)
            raise
        return results  # type: ignore[return-value]

    def close(self) -> None:
        super().close()
        ray = self._ray
        actors, self.actors = self.actors or [], None
        for a in actors:
            if a is not None:
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
    inputs: tuple | None = None,
) -> Measurer:
    """A measurer of schedules of ``start_text`` (speedups are against it).

    ``workers=1``: in this process; ``workers=N``: N spawned worker
    processes; ``workers="ray"``: Ray actors, one a physical core of the
    cluster at ``ray_address`` and one a machine for parallel candidates
    (``RayMeasurer``; a local instance when None, ``RAY_ADDRESS`` unset and
    Ray not initialised in this process).  ``target``: ``cpu``,
    ``cuda-emulated`` or ``cuda`` (without a device every result carries
    the CUDA runtime's error).  ``repeat``: timing samples of at least
    ``min_sample_s`` each (``evaluate.Evaluator``); ``limits``: a compile's
    and a run's time limits (``evaluate.Limits``: this process enforces
    each; the pool and Ray their sum, from a text's dispatch); ``inputs``:
    the read-only arguments to run on (None: seeded random ones)."""
    target = get_target(target).name
    _start_specs(start_text, entry)  # an unreadable start schedule: an error now, in this process
    bench = Config(start_text, entry, target, seed=int(seed), samples=max(3, int(repeat)), min_sample_s=min_sample_s, cache_size=128,
                   inputs=None if inputs is None else tuple(inputs))
    config = _Config(bench, limits or Limits(), _hook_env())
    if workers == "ray":
        return RayMeasurer(config, ray_address)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LtError(f"error: workers must be a positive integer or 'ray', got {workers!r}")
    if workers == 1:
        return LocalMeasurer(config)
    return PoolMeasurer(config, workers)
