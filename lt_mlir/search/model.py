"""The learned cost model: a ridge regression from a schedule's features
(``space.feature_vector``: pooled log strides, sizes and annotations of the
outer loops) to log(speedup over the start), refit after every batch of
measurements.  It only ranks: a strategy asks it which of many candidates
to measure, so a wrong guess costs a measurement, never a wrong result."""

from __future__ import annotations

import numpy as np


class CostModel:
    def __init__(self, ridge: float = 1.0, min_samples: int = 8):
        self.ridge, self.min_samples = ridge, min_samples
        self.xs: list[np.ndarray] = []
        self.ys: list[float] = []
        self.weights: np.ndarray | None = None

    @property
    def ready(self) -> bool:
        return self.weights is not None

    def add(self, x: np.ndarray, speedup: float) -> None:
        """One measurement (a failed candidate counts as 10x slower)."""
        self.xs.append(np.asarray(x, float))
        self.ys.append(float(np.log(max(speedup, 1e-3))))

    def fit(self) -> None:
        if len(self.ys) < self.min_samples:
            return
        x = np.stack(self.xs)
        y = np.asarray(self.ys)
        self.mean, self.scale = x.mean(0), x.std(0) + 1e-9
        z = (x - self.mean) / self.scale
        a = z.T @ z + self.ridge * np.eye(z.shape[1])
        self.weights = np.linalg.solve(a, z.T @ (y - y.mean()))
        self.bias = y.mean()

    def predict(self, xs: list[np.ndarray]) -> np.ndarray:
        """Predicted log speedups (0 for all before the model is fitted)."""
        if not self.ready or not xs:
            return np.zeros(len(xs))
        z = (np.stack(xs) - self.mean) / self.scale
        return z @ self.weights + self.bias

    def rank(self, xs: list[np.ndarray]) -> np.ndarray:
        """Indices of ``xs``, most promising first (original order before fitting)."""
        if not self.ready:
            return np.arange(len(xs))
        return np.argsort(-self.predict(xs), kind="stable")
