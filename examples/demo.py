"""The main job: a loop_tool program on lt_mlir, scheduled, run, checked.

The blog's clipped matmul, C[m, n] = sum_k max(A[m, k] * B[k, n], 0), at
33 x 48 x 4096, written with the named-dimension frontend.  It runs first
with loop_tool's default schedule, then with a schedule (the same moves as
loop_tool's UI, as lt passes, from ``lt_mlir.recipes.register_tile``) that
keeps a tile of C in vector registers, sized for this CPU's vector width.  Both are checked against NumPy and timed side by side.
Last, the same program for an NVIDIA GPU: mapped to blocks and threads,
compiled to PTX, and run on the GPU if there is one (on the CPU, the GPU
lowering runs emulated).
"""

import time

import numpy as np

import lt_mlir as lt
from lt_mlir.recipes import register_tile
from lt_mlir.runtime.timing import interleaved_medians


def main():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((33, 4096)).astype(np.float32)
    B = rng.standard_normal((4096, 48)).astype(np.float32)
    reference = np.maximum(A.astype(np.float64)[:, :, None] * B.astype(np.float64)[None], 0).sum(1)

    s = lt.SymbolGenerator()
    a = lt.Tensor(A).to(s.m, s.k)
    b = lt.Tensor(B).to(s.k, s.n)
    c = (a * b).max(0.0).sum(s.k)  # lazy: nothing has run yet

    print(f"loop tree (loop_tool's default schedule):\n{c.loop_tree}")
    default = c.schedule
    start = time.perf_counter()
    result = c.numpy()
    print(f"compiled and ran in {1e3 * (time.perf_counter() - start):.1f} ms")
    check(result, reference)

    # split m into rows of the tile, give C's init its own loop, move k
    # outside the rows, tile n by 3 vectors, vectorize and unroll the tile:
    # split(0, rows).distribute(1).swap(3).split(5, 3 * W).swap(4).swap(3)
    # .vectorize(6, W).unroll(6).unroll(5), W = this CPU's vector width
    tuned = register_tile(c.schedule)
    c.set(tuned)
    print(f"\nschedule: {tuned.pipeline}\nloop tree:\n{c.loop_tree}")
    check(c.numpy(), reference)

    kernels = {"default schedule": default.compile(), "tuned schedule": tuned.compile()}
    out = np.empty((33, 48), np.float32)
    t = interleaved_medians(
        {
            **{name: (lambda k=k: k(A, B, out)) for name, k in kernels.items()},
            "NumPy": lambda: np.maximum(A[:, :, None] * B[None], 0).sum(1),
        },
        repeat=20,
    )
    print()
    for name, sec in t.items():
        print(f"{name:17s} {sec * 1e3:8.3f} ms   {t['NumPy'] / sec:6.1f}x NumPy's speed")
    print(f"({tuned.flops() / 1e6:.1f} MFLOP per call)")

    gpu = lt.Schedule(default.text).gpu_auto()  # loop_tool's default schedule, mapped
    print(f"\nfor a GPU ({gpu.pipeline}):\n{gpu.loop_tree}")
    kernel = gpu.compile(target="cuda")
    print(f"{kernel}: {len(kernel.ptx.splitlines())} lines of PTX, launches "
          + ", ".join(f"grid {l['grid']} x block {l['block']}" for l in kernel.meta["launches"]))
    from lt_mlir.runtime import cuda

    if not cuda.available():
        print("no CUDA device here: running the GPU lowering emulated on the CPU")
        kernel = gpu.compile(target="cuda-emulated")
    out[...] = np.nan
    kernel(A, B, out)
    check(out, reference)


def check(result, reference):
    error = np.abs(result - reference).max() / np.abs(reference).max()
    print(f"max relative error vs NumPy (float64): {error:.2e}")
    assert error < 1e-5, "lt_mlir disagrees with NumPy"


if __name__ == "__main__":
    main()
