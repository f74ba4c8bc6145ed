"""Fit and check the f32 erf polynomials of ``lt_mlir/lowering/erf.py``.

    .venv/bin/python benchmarks/fit_erf.py               # fit, print the coefficients, check a sample
    .venv/bin/python benchmarks/fit_erf.py --exhaustive  # check every positive float32 (a few minutes)

Two polynomials: erf(a)/a - 1 in a*a (degree 6) on [0, 1), erf(M2 + t)
(degree 12) on [1, B2).  The fits are least squares on 4,000 Chebyshev nodes in float64 (close to
minimax), rounded to float32.  The check evaluates the polynomials as the
lowering emits them (every step a fused multiply-add: float64 product and
sum, rounded once to float32; exact for an fma of float32 operands but for
the rare double rounding) against SciPy's float64 erf, in ulp of the
float32 result.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from scipy.special import erf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lt_mlir.lowering import erf as shipped  # noqa: E402

F32 = np.float32


def fma(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + np.asarray(c, np.float64)).astype(F32)


def horner(coefficients, t):
    acc = np.full_like(t, F32(coefficients[-1]))
    for c in coefficients[-2::-1]:
        acc = fma(acc, t, F32(c))
    return acc


def fit(fun, lo: float, hi: float, degree: int, nodes: int = 4000) -> np.ndarray:
    k = np.arange(nodes)
    x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    c, *_ = np.linalg.lstsq(np.vander(x, degree + 1, increasing=True), fun(x), rcond=None)
    return c.astype(F32).astype(np.float64)


def erf_over_a_minus_1(y):
    a = np.sqrt(y)
    return np.where(a > 0, erf(a) / np.where(a > 0, a, 1), 2 / np.sqrt(np.pi)) - 1


def model(x, p1, p2, m2, b1, b2):
    """The lowering's evaluation, in NumPy."""
    a = np.abs(x).astype(F32)
    with np.errstate(over="ignore", invalid="ignore"):
        y = (a * a).astype(F32)
        r1 = fma(a, horner(p1, y), a)
        r2 = horner(p2, (a - F32(m2)).astype(F32))
    r = np.where(a < F32(b1), r1, np.where(a >= F32(b2), F32(1), r2))
    return np.copysign(r, x).astype(F32)


def ulps(got, x):
    ref = erf(x.astype(np.float64))
    u = np.maximum(np.spacing(np.abs(ref).astype(F32)).astype(np.float64), np.finfo(F32).smallest_subnormal)
    return np.abs(got.astype(np.float64) - ref) / u


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exhaustive", action="store_true", help="check every positive float32 against the shipped coefficients")
    args = ap.parse_args()
    # b3: from there on every float's erf rounds to 1
    x = np.arange(F32(3.5).view(np.int32), F32(4.5).view(np.int32), dtype=np.int32).view(F32)
    b2 = x[np.nonzero(erf(x.astype(np.float64)).astype(F32) != 1)[0][-1] + 1]
    b1 = 1.0
    m2 = F32((b1 + float(b2)) / 2)
    p1 = fit(erf_over_a_minus_1, 0, b1 * b1, 6)
    p2 = fit(lambda t: erf(t + float(m2)), b1 - float(m2), float(b2) - float(m2), 12)
    print(f"B2 = {float(b2)!r}  M2 = {float(m2)!r}")
    for name, p in (("P1", p1), ("P2", p2)):
        print(f"{name} = ({', '.join(repr(float(c)) for c in p)})")
    same = np.array_equal(p1, shipped.P1) and np.array_equal(p2, shipped.P2) and float(b2) == shipped.B2 and float(m2) == shipped.M2
    print("the shipped coefficients are these" if same else "the shipped coefficients differ from this fit")
    coefficients = (shipped.P1, shipped.P2, shipped.M2, shipped.B1, shipped.B2)
    step = 1 if args.exhaustive else 101
    top = F32(np.inf).view(np.int32)
    worst, where = 0.0, 0.0
    for lo in range(0, int(top), 1 << 24):
        bits = np.arange(lo, min(lo + (1 << 24), int(top)), step, dtype=np.int32)
        x = bits.view(F32)
        e = ulps(model(x, *coefficients), x)
        if e.max() > worst:
            worst, where = float(e.max()), float(x[e.argmax()])
    print(f"{'every' if args.exhaustive else 'every 101st'} positive float32: largest error {worst:.3f} ulp at x = {where!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
