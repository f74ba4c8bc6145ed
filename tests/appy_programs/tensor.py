"""APPy programs in the tensor-expression form (sliced statements under
``lo:hi=>props`` pragmas), as APPy's README and examples write them."""

import numpy as np

import lt_mlir.appy as appy


@appy.jit(auto_simd=True)
def gesummv(alpha, beta, A, B, x, y, tmp, M, N):
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = appy.mv(alpha * A[:M, :N], x[:N])
    #pragma :M=>parallel :N=>reduce(sum)
    tmp[:M] = appy.mv(beta * B[:M, :N], x[:N])
    #pragma :M=>parallel
    y[:M] += tmp[:M]


@appy.jit(auto_simd=True)
def gemv(alpha, A, x):
    M, N = A.shape
    y = np.empty(M, dtype=A.dtype)
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = alpha * np.sum(A[:M, :N] * x[:N][None, :], axis=1)
    return y


@appy.jit
def jacobi_2d(A, B, steps):
    M, N = A.shape
    for t in range(1, steps):
        #pragma 1:M-1=>parallel 1:N-1=>parallel,simd
        B[1:M-1, 1:N-1] = 0.2 * (A[1:M-1, 1:N-1] + A[1:M-1, :N-2] + A[1:M-1, 2:N] +
                                A[2:M, 1:N-1] + A[0:M-2, 1:N-1])
        #pragma 1:M-1=>parallel 1:N-1=>parallel,simd
        A[1:M-1, 1:N-1] = 0.2 * (B[1:M-1, 1:N-1] + B[1:M-1, :N-2] + B[1:M-1, 2:N] +
                                B[2:M, 1:N-1] + B[0:M-2, 1:N-1])
    return A, B


@appy.jit
def row_max_exp(A):
    M, N = A.shape
    m = np.empty(M, dtype=A.dtype)
    #pragma :M=>parallel :N=>simd,reduce(max)
    m[:M] = np.max(np.exp(A[:M, :N]), axis=1)
    return m


@appy.jit
def total(x):
    N = x.shape[0]
    #pragma :N=>reduce(sum)
    s = np.sum(x[:N])
    return s


@appy.jit
def matmul(A, B, C):
    M, K = A.shape
    N = B.shape[1]
    #pragma :M=>parallel :N=>parallel :K=>reduce(sum)
    C[:M, :N] = A[:M, :K] @ B[:K, :N]
    return C
