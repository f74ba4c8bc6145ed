"""Whole NumPy kernels through lt_mlir.kernel against SciPy, Numba and NumPy.

ReACT's operator sequences (SDDMM, SpMM-MM, sparse softmax) and Intrepydd's
host-loop kernels (Sinkhorn-Knopp as the seed writes it, dense and its sparse
variant with an SDDMM inside, PageRank power
iteration, logistic-regression gradient steps), each timed in one process on the same inputs: lt with the
default redundancy-aware fusion, lt with maximal fusion (TACO's strategy,
the ablation) and without fusion (every operation a buffer, as NumPy runs
it), SciPy/NumPy as their users write the kernel, and Numba (``@njit``
with ``prange`` over rows, as Numba's documentation writes such loops) and
SuiteSparse:GraphBLAS (python-graphblas: masked ``mxm`` is its SDDMM) and
torch.sparse on the CPU (``torch_peers``).
Every result is checked against SciPy/NumPy first.  Timing:
``lt_mlir.runtime.timing.block_medians`` (blocks that alternate, a pause
before each: OpenMP's, OpenBLAS's and Numba's threads spin after a
call).  Ratios are each peer's time over lt's.  A peer that is not
installed (python-graphblas, torch) is reported as absent; PyData
``sparse`` is not timed (its SDDMM materialises ``B @ C.T`` as SciPy's
does).

    python benchmarks/bench_sparse.py [--quick | --check] [--only NAME] [--mtx FILE.mtx]
                                      [--markdown docs/bench-sparse.md] [--chart docs/bench-sparse.png]

``--check`` (in CI: ``tests/test_bench_sparse.py``) runs every variant at
small sizes against the reference and times nothing.

``--mtx`` runs SDDMM, SpMM-MM and sparse softmax on a Matrix Market file
(``scipy.io.mmread``) instead of the generated matrices.

``--cores N`` runs everything on N of the host's cores (the one-core row of
the issue): the process is pinned to the first N it may use and every
library's threads are N (OpenMP's -- lt's parallel loops and GraphBLAS --,
OpenBLAS's, Numba's and torch's), set before NumPy is imported.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys


def _pin_cores(argv: list) -> int | None:
    """``--cores N`` from the command line, applied before any library
    starts its threads: the first N allowed CPUs, N threads everywhere.
    None when absent (or not a number: argparse then says so)."""
    for k, a in enumerate(argv):
        value = argv[k + 1] if a == "--cores" and k + 1 < len(argv) else a.partition("=")[2] if a.startswith("--cores=") else None
        if value is None:
            continue
        try:
            n = int(value)
        except ValueError:
            return None
        allowed = sorted(os.sched_getaffinity(0))
        if not 1 <= n <= len(allowed):
            return None
        os.sched_setaffinity(0, allowed[:n])
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            os.environ[var] = str(n)
        return n
    return None


CORES = _pin_cores(sys.argv[1:]) if __name__ == "__main__" else None

import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from lt_mlir.kernel import CSR, Array, float32, float64, kernel  # noqa: E402
from lt_mlir.runtime.timing import block_medians  # noqa: E402


def _kernels(fusion: str) -> dict:
    # reassociation allowed (as TACO's code and GraphBLAS's assume): the maximal ablation then has TACO's
    # form, the sampled value multiplied into every term of the dot product (lt-sink-factor: type 1)
    @kernel(fusion=fusion, fastmath="fast")
    def sddmm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return A * (B @ C.T)

    @kernel(fusion=fusion)
    def spmm_mm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return (A @ B) @ C

    @kernel(fusion=fusion)
    def sparse_softmax(A: CSR(float32)):
        m = A.max(axis=1)
        e = np.exp(A - m[:, None])
        return e / e.sum(axis=1)[:, None]

    @kernel(fusion=fusion)
    def sinkhorn(r: Array(float64, 1), c: Array(float64, 1), K: Array(float64, 2), max_iter: int):
        x = np.full(r.shape[0], 1.0 / r.shape[0])
        it = 0
        while it < max_iter:
            u = 1.0 / x
            v = c * (1 / (K.T @ u))
            x = ((1 / r)[:, None] * K) @ v
            it += 1
        return x

    @kernel(fusion=fusion)
    def sinkhorn_wmd(r: Array(float64, 1), c: CSR(float64), K: Array(float64, 2), max_iter: int):
        x = np.full((r.shape[0], c.shape[1]), 1.0 / r.shape[0])
        it = 0
        while it < max_iter:
            u = 1.0 / x
            v = c * (1 / (K.T @ u))  # SDDMM
            x = ((1 / r)[:, None] * K) @ v
            it += 1
        return x

    @kernel(fusion=fusion)
    def pagerank(A: CSR(float64), out_degree: Array(float64, 1), damping: float, iterations: int):
        n = out_degree.shape[0]
        x = np.full(n, 1.0 / n)
        for _ in range(iterations):
            x = damping * (A @ (x / out_degree)) + (1.0 - damping) / n
        return x

    @kernel(fusion=fusion)
    def logistic(X: Array(float32, 2), y: Array(float32, 1), w: Array(float32, 1), lr: float, steps: int):
        for _ in range(steps):
            p = 1.0 / (1.0 + np.exp(-(X @ w)))
            w = w - lr * (X.T @ (p - y)) / X.shape[0]
        return w

    return dict(sddmm=sddmm, spmm_mm=spmm_mm, sparse_softmax=sparse_softmax, sinkhorn=sinkhorn, sinkhorn_wmd=sinkhorn_wmd, pagerank=pagerank,
                logistic=logistic)


# ------------------------------------------------------------ the peers


def numpy_logistic(X, y, w, lr, steps):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - lr * (X.T @ (p - y)) / X.shape[0]
    return w


def scipy_sddmm(A, B, C):
    return A.multiply(B @ C.T).tocsr()


def scipy_spmm_mm(A, B, C):
    return (A @ B) @ C


def scipy_sparse_softmax(A):
    m = A.max(axis=1).toarray().ravel()
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    e = np.exp(A.data - m[rows])
    s = np.bincount(rows, weights=e, minlength=A.shape[0])
    return sp.csr_array(((e / s[rows]).astype(A.dtype), A.indices, A.indptr), shape=A.shape)


def numpy_sinkhorn(r, c, K, max_iter):
    x = np.full(r.shape[0], 1.0 / r.shape[0])
    it = 0
    while it < max_iter:
        u = 1.0 / x
        v = c * (1 / (K.T @ u))
        x = ((1 / r)[:, None] * K) @ v
        it += 1
    return x


def scipy_sinkhorn_wmd(r, c, K, max_iter):
    x = np.full((r.shape[0], c.shape[1]), 1.0 / r.shape[0])
    it = 0
    while it < max_iter:
        u = 1.0 / x
        v = c.multiply(1 / (K.T @ u)).tocsr()  # SDDMM, as SciPy users write it: K.T @ u made whole
        x = ((1 / r)[:, None] * K) @ v
        it += 1
    return x


def scipy_pagerank(A, out_degree, damping, iterations):
    n = out_degree.shape[0]
    x = np.full(n, 1.0 / n)
    for _ in range(iterations):
        x = damping * (A @ (x / out_degree)) + (1.0 - damping) / n
    return x


def numba_kernels() -> dict:
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def sddmm(indptr, indices, data, B, C):
        out = np.empty_like(data)
        for i in prange(indptr.shape[0] - 1):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                s = np.float32(0.0)
                for k in range(B.shape[1]):
                    s += B[i, k] * C[j, k]
                out[p] = data[p] * s
        return out

    @njit(parallel=True, cache=False)
    def spmm_mm(indptr, indices, data, B, C):
        n = indptr.shape[0] - 1
        out = np.zeros((n, C.shape[1]), dtype=B.dtype)
        for i in prange(n):
            t = np.zeros(B.shape[1], dtype=B.dtype)
            for p in range(indptr[i], indptr[i + 1]):
                t += data[p] * B[indices[p]]
            for h in range(B.shape[1]):
                for j in range(C.shape[1]):
                    out[i, j] += t[h] * C[h, j]
        return out

    @njit(parallel=True, cache=False)
    def sparse_softmax(indptr, data):
        out = np.empty_like(data)
        for i in prange(indptr.shape[0] - 1):
            lo, hi = indptr[i], indptr[i + 1]
            if hi > lo:
                m = data[lo:hi].max()
                s = 0.0
                for p in range(lo, hi):
                    out[p] = np.exp(data[p] - m)
                    s += out[p]
                for p in range(lo, hi):
                    out[p] /= s
        return out

    @njit(parallel=True, cache=False)
    def sinkhorn(r, c, K, max_iter):
        n, m = K.shape
        x = np.full(n, 1.0 / n)
        inv_r = 1.0 / r
        v = np.empty(m)
        for _ in range(max_iter):
            ktu = np.zeros(m)
            for i in range(n):
                u = 1.0 / x[i]
                for j in range(m):
                    ktu[j] += K[i, j] * u
            for j in range(m):
                v[j] = c[j] / ktu[j]
            for i in prange(n):
                s = 0.0
                for j in range(m):
                    s += K[i, j] * v[j]
                x[i] = inv_r[i] * s
        return x

    @njit(parallel=True, cache=False)
    def sinkhorn_wmd(r, indptr, indices, data, docs, K, max_iter):
        n, m = K.shape
        x = np.full((n, docs), 1.0 / n)
        inv_r = 1.0 / r
        v = np.empty(data.shape[0])
        for _ in range(max_iter):
            for k in prange(m):  # v = c * (1 / (K.T @ u)) at c's stored positions
                for p in range(indptr[k], indptr[k + 1]):
                    j = indices[p]
                    s = 0.0
                    for i in range(n):
                        s += K[i, k] / x[i, j]
                    v[p] = data[p] / s
            nx = np.zeros((n, docs))
            for i in prange(n):  # x = ((1 / r)[:, None] * K) @ v
                for k in range(m):
                    w = inv_r[i] * K[i, k]
                    for p in range(indptr[k], indptr[k + 1]):
                        nx[i, indices[p]] += w * v[p]
            x = nx
        return x

    @njit(parallel=True, cache=False)
    def pagerank(indptr, indices, data, out_degree, damping, iterations):
        n = out_degree.shape[0]
        x = np.full(n, 1.0 / n)
        for _ in range(iterations):
            y = x / out_degree
            nx = np.empty(n)
            for i in prange(n):
                s = 0.0
                for p in range(indptr[i], indptr[i + 1]):
                    s += data[p] * y[indices[p]]
                nx[i] = damping * s + (1.0 - damping) / n
            x = nx
        return x

    @njit(parallel=True, cache=False)
    def logistic(X, y, w, lr, steps):
        n, d = X.shape
        w = w.copy()
        for _ in range(steps):
            p = np.empty(n, dtype=X.dtype)
            for i in prange(n):
                z = np.float32(0.0)
                for j in range(d):
                    z += X[i, j] * w[j]
                p[i] = 1.0 / (1.0 + np.exp(-z)) - y[i]
            grad = np.zeros(d, dtype=X.dtype)
            for i in range(n):
                for j in range(d):
                    grad[j] += X[i, j] * p[i]
            for j in range(d):
                w[j] -= lr * grad[j] / n
        return w

    return dict(sddmm=sddmm, spmm_mm=spmm_mm, sparse_softmax=sparse_softmax, sinkhorn=sinkhorn, sinkhorn_wmd=sinkhorn_wmd, pagerank=pagerank,
                logistic=logistic)


# ------------------------------------------------------------ workloads


def workloads(quick: bool, mtx: str | None, check: bool = False) -> list:
    rng = np.random.default_rng(0)
    n = 256 if check else 1024 if quick else 4096
    if mtx:
        A = sp.csr_array(scipy.io.mmread(mtx)).astype(np.float32)
        A.sum_duplicates()
        A.sort_indices()
        label = os.path.basename(mtx)
    else:
        A = sp.random(n, n, density=0.01, format="csr", dtype=np.float32, random_state=1)
        label = f"{n}² 1%"
    A_sparse = sp.random(n, n, density=0.001, format="csr", dtype=np.float32, random_state=2) if not mtx else A
    rows, cols = A.shape
    out = []
    for K, M in ((64, A), (256, A_sparse)):
        B = rng.random((M.shape[0], K), dtype=np.float32)
        C = rng.random((M.shape[1], K), dtype=np.float32)
        dens = "1%" if M is A else "0.1%"
        out.append(("sddmm", f"SDDMM {label if M is A else f'{n}² {dens}'} K={K}", (M, B, C)))
    NH, NJ = 64, 64
    out.append(("spmm_mm", f"SpMM-MM {label} H=J={NH}", (A, rng.random((cols, NH), dtype=np.float32), rng.random((NH, NJ), dtype=np.float32))))
    out.append(("sparse_softmax", f"sparse softmax {label}", (A,)))
    m = 128 if check else 1024 if quick else 2048
    r = rng.random(m) + 0.5
    c = rng.random(m) + 0.5
    Kd = rng.random((m, m))
    out.append(("sinkhorn", f"Sinkhorn {m}² dense, 20 iterations", (r, c, Kd, 20)))
    # the seed's sparse variant (Intrepydd's word mover's distance): a query of
    # `words` words against `docs` documents over a vocabulary, c their CSR counts
    words, vocab, docs = (8, 256, 64) if check else (32, 2048, 256) if quick else (64, 8192, 1024)
    rw = rng.random(words) + 0.5
    cw = sp.random(vocab, docs, density=0.01, format="csr", dtype=np.float64, random_state=4)
    cw = sp.csr_array(cw + sp.csr_array((np.ones(docs), (rng.integers(0, vocab, docs), np.arange(docs))), shape=(vocab, docs)))
    cw.sum_duplicates()
    cw.sort_indices()  # every document has a word: no column of x goes to zero
    Kw = np.exp(-4.0 * rng.random((words, vocab)))
    out.append(("sinkhorn_wmd", f"Sinkhorn sparse (WMD) {words}x{vocab}, {docs} docs 1%, 10 iterations", (rw, cw, Kw, 10)))
    G = sp.random(n * 4, n * 4, density=2e-3 if not quick else 5e-3, format="csr", dtype=np.float64, random_state=3)
    G.data[:] = 1.0
    deg = np.maximum(np.asarray(G.sum(axis=0)).ravel(), 1.0)
    out.append(("pagerank", f"PageRank {n * 4} nodes, {G.nnz} edges, 20 iterations", (G, deg, 0.85, 20)))
    rows, d = (512, 32) if check else (16384, 256) if not quick else (4096, 128)
    X = (rng.random((rows, d), dtype=np.float32) - 0.5)
    yv = (rng.random(rows) < 0.5).astype(np.float32)
    out.append(("logistic", f"logistic regression {rows}x{d} f32, 20 steps", (X, yv, np.zeros(d, np.float32), 0.5, 20)))
    return out


def graphblas_peers(name: str, args) -> dict:
    """SuiteSparse:GraphBLAS through python-graphblas, its inputs converted
    before timing: SDDMM is its masked ``mxm`` (the dot-product method,
    ``B @ C.T`` under A's structure) times A; SpMM-MM two ``mxm``s;
    PageRank ``mxv`` in the same loop."""
    try:
        import graphblas as gb
    except ImportError:
        return {}
    if name == "sddmm":
        A, B, C = args
        gA, gB, gC = gb.io.from_scipy_sparse(A), gb.Matrix.from_dense(B), gb.Matrix.from_dense(C)

        def run():
            R = gb.semiring.plus_times(gB @ gC.T).new(mask=gA.S)
            return gb.io.to_scipy_sparse(R.ewise_mult(gA, gb.binary.times).new(), format="csr")

        return {"GraphBLAS": run}
    if name == "spmm_mm":
        A, B, C = args
        gA, gB, gC = gb.io.from_scipy_sparse(A), gb.Matrix.from_dense(B), gb.Matrix.from_dense(C)
        return {"GraphBLAS": lambda: gb.semiring.plus_times(gb.semiring.plus_times(gA @ gB).new() @ gC).new().to_dense(fill_value=0)}
    if name == "pagerank":
        A, deg, damping, iterations = args
        gA = gb.io.from_scipy_sparse(A)

        def run():
            n = deg.shape[0]
            x = np.full(n, 1.0 / n)
            for _ in range(iterations):
                y = gb.Vector.from_dense(x / deg)
                x = damping * gb.semiring.plus_times(gA @ y).new().to_dense(fill_value=0.0) + (1.0 - damping) / n
            return x

        return {"GraphBLAS": run}
    return {}


def torch_peers(name: str, args) -> dict:
    """torch.sparse on the CPU (its threads set to the cores this process may use), its
    inputs converted before timing, as a torch user writes each kernel:
    SDDMM is ``torch.sparse.sampled_addmm`` (B @ C.T at A's structure) times
    A's values, SpMM-MM ``(A @ B) @ C`` with A a CSR tensor, sparse softmax
    ``torch.sparse.softmax`` over the stored values (unstored entries count
    as -inf; it takes A as COO, CSR has no softmax on the CPU).  Stored
    values come back as NumPy arrays in A's order (``_values``)."""
    try:
        import torch
    except ImportError:
        return {}
    import warnings

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    if name not in ("sddmm", "spmm_mm", "sparse_softmax"):
        return {}
    A = args[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "CSR support is in beta", "invariant checks are disabled"
        tA = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)), torch.from_numpy(A.indices.astype(np.int64)),
                                     torch.from_numpy(A.data), size=A.shape)
    if name == "sddmm":
        tB, tCT = torch.from_numpy(args[1]), torch.from_numpy(args[2]).T
        return {"torch.sparse": lambda: (torch.sparse.sampled_addmm(tA, tB, tCT, beta=0.0).values() * tA.values()).numpy()}
    if name == "spmm_mm":
        tB, tC = torch.from_numpy(args[1]), torch.from_numpy(args[2])
        return {"torch.sparse": lambda: ((tA @ tB) @ tC).numpy()}
    coo = tA.to_sparse_coo().coalesce()
    return {"torch.sparse": lambda: torch.sparse.softmax(coo, dim=1).values().numpy()}


def _peer(name: str, args, numba: dict | None) -> dict:
    """The peers in order, SciPy/NumPy (the reference) first."""
    peers = {}
    if name == "sddmm":
        peers["SciPy"] = lambda: scipy_sddmm(*args)
    elif name == "spmm_mm":
        peers["SciPy"] = lambda: scipy_spmm_mm(*args)
    elif name == "sparse_softmax":
        peers["SciPy"] = lambda: scipy_sparse_softmax(*args)
    elif name == "sinkhorn":
        peers["NumPy"] = lambda: numpy_sinkhorn(*args)
    elif name == "sinkhorn_wmd":
        peers["SciPy"] = lambda: scipy_sinkhorn_wmd(*args)
    elif name == "pagerank":
        peers["SciPy"] = lambda: scipy_pagerank(*args)
    elif name == "logistic":
        peers["NumPy"] = lambda: numpy_logistic(*args)
    peers.update(graphblas_peers(name, args))
    peers.update(torch_peers(name, args))
    if numba is not None:
        f = numba[name]
        if name in ("sddmm", "spmm_mm"):
            A, B, C = args
            peers["Numba"] = lambda: f(A.indptr, A.indices, A.data, B, C)
        elif name == "sparse_softmax":
            peers["Numba"] = lambda: f(args[0].indptr, args[0].data)
        elif name in ("sinkhorn", "logistic"):
            peers["Numba"] = lambda: f(*args)
        elif name == "sinkhorn_wmd":
            r, c, K, it = args
            peers["Numba"] = lambda: f(r, c.indptr, c.indices, c.data, c.shape[1], K, it)
        elif name == "pagerank":
            A, deg, d, it = args
            peers["Numba"] = lambda: f(A.indptr, A.indices, A.data, deg, d, it)
    return peers


def bound(name: str, args):
    """What a kernel that reads its dense operand once an iteration cannot
    beat: that many passes of BLAS's matrix-vector product over the operand
    (NumPy's ``@``, every thread), K's for Sinkhorn, X's for a logistic
    regression step; None for the other workloads (their bound is not one
    BLAS call)."""
    if name == "sinkhorn":
        K, iterations = args[2], args[3]
        v = np.ones(K.shape[1])
        return lambda: [K @ v for _ in range(iterations)]
    if name == "logistic":
        X, steps = args[0], args[4]
        w = np.ones(X.shape[1], X.dtype)
        return lambda: [X @ w for _ in range(steps)]
    return None


def _values(x, inputs):
    """A result as a dense array (a CSR's stored values from Numba: at the
    structure of the first input)."""
    if sp.issparse(x):
        return x.toarray()
    A = inputs[0]
    if sp.issparse(A) and np.ndim(x) == 1 and x.shape[0] == A.nnz:
        return sp.csr_array((x, A.indices, A.indptr), shape=A.shape).toarray()
    return np.asarray(x)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run)")
    ap.add_argument("--check", action="store_true", help="small inputs: check every variant's result, time nothing")
    ap.add_argument("--chart", help="draw the ratios here (PNG)")
    ap.add_argument("--only", help="run the workloads whose name contains this")
    ap.add_argument("--mtx", help="a Matrix Market file for the sparse workloads")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--markdown", help="write the table here too")
    ap.add_argument("--cores", type=int, help="run on this many of the host's cores (every library's threads too)")
    args = ap.parse_args(argv)
    if args.cores is not None and args.cores != CORES:
        n = len(os.sched_getaffinity(0))
        why = f"this process may use 1..{n} cores" if CORES is None else "give it on the command line of the script"
        print(f"bench_sparse: error: --cores {args.cores}: {why}", file=sys.stderr)
        return 1
    if CORES:
        print(f"on {CORES} core(s): CPUs {sorted(os.sched_getaffinity(0))}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}", flush=True)
    if args.mtx and not os.path.exists(args.mtx):
        print(f"bench_sparse: error: {args.mtx}: no such file", file=sys.stderr)
        return 1
    strategies = {s: _kernels(s) for s in ("redundancy-aware", "maximal", "none")}
    try:
        numba = numba_kernels()
    except ImportError:
        numba = None
    absent = (["Numba"] if numba is None else []) + [name for name, mod in (("python-graphblas", "graphblas"), ("torch.sparse", "torch"))
                                                     if _missing(mod)]
    rows = []
    for name, label, inputs in workloads(args.quick, args.mtx, args.check):
        if args.only and args.only not in name and args.only not in label:
            continue
        fns = {f"lt {s}": (lambda k=ks[name]: k(*inputs)) for s, ks in strategies.items()}
        fns.update(_peer(name, inputs, numba))
        ref = _values(next(f for n, f in fns.items() if not n.startswith("lt"))(), inputs)
        for n, f in fns.items():
            got = _values(f(), inputs)
            if not np.allclose(got, ref, rtol=2e-3, atol=1e-5 * np.abs(ref).max()):
                print(f"bench_sparse: error: {label}: {n} disagrees with the reference (max |diff| {np.abs(got - ref).max():.3g})", file=sys.stderr)
                return 1
        if args.check:
            print(f"{label} ok: {', '.join(fns)}", flush=True)
            continue
        if bound(name, inputs) is not None:  # timed with the rest, not a result to check
            fns["bound"] = bound(name, inputs)
        times = block_medians(fns, rounds=args.rounds, per_block=2 if name in ("sinkhorn", "sinkhorn_wmd", "pagerank", "logistic") else 3)
        lt_time = times["lt redundancy-aware"]
        row = {"workload": label, "lt ms": lt_time * 1e3}
        for n, t in times.items():
            if n != "lt redundancy-aware":
                row[n] = t / lt_time
        rows.append(row)
        print(f"{label:48s} lt {lt_time * 1e3:9.3f} ms  " + "  ".join(f"{n} {row[n]:6.2f}x" for n in times if n != "lt redundancy-aware"), flush=True)
    if args.check:
        return 0
    table = _table(rows, absent)
    print()
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(table + "\n")
    if args.chart:
        chart(rows, args.chart)
    return 0


def chart(rows: list, path: str) -> None:
    """Each peer's time over lt's, a bar a peer per workload (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [c for c in ("lt maximal", "lt none", "SciPy", "NumPy", "Numba", "GraphBLAS", "torch.sparse") if any(c in r for r in rows)]
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(rows) * (1 + len(labels) / 4) + 1.5))
    height = 0.8 / len(labels)
    for j, label in enumerate(labels):
        ys = [i + j * height for i in range(len(rows))]
        ax.barh(ys, [r.get(label, 0) for r in rows], height=height, label=label)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))])
    ax.set_yticklabels([r["workload"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("peer's time / lt_mlir.kernel's time (redundancy-aware; > 1: lt is faster; log scale)")
    ax.set_title("lt_mlir.kernel: sparse and host-loop kernels")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


def _table(rows: list, absent: list) -> str:
    cols = ["lt maximal", "lt none", "SciPy", "NumPy", "Numba", "GraphBLAS", "torch.sparse", "bound"]
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    from lt_mlir.tuning import host

    lines = [
        f"Host: {cpu} ({host()['cpu']}), {os.cpu_count()} cores{f', run on {CORES}' if CORES else ''}.  lt = redundancy-aware fusion (the default); each other column is its time over lt's (>1: lt is faster).",
        "",
        "| workload | lt (ms) | " + " | ".join(f"× {c}" for c in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for r in rows:
        cells = [f"{r[c]:.2f}" if c in r else "" for c in cols]
        lines.append(f"| {r['workload']} | {r['lt ms']:.3f} | " + " | ".join(cells) + " |")
    if any("bound" in r for r in rows):
        lines.append("")
        lines.append("× bound: one pass over the dense operand an iteration (K for Sinkhorn, X for a logistic regression step) as BLAS's "
                     "matrix-vector product, every thread, over lt's time: 1.00 is that bound; NumPy's column over it is how many such "
                     "passes NumPy's code spends, the most lt's ratio to NumPy can be.")
    if absent:
        lines.append("")
        lines.append(f"Not installed here, so not timed: {', '.join(absent)}.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
