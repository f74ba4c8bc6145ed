"""CPU speed against the peers a user would pick instead, in one process.

Every workload is written once against loop_tool's API (``program(lt)``) and
run by lt_mlir's frontend (loop_tool's default schedule, then the documented
``lt_mlir.recipes`` schedule where it applies, on one core and on all) and
by loop_tool 0.1.0 itself; NumPy (idiomatic, materialising where it must)
and Numba (an ``@njit`` loop nest, and ``prange`` where it parallelises) run
the same inputs.  Each result is checked against NumPy in float64 before it
is timed; variants are timed in blocks that alternate over ``--rounds``
rounds, each block after a pause (``timing.block_medians``: OpenBLAS's,
OpenMP's and Numba's threads spin after a call and would steal the next
variant's cores; the rounds spread drift in the machine's load over
every variant): medians after warm-up.

    python benchmarks/bench_cpu.py            # the table, docs/bench-cpu.{md,json,png}
    python benchmarks/bench_cpu.py --quick    # small sizes, correctness only (CI)
    python benchmarks/bench_cpu.py --only matmul

Peers that are not installed (``pip install -e '.[bench]'`` installs them)
are left out and the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass, field

import numpy as np

import lt_mlir
from lt_mlir.frontend import clear_cache
from lt_mlir.lowering.machine import host_vector_width
from lt_mlir.recipes import register_tile, vector_rows
from lt_mlir.runtime.timing import block_medians

try:
    import loop_tool
except ImportError:  # the table marks its column
    loop_tool = None
try:
    import numba
except ImportError:
    numba = None

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs")


@dataclass
class Workload:
    name: str
    unit: str  # "GFLOP/s" or "GB/s"
    amount: float  # FLOPs or bytes moved per call
    reference: np.ndarray
    variants: dict = field(default_factory=dict)  # label -> callable returning the result
    notes: list = field(default_factory=list)
    program: tuple | None = None  # (program, inputs): what --tune searches


def runner(t):
    """A call of tensor ``t`` as loop_tool users run it (lt_mlir's or
    loop_tool's): ``force_recompute(); numpy()``."""

    def run():
        t.force_recompute()
        return t.numpy()

    return run


def frontend(program, inputs, schedule=None, parallel=False):
    """``program`` built with lt_mlir's frontend, run as loop_tool users do
    (``force_recompute(); numpy()``); ``schedule``: a function of the
    tensor's default Schedule."""
    t = program(lt_mlir, *inputs)
    if schedule is not None:
        t.set(schedule(t.schedule, parallel))

    return runner(t)


def frontend_tuned(program, inputs):
    """The program with the tuning database's schedule for it on this host
    (``make tune`` puts one there: ``lt_mlir.set_default_schedule("tuned")``
    reads it), or None when the database has none."""
    lt_mlir.set_default_schedule("tuned")
    try:
        t = program(lt_mlir, *inputs)
        code, untuned = t.code, t.untuned_code
    finally:
        lt_mlir.set_default_schedule("default")
    if code == untuned:
        return None
    t.set(lt_mlir.Schedule(code))

    return runner(t)


def frontend_fastmath(program, inputs, mode):
    """The default schedule compiled in the floating-point ``mode`` (README,
    "Floating point"): ``reassoc`` lets LLVM reorder a reduction."""
    t = program(lt_mlir, *inputs)
    kernel = lt_mlir.compile(t.code, fastmath=mode)
    args, (out,) = t.arguments, kernel.outputs

    def run():
        result = np.empty(out.shape, out.dtype)
        kernel(*args, result)
        return result

    return run


def with_loop_tool(program, inputs):
    if loop_tool is None:
        return None
    try:
        t = program(loop_tool, *inputs)
        t.numpy()
    except Exception as e:  # noqa: BLE001 — loop_tool's own failures are a table entry
        return f"loop_tool fails: {type(e).__name__}"

    return runner(t)


def tiled(schedule, parallel):
    return register_tile(schedule, parallel=parallel)


def conv_rows(schedule, parallel):
    """conv2d: loop_tool's default puts the output channel o innermost
    (C[o, y, x] and W[o, c, ky, kx] strided); ``recipes.vector_rows``
    moves x innermost and y, o outermost, so that one output row C[o, y, :]
    (x as vectors of this CPU's width, unrolled) stays in registers while
    c, ky, kx accumulate."""
    return vector_rows(schedule, parallel=parallel)


def const(lt, value):
    """A scalar in ``lt``'s spelling: lt_mlir takes Python numbers;
    loop_tool needs a Tensor (and computes it in float32)."""
    return value if lt is lt_mlir else lt.Tensor(float(value))


def njit(fn, parallel=False):
    if numba is None:
        return None
    return numba.njit(fn, parallel=parallel, fastmath=False, cache=False)


# ---------------------------------------------------------------- programs
def p_add(lt, X, Y):
    s = lt.SymbolGenerator()
    return lt.Tensor(X).to(s.n) + lt.Tensor(Y).to(s.n)


def p_matmul(lt, A, B):
    s = lt.SymbolGenerator()
    return (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)).sum(s.k)


def p_clipped(lt, A, B):
    s = lt.SymbolGenerator()
    return (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)).max(const(lt, 0.0)).sum(s.k)


def p_row_sum(lt, X):
    s = lt.SymbolGenerator()
    return lt.Tensor(X).to(s.r, s.c).sum(s.c)


def p_softmax(lt, X):
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.r, s.c)
    e = (x - x.max_reduce(s.c)).exp()
    return e / e.sum(s.c)


def p_conv2d(lt, X, W):
    """Y[o, y, x] = sum_{c, ky, kx} X[c, y + ky, x + kx] * W[o, c, ky, kx] (valid)."""
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.c, s.h, s.w)
    w = lt.Tensor(W).to(s.o, s.c, s.ky, s.kx)
    win = x[s.c, s.y + s.ky, s.x + s.kx]
    return (win * w).sum(s.c, s.ky, s.kx).transpose(s.o, s.y, s.x)


def p_gesummv(lt, A, B, x):
    """y = 1.5 A x + 1.2 B x (npbench gesummv)."""
    s = lt.SymbolGenerator()
    xv = lt.Tensor(x).to(s.j)
    ax = (lt.Tensor(A).to(s.i, s.j) * xv).sum(s.j)
    bx = (lt.Tensor(B).to(s.i, s.j) * xv).sum(s.j)
    return ax * const(lt, 1.5) + bx * const(lt, 1.2)


STENCIL = np.array([[0, 0.2, 0], [0.2, 0.2, 0.2], [0, 0.2, 0]], np.float32)


def p_jacobi(lt, A):
    """One Jacobi-2D step on the interior (npbench jacobi_2d's update), as a
    3 x 3 window against the 5-point mask (the frontend has no slices)."""
    s = lt.SymbolGenerator()
    a = lt.Tensor(A).to(s.r, s.q)
    return (a[s.i + s.ki, s.j + s.kj] * lt.Tensor(STENCIL).to(s.ki, s.kj)).sum(s.ki, s.kj)


def p_gemver(lt, A, u1, v1, u2, v2, y, z, x):
    """npbench gemver's result w: A' = A + u1 v1^T + u2 v2^T,
    x' = x + 1.2 A'^T y + z, w = 1.5 A' x' (w starts at 0)."""
    s = lt.SymbolGenerator()
    a = lt.Tensor(A).to(s.i, s.j) + lt.Tensor(u1).to(s.i) * lt.Tensor(v1).to(s.j) + lt.Tensor(u2).to(s.i) * lt.Tensor(v2).to(s.j)
    xs = lt.Tensor(x).to(s.j) + (a * lt.Tensor(y).to(s.i)).sum(s.i) * const(lt, 1.2) + lt.Tensor(z).to(s.j)
    return (a * xs).sum(s.j) * const(lt, 1.5)


def p_covariance(lt, X):
    """npbench covariance: cov = (X - mean)^T (X - mean) / (N - 1), X of N x M."""
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.n, s.m)
    n = X.shape[0]
    d = x - x.sum(s.n) * const(lt, 1.0 / n)
    return (d * d.to(s.n, s.p)).sum(s.n) * const(lt, 1.0 / (n - 1))


HEAT = np.zeros((3, 3, 3), np.float32)
HEAT[1, 1, 1] = 1 - 6 * 0.125
for _axis in range(3):
    for _side in (0, 2):
        _at = [1, 1, 1]
        _at[_axis] = _side
        HEAT[tuple(_at)] = 0.125


def p_heat(lt, A):
    """One step of npbench heat_3d's update on the interior, as a 3 x 3 x 3
    window against the 7-point mask."""
    s = lt.SymbolGenerator()
    a = lt.Tensor(A).to(s.r, s.q, s.t)
    return (a[s.i + s.ki, s.j + s.kj, s.k + s.kk] * lt.Tensor(HEAT).to(s.ki, s.kj, s.kk)).sum(s.ki, s.kj, s.kk)


# ---------------------------------------------------------------- numba loops
def nb_add(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]
    return out


# numba.prange is range unless the function is jitted with parallel=True:
# one loop nest serves as the @njit and the prange variant.
def nb_matmul(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in numba.prange(m):
        for kk in range(k):
            a = A[i, kk]
            for j in range(n):
                C[i, j] += a * B[kk, j]
    return C


def nb_clipped(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    zero = A.dtype.type(0)
    for i in numba.prange(m):
        for kk in range(k):
            a = A[i, kk]
            for j in range(n):
                C[i, j] += max(a * B[kk, j], zero)
    return C


def nb_row_sum(X):
    out = np.empty(X.shape[0], X.dtype)
    for r in range(X.shape[0]):
        acc = X.dtype.type(0)
        for c in range(X.shape[1]):
            acc += X[r, c]
        out[r] = acc
    return out


def nb_softmax(X):
    out = np.empty_like(X)
    for r in range(X.shape[0]):
        m = X[r, 0]
        for c in range(X.shape[1]):
            m = max(m, X[r, c])
        s = X.dtype.type(0)
        for c in range(X.shape[1]):
            e = np.exp(X[r, c] - m)
            out[r, c] = e
            s += e
        for c in range(X.shape[1]):
            out[r, c] /= s
    return out


def nb_conv2d(X, W):
    o_, c_, kh, kw = W.shape
    h, w = X.shape[1] - kh + 1, X.shape[2] - kw + 1
    Y = np.zeros((o_, h, w), X.dtype)
    for o in range(o_):
        for c in range(c_):
            for ky in range(kh):
                for kx in range(kw):
                    wv = W[o, c, ky, kx]
                    for y in range(h):
                        for x in range(w):
                            Y[o, y, x] += X[c, y + ky, x + kx] * wv
    return Y


def nb_gesummv(A, B, x):
    n = A.shape[0]
    y = np.empty(n, A.dtype)
    for i in range(n):
        a = A.dtype.type(0)
        b = A.dtype.type(0)
        for j in range(A.shape[1]):
            a += A[i, j] * x[j]
            b += B[i, j] * x[j]
        y[i] = A.dtype.type(1.5) * a + A.dtype.type(1.2) * b
    return y


def nb_jacobi(A):
    n, m = A.shape
    out = np.empty((n - 2, m - 2), A.dtype)
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i - 1, j - 1] = A.dtype.type(0.2) * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
    return out


def nb_gemver(A, u1, v1, u2, v2, y, z, x):
    n = A.shape[0]
    a = np.empty_like(A)
    for i in range(n):
        for j in range(n):
            a[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    xs = x.copy()
    for i in range(n):
        for j in range(n):
            xs[j] += A.dtype.type(1.2) * a[i, j] * y[i]
    for j in range(n):
        xs[j] += z[j]
    w = np.zeros(n, A.dtype)
    for i in range(n):
        acc = A.dtype.type(0)
        for j in range(n):
            acc += a[i, j] * xs[j]
        w[i] = A.dtype.type(1.5) * acc
    return w


def nb_covariance(X):
    n, m = X.shape
    mean = np.zeros(m, X.dtype)
    for i in range(n):
        for j in range(m):
            mean[j] += X[i, j]
    d = np.empty_like(X)
    for i in range(n):
        for j in range(m):
            d[i, j] = X[i, j] - mean[j] / n
    cov = np.zeros((m, m), X.dtype)
    for i in range(n):
        for j in range(m):
            for k in range(m):
                cov[j, k] += d[i, j] * d[i, k]
    return cov / (n - 1)


def nb_heat(A):
    n, m, l_ = A.shape
    out = np.empty((n - 2, m - 2, l_ - 2), A.dtype)
    c = A.dtype.type(0.125)
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            for k in range(1, l_ - 1):
                out[i - 1, j - 1, k - 1] = (
                    c * (A[i + 1, j, k] - 2 * A[i, j, k] + A[i - 1, j, k])
                    + c * (A[i, j + 1, k] - 2 * A[i, j, k] + A[i, j - 1, k])
                    + c * (A[i, j, k + 1] - 2 * A[i, j, k] + A[i, j, k - 1])
                    + A[i, j, k]
                )
    return out


# ---------------------------------------------------------------- workloads
def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


REASSOC = "reassoc,contract,nsz"


def add_peers(w: Workload, program, inputs, numba_fn=None, prange=False, tile=False, reassoc=False, scheduled=None):
    """The lt_mlir variants and the peers of a workload; ``tile``: the
    documented ``register_tile`` schedule; ``scheduled``: a schedule of the
    benchmark's own (a function of the default Schedule and ``parallel``)."""
    w.program = (program, inputs)
    w.variants["lt_mlir default"] = frontend(program, inputs)
    tuned = frontend_tuned(program, inputs)
    if tuned is not None:
        w.variants["lt_mlir tuned"] = tuned
    if reassoc:
        w.variants[f"lt_mlir {REASSOC}"] = frontend_fastmath(program, inputs, REASSOC)
    for label, fn in (("tiled", tiled if tile else None), ("scheduled", scheduled)):
        if fn is not None:
            w.variants[f"lt_mlir {label}"] = frontend(program, inputs, fn)
            w.variants[f"lt_mlir {label} x{os.cpu_count()}"] = frontend(program, inputs, fn, parallel=True)
    lt_run = with_loop_tool(program, inputs)
    if lt_run is None:
        w.notes.append("loop_tool not installed")
    elif isinstance(lt_run, str):
        w.notes.append(lt_run)
    else:
        w.variants["loop_tool default"] = lt_run
    for label, parallel in (("Numba", False), ("Numba prange", True)):
        if numba_fn is not None and numba is not None and (prange or not parallel):
            jitted = njit(numba_fn, parallel=parallel)
            w.variants[label] = lambda j=jitted: j(*inputs)
    if numba is None and numba_fn is not None:
        w.notes.append("Numba not installed")


def workloads(quick: bool, only: str | None) -> list:
    rng = np.random.default_rng(0)
    out = []

    def want(name):
        return only is None or only in name

    for e in ((10, 14) if quick else (16, 22, 26)):
        name = f"add 2^{e}"
        if not want(name):
            continue
        X, Y = rand(rng, 1 << e), rand(rng, 1 << e)
        w = Workload(name, "GB/s", 3 * 4 * (1 << e), X.astype(np.float64) + Y)
        w.variants["NumPy"] = lambda X=X, Y=Y: X + Y
        add_peers(w, p_add, (X, Y), nb_add)
        out.append(w)
    for n in ((32, 40) if quick else (256, 512, 1024)):
        name = f"matmul {n}^3"
        if not want(name):
            continue
        A, B = rand(rng, n, n), rand(rng, n, n)
        w = Workload(name, "GFLOP/s", 2 * n**3, A.astype(np.float64) @ B)
        w.variants["NumPy"] = lambda A=A, B=B: A @ B
        add_peers(w, p_matmul, (A, B), nb_matmul, prange=True, tile=True)
        out.append(w)
    for m, n, k in (((33, 48, 64), (20, 24, 16)) if quick else ((33, 48, 4096), (256, 256, 256))):
        name = f"clipped matmul {m}x{n}x{k}"
        if not want(name):
            continue
        A, B = rand(rng, m, k), rand(rng, k, n)
        ref = np.maximum(A.astype(np.float64)[:, :, None] * B[None], 0).sum(1)
        w = Workload(name, "GFLOP/s", 3 * m * n * k, ref)
        w.variants["NumPy"] = lambda A=A, B=B: np.maximum(A[:, :, None] * B[None], 0).sum(1)
        add_peers(w, p_clipped, (A, B), nb_clipped, prange=True, tile=True)
        out.append(w)
    r, c = (64, 48) if quick else (4096, 4096)
    if want("row sum"):
        X = rand(rng, r, c)
        w = Workload(f"row sum {r}x{c}", "GB/s", 4 * r * c, X.astype(np.float64).sum(1))
        w.variants["NumPy"] = lambda X=X: X.sum(1)
        add_peers(w, p_row_sum, (X,), nb_row_sum, reassoc=True)
        out.append(w)
    r, c = (64, 48) if quick else (4096, 1024)
    if want("softmax"):
        X = rand(rng, r, c)
        x64 = X.astype(np.float64)
        e = np.exp(x64 - x64.max(1, keepdims=True))
        w = Workload(f"softmax {r}x{c}", "GB/s", 2 * 4 * r * c, e / e.sum(1, keepdims=True))

        def np_softmax(X=X):
            e = np.exp(X - X.max(1, keepdims=True))
            e /= e.sum(1, keepdims=True)
            return e

        w.variants["NumPy"] = np_softmax
        add_peers(w, p_softmax, (X,), nb_softmax, reassoc=True)
        out.append(w)
    ch, hw = (4, 10) if quick else (16, 32)
    if want("conv2d"):
        X, W = rand(rng, ch, hw + 2, hw + 2), rand(rng, ch, ch, 3, 3)
        win = np.lib.stride_tricks.sliding_window_view(X.astype(np.float64), (3, 3), axis=(1, 2))
        ref = np.einsum("cyxij,ocij->oyx", win, W.astype(np.float64))
        w = Workload(f"conv2d {ch}->{ch} 3x3 {hw}x{hw}", "GFLOP/s", 2 * ch * ch * 9 * hw * hw, ref)
        w.variants["NumPy"] = lambda X=X, W=W: np.einsum(
            "cyxij,ocij->oyx", np.lib.stride_tricks.sliding_window_view(X, (3, 3), axis=(1, 2)), W, optimize=True
        )
        add_peers(w, p_conv2d, (X, W), nb_conv2d, reassoc=True, scheduled=conv_rows)
        out.append(w)
    n = 64 if quick else 4096
    if want("gesummv"):
        A, B, x = rand(rng, n, n), rand(rng, n, n), rand(rng, n)
        ref = 1.5 * A.astype(np.float64) @ x + 1.2 * B.astype(np.float64) @ x
        w = Workload(f"gesummv {n}", "GB/s", 2 * 4 * n * n, ref)
        w.variants["NumPy"] = lambda A=A, B=B, x=x: np.float32(1.5) * (A @ x) + np.float32(1.2) * (B @ x)
        add_peers(w, p_gesummv, (A, B, x), nb_gesummv, reassoc=True)
        out.append(w)
    n = 34 if quick else 2050
    if want("jacobi"):
        A = rand(rng, n, n)
        a = A.astype(np.float64)
        ref = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
        w = Workload(f"jacobi_2d step {n}", "GB/s", 2 * 4 * (n - 2) ** 2, ref)
        w.variants["NumPy"] = lambda A=A: np.float32(0.2) * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        add_peers(w, p_jacobi, (A,), nb_jacobi, reassoc=True)
        out.append(w)
    n = 48 if quick else 2048
    if want("gemver"):
        A = rand(rng, n, n)
        vecs = [rand(rng, n) for _ in range(7)]  # u1 v1 u2 v2 y z x
        a64, (u1, v1, u2, v2, y, z, x) = A.astype(np.float64), [v.astype(np.float64) for v in vecs]
        a2 = a64 + np.outer(u1, v1) + np.outer(u2, v2)
        ref = 1.5 * a2 @ (x + 1.2 * y @ a2 + z)
        w = Workload(f"gemver {n}", "GB/s", 3 * 4 * n * n, ref)

        def np_gemver(A=A, vecs=vecs):
            u1, v1, u2, v2, y, z, x = vecs
            a = A + np.outer(u1, v1) + np.outer(u2, v2)
            return np.float32(1.5) * (a @ (x + np.float32(1.2) * (y @ a) + z))

        w.variants["NumPy"] = np_gemver
        add_peers(w, p_gemver, (A, *vecs), nb_gemver, reassoc=True)
        out.append(w)
    n, m = (40, 24) if quick else (1400, 1200)
    if want("covariance"):
        X = rand(rng, n, m)
        d64 = X.astype(np.float64) - X.astype(np.float64).mean(0)
        w = Workload(f"covariance {n}x{m}", "GFLOP/s", 2 * n * m * m, d64.T @ d64 / (n - 1))

        def np_cov(X=X, n=n):
            d = X - X.mean(0)
            return d.T @ d / np.float32(n - 1)

        w.variants["NumPy"] = np_cov
        add_peers(w, p_covariance, (X,), nb_covariance, reassoc=True, tile=True)
        out.append(w)
    n = 18 if quick else 130
    if want("heat"):
        A = rand(rng, n, n, n)
        a = A.astype(np.float64)
        c = a[1:-1, 1:-1, 1:-1]
        ref = 0.125 * (a[2:, 1:-1, 1:-1] - 2 * c + a[:-2, 1:-1, 1:-1]) + 0.125 * (a[1:-1, 2:, 1:-1] - 2 * c + a[1:-1, :-2, 1:-1]) \
            + 0.125 * (a[1:-1, 1:-1, 2:] - 2 * c + a[1:-1, 1:-1, :-2]) + c
        w = Workload(f"heat_3d step {n}", "GB/s", 2 * 4 * (n - 2) ** 3, ref)

        def np_heat(A=A):
            c = A[1:-1, 1:-1, 1:-1]
            k = np.float32(0.125)
            return (k * (A[2:, 1:-1, 1:-1] - 2 * c + A[:-2, 1:-1, 1:-1]) + k * (A[1:-1, 2:, 1:-1] - 2 * c + A[1:-1, :-2, 1:-1])
                    + k * (A[1:-1, 1:-1, 2:] - 2 * c + A[1:-1, 1:-1, :-2]) + c)

        w.variants["NumPy"] = np_heat
        add_peers(w, p_heat, (A,), nb_heat, reassoc=True)
        out.append(w)
    return out


# ---------------------------------------------------------------- running
def check(w: Workload, label: str, result) -> str | None:
    result = np.asarray(result, dtype=np.float64)
    if result.shape != w.reference.shape:
        return f"shape {result.shape}, expected {w.reference.shape}"
    scale = max(np.abs(w.reference).max(), 1.0)
    err = np.abs(result - w.reference).max() / scale
    return None if err <= 1e-4 else f"max relative error {err:.2e}"


def compile_latency() -> dict:
    """Program -> first result for the 256^3 matmul (compile included)."""
    rng = np.random.default_rng(3)
    A, B = rand(rng, 256, 256), rand(rng, 256, 256)
    out = {}
    clear_cache()
    t0 = time.perf_counter()
    p_matmul(lt_mlir, A, B).numpy()
    out["lt_mlir"] = time.perf_counter() - t0
    if loop_tool is not None:
        t0 = time.perf_counter()
        p_matmul(loop_tool, A, B).numpy()
        out["loop_tool"] = time.perf_counter() - t0
    if numba is not None:
        t0 = time.perf_counter()
        numba.njit(nb_matmul)(A, B)
        out["Numba"] = time.perf_counter() - t0
    return out


def host() -> dict:
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import llvmlite.binding as llvm

    feats = llvm.get_host_cpu_features()
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512vl", "avx512bw") if feats.get(f, False)]
    return {"cpu": model, "cores": os.cpu_count(), "llvm_cpu": llvm.get_host_cpu_name(), "features": isa,
            "vector_width_f32": host_vector_width(4), "numpy": np.__version__,
            "numba": getattr(numba, "__version__", None), "loop_tool": "0.1.0" if loop_tool is not None else None}


def run(quick: bool, only: str | None, rounds: int) -> tuple[list, dict]:
    from rich.progress import Progress

    rows = []
    ws = workloads(quick, only)
    total = sum(len(w.variants) for w in ws)
    with Progress(transient=True) as bar:
        task = bar.add_task("benchmarks", total=total)
        for w in ws:
            checked, errors = {}, {}
            for label, fn in w.variants.items():
                bar.update(task, description=f"{w.name}: {label}")
                try:
                    bad = check(w, label, fn())
                except Exception as e:  # noqa: BLE001 — a peer that fails is reported, not fatal
                    bad = f"{type(e).__name__}: {e}"
                if bad is not None:
                    errors[label] = bad
                else:
                    checked[label] = fn
                bar.advance(task)
            bar.update(task, description=f"{w.name}: timing {len(checked)} variants")
            times = {} if quick else block_medians(checked, rounds=rounds, per_block=4)
            rows.append({"workload": w.name, "unit": w.unit, "amount": w.amount, "seconds": times,
                         "errors": errors, "notes": w.notes, "checked": list(checked)})
    return rows, host()


def table(rows: list) -> str:
    lines = ["| workload | variant | time | rate | × NumPy | × best peer |", "|---|---|---|---|---|---|"]
    for r in rows:
        t = r["seconds"]
        peers = [v for k, v in t.items() if not k.startswith("lt_mlir")]
        best_peer = min(peers) if peers else None
        for k, sec in t.items():
            rate = r["amount"] / sec / 1e9
            vs_np = t["NumPy"] / sec if "NumPy" in t else float("nan")
            vs_best = f"{best_peer / sec:.2f}" if best_peer and k.startswith("lt_mlir") else ""
            lines.append(f"| {r['workload']} | {k} | {sec * 1e3:.3f} ms | {rate:.1f} {r['unit']} | {vs_np:.2f} | {vs_best} |")
        for k, e in r["errors"].items():
            lines.append(f"| {r['workload']} | {k} | wrong: {e} | | | |")
        for note in r["notes"]:
            lines.append(f"| {r['workload']} | ({note}) | | | | |")
    return "\n".join(lines)


def chart(rows: list, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "NumPy" in r["seconds"]]
    labels = sorted({k for r in rows for k in r["seconds"] if k != "NumPy"})
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) * (1 + len(labels) / 4) + 1.5))
    height = 0.8 / max(1, len(labels))
    for j, label in enumerate(labels):
        ys = [i + j * height for i in range(len(rows))]
        xs = [r["seconds"]["NumPy"] / r["seconds"][label] if label in r["seconds"] else 0 for r in rows]
        ax.barh(ys, xs, height=height, label=label)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))])
    ax.set_yticklabels([r["workload"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("speed relative to NumPy (higher is faster; log scale)")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def tune(quick: bool, only: str | None, seconds: float, budget: int, strategy: str) -> int:
    """``make tune``: search each workload's schedule (``Tensor.optimize``,
    at most ``seconds`` and ``budget`` measurements each) and keep the
    winners in the tuning database, where the table's "lt_mlir tuned" rows
    read them."""
    for w in workloads(quick, only):
        if w.program is None:
            continue
        program, inputs = w.program
        t = program(lt_mlir, *inputs)
        start = time.perf_counter()
        r = t.optimize(budget=budget, seconds=seconds, strategy=strategy)
        print(f"{w.name:28s} {r.speedup:6.2f}x the default after {r.evaluations} measurements, "
              f"{time.perf_counter() - start:.0f} s: {r.pipeline}", flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, check every variant's result, time nothing")
    p.add_argument("--only", default=None, help="run the workloads whose name contains this")
    p.add_argument("--rounds", type=int, default=5, help="rounds of timing blocks, 4 timed calls a variant each")
    p.add_argument("--out", default=DOCS, help="where bench-cpu.{md,json,png} go (not with --quick)")
    p.add_argument("--tune", type=float, default=None, metavar="SECONDS",
                   help="search each workload's schedule for at most SECONDS into the tuning database (make tune); no table")
    p.add_argument("--budget", type=int, default=300, help="with --tune: measurements a workload")
    p.add_argument("--strategy", default="evolution", help="with --tune: the search strategy")
    args = p.parse_args()
    if args.tune is not None:
        return tune(args.quick, args.only, args.tune, args.budget, args.strategy)
    rows, info = run(args.quick, args.only, args.rounds)
    bad = [(r["workload"], k, e) for r in rows for k, e in r["errors"].items() if k.startswith("lt_mlir")]
    if args.quick:
        for r in rows:
            print(f"{r['workload']:28s} ok: {', '.join(r['checked'])}" + (f"; wrong: {r['errors']}" if r["errors"] else ""))
        for name, k, e in bad:
            print(f"error: {name}: {k}: {e}")
        return 1 if bad else 0
    where = f"{info['cpu']}, {info['cores']} cores, LLVM CPU {info['llvm_cpu']} ({', '.join(info['features'])})"
    latency = compile_latency()
    text = [f"Host: {where}; NumPy {info['numpy']}, Numba {info['numba']}, loop_tool {info['loop_tool']}.", "",
            table(rows), "", "Program -> first result, matmul 256^3 (compile included):", "",
            "| | seconds |", "|---|---|"] + [f"| {k} | {v * 1e3:.0f} ms |" for k, v in latency.items()]
    md = "\n".join(text) + "\n"
    print(md)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-cpu.md"), "w") as fh:
        fh.write(md)
    with open(os.path.join(args.out, "bench-cpu.json"), "w") as fh:
        json.dump({"host": info, "rows": rows, "compile_latency_s": latency}, fh, indent=1)
    chart(rows, os.path.join(args.out, "bench-cpu.png"), f"lt_mlir on {info['cpu']} ({info['cores']} cores)")
    for name, k, e in bad:
        print(f"error: {name}: {k}: {e}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
