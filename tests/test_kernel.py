"""lt_mlir.kernel: whole NumPy kernels (dense and CSR), checked against
NumPy and SciPy, under each fusion strategy."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from lt_mlir.kernel import CSR, Array, KernelError, float32, float64, kernel  # noqa: E402

STRATEGIES = ("redundancy-aware", "maximal", "none")
RNG = np.random.default_rng(20261125)


def _csr(rows, cols, density, dtype=np.float32, seed=1, power_law=False):
    """A random CSR matrix: uniform, or with row lengths from a power law
    (a few long rows, many empty or short ones)."""
    rng = np.random.default_rng(seed)
    if not power_law:
        return sp.random(rows, cols, density=density, format="csr", dtype=dtype, random_state=seed)
    lengths = np.minimum(cols, (rng.pareto(1.2, rows) * density * cols).astype(int))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths] or [[]]).astype(np.int32)
    data = rng.random(indptr[-1]).astype(dtype) - 0.5
    return sp.csr_array((data, indices, indptr), shape=(rows, cols))


def _sparse_softmax_ref(A):
    out = A.astype(np.float64).tocsr(copy=True)
    for i in range(A.shape[0]):
        lo, hi = A.indptr[i], A.indptr[i + 1]
        if hi > lo:
            v = out.data[lo:hi]
            e = np.exp(v - v.max())
            out.data[lo:hi] = e / e.sum()
    return out


@pytest.mark.parametrize("fusion", STRATEGIES)
def test_sddmm_computes_only_stored_positions(fusion):
    @kernel(fusion=fusion)
    def sddmm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return A * (B @ C.T)

    A = _csr(37, 29, 0.15)
    B = RNG.random((37, 19), dtype=np.float32)
    C = RNG.random((29, 19), dtype=np.float32)
    out = sddmm(A, B, C)
    ref = A.astype(np.float64).multiply(B.astype(np.float64) @ C.T.astype(np.float64)).tocsr()
    assert isinstance(out, sp.csr_array) and out.nnz == A.nnz
    np.testing.assert_array_equal(out.indices, A.indices)
    np.testing.assert_allclose(out.data, ref.data, rtol=1e-5, atol=1e-6)
    tree = sddmm.modules[-1].loop_tree
    if fusion == "none":
        assert "alloc f32[i, j]" in tree  # B @ C.T materialised, as SciPy computes it
    else:
        assert "alloc f32[i, j]" not in tree  # the dot products are computed at the stored positions


def test_csr_results_follow_the_argument_from_call_to_call():
    """A CSR result is copied from a template kept for the argument's own
    arrays (``RowMemo.result``): calls with those arrays rewritten in place
    (values, and columns within the rows), with another matrix of the same
    shape and nnz, and with int64 indices (SciPy's constructor converts
    them: no template) each give SciPy's result at the structure of that
    call, and no call's result changes after another call."""

    @kernel
    def sddmm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return A * (B @ C.T)

    def ref(A):
        return A.astype(np.float64).multiply(B.astype(np.float64) @ C.T.astype(np.float64)).tocsr()

    B = RNG.random((12, 5), dtype=np.float32)
    C = RNG.random((10, 5), dtype=np.float32)
    A = sp.csr_array((np.arange(1, 5, dtype=np.float32), np.array([0, 3, 1, 9], np.int32), np.array([0, 2, 2, 3] + [4] * 9, np.int32)),
                     shape=(12, 10))
    results = []
    for step in range(4):
        if step == 1:
            A.data[:] = -A.data  # values rewritten
        if step == 2:
            A.indices[:] = [2, 7, 4, 5]  # columns rewritten, rows still sorted
        if step == 3:
            A.indices = A.indices.astype(np.int64)
            A.indptr = A.indptr.astype(np.int64)
        out = sddmm(A, B, C)
        expect = ref(A)
        np.testing.assert_array_equal(out.indices, expect.indices)
        np.testing.assert_array_equal(out.indptr, expect.indptr)
        np.testing.assert_allclose(out.toarray(), expect.toarray(), rtol=1e-5, atol=1e-6)
        results.append((out, out.toarray()))
    for out, dense in results[2:]:  # structures rewritten since are those the earlier results share with A
        np.testing.assert_array_equal(out.toarray(), dense)
    other = _csr(12, 10, 0.3, seed=5)
    other = sp.csr_array((other.data[:4].copy(), other.indices[:4].copy(), np.minimum(other.indptr, 4)), shape=(12, 10))
    np.testing.assert_allclose(sddmm(other, B, C).toarray(), ref(other).toarray(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fusion", STRATEGIES)
def test_spmm_mm_partial_fusion(fusion):
    @kernel(fusion=fusion)
    def spmm_mm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return (A @ B) @ C

    A = _csr(41, 23, 0.2, power_law=True, seed=3)
    B = RNG.random((23, 9), dtype=np.float32)
    C = RNG.random((9, 13), dtype=np.float32)
    ref = (A.astype(np.float64) @ B.astype(np.float64)) @ C.astype(np.float64)
    np.testing.assert_allclose(spmm_mm(A, B, C), ref, rtol=1e-5, atol=1e-5)
    tree = spmm_mm.modules[-1].loop_tree
    if fusion == "redundancy-aware":
        # one tile of rows of A @ B at a time (ReACT's partial fusion; fusion.tile_rows: R rows, R <= 6)
        assert re.search(r"alloc f32\[i, j\] \((9|18|27|36|45|54) elements\)", tree), tree


@pytest.mark.parametrize("width, J, rows, tile", [(16, 48, 4, 0), (8, 32, 2, 0), (8, 64, 6, 16), (8, 70, 6, 8), (4, 64, 6, 8)])
def test_spmm_mm_row_tiles(width, J, rows, tile):
    """fusion.tile_rows: the dense stage of SpMM-MM takes R rows at a time
    (C's row loaded once for R rows, R x J/width accumulators within half
    the vector registers: 32 with 16 f32 lanes, else 16), rows with no
    stored value and a tail of rows included.  Where a row's J leaves no
    room for 2 rows (64 or 70 on 8 lanes: 8 or 9 vectors), 6 rows take J
    in column tiles of ``tile`` (R x tile/width accumulators, 4 registers
    left; 70 in tiles of 8 with a tail of 6), their loop outside k.  R
    comes from the width the schedule is made for, not the host's."""
    from lt_mlir.kernel import fusion as F

    A = _csr(45, 23, 0.2, power_law=True, seed=4)  # 45: a tail of rows for R = 2, 4 and 6
    assert (np.diff(A.indptr) == 0).any()
    B = RNG.random((23, 9), dtype=np.float32)
    C = RNG.random((9, J), dtype=np.float32)
    made = []
    real = F.schedule

    def schedule(text, owners, keep, strategy, **options):
        made.append(real(text, owners, keep, strategy, **{**options, "width": width})[0])
        return made[-1], set()

    @kernel
    def spmm_mm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return (A @ B) @ C

    F.schedule = schedule
    try:
        out = spmm_mm(A, B, C)
    finally:
        F.schedule = real
    ref = (A.astype(np.float64) @ B.astype(np.float64)) @ C.astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    s = made[-1]
    head = f"for i in {45 // rows} r {45 % rows} : L0 [parallel]"
    assert head in s.loop_tree and f"lt-split{{loop=0 factor={rows}}}" in s.pipeline, s.loop_tree
    if not tile:
        assert f"for i' in {rows} : L8 [unroll full]" in s.loop_tree, s.loop_tree
        return
    blocks = f"{J // tile}" + (f" r {J % tile}" if J % tile else "")
    nest = (f"for j in {blocks} : L7\n  for k in 9 : L8\n   for i' in {rows} : L9 [unroll full]\n"
            f"    for j' in {tile} : L10 [unroll full, vectorize {width}]")
    assert nest in s.loop_tree, s.loop_tree

@pytest.mark.parametrize("fusion", STRATEGIES)
def test_sparse_softmax_over_stored_values(fusion):
    @kernel(fusion=fusion)
    def softmax(A: CSR(float64)):
        m = A.max(axis=1)
        e = np.exp(A - m[:, None])
        return e / e.sum(axis=1)[:, None]

    A = _csr(30, 17, 0.3, dtype=np.float64, power_law=True, seed=5)
    assert (np.diff(A.indptr) == 0).any()  # empty rows included
    out = softmax(A)
    np.testing.assert_allclose(out.data, _sparse_softmax_ref(A).data, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_softmax_is_one_parallel_row_loop(dtype):
    """Redundancy-aware, sparse softmax's four nests (row maximum, the
    exponentials of ``A - m[:, None]``, their row sum, the quotients) are
    one parallel row loop: the exponentials are read twice, so lt-fuse
    leaves them a nest, written by rows (``lower.row_chains``), and
    lt-merge merges the rows, knowing row i's positions its own
    (``indptr`` marked ``lt.monotone``; dependence.row_range).  No nest
    reads a position's row from ``rows`` then.  Empty rows, a full row, one
    column and an empty matrix included, against a row-by-row reference."""
    def softmax(A):
        m = A.max(axis=1)
        e = np.exp(A - m[:, None])
        return e / e.sum(axis=1)[:, None]

    softmax.__annotations__["A"] = CSR(dtype)  # (this file's annotations are strings, evaluated in its globals)
    softmax = kernel(softmax)
    A = _csr(41, 23, 0.3, dtype=dtype, power_law=True, seed=3)
    A = sp.csr_array(sp.vstack([A, sp.csr_array(np.arange(1, 24, dtype=dtype)[None, :] / 7)]))  # a full row
    assert (np.diff(A.indptr) == 0).any()
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(softmax(A).data, _sparse_softmax_ref(A).data, rtol=rtol)
    s = softmax.modules[-1]
    tops = [line for line in s.loop_tree.splitlines() if line.startswith("for ")]
    assert tops == ["for i in 42 : L0 [parallel]"], s.loop_tree
    assert "lt-merge" in s.pipeline and "rows0" not in s.file_text, s.loop_tree
    for B in (_csr(19, 1, 0.5, dtype=dtype, seed=4), sp.csr_array((5, 8), dtype=dtype)):
        np.testing.assert_allclose(softmax(B).data, _sparse_softmax_ref(B).data, rtol=rtol)


def test_rows_of_stored_positions_kept_between_calls_only_for_the_same_indptr():
    """An element-wise op that broadcasts a row's value over its stored
    positions reads the row of each position (``rows``), kept from the last
    call while ``indptr`` is the same (``csr.RowMemo``): reused for the same
    matrix and for new values at the same positions, made again for another
    structure of the same shape and for an ``indptr`` changed in place."""

    @kernel(fusion="none")  # (redundancy-aware: row nests, which read no rows)
    def softmax(A: CSR(float64)):
        m = A.max(axis=1)
        e = np.exp(A - m[:, None])
        return e / e.sum(axis=1)[:, None]

    A = _csr(30, 17, 0.3, dtype=np.float64, power_law=True, seed=5)
    B = _csr(30, 17, 0.3, dtype=np.float64, power_law=True, seed=6)  # same shape, other rows
    assert not np.array_equal(A.indptr, B.indptr)
    memo = lambda: softmax._row_memos["A"]._last[2]  # noqa: E731
    np.testing.assert_allclose(softmax(A).data, _sparse_softmax_ref(A).data, rtol=1e-12)
    first = memo()
    np.testing.assert_array_equal(first, np.repeat(np.arange(30), np.diff(A.indptr)))
    A2 = sp.csr_array((A.data * 3.0, A.indices.copy(), A.indptr.copy()), shape=A.shape)  # new arrays, same structure
    np.testing.assert_allclose(softmax(A2).data, _sparse_softmax_ref(A2).data, rtol=1e-12)
    assert memo() is first
    np.testing.assert_allclose(softmax(B).data, _sparse_softmax_ref(B).data, rtol=1e-12)
    np.testing.assert_array_equal(memo(), np.repeat(np.arange(30), np.diff(B.indptr)))
    # a row's last entry moved to the start of the next row, in place (still sorted: a valid CSR)
    ends = B.indptr[1:-1]
    r = next(r for r in range(29) if B.indptr[r + 1] - B.indptr[r] > 1
             and (B.indptr[r + 2] == ends[r] or B.indices[ends[r]] > B.indices[ends[r] - 1]))
    B.indptr[r + 1] -= 1
    B.has_canonical_format = False  # SciPy's cached flag: the structure changed under it
    np.testing.assert_allclose(softmax(B).data, _sparse_softmax_ref(B).data, rtol=1e-12)
    np.testing.assert_array_equal(memo(), np.repeat(np.arange(30), np.diff(B.indptr)))


def test_spmv_one_column_and_row_sums():
    @kernel
    def f(A: CSR(float32), x: Array(float32, 1)):
        return A @ x, np.sum(A, axis=1), np.sum(A)

    A = _csr(40, 1, 0.5, seed=7)
    x = np.array([1.5], dtype=np.float32)
    y, rows, total = f(A, x)
    np.testing.assert_allclose(y, A.toarray() @ x, rtol=1e-6)
    np.testing.assert_allclose(rows, A.toarray().sum(1), rtol=1e-6)
    assert total == pytest.approx(float(A.toarray().sum()), rel=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csr_row_loops_run_in_vector_groups(dtype):
    """A CSR row's loop over its stored positions (bounds known at run time)
    is vectorized (``lt-vectorize-data``): whole groups of the host's width,
    then the rest scalar, the row's sum or max carried in a vector across
    the groups.  Rows of every length -- empty, shorter than a vector, several
    vectors and a part -- against SciPy."""
    @kernel
    def rows32(A: CSR(float32), x: Array(float32, 1)):
        return A @ x, A.max(axis=1), np.sum(A, axis=1)

    @kernel
    def rows64(A: CSR(float64), x: Array(float64, 1)):
        return A @ x, A.max(axis=1), np.sum(A, axis=1)

    rows = rows32 if dtype == np.float32 else rows64

    A = _csr(200, 300, 0.08, dtype=dtype, power_law=True, seed=11)
    lengths = np.diff(A.indptr)
    assert lengths.min() == 0 and lengths.max() > 40
    x = (RNG.random(300) - 0.5).astype(dtype)
    y, m, total = rows(A, x)
    dense = A.toarray().astype(np.float64)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(y, dense @ x, rtol=0, atol=4 * 300 * eps * (np.abs(dense) @ np.abs(x)).max())
    stored_max = np.array([A.data[a:b].max() if b > a else -np.inf for a, b in zip(A.indptr[:-1], A.indptr[1:])])
    got = np.where(lengths > 0, m, -np.inf)  # an empty row's max is the reduction's identity
    np.testing.assert_array_equal(got, stored_max)
    np.testing.assert_allclose(total, dense.sum(1), rtol=0, atol=4 * 300 * eps * np.abs(dense).sum(1).max())
    tree = rows.modules[-1].loop_tree
    assert tree.count("(bounds known at run time) [vectorize ") >= 2, tree


@pytest.mark.parametrize("fusion", STRATEGIES)
def test_dense_times_csr(fusion):
    """``M @ A`` and ``v @ A`` with A CSR (power-law rows, empty ones
    included): each row of M weighs A's rows, scattered into its own row."""

    @kernel(fusion=fusion)
    def f(M: Array(float64, 2), A: CSR(float64), v: Array(float64, 1)):
        return M @ A, v @ A

    A = _csr(50, 37, 0.1, dtype=np.float64, power_law=True, seed=3)
    assert (np.diff(A.indptr) == 0).any()
    M = RNG.random((9, 50))
    v = RNG.random(50)
    y, z = f(M, A, v)
    np.testing.assert_allclose(y, M @ A.toarray(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(z, v @ A.toarray(), rtol=1e-12, atol=1e-14)


def _wmd_numpy(r, c, K, max_iter):
    x = np.full((r.shape[0], c.shape[1]), 1.0 / r.shape[0])
    for _ in range(max_iter):
        u = 1.0 / x
        v = c.multiply(1 / (K.T @ u)).tocsr()
        x = ((1 / r)[:, None] * K) @ v
    return x


def test_sparse_sinkhorn_computes_the_sddmm_at_stored_positions_only():
    """The seed's sparse Sinkhorn (word mover's distance): ``c * (1 / (K.T
    @ u))`` is an SDDMM -- one dot product a stored position of c, K.T @ u
    never made whole -- and ``K' @ v`` a dense @ CSR product."""

    @kernel
    def wmd(r: Array(float64, 1), c: CSR(float64), K: Array(float64, 2), max_iter: int):
        x = np.full((r.shape[0], c.shape[1]), 1.0 / r.shape[0])
        it = 0
        while it < max_iter:
            u = 1.0 / x
            v = c * (1 / (K.T @ u))
            x = ((1 / r)[:, None] * K) @ v
            it += 1
        return x

    words, vocab, docs = 6, 40, 11
    r = RNG.random(words) + 0.5
    c = _csr(vocab, docs, 0.2, dtype=np.float64, seed=9)
    c = sp.csr_array(c + sp.csr_array((np.ones(docs), (np.arange(docs) % vocab, np.arange(docs))), shape=(vocab, docs)))
    c.sort_indices()
    K = np.exp(-RNG.random((words, vocab)))
    np.testing.assert_allclose(wmd(r, c, K, 4), _wmd_numpy(r, c, K, 4), rtol=1e-12)
    tree = wmd.modules[-1].loop_tree
    assert f"({vocab * docs} elements)" not in tree  # no buffer of K.T @ u's full size
    assert f"for p in {c.nnz}" in tree, tree
    # u, read along k at each stored position, copied first with k along rows (K's copy: once a call)
    assert f"alloc f64[i, j] ({docs * words} elements)" in tree, tree
    assert ("Copy", (vocab, words)) in wmd.hoisted


@pytest.mark.parametrize("fusion", STRATEGIES)
def test_dense_softmax_and_reductions(fusion):
    @kernel(fusion=fusion)
    def f(x: Array(float32, 2), w: Array(float32, 1)):
        m = np.max(x, axis=1)
        e = np.exp(x - m[:, None])
        s = e / np.sum(e, axis=1)[:, None]
        return s, np.mean(x, axis=0), np.min(x), np.where(x > 0.5, x * w, -x), np.maximum(x, w) ** 2

    x = RNG.random((13, 33), dtype=np.float32)
    w = RNG.random(33, dtype=np.float32)
    s, mean, low, sel, sq = f(x, w)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-5)
    assert low == x.min()
    np.testing.assert_allclose(sel, np.where(x > 0.5, x * w, -x), rtol=1e-6)
    np.testing.assert_allclose(sq, np.maximum(x, w) ** 2, rtol=1e-6)


def test_matmul_forms():
    @kernel
    def f(a: Array(float64, 2), b: Array(float64, 2), v: Array(float64, 1), u: Array(float64, 1)):
        return a @ b, a @ b.T @ v, a.T @ u, u @ a, v @ v

    a = RNG.random((9, 7))
    b = RNG.random((7, 7))
    v = RNG.random(7)
    u = RNG.random(9)
    got = f(a, b, v, u)
    refs = (a @ b, a @ b.T @ v, a.T @ u, u @ a, v @ v)
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g, r, rtol=1e-12)


@kernel
def sinkhorn(r: Array(float64, 1), c: Array(float64, 1), K: Array(float64, 2), max_iter: int):  # the reference: sinkhorn.fn, run by NumPy
    x = np.full(r.shape[0], 1.0 / r.shape[0])
    it = 0
    while it < max_iter:
        u = 1.0 / x
        v = c * (1 / (K.T @ u))
        x = ((1 / r)[:, None] * K) @ v
        it += 1
    return x


def test_sinkhorn_host_loop_rotated_reads_K_once_an_iteration():
    """Sinkhorn's iteration reads K twice (``K.T @ u``, then ``M @ v``);
    its ``M @ v`` is left for the next iteration's kernel (``graph.rotated``),
    where each row's dot product and the same row's update of ``K.T @ u``
    follow each other: one pass over K.  Five kernels: the first iteration
    (1/r computed, and kept: Intrepydd's LICM), the second without its
    ``M @ v``, the steady one, the steady one in a loop over the
    iterations left (``while it < max_iter`` ... ``it += 1``), and the last
    ``M @ v`` at the return."""
    r = RNG.random(40) + 0.5
    c = RNG.random(30) + 0.5
    K = RNG.random((40, 30))
    before = sinkhorn.compiles
    np.testing.assert_allclose(sinkhorn(r, c, K, 12), sinkhorn.fn(r, c, K, 12), rtol=1e-12)
    assert sinkhorn.compiles - before == 5
    assert sinkhorn.hoisted == [("div", (40,))]  # 1/r, invariant in the while loop, computed once
    steady = sinkhorn.modules[before + 2].loop_tree
    rows = steady[steady.index("for i in 40"):]
    rows = rows[: rows.index("\nfor ")]
    assert rows.count("for k in 30") == 2, steady  # the row's dot product and its update of K.T @ u, in one row loop
    # the steady kernel twice in a row (iterations 2 and 3): from the 4th, the 9 left in one kernel (hostloop.py)
    assert sinkhorn.launches == 5 and sinkhorn.trips == 9, (sinkhorn.launches, sinkhorn.trips)
    looped = sinkhorn.modules[before + 3].loop_tree
    assert "read trips[]" in looped and looped.count("for k in 30") == 2, looped
    for n in (0, 1, 2, 3, 4, 5, 7):
        np.testing.assert_allclose(sinkhorn(r, c, K, n), sinkhorn.fn(r, c, K, n), rtol=1e-12)
    assert sinkhorn.compiles - before == 5


def test_sinkhorn_long_rows_run_four_rows_side_by_side():
    """Rows of at least ``fusion.ROW_BLOCKS`` blocks of two vectors (1030
    float64s: 128 blocks of 8 and a tail of 6 with AVX2's 4 lanes, 64 and
    a tail with AVX-512's 8): the steady kernel's row loop takes 4 rows at a
    time (recipes.row_tile; 41 = 10 x 4 + 1 rows), the rows' dot products
    and their update of ``K.T @ u`` each in blocks with the rows unrolled
    inside; results as NumPy's."""
    from lt_mlir.kernel import fusion
    from lt_mlir.targets import get_target

    r = RNG.random(41) + 0.5
    c = RNG.random(1030) + 0.5
    K = RNG.random((41, 1030))
    before = sinkhorn.compiles
    np.testing.assert_allclose(sinkhorn(r, c, K, 6), sinkhorn.fn(r, c, K, 6), rtol=1e-12)
    block = 2 * get_target("cpu").vector_width(8)
    assert 1030 // block >= fusion.ROW_BLOCKS
    steady = sinkhorn.modules[before + 2].loop_tree
    rows = steady[steady.index("for i in 10 r 1"):]
    rows = rows[: rows.index("\nfor ")]
    blocks = f"for k in {1030 // block} r {1030 % block}"
    assert rows.count(blocks) == 2 and rows.count("[unroll full]") == 2, steady
    assert rows.count(f"[vectorize {block}]") == 2, steady


def test_power_iteration_with_a_converging_condition():
    @kernel
    def power(A: CSR(float64), x: Array(float64, 1), tol: float):
        diff = 1.0
        steps = 0
        while diff > tol:
            y = A @ x
            y = y / np.sqrt(np.sum(y * y))
            diff = float(np.max(np.abs(y - x)))
            x = y
            steps += 1
        return x, steps

    M = _csr(25, 25, 0.3, dtype=np.float64, seed=11)
    A = (M @ M.T).tocsr()  # symmetric positive semidefinite
    A.sum_duplicates()
    A.sort_indices()
    x0 = np.ones(25) / 5.0
    x, steps = power(A, x0, 1e-10)
    ref = x0
    for _ in range(steps):
        y = A @ ref
        ref = y / np.linalg.norm(y)
    np.testing.assert_allclose(x, ref, rtol=1e-9)
    assert steps > 2


def test_unsupported_construct_names_the_line():
    @kernel
    def f(x: Array(float32, 1)):
        return np.cumsum(x)

    with pytest.raises(KernelError, match=r"test_kernel\.py:\d+: error: np\.cumsum is not supported"):
        f(np.ones(4, np.float32))

    @kernel
    def g(x: Array(float32, 2), y: Array(float32, 2)):
        return x + y

    with pytest.raises(KernelError, match=r"test_kernel\.py:\d+: error: 'add' of arrays: shapes \(3, 4\) and \(4, 3\) do not broadcast"):
        g(np.ones((3, 4), np.float32), np.ones((4, 3), np.float32))


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda A: (A.data, A.indices, A.indptr[::-1].copy(), A.shape), "indptr must start at 0"),
        (lambda A: (A.data, np.where(A.indices == A.indices.max(), 99, A.indices).astype(np.int32), A.indptr, A.shape), "column index 99"),
        (lambda A: (A.data, np.array([2, 0, 1, 2, 0], np.int32), A.indptr, A.shape), "row 0's column indices are not strictly increasing"),
        (lambda A: (A.data, np.array([0, 2, 1, 1, 0], np.int32), A.indptr, A.shape), "row 1's column indices are not strictly increasing"),
        (lambda A: sp.csr_array((A.data, np.array([0, 2, 2, 1, 0], np.int32), A.indptr), shape=A.shape), "row 1's column indices are not"),
        (lambda A: A.tocoo(), "format 'coo'"),
        (lambda A: A.astype(np.float64), "expected CSR values of float32"),
    ],
)
def test_bad_csr_is_refused_before_computing(bad, message):
    @kernel
    def f(A: CSR(float32)):
        return np.sum(A, axis=1)

    A = sp.csr_array(np.array([[1, 0, 2], [0, 3, 4], [5, 0, 0]], dtype=np.float32))
    with pytest.raises(KernelError, match=message):
        f(bad(A))


def test_bad_arguments_and_annotations():
    @kernel
    def f(x: Array(float32, 2)):
        return x * 2

    with pytest.raises(KernelError, match="expected Array\\(float32, 2\\), got an array of float64"):
        f(np.ones((2, 2)))
    with pytest.raises(KernelError, match="has no annotation"):
        kernel(lambda x: x)
    with pytest.raises(KernelError, match="fusion='taco'"):
        kernel(fusion="taco")


def test_sddmm_on_guard_paged_buffers(tmp_path):
    """SDDMM's gathers (C's rows by column index, and their prefetches), the stored positions, an
    SpMV's vector groups and scalar rest, SpMM's prefetches of the rows 16
    positions ahead (the last positions' clamped into the index array) and
    SpMM-MM's row and column tiles and a host loop run in one kernel stay
    inside their arrays: every buffer flush against a guard page."""
    script = tmp_path / "guarded.py"
    script.write_text(textwrap.dedent(
        """
        import numpy as np, scipy.sparse as sp
        from lt_mlir.kernel import kernel, Array, CSR, float32
        from lt_mlir.testing.guard import guarded_copy

        @kernel
        def sddmm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
            return A * (B @ C.T)

        @kernel
        def spmm(A: CSR(float32), B: Array(float32, 2)):
            return A @ B

        @kernel
        def spmv(A: CSR(float32), x: Array(float32, 1)):
            return A @ x

        @kernel
        def spmm_mm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
            return (A @ B) @ C  # 4-row tiles (33 rows: a tail), 70 columns in tiles (a tail)

        @kernel
        def softmax(A: CSR(float32)):
            m = A.max(axis=1)
            e = np.exp(A - m[:, None])
            return e / e.sum(axis=1)[:, None]  # one row loop, vector groups over each row's positions

        @kernel
        def damped(A: CSR(float32), x: Array(float32, 1), steps: int):
            for _ in range(steps):
                x = 0.5 * (A @ x) + 0.25 * x  # steps 2.. in one kernel (hostloop.py; 0 and 1 differ: x an argument, then a result)
            return x

        A = sp.random(33, 21, density=0.2, format="csr", dtype=np.float32, random_state=2)
        rng = np.random.default_rng(0)
        B = rng.random((33, 7), dtype=np.float32); C = rng.random((21, 7), dtype=np.float32); D = rng.random((21, 5), dtype=np.float32)
        for side in ("end", "start"):
            G = (guarded_copy(A.data, side), guarded_copy(A.indices, side), guarded_copy(A.indptr, side), A.shape)
            out = sddmm(G, guarded_copy(B, side), guarded_copy(C, side))
            assert np.allclose(out.data, A.multiply(B @ C.T).tocsr().data, rtol=1e-5)
            assert np.allclose(spmm(G, guarded_copy(D, side)), A @ D, rtol=1e-5)
            x = guarded_copy(D[:, 0].copy(), side)
            assert np.allclose(spmv(G, x), A @ D[:, 0], rtol=1e-5)  # rows shorter than a vector: the scalar rest alone
            # rows of 14 to 24 entries: whole vector groups (the last ending at the arrays' end), then a scalar rest
            W = sp.random(33, 40, density=0.5, format="csr", dtype=np.float32, random_state=5)
            GW = (guarded_copy(W.data, side), guarded_copy(W.indices, side), guarded_copy(W.indptr, side), W.shape)
            xw = rng.random(40, dtype=np.float32)
            assert np.allclose(spmv(GW, guarded_copy(xw, side)), W @ xw, rtol=1e-5)
            out = softmax(GW)
            for i in range(33):
                lo, hi = W.indptr[i], W.indptr[i + 1]
                e = np.exp(W.data[lo:hi] - W.data[lo:hi].max())
                assert np.allclose(out.data[lo:hi], e / e.sum(), rtol=1e-5)
            E = rng.random((5, 70), dtype=np.float32)
            assert np.allclose(spmm_mm(G, guarded_copy(D, side), guarded_copy(E, side)), (A @ D) @ E, rtol=1e-5)
            S = sp.random(33, 33, density=0.3, format="csr", dtype=np.float32, random_state=6)
            GS = (guarded_copy(S.data, side), guarded_copy(S.indices, side), guarded_copy(S.indptr, side), S.shape)
            ref = xs = rng.random(33, dtype=np.float32)
            for _ in range(6):
                ref = 0.5 * (S @ ref) + 0.25 * ref
            assert np.allclose(damped(GS, guarded_copy(xs, side), 6), ref, rtol=1e-5) and damped.trips == 4
        assert "lt-prefetch-data" in spmm.modules[-1].pipeline and "lt-prefetch-data" in spmm_mm.modules[-1].pipeline
        assert "lt-prefetch{" in sddmm.modules[-1].pipeline  # C's rows 16 positions ahead, the last clamped
        assert "lt-merge" in softmax.modules[-1].pipeline and "lt-vectorize-data" in softmax.modules[-1].pipeline
        print("ok")
        """
    ))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_pagerank_keeps_the_gathered_vector_a_buffer():
    """x / out_degree is read through the column indices (a gather): fused
    into the SpMV it would be recomputed for every edge, not every node, so
    lt-fuse leaves it a nest of its own (and maximal fusion takes it in)."""

    @kernel
    def pagerank(A: CSR(float64), out_degree: Array(float64, 1), damping: float, iterations: int):
        n = out_degree.shape[0]
        x = np.full(n, 1.0 / n)
        for _ in range(iterations):
            x = damping * (A @ (x / out_degree)) + (1.0 - damping) / n
        return x

    G = _csr(60, 60, 0.1, dtype=np.float64, seed=13)
    G.data[:] = 1.0
    deg = np.maximum(np.asarray(G.sum(axis=0)).ravel(), 1.0)
    x = np.full(60, 1.0 / 60)
    for _ in range(7):
        x = 0.85 * (G @ (x / deg)) + 0.15 / 60
    np.testing.assert_allclose(pagerank(G, deg, 0.85, 7), x, rtol=1e-12)
    tree = pagerank.modules[-1].loop_tree
    spmv = tree[tree.rindex("(bounds known at run time)"):]  # the row's positions (the first: the host loop's trips)
    assert "div(" in tree and "div(" not in spmv


def test_power_exponents():
    @kernel
    def f(x: Array(float64, 1)):
        return x ** 3, x ** 0.5, x ** -1

    x = RNG.random(9) + 0.1
    for got, ref in zip(f(x), (x ** 3, np.sqrt(x), 1 / x)):
        np.testing.assert_allclose(got, ref, rtol=1e-14)

    @kernel
    def g(x: Array(float64, 1)):
        return x ** 2.5

    with pytest.raises(KernelError, match=r"test_kernel\.py:\d+: error: \*\* takes the exponents .* \(got 2\.5\)"):
        g(x)


def test_results_the_caller_holds_are_never_written_again():
    """Output arrays are reused only once nothing else holds them."""

    @kernel
    def twice(x: Array(float32, 1)):
        return x * 2

    a = np.ones(4, np.float32)
    r1 = twice(a)
    r2 = twice(a + 1)
    view = r2[1:]
    r3 = twice(a + 2)
    np.testing.assert_array_equal(r1, 2)
    np.testing.assert_array_equal(view, 4)
    np.testing.assert_array_equal(r3, 6)
    del r1
    r4 = twice(a + 3)
    np.testing.assert_array_equal(r4, 8)
    np.testing.assert_array_equal(r2, 4)


def test_a_result_the_caller_dropped_is_written_again_at_once():
    """A call leaves no reference cycle behind (graph and nodes, recursive
    closures), so a result the caller drops is free as soon as it is
    dropped, without a garbage collection, and the next call writes its
    output into the same array (no fresh pages from the OS): with the
    collector off, the address repeats and the values are the new call's."""
    import gc

    @kernel
    def spmm_mm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return (A @ B) @ C

    rng = np.random.default_rng(3)
    A = _csr(40, 30, 0.2, seed=3)
    B, C = rng.standard_normal((30, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    spmm_mm(A, B, C)
    enabled = gc.isenabled()
    gc.disable()
    try:
        addresses = []
        for k in range(3):
            r = spmm_mm(A, B * (k + 1), C)
            np.testing.assert_allclose(r, (A @ (B * (k + 1))) @ C, rtol=1e-5, atol=1e-5)
            addresses.append(r.__array_interface__["data"][0])
            del r
    finally:
        if enabled:
            gc.enable()
    assert len(set(addresses)) == 1, addresses


def test_host_loop_alternates_two_output_arrays():
    """x = f(x) in a host loop: a computed value drops its operands, so the
    iteration before last's array is free and written again (two arrays
    alternate over 12 iterations, no fresh pages a step); results as NumPy's."""
    import lt_mlir.runtime.kernel as runtime

    @kernel(host_loops=False)  # a kernel an iteration (hostloop.py would run 11 of them in one)
    def power(A: Array(float64, 2), x: Array(float64, 1), steps: int):
        for _ in range(steps):
            x = A @ x / 2.0
        return x

    rng = np.random.default_rng(5)
    A, x0 = rng.standard_normal((9, 9)) / 3, rng.standard_normal(9)
    written = []
    real = runtime.Kernel.call_unchecked

    def spy(self, *arrays):
        written.append(arrays[-1].__array_interface__["data"][0])
        return real(self, *arrays)

    power(A, x0, 2)
    runtime.Kernel.call_unchecked = spy
    try:
        got = power(A, x0, 12)
    finally:
        runtime.Kernel.call_unchecked = real
    ref = x0
    for _ in range(12):
        ref = A @ ref / 2.0
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert len(written) >= 10 and len(set(written)) <= 3, written


def test_logistic_step_reads_X_once():
    """X @ w and X.T @ (p - y) become one nest over X's rows
    (lt-merge{rename=true}): each row's dot product, then the same row's
    update of the gradient (a private tile a thread), the init of the
    gradient moved before it; results as NumPy's, rows with a tail."""

    @kernel
    def step(X: Array(float32, 2), y: Array(float32, 1), w: Array(float32, 1)):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        return w - 0.1 * (X.T @ (p - y)) / X.shape[0]

    rng = np.random.default_rng(6)
    X = rng.standard_normal((37, 19)).astype(np.float32)
    y = (rng.random(37) < 0.5).astype(np.float32)
    w = rng.standard_normal(19).astype(np.float32) * 0.1
    X64 = X.astype(np.float64)
    p = 1 / (1 + np.exp(-(X64 @ w)))
    np.testing.assert_allclose(step(X, y, w), w - 0.1 * (X64.T @ (p - y)) / 37, rtol=1e-5, atol=1e-6)
    s = step.modules[-1]
    assert "rename=true" in s.pipeline, s.pipeline
    rows = [line for line in s.loop_tree.splitlines() if line.startswith("for ")]
    assert [r.split(" : ")[0] for r in rows] == ["for i in 19", "for i in 37", "for i in 19"], s.loop_tree
    assert s.loop_tree.count("read x0[i, k]") == 2, s.loop_tree  # both reads of X in the one row nest


def test_slicing_with_constant_bounds():
    @kernel
    def stencil(x: Array(float64, 2), w: Array(float64, 1)):
        inner = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
        return inner, x[0] * w[1:], x[-1, 2:5], np.sum(x[1:3, None, :], axis=2)

    x = RNG.random((7, 9))
    w = RNG.random(10)
    inner, row, part, sums = stencil(x, w)
    np.testing.assert_allclose(inner, 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]), rtol=1e-14)
    np.testing.assert_allclose(row, x[0] * w[1:], rtol=1e-14)
    np.testing.assert_allclose(part, x[-1, 2:5])
    np.testing.assert_allclose(sums, np.sum(x[1:3, None, :], axis=2), rtol=1e-14)

    @kernel
    def bad(x: Array(float64, 1)):
        return x[::2]

    with pytest.raises(KernelError, match=r"test_kernel\.py:\d+: error: slices with a step \(2\) are not supported"):
        bad(np.ones(4))


def test_views_returned_are_copied_out():
    @kernel
    def f(x: Array(float32, 2)):
        m = np.max(x, axis=1)
        return x.T, m[:, None], x[1]

    x = RNG.random((3, 5), dtype=np.float32)
    t, m, row = f(x)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(m, x.max(1)[:, None])
    np.testing.assert_array_equal(row, x[1])


def _sddmm(fusion, fastmath):
    @kernel(fusion=fusion, fastmath=fastmath)
    def sddmm(A: CSR(float32), B: Array(float32, 2), C: Array(float32, 2)):
        return A * (B @ C.T)

    return sddmm


@pytest.mark.parametrize("fastmath", [None, "fast"])
def test_kernel_fastmath_reaches_the_passes(fastmath):
    """``kernel(fastmath="fast")`` puts the mode on the function the passes
    see (it used to reach only the compile): maximal fusion then multiplies
    SDDMM's sampled value into every term of the dot product, as TACO's
    code does (``lt-sink-factor``, type-1 redundancy), while the default
    mode leaves the sum exact (the product after it, as written); the
    redundancy-aware strategy keeps the product after the sum either way.
    All against SciPy."""
    A = _csr(40, 30, 0.2, seed=4)
    B = RNG.standard_normal((40, 12)).astype(np.float32)
    C = RNG.standard_normal((30, 12)).astype(np.float32)
    want = A.multiply(B.astype(np.float64) @ C.T.astype(np.float64)).toarray()
    for fusion, sunk in (("maximal", fastmath == "fast"), ("redundancy-aware", False)):
        f = _sddmm(fusion, fastmath)
        got = f(A, B, C)
        np.testing.assert_allclose(got.toarray(), want, rtol=1e-4, atol=1e-5)
        s = f.modules[-1]
        assert ("lt-sink-factor" in s.pipeline) == sunk, s.pipeline
        tree = s.loop_tree
        product_in_sum = re.search(r"for k in \d+ : L1.*\n(?:  .*\n)*?  %\d+ <- mul\(%2, %\d+\)", tree) is not None
        assert product_in_sum == sunk, tree


# ------------------------------------------------- host loops in one kernel


@kernel
def _damped(A: CSR(float64), d: Array(float64, 1), c: float, steps: int):
    n = d.shape[0]
    x = np.full(n, 1.0 / n)
    y = x
    for _ in range(steps):
        y = A @ (x / d)
        x = c * y + (1.0 - c) / n + 0.01 * x[::1]
    return x, y


def _damped_reference(A, d, c, steps):
    n = d.shape[0]
    x = y = np.full(n, 1.0 / n)
    for _ in range(steps):
        y = A @ (x / d)
        x = c * y + (1.0 - c) / n + 0.01 * x
    return x, y


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 4, 9])
def test_for_loop_of_array_steps_runs_the_iterations_left_in_one_kernel(steps):
    """``for _ in range(steps)`` whose body only assigns array expressions
    (hostloop.py): a kernel an iteration until two in a row are the same
    (iteration 0 reads x made by NumPy, 1 and 2 a result), then the third
    and the ones left in one kernel whose nests sit in a loop over a trip
    count given at run time, x copied from its output to its input after
    each trip; both names the body assigns (x carried, y not) hold their
    last values, as NumPy's.  Loops of 0..3 iterations run as Python's."""
    A = _csr(50, 50, 0.1, dtype=np.float64, seed=21)
    d = np.maximum(np.asarray(abs(A).sum(axis=0)).ravel(), 1.0)
    x, y = _damped(A, d, 0.85, steps)
    rx, ry = _damped_reference(A, d, 0.85, steps)
    np.testing.assert_allclose(x, rx, rtol=1e-12)
    np.testing.assert_allclose(y, ry, rtol=1e-12)
    assert _damped.launches == (steps if steps <= 3 else 3), _damped.launches
    assert _damped.trips == (steps - 2 if steps > 3 else 0)
    if steps > 3:
        tree = _damped.modules[-1].loop_tree
        assert "read trips[]" in tree and "copy(out" in tree, tree


def test_host_loops_false_runs_a_kernel_an_iteration_with_the_same_result():
    plain = kernel(host_loops=False)(_damped.fn)
    A = _csr(40, 40, 0.15, dtype=np.float64, seed=22)
    d = np.maximum(np.asarray(abs(A).sum(axis=0)).ravel(), 1.0)
    got, ref = _damped(A, d, 0.5, 6), plain(A, d, 0.5, 6)
    assert plain.launches == 6 and _damped.launches == 3
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def _count(x):
    _count.calls += 1
    return x


_count.calls = 0


@kernel
def _reads_its_variable(x: Array(float64, 1), steps: int):
    for i in range(steps):
        x = x * 0.5 + i
    return x


@kernel
def _calls_python(x: Array(float64, 1), steps: int):
    for _ in range(steps):
        x = _count(x * 0.5 + 1.0)
    return x


@kernel
def _reads_a_number(x: Array(float64, 1), steps: int):
    total = 0.0
    for _ in range(steps):
        x = x * 0.5
        total = total + float(np.sum(x))
    return x, total


def test_for_loops_that_are_not_array_steps_run_as_python():
    """The loop variable read, a Python function called (it runs every
    iteration), a number read from an array: a kernel an iteration."""
    x = RNG.random(7)
    ref = x.copy()
    for i in range(5):
        ref = ref * 0.5 + i
    np.testing.assert_allclose(_reads_its_variable(x, 5), ref, rtol=1e-14)
    assert _reads_its_variable.launches == 5 and _reads_its_variable.trips == 0
    before = _count.calls
    np.testing.assert_allclose(_calls_python(x, 5), _calls_python.fn(x, 5), rtol=1e-14)
    assert _count.calls - before == 10 and _calls_python.launches == 5  # (fn ran it 5 times too)
    got, total = _reads_a_number(x, 5)
    ref, rtotal = _reads_a_number.fn(x, 5)
    np.testing.assert_allclose(got, ref, rtol=1e-14)
    assert abs(total - rtotal) < 1e-12 and _reads_a_number.trips == 0


@kernel
def _while_steps(x: Array(float64, 1), n: int):
    it = 1
    while it < n:
        x = x * 0.5 + 1.0
        it += 2
    return x, it


@kernel
def _while_reads_counter(x: Array(float64, 1), n: int):
    it = 0
    while it < n:
        x = x * 0.5 + it
        it += 1
    return x


@pytest.mark.parametrize("n", [0, 1, 2, 5, 6, 9, 12, 13])
def test_counted_while_loop_runs_in_one_kernel_and_ends_with_pythons_counter(n):
    """``while it < n: ...; it += 2``: once steady, the iterations left in
    one kernel, the counter advanced by their number (the end cut returns
    it), so the loop ends where Python's does and ``it`` is Python's."""
    x = RNG.random(11)
    got, it = _while_steps(x, n)
    ref, rit = _while_steps.fn(x, n)
    np.testing.assert_allclose(got, ref, rtol=1e-14)
    assert it == rit
    iterations = len(range(1, n, 2))
    assert _while_steps.trips == (iterations - 2 if iterations > 3 else 0), (_while_steps.launches, _while_steps.trips)


def test_while_loop_that_reads_its_counter_runs_as_python():
    x = RNG.random(5)
    np.testing.assert_allclose(_while_reads_counter(x, 7), _while_reads_counter.fn(x, 7), rtol=1e-14)
    assert _while_reads_counter.launches == 7 and _while_reads_counter.trips == 0


def test_random_host_loops_agree_with_numpy(tmp_path, monkeypatch):
    """The differential check of host loops in one kernel
    (``lt_mlir.testing.hostloop_programs``): random for and counted while
    loops of array statements, 7 steps each, as NumPy computes them; most
    run their steady iterations in one kernel, and every second call
    (other values) replays the first's kernels."""
    from lt_mlir.testing import hostloop_programs

    monkeypatch.syspath_prepend(str(tmp_path))
    got = [hostloop_programs.check(seed, tmp_path, steps=7) for seed in range(14)]
    assert sum(g["trips"] > 0 for g in got) >= 6, got
    assert all(g["replayed"] for g in got), got  # each second call (other values) replayed the first's kernels


# ------------------------------------------------ straight-line replays


@kernel
def _softmax_rows(A: CSR(float32), scale: float):
    m = A.max(axis=1)
    e = np.exp(scale * (A - m[:, None]))
    return e / e.sum(axis=1)[:, None], np.sum(m), m > 0.5


def test_straight_line_kernel_replays_its_kernel_for_arguments_of_the_same_kinds():
    """A body of assignments and a return (hostloop.straight_line) is traced
    once per kinds of arguments (shapes, nnz, dtypes, numbers); later calls
    run the kernel on their own arrays: a CSR of another pattern with as
    many stored values gets its own structure back, a new number its own
    result (another record), a 0-d result is a number, a boolean one bool;
    a bad CSR is still refused."""
    assert _softmax_rows._replayable
    A = _csr(30, 20, 0.3, seed=31)
    B = _csr(30, 20, 0.3, seed=32)  # same nnz (sp.random rounds density * size), other positions
    assert A.nnz == B.nnz and not np.array_equal(A.indices, B.indices)
    for M, scale in ((A, 1.0), (B, 1.0), (A, 2.0), (B, 2.0), (B, 1.0)):
        S, total, big = _softmax_rows(M, scale)
        ref = M.copy()
        for i in range(M.shape[0]):
            lo, hi = M.indptr[i], M.indptr[i + 1]
            if hi > lo:
                e = np.exp(scale * (M.data[lo:hi].astype(np.float64) - M.data[lo:hi].max()))
                ref.data[lo:hi] = e / e.sum()
        np.testing.assert_array_equal(S.indices, M.indices)
        np.testing.assert_allclose(S.data, ref.data, rtol=1e-5)
        m = np.array([M.data[M.indptr[i]:M.indptr[i + 1]].max() if M.indptr[i + 1] > M.indptr[i] else -np.inf for i in range(30)])
        np.testing.assert_allclose(total, np.sum(m), rtol=1e-5)
        assert isinstance(total, (float, np.floating)) and big.dtype == np.bool_
        np.testing.assert_array_equal(big, m > 0.5)
    assert len(_softmax_rows._replays) == 2 and _softmax_rows.compiles == 1  # one kernel, a record per scale
    bad = (A.data, np.where(A.indices == A.indices.max(), 99, A.indices).astype(np.int32), A.indptr, A.shape)
    with pytest.raises(KernelError, match="column index 99"):
        _softmax_rows(bad, 1.0)


SHIFT = 1.0


@kernel
def _reads_a_global(x: Array(float64, 1)):
    return x + SHIFT


@kernel
def _shapes_from_numbers(x: Array(float64, 1), k: int):
    return x[:k] * 2.0


def test_a_kernel_that_reads_a_global_is_traced_every_call():
    global SHIFT
    x = RNG.random(6)
    assert not _reads_a_global._replayable
    np.testing.assert_allclose(_reads_a_global(x), x + 1.0)
    SHIFT = 3.0
    try:
        np.testing.assert_allclose(_reads_a_global(x), x + 3.0)
    finally:
        SHIFT = 1.0
    assert _shapes_from_numbers._replayable
    for k in (2, 5, 2):
        np.testing.assert_allclose(_shapes_from_numbers(x, k), x[:k] * 2.0)


@kernel
def _host_copy(x: Array(float64, 1)):
    y = np.asarray(x * 2.0)  # the host reads a value: from here on a NumPy array of this call's data
    return x + y


def test_a_call_whose_host_read_a_value_is_not_replayed():
    """``np.asarray`` of a lazy value passes the source check (an np
    function) but makes a host array of this call's data: such a call is
    never recorded, so the next call with other values computes anew."""
    assert _host_copy._replayable
    for k in range(3):
        x = RNG.random(5) + k
        np.testing.assert_allclose(_host_copy(x), 3.0 * x, rtol=1e-15)
    assert not _host_copy._replays
