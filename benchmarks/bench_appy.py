"""APPy programs through lt_mlir.appy against NumPy and Numba on the CPU.

The kernels are APPy's npbench tests (and its CSR SpMV) as APPy writes them
(``tests/appy_programs/npbench.py``, the same functions the tests check);
Numba runs the same loops with ``@njit(parallel=True)`` and ``prange`` for
``#pragma parallel for``; NumPy runs npbench's reference.  Medians after
warm-up, the three interleaved (one call of each a round), every result
checked against NumPy first; ratios are NumPy's time over each.  Needs ``numba`` (``make bench`` installs it).

    python benchmarks/bench_appy.py [--repeat N] [-k SUBSTRING] [--chart docs/bench-appy.png]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(HERE), "tests"), os.path.dirname(HERE)]

from appy_programs import npbench  # noqa: E402

from lt_mlir.runtime.timing import interleaved_medians  # noqa: E402


def numba_kernels():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def gesummv(alpha, beta, A, B, x):
        y = np.empty(A.shape[0], dtype=x.dtype)
        for i in prange(A.shape[0]):
            s = 0.0
            for j in range(A.shape[1]):
                s += alpha * A[i, j] * x[j] + beta * B[i, j] * x[j]
            y[i] = s
        return y

    @njit(parallel=True, cache=False)
    def jacobi_2d(TSTEPS, A, B):
        for t in range(1, TSTEPS):
            for i in prange(1, A.shape[0] - 1):
                for j in range(1, A.shape[1] - 1):
                    B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i - 1, j] + A[i + 1, j])
            for i in prange(1, B.shape[0] - 1):
                for j in range(1, B.shape[1] - 1):
                    A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i - 1, j] + B[i + 1, j])
        return A, B

    @njit(parallel=True, cache=False)
    def vec_add(a, b):
        c = np.empty_like(a)
        for i in prange(a.shape[0]):
            c[i] = a[i] + b[i]
        return c

    @njit(parallel=True, cache=False)
    def syrk(alpha, beta, C, A):
        for i in prange(A.shape[0]):
            for j in range(i + 1):
                C[i, j] *= beta
            for k in range(A.shape[1]):
                for j in range(i + 1):
                    C[i, j] += alpha * A[i, k] * A[j, k]
        return C

    @njit(parallel=True, cache=False)
    def rowwise_max(a, b):
        for i in prange(a.shape[0]):
            s = -np.inf
            for j in range(a.shape[1]):
                s = max(s, a[i, j])
            b[i] = s

    @njit(parallel=True, cache=False)
    def jacobi_1d(TSTEPS, A, B):
        for t in range(1, TSTEPS):
            for i in prange(1, A.shape[0] - 1):
                B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
            for i in prange(1, B.shape[0] - 1):
                A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
        return A, B

    @njit(parallel=True, cache=False)
    def go_fast(a):
        trace = 0.0
        for i in prange(a.shape[0]):
            trace += np.tanh(a[i, i])
        return a + trace

    @njit(parallel=True, cache=False)
    def softmax(x, out):
        for i in prange(x.shape[0]):
            m = -np.inf
            for j in range(x.shape[1]):
                m = max(m, x[i, j])
            s = 0.0
            for j in range(x.shape[1]):
                out[i, j] = np.exp(x[i, j] - m)
                s += out[i, j]
            for j in range(x.shape[1]):
                out[i, j] = out[i, j] / s
        return out

    @njit(parallel=True, cache=False)
    def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
        M, N = A.shape
        for i in prange(M):
            for j in range(N):
                A[i, j] += u1[i] * v1[j] + u2[i] * v2[j]
        for j in prange(N):
            s = 0.0
            for i in range(M):
                s += beta * y[i] * A[i, j]
            x[j] += s + z[j]
        for i in prange(M):
            s = 0.0
            for j in range(N):
                s += alpha * A[i, j] * x[j]
            w[i] += s
        return A, x, w

    @njit(parallel=True, cache=False)
    def spmv(A_data, A_indptr, A_indices, x, M):
        y = np.empty(M, dtype=x.dtype)
        for i in prange(M):
            s = 0.0
            for j in range(A_indptr[i], A_indptr[i + 1]):
                s += A_data[j] * x[A_indices[j]]
            y[i] = s
        return y

    @njit(parallel=True, cache=False)
    def syr2k(alpha, beta, C, A, B):
        for i in prange(A.shape[0]):
            for j in range(i + 1):
                C[i, j] *= beta
            for k in range(A.shape[1]):
                for j in range(i + 1):
                    C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]
        return C

    @njit(parallel=True, cache=False)
    def fdtd_2d(TMAX, ex, ey, hz, fict):
        for t in range(TMAX):
            for j in prange(ey.shape[1]):
                ey[0, j] = fict[t]
            for i in prange(1, ey.shape[0]):
                for j in range(ey.shape[1]):
                    ey[i, j] -= 0.5 * (hz[i, j] - hz[i - 1, j])
            for i in prange(ex.shape[0]):
                for j in range(1, ex.shape[1]):
                    ex[i, j] -= 0.5 * (hz[i, j] - hz[i, j - 1])
            for i in prange(hz.shape[0] - 1):
                for j in range(hz.shape[1] - 1):
                    hz[i, j] -= 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
        return ex, ey, hz

    @njit(parallel=True, cache=False)
    def black_scholes(price, strike, t, rate, vol, call, put):
        for i in prange(price.shape[0]):
            a = np.log(price[i] / strike[i])
            b = t[i] * -rate
            z = t[i] * vol * vol * 2.0
            c = 0.25 * z
            y = 1.0 / np.sqrt(z)
            d1 = 0.5 + 0.5 * math.erf((a - b + c) * y)
            d2 = 0.5 + 0.5 * math.erf((a - b - c) * y)
            se = np.exp(b) * strike[i]
            call[i] = price[i] * d1 - se * d2
            put[i] = call[i] - price[i] + se
        return call, put

    @njit(parallel=True, cache=False)
    def trmm(alpha, A, B):
        M, N = B.shape
        for j in prange(N):
            for i in range(M):
                s = 0.0
                for k in range(i + 1, M):
                    s += A[k, i] * B[k, j]
                B[i, j] = alpha * (B[i, j] + s)
        return B

    @njit(parallel=True, cache=False)
    def floyd_warshall(path):
        N = path.shape[0]
        row = np.empty(N, dtype=path.dtype)
        for k in range(N):
            for j in range(N):  # (an array expression here becomes a parfor that Numba fuses with the prange: wrong results)
                row[j] = path[k, j]
            for i in prange(N):
                pik = path[i, k]
                for j in range(N):
                    path[i, j] = min(path[i, j], pik + row[j])
        return path

    return {
        "trmm": trmm,
        "floyd_warshall": floyd_warshall,
        "syr2k": syr2k,
        "fdtd_2d": fdtd_2d,
        "black_scholes": black_scholes,
        "spmv": spmv,
        "gesummv": gesummv, "jacobi_2d": jacobi_2d, "vec_add": vec_add, "syrk": syrk, "rowwise_max": rowwise_max,
        "jacobi_1d": jacobi_1d, "go_fast": go_fast, "softmax": softmax, "gemver": gemver,
    }


def workloads(rng):
    N = 2000
    A, B, x = rng.random((N, N)), rng.random((N, N)), rng.random(N)
    J = 1000
    JA, JB = rng.random((J, J)), rng.random((J, J))
    a, b = rng.random(2**22), rng.random(2**22)
    S = 500
    SC, SA = rng.random((S, S)), rng.random((S, S))
    R = rng.random((2000, 2000))

    def jacobi_np(T, A_, B_):
        for _ in range(1, T):
            B_[1:-1, 1:-1] = 0.2 * (A_[1:-1, 1:-1] + A_[1:-1, :-2] + A_[1:-1, 2:] + A_[2:, 1:-1] + A_[:-2, 1:-1])
            A_[1:-1, 1:-1] = 0.2 * (B_[1:-1, 1:-1] + B_[1:-1, :-2] + B_[1:-1, 2:] + B_[2:, 1:-1] + B_[:-2, 1:-1])
        return A_, B_

    def syrk_np(alpha, beta, C_, A_):
        for i in range(A_.shape[0]):
            C_[i, : i + 1] *= beta
            for k in range(A_.shape[1]):
                C_[i, : i + 1] += alpha * A_[i, k] * A_[: i + 1, k]
        return C_

    def rowmax_np(a_, b_):
        np.max(a_, axis=1, out=b_)

    J1 = 2**20
    J1A, J1B = rng.random(J1), rng.random(J1)

    def jacobi_1d_np(T, A_, B_):
        for _ in range(1, T):
            B_[1:-1] = 0.33333 * (A_[:-2] + A_[1:-1] + A_[2:])
            A_[1:-1] = 0.33333 * (B_[:-2] + B_[1:-1] + B_[2:])
        return A_, B_

    G = rng.random((2000, 2000))
    X = rng.standard_normal((1000, 2048))

    def softmax_np(x_, out):
        e = np.exp(x_ - x_.max(1, keepdims=True))
        out[...] = e / e.sum(1, keepdims=True)
        return out

    V = 2000
    GA = rng.random((V, V))
    gv = [rng.random(V) for _ in range(8)]

    def gemver_args():
        u1, v1, u2, v2, w, x_, y, z = (v.copy() for v in gv)
        return (1.5, 1.2, GA.copy(), u1, v1, u2, v2, w, x_, y, z)

    def gemver_np(alpha, beta, A_, u1, v1, u2, v2, w, x_, y, z):
        A_ += np.outer(u1, v1) + np.outer(u2, v2)
        x_ += beta * y @ A_ + z
        w += alpha * A_ @ x_
        return A_, x_, w

    SM = 20000  # CSR, 0.1% dense: 400000 nonzeros
    nnz_row = rng.binomial(SM, 0.001, SM)
    sp_indptr = np.concatenate([[0], np.cumsum(nnz_row)]).astype(np.int32)
    sp_indices = np.concatenate([np.sort(rng.choice(SM, k, replace=False)) for k in nnz_row]).astype(np.int32)
    sp_data, sp_x = rng.random(len(sp_indices)), rng.random(SM)
    sp_rows = np.repeat(np.arange(SM), nnz_row)

    def spmv_np(data, indptr, indices, x_, M):
        return np.bincount(sp_rows, weights=data * x_[indices], minlength=M)

    S2C, S2A, S2B = rng.random((S, S)), rng.random((S, S)), rng.random((S, S))

    def syr2k_np(alpha, beta, C_, A_, B_):
        for i in range(A_.shape[0]):
            C_[i, : i + 1] *= beta
            for k in range(A_.shape[1]):
                C_[i, : i + 1] += A_[: i + 1, k] * alpha * B_[i, k] + B_[: i + 1, k] * alpha * A_[i, k]
        return C_

    FX, FY, FH, FF = rng.random((1000, 1200)), rng.random((1000, 1200)), rng.random((1000, 1200)), rng.random(20)

    def fdtd_np(TMAX, ex, ey, hz, fict):
        for t in range(TMAX):
            ey[0, :] = fict[t]
            ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
            ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
            hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        return ex, ey, hz

    BN = 2**20
    bp, bs, bt = rng.uniform(10, 50, BN), rng.uniform(10, 50, BN), rng.uniform(1, 2, BN)

    def black_scholes_np(price, strike, t, rate, vol, call, put):
        from scipy.special import erf

        a, b = np.log(price / strike), t * -rate
        z = t * vol * vol * 2.0
        y = 1.0 / np.sqrt(z)
        se = np.exp(b) * strike
        call[:] = price * (0.5 + 0.5 * erf((a - b + 0.25 * z) * y)) - se * (0.5 + 0.5 * erf((a - b - 0.25 * z) * y))
        put[:] = call - price + se
        return call, put

    TM, TN = 500, 600
    TA, TB = rng.random((TM, TM)), rng.random((TM, TN))

    def trmm_np(alpha, A_, B_):  # npbench's
        for i in range(B_.shape[0]):
            for j in range(B_.shape[1]):
                B_[i, j] += np.dot(A_[i + 1 :, i], B_[i + 1 :, j])
        B_ *= alpha
        return B_

    FW = 500
    FWP = rng.integers(1, 100, (FW, FW)).astype(np.float64)
    FWP[rng.random((FW, FW)) < 0.5] = 999.0
    np.fill_diagonal(FWP, 0.0)

    def floyd_warshall_np(path):  # npbench's
        for k in range(path.shape[0]):
            path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))
        return path

    # name: (args factory (fresh copies each call), NumPy reference, output of interest)
    return {
        "gesummv 2000²": ("gesummv", lambda: (1.5, 1.2, A, B, x), lambda *z: 1.5 * A @ x + 1.2 * B @ x, lambda r: r),
        "jacobi_2d 1000², 10 steps": ("jacobi_2d", lambda: (10, JA.copy(), JB.copy()), lambda T, A_, B_: jacobi_np(T, A_, B_), lambda r: r[0]),
        "vec_add 2²²": ("vec_add", lambda: (a, b), lambda *z: a + b, lambda r: r),
        "syrk 500²": ("syrk", lambda: (1.5, 1.2, SC.copy(), SA), lambda al, be, C_, A_: syrk_np(al, be, C_, A_), lambda r: r),
        "row max 2000²": ("rowwise_max", lambda: (R, np.empty(2000)), lambda a_, b_: rowmax_np(a_, b_), None),
        "jacobi_1d 2²⁰, 10 steps": ("jacobi_1d", lambda: (10, J1A.copy(), J1B.copy()), lambda T, A_, B_: jacobi_1d_np(T, A_, B_), lambda r: r[0]),
        "go_fast 2000²": ("go_fast", lambda: (G,), lambda a_: a_ + np.tanh(np.diag(a_)).sum(), lambda r: r),
        "softmax 1000 x 2048": ("softmax", lambda: (X, np.empty_like(X)), softmax_np, lambda r: r),
        "gemver 2000²": ("gemver", gemver_args, gemver_np, lambda r: r[2]),
        "syr2k 500²": ("syr2k", lambda: (1.5, 1.2, S2C.copy(), S2A, S2B), syr2k_np, lambda r: r),
        "fdtd_2d 1000 x 1200, 20 steps": ("fdtd_2d", lambda: (20, FX.copy(), FY.copy(), FH.copy(), FF), fdtd_np, lambda r: r[2]),
        "black_scholes 2²⁰": ("black_scholes", lambda: (bp, bs, bt, 0.1, 0.2, np.empty(BN), np.empty(BN)), black_scholes_np, lambda r: r[0]),
        "spmv CSR 20000², 0.1%": ("spmv", lambda: (sp_data, sp_indptr, sp_indices, sp_x, SM), spmv_np, lambda r: r),
        "trmm 500 x 600 (columns parallel)": ("trmm", lambda: (1.5, TA, TB.copy()), trmm_np, lambda r: r),
        "floyd_warshall 500²": ("floyd_warshall", lambda: (FWP.copy(),), floyd_warshall_np, lambda r: r),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("-k", dest="only", default="", help="only the kernels whose name contains this")
    p.add_argument("--chart", default=None, help="also draw the speeds relative to NumPy (a PNG)")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    nb = numba_kernels()
    rows = []
    for name, (fn, make, ref, pick) in workloads(rng).items():
        if args.only not in name:
            continue
        ours = getattr(npbench, fn)
        peer = nb[fn]

        def result(f):
            a_ = make()
            out = f(*a_)
            return pick(out) if pick else a_[-1]

        want = result(ref)
        for who, f in (("lt_mlir.appy", ours), ("Numba", peer)):
            got = result(f)
            assert np.allclose(got, want, rtol=1e-9, atol=1e-9), f"{name}: {who} differs from NumPy"
        calls = {}
        for who, f in (("NumPy", ref), ("lt_mlir.appy", ours), ("Numba", peer)):
            inputs = make()
            calls[who] = lambda f=f, inputs=inputs: f(*inputs)
        # one call of each a round: this shared VM's load drifts by tens of
        # percent within a second, and drift then hits all three alike
        times = interleaved_medians(calls, args.repeat, warmup=2)
        rows.append((name, times))
        print(f"{name:28s} " + "  ".join(f"{w} {t * 1e3:8.3f} ms" for w, t in times.items()), flush=True)
    print()
    print(f"host: {os.cpu_count()} cores")
    print("| kernel | NumPy | lt_mlir.appy | Numba parallel | appy ÷ NumPy speed | appy ÷ Numba speed |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name, t in rows:
        r_np, r_nb = t["NumPy"] / t["lt_mlir.appy"], t["Numba"] / t["lt_mlir.appy"]
        ratios.append(r_nb)
        print(f"| {name} | {t['NumPy'] * 1e3:.3f} ms | {t['lt_mlir.appy'] * 1e3:.3f} ms | {t['Numba'] * 1e3:.3f} ms | {r_np:.2f}× | {r_nb:.2f}× |")
    mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geometric mean, lt_mlir.appy speed ÷ Numba's: {mean:.2f}×")
    if args.chart:
        from bench_cpu import chart  # the CPU benchmark's chart, one copy

        title = f"APPy programs on {os.cpu_count()} cores: lt_mlir.appy {mean:.2f}x Numba parallel (geometric mean)"
        chart([{"workload": name, "seconds": t} for name, t in rows], args.chart, title)
        print(f"chart: {args.chart}")


if __name__ == "__main__":
    main()
