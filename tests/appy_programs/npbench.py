"""APPy programs as APPy's own npbench tests write them (gesummv, jacobi_2d,
a vector add, a row-wise reduction), with ``import lt_mlir.appy as appy``."""

import math

import numpy as np

import lt_mlir.appy as appy


@appy.jit(backend="cpu")
def gesummv(alpha, beta, A, B, x):
    y = np.empty((A.shape[0], ), dtype=x.dtype)
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        #pragma simd
        for j in range(A.shape[1]):
            s += alpha * A[i, j] * x[j] + beta * B[i, j] * x[j]
        y[i] = s
    return y


@appy.jit
def jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        #pragma parallel for
        for i in range(1, A.shape[0]-1):
            #pragma simd
            for j in range(1, A.shape[1]-1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j-1] + A[i, j+1] +
                                 A[i-1, j] + A[i+1, j])
        #pragma parallel for
        for i in range(1, B.shape[0]-1):
            #pragma simd
            for j in range(1, B.shape[1]-1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j-1] + B[i, j+1] +
                                 B[i-1, j] + B[i+1, j])
    return A, B


@appy.jit
def vec_add(a, b):
    c = np.empty_like(a)
    #pragma parallel for simd
    for i in range(a.shape[0]):
        c[i] = a[i] + b[i]
    return c


@appy.jit
def row_max_exp(X):
    y = np.empty(X.shape[0], dtype=X.dtype)
    #pragma parallel for
    for i in range(X.shape[0]):
        m = -1e30
        for j in range(X.shape[1]):
            m = max(m, X[i, j])
        y[i] = np.exp(m) if m < 5.0 else 5.0
    return y


@appy.jit
def shifted_race(a):
    #pragma parallel for
    for i in range(a.shape[0] - 1):
        a[i + 1] = a[i] * 2.0
    return a


@appy.jit(unsafe=True)
def shifted_unsafe(a, b):
    #pragma parallel for
    for i in range(a.shape[0] - 1):
        b[i + 1] = a[i] * 2.0
    return b


@appy.jit(backend="cpu")
def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    M, N = A.shape
    #pragma parallel for
    for i in range(M):
        #pragma simd
        for j in range(N):
            A[i, j] += u1[i] * v1[j] + u2[i] * v2[j]

    #pragma parallel for
    for j in range(N):
        s = 0.0
        #pragma simd
        for i in range(M):
            s += beta * y[i] * A[i, j]
        x[j] += s + z[j]

    #pragma parallel for
    for i in range(M):
        s = 0.0
        #pragma simd
        for j in range(N):
            s += alpha * A[i, j] * x[j]
        w[i] += s
    return A, x, w


@appy.jit(backend="cpu")
def rowwise_max(a, b):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = float("-inf")
        #pragma simd
        for j in range(a.shape[1]):
            s = max(s, a[i, j])
        b[i] = s


@appy.jit(backend="cpu")
def rowwise_min(a, b):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = float("inf")
        #pragma simd
        for j in range(a.shape[1]):
            s = min(s, a[i, j])
        b[i] = s


@appy.jit(backend="cpu")
def syrk(alpha, beta, C, A):
    #pragma parallel for
    for i in range(A.shape[0]):
        #pragma simd
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(A.shape[1]):
            #pragma simd
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]
    return C


@appy.jit
def jacobi_1d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        #pragma parallel for simd
        for i in range(1, A.shape[0] - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        #pragma parallel for simd
        for i in range(1, B.shape[0] - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return A, B


@appy.jit
def go_fast(a):
    trace = 0.0
    #pragma parallel for simd shared(trace)
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


@appy.jit
def softmax(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = -np.inf
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = 0.0
        #pragma simd
        for j in range(x.shape[1]):
            out[i, j] = np.exp(x[i, j] - m)
            s += out[i, j]
        #pragma simd
        for j in range(x.shape[1]):
            out[i, j] = out[i, j] / s
    return out


@appy.jit
def spmv(A_data, A_indptr, A_indices, x, M):
    y = np.empty(M, dtype=x.dtype)
    #pragma parallel for
    for i in range(M):
        start, end = A_indptr[i], A_indptr[i + 1]
        s = 0.0
        for j in range(start, end):
            s += A_data[j] * x[A_indices[j]]
        y[i] = s
    return y


@appy.jit
def spmv_simd(A_data, A_indptr, A_indices, x, M):
    """CSR SpMV as APPy's README writes it: the row's loop, of bounds known
    at run time, under ``#pragma simd`` (vector groups and a scalar rest, gathers of x)."""
    y = np.empty(M, dtype=x.dtype)
    #pragma parallel for
    for i in range(M):
        y[i] = 0.0
        #pragma simd
        for j in range(A_indptr[i], A_indptr[i + 1]):
            y[i] += A_data[j] * x[A_indices[j]]
    return y


@appy.jit(backend="cuda-emulated")
def spmv_emulated(A_data, A_indptr, A_indices, x, M):
    y = np.empty(M, dtype=x.dtype)
    #pragma parallel for
    for i in range(M):
        s = 0.0
        for j in range(A_indptr[i], A_indptr[i + 1]):
            s += A_data[j] * x[A_indices[j]]
        y[i] = s
    return y


@appy.jit
def syr2k(alpha, beta, C, A, B):
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(A.shape[1]):
            for j in range(i + 1):
                C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]
    return C


@appy.jit
def fdtd_2d(TMAX, ex, ey, hz, fict):
    for t in range(TMAX):
        #pragma parallel for simd
        for j in range(ey.shape[1]):
            ey[0, j] = fict[t]
        #pragma parallel for
        for i in range(1, ey.shape[0]):
            #pragma simd
            for j in range(ey.shape[1]):
                ey[i, j] -= 0.5 * (hz[i, j] - hz[i - 1, j])
        #pragma parallel for
        for i in range(ex.shape[0]):
            #pragma simd
            for j in range(1, ex.shape[1]):
                ex[i, j] -= 0.5 * (hz[i, j] - hz[i, j - 1])
        #pragma parallel for
        for i in range(hz.shape[0] - 1):
            #pragma simd
            for j in range(hz.shape[1] - 1):
                hz[i, j] -= 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return ex, ey, hz


@appy.jit
def black_scholes(price, strike, t, rate, vol, call, put):
    #pragma parallel for simd
    for i in range(price.shape[0]):
        a = np.log(price[i] / strike[i])
        b = t[i] * -rate
        z = t[i] * vol * vol * 2.0
        c = 0.25 * z
        y = 1.0 / np.sqrt(z)
        w1 = (a - b + c) * y
        w2 = (a - b - c) * y
        d1 = 0.5 + 0.5 * math.erf(w1)
        d2 = 0.5 + 0.5 * math.erf(w2)
        se = np.exp(b) * strike[i]
        call[i] = price[i] * d1 - se * d2
        put[i] = call[i] - price[i] + se
    return call, put


@appy.jit
def trmm(alpha, A, B):
    """npbench's trmm with the columns in parallel: APPy's own version runs
    the rows in parallel, a race (row i reads the rows below it, which other
    iterations write) that lt_mlir refuses; a column only reads itself."""
    M, N = B.shape
    #pragma parallel for
    for j in range(N):
        for i in range(M):
            s = 0.0
            for k in range(i + 1, M):
                s += A[k, i] * B[k, j]
            B[i, j] = alpha * (B[i, j] + s)
    return B


@appy.jit
def floyd_warshall(path):
    """npbench's floyd_warshall with step k's row and column read as they
    were before the step (as npbench's NumPy does): APPy's own version reads
    the row that iteration k writes, a race lt_mlir refuses."""
    N = path.shape[0]
    row = np.empty(N, dtype=path.dtype)
    for k in range(N):
        row[:] = path[k, :]
        #pragma parallel for
        for i in range(N):
            pik = path[i, k]
            #pragma simd
            for j in range(N):
                path[i, j] = min(path[i, j], pik + row[j])
    return path
