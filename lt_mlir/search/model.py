"""The learned cost model: it ranks a batch of candidate schedules so that a
strategy measures the most promising first.  It only ranks: a wrong guess
costs a measurement, never a wrong result.

The model: gradient-boosted trees (LightGBM; TVM's Ansor and MetaSchedule
use XGBoost the same way) over ``space.feature_vector``, features that mean
the same for every program (runtime loop trip counts, strides, vector
lanes, unrolled copies, parallel work, reduction chains, footprints against
L1/L2, a rough cycle estimate: ``analysis.cost_features``).

* Pre-trained: ``data/cost_model.txt`` was fitted on a dataset of measured
  schedules of the program families of ``lt_mlir.programs``
  (``data/cost_dataset.jsonl``, made and kept by
  ``benchmarks/make_cost_dataset.py``, which also trains and evaluates
  it): a robust (Huber) regression of each batch's log speedups around the
  batch's median, so that what it learns is how candidates of one batch
  compare, not how fast one program is; the features whose effect has one
  direction whatever the program (``MONOTONE``) are constrained to it,
  which is what carries over to programs it never saw.
  ``CostModel.pretrained()`` loads it: a fresh search ranks from its
  first batch.
* Online: after each batch (``fit``), small trees are boosted on this
  search's own measurements (log speedup over the start) from the
  pre-trained scores plus an offset (LightGBM's ``init_score``): the
  pre-trained ranking is the starting point of every refit and stays where
  the search's measurements agree with it; the trees correct it where they
  do not.  A fit boosts at most ``ONLINE_ROUNDS`` trees on this search's
  samples only (milliseconds for hundreds of samples; nothing from the
  dataset is read at run time).

``predict`` returns scores on the natural-log-speedup scale: log speedup
over the start once the model has seen this search's measurements, and
before that the pre-trained estimate relative to the median candidate of
a batch (only differences between candidates mean anything then).

``CostModel()`` has no pre-trained model: the online trees start from
nothing once ``min_samples`` measurements have come in (``ready`` is False
until then).  Without LightGBM (an optional extra, ``tune``) the model is
the ridge regression lt-tune used before, on this search's measurements
only, also ready after ``min_samples``; ``pretrained()`` then has nothing
to load.  A shipped model that cannot be read, or was made for other
features, is ignored the same way (``CostModel.problem`` says why).

``within_batch_spearman`` is the figure the model is judged by: the mean,
over batches of at least 3 measured candidates, of the Spearman rank
correlation between predicted and measured speedups.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
MODEL_PATH = os.path.join(DATA, "cost_model.txt")
DATASET_PATH = os.path.join(DATA, "cost_dataset.jsonl")
# the held-out programs measured as a --distinct-code search measures them (make_cost_dataset.py --unseen --distinct)
UNSEEN_DATASET_PATH = os.path.join(DATA, "unseen_dataset.jsonl")
FAILED_SPEEDUP = 0.1  # what a failed or wrong candidate counts as (the tuner's convention)
# programs of the dataset the shipped model never saw: tests/test_cost_model.py ranks their batches
HELD_OUT_PROGRAMS = ("matmul:48,80,40", "softmax:16,512", "conv1d:4096,5", "row_max:32,1024")

# The pre-trained model (benchmarks/make_cost_dataset.py trains it with these): small,
# strongly regularised trees, chosen by held-out within-batch Spearman (leave one program
# out, leave one family out).
PARAMS = {
    "objective": "huber",
    "alpha": 0.5,  # errors past 0.5 (log speedup) count linearly: timings on a busy machine jump
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.5,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "verbosity": -1,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "seed": 0,
}
ROUNDS = 200
# What more of a feature does to the speed whatever the program (+1 faster, -1 slower):
# the pre-trained trees may only follow these directions.
MONOTONE = {
    "vector_lanes": 1, "autovec_share": 1, "inner_contiguous": 1, "log_accumulators": 1, "vector_trips": 1,
    "gathers": -1, "reduce_chain": -1, "inner_large_stride": -1, "l1_miss_rate": -1, "l2_miss_rate": -1,
    "est_total": -1, "est_chain": -1, "est_memory": -1, "est_loops": -1, "est_compute": -1,
}
# the online correction: few small, shrunk trees on this search's samples
ONLINE_PARAMS = {
    "objective": "regression",
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 4,
    "min_sum_hessian_in_leaf": 1e-3,
    "lambda_l2": 1.0,
    "min_data_in_bin": 1,
    "verbosity": -1,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "seed": 0,
}
ONLINE_ROUNDS = 60  # at most; and at most one tree for every two samples


def _lightgbm():
    """The lightgbm module, or None when it is not installed (or broken)."""
    try:
        import lightgbm
    except Exception:  # noqa: BLE001 - ImportError, or a broken installation (a missing libgomp)
        return None
    return lightgbm


# ------------------------------------------------------------ the figure


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 0, ties sharing their mean rank."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    values = x[order]
    start = 0
    for end in range(1, len(x) + 1):
        if end == len(x) or values[end] != values[start]:
            ranks[order[start:end]] = (start + end - 1) / 2
            start = end
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (ties averaged); 0 when either is constant."""
    ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else 0.0


def tied(measured: Sequence[float], resolution: float) -> np.ndarray:
    """``measured`` (positive: speedups or times) with the values that the
    measurement cannot tell apart made equal: sorted, each value within
    ``resolution`` (relative: 0.05 is 5%) of the one before it joins its
    group (a chain), and a group's values are replaced by their mean.  A
    ranking scored against it neither gains nor loses by how it orders
    candidates that differ by less than the timing's noise."""
    y = np.asarray(measured, float)
    out = y.copy()
    order = np.argsort(y, kind="stable")
    start = 0
    for k in range(1, len(y) + 1):
        if k == len(y) or y[order[k]] > y[order[k - 1]] * (1 + resolution):
            out[order[start:k]] = y[order[start:k]].mean()
            start = k
    return out


def within_batch_spearman(batches: Iterable[tuple[Sequence[float], Sequence[float]]], min_size: int = 3, resolution: float = 0.0) -> float:
    """The mean over ``batches`` -- (predicted, measured) pairs of sequences,
    one entry a candidate -- of their Spearman correlation; batches of
    fewer than ``min_size`` candidates, or whose measurements are all
    equal, are left out.  NaN when none is left.  ``resolution``: the
    measured values (positive) are first ``tied`` at that relative
    difference."""
    scores = []
    for predicted, measured in batches:
        predicted, measured = np.asarray(predicted, float), np.asarray(measured, float)
        if resolution > 0:
            measured = tied(measured, resolution)
        if len(measured) < min_size or np.ptp(measured) == 0:
            continue
        scores.append(spearman(predicted, measured))
    return float(np.mean(scores)) if scores else float("nan")


def resolved_pairs(predicted: Sequence[float], rounds: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(pairs ranked right, pairs) of one batch: a pair counts when every
    timing round (``rounds``: a candidate's speedups, one a round) orders
    its two candidates the same way; it is right when ``predicted`` orders
    them so too (a tie in ``predicted``: half, a coin's chance)."""
    right, pairs = 0.0, 0
    for i in range(len(rounds)):
        for j in range(i + 1, len(rounds)):
            d = np.sign(np.subtract(rounds[i], rounds[j]))
            if abs(d.sum()) == len(d):
                pairs += 1
                right += 1.0 if np.sign(predicted[i] - predicted[j]) == d[0] else 0.5 if predicted[i] == predicted[j] else 0.0
    return right, pairs


# ------------------------------------------------------------ the dataset


def target(speedup: float | None) -> float:
    """What the model learns: the natural log of the speedup (a failed or
    wrong candidate: ``FAILED_SPEEDUP``)."""
    return float(np.log(max(speedup, 1e-3))) if speedup else float(np.log(FAILED_SPEEDUP))


def load_records(path: str = DATASET_PATH) -> list[dict]:
    """The records of a cost dataset (one JSON object a line)."""
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _batches(records: list[dict]) -> list[list[dict]]:
    by_group: dict = {}
    for r in records:
        by_group.setdefault(r["group"], []).append(r)
    return list(by_group.values())


def _targets(batch: list[dict]) -> list[float]:
    return [target(r["speedup"] if r.get("correct", True) else None) for r in batch]


def train(records: list[dict], feature_names: Sequence[str], rounds: int = ROUNDS):
    """A pre-trained model (a LightGBM ``Booster``) from dataset records:
    ``PARAMS`` on each record's log speedup less its batch's (``group``)
    median, the features of ``MONOTONE`` (``feature_names``: the names of
    the columns) constrained to their direction.  Needs LightGBM."""
    lgb = _lightgbm()
    if lgb is None:
        raise RuntimeError("training the cost model needs LightGBM (pip install lightgbm)")
    x, y = [], []
    for batch in _batches(records):
        t = np.asarray(_targets(batch))
        x += [r["features"] for r in batch]
        y += list(t - np.median(t))
    params = dict(PARAMS, monotone_constraints=[MONOTONE.get(name, 0) for name in feature_names])
    data = lgb.Dataset(np.asarray(x, float), np.asarray(y), feature_name=list(feature_names), free_raw_data=True)
    return lgb.train(params, data, rounds)


def save(booster, path: str = MODEL_PATH) -> None:
    """The booster in LightGBM's text format."""
    booster.save_model(path)


def load(path: str = MODEL_PATH):
    """A saved booster (raises when it cannot be read, or without LightGBM)."""
    lgb = _lightgbm()
    if lgb is None:
        raise RuntimeError("LightGBM is not installed")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    return lgb.Booster(model_file=path)


# ------------------------------------------------------------ the model


class CycleEstimate:
    """The IR's cycle estimate (``lowering.ir_counts``) as a pre-trained
    model of ``space.IR_FEATURE_NAMES`` vectors: the predicted log speedup is
    ln(start cycles / cycles), nothing learnt; code that did not lower (NaN
    features) counts as a failed candidate.  Trained trees on the same
    counts ranked programs they never saw worse than it
    (``make_cost_dataset.py --ir``)."""

    def __init__(self, names: Sequence[str], column: str = "ir_cycles"):
        self.names, self.column = list(names), list(names).index(column)

    def num_feature(self) -> int:
        return len(self.names)

    def predict(self, x: np.ndarray) -> np.ndarray:
        cycles = np.asarray(x, float)[:, self.column]  # log2 of cycles over the start's
        return np.where(np.isnan(cycles), target(None), -np.log(2.0) * np.nan_to_num(cycles))


class CostModel:
    """Ranks candidate schedules by their ``space.feature_vector``.

    ``CostModel.pretrained()`` (``pretrained=True``) starts from the shipped
    pre-trained model: ``ready`` at once; ``pretrained`` a path: that model
    file; ``CostModel()`` from nothing, ready after ``min_samples``
    measurements (as lt-tune's model always was).  The tuner calls ``add``
    for every measurement, ``fit`` after every batch, and ``rank`` and
    ``predict`` on new candidates."""

    def __init__(self, pretrained: bool | str = False, min_samples: int = 8, ridge: float = 1.0):
        self.min_samples, self.ridge = min_samples, ridge
        self.xs: list[np.ndarray] = []
        self.ys: list[float] = []  # natural log speedups
        self.groups: list = []
        self.lightgbm = _lightgbm() is not None
        self.problem = "" if self.lightgbm else "LightGBM is not installed: the ridge model, no pre-trained ranking"
        self.base = None  # the pre-trained booster
        if pretrained and self.lightgbm:
            try:
                self.base = load(MODEL_PATH if pretrained is True else pretrained)
            except Exception as e:  # noqa: BLE001 - a missing or unreadable model: start from nothing
                self.problem = f"no pre-trained cost model ({e})"
        self._offset: float | None = None  # this search's level over the pre-trained scores (after a fit)
        self._online = None  # the booster of this search's residuals
        self.weights: np.ndarray | None = None  # the ridge fallback's
        self._fitted = 0  # samples the current fit has seen
        self._batch = 0  # the implicit group of samples added without one: those since the last fit

    @classmethod
    def pretrained(cls, path: str | None = None) -> "CostModel":
        """A model that starts from the shipped pre-trained ranking (or the model file ``path``)."""
        return cls(pretrained=path or True)

    @classmethod
    def cycle_estimate(cls, names: Sequence[str]) -> "CostModel":
        """A model of ``space.IR_FEATURE_NAMES`` (``names``) vectors that
        starts from the IR's cycle estimate (``CycleEstimate``), corrected
        by the search's own measurements as the pre-trained one is (without
        LightGBM, the estimate alone: the ridge fallback cannot read the NaN
        features of code that did not lower)."""
        model = cls()
        model.base, model.problem = CycleEstimate(names), ""
        if not model.lightgbm:
            model.min_samples = 1 << 62
        return model

    @property
    def ready(self) -> bool:
        """Whether ``rank`` ranks: the pre-trained model, or enough samples."""
        return self.base is not None or self._offset is not None or self.weights is not None

    def _check(self, width: int) -> None:
        """Drop a pre-trained model made for another feature vector."""
        if self.base is not None and width != self.base.num_feature():
            self.problem = f"the pre-trained model reads {self.base.num_feature()} features, not {width}: not used"
            self.base = None

    # ------------------------------------------------------------ learning
    def add(self, x: np.ndarray, speedup: float, group=None) -> None:
        """One measurement: its features and its speedup over the start (a
        failed candidate -- the tuner passes ``FAILED_SPEEDUP``; None, 0 or
        NaN here -- counts as ``FAILED_SPEEDUP``).  ``group``: the batch it
        was measured in (default: the samples added since the last
        ``fit``)."""
        x = np.asarray(x, float)
        self._check(x.shape[0])
        self.xs.append(x)
        self.ys.append(target(speedup if speedup and speedup > 0 else None))
        self.groups.append(("fit", self._batch) if group is None else ("given", group))

    def fit(self) -> None:
        """Learn from every sample added so far (nothing to do when none is new)."""
        self._batch += 1
        if len(self.ys) == self._fitted:
            return
        self._fitted = len(self.ys)
        x, y = np.stack(self.xs), np.asarray(self.ys)
        if not self.lightgbm:
            if len(y) >= self.min_samples:
                self._fit_ridge(x, y)
            return
        if self.base is None and len(y) < self.min_samples:
            return
        prior = self.base.predict(x) if self.base is not None else np.zeros(len(y))
        self._offset = float(np.mean(y - prior))
        rounds = min(ONLINE_ROUNDS, len(y) // 2)
        if rounds < 1:
            return
        lgb = _lightgbm()
        data = lgb.Dataset(x, y, init_score=prior + self._offset, free_raw_data=True, params={"verbosity": -1, "min_data_in_bin": 1})
        self._online = lgb.train(ONLINE_PARAMS, data, rounds)

    def _fit_ridge(self, x: np.ndarray, y: np.ndarray) -> None:
        self.mean, self.scale = x.mean(0), x.std(0) + 1e-9
        z = (x - self.mean) / self.scale
        a = z.T @ z + self.ridge * np.eye(z.shape[1])
        self.weights = np.linalg.solve(a, z.T @ (y - y.mean()))
        self.bias = y.mean()

    # ------------------------------------------------------------ ranking
    def predict(self, xs: list[np.ndarray]) -> np.ndarray:
        """Scores of feature vectors ``xs``, higher = faster, as natural-log
        speedups (module docstring); zeros before the model is ready."""
        if not xs:
            return np.zeros(0)
        x = np.stack([np.asarray(v, float) for v in xs])
        self._check(x.shape[1])
        if not self.ready:
            return np.zeros(len(xs))
        if self.weights is not None:
            return (x - self.mean) / self.scale @ self.weights + self.bias
        out = self.base.predict(x) if self.base is not None else np.zeros(len(x))
        if self._offset is not None:
            out = out + self._offset
        if self._online is not None:
            out = out + self._online.predict(x)
        return out

    def rank(self, xs: list[np.ndarray]) -> np.ndarray:
        """Indices of ``xs``, most promising first (their order before the model is ready)."""
        if not self.ready:
            return np.arange(len(xs))
        return np.argsort(-self.predict(xs), kind="stable")
