"""The main job: build an lt program, schedule it, lower it, run it natively,
check it against NumPy.

The blog's clipped matmul, C[m, n] = sum_k max(A[m, k] * B[k, n], 0), at
33 x 48 x 4096: first as written (m split by 4: 33 = 8 r 1 over 4), then
with a schedule that keeps a 4 x 48 tile of C in vector registers.
"""

import time

import numpy as np

import lt_mlir
from lt_mlir import programs
from lt_mlir.runtime.timing import interleaved_medians

SCHEDULE = [
    "lt-swap{loop=2}",  # n <-> k: C's initialisation keeps its own n loop
    "lt-distribute{loop=1}",  # m' over {init} and {k nest}
    "lt-swap{loop=3}",  # m' <-> k
    "lt-vectorize{loop=5 width=16}",  # n as 16-lane vectors
    "lt-unroll{loop=5 factor=0}",
    "lt-unroll{loop=4 factor=0}",
]


def main():
    m, n, k = 33, 48, 4096
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    reference = np.maximum(A.astype(np.float64)[:, :, None] * B.astype(np.float64)[None], 0).sum(1)

    schedule = lt_mlir.Schedule(programs.matmul(m, n, k, m_blocks=[4], clipped=True))
    kernels = {}
    for label in ("as written", "scheduled"):
        if label == "scheduled":
            for step in SCHEDULE:
                schedule.apply(step)
            print(f"schedule: {schedule.pipeline}")
        print(f"loop tree ({label}):\n{schedule.loop_tree}")
        start = time.perf_counter()
        kernel = schedule.compile()
        print(f"compiled in {1e3 * (time.perf_counter() - start):.1f} ms: {kernel}")
        C = kernel(A, B)
        error = np.abs(C - reference).max() / np.abs(reference).max()
        print(f"max relative error vs NumPy (float64): {error:.2e}\n")
        assert error < 1e-5, "lt_mlir disagrees with NumPy"
        kernels[label] = kernel

    out = np.empty((m, n), np.float32)
    t = interleaved_medians(
        {
            "as written": lambda: kernels["as written"](A, B, out),
            "scheduled": lambda: kernels["scheduled"](A, B, out),
            "NumPy": lambda: np.maximum(A[:, :, None] * B[None], 0).sum(1),
        },
        repeat=20,
    )
    for label, sec in t.items():
        print(f"{label:11s} {sec * 1e3:8.3f} ms   {t['NumPy'] / sec:6.1f}x NumPy's speed")
    print(f"({schedule.flops() / 1e6:.1f} MFLOP per call)")


if __name__ == "__main__":
    main()
