"""``lt-tune``: search for a fast schedule, and ``lt_mlir.tune`` from Python.

    lt-tune clipped_matmul:33,48,4096 --strategy greedy --budget 300 --workers 2
    lt-tune kernel.mlir --strategy evolution --seconds 120 --workers ray -o best.mlir
    lt-tune matmul:512,512,512 --ray-address 10.0.0.5:6379 --budget 600   # a cluster: docs/CLUSTER.md
    lt-tune --resume tune-kernel.jsonl kernel.mlir --budget 600
    lt-tune --show

Writes the best schedule as an lt module (``-o``) and prints its pipeline
(paste it into ``lt-opt -p``), logs every evaluation as JSON lines
(``--log``), and plots best GFLOP/s against evaluations (``--plot``).  The
default names carry the program's: ``tuned-NAME.mlir``, ``tune-NAME.jsonl``
and ``tune-NAME.png``, NAME being ``clipped_matmul-33x48x4096`` for
``clipped_matmul:33,48,4096`` and ``kernel`` for ``kernel.mlir``.

The log starts with a header naming the program (the sha256 of its module
printed without locations), the target and the host (CPU, features,
cores); ``--resume LOG`` continues that log, and refuses one of another
program, target or host.  Ctrl-C writes the best schedule so far and the
plot, says so in one line and exits with 130.  Errors are one line on
stderr with exit code 1 (``kernel.mlir:LINE:COL: error: ...`` for the
module's own, ``lt-tune: error: ...`` otherwise).

The winner (on Ctrl-C the best so far) goes to the tuning database
(``lt_mlir.tuning``) unless ``--no-db``; ``--show`` lists the database.
``optimize`` is ``Tensor.optimize``: the search with a progress bar on a
terminal, its winner recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import signal
import sys
import time
from dataclasses import dataclass

import numpy as np

from .. import programs, tuning
from ..dialect.loop_tree import preorder_loops
from ..errors import LtError, is_interrupt, read_module_file, with_filename
from ..evaluate import Limits
from ..frontend import Tensor, default_hardware
from ..schedule import Schedule
from ..targets import TARGETS, get_target
from .measure import check_ray_address, make_measurer
from .tune import STRATEGIES, Candidate, Tuner

PROGRAMS = {
    "add": lambda n: programs.pointwise_add(n),
    "matmul": lambda m, n, k: programs.matmul(m, n, k),
    "clipped_matmul": lambda m, n, k: programs.matmul(m, n, k, clipped=True),
    "row_sum": programs.row_sum,
    "softmax": programs.softmax,
    "conv2d": programs.conv2d,
}


@dataclass
class TuneResult:
    schedule: Schedule  # the best correct schedule found (the start if none beat it)
    speedup: float  # over the start, on the worker that measured it
    gflops: float | None  # the start's GFLOP/s here times that speedup
    start_gflops: float | None
    evaluations: int
    curve: list  # best speedup after each evaluation
    tuner: Tuner
    pipeline: str = "builtin.module()"  # the moves from the start, pasteable into lt-opt -p
    remeasured: list = None  # (evaluation index, the search's speedup, re-measured speedup) of the finalists
    interrupted: bool = False  # stopped by Ctrl-C: the best so far, not re-measured


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a search; ``result`` holds the best schedule found so far."""

    def __init__(self, result: TuneResult):
        super().__init__("search interrupted")
        self.result = result


def _is_program(spec: str) -> bool:
    return ":" in spec and spec.split(":", 1)[0] in PROGRAMS


def program_name(spec: str) -> str:
    """The program's name in default file names, safe on any file system:
    ``clipped_matmul-33x48x4096`` for ``clipped_matmul:33,48,4096``,
    ``kernel`` for ``path/to/kernel.mlir``."""
    if _is_program(spec):
        name, sizes = spec.split(":", 1)
        raw = f"{name}-{'x'.join(x.strip() for x in sizes.split(','))}"
    else:
        raw = os.path.splitext(os.path.basename(spec.rstrip("/\\")))[0]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw).strip("._")[:100] or "program"


def program_text(spec: str) -> str:
    """``name:a,b,c`` (a reference program) or a file's lt text."""
    if _is_program(spec):
        name, sizes = spec.split(":", 1)
        try:
            args = [int(x) for x in sizes.split(",")]
            return PROGRAMS[name](*args)
        except (ValueError, TypeError) as e:
            raise LtError(f"error: bad program '{spec}': {e} (e.g. matmul:512,512,512)") from None
    if not os.path.exists(spec):
        known = ", ".join(PROGRAMS)
        raise LtError(f"error: cannot read '{spec}': No such file or directory (or name a program: {known}, e.g. matmul:512,512,512)")
    return read_module_file(spec, "lt-tune")[0]


def tune(
    source,
    strategy: str = "evolution",
    budget: int = 300,
    seconds: float | None = None,
    workers=1,
    ray_address: str | None = None,
    model: bool | str = "auto",
    seed: int = 0,
    target: str = "cpu",
    entry: str | None = None,
    log: str | None = None,
    resume: str | None = None,
    progress=None,
    limits: Limits | None = None,
    finalists: int = 4,
    seeds: tuple = (),
    inputs: tuple | None = None,
    distinct_code: bool | None = None,
) -> TuneResult:
    """Search schedules of ``source`` (a tensor, Schedule, lt text, a file
    or ``name:sizes``); a tensor gets the best schedule found.  Ctrl-C
    raises ``Interrupted`` (a ``KeyboardInterrupt``) holding the best so far.

    Before naming a winner the ``finalists`` best schedules are timed
    again, interleaved with the start in one process (a search's single
    figure of a candidate is noisy); the winner and its speedup are the
    re-measured ones.  ``limits``: a compile's and a run's time limits
    (``evaluate.Limits``); a candidate past them is a failed one.
    ``workers``: 1 (this process), N (processes) or "ray" (Ray actors, one
    a physical core); ``ray_address``: a Ray cluster's (implies "ray";
    docs/CLUSTER.md).  ``seeds``: Schedules made from ``source`` by moves
    (``Schedule.moves``), measured first by evolution beside the recipes'
    and always among the finalists (an imported model's default schedule).
    ``inputs``: the read-only arguments every candidate runs on (None:
    seeded random ones; a model's weights keep its values in their range).
    ``model``: ``"ir"``, the cost model on what each candidate's optimised
    LLVM IR executes (``space.ir_feature_vector``: each candidate the model
    ranks is lowered and optimised first; it ranks held-out programs' batches
    0.62 against the lt model's 0.19); True, the shipped model on the lt
    module's features (``space.feature_vector``: nothing compiled); False,
    every candidate made is measured; ``"auto"`` (default): ``"ir"`` on a
    native target, True on another (no host code to read).  ``distinct_code``: measure each
    optimised code once (``ir_counts.code_key``, the IR up to names): a
    candidate whose code was measured, or is the start's, scores as that
    one unmeasured; each candidate about to be measured is lowered and
    optimised first (None: with ``model="ir"`` only, which does so anyway)."""
    if strategy not in STRATEGIES:
        raise LtError(f"error: unknown strategy '{strategy}' (strategies: {', '.join(STRATEGIES)})")
    target = get_target(target).name
    start, filename = _start_schedule(source, entry)
    workers = "ray" if ray_address else workers
    if workers == "ray" and (ray_address or os.environ.get("RAY_ADDRESS")):
        check_ray_address(ray_address or os.environ["RAY_ADDRESS"])  # a cluster that answers nothing: one line now, no log begun
    tuner = Tuner(start, None, target, budget, seconds, model, log, distinct_code=distinct_code,
                  lower_limit_s=(limits or Limits()).compile_s)
    tuner.seeds = [x for x in seeds if x.moves]  # schedules reached from the start by moves (Model's default)
    if resume:
        tuner.resume(resume)
    tuner.open_log({"start": start.text, "entry": start.entry, "strategy": strategy, "seed": seed, "model": tuner.use_model,
                    "distinct_code": tuner.distinct, "flops": tuner.flops})
    interrupted = False
    try:
        with (_on_sigint(tuner.interrupt),  # Ctrl-C ends the search; the best so far stands
              make_measurer(start.text, start.entry, target, workers, ray_address, seed=seed, limits=limits,
                            inputs=inputs) as measurer):
            tuner.measurer = measurer
            try:
                with tuner.interruptible():
                    base = measurer.measure([start.text])[0]
                if base.error:
                    raise with_filename(LtError(base.error), filename)
                tuner.start_gflops = tuner.flops / base.runtime_s / 1e9 if base.runtime_s else None
                tuner.progress = progress
                if tuner.seeds and strategy != "evolution":  # (evolution measures them with its own seeds)
                    given = [Candidate(x.moves, x) for x in tuner.seeds]
                    tuner.anchors |= {c.text for c in given}
                    tuner.measure(given)
                STRATEGIES[strategy](tuner, np.random.default_rng(seed), measurer.parallelism)
                with tuner.interruptible():
                    winner, speedup, remeasured = _final(tuner, measurer, finalists)
            except (KeyboardInterrupt, RuntimeError) as e:  # the best so far, as the search measured it
                if not is_interrupt(e):  # (a Ctrl-C in an IR walk comes as MLIR's RuntimeError)
                    raise
                interrupted = True
                winner, remeasured = tuner.best, []
                speedup = winner.score if winner is not None else 1.0
    finally:
        tuner.close()
    best = tuner.schedule_of(winner) if winner is not None else tuner.start
    result = TuneResult(best, speedup, tuner.start_gflops * speedup if tuner.start_gflops else None, tuner.start_gflops,
                        len(tuner.evaluations), tuner.best_curve(), tuner,
                        winner.pipeline if winner is not None else "builtin.module()", remeasured, interrupted)
    if interrupted:
        raise Interrupted(result)
    if isinstance(source, Tensor):
        source.set(best)
    return result


def _start_schedule(source, entry: str | None) -> tuple[Schedule, str]:
    """(the start schedule, the file its errors name: '-' for text) of
    ``source``; a module without loops is refused."""
    filename = "-"
    if isinstance(source, Tensor):
        start = Schedule(source.untuned_code)  # the program the tuning database knows it by
    elif isinstance(source, Schedule):
        start = source.copy()
    else:
        text = source
        if isinstance(source, str) and "func.func" not in source:
            text, filename = program_text(source), ("-" if _is_program(source) else source)
        try:
            start = Schedule(text, entry)
        except LtError as e:
            raise with_filename(e, filename) from None
    if not preorder_loops(start.parsed.operation):
        where = "the module" if filename == "-" else filename
        raise LtError(f"error: {where} has no loops: there is nothing to schedule")
    return start, filename


# A hand schedule re-measured within this fraction of the best finalist is
# named instead: the difference is below what the re-measure resolves (a
# clipped 33x48x4096 matmul's winner re-measured 0.4% ahead of the
# register tile it came from, then ran 4% behind it in the benchmark's
# own blocks), and the hand schedule is the simpler, known-good one.
HAND_TIE = 0.02


def _final(tuner: Tuner, measurer, finalists: int):
    """(winning evaluation or None, its re-measured speedup, the finalists'
    figures): the best ``finalists`` correct schedules, and the two best of
    the hand schedules the strategy started from (``tuner.anchors``: one
    noisy search figure must not drop them) with up to four more of them
    within 10% of the best figure, timed again, interleaved with the
    start; the fastest re-measured wins, or the fastest hand schedule
    within ``HAND_TIE`` of it.  The log gets a ``final`` record."""
    ranked = sorted((e for e in tuner.evaluations if e.score > 1.0), key=lambda e: -e.score)
    unique = list({e.text: e for e in ranked}.values())
    top = unique[: max(0, finalists)]
    if top:  # the two best hand schedules the search started from are finalists too, and any
        # other within 10% of the best figure (a hand tile one noisy timing put third among them)
        hands = [e for e in unique[len(top):] if e.text in tuner.anchors]
        top += hands[:2] + [e for e in hands[2:] if e.score >= 0.9 * top[0].score][:4]
    if not top:  # nothing beat the start, or no finalists asked for: the search's own best
        best = tuner.best
        return best, (best.score if best is not None else 1.0), []
    again = measurer.remeasure([e.text for e in top])
    remeasured = [(e.index, e.score, r.speedup) for e, r in zip(top, again)]
    tuner._write({"final": [{"index": i, "search_speedup": a, "remeasured_speedup": b} for i, a, b in remeasured]})
    confirmed = [(e, r.speedup) for e, r in zip(top, again) if r.speedup is not None and not r.error]
    if not confirmed:  # the re-measure failed (a limit, a crash): the search's figure stands
        return top[0], top[0].score, remeasured
    winner, speedup = max(confirmed, key=lambda x: x[1])
    hands = [(e, s) for e, s in confirmed if e.text in tuner.anchors and s >= (1.0 - HAND_TIE) * speedup]
    if hands and winner.text not in tuner.anchors:
        winner, speedup = max(hands, key=lambda x: x[1])
    if speedup <= 1.0:
        return None, 1.0, remeasured
    return winner, speedup, remeasured


def remember(result: TuneResult, strategy: str, variant: str = "") -> tuning.Entry:
    """Record ``result``'s winner in the tuning database (``variant``: see
    ``tuning.program_hash``); returns the entry kept (an earlier, faster
    one stays)."""
    t = result.tuner
    return tuning.record(t.start.text, t.target, result.schedule.file_text, result.pipeline, result.speedup,
                         result.gflops, result.evaluations, strategy, time.perf_counter() - t.t0, variant=variant)


def optimize(tensor: Tensor, budget: int = 300, seconds: float | None = None, strategy: str = "evolution", workers=1,
             **options) -> TuneResult:
    """``Tensor.optimize``: ``tune`` the tensor for the frontend's hardware
    (it keeps the best schedule), with a progress bar on a terminal, and
    record the winner in the tuning database (on Ctrl-C, the best so far,
    then ``Interrupted`` is raised)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    options.setdefault("target", default_hardware())
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not sys.stdout.isatty()) as bar:
        task = bar.add_task(strategy, total=budget)

        def progress(tuner):
            best = tuner.best.score if tuner.best else 1.0
            bar.update(task, completed=len(tuner.evaluations), description=f"{strategy}: best {best:.2f}x")

        try:
            result = tune(tensor, strategy, budget, seconds, workers, progress=progress, **options)
        except Interrupted as stop:
            remember(stop.result, strategy)
            raise
    remember(result, strategy)
    return result


def show() -> int:
    """``lt-tune --show``: the tuning database, one line an entry."""
    found = tuning.entries()
    if not found:
        print(f"the tuning database {tuning.path()} has no entries")
        return 0
    print(f"{tuning.path()}: {len(found)} {'entry' if len(found) == 1 else 'entries'}")
    for e in found:
        print(f"{e.program[:12]}  {e.target}  {e.cpu}  {e.speedup:.2f}x  {e.evaluations} evaluations  {e.date}  {e.pipeline}")
    return 0


def plot(result: TuneResult, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = result.start_gflops or 1.0
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(1, len(result.curve) + 1), [max(1.0, s) * base for s in result.curve])
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best GFLOP/s" if result.start_gflops else "best speedup")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PROGRESS_EVERY_S = 5.0  # a progress line this often when stdout is not a terminal


def _save(path: str, text: str) -> None:
    """Write ``path`` whole or not at all (a kill mid-write leaves the old file)."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise LtError(f"error: cannot write '{path}': {e.strerror}") from None


MODELS = {"auto": "auto", "ir": "ir", "lt": True}  # --model -> tune's model


def _positive(kind):
    """An argparse type: a positive (finite) ``kind``."""
    noun = "a positive integer" if kind is int else "a positive number of seconds"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got '{text}'") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected {noun}, got '{text}'")
        return value

    return parse


def _workers(text: str):
    if text == "ray":
        return text
    try:
        return _positive(int)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive number of processes or 'ray', got '{text}'") from None


def _arg_parser() -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            sys.stderr.write(f"lt-tune: error: {message}\n")
            sys.exit(1)

    p = Parser(prog="lt-tune", description="Search for a fast schedule of an lt module.")
    p.add_argument("input", nargs="?", help="an lt module file, or a program: " + ", ".join(f"{k}:sizes" for k in PROGRAMS))
    p.add_argument("--strategy", choices=sorted(STRATEGIES), default="evolution")
    p.add_argument("--budget", type=_positive(int), default=300, help="evaluations (measured schedules), default 300")
    p.add_argument("--seconds", type=_positive(float), default=None, help="stop after this long")
    p.add_argument("--workers", type=_workers, default=1,
                   help="measuring processes (a number), or 'ray': Ray actors, one a physical core (a local Ray "
                        "unless --ray-address or RAY_ADDRESS)")
    p.add_argument("--ray-address", default=None, metavar="HOST:PORT",
                   help="a Ray cluster: the address `ray start --head` printed (or ray://HOST:PORT, the Ray Client); "
                        "implies --workers ray; see docs/CLUSTER.md")
    p.add_argument("--no-model", action="store_true", help="measure every candidate (no cost model)")
    p.add_argument("--model", choices=tuple(MODELS), default="auto",
                   help="what the cost model reads: what each candidate's optimised LLVM IR executes (ir: each candidate "
                        "lowered and optimised first, 0.08 s median), or the lt module's features (lt: nothing compiled); "
                        "default auto: ir on the CPU, lt on another target")
    p.add_argument("--distinct-code", action=argparse.BooleanOptionalAction, default=None,
                   help="measure each optimised code once: a candidate whose LLVM IR, up to names, was measured scores as "
                        "that one unmeasured (default: with --model ir only, the CPU's default; each candidate lowered and optimised first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target", choices=tuple(TARGETS), default="cpu")
    p.add_argument("--compile-limit", type=_positive(float), default=Limits.compile_s, metavar="S",
                   help=f"seconds a candidate may compile (default {Limits.compile_s:g}; "
                        "--model ir's lowering of a candidate to rank it too)")
    p.add_argument("--run-limit", type=_positive(float), default=Limits.run_s, metavar="S",
                   help=f"seconds a candidate may run to be checked and timed (default {Limits.run_s:g})")
    p.add_argument("--entry", default=None)
    p.add_argument("-o", dest="output", default=None, help="the best schedule's module (default tuned-NAME.mlir)")
    p.add_argument("--log", default=None,
                   help="JSON lines of every evaluation (default: the --resume log, else tune-NAME.jsonl)")
    p.add_argument("--plot", default=None, help="best GFLOP/s against evaluations (default tune-NAME.png)")
    p.add_argument("--resume", default=None, metavar="LOG", help="continue the search a log records")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-db", action="store_true", help="do not record the winner in the tuning database")
    p.add_argument("--show", action="store_true", help="list the tuning database and exit")
    return p


def _default_names(args) -> None:
    """Fill in the file names not given, after the program (NAME)."""
    name = program_name(args.input)
    args.output = args.output or f"tuned-{name}.mlir"
    args.log = args.log or args.resume or f"tune-{name}.jsonl"
    args.plot = args.plot or f"tune-{name}.png"


def _error_line(e: LtError) -> str:
    """One line: a located error as it is (``file:line:col: error: ...``), any other after ``lt-tune:``."""
    msg = str(e)
    if msg.startswith("error:"):
        return f"lt-tune: {msg}"
    return msg if "error:" in msg else f"lt-tune: error: {msg}"


@contextlib.contextmanager
def _on_sigint(handler):
    """``handler`` for SIGINT (Ctrl-C) within the block, where signals can be set (the main thread)."""
    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    parser = _arg_parser()
    try:
        args = parser.parse_args(argv)
        if args.show:
            return show()
        if args.input is None:
            parser.error("the following arguments are required: input (or --show)")
    except SystemExit as e:  # a refused argument (one line written) or --help
        return e.code or 0
    except LtError as e:
        sys.stderr.write(_error_line(e) + "\n")
        return 1
    _default_names(args)
    workers = "ray" if args.ray_address else args.workers
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    t0 = time.perf_counter()
    terminal = sys.stdout.isatty()
    last = {"line": t0, "saved": None}
    try:
        if not args.no_db:
            tuning.check()  # a bad database file is found now, not after the search
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      disable=args.quiet or not terminal, transient=False) as bar:
            task = bar.add_task(f"{args.strategy}", total=args.budget)

            def progress(tuner):
                best = tuner.best.score if tuner.best else 1.0
                bar.update(task, completed=len(tuner.evaluations), description=f"{args.strategy}: best {best:.2f}x")
                now = time.perf_counter()
                if not terminal and not args.quiet and now - last["line"] >= PROGRESS_EVERY_S:
                    last["line"] = now  # off a terminal (a pipe, a log file): a plain line every few seconds
                    print(f"lt-tune: {len(tuner.evaluations)}/{args.budget} evaluations, best {best:.2f}x, "
                          f"{now - t0:.0f} s", flush=True)
                if tuner.best is not None and tuner.best.score > 0 and tuner.best.index != last["saved"]:
                    last["saved"] = tuner.best.index  # the best so far is on disk: a killed search leaves it
                    _save(args.output, Schedule(tuner.best.text, args.entry).file_text)

            result = tune(
                args.input, args.strategy, args.budget, args.seconds, workers, args.ray_address, False if args.no_model else MODELS[args.model],
                args.seed, args.target, args.entry, args.log, args.resume, progress,
                Limits(args.compile_limit, args.run_limit), distinct_code=args.distinct_code,
            )
        _save(args.output, result.schedule.file_text)
        plot(result, args.plot, f"lt-tune {args.strategy} on {args.input}")
        if not args.no_db:
            remember(result, args.strategy)
    except Interrupted as stop:
        return _interrupted(stop.result, args)
    except (KeyboardInterrupt, RuntimeError) as e:
        if not is_interrupt(e):  # (a Ctrl-C in an IR walk comes as MLIR's RuntimeError)
            raise
        sys.stderr.write("lt-tune: interrupted before the search began; wrote nothing\n")
        return 130
    except LtError as e:
        sys.stderr.write(_error_line(e) + "\n")
        return 1
    gflops = f" ({result.start_gflops:.2f} -> {result.gflops:.2f} GFLOP/s)" if result.gflops else ""
    print(f"best: {result.speedup:.2f}x the start{gflops} after {result.evaluations} evaluations, {time.perf_counter() - t0:.0f} s")
    if result.tuner.same_code:
        print(f"  {result.tuner.same_code} more candidates not measured: their optimised code was one measured (--distinct-code)")
    for index, found, again in result.remeasured or []:
        print(f"  finalist #{index}: {found:.2f}x in the search, {again:.2f}x re-measured" if again else f"  finalist #{index}: {found:.2f}x, failed again")
    print(f"pipeline: {result.pipeline}")
    print(f"wrote {args.output}, {args.log}, {args.plot}" + ("" if args.no_db else f"; recorded in {tuning.path()}"))
    print(result.schedule.loop_tree)
    return 0


def _interrupted(result: TuneResult, args) -> int:
    """Ctrl-C: write the best so far and the plot, say so in one line, 130."""
    with _on_sigint(signal.SIG_IGN):  # a second Ctrl-C waits while the best so far is written
        try:
            _save(args.output, result.schedule.file_text)
            plot(result, args.plot, f"lt-tune {args.strategy} on {args.input} (interrupted)")
            if not args.no_db:
                remember(result, args.strategy)
        except LtError as e:
            sys.stderr.write(f"lt-tune: interrupted after {result.evaluations} evaluations; {_error_line(e)}\n")
            return 130
        sys.stderr.write(f"lt-tune: interrupted after {result.evaluations} evaluations: wrote {args.output} "
                         f"(best {result.speedup:.2f}x, not re-measured), {args.plot}, {args.log}\n")
    return 130


if __name__ == "__main__":
    sys.exit(main())
