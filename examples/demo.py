"""The main job: build an lt program, lower it, run it natively, check it.

The blog's clipped matmul, C[m, n] = sum_k max(A[m, k] * B[k, n], 0), at
33 x 48 x 4096 with m split by 8 (33 = 4 r 1 over 8) and n split by 16.
"""

import time

import numpy as np

import lt_mlir
from lt_mlir import programs
from lt_mlir.runtime.timing import interleaved_medians


def main():
    m, n, k = 33, 48, 4096
    src = programs.matmul(m, n, k, m_blocks=[8], n_blocks=[16], clipped=True)
    print("loop tree:")
    print(lt_mlir.loop_tree(src))

    start = time.perf_counter()
    kernel = lt_mlir.compile(src)
    print(f"\ncompiled {kernel} in {1e3 * (time.perf_counter() - start):.1f} ms")

    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = kernel(A, B)
    reference = np.maximum(A.astype(np.float64)[:, :, None] * B.astype(np.float64)[None], 0).sum(1)
    error = np.abs(C - reference).max() / np.abs(reference).max()
    print(f"max relative error vs NumPy (float64): {error:.2e}")
    assert error < 1e-5, "lt_mlir disagrees with NumPy"

    out = np.empty_like(C)
    t = interleaved_medians(
        {"ours": lambda: kernel(A, B, out), "numpy": lambda: np.maximum(A[:, :, None] * B[None], 0).sum(1)},
        repeat=20,
    )
    ours, theirs = 1e3 * t["ours"], 1e3 * t["numpy"]
    print(f"lt_mlir {ours:.3f} ms, NumPy (materialised) {theirs:.3f} ms: {theirs / ours:.1f}x")


if __name__ == "__main__":
    main()
