"""Schedule search: a strategy proposes, a measurer measures, a log records.

``Tuner`` holds what a search knows: the start schedule, every evaluation
(cached by schedule text; a cached candidate costs nothing), the budget
(evaluations and/or seconds), the best correct schedule, the cost model and
the JSON-lines log (``--resume`` replays it).  A log starts with a header
naming the program (``tuning.program_hash``), the target and the host
(``tuning.host()``); a log is resumed, or appended to, only by a search of the
same three, since its speedups mean nothing for another.  Strategies (``STRATEGIES``)
are functions of the tuner and a seeded generator; each calls
``tuner.measure(candidates, keep)``, where ``keep`` is how many the cost
model may pick from the candidates (all of them without a model).

Scores are speedups over the start schedule measured on the same worker
(``measure.py``), so measurements from different workers compare; GFLOP/s
are the start's (measured once here) times that speedup.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

import numpy as np

from ..dialect import lt
from ..errors import LtError
from ..evaluate import Limits
from ..lowering.ir_counts import code_key
from ..schedule import Schedule
from ..targets import CompileOptions, get_target
from ..tuning import host, program_hash
from . import space
from .measure import allowed_cpus
from .model import CostModel, within_batch_spearman


@dataclass
class Candidate:
    moves: list  # of space.Move
    schedule: Schedule

    @property
    def text(self) -> str:
        return self.schedule.text


@dataclass
class Evaluation:
    index: int
    moves: list
    pipeline: str
    text: str
    speedup: float | None
    runtime_s: float | None
    worker: str
    correct: bool | None
    error: str
    predicted: float | None
    elapsed_s: float

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["moves"] = [str(m) for m in self.moves]
        return d

    @property
    def score(self) -> float:
        """What the search maximises: the speedup of a correct schedule."""
        return self.speedup if (self.speedup is not None and self.correct and not self.error) else 0.0


def _lower_and_count(job: tuple) -> tuple:
    """(``code_key``, ``space.ir_counts_of``, the optimised IR itself) of a
    schedule's optimised code; ``job``: (its text, its entry, the target's
    name).  (None, None, None): it does not lower."""
    text, entry, target = job
    schedule = Schedule(text, entry)
    code = space.optimized_ir(schedule, target)
    if code is None:
        return None, None, None
    return code_key(code[0]), space.ir_counts_of(schedule, target, code=code), code[0]


def _lowering_server(fd: int) -> None:
    """A lowering process's loop (``python -c``, so that a user's script is
    never re-imported): jobs in, ``_lower_and_count`` out, until None or
    the search's end of the socket closes; it says ``_READY`` first, once
    imported (a job's time limit counts from then).  Ctrl-C is the search's.
    ``$LT_LOWER_DIE_ON``: the process dies on a job whose text holds it
    (the tests' crash in LLVM); ``$LT_LOWER_HANG_ON``: it answers one only
    after a minute (the tests' lowering that takes too long)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    conn.send(_READY)
    victim, hang = os.environ.get("LT_LOWER_DIE_ON"), os.environ.get("LT_LOWER_HANG_ON")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        if victim and victim in job[0]:
            os._exit(1)
        if hang and hang in job[0]:
            time.sleep(60)  # longer than the tests' limit; a minute, not a hang, if the limit failed
        conn.send(_lower_and_count(job))


_READY = "ready"  # a lowering process's first message
_START_S = 60.0  # seconds a lowering process may take to start (import lt_mlir) before it counts as dead


class _Lowerer:
    """One lowering process over a socket pair; what it prints goes to a
    file of its own."""

    def __init__(self):
        ours, theirs = socket.socketpair()
        self.log = tempfile.TemporaryFile()
        code = f"from lt_mlir.search.tune import _lowering_server; _lowering_server({theirs.fileno()})"
        self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=self.log)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False  # it said _READY
        self.since = time.monotonic()  # when it started, then when its job did

    def close(self, wait_s: float = 5.0) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        try:
            self.process.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.conn.close()
        self.log.close()


class Lowerers:
    """``n`` processes lowering, optimising and counting schedules for
    ``--model ir`` (``map``).  A process that dies on a job (a crash in
    LLVM) is replaced and the job tried once more on the new one; a job
    that kills two is a schedule that does not lower (``crashed``), the
    search goes on.  A job that takes longer than ``limit_s`` (a compile's
    limit: LLVM optimising a huge unrolled body) is one too, its process
    killed and replaced, the job not tried again (``timed_out``)."""

    def __init__(self, n: int, limit_s: float):
        self.limit_s = limit_s
        self.children = [_Lowerer() for _ in range(n)]
        self.crashed: list[str] = []  # texts of schedules whose lowering killed its process twice
        self.timed_out: list[str] = []  # texts of schedules whose lowering took longer than limit_s
        self.answers = self.deaths = 0

    def map(self, jobs: list) -> list:
        """``_lower_and_count`` of each job, each idle process taking the
        next.  ``LtError`` when the processes die without ever answering
        (they cannot start: the caller lowers in its own process)."""
        out: list = [None] * len(jobs)
        todo, busy, tries = list(range(len(jobs)))[::-1], {}, [0] * len(jobs)

        def give(k: int) -> None:
            while todo:
                busy[k] = todo.pop()
                try:
                    self.children[k].conn.send(jobs[busy[k]])
                    if self.children[k].ready:
                        self.children[k].since = time.monotonic()
                    return
                except OSError:
                    died(k)

        def replace(k: int) -> int:
            self.children[k].close(0.0)
            self.children[k] = _Lowerer()
            return busy.pop(k)

        def died(k: int) -> None:
            self.deaths += 1
            if self.deaths > 2 * len(self.children) and not self.answers:
                raise LtError("error: the lowering processes die before answering")
            i = replace(k)
            tries[i] += 1
            if tries[i] < 2:
                todo.append(i)
            else:
                out[i] = (None, None, None)
                self.crashed.append(jobs[i][0])

        def deadline(k: int) -> float:
            child = self.children[k]
            return child.since + (self.limit_s if child.ready else _START_S)

        for k in range(len(self.children)):
            give(k)
        while busy:
            timeout = max(0.0, min(deadline(k) for k in busy) - time.monotonic())
            for conn in wait([self.children[k].conn for k in busy], timeout):
                k = next(k for k in busy if self.children[k].conn is conn)
                try:
                    answer = conn.recv()
                except (EOFError, OSError):
                    died(k)
                else:
                    if answer == _READY:  # imported: its job starts now
                        self.children[k].ready, self.children[k].since = True, time.monotonic()
                        continue
                    out[busy.pop(k)] = answer
                    self.answers += 1
                give(k)
            now = time.monotonic()
            for k in [k for k in busy if deadline(k) <= now]:
                if not self.children[k].ready:  # it never started: as if it died
                    died(k)
                else:
                    i = replace(k)
                    out[i] = (None, None, None)
                    self.timed_out.append(jobs[i][0])
                give(k)
        return out

    def close(self) -> None:
        for child in self.children:
            child.close()
        self.children = []


@dataclass
class Tuner:
    start: Schedule
    measurer: object
    target: str = "cpu"
    budget: int = 300
    seconds: float | None = None
    use_model: bool | str = True  # True: the shipped model on the lt features; "ir": on what the IR executes; "auto": "ir" on a native target, True on another
    log_path: str | None = None
    start_gflops: float | None = None
    evaluations: list = field(default_factory=list)
    progress: object = None  # called with the tuner after every batch
    distinct_code: bool | None = None  # measure each optimised code once (None: with --model ir, which lowers every candidate anyway)
    lower_limit_s: float = Limits.compile_s  # seconds the lowering processes may take over a candidate (--compile-limit)

    def __post_init__(self):
        native = get_target(self.target).native
        if self.use_model == "auto":  # the IR's where there is host code to read (tune's default)
            self.use_model = "ir" if native else True
        self.ir = self.use_model == "ir"
        if self.ir and not native:
            raise LtError(f"error: --model ir reads the host code's LLVM IR; target '{self.target}' makes none (use the default model)")
        if self.distinct_code and not native:
            raise LtError(f"error: --distinct-code compares the host code's LLVM IR; target '{self.target}' makes none")
        self.distinct = self.ir if self.distinct_code is None else bool(self.distinct_code)
        # ranks from the first batch
        self.model = None
        if self.use_model:
            self.model = CostModel.cycle_estimate(space.IR_FEATURE_NAMES) if self.ir else CostModel.pretrained()
        self._ir_start = None  # the start's space.ir_counts_of (--model ir)
        self.known: dict[str, Evaluation] = {}
        self.schedules: dict[str, Schedule] = {}  # text -> the Schedule (with its history: its pipeline)
        self._features: dict[str, np.ndarray] = {}  # text -> space.feature_vector, computed once
        self._code: dict[str, str | None] = {}  # text -> ir_counts.code_key of its optimised IR (None: it does not lower)
        self._by_code: dict[str, str] = {}  # code key -> the text of the evaluation measured with that code
        self._start_code = None  # the start's optimised IR, once computed (``_start_ir``)
        self._pool = None  # processes lowering a batch's candidates for --model ir (``_prelower``, ``Lowerers``), made when first needed
        self._pool_broken = False  # they could not start: lowered here from then on
        # text -> the optimised LLVM IR lowering it for the model made, handed
        # to the measurer with it (only code generation left there), until
        # the batch is measured: where the measurer compiles for this host
        # as ``space.optimized_ir`` does (``_reuse_code``)
        self._llvm: dict[str, str] = {}
        self.same_code = 0  # candidates not measured: their code was measured already (``distinct``)
        self.t0 = time.perf_counter()
        self.flops = self.start.flops()
        self._log = None
        self.interrupted = False  # Ctrl-C: the search ends (``interrupt``)
        self.batches = 0  # measured batches so far (the cost model's groups)
        self.anchors: set[str] = set()  # texts of hand schedules the strategy started from: always finalists
        self.seeds: list[Schedule] = []  # schedules from the start by moves that the caller knows (tune(seeds=))
        self.batch_spearman: list[float] = []  # the model's within-batch rank correlation, a batch each
        self._measuring = False

    # ------------------------------------------------------------ budget
    @property
    def exhausted(self) -> bool:
        if self.interrupted or len(self.evaluations) >= self.budget:
            return True
        return self.seconds is not None and time.perf_counter() - self.t0 >= self.seconds

    @property
    def left(self) -> int:
        return max(0, self.budget - len(self.evaluations))

    @property
    def best(self) -> Evaluation | None:
        """The fastest correct schedule that beats the start (None: nothing did)."""
        good = [e for e in self.evaluations if e.score > 1.0]
        return max(good, key=lambda e: e.score) if good else None

    def schedule_of(self, e: Evaluation) -> Schedule:
        """The evaluated schedule, its history (pipeline) included: replayed
        from the start when it came from a resumed log."""
        s = self.schedules.get(e.text)
        if s is None:
            s = space.replay(self.start, e.moves, self.target) or Schedule(e.text, self.start.entry)
            self.schedules[e.text] = s
        return s

    def best_schedule(self) -> tuple[Schedule, list]:
        best = self.best
        if best is None:
            return self.start, []
        return self.schedule_of(best), best.moves

    # ------------------------------------------------------------ measuring
    def measure(self, candidates: list[Candidate], keep: int | None = None, explore: float = 0.0,
                rng=None) -> list[tuple[Candidate, float | None]]:
        """Scores of ``candidates``: cached ones free, then at most ``keep``
        (the cost model's pick; all without a model) new ones measured,
        within the budget; ``explore``: the fraction of ``keep`` picked at
        random from the rest instead (``rng``), so that what the model
        rates low is measured too.  Unmeasured candidates score None.
        When the model predicted three or more of a batch, the batch's
        Spearman correlation between predicted and measured speedups is
        logged (a ``batch`` record) and kept in ``batch_spearman``."""
        unique, seen = [], set()
        for c in candidates:
            if c.text not in seen:
                seen.add(c.text)
                unique.append(c)
        new = [c for c in unique if c.text not in self.known]
        predicted = [None] * len(new)
        ranked = self.model is not None and self.model.ready and bool(new)
        if ranked:
            if self.ir:
                self._prelower([c.schedule for c in new])
            xs = [self.features(c.schedule) for c in new]
            order = self.model.rank(xs)
            guesses = self.model.predict(xs)
            new = [new[i] for i in order]
            predicted = [float(guesses[i]) for i in order]
        limit = len(new) if keep is None or not ranked else keep
        limit = min(limit, self.left)
        wild = 0
        if ranked and explore > 0 and limit < len(new):
            wild = min(len(new) - limit, int(np.ceil(explore * limit)))
            rng = rng if rng is not None else np.random.default_rng(len(self.evaluations))
        twins: dict[str, str] = {}  # a candidate's text -> the one of this batch with its code
        if self.distinct:
            picked, twins = self._distinct_picks(new, limit, wild, rng)
        else:
            picked = list(range(limit - wild))
            if wild:
                picked += sorted(int(i) for i in rng.choice(np.arange(limit - wild, len(new)), wild, replace=False))
        chosen = [(new[i], predicted[i]) for i in picked]
        if chosen and not self.exhausted:
            codes = [self._llvm.get(c.text) for c, _ in chosen]
            self._llvm.clear()  # the rest of the batch's: not measured now
            with self.interruptible():
                texts = [c.text for c, _ in chosen]
                results = self.measurer.measure(texts, codes) if any(codes) else self.measurer.measure(texts)
            group = self.batches
            self.batches += 1
            for (c, guess), r in zip(chosen, results):
                self._record(c, r, guess, group)
            for text, owner in twins.items():
                if owner in self.known:
                    self.known[text] = self.known[owner]
            self._batch_record(group, chosen)
            if self.model is not None:
                self.model.fit()
            if self.progress is not None:
                self.progress(self)
        return [(c, self.known[c.text].score if c.text in self.known else None) for c in unique]

    def _distinct_picks(self, new: list, limit: int, wild: int, rng) -> tuple[list[int], dict]:
        """Which of ``new`` (ranked, or in the order made) to measure when
        each optimised code (``ir_counts.code_key``) is measured once: the
        first ``limit - wild`` whose code is neither one measured nor an
        earlier pick's, then ``wild`` such picks at random from the rest
        (``rng``); a candidate is lowered and optimised only when reached.
        A candidate whose code was measured scores as that evaluation,
        free; one whose code an earlier pick has scores as it once measured
        (returned: its text -> that pick's).  In the cost dataset half the
        candidates of a batch had another's code."""
        twins, first, picked = {}, {}, []

        def fresh(i: int) -> bool:
            c = new[i]
            key = self._key(c.schedule)
            if key is not None and key in self._by_code:
                self.known[c.text] = self.known[self._by_code[key]]
            elif key is not None and key in first:
                twins[c.text] = first[key]
            else:
                if key is not None:
                    first[key] = c.text
                return True
            self.same_code += 1
            return False

        i = 0
        while len(picked) < limit - wild and i < len(new):
            if fresh(i):
                picked.append(i)
            i += 1
        if wild and i < len(new):
            for j in rng.permutation(np.arange(i, len(new))):
                if len(picked) >= limit:
                    break
                if fresh(int(j)):
                    picked.append(int(j))
        return picked, twins

    @property
    def _reuse_code(self) -> bool:
        """Whether the measurer compiles what ``space.optimized_ir`` makes
        here (a measurer on this host, the same native target, default
        options), so that the IR lowering made can be handed to it."""
        config = getattr(getattr(self.measurer, "config", None), "bench", None)
        return (getattr(self.measurer, "takes_code", False) and config is not None and config.target == get_target(self.target).name
                and config.options == CompileOptions() and get_target(self.target).native)

    def _key(self, schedule: Schedule) -> str | None:
        """``schedule``'s ``code_key`` (None: it does not lower), computed once."""
        if schedule.text not in self._code:
            self._lower(schedule)
        return self._code[schedule.text]

    def _lower(self, schedule: Schedule):
        """``schedule``'s ``space.optimized_ir``, its ``code_key`` kept (the
        start's code registered first)."""
        self._start_ir()
        code = space.optimized_ir(schedule, self.target)
        self._code[schedule.text] = code_key(code[0]) if code is not None else None
        if code is not None and self._reuse_code:
            self._llvm[schedule.text] = code[0]
        return code

    def _batch_record(self, group: int, chosen: list) -> None:
        """Log how well the model's predictions ranked this batch."""
        pairs = [(guess, self.known[c.text].score) for c, guess in chosen if guess is not None and c.text in self.known]
        if len(pairs) < 3:
            return
        rho = within_batch_spearman([([p for p, _ in pairs], [m for _, m in pairs])])
        if not np.isfinite(rho):  # ties only: no ranking to judge
            return
        self.batch_spearman.append(rho)
        self._write({"batch": group, "spearman": rho, "n": len(pairs)})

    # ------------------------------------------------------------ Ctrl-C
    def interrupt(self, *_signal) -> None:
        """End the search (a SIGINT handler): a measurement under way is
        abandoned with ``KeyboardInterrupt``; anything else ends at the next
        budget check (an exception raised inside MLIR's callbacks would come
        out as a RuntimeError, not as an interrupt)."""
        self.interrupted = True
        if self._measuring:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def interruptible(self):
        """Measuring: where ``interrupt`` may raise."""
        if self.interrupted:
            raise KeyboardInterrupt
        self._measuring = True
        try:
            yield
        finally:
            self._measuring = False

    def _record(self, c: Candidate, r, guess, group: int | None = None) -> None:
        e = Evaluation(
            len(self.evaluations), list(c.moves), c.schedule.pipeline, c.text, r.speedup, r.runtime_s,
            r.worker, r.correct, r.error, guess, time.perf_counter() - self.t0,
        )
        self.schedules[c.text] = c.schedule
        self._add(e, c.schedule, group)
        record = e.to_json()
        if self._code.get(c.text) is not None:
            record["code"] = self._code[c.text]  # a resumed search measures this code no more
        self._write(record)

    def _add(self, e: Evaluation, schedule: Schedule, group: int | None = None) -> None:
        self.evaluations.append(e)
        self.known[e.text] = e
        if self._code.get(e.text) is not None:
            self._by_code.setdefault(self._code[e.text], e.text)
        if self.model is not None:
            self.model.add(self.features(schedule), e.score if e.score > 0 else 0.1, group=group)

    # ------------------------------------------------------------ the log
    @property
    def identity(self) -> dict:
        """What a log's evaluations hold for: the program, the target, the host."""
        return {"program": program_hash(self.start), "target": self.target, "host": host()}

    def open_log(self, header: dict) -> None:
        """Append to the log, or start it with a header (the identity, then
        ``header``); an existing log of another search is refused."""
        if self.log_path is None:
            return
        if os.path.exists(self.log_path) and os.path.getsize(self.log_path) > 0:
            logged = _read_log(self.log_path)[0]
            differs = _differences(logged, self.identity)
            if differs:
                raise LtError(f"error: --log '{self.log_path}' records another search ({'; '.join(differs)}); "
                              "name another --log, or remove it")
            fresh = False
        else:
            fresh = True
        self._log = open(self.log_path, "a")
        if fresh:
            self._write({"header": {**self.identity, **header}})

    def _write(self, record: dict) -> None:
        if self._log is not None:
            self._log.write(json.dumps(record) + "\n")
            self._log.flush()

    def resume(self, path: str) -> None:
        """Take in a previous search's evaluations; refused, naming what
        differs, when the log is of another program, target or host."""
        header, records = _read_log(path)
        differs = _differences(header, self.identity)
        if differs:
            raise LtError(f"error: cannot resume from '{path}': it is the log of another search ({'; '.join(differs)})")
        for d in records:
            if "moves" not in d:  # a search's "final" record (its re-measured finalists)
                continue
            moves = [space.Move.parse(m) for m in d["moves"]]
            e = Evaluation(
                len(self.evaluations), moves, d["pipeline"], d["text"], d["speedup"], d["runtime_s"], d["worker"],
                d["correct"], d["error"], d.get("predicted"), d["elapsed_s"],
            )
            if d.get("code"):
                self._code[e.text] = d["code"]
            self._add(e, Schedule(e.text, self.start.entry))
        if self.model is not None:
            self.model.fit()

    def features(self, schedule: Schedule) -> np.ndarray:
        x = self._features.get(schedule.text)
        if x is None:
            if self.ir:
                if self._ir_start is None:
                    self._ir_start = space.ir_counts_of(self.start, self.target, code=self._start_ir())
                code = self._lower(schedule)
                x = space.ir_feature_vector(space.ir_counts_of(schedule, self.target, code=code), self._ir_start)
            else:
                x = space.feature_vector(schedule)
            self._features[schedule.text] = x
        return x

    def _prelower(self, schedules: list[Schedule]) -> None:
        """``features`` of ``schedules`` under ``--model ir`` computed on a
        pool of processes, one a CPU this process may use (at most 4), while
        nothing is being timed: lowering and optimising every candidate it
        ranks was two thirds of a timed ``--model ir`` search's time on 2
        cores, and the measuring worker idles meanwhile.  Inline with one
        CPU, a handful of schedules, or a target given as an object."""
        todo = list({s.text: s for s in schedules if s.text not in self._features}.values())
        workers = min(4, len(allowed_cpus()))
        if len(todo) < 4 or workers < 2 or not isinstance(self.target, str) or self._pool_broken:
            return
        if self._ir_start is None:
            self._ir_start = space.ir_counts_of(self.start, self.target, code=self._start_ir())
        if self._pool is None:
            self._pool = Lowerers(workers, self.lower_limit_s)
        try:
            got = self._pool.map([(s.text, s.entry, self.target) for s in todo])
        except LtError:  # they cannot start: ``features`` lowers here, as without a pool
            self._close_pool()
            self._pool_broken = True
            return
        crashed, slow = set(self._pool.crashed), set(self._pool.timed_out)
        reuse = self._reuse_code
        for s, (key, counts, llvm_ir) in zip(todo, got):
            self._code[s.text] = key
            if llvm_ir is not None and reuse:
                self._llvm[s.text] = llvm_ir
            self._features[s.text] = space.ir_feature_vector(counts, self._ir_start)  # one that crashed or took too long: ranked as a failure
            for kind, texts in (("lowering_crashed", crashed), ("lowering_timed_out", slow)):
                if s.text in texts:
                    self._write({kind: [str(m) for m in (s.moves or [])], "text": s.text})

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _start_ir(self):
        """The start's ``space.optimized_ir``, computed once; measuring each
        code once (``distinct``), its code is known, scoring 1.0 (what every
        speedup is against): a candidate LLVM makes the same code of is not
        measured (``_distinct_picks``)."""
        if self._start_code is None:
            code = space.optimized_ir(self.start, self.target)
            self._start_code = (code,)
            if code is not None and self.distinct:
                key = code_key(code[0])
                self._code[self.start.text] = key
                if key not in self._by_code:
                    self._by_code[key] = self.start.text
                    self.known.setdefault(self.start.text, Evaluation(-1, [], self.start.pipeline, self.start.text, 1.0, None, "start", True,
                                                                      "", None, 0.0))
        return self._start_code[0]

    def close(self) -> None:
        self._close_pool()
        if self._log is not None:
            self._log.close()
            self._log = None

    def best_curve(self) -> list[float]:
        """Best speedup after each evaluation."""
        out, best = [], 0.0
        for e in self.evaluations:
            best = max(best, e.score)
            out.append(best)
        return out


def _read_log(path: str) -> tuple[dict, list]:
    """(header, the records after it) of an lt-tune log.  A last line cut
    short (the search killed mid-write) is dropped."""
    try:
        with open(path) as fh:
            lines = [line for line in fh if line.strip()]
    except OSError as e:
        raise LtError(f"error: cannot read log '{path}': {e.strerror}") from None
    records = []
    for n, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            if n == len(lines) and n > 1:
                break
            raise LtError(f"error: '{path}' line {n} is not JSON ({e.msg}): not an lt-tune log") from None
    if not records or not isinstance(records[0], dict) or not isinstance(records[0].get("header"), dict):
        raise LtError(f"error: '{path}' is not an lt-tune log (no header line)")
    return records[0]["header"], records[1:]


def _differences(logged: dict, ours: dict) -> list[str]:
    """How a log's header differs from this search's identity, one phrase
    per difference (none: the log's evaluations hold here)."""
    out = []
    program = logged.get("program")
    if program is None and isinstance(logged.get("start"), str):  # a header that keeps only the start text
        try:
            program = program_hash(Schedule(logged["start"]))
        except LtError:
            program = None
    if program != ours["program"]:
        out.append(f"another program: sha256 {str(program)[:12]} in the log, {ours['program'][:12]} here")
    if logged.get("target") != ours["target"]:
        out.append(f"another target: {logged.get('target')} in the log, {ours['target']} here")
    theirs, here = logged.get("host"), ours["host"]
    if not isinstance(theirs, dict):
        out.append("no host recorded in the log")
        return out
    if theirs.get("cpu") != here["cpu"]:
        out.append(f"another host CPU: {theirs.get('cpu')} in the log, {here['cpu']} here")
    have = {f[1:] for f in str(theirs.get("features", "")).split(",") if f.startswith("+")}
    want = {f[1:] for f in here["features"].split(",") if f.startswith("+")}
    if have != want:
        changed = [f"+{f}" for f in sorted(want - have)] + [f"-{f}" for f in sorted(have - want)]
        out.append(f"other host CPU features: {', '.join(changed[:6])}{', ...' if len(changed) > 6 else ''} here")
    if theirs.get("cores") != here["cores"]:
        out.append(f"another host core count: {theirs.get('cores')} in the log, {here['cores']} here")
    return out


# ------------------------------------------------------------ strategies


def _batch(tuner: Tuner, workers: int) -> int:
    return max(2, 2 * workers)


def _walk(tuner: Tuner, rng, origin: Candidate, depth: int) -> Candidate | None:
    c = origin
    for _ in range(depth):
        step = space.random_move(c.schedule, rng, tuner.target)
        if step is None:
            break
        move, s = step
        c = Candidate(c.moves + [move], s)
    return c if c.moves != origin.moves else None


def _start(tuner: Tuner) -> Candidate:
    return Candidate([], tuner.start)


def _best_candidate(tuner: Tuner) -> Candidate:
    best = tuner.best
    if best is None:
        return _start(tuner)
    return Candidate(list(best.moves), tuner.schedule_of(best))


def random_search(tuner: Tuner, rng, workers: int = 1, depth: int = 6) -> None:
    """Random move sequences (1..depth) from the start or the best so far."""
    pool = 4 if tuner.model is not None else 1
    while not tuner.exhausted:
        cands = []
        for _ in range(_batch(tuner, workers) * pool):
            origin = _best_candidate(tuner) if rng.random() < 0.5 else _start(tuner)
            c = _walk(tuner, rng, origin, int(rng.integers(1, depth + 1)))
            if c is not None:
                cands.append(c)
        if not cands:
            return
        before = len(tuner.evaluations)
        tuner.measure(cands, keep=_batch(tuner, workers))
        if len(tuner.evaluations) == before and all(c.text in tuner.known for c in cands):
            continue


def greedy(tuner: Tuner, rng, workers: int = 1, lookahead: int = 1) -> None:
    """Best single step (``lookahead`` > 1: best sequence of that many
    steps, expanding the 4 best of each level), restarting from a random
    walk off the best when no step improves."""
    current = _best_candidate(tuner)
    while not tuner.exhausted:
        frontier = [current]
        scored = []
        for level in range(lookahead):
            cands = [Candidate(f.moves + [m], s) for f in frontier for m, s in space.neighbours(f.schedule, tuner.target)]
            if not cands:
                break
            keep = max(_batch(tuner, workers), len(cands) // 4)
            results = [(c, sc) for c, sc in tuner.measure(cands, keep=keep) if sc is not None]
            scored += results
            results.sort(key=lambda x: -x[1])
            frontier = [c for c, _ in results[:4]]
            if tuner.exhausted or not frontier:
                break
        here = tuner.known[current.text].score if current.text in tuner.known else 1.0
        better = [x for x in scored if x[1] > here * 1.01]
        if better:
            current = max(better, key=lambda x: x[1])[0]
        else:
            walk = _walk(tuner, rng, _best_candidate(tuner), 2)
            if walk is None:
                return
            tuner.measure([walk])
            current = walk


def lookahead(tuner: Tuner, rng, workers: int = 1, steps: int = 2) -> None:
    greedy(tuner, rng, workers, lookahead=steps)


def beam(tuner: Tuner, rng, workers: int = 1, width: int = 4) -> None:
    """Keep the ``width`` best schedules; expand all their single steps."""
    frontier = [_start(tuner)]
    while not tuner.exhausted:
        cands = [Candidate(f.moves + [m], s) for f in frontier for m, s in space.neighbours(f.schedule, tuner.target)]
        if not cands:
            return
        results = [(c, sc) for c, sc in tuner.measure(cands, keep=max(_batch(tuner, workers), len(cands) // 4)) if sc is not None]
        pool = {c.text: (c, sc) for c, sc in results + [(f, tuner.known[f.text].score) for f in frontier if f.text in tuner.known]}
        ranked = sorted(pool.values(), key=lambda x: -x[1])
        new = [c for c, _ in ranked[:width]]
        if [c.text for c in new] == [c.text for c in frontier]:  # converged: perturb the best
            walk = _walk(tuner, rng, new[0], 2)
            new = new[:-1] + ([walk] if walk is not None else [])
        frontier = new


# The recipes' variants a search starts from (``recipe_seeds``): CPU register
# tiles (rows x vectors of the target's width, packed or not, parallel or
# not; packed, the larger tiles of ``recipes.register_tile_shapes``; on all
# cores with the reduction in blocks of ``K_BLOCK``) and GPU
# shared-memory tiles.
_CPU_TILES = [dict(vectors=v, pack=p, parallel=par) for par in (False, True) for v in (3, 2, 1) for p in (True, False)]
K_BLOCK = 64  # the reduction's blocks of the k-blocked register tiles among the seeds
_GPU_TILES = [dict(tile=t, regs=r) for t, r in ((32, 2), (64, 4), (32, 4), (64, 8))]


def recipe_seeds(start: Schedule, target="cpu") -> list[Candidate]:
    """The documented hand schedules (``lt_mlir.recipes``) of the start, as
    move sequences a search can mutate: ``register_tile``'s variants on a
    CPU target (of the start's largest contraction, whatever its loop
    order, and of every contraction the start has, largest first) and
    ``vector_rows``', ``vector_loops``', ``row_tile``'s (4 or 8 rows, one or
    two vectors a block) and ``channel_tile``'s (one core and all;
    ``channel_tile`` also on every convolution it takes),
    ``gpu_tiled_matmul``'s on a GPU target; a parallel variant has the
    other nests on every core too (``recipes.parallel_nests``).  A recipe
    that refuses the start gives no seed; duplicates are dropped."""
    from .. import recipes

    t = get_target(target)
    if t.gpu_mapping:
        tries = [(recipes.gpu_tiled_matmul, options) for options in _GPU_TILES]
    else:
        width = t.vector_width(lt.element_bytes(start.module.operation))
        shapes = recipes.register_tile_shapes(width)
        tiles = _CPU_TILES + [dict(rows=r, vectors=v, pack=True, parallel=par) for par in (False, True) for r, v in shapes]
        tiles += [dict(rows=r, vectors=v, parallel=True, k_block=K_BLOCK) for r, v in [(None, 3), *shapes]]
        tries = [(recipes.register_tile, dict(options, width=width)) for options in tiles]
        tries += [(recipes.vector_rows, dict(width=width, parallel=par)) for par in (False, True)]
        tries += [(recipes.vector_loops, dict(width=width, parallel=par)) for par in (False, True)]
        tries += [(recipes.row_tile, dict(rows=rows, width=width * vectors, parallel=par))
                  for par in (False, True) for rows, vectors in ((4, 1), (8, 1), (4, 2), (8, 2))]
        tries += [(recipes.channel_tile, dict(width=width, parallel=par)) for par in (False, True)]
    out, seen = [], {start.key}
    for recipe, options in tries:
        s = start.copy()
        try:
            recipe(s, **options)
        except LtError:
            continue
        if options.get("parallel"):  # the nests around the recipe's on every core too
            recipes.parallel_nests(s)
        every = recipe in (recipes.register_tile, recipes.channel_tile)
        for program in (s, _every_contraction(s, recipe, options) if every else None):
            if program is not None and program.moves and program.key not in seen:
                seen.add(program.key)
                out.append(Candidate(program.moves, program))
    return out


def _every_contraction(tiled: Schedule, recipe, options) -> Schedule | None:
    """``tiled`` with ``recipe`` applied again to each further contraction
    it takes (an imported MLP's second matmul), or None when there is none."""
    s = tiled.copy()
    for _ in range(8):
        try:
            recipe(s, **options)
        except LtError:
            break
    return s if s.key != tiled.key else None


def _mutant(tuner: Tuner, rng, pop: list[Candidate]) -> Candidate | None:
    """A child of the population: a move added, dropped or replaced, or one
    parent's prefix with another's suffix (replayed from the start; None
    when the sequence no longer applies and no move can be added)."""
    a = pop[int(rng.integers(len(pop)))]
    moves = list(a.moves)
    r = rng.random()
    if r < 0.3 and len(pop) > 1:
        b = pop[int(rng.integers(len(pop)))]
        cut_a, cut_b = int(rng.integers(len(moves) + 1)), int(rng.integers(len(b.moves) + 1))
        moves = moves[:cut_a] + list(b.moves)[cut_b:]
    elif r < 0.5 and moves:
        del moves[int(rng.integers(len(moves)))]
    elif r < 0.7 and moves:
        i = int(rng.integers(len(moves)))
        step = space.random_move(space.replay(tuner.start, moves[:i], tuner.target) or tuner.start, rng, tuner.target)
        if step is not None:
            moves[i] = step[0]
    s = space.replay(tuner.start, moves, tuner.target) if moves else None
    child = Candidate(moves, s) if s is not None else _walk(tuner, rng, a, 1)
    if child is not None and child.moves and rng.random() < 0.5:
        child = _walk(tuner, rng, child, 1) or child
    return child


def evolution(tuner: Tuner, rng, workers: int = 1, population: int = 8, pool: int = 6) -> None:
    """Ansor-style evolution.  The first population: the recipes' schedules
    (``recipe_seeds``), the start, and random walks from it.  Each
    generation makes ``pool`` times a batch of children (moves mutated,
    sequences crossed), the cost model ranks them and a batch is measured
    (a quarter of it picked at random, so the model's blind spots are
    measured too); the fittest ``population`` survive."""
    given = [Candidate(s.moves, s) for s in tuner.seeds]
    seeds = given + recipe_seeds(tuner.start, tuner.target)
    tuner.anchors |= {c.text for c in seeds}
    tuner.measure(given)  # the caller's first: a budget smaller than the seeds still measures them
    tuner.measure(seeds)  # every seed, whatever the model thinks of it
    walks, tries = [], 0
    while len(walks) < 4 * population and tries < 8 * population:
        tries += 1
        c = _walk(tuner, rng, _start(tuner), int(rng.integers(1, 5)))
        if c is not None:
            walks.append(c)
    batch = _batch(tuner, workers) * 2
    tuner.measure(walks, keep=max(batch, population - len(seeds)), explore=0.25, rng=rng)
    pop = _fittest(tuner, seeds + walks, population)
    while not tuner.exhausted and pop:
        children = [c for c in (_mutant(tuner, rng, pop) for _ in range(batch * (pool if tuner.model is not None else 1))) if c is not None]
        if not children:
            return
        tuner.measure(children, keep=batch, explore=0.25, rng=rng)
        pop = _fittest(tuner, pop + children, population)


def _fittest(tuner: Tuner, cands: list[Candidate], n: int) -> list[Candidate]:
    """The ``n`` best measured of ``cands`` (one of each schedule)."""
    unique = {c.text: c for c in cands if c.text in tuner.known}
    return sorted(unique.values(), key=lambda c: -tuner.known[c.text].score)[:n]


def policy(tuner: Tuner, rng, workers: int = 1, steps: int = 10) -> None:
    """The trained policy (``lt_mlir.agent.Policy``, the shipped one or
    ``$LT_MLIR_POLICY``): the programs it makes in runs of up to ``steps``
    actions from the start, read off the program (no measurement guides
    it), most preferred first (``Policy.search``: the states of its greedy
    run, then those of its other runs in order of their probability),
    measured until the budget is spent.  On a GPU target it is the
    CPU-trained one: its actions are the extended space's for the CPU."""
    from ..agent import Policy

    chosen = Policy(os.environ.get("LT_MLIR_POLICY") or None)
    found = chosen.programs(tuner.start, tuner.left, steps, tuner.target)  # found as they are measured: the first chunk waits for no more
    chunk = max(steps, _batch(tuner, workers))  # the progress bar, Ctrl-C and --seconds between chunks, in the policy's order
    while not tuner.exhausted:
        cands = [Candidate(moves, s) for s, moves in itertools.islice(found, chunk)]
        if not cands:
            return
        tuner.measure(cands)


STRATEGIES = {"random": random_search, "greedy": greedy, "lookahead": lookahead, "beam": beam, "evolution": evolution, "policy": policy}
