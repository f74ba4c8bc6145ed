"""lt_mlir.search.model: the pre-trained cost model (LightGBM over
``space.feature_vector``, fitted by benchmarks/make_cost_dataset.py on the
kept dataset), its online updates, the ridge fallback without LightGBM,
and the within-batch Spearman it is judged by."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from lt_mlir import programs
from lt_mlir.schedule import Schedule
from lt_mlir.search import model as cost_model
from lt_mlir.search import space
from lt_mlir.search.model import CostModel, spearman, tied, within_batch_spearman

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dataset_script():
    spec = importlib.util.spec_from_file_location("make_cost_dataset", os.path.join(ROOT, "benchmarks", "make_cost_dataset.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records():
    return cost_model.load_records()


def _batches(records, programs_=None):
    out: dict = {}
    for r in records:
        if programs_ is None or r["program"] in programs_:
            out.setdefault(r["group"], []).append(r)
    return list(out.values())


def _schedule(text: str, moves: str) -> Schedule:
    s = space.replay(Schedule(text), [space.Move.parse(m) for m in moves.split()])
    assert s is not None, moves
    return s


# ------------------------------------------------------------ the figure


def test_tied_speedups_and_the_tied_spearman():
    """Speedups within the resolution of the one below them join its group
    (a chain), each group at its mean; the tied Spearman is SciPy's on them."""
    scipy_stats = pytest.importorskip("scipy.stats")
    np.testing.assert_allclose(tied([1.2, 1.0, 2.0, 1.21, 1.03], 0.05), [1.205, 1.015, 2.0, 1.205, 1.015])
    np.testing.assert_allclose(tied([1.0, 1.04, 1.08], 0.05), [1.04] * 3)  # 1.04 is within 5% of 1.0, 1.08 of 1.04
    np.testing.assert_allclose(tied([1.0, 1.04, 1.08], 0.0), [1.0, 1.04, 1.08])
    predicted, measured = [3.0, 2.0, 1.0, 0.5], [1.0, 1.01, 2.0, 4.0]
    assert within_batch_spearman([(predicted, measured)]) == pytest.approx(-1.0)
    expected = scipy_stats.spearmanr(predicted, [1.005, 1.005, 2.0, 4.0]).statistic
    assert within_batch_spearman([(predicted, measured)], resolution=0.05) == pytest.approx(expected)
    assert expected > -1.0


def test_within_batch_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0  # a constant prediction ranks nothing
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9487, abs=1e-4)  # ties share their rank
    batches = [([1, 2, 3], [1, 2, 3]), ([3, 2, 1], [1, 2, 3]), ([1, 2], [2, 1]), ([1, 2, 3], [5, 5, 5])]
    assert within_batch_spearman(batches) == pytest.approx(0.0)  # the pair and the all-equal batch are left out
    assert within_batch_spearman(batches[:1]) == pytest.approx(1.0)
    assert np.isnan(within_batch_spearman([([1, 2], [1, 2])]))


# ------------------------------------------------------------ the shipped model


def test_the_dataset_and_the_model_match_the_features(records):
    """The kept features are today's ``feature_vector`` of the kept moves,
    and the shipped model reads them by name; a change to the features
    needs ``make_cost_dataset.py --refeature`` (which retrains)."""
    pytest.importorskip("lightgbm")
    assert os.path.getsize(cost_model.MODEL_PATH) < 1 << 20
    booster = cost_model.load()
    assert booster.feature_name() == space.FEATURE_NAMES
    assert all(len(r["features"]) == len(space.FEATURE_NAMES) for r in records)
    script = _dataset_script()
    assert {r["program"] for r in records} <= set(script.PROGRAMS)
    assert set(cost_model.HELD_OUT_PROGRAMS) <= {r["program"] for r in records}
    rng = np.random.default_rng(0)
    for i in rng.choice(len(records), 12, replace=False):
        r = records[i]
        s = script.replay(Schedule(script.start_text(r["program"])), r)  # at the widths of the host that measured it
        np.testing.assert_allclose(space.feature_vector(s), r["features"], rtol=1e-3, atol=1e-3, err_msg=str(r["moves"]))


def test_the_shipped_model_ranks_programs_it_never_saw(records):
    """The model was trained without ``HELD_OUT_PROGRAMS`` (one program of
    each family but the element-wise one): on their recorded batches it
    ranks better than chance (make_cost_dataset.py printed 0.215 over every
    batch, 0.31 with speedups within 5% tied, 0.39 over the batches whose
    timing rounds agree, 76 % of the resolved pairs ordered right)."""
    pytest.importorskip("lightgbm")
    model = CostModel.pretrained()
    assert model.ready and not model.problem
    held = _batches(records, cost_model.HELD_OUT_PROGRAMS)
    assert len(held) >= 24
    predicted = [(model.predict([np.asarray(r["features"]) for r in b]), [cost_model.target(r["speedup"]) for r in b]) for b in held]
    assert within_batch_spearman(predicted) > 0.2
    right = pairs = 0
    for (p, _), batch in zip(predicted, held):
        for i in range(len(batch)):
            for j in range(i + 1, len(batch)):
                d = np.sign(np.subtract(batch[i]["speedups"], batch[j]["speedups"]))
                if abs(d.sum()) == len(d):  # every timing round agrees which is faster
                    pairs += 1
                    right += np.sign(p[i] - p[j]) == d[0]
    assert pairs > 100 and right / pairs > 0.65


def test_the_shipped_model_orders_the_obvious():
    """Orders a person knows (sizes the dataset does not hold): matmul with
    n innermost (B and C contiguous, LLVM vectorizes it) over the default
    k innermost (a reduction chain, B strided); a row sum's inner loop
    vectorized over the plain one, and over one split too short to fill a
    vector."""
    pytest.importorskip("lightgbm")
    model = CostModel.pretrained()
    mm = programs.matmul(128, 128, 128)
    default, interchanged = Schedule(mm), _schedule(mm, "swap_up@L2")
    assert interchanged.loop_tree.splitlines()[-5].strip() == "for n in 128 : L3"  # for m { init; for k { for n } }
    p = model.predict([space.feature_vector(default), space.feature_vector(interchanged)])
    assert p[1] > p[0]
    rs = programs.row_sum(128, 1024)
    plain, vectorized, short = Schedule(rs), _schedule(rs, "vectorize_8@L1"), _schedule(rs, "vectorize_8@L1 split_4@L1")  # AVX2 lanes on any host
    p = model.predict([space.feature_vector(s) for s in (plain, vectorized, short)])
    assert p[1] > p[0] and p[1] > p[2]
    assert list(model.rank([space.feature_vector(s) for s in (plain, vectorized, short)]))[0] == 1


# ------------------------------------------------------------ learning online


def _synthetic(records, n_batches: int, seed: int):
    """Batches of real feature vectors with a made-up speedup the
    pre-trained model knows nothing of: faster the fewer loops."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_batches):
        rows = rng.choice(len(records), 8, replace=False)
        xs = [np.asarray(records[i]["features"], float) for i in rows]
        loops = space.FEATURE_NAMES.index("loops")
        batches.append((xs, [float(np.exp(-0.3 * x[loops])) for x in xs]))
    return batches


@pytest.mark.parametrize("pretrained", [True, False])
def test_online_fit_learns_the_search_s_own_ranking(records, pretrained):
    """Measurements that disagree with the pre-trained ranking win after a
    few batches (fit boosts trees on them from its scores); from nothing,
    the model is ready once it has ``min_samples``."""
    pytest.importorskip("lightgbm")
    model = CostModel.pretrained() if pretrained else CostModel()
    assert model.ready == pretrained
    train, test = _synthetic(records, 12, 0), _synthetic(records, 10, 1)

    def score():
        return within_batch_spearman([(model.predict(xs), ys) for xs, ys in test])

    before = score() if pretrained else 0.0
    for i, (xs, ys) in enumerate(train):
        for x, y in zip(xs, ys):
            model.add(x, y, group=i)
        model.fit()
        assert model.ready
    after = score()
    assert after > 0.8 and after > before + 0.3
    assert model._online.num_trees() <= cost_model.ONLINE_ROUNDS  # a fit's cost is bounded


def test_fit_is_deterministic_and_groups_default_to_the_batch(records):
    pytest.importorskip("lightgbm")
    models = [CostModel.pretrained(), CostModel.pretrained()]
    for xs, ys in _synthetic(records, 4, 2):
        for m in models:
            for x, y in zip(xs, ys):
                m.add(x, y)  # no group: the samples since the last fit
            m.fit()
    probe = [np.asarray(r["features"], float) for r in records[:20]]
    np.testing.assert_array_equal(models[0].predict(probe), models[1].predict(probe))
    assert len(set(models[0].groups)) == 4


def test_a_model_for_other_features_is_set_aside():
    pytest.importorskip("lightgbm")
    model = CostModel.pretrained()
    assert model.ready
    assert list(model.predict([np.zeros(5), np.ones(5)])) == [0.0, 0.0]
    assert "not 5" in model.problem and not model.ready
    missing = CostModel(pretrained="/nonexistent/cost_model.txt")
    assert not missing.ready and "no pre-trained cost model" in missing.problem


# ------------------------------------------------------------ without LightGBM


def test_without_lightgbm_the_ridge_model_ranks(monkeypatch):
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # import lightgbm raises ImportError
    model = CostModel.pretrained()
    assert not model.ready and "LightGBM is not installed" in model.problem
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(6) for _ in range(40)]
    speed = lambda x: float(np.exp(0.5 * x[0] - 0.3 * x[3]))  # noqa: E731
    assert list(model.rank(xs[:3])) == [0, 1, 2] and not model.predict(xs[:3]).any()
    for x in xs[:7]:
        model.add(x, speed(x))
    model.fit()
    assert not model.ready  # fewer than min_samples
    for x in xs[7:30]:
        model.add(x, speed(x))
    model.fit()
    assert model.ready and model.weights is not None
    assert spearman(model.predict(xs[30:]), [speed(x) for x in xs[30:]]) > 0.9
    with pytest.raises(RuntimeError, match="LightGBM"):
        cost_model.train([], space.FEATURE_NAMES)


# ------------------------------------------------------------ the IR's cycle estimate (lt-tune --model ir)


def test_the_cycle_estimate_orders_the_obvious():
    """``CostModel.cycle_estimate``'s ranking before it has learnt anything:
    the IR's cycle estimate against the start's (``space.ir_feature_vector``
    of the start itself: ratios of 0, a predicted speedup of 1); it orders
    the cases ``test_the_shipped_model_orders_the_obvious`` does."""
    model = CostModel.cycle_estimate(space.IR_FEATURE_NAMES)
    assert model.ready and not model.problem
    mm = programs.matmul(128, 128, 128)
    start = space.ir_counts_of(Schedule(mm))
    x = space.ir_feature_vector(start, start)
    assert len(x) == len(space.IR_FEATURE_NAMES) and not np.any(x[: x.size - 3])  # the loops' counts are not ratios
    interchanged = space.ir_feature_vector(space.ir_counts_of(_schedule(mm, "swap_up@L2")), start)
    p = model.predict([x, interchanged])
    assert p[0] == 0.0 and p[1] > 0.0
    rs = programs.row_sum(128, 1024)
    start = space.ir_counts_of(Schedule(rs))
    xs = [space.ir_feature_vector(space.ir_counts_of(s), start)
          for s in (Schedule(rs), _schedule(rs, "vectorize_8@L1"), _schedule(rs, "vectorize_8@L1 split_4@L1"))]
    p = model.predict(xs)
    assert p[1] > p[0] and p[1] > p[2]
    assert model.predict([space.ir_feature_vector(None, start)])[0] == cost_model.target(None)  # did not lower: a failure


def test_code_that_does_not_lower_has_missing_ir_features():
    # A's type no longer the one its loads name: the text does not verify
    bad = SimpleNamespace(text=programs.matmul(8, 8, 8).replace("memref<8x8xf32>", "memref<8x4xf32>", 1), entry=None)
    assert space.ir_counts_of(bad) is None
    assert np.isnan(space.ir_feature_vector(None, space.ir_counts_of(Schedule(programs.matmul(8, 8, 8))))).all()


def test_the_cycle_estimate_ranks_measured_batches(records):
    """``lt-tune --model ir``'s ranking before it has learnt anything, on the
    kept dataset's batches of ``HELD_OUT_PROGRAMS``: each schedule lowered
    and optimised for the CPU that measured it (``DEFAULT_CPU``, whatever
    this host is) and counted.  make_cost_dataset.py --ir printed 0.287
    over these batches (0.379 over every program's), 79% of the resolved
    pairs ordered right; 0.206 and 74% before a vector exp was counted as
    the code of that host's JIT runs it (libmvec's call a register where lt
    vectorised it, libm's a lane where LLVM did), 0.187 before the counter
    split wide vectors into registers and found loops from the control flow."""
    script = _dataset_script()
    options = script.CompileOptions(cpu=script.DEFAULT_CPU)
    held = [b for b in _batches(records, cost_model.HELD_OUT_PROGRAMS) if all(r["correct"] and r["speedup"] for r in b) and len(b) >= 3]
    assert len(held) >= 24
    starts = {p: space.ir_counts_of(Schedule(script.start_text(p)), options=options) for p in cost_model.HELD_OUT_PROGRAMS}
    predicted, right, pairs = [], 0, 0
    for batch in held:
        counts = [space.ir_counts_of(script.replay(Schedule(script.start_text(r["program"])), r), options=options) for r in batch]
        assert all(c is not None for c in counts)
        p = [starts[batch[0]["program"]].cycles / c.cycles for c in counts]
        predicted.append((p, [r["speedup"] for r in batch]))
        got, k = cost_model.resolved_pairs(p, [r["speedups"] for r in batch])
        right, pairs = right + got, pairs + k
    rho = within_batch_spearman(predicted)
    assert rho > 0.25, rho
    assert pairs > 100 and right / pairs > 0.75, (right, pairs)


def test_the_cycle_estimate_ranks_unseen_programs_as_a_distinct_code_search_measures_them():
    """The issue's figure: ``HELD_OUT_PROGRAMS`` (which neither the lt
    model nor the estimate's two rates were fitted on) in batches as
    ``lt-tune --distinct-code`` measures them -- each optimised code once,
    the start's left out -- measured on one host with the code compiled for
    its CPU (``unseen_dataset.jsonl``, ``make_cost_dataset.py --unseen
    --distinct``, seeds 0 and 1).  Compiled here for that CPU, every batch
    holds distinct code, and the cycle estimate ranks the batches 0.623
    (make_cost_dataset.py printed; 90% of bootstrap resamples of the batches
    0.541-0.698), 83.5% of the resolved pairs right; the lt model 0.189."""
    script = _dataset_script()
    records = cost_model.load_records(cost_model.UNSEEN_DATASET_PATH)
    assert {r["program"] for r in records} == set(cost_model.HELD_OUT_PROGRAMS)
    held = [b for b in _batches(records) if all(r["correct"] and r["speedup"] for r in b) and len(b) >= 3]
    assert len(held) >= 48
    starts = {p: Schedule(script.start_text(p)) for p in cost_model.HELD_OUT_PROGRAMS}
    predicted, right, pairs = [], 0.0, 0
    for batch in held:
        options = script.CompileOptions(cpu=batch[0]["cpu"])
        start = space.ir_counts_of(starts[batch[0]["program"]], options=options)
        codes = [space.optimized_ir(script.replay(starts[r["program"]], r), options=options) for r in batch]
        assert None not in codes
        assert len({script.code_key(c[0]) for c in codes}) == len(batch), batch[0]["group"]  # each code once
        p = [start.cycles / space.ir_counts_of(None, code=c).cycles for c in codes]
        predicted.append((p, [r["speedup"] for r in batch]))
        got, k = cost_model.resolved_pairs(p, [r["speedups"] for r in batch])
        right, pairs = right + got, pairs + k
    rho = within_batch_spearman(predicted)
    assert rho > 0.55, rho
    assert pairs > 600 and right / pairs > 0.8, (right, pairs)


def test_resolved_pairs_counts_only_pairs_every_round_orders_alike():
    """Three candidates timed in two rounds: a and b swap places between
    rounds (not resolved); c is below both in each (two resolved pairs).
    Predicted a > c, b == c: one right, one tie (half)."""
    rounds = [[2.0, 1.0], [1.0, 2.0], [0.5, 0.5]]
    assert cost_model.resolved_pairs([3.0, 1.0, 1.0], rounds) == (1.5, 2)
    assert cost_model.resolved_pairs([0.0, 0.0, 1.0], rounds) == (0.0, 2)
