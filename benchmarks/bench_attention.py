"""Attention on the CPU, softmax(Q K^T / sqrt(d)) V, fp32, in one process on
the same inputs (issue 31, item 2; the GPU rows are bench_cuda.py's):

* ``lt_mlir default``: the frontend's schedule of attention as a loop_tool
  user writes it (``programs.attention``): a row of scores, its maximum,
  one loop summing ``E`` and ``E @ V``;
* ``lt_mlir flash``: ``recipes.flash_attention`` (``lt-online-softmax`` on
  tiles of keys, the scores a tile at a time, vectorized across the keys
  of a tile from K copied transposed once a head, heads on every core), by
  passes only, from both ways of writing it: ``(E * V).sum(j) /
  E.sum(j)`` (one loop over a tile's keys computes each exponential and
  adds its row of V: scalar exponentials) and the softmax, then ``@ V``
  (the exponentials a vector loop of their own; ``lt-factor`` takes the
  division out of the sum first);
* NumPy as written (``S = Q @ K.T``, the softmax, ``P @ V``: two OpenBLAS
  GEMMs and an n x n matrix), and torch's
  ``scaled_dot_product_attention`` on the CPU when torch is installed.

Every result is checked against float64 first; times are medians of
``block_medians`` (blocks that alternate, a pause before each).

    .venv/bin/python benchmarks/bench_attention.py [--heads 4 --seq 1024 --dim 64 --tile 32]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lt_mlir import Schedule, programs, recipes  # noqa: E402
from lt_mlir.runtime.timing import block_medians  # noqa: E402


def numpy_attention(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) * np.float32(1 / np.sqrt(q.shape[-1]))
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    return s @ v


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--tile", type=int, nargs="+", default=[64])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    h, n, d = args.heads, args.seq, args.dim
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((h, n, d)).astype(np.float32) for _ in range(3))
    ref = numpy_attention(*(a.astype(np.float64) for a in (q, k, v)))
    fns = {"NumPy": lambda: numpy_attention(q, k, v)}
    try:
        import torch

        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        fns["torch SDPA (CPU)"] = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    except ImportError:
        pass
    text = programs.attention(n, n, d, d, heads=h)
    normalised = programs.attention(n, n, d, d, heads=h, normalised=True)
    kernels = {"lt_mlir default": Schedule(text).compile()}
    for tile in args.tile:
        kernels[f"lt_mlir flash, (E * V).sum(j) / E.sum(j), tiles of {tile}, {os.cpu_count()} cores"] = recipes.flash_attention(
            Schedule(text), tile=tile, parallel=True).compile()
        kernels[f"lt_mlir flash, softmax then @ V, tiles of {tile}, {os.cpu_count()} cores"] = recipes.flash_attention(
            Schedule(normalised), tile=tile, parallel=True).compile()
    for name, kern in kernels.items():
        fns[name] = (lambda kern=kern: kern(q, k, v))
    for name, fn in fns.items():
        got = np.asarray(fn(), dtype=np.float64)
        err = np.abs(got - ref).max()
        if not err <= 1e-4 * max(1.0, np.abs(ref).max()):
            raise SystemExit(f"error: {name} differs from float64 NumPy by {err:.3g}")
    times = block_medians(fns, rounds=args.rounds)
    flops = 4 * h * n * n * d
    print(f"attention {h} heads x {n} x {n}, d {d}, fp32; host {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print("| variant | time | GFLOP/s | × NumPy |\n|---|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {t * 1e3:.2f} ms | {flops / t / 1e9:.1f} | {times['NumPy'] / t:.2f} |")


if __name__ == "__main__":
    main()
