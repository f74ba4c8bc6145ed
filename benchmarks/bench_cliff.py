"""Two performance cliffs of the lowering, timed (medians after warm-up, the
variants of a table interleaved round by round).

1. Splits alone: every loop of a 128^3 matmul split by 2, 4, 8, 16 and 32,
   against the unsplit kernel, in loop_tool's default schedule (the
   frontend's: ``for m { for n: C <- 0 }  for k { for n: C += A*B }``) and
   in ``programs.matmul``'s order (m, n, k).  A split changes no iteration
   order, so every ratio should be 1.0 within noise (outputs are checked
   equal to the unsplit ones, bit for bit).
2. Layernorm over the rows of a 512 x 1024 float32 matrix (mean, variance,
   sqrt) in the floating-point modes ``default``, ``strict`` and
   ``reassoc``, against the same loops written in C the way loop_tool
   emits them (a statement per node) and built with ``cc -O3`` without
   fast-math (``-ffp-contract=off``: clang contracts only within one
   expression), and loop_tool itself when it is installed.

    python benchmarks/bench_cliff.py [--repeat 30] [--only splits|layernorm]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import lt_mlir
from lt_mlir import programs
from lt_mlir.runtime.timing import interleaved_medians
from lt_mlir.schedule import Schedule

try:
    import loop_tool  # noqa: F401
except ImportError:
    loop_tool = None

FACTORS = (2, 4, 8, 16, 32)
SIZE = 128
ROWS, COLS = 512, 1024


def contraction_text(n: int) -> str:
    s = Schedule(programs.matmul(n, n, n))
    s.swap(1)  # C's initialisation gets its own n loop: loop_tool's default schedule
    return s.text


def split_table(name: str, text: str, repeat: int) -> list[str]:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    B = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    loops = Schedule(text).loops()
    fns, outs = {}, {}

    def add(key, source):
        kernel = lt_mlir.compile(source)
        C = np.zeros((SIZE, SIZE), np.float32)
        kernel(A, B, C)
        outs[key] = C.copy()
        fns[key] = lambda: kernel(A, B, C)

    add("unsplit", text)
    for loop in range(loops):
        for f in FACTORS:
            s = Schedule(text)
            s.split(loop, f)
            add((loop, f), s.text)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.allclose(outs["unsplit"], ref, rtol=1e-4, atol=1e-3), "unsplit kernel is wrong"
    unequal = [k for k, v in outs.items() if not np.array_equal(v, outs["unsplit"])]
    times = interleaved_medians(fns, repeat=repeat, warmup=2)
    base = times["unsplit"]
    tree = " / ".join(line.strip() for line in Schedule(text).loop_tree.splitlines() if line.lstrip().startswith("for"))
    lines = [f"{name}: {tree}; unsplit {base * 1e3:.3f} ms", "",
             "| split | " + " | ".join(f"by {f}" for f in FACTORS) + " |",
             "|---|" + "---:|" * len(FACTORS)]
    for loop in range(loops):
        cells = [f"{times[(loop, f)] * 1e3:.3f} ms ({times[(loop, f)] / base:.2f}x)" for f in FACTORS]
        lines.append(f"| L{loop} | " + " | ".join(cells) + " |")
    worst = max((times[k] / base, k) for k in times if k != "unsplit")
    lines += ["", f"worst: L{worst[1][0]} by {worst[1][1]} at {worst[0]:.2f}x the unsplit time; "
              f"outputs equal to the unsplit one: {'all' if not unequal else 'NOT ' + str(unequal)}"]
    return lines


def const(lt, value):
    """A scalar in ``lt``'s spelling (loop_tool needs a Tensor)."""
    return value if lt is lt_mlir else lt.Tensor(float(value))


def layernorm(lt, X, eps: float = 1e-5):
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.r, s.c)
    n = X.shape[1]
    mean = x.sum(s.c) * const(lt, 1.0 / n)
    d = x - mean
    var = (d * d).sum(s.c) * const(lt, 1.0 / n)
    return d / (var + const(lt, eps)).sqrt()


C_LAYERNORM = r"""
#include <math.h>
#include <stdlib.h>
/* loop_tool's default schedule as its C backend writes it: a statement per
   node, in-order sums kept in a local, scratch d[c] per row. */
void layernorm(const float *restrict A, float *restrict B) {
  float *d = malloc(COLS * sizeof(float));
  for (int r = 0; r < ROWS; r++) {
    float s = 0.0f;
    for (int c = 0; c < COLS; c++) { float a = A[r * COLS + c]; s = s + a; }
    float mean = s * (1.0f / COLS);
    float v = 0.0f;
    for (int c = 0; c < COLS; c++) {
      float a = A[r * COLS + c]; float t = a - mean; d[c] = t; float p = t * t; v = v + p;
    }
    float var = v * (1.0f / COLS);
    float e = var + 1e-5f;
    float q = sqrtf(e);
    for (int c = 0; c < COLS; c++) B[r * COLS + c] = d[c] / q;
  }
  free(d);
}
"""


def c_layernorm():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("clang") or shutil.which("gcc")
    if cc is None:
        return None
    tmp = tempfile.mkdtemp(prefix="bench_cliff_")
    src, lib = os.path.join(tmp, "ln.c"), os.path.join(tmp, "ln.so")
    with open(src, "w") as fh:
        fh.write(C_LAYERNORM)
    flags = ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off", f"-DROWS={ROWS}", f"-DCOLS={COLS}"]
    subprocess.run([cc, *flags, "-shared", "-fPIC", "-o", lib, src, "-lm"], check=True)
    fn = ctypes.CDLL(lib).layernorm
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return os.path.basename(cc), fn


def layernorm_table(repeat: int) -> list[str]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((ROWS, COLS)).astype(np.float32) * 2 + 0.5
    x = X.astype(np.float64)
    d = x - x.mean(1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5)
    text = layernorm(lt_mlir, X).code
    fns, outs = {}, {}
    for mode in ("default", "strict", "reassoc"):
        kernel = lt_mlir.compile(text, fastmath=mode)
        Y = np.zeros((ROWS, COLS), np.float32)
        kernel(X, Y)
        outs[f"lt_mlir {mode}"] = Y.copy()
        fns[f"lt_mlir {mode}"] = (lambda kernel=kernel, Y=Y: kernel(X, Y))
    built = c_layernorm()
    if built is not None:
        cc, fn = built
        Y = np.zeros((ROWS, COLS), np.float32)
        fn(X.ctypes.data, Y.ctypes.data)
        outs[f"C ({cc} -O3, no fast-math)"] = Y
        fns[f"C ({cc} -O3, no fast-math)"] = (lambda fn=fn, Y=Y: fn(X.ctypes.data, Y.ctypes.data))
    if loop_tool is not None:
        t = layernorm(loop_tool, X)
        outs["loop_tool"] = np.asarray(t.numpy())

        def run_lt(t=t):
            t.force_recompute()
            return t.numpy()

        fns["loop_tool"] = run_lt
    times = interleaved_medians(fns, repeat=repeat, warmup=3)
    base = outs["lt_mlir default"]
    lines = [f"layernorm {ROWS}x{COLS} f32 (rows: mean, variance, sqrt)", "",
             "| kernel | median | vs default | max error vs float64 | same bits as default |", "|---|---:|---:|---:|---|"]
    for name, t in times.items():
        err = float(np.abs(outs[name] - ref).max())
        same = "yes" if np.array_equal(outs[name], base) else "no"
        lines.append(f"| {name} | {t * 1e3:.3f} ms | {times['lt_mlir default'] / t:.2f}x | {err:.1e} | {same} |")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--only", choices=("splits", "layernorm"))
    args = p.parse_args()
    out = []
    if args.only in (None, "splits"):
        out += split_table("matmul 128^3, loop_tool's default schedule", contraction_text(SIZE), args.repeat) + [""]
        out += split_table("matmul 128^3, programs.matmul (m, n, k)", programs.matmul(SIZE, SIZE, SIZE), args.repeat) + [""]
    if args.only in (None, "layernorm"):
        out += layernorm_table(args.repeat)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
