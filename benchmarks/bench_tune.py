"""lt-tune's goals (issue "lt-tune finds what a person finds"), as ratios timed in one process.

1. **Search vs hand vs NumPy.**  For each workload of ``bench_cpu.py``
   (the same programs, inputs and NumPy peers), ``Tensor.optimize`` runs
   the search (``--strategy``, default evolution, at most ``--budget``
   measurements and ``--seconds`` each) from loop_tool's default schedule.
   Then, in this process: the tuned schedule, the default, the
   documented hand schedules (``recipes.register_tile`` and the
   benchmark's own, one core and all cores) and NumPy, timed in blocks
   that alternate, each after a pause (``timing.block_medians``: load
   that comes and goes hits them alike, and no thread pool spins on the
   cores of the next).  Printed: the
   tuned schedule's speed as a multiple of the best hand schedule's and of
   NumPy's.
2. **What the cost model saves** (``--compare-model``): the same search
   with and without the model over ``--seeds``; for each run, the
   measurements it took to reach 95% of the best speedup any run found on
   that workload -- by the searches' own figures, and by the runs' best
   schedules re-measured together (``compare_model``); the ratio of the
   medians (no model / model).  With ``--seconds``, also the seconds each
   run took to reach it (the ranking's own cost counted).
3. **The pre-trained model's ranking** (``--spearman``): the mean
   within-batch Spearman of every search's logged batches (how well the
   model ordered what it chose to measure).

    .venv/bin/python benchmarks/bench_tune.py --only "matmul 256" --seconds 60
    .venv/bin/python benchmarks/bench_tune.py --only clipped --compare-model --seeds 0,1,2,3,4 --budget 150
    .venv/bin/python benchmarks/bench_tune.py --only softmax --compare-model --model lt,ir --budget 100
    .venv/bin/python benchmarks/bench_tune.py --only "row sum" --compare-model --model lt,ir --distinct-code --budget 100  # every run measures each code once
    .venv/bin/python benchmarks/bench_tune.py --only "matmul 256" --compare-model --model lt,ir --seconds 60 --budget 100000  # seconds to reach 95%
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_cpu  # noqa: E402

import lt_mlir  # noqa: E402
from lt_mlir.runtime.timing import block_medians  # noqa: E402
from lt_mlir.search.cli import MODELS, tune  # noqa: E402
from lt_mlir.search.measure import make_measurer  # noqa: E402

LOG_DIR = None  # --log-dir: each search's lt-tune log goes there


def search(w, strategy: str, budget: int, seconds: float | None, model: bool | str, seed: int, distinct_code: bool | None = None):
    """The search from the workload's default schedule (its own tuning
    database: the user's is not touched): (TuneResult, a callable running
    the winner)."""
    program, inputs = w.program
    t = program(lt_mlir, *inputs)
    log = None
    if LOG_DIR:
        name = "".join(c if c.isalnum() else "_" for c in w.name)
        log = os.path.join(LOG_DIR, f"{name}-model_{model}-seed_{seed}.jsonl")
        if os.path.exists(log):
            os.remove(log)
    r = tune(t, strategy=strategy, budget=budget, seconds=seconds, model=model, seed=seed, distinct_code=distinct_code, log=log)
    t.set(r.schedule)
    return r, bench_cpu.runner(t)


def goals(ws: list, args) -> list:
    rows = []
    for w in ws:
        r, tuned = search(w, args.strategy, args.budget, args.seconds, MODELS[args.model], 0, args.distinct_code)
        bad = bench_cpu.check(w, "tuned", tuned())
        if bad is not None:
            print(f"error: {w.name}: the tuned schedule is wrong: {bad}")
            rows.append(None)
            continue
        hand = {k: f for k, f in w.variants.items() if k.startswith("lt_mlir") and k not in ("lt_mlir default", "lt_mlir tuned")
                and "reassoc" not in k}
        # every variant in blocks that alternate, each after a pause
        # (block_medians): OpenMP's threads and OpenBLAS's spin after a call
        # and would steal the next variant's cores
        ours = {"tuned": tuned, "default": w.variants["lt_mlir default"]}
        ours.update((k, f) for k, f in hand.items() if bench_cpu.check(w, k, f()) is None)
        ours["NumPy"] = w.variants["NumPy"]
        times = block_medians(ours, rounds=args.rounds, per_block=4)
        hands = {k: v for k, v in times.items() if k in hand}
        best_hand = min(hands, key=hands.get) if hands else None
        row = {
            "workload": w.name, "tuned_ms": times["tuned"] * 1e3, "evaluations": r.evaluations,
            "x_default": times["default"] / times["tuned"], "x_numpy": times["NumPy"] / times["tuned"],
            "best_hand": best_hand, "x_hand": hands[best_hand] / times["tuned"] if best_hand else None,
            "spearman": statistics.mean(r.tuner.batch_spearman) if r.tuner.batch_spearman else None,
            "pipeline": r.pipeline,
        }
        rows.append(row)
        hand_text = f"{row['x_hand']:.2f}x {best_hand}" if best_hand else "no hand schedule"
        rho = f"{row['spearman']:.2f}" if row["spearman"] is not None else "-"
        print(f"| {w.name} | {row['tuned_ms']:.3f} ms | {row['x_default']:.2f} | {hand_text} | {row['x_numpy']:.2f} | "
              f"{r.evaluations} | {rho} |", flush=True)
    return rows


def _reach(evaluations, good) -> int | None:
    """The measurements a run took to first measure a schedule ``good`` accepts."""
    return next((i + 1 for i, e in enumerate(evaluations) if good(e)), None)


def compare_model(ws: list, args) -> None:
    """Each run's measurements to reach 95% of the best, with each model of
    ``--model`` (``lt,ir``: both, the same seeds) and without one, two ways:
    by the search's own figures (one noisy timing each: the best of all
    runs' is the luckiest draw, which most runs never match), and by
    re-measured figures -- every run's ``--pool`` best schedules (by its
    figures), timed again interleaved with the start over
    ``--remeasure-rounds`` rounds in one process; a run reaches the goal
    when it first measures a schedule whose re-measured speedup is within
    95% of the best re-measured one.  With ``--distinct-code`` every run,
    the ones without a model included, measures each optimised code once;
    printed, each run's candidates not measured for that."""
    seeds = [int(s) for s in args.seeds.split(",")]
    models = args.model.split(",")  # and None: no model
    for w in ws:
        runs = {}
        for model in models + [None]:
            for seed in seeds:
                r, _ = search(w, args.strategy, args.budget, args.seconds, MODELS[model] if model else False, seed, args.distinct_code)
                runs[(model, seed)] = r
        found = max(max(r.curve) for r in runs.values() if r.curve)
        by_figure = {key: _reach(r.tuner.evaluations, lambda e, g=0.95 * found: e.score >= g) for key, r in runs.items()}
        pool: list = []
        for r in runs.values():
            ranked = sorted((e for e in r.tuner.evaluations if e.score > 0), key=lambda e: -e.score)
            pool += list(dict.fromkeys(e.text for e in ranked))[: args.pool]
        pool = list(dict.fromkeys(pool))
        start = next(iter(runs.values())).tuner.start
        with make_measurer(start.text, start.entry) as measurer:
            again = measurer.remeasure(pool, rounds=args.remeasure_rounds)
        true = {t: m.speedup for t, m in zip(pool, again) if m.speedup is not None and not m.error}
        best = max(true.values(), default=0.0)
        by_remeasure = {key: _reach(r.tuner.evaluations, lambda e, g=0.95 * best: true.get(e.text, 0.0) >= g) for key, r in runs.items()}
        if args.seconds:
            # a timed search: the seconds each run took to first measure such a schedule (its log's elapsed_s)
            first = {key: next((e for e in r.tuner.evaluations if true.get(e.text, 0.0) >= 0.95 * best), None) for key, r in runs.items()}
            med = {m: statistics.median([first[(m, s)].elapsed_s if first[(m, s)] else 2 * args.seconds for s in seeds]) for m in models + [None]}
            print(f"{w.name}, re-measured, in {args.seconds:g} s searches: best {best:.2f}x; seconds to reach 95% of it, median over seeds {seeds}: "
                  + ", ".join(f"{'model ' + m if m else 'no model'} {med[m]:.1f} {[round(first[(m, s)].elapsed_s, 1) if first[(m, s)] else None for s in seeds]}"
                              for m in models + [None])
                  + ": " + ", ".join(f"{med[None] / med[m]:.2f}x sooner with the model {m}" for m in models)
                  + f" (never counts as {2 * args.seconds:g} s); measurements made: "
                  + ", ".join(f"{'model ' + m if m else 'no model'} {[len(runs[(m, s)].tuner.evaluations) for s in seeds]}" for m in models + [None]),
                  flush=True)
        for what, figure, reach in (("search figures", found, by_figure), ("re-measured", best, by_remeasure)):
            med = {}
            for model in models + [None]:
                got = [reach[(model, s)] if reach[(model, s)] is not None else args.budget * 2 for s in seeds]
                med[model] = statistics.median(got)
            parts = [f"model {model} {med[model]:.0f} {[reach[(model, s)] for s in seeds]}" for model in models]
            ratios = [f"{med[None] / med[model]:.2f}x fewer with the model {model}" for model in models]
            print(f"{w.name}, {what}: best {figure:.2f}x; measurements to reach 95% of it, median over seeds {seeds}: "
                  f"{', '.join(parts)}, no model {med[None]:.0f} {[reach[(None, s)] for s in seeds]}: {', '.join(ratios)} "
                  "(a run that never reached it counts as twice the budget)", flush=True)
        print(f"  ({len(pool)} schedules re-measured over {args.remeasure_rounds} rounds; candidates not measured, their code measured: "
              + ", ".join(f"{'model ' + m if m else 'no model'} {[runs[(m, s)].tuner.same_code for s in seeds]}" for m in models + [None]) + ")",
              flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None, help="the bench_cpu.py workloads whose name contains this")
    p.add_argument("--quick", action="store_true", help="bench_cpu.py's small sizes (a smoke run)")
    p.add_argument("--strategy", default="evolution")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--seconds", type=float, default=None, help="at most this long a search")
    p.add_argument("--rounds", type=int, default=8, help="rounds of timing blocks (4 timed calls a variant each)")
    p.add_argument("--model", default="auto", help="the cost model the searches use (lt-tune --model: auto, the default, lt or ir); "
                   "with --compare-model a list (lt,ir): each against the same seeds without a model")
    p.add_argument("--distinct-code", action=argparse.BooleanOptionalAction, default=None,
                   help="every search measures each optimised code once (lt-tune --distinct-code; default: with --model ir only); "
                        "with --compare-model, the runs without a model too")
    p.add_argument("--log-dir", default=None, help="write each search's lt-tune log (JSON lines) into this folder")
    p.add_argument("--compare-model", action="store_true", help="with and without the cost model, over --seeds")
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--pool", type=int, default=5, help="--compare-model: each run's best schedules re-measured")
    p.add_argument("--remeasure-rounds", type=int, default=7, help="--compare-model: interleaved rounds of the re-measure")
    args = p.parse_args()
    global LOG_DIR
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        LOG_DIR = args.log_dir
    scratch = tempfile.TemporaryDirectory(prefix="bench-tune-")  # the searches' own tuning database, removed at exit
    os.environ["LT_MLIR_TUNING_DB"] = os.path.join(scratch.name, "tuning.sqlite")
    ws = [w for w in bench_cpu.workloads(args.quick, args.only) if w.program is not None]
    if not ws:
        print(f"error: no workload matches --only {args.only!r}")
        return 1
    names = args.model.split(",")
    if any(n not in MODELS for n in names) or (len(names) > 1 and not args.compare_model):
        print(f"error: --model {args.model!r}: {', '.join(MODELS)} (a list, lt,ir, only with --compare-model)")
        return 1
    if args.compare_model:
        compare_model(ws, args)
        return 0
    print(f"{args.strategy}, at most {args.budget} measurements" + (f" or {args.seconds:g} s" if args.seconds else "") + " a workload")
    print("| workload | tuned | × default | × best hand schedule | × NumPy | measurements | within-batch Spearman |")
    print("|---|---|---|---|---|---|---|")
    rows = goals(ws, args)
    return 1 if any(r is None for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
