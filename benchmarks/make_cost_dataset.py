"""The cost model's dataset and the model lt-tune ships (issue 26).

1. Generate: for each program of ``PROGRAMS`` (small sizes of every family
   of ``lt_mlir.programs``, and loop_tool's default contraction schedule
   from the frontend, where ``recipes.register_tile`` applies), batches of
   candidate schedules as a search makes them: random move walks (1..6
   moves) and samples of the single-move neighbours, from the start, from
   the best schedule measured so far and from one of the five best, and
   for contractions register-tile variants.  Every search move but
   ``parallel``, whose speedup is the host's cores and their load rather
   than the schedule (on this shared 2-core machine one parallel kernel's
   time swung 30x between rounds): the online model learns it from the
   search's own measurements.  Each batch is measured once with the
   search's own measurer (``make_measurer``: compiled, outputs checked
   against the start's), then timed in five interleaved rounds
   (``remeasure``: the start and every candidate one sample each a round,
   so that drift hits them alike).  ``speedups``: each round's time of the
   start over the candidate's; ``speedup``, the record's label, their
   median.  Written to
   ``lt_mlir/search/data/cost_dataset.jsonl``, one record per schedule:
   ``program``, ``family``, ``group`` (its batch), ``kind``, ``moves``
   (replayable from the program's start: ``--refeature`` recomputes the
   features after ``space.feature_vector`` changes), ``speedup``,
   ``speedups``, ``correct``, ``error``, ``vector_bits`` (the host's vector
   register: ``replay`` gives a width-less ``vectorize`` move that width on
   any host), ``cpu`` (LLVM's name of the host's CPU: ``--ir`` compiles
   for it), ``features``.
2. Evaluate, leaving one program out (trained on the others, other sizes
   of its family included) and one family out: within-batch Spearman over
   every batch, the same with speedups within ``RESOLUTION`` (5%) of each
   other counted as ties (what the labels cannot order), over the batches
   whose rounds agree with each other
   (a round's ranking against another's >= 0.5: the measurement
   reproduces its own ranking; in the others the candidates differ by
   less than the timing noise), and the share of resolved pairs (two
   candidates of a batch that every round orders the same way) the model
   orders right; then the tuner's use: ``CostModel`` from the model that
   never saw the program, learning from each batch after ranking it.
   First the measurements' own agreement (one round against another).
3. Train the shipped model on every program but
   ``model.HELD_OUT_PROGRAMS`` (kept out so that tests/test_cost_model.py
   checks it on programs it never saw), write
   ``lt_mlir/search/data/cost_model.txt``, and print how it ranks those.

    .venv/bin/python benchmarks/make_cost_dataset.py              # all three (15 minutes on a 2-core machine)
    .venv/bin/python benchmarks/make_cost_dataset.py --train       # 2 and 3 from the kept dataset
    .venv/bin/python benchmarks/make_cost_dataset.py --refeature   # recompute the features, then 2 and 3
    .venv/bin/python benchmarks/make_cost_dataset.py --pairwise    # a pairwise ranker, each program left out (3 minutes)
    .venv/bin/python benchmarks/make_cost_dataset.py --curve       # the learning curve over training programs (1.5 minutes)
    .venv/bin/python benchmarks/make_cost_dataset.py --ir          # ranking by what the O3 LLVM IR executes (2 minutes)
    .venv/bin/python benchmarks/make_cost_dataset.py --unseen --distinct --seed 1 --dataset held.jsonl
        # model.HELD_OUT_PROGRAMS in batches of distinct code, ranked by the IR estimate and the lt model (3 minutes)
    .venv/bin/python benchmarks/make_cost_dataset.py --unseen --train --dataset lt_mlir/search/data/unseen_dataset.jsonl
        # rank the kept one (seeds 0 and 1, 2026-12-03; 40 s)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from lt_mlir import programs
from lt_mlir.errors import LtError
from lt_mlir.lowering.ir_counts import code_key
from lt_mlir.lowering.machine import cpu_target, host_vector_width
from lt_mlir.moves import try_move
from lt_mlir.schedule import Schedule
from lt_mlir.search import model as cost_model
from lt_mlir.search import space
from lt_mlir.search.measure import make_measurer
from lt_mlir.targets import CompileOptions, NativeTarget, get_target

DATA = os.path.join(os.path.dirname(cost_model.__file__), "data")
DATASET = os.path.join(DATA, "cost_dataset.jsonl")
MODEL = os.path.join(DATA, "cost_model.txt")


def _frontend_matmul(m: int, k: int, n: int, clipped: bool = False) -> str:
    """loop_tool's default contraction schedule (the frontend's), which
    ``recipes.register_tile`` starts from."""
    import lt_mlir as lt

    s = lt.SymbolGenerator()
    a, b = np.zeros((m, k), np.float32), np.zeros((k, n), np.float32)
    p = lt.Tensor(a).to(s.m, s.k) * lt.Tensor(b).to(s.k, s.n)
    return ((p.max(0.0) if clipped else p).sum(s.k)).schedule.text


# program id -> (family, its start text); sizes keep a kernel well under a millisecond
PROGRAMS = {
    "matmul:32,32,32": ("matmul", lambda: programs.matmul(32, 32, 32)),
    "matmul:64,64,64": ("matmul", lambda: programs.matmul(64, 64, 64)),
    "matmul:48,80,40": ("matmul", lambda: programs.matmul(48, 80, 40)),
    "matmul:96,32,128": ("matmul", lambda: programs.matmul(96, 32, 128)),
    "clipped_matmul:33,48,256": ("matmul", lambda: programs.matmul(33, 48, 256, clipped=True)),
    "clipped_matmul:64,64,64": ("matmul", lambda: programs.matmul(64, 64, 64, clipped=True)),
    "lt_matmul:64,64,64": ("matmul", lambda: _frontend_matmul(64, 64, 64)),
    "lt_matmul:48,64,96": ("matmul", lambda: _frontend_matmul(48, 64, 96)),
    "lt_clipped_matmul:33,256,48": ("matmul", lambda: _frontend_matmul(33, 256, 48, clipped=True)),
    "softmax:32,256": ("softmax", lambda: programs.softmax(32, 256)),
    "softmax:64,128": ("softmax", lambda: programs.softmax(64, 128)),
    "softmax:16,512": ("softmax", lambda: programs.softmax(16, 512)),
    "row_sum:64,512": ("reduce", lambda: programs.row_sum(64, 512)),
    "row_max:128,256": ("reduce", lambda: programs.row_max(128, 256)),
    "col_sum:256,64": ("reduce", lambda: programs.col_sum(256, 64)),
    "total_sum:128,128": ("reduce", lambda: programs.total_sum(128, 128)),
    "lower_row_sum:96,96": ("reduce", lambda: programs.lower_row_sum(96, 96)),
    "conv1d:2048,16": ("conv", lambda: programs.conv1d(2048, 16)),
    "conv1d:4096,5": ("conv", lambda: programs.conv1d(4096, 5)),
    "conv2d:4,16,16,3,3": ("conv", lambda: programs.conv2d(4, 16, 16, 3, 3)),
    "conv2d:8,12,20,3,3": ("conv", lambda: programs.conv2d(8, 12, 20, 3, 3)),
    "add:16384": ("elementwise", lambda: programs.pointwise_add(16384)),
    "add:4096": ("elementwise", lambda: programs.pointwise_add(4096)),
    "matmul:128,16,64": ("matmul", lambda: programs.matmul(128, 16, 64)),
    "clipped_matmul:16,128,96": ("matmul", lambda: programs.matmul(16, 128, 96, clipped=True)),
    "lt_matmul:32,128,32": ("matmul", lambda: _frontend_matmul(32, 128, 32)),
    "softmax:128,64": ("softmax", lambda: programs.softmax(128, 64)),
    "row_sum:256,128": ("reduce", lambda: programs.row_sum(256, 128)),
    "row_max:32,1024": ("reduce", lambda: programs.row_max(32, 1024)),
    "col_sum:64,512": ("reduce", lambda: programs.col_sum(64, 512)),
    "conv1d:512,33": ("conv", lambda: programs.conv1d(512, 33)),
    "conv2d:2,24,24,5,5": ("conv", lambda: programs.conv2d(2, 24, 24, 5, 5)),
    "add:65536": ("elementwise", lambda: programs.pointwise_add(65536)),
}
BATCH = 8  # candidates a batch (a search measures 2 x workers, choosing them from 4 times as many)
BATCHES = 8  # batches a program
# speedups closer than this (relative) count as ties in the "tied" Spearman: what the
# labels resolve (two labels of the same batch, each the median of MEASUREMENTS
# interleaved rounds, put candidates of one speed within +-3% of each other)
RESOLUTION = 0.05
MEASUREMENTS = 5  # interleaved timing rounds over a batch, after the measurement that compiles and checks it; a record's speedup is their median


def start_text(program: str) -> str:
    return PROGRAMS[program][1]()


# the vector register of the host a record was measured on, in bits (records
# without ``vector_bits`` were made before it was kept: on a 256-bit AVX2 host)
DEFAULT_VECTOR_BITS = 256
# the CPU of records without ``cpu``: the kept dataset was measured on a
# 2-core AVX2 AMD EPYC (2026-11-28) whose name was not kept, taken as the
# first-generation EPYC these sessions have had
DEFAULT_CPU = "znver1"


class VectorBitsTarget(NativeTarget):
    """The host's CPU target with the vector register of another host:
    ``vectorize`` moves without a width replay at the width they had where
    the record was measured, whatever this host has."""

    def __init__(self, bits: int):
        self.__dict__.update(vars(get_target("cpu")))  # the registered target's name, lowering, threads
        self.bits = bits

    def vector_width(self, element_bytes: int = 4, options=None) -> int:
        return max(1, self.bits // 8 // element_bytes)


def replay(start: Schedule, record: dict) -> Schedule | None:
    """A record's schedule: its moves from ``start`` on its host's vectors."""
    target = VectorBitsTarget(record.get("vector_bits", DEFAULT_VECTOR_BITS))
    return space.replay(start, [space.Move.parse(m) for m in record["moves"]], target)


# every search move but ``parallel`` (module docstring: its speedup is the host's cores and load)
KINDS = tuple(kind for kind, _ in dict.fromkeys(space.search_moves("cpu")) if kind != "parallel")


def _random_move(s: Schedule, rng, tries: int = 30) -> Schedule | None:
    """``space.random_move`` over ``KINDS``."""
    loops = s.loops()
    candidates = space.search_moves("cpu", KINDS)
    for _ in range(tries):
        kind, arg = candidates[int(rng.integers(len(candidates)))]
        tried = try_move(s, space.Move(kind, int(rng.integers(loops)), arg))
        if tried is not None and tried[0].key != s.key:
            return tried[0]
    return None


def _walk(origin: Schedule, rng, depth: int) -> Schedule | None:
    s = origin
    for _ in range(depth):
        step = _random_move(s, rng)
        if step is None:
            break
        s = step
    return s if s.key != origin.key else None


def _register_tiles(start: Schedule, rng) -> list[Schedule]:
    from lt_mlir.recipes import register_tile

    out = []
    for rows in (1, 2, 3, 4):
        for vectors in (1, 2, 3):
            for pack in (True, False):
                try:
                    out.append(register_tile(start.copy(), rows=rows, vectors=vectors, pack=pack))
                except LtError:
                    pass
    rng.shuffle(out)
    return out


def _candidates(kind: str, origin: Schedule, rng, seen: set, start: Schedule, codes: dict | None = None) -> list[Schedule]:
    """Up to ``BATCH`` new schedules of ``kind`` from ``origin``; with
    ``codes`` (code key -> the first schedule of that code, the start's
    included), only schedules whose optimised code is new (``_code``), as a
    ``--distinct-code`` search measures them."""
    out: list[Schedule] = []
    if kind == "recipe":
        pool = _register_tiles(start, rng)
    elif kind == "neighbours":
        pool = [s for _, s in space.neighbours(origin, kinds=KINDS)]
        rng.shuffle(pool)
    else:
        pool = []
        for _ in range(6 * BATCH):
            s = _walk(origin, rng, int(rng.integers(1, 7 if origin is start else 4)))
            if s is not None:
                pool.append(s)
    for s in pool:
        if s.key not in seen and s.moves is not None:
            seen.add(s.key)
            if codes is not None:
                key = _code(s)
                if key is None or key in codes:
                    continue
                codes[key] = s
            out.append(s)
            if len(out) == BATCH:
                break
    return out


def _code(s: Schedule) -> str | None:
    """``ir_counts.code_key`` of ``s``'s code optimised for this host (None: it does not lower)."""
    code = space.optimized_ir(s)
    return code_key(code[0]) if code is not None else None


def generate(program: str, seed: int, out, repeat: int, distinct: bool = False, rounds: int = 5) -> int:
    """Measure ``BATCHES`` batches of ``program``'s schedules; append the
    records to ``out``; the count.  ``distinct``: each optimised code once
    (a batch holds no code measured before, the start's included);
    ``rounds``: interleaved timing rounds a label."""
    family, make = PROGRAMS[program]
    text = make()
    start = Schedule(text)
    rng = np.random.default_rng([seed, sum(map(ord, program))])
    seen = {start.key}
    codes = {_code(start): start} if distinct else None
    measured: list[tuple[float, Schedule]] = []  # (speedup, schedule), correct ones
    plan = (["recipe"] if program.startswith("lt_") else []) + ["walk:start", "neighbours:start", "walk:best", "neighbours:best",
                                                                  "walk:top", "neighbours:top", "walk:best", "neighbours:best"]
    pending = []  # (batch, step, schedule, its first result, its speedup in each round)
    with make_measurer(text, repeat=repeat, seed=seed) as m:
        for b, step in enumerate(plan[:BATCHES]):
            kind, _, where = step.partition(":")
            ranked = sorted(measured, key=lambda p: -p[0])
            if where == "best" and ranked:
                origin = ranked[0][1]
            elif where == "top" and ranked:
                origin = ranked[int(rng.integers(min(5, len(ranked))))][1]
            else:
                origin = start
            batch = _candidates(kind, origin, rng, seen, start, codes)
            if len(batch) < 3:
                continue
            texts = [s.text for s in batch]
            first = m.measure(texts)  # compiled, outputs checked against the start's
            # the labels: interleaved rounds (one sample of the start and of each candidate a
            # round), each candidate's time over the start's in the same round
            timed = [m.remeasure(texts, 1) for _ in range(rounds)]
            for s, f, *rs in zip(batch, first, *timed):
                speedups = [r.baseline_s / r.runtime_s if r.runtime_s and r.baseline_s else None for r in rs]
                ok = not f.error and f.correct and None not in speedups
                pending.append((b, step, s, f, speedups if ok else [None] * len(rs)))
                if ok:
                    measured.append((float(np.median(speedups)), s))
    vector_bits, cpu = 8 * host_vector_width(1), cpu_target().cpu
    code_of = {id(s): key for key, s in (codes or {}).items()}
    for b, step, s, f, speedups in pending:
        ok = None not in speedups
        record = {
            "program": program, "family": family, "group": f"{program}/{seed * BATCHES + b}", "kind": step,
            "moves": [str(mv) for mv in s.moves],
            "speedup": round(float(np.median(speedups)), 5) if ok else None,
            "speedups": [round(x, 5) if x else None for x in speedups],
            "correct": bool(f.correct) and not f.error, "error": (f.error or "")[:200],
            "vector_bits": vector_bits, "cpu": cpu,
            "features": _rounded(space.feature_vector(s)),
        }
        if distinct:
            record["code"] = code_of[id(s)]
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
    out.flush()
    return len(pending)


def _rounded(x: np.ndarray) -> list:
    """Four significant digits, whole numbers as integers (a smaller file)."""
    out = []
    for v in x:
        v = float(f"{v:.4g}")
        out.append(int(v) if v.is_integer() else v)
    return out


def refeature(path: str) -> None:
    """Recompute every record's features from its program and moves."""
    records = cost_model.load_records(path)
    starts: dict = {}
    for r in records:
        if r["program"] not in starts:
            starts[r["program"]] = Schedule(start_text(r["program"]))
        s = replay(starts[r["program"]], r)
        if s is None:
            raise SystemExit(f"error: {r['program']}: moves {r['moves']} no longer replay")
        r["features"] = _rounded(space.feature_vector(s))
    with open(path, "w") as fh:
        for r in records:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")


def _rounds_agreement(batch: list) -> float:
    """Mean Spearman of one round's measurements of a batch against another's."""
    rounds = np.array([r["speedups"] for r in batch], float).T
    return float(np.mean([cost_model.spearman(rounds[i], rounds[j]) for i in range(len(rounds)) for j in range(i + 1, len(rounds))]))


def _measured_batches(records: list) -> dict:
    """group -> its records, batches of at least 3 correct, measured schedules."""
    out: dict = {}
    for r in records:
        if r["speedup"] is not None and r["correct"] and None not in r["speedups"]:
            out.setdefault(r["group"], []).append(r)
    return {g: b for g, b in out.items() if len(b) >= 3}


def scores(predicted: dict, records: list) -> tuple[float, float, float, float, int, int]:
    """How ``predicted`` (group -> scores of its measured records, in order)
    ranks: (within-batch Spearman over every batch, the same with the
    speedups within ``RESOLUTION`` of each other tied (``model.tied``), over
    the batches whose rounds agree (>= 0.5: the measurement reproduces its
    own ranking), the share of "resolved" pairs ordered right (a pair of
    one batch whose every round agrees on which is faster), batches,
    resolved pairs)."""
    batches = _measured_batches(records)
    every, agreed, right, pairs = [], [], 0.0, 0
    for g, batch in batches.items():
        if g not in predicted:
            continue
        p, y = np.asarray(predicted[g]), [r["speedup"] for r in batch]  # ranks: the speedups' are their logs'
        every.append((p, y))
        if _rounds_agreement(batch) >= 0.5:
            agreed.append((p, y))
        got, k = cost_model.resolved_pairs(p, [r["speedups"] for r in batch])
        right, pairs = right + got, pairs + k
    return (cost_model.within_batch_spearman(every), cost_model.within_batch_spearman(every, resolution=RESOLUTION),
            cost_model.within_batch_spearman(agreed), right / max(pairs, 1), len(every), pairs)


def _predict(booster, records: list) -> dict:
    return {g: booster.predict(np.array([r["features"] for r in b], float)) for g, b in _measured_batches(records).items()}


def held_out(records: list, key: str, keep: str | None = None) -> tuple[dict, dict]:
    """Predictions for every batch by a model trained without its ``key``
    ("program" or "family"), and {key value: its scores}; ``keep``: a
    directory to save each model in (for ``online``)."""
    predicted, by = {}, {}
    for value in sorted({r[key] for r in records}):
        train = [r for r in records if r[key] != value]
        test = [r for r in records if r[key] == value]
        booster = cost_model.train(train, space.FEATURE_NAMES)
        if keep:
            cost_model.save(booster, os.path.join(keep, f"{value}.txt"))
        got = _predict(booster, test)
        predicted.update(got)
        by[value] = scores(got, test)
    return predicted, by


def online(records: list, models: str) -> dict:
    """The tuner's use: for each program, ``CostModel`` from the model
    trained without it ranks each batch in turn, then learns from it."""
    predicted = {}
    for program in sorted({r["program"] for r in records}):
        model = cost_model.CostModel(pretrained=os.path.join(models, f"{program}.txt"))
        batches = _measured_batches([r for r in records if r["program"] == program])
        for g, batch in sorted(batches.items(), key=lambda kv: int(kv[0].rsplit("/", 1)[1])):
            xs = [np.array(r["features"], float) for r in batch]
            predicted[g] = model.predict(xs)
            for x, r in zip(xs, batch):
                model.add(x, r["speedup"], group=g)
            model.fit()
    return predicted


HEADER = f"  {'':<28} {'all':>6}  {'tied':>6}  {'agreed':>6}  {'pairs':>6}"


def _pairs(batches: dict, resolved_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs (i, j) of each batch: features ``f_i - f_j`` and
    ``f_i``, label whether i is the faster; only the pairs every timing
    round orders alike (``resolved_only``), or every pair of distinct
    labels."""
    x, y = [], []
    for b in batches.values():
        f = np.array([r["features"] for r in b], float)
        for i in range(len(b)):
            for j in range(len(b)):
                d = np.sign(np.subtract(b[i]["speedups"], b[j]["speedups"]))
                if i == j or (abs(d.sum()) != len(d) if resolved_only else b[i]["speedup"] == b[j]["speedup"]):
                    continue
                x.append(np.concatenate([f[i] - f[j], f[i]]))
                y.append(int(b[i]["speedup"] > b[j]["speedup"]))
    return np.array(x), np.array(y)


def pairwise(records: list) -> None:
    """A pairwise ranker, each program left out: LightGBM's binary
    objective on pairs of a batch (``_pairs``), a candidate's score the sum
    of its probabilities of beating the others of its batch.  Trained on
    the resolved pairs only (the noise left out of the labels) and on every
    pair."""
    import lightgbm as lgb

    batches = _measured_batches(records)
    params = dict(objective="binary", num_leaves=15, learning_rate=0.05, min_data_in_leaf=20, feature_fraction=0.8, verbosity=-1)
    print(HEADER)
    for resolved_only in (True, False):
        predicted = {}
        for program in sorted({b[0]["program"] for b in batches.values()}):
            train = {g: b for g, b in batches.items() if b[0]["program"] != program}
            booster = lgb.train(params, lgb.Dataset(*_pairs(train, resolved_only)), 200)
            for g, b in batches.items():
                if b[0]["program"] == program:
                    f = np.array([r["features"] for r in b], float)
                    predicted[g] = [booster.predict(np.array([np.concatenate([f[i] - f[j], f[i]]) for j in range(len(b)) if j != i])).sum()
                                    for i in range(len(b))]
        print(_line(f"pairwise, {'resolved pairs' if resolved_only else 'every pair'}", scores(predicted, records)), flush=True)


def curve(records: list, sizes=(4, 8, 16, 24), draws: int = 3, seed: int = 0) -> None:
    """The learning curve: each program left out, ranked by a model trained
    on ``n`` of the other programs drawn at random (``draws`` draws, their
    scores averaged), then on all of them: whether more programs of these
    families would carry the held-out Spearman further."""
    rng = np.random.default_rng(seed)
    programs_ = sorted({r["program"] for r in records})
    print(HEADER)
    for n in (*[k for k in sizes if k < len(programs_) - 1], len(programs_) - 1):
        got = []
        for _ in range(draws if n < len(programs_) - 1 else 1):
            predicted = {}
            for program in programs_:
                others = [q for q in programs_ if q != program]
                pick = set(rng.choice(others, size=n, replace=False))
                booster = cost_model.train([r for r in records if r["program"] in pick], space.FEATURE_NAMES)
                predicted.update(_predict(booster, [r for r in records if r["program"] == program]))
            got.append(scores(predicted, records))
        mean = tuple(float(np.mean([g[i] for g in got])) for i in range(4)) + got[0][4:]
        print(_line(f"trained on {n} programs", mean), flush=True)


def _ir_counts(job: tuple):
    """(record index, ``space.ir_counts_of`` its schedule, or None when it
    does not lower), and the seconds lowering, O3 and counting took;
    ``job``: (index, program, the record or None for the program's start,
    the CPU that measured it: the IR is compiled for that CPU)."""
    i, program, record, cpu = job
    t0 = time.perf_counter()
    s = Schedule(start_text(program))
    if record is not None:
        s = replay(s, record)
    code = space.optimized_ir(s, options=CompileOptions(cpu=cpu))
    key = code_key(code[0]) if code is not None else None
    return i, space.ir_counts_of(s, code=code), key, time.perf_counter() - t0


def _count_all(records: list, wanted: list, workers: int) -> tuple[dict, dict]:
    """``_ir_counts`` of the records at the indices ``wanted`` and of each
    program's start, on ``workers`` processes: {index or program: counts},
    {index: code key}."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    cpu = {r["program"]: r.get("cpu", DEFAULT_CPU) for r in records}  # a program's records come from one run
    jobs = [(-1 - k, p, None, cpu[p]) for k, p in enumerate(sorted(cpu))]
    jobs += [(i, records[i]["program"], records[i], cpu[records[i]["program"]]) for i in wanted]
    counts, keys, seconds, t0 = {}, {}, [], time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for i, c, key, dt in pool.map(_ir_counts, jobs, chunksize=8):
            counts[i if i >= 0 else jobs[-1 - i][1]] = c
            keys[i] = key
            seconds.append(dt)
    print(f"{len(jobs)} schedules lowered, optimised and counted in {time.perf_counter() - t0:.0f} s "
          f"({np.median(seconds):.2f} s median a schedule, {max(seconds):.1f} s at most, {workers} processes); "
          f"loops of unknown trip count: {sum(c.unknown_trips for c in counts.values() if c)} of {sum(c.loops for c in counts.values() if c)}")
    return counts, keys


def ir_ranking(records: list, workers: int = 2) -> None:
    """Ranking by what each schedule's optimised LLVM IR executes
    (``lowering/ir_counts.py``): every record lowered and optimised (O3) as
    the measurer compiles it, each program left out: the IR's cycle
    estimate and dynamic instruction count as they are (no training), and
    LightGBM (``cost_model.train``) on ``space.ir_feature_vector``, each
    program and each family left out; then, on ``model.HELD_OUT_PROGRAMS``,
    the cycle estimate (``lt-tune --model ir``'s start), trees trained on
    every other program, and the shipped model of the lt features."""
    batches = _measured_batches(records)
    index = {id(r): i for i, r in enumerate(records)}
    wanted = sorted({index[id(r)] for b in batches.values() for r in b})
    counts, keys = _count_all(records, wanted, workers)
    print(HEADER)
    for name, key in (("IR cycle estimate", "cycles"), ("IR instructions executed", "instructions")):
        def score(r, key=key):
            c = counts[index[id(r)]]
            return -(c.cycles if key == "cycles" else c.counts["instructions"]) if c is not None else -np.inf
        print(_line(name, scores({g: [score(r) for r in b] for g, b in batches.items()}, records)), flush=True)
    distinct_code(batches, {g: [-c.cycles if (c := counts[index[id(r)]]) else -np.inf for r in b] for g, b in batches.items()},
                  {g: [keys[index[id(r)]] or f"none {k}" for k, r in enumerate(b)] for g, b in batches.items()})
    kept = []
    for i in wanted:
        c, start = counts[i], counts[records[i]["program"]]
        if c is not None and start is not None:
            kept.append(dict(records[i], features=list(space.ir_feature_vector(c, start))))
    for key in ("program", "family"):
        predicted = {}
        for value in sorted({r[key] for r in kept}):
            booster = cost_model.train([r for r in kept if r[key] != value], space.IR_FEATURE_NAMES)
            predicted.update(_predict(booster, [r for r in kept if r[key] == value]))
        print(_line(f"trees on IR counts, {key} out", scores(predicted, kept)), flush=True)
    test = [r for r in kept if r["program"] in cost_model.HELD_OUT_PROGRAMS]
    estimate = cost_model.CycleEstimate(space.IR_FEATURE_NAMES)  # lt-tune --model ir's start
    booster = cost_model.train([r for r in kept if r["program"] not in cost_model.HELD_OUT_PROGRAMS], space.IR_FEATURE_NAMES)
    print(_line("held out: cycle estimate", scores(_predict(estimate, test), test)))
    print(_line("held out: trees", scores(_predict(booster, test), test)))
    held = [r for r in records if r["program"] in cost_model.HELD_OUT_PROGRAMS]
    print(_line("held out: the lt features' model", scores(_predict(cost_model.load(), held), held)))


def unseen(records: list, workers: int = 2) -> None:
    """Rank a dataset of programs the shipped model never trained on (made
    with ``--distinct`` into its own file: batches as a ``--distinct-code``
    search measures them): the IR cycle estimate (``lt-tune --model ir``'s
    start, nothing trained) and the shipped model of the lt features, each
    program and together."""
    batches = _measured_batches(records)
    index = {id(r): i for i, r in enumerate(records)}
    counts, keys = _count_all(records, sorted({index[id(r)] for b in batches.values() for r in b}), workers)
    twins = sum(len(b) - len({keys[index[id(r)]] for r in b}) for b in batches.values())
    agreement = [_rounds_agreement(b) for b in batches.values()]
    print(f"{len(batches)} batches, {sum(map(len, batches.values()))} schedules; compiled here, {twins} have a batch-mate's code; "
          f"one timing round against another {np.mean(agreement):.3f}, {sum(a >= 0.5 for a in agreement)} batches agree (>= 0.5)")
    estimate = {g: [-c.cycles if (c := counts[index[id(r)]]) else -np.inf for r in b] for g, b in batches.items()}
    lt = _predict(cost_model.load(), records)
    print(HEADER)
    for program in sorted({r["program"] for r in records}):
        mine = [r for r in records if r["program"] == program]
        print(_line(f"{program}: IR estimate", scores(estimate, mine)))
        print(_line(f"{program}: lt model", scores(lt, mine)))
    print(_line("together: IR cycle estimate", scores(estimate, records)))
    print(_line("together: the lt model", scores(lt, records)))
    rng = np.random.default_rng(0)
    groups = sorted(batches)
    for name, predicted in (("IR cycle estimate", estimate), ("the lt model", lt)):
        pairs = [(predicted[g], [r["speedup"] for r in batches[g]]) for g in groups]
        boot = [cost_model.within_batch_spearman([pairs[i] for i in rng.integers(len(pairs), size=len(pairs))]) for _ in range(2000)]
        print(f"  {name}: within-batch Spearman {cost_model.within_batch_spearman(pairs):.3f}, "
              f"90% of 2,000 bootstrap resamples of the batches between {np.quantile(boot, 0.05):.3f} and {np.quantile(boot, 0.95):.3f}")


def distinct_code(batches: dict, predicted: dict, keys: dict) -> None:
    """What the candidates' code leaves to rank: how many candidates of a
    batch had another's optimised code (``ir_counts.code_key``: one
    measurement would do for both, and ``lt-tune --model ir`` measures one);
    the ranking of an oracle that knows each code's mean measured speedup
    (identical code tied: the best any model of the code can do against
    these labels, in-sample, so an upper bound); and ``predicted`` over the
    batches with each code once (its label the mean of its candidates'),
    those of at least 3 codes: the choice a search that measures each code
    once makes.  Over every program and over ``model.HELD_OUT_PROGRAMS``."""
    twins = sum(len(k) - len(set(k)) for k in keys.values())
    print(f"candidates whose optimised code another of their batch has: {twins} of {sum(len(k) for k in keys.values())}")
    for name, pick in (("every program", lambda p: True), ("held out", lambda p: p in cost_model.HELD_OUT_PROGRAMS)):
        oracle, merged = {}, []
        for g, b in batches.items():
            if not pick(b[0]["program"]):
                continue
            codes: dict = {}
            for key, r, p in zip(keys[g], b, predicted[g]):
                codes.setdefault(key, (p, []))[1].append(r["speedup"])
            oracle[g] = [float(np.mean(codes[key][1])) for key in keys[g]]
            if len(codes) >= 3:
                merged.append(([p for p, _ in codes.values()], [float(np.mean(v)) for _, v in codes.values()]))
        mine = [r for b in batches.values() if pick(b[0]["program"]) for r in b]
        print(_line(f"oracle of the code, {name}", scores(oracle, mine)))
        print(f"  IR cycle estimate, each code once, {name}: {cost_model.within_batch_spearman(merged):.3f} ({len(merged)} batches of >= 3 codes)")


def _line(name: str, s: tuple) -> str:
    return f"  {name:<28} {s[0]:6.3f}  {s[1]:6.3f}  {s[2]:6.3f}  {s[3]:6.3f}   ({s[4]} batches, {s[5]} resolved pairs)"


def report(records: list) -> None:
    batches = _measured_batches(records)
    agreement = [_rounds_agreement(b) for b in batches.values()]
    print(f"measurement noise: one round against another, within-batch Spearman {np.mean(agreement):.3f}; "
          f"{sum(a >= 0.5 for a in agreement)} of {len(agreement)} batches agree (>= 0.5)")
    print(f"held-out within-batch Spearman (all batches; speedups within {RESOLUTION:.0%} tied; batches whose rounds agree) "
          "and resolved pairs ordered right:")
    print(HEADER)
    with tempfile.TemporaryDirectory() as models:
        for key in ("program", "family"):
            predicted, by = held_out(records, key, models if key == "program" else None)
            print(_line(f"leave one {key} out", scores(predicted, records)))
            if key == "family":
                for value, s in by.items():
                    print(_line(f"  {value}", s))
            else:
                family_of = {r["group"]: r["family"] for r in records}
                for family in sorted(set(family_of.values())):
                    mine = {g: p for g, p in predicted.items() if family_of[g] == family}
                    print(_line(f"  {family}", scores(mine, [r for r in records if r["family"] == family])))
        print(_line("online, one program out", scores(online(records, models), records)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", action="store_true", help="skip generating: evaluate and train from the kept dataset")
    p.add_argument("--refeature", action="store_true", help="recompute the kept dataset's features, then evaluate and train")
    p.add_argument("--programs", nargs="+", choices=list(PROGRAMS), metavar="PROGRAM",
                   help="programs to generate (ids of PROGRAMS; default all, with --unseen model.HELD_OUT_PROGRAMS); the others' records are kept")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=7, help="timing samples a measurement")
    p.add_argument("--pairwise", action="store_true", help="only evaluate a pairwise ranker on the kept dataset, each program left out")
    p.add_argument("--curve", action="store_true",
                   help="only the learning curve on the kept dataset: each program left out, trained on 4, 8, 16, 24 and all others")
    p.add_argument("--ir", action="store_true",
                   help="only rank the kept dataset by what each schedule's O3 LLVM IR executes, each program left out")
    p.add_argument("--distinct", action="store_true",
                   help="generate batches of distinct optimised code (each code once, the start's left out), as a --distinct-code search measures")
    p.add_argument("--rounds", type=int, default=MEASUREMENTS, help="interleaved timing rounds a label")
    p.add_argument("--unseen", action="store_true",
                   help="rank --dataset (programs the shipped model never trained on; generated first unless --train) by the IR cycle estimate "
                        "and the lt model, training nothing")
    p.add_argument("--dataset", default=DATASET)
    p.add_argument("--model", default=MODEL)
    args = p.parse_args()
    if args.programs is None:
        args.programs = list(cost_model.HELD_OUT_PROGRAMS if args.unseen else PROGRAMS)
    if args.unseen and not args.train and os.path.abspath(args.dataset) == os.path.abspath(DATASET):
        p.error("--unseen generates into a dataset of its own: name it with --dataset (the kept dataset trains the shipped model)")
    os.makedirs(os.path.dirname(args.dataset), exist_ok=True)
    if args.pairwise:
        pairwise(cost_model.load_records(args.dataset))
        return
    if args.curve:
        curve(cost_model.load_records(args.dataset))
        return
    if args.ir:
        ir_ranking(cost_model.load_records(args.dataset))
        return
    if args.refeature:
        t0 = time.perf_counter()
        refeature(args.dataset)
        print(f"features recomputed in {time.perf_counter() - t0:.1f} s")
    elif not args.train:
        t0 = time.perf_counter()
        # the other programs' records stay as they are (regenerating some programs)
        kept = [r for r in cost_model.load_records(args.dataset) if r["program"] not in args.programs] if os.path.exists(args.dataset) else []
        with open(args.dataset, "w") as out:
            for r in kept:
                out.write(json.dumps(r, separators=(",", ":")) + "\n")
            for program in args.programs:
                t1 = time.perf_counter()
                n = generate(program, args.seed, out, args.repeat, args.distinct, args.rounds)
                print(f"{program:<30} {n:4d} schedules  {time.perf_counter() - t1:6.1f} s", flush=True)
        print(f"generated in {time.perf_counter() - t0:.0f} s")
    if args.unseen:
        unseen(cost_model.load_records(args.dataset))
        return
    records = cost_model.load_records(args.dataset)
    ok = sum(r["speedup"] is not None for r in records)
    print(f"{len(records)} schedules ({ok} measured and correct) of {len({r['program'] for r in records})} programs "
          f"in {len({r['group'] for r in records})} batches")
    report(records)
    train = [r for r in records if r["program"] not in cost_model.HELD_OUT_PROGRAMS]
    test = [r for r in records if r["program"] in cost_model.HELD_OUT_PROGRAMS]
    t0 = time.perf_counter()
    booster = cost_model.train(train, space.FEATURE_NAMES)
    cost_model.save(booster, args.model)
    print(f"shipped model: trained on {len(train)} schedules (all but cost_model.HELD_OUT_PROGRAMS) in "
          f"{time.perf_counter() - t0:.1f} s, {os.path.getsize(args.model) / 1024:.0f} KiB -> {os.path.relpath(args.model)}")
    print(HEADER)
    for program in cost_model.HELD_OUT_PROGRAMS:
        mine = [r for r in test if r["program"] == program]
        print(_line(f"held out {program}", scores(_predict(booster, mine), mine)))
    print(_line("held out, together", scores(_predict(booster, test), test)))


if __name__ == "__main__":
    sys.exit(main())
