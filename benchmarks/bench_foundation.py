"""Foundation benchmarks (issue: the lt dialect end to end on the CPU).

1. Compile latency: the 256^3 matmul nest from IR text to a callable, fresh
   each time (parse, lower, translate, O3, JIT), median after warm-up.
2. Pointwise add of 2^22 float32: lt_mlir vs NumPy in the same process, on
   the same arrays; both into a preallocated output, and both allocating.

Prints medians and ratios (NumPy time / lt_mlir time: > 1 means faster).
"""

import argparse

import numpy as np

import lt_mlir
from lt_mlir import programs
from lt_mlir.runtime.timing import interleaved_medians, median_seconds


def compile_latency(repeat: int) -> None:
    src = programs.matmul(256, 256, 256)
    t = median_seconds(lambda: lt_mlir.compile(src), repeat, warmup=3)
    print(f"matmul 256^3: IR text -> callable  {t * 1e3:8.2f} ms (median of {repeat}, after warm-up)")


def pointwise_add(repeat: int) -> None:
    n = 1 << 22
    kernel = lt_mlir.compile(programs.pointwise_add(n))
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(a)
    kernel(a, b, out)
    assert np.array_equal(out, a + b)
    rows = [
        ("into a preallocated output", lambda: kernel(a, b, out), lambda: np.add(a, b, out=out)),
        ("allocating the output", lambda: kernel(a, b), lambda: a + b),
    ]
    for label, ours, theirs in rows:
        t = interleaved_medians({"ours": ours, "numpy": theirs}, repeat, warmup=3)
        mo, mn = t["ours"], t["numpy"]
        print(
            f"add 2^22 f32, {label:27s} lt_mlir {mo * 1e3:7.3f} ms  NumPy {mn * 1e3:7.3f} ms"
            f"  lt_mlir/NumPy time {mo / mn:5.2f}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    compile_latency(max(5, args.repeat // 3))
    pointwise_add(args.repeat)


if __name__ == "__main__":
    main()
