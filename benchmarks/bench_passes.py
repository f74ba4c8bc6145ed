"""Schedules built with the loop passes, against their peers in one run.

1. Clipped matmul C[m,n] = sum_k max(A[m,k]*B[k,n], 0) at 33x48x4096:
   lt_mlir with the schedule below, loop_tool 0.1.0 with its default
   schedule (if installed: `pip install loop-tool==0.1.0`, `make bench` does
   it), and NumPy's materialised expression.
2. Matmul 512^3: lt_mlir's schedule vs NumPy (OpenBLAS) throughput.
3. The speed-up lt-parallel gives on this machine's cores.
4. lt-parallel over a reduced dim (``k``), as a newcomer writes it: matmul
   64x96x128 (``k`` innermost, too little work a run: it stays on one
   thread, no slower than serial) and the clipped matmul's default schedule
   (``k`` per row of C: each thread sums its chunk into a private row,
   combined once), serial vs parallel.

Medians after warm-up, peers timed in the same run on the same inputs (each
in a block of its own, see ``timed``).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import lt_mlir
from lt_mlir import programs
from lt_mlir.lowering.machine import host_vector_width
from lt_mlir.runtime.timing import median_seconds

W = host_vector_width(4)  # floats a vector on this CPU: 8 with AVX2, 16 with AVX-512


def timed(fns: dict, repeat: int) -> dict:
    """Median seconds of each callable, each timed in a block of its own:
    interleaving two multi-threaded libraries (OpenBLAS, OpenMP) makes each
    one's spinning worker threads steal the other's cores."""
    return {name: median_seconds(fn, repeat, warmup=3) for name, fn in fns.items()}

# m split by 4: for m (8 r 1) { init; for k { for m' (4, unrolled) { for n (48, vector 16, unrolled) } } }
# -> a 4 x 48 tile of C in vector registers (12 zmm with AVX-512; with AVX2's 8-float
# vectors it takes 24 and spills: recipes.register_tile sizes the tile for the host).
CLIPPED_SCHEDULE = [
    "lt-swap{loop=2}",  # n <-> k: C's initialisation gets its own n loop
    "lt-distribute{loop=1}",  # m' over {init} and {k nest}
    "lt-swap{loop=3}",  # m' <-> k
    f"lt-vectorize{{loop=5 width={W}}}",
    "lt-unroll{loop=5 factor=0}",
    "lt-unroll{loop=4 factor=0}",
]
# m by 4, n by 64: for n (8, parallel) { for m (128) { init; for k { for m' (4) { for n' (64, vector 16) } } } }
# -> a 4 x 64 tile of C in 16 zmm registers with AVX-512 (it spills with AVX2: see
# recipes.register_tile and benchmarks/bench_cpu.py); a 512 x 64 panel of B stays in L2 across m.
MATMUL_SCHEDULE = [
    "lt-swap{loop=3}",
    "lt-swap{loop=1}",
    "lt-distribute{loop=2}",
    "lt-swap{loop=4}",
    f"lt-vectorize{{loop=6 width={W}}}",
    "lt-unroll{loop=6 factor=0}",
    "lt-unroll{loop=5 factor=0}",
    "lt-swap{loop=0}",
]


def schedule(text: str, steps: list[str]) -> lt_mlir.Schedule:
    s = lt_mlir.Schedule(text)
    for step in steps:
        s.apply(step)
    return s


def loop_tool_clipped(A, B):
    try:
        import loop_tool as lt
    except ImportError:
        return None
    s = lt.SymbolGenerator()
    a = lt.Tensor(A).to(s.m, s.k)
    b = lt.Tensor(B).to(s.k, s.n)
    c = (a * b).max(lt.Tensor(0.0)).sum(s.k)

    def run():
        c.force_recompute()
        return c.numpy()

    return run


def clipped_matmul(repeat: int) -> None:
    m, n, k = 33, 48, 4096
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    reference = np.maximum(A.astype(np.float64)[:, :, None] * B[None], 0).sum(1)
    s = schedule(programs.matmul(m, n, k, m_blocks=[4], clipped=True), CLIPPED_SCHEDULE)
    kernel = s.compile()
    par = schedule(programs.matmul(m, n, k, m_blocks=[4], clipped=True), CLIPPED_SCHEDULE + ["lt-parallel{loop=0}"]).compile()
    out = np.empty((m, n), np.float32)
    fns = {
        "lt_mlir": lambda: kernel(A, B, out),
        "lt_mlir parallel": lambda: par(A, B, out),
        "NumPy materialised": lambda: np.maximum(A[:, :, None] * B[None], 0).sum(1),
    }
    lt_run = loop_tool_clipped(A, B)
    if lt_run is not None:
        assert np.allclose(lt_run(), reference, rtol=1e-3, atol=1e-2)
        fns["loop_tool 0.1.0 default"] = lt_run
    for name in ("lt_mlir", "lt_mlir parallel"):
        fns[name]()
        assert np.abs(out - reference).max() <= 1e-5 * np.abs(reference).max()
    t = timed(fns, repeat)
    print(f"clipped matmul {m}x{n}x{k}, schedule: {s.pipeline}")
    print("\n".join("  " + line for line in s.loop_tree.splitlines()))
    for name, sec in t.items():
        print(f"  {name:26s} {sec * 1e3:8.3f} ms")
    if "loop_tool 0.1.0 default" in t:
        print(f"  lt_mlir vs loop_tool default:   {t['loop_tool 0.1.0 default'] / t['lt_mlir']:6.2f}x faster (parallel: "
              f"{t['loop_tool 0.1.0 default'] / t['lt_mlir parallel']:.2f}x)")
    else:
        print("  loop_tool not installed: pip install loop-tool==0.1.0 to compare")
    print(f"  lt_mlir vs NumPy materialised: {t['NumPy materialised'] / t['lt_mlir']:6.1f}x faster (parallel: "
          f"{t['NumPy materialised'] / t['lt_mlir parallel']:.1f}x)")
    print(f"  lt-parallel speed-up on {os.cpu_count()} cores: {t['lt_mlir'] / t['lt_mlir parallel']:.2f}x")


def matmul(repeat: int, size: int = 512) -> None:
    rng = np.random.default_rng(1)
    A = rng.standard_normal((size, size)).astype(np.float32)
    B = rng.standard_normal((size, size)).astype(np.float32)
    text = programs.matmul(size, size, size, m_blocks=[4], n_blocks=[64])
    serial = schedule(text, MATMUL_SCHEDULE)
    parallel = schedule(text, MATMUL_SCHEDULE + ["lt-parallel{loop=0}"])
    k1, k2 = serial.compile(), parallel.compile()
    out, ref = np.empty((size, size), np.float32), np.empty((size, size), np.float32)
    np.matmul(A, B, out=ref)
    for k in (k1, k2):
        k(A, B, out)
        assert np.abs(out - ref).max() <= 1e-4 * np.abs(ref).max()
    t = timed(
        {
            "lt_mlir": lambda: k1(A, B, out),
            "lt_mlir parallel": lambda: k2(A, B, out),
            "NumPy": lambda: np.matmul(A, B, out=ref),
        },
        repeat,
    )
    flop = 2 * size**3
    print(f"matmul {size}^3, schedule: {parallel.pipeline}")
    for name, sec in t.items():
        print(f"  {name:26s} {sec * 1e3:8.3f} ms  {flop / sec / 1e9:7.1f} GFLOP/s")
    print(f"  lt_mlir parallel / NumPy throughput: {t['NumPy'] / t['lt_mlir parallel']:.2f}")
    print(f"  lt-parallel speed-up on {os.cpu_count()} cores: {t['lt_mlir'] / t['lt_mlir parallel']:.2f}x")


def _frontend_clipped(m: int, n: int, k: int) -> str:
    """The clipped matmul as the frontend writes it (loop_tool's default
    schedule: ``for m { for n: init; for k { for n } }``)."""
    s = lt_mlir.SymbolGenerator()
    a, b = lt_mlir.Tensor(s.m, s.k).set_size(m, k), lt_mlir.Tensor(s.k, s.n).set_size(k, n)
    return (a * b).max(0.0).sum(s.k).code


def parallel_reductions(repeat: int) -> None:
    rng = np.random.default_rng(2)
    cases = [
        ("matmul 64x96x128, parallel k (L2)", programs.matmul(64, 96, 128), 2, (64, 128), (128, 96), lambda a, b: a @ b),
        (
            "clipped matmul 33x48x4096, loop_tool's default schedule, parallel k (L2)",
            _frontend_clipped(33, 48, 4096),
            2,
            (33, 4096),
            (4096, 48),
            lambda a, b: np.maximum(a[:, :, None] * b[None], 0).sum(1),
        ),
    ]
    for name, text, loop, sa, sb, ref in cases:
        A, B = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
        serial = lt_mlir.Schedule(text)
        par = lt_mlir.Schedule(text).parallel(loop)
        k1, k2 = serial.compile(), par.compile()
        want = ref(A.astype(np.float64), B)
        for k in (k1, k2):
            assert np.abs(k(A, B) - want).max() <= 1e-3 * max(1.0, np.abs(want).max())
        t = timed({"serial": lambda: k1(A, B), "parallel": lambda: k2(A, B)}, repeat)
        print(f"{name}: serial {t['serial'] * 1e3:.3f} ms, parallel {t['parallel'] * 1e3:.3f} ms "
              f"({t['serial'] / t['parallel']:.2f}x on {os.cpu_count()} cores)")
        print(f"  remark: {par.remarks[-1]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    clipped_matmul(args.repeat)
    print()
    matmul(args.repeat)
    print()
    parallel_reductions(args.repeat)


if __name__ == "__main__":
    main()
