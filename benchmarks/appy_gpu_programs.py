"""APPy programs for ``bench_appy_cuda.py``, written as APPy's README and
examples write them (outputs passed in, sizes as arguments: ``appyc`` 0.2.0
rejects ``range(x.shape[0])``).  The module is loaded once for each APPy
implementation with ``jit`` set to its decorator (``appyc``'s
``appy.jit``; ``lt_mlir.appy.jit(backend="cuda")``)."""

jit = globals().get("jit")  # set by the loader before the module runs


@jit
def vec_add(A, B, C, N):
    #pragma parallel for simd
    for i in range(N):
        C[i] = A[i] + B[i]


@jit
def mv(A, x, y, M, N):
    #pragma parallel for
    for i in range(M):
        s = 0.0
        #pragma simd
        for j in range(N):
            s += A[i, j] * x[j]
        y[i] = s


@jit
def jacobi_step(A, B, N):
    #pragma parallel for
    for i in range(1, N - 1):
        #pragma simd
        for j in range(1, N - 1):
            B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])


@jit
def gesummv(alpha, beta, A, B, x, y, M, N):
    #pragma parallel for
    for i in range(M):
        s = 0.0
        #pragma simd
        for j in range(N):
            s += alpha * A[i, j] * x[j] + beta * B[i, j] * x[j]
        y[i] = s


@jit
def spmv(A_row, A_col, A_val, x, y, N):
    #pragma parallel for
    for i in range(N - 1):
        y[i] = 0.0
        #pragma simd
        for j in range(A_row[i], A_row[1 + i]):
            col = A_col[j]
            y[i] += A_val[j] * x[col]
