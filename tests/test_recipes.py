"""``lt_mlir.recipes.register_tile``: the documented register-tiled
contraction schedule, checked against NumPy (float64) on guard-paged arrays
for tails in every direction, each vector width, serial and parallel."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir.recipes import default_rows, register_tile, register_tile_shapes, row_tile, vector_loops, vector_registers, vector_rows
from lt_mlir.search import space
from lt_mlir.testing.guard import guarded_copy


def program(m, k, n, clipped):
    rng = np.random.default_rng(m * 1000 + k + n)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    s = lt.SymbolGenerator()
    p = lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)
    c = (p.max(0.0) if clipped else p).sum(s.k)
    prod = A.astype(np.float64)[:, :, None] * B.astype(np.float64)[None]
    ref = (np.maximum(prod, 0) if clipped else prod).sum(1)
    return A, B, c, ref


@pytest.mark.parametrize(
    "m,k,n,width,rows,vectors,parallel",
    [
        (33, 64, 48, 8, None, 3, False),  # m tail (33 = 11 x 3), n = 2 tiles of 24
        (33, 64, 50, 8, 4, 3, True),  # tails in m and n (50 = 2 x 24 r 2), parallel
        (7, 9, 16, 16, 4, 3, False),  # one AVX-512-wide tile: no n split
        (10, 5, 13, 4, 3, 2, True),  # 13 = 1 x 8 r 5: vector and scalar tails
        (37, 20, 40, 8, 6, 2, True),  # register_tile_shapes' 6 x 2 on AVX2: m tail 1, n 40 = 2 x 16 r 8
        (29, 11, 100, 16, 8, 3, False),  # AVX-512's 8 x 3: m tail 5, n 100 = 2 x 48 r 4
    ],
)
@pytest.mark.parametrize("clipped", [False, True])
@pytest.mark.parametrize("pack", [False, True])
def test_register_tile_matches_numpy(m, k, n, width, rows, vectors, parallel, clipped, pack):
    A, B, c, ref = program(m, k, n, clipped)
    s = register_tile(c.schedule, rows=rows, vectors=vectors, width=width, parallel=parallel, pack=pack)
    assert f"vectorize {width}" in s.loop_tree
    packed = pack and vectors * width < n
    assert ("alloc f32[k, n]" in s.loop_tree) == packed  # a panel of B, only when N spans several tiles
    if parallel:
        assert s.loop_tree.splitlines()[4 if packed else 0].endswith("[parallel]")
    kernel = s.compile()
    out = guarded_copy(np.full((m, n), np.nan, np.float32))
    kernel(guarded_copy(A, readonly=True), guarded_copy(B, readonly=True), out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())


def test_default_width_and_rows_follow_the_host():
    from lt_mlir.lowering.machine import host_vector_width

    _, _, c, _ = program(33, 64, 48, False)
    s = register_tile(c.schedule)
    w = host_vector_width(4)
    assert f"vectorize {w}" in s.loop_tree
    assert f"for m' in {default_rows(w)} " in s.loop_tree
    assert default_rows(8) == 3 and default_rows(16) == 4


def test_register_tile_shapes_fill_the_register_file():
    """Each shape's accumulators, loads of B and the broadcast of A fit the
    register file, hold more accumulators than the default tile and fill
    it to within four registers."""
    for width in (4, 8, 16):
        regs, default = vector_registers(width), default_rows(width) * 3
        shapes = register_tile_shapes(width)
        assert len(shapes) == 2 and (default_rows(width), 3) not in shapes
        for rows, vectors in shapes:
            used = rows * vectors + vectors + 1
            assert regs - 4 <= used <= regs and rows * vectors > default
    assert vector_registers(8) == 16 and vector_registers(16) == 32


def test_refuses_other_structures():
    s = lt.SymbolGenerator()
    t = lt.Tensor(np.ones((4, 8), np.float32)).to(s.m, s.n).sum(s.n)
    with pytest.raises(lt.PassError, match="wants loop_tool's default contraction schedule"):
        register_tile(t.schedule)
    _, _, c, _ = program(33, 64, 48, False)
    tiled = register_tile(c.schedule, width=8)
    with pytest.raises(lt.PassError, match="wants loop_tool's default contraction"):
        register_tile(tiled)  # already tiled
    with pytest.raises(lt.PassError, match="does not fit C of 33 x 48"):
        register_tile(c.schedule, width=64)
    from lt_mlir import programs

    with pytest.raises(lt.PassError, match=r"or a nest C\[i, j\] \+= f\(A, B\) under one loop over each"):
        register_tile(lt.Schedule(programs.softmax(8, 16)))  # reductions into one dim only


@pytest.mark.parametrize("m,k,n,rows,parallel", [(37, 20, 50, 4, True), (9, 7, 64, 3, False)])
def test_register_tile_takes_a_contraction_in_another_loop_order(m, k, n, rows, parallel):
    """programs.matmul's nest (m { n { C <- 0; k { C += A B } } }): the
    recipe distributes the initialisation out, interchanges k outside n,
    tiles (m tail 1 and an n tail of 2; or n = 2 x 24 + 16) and packs B,
    an argument."""
    from lt_mlir import programs

    s = register_tile(lt.Schedule(programs.matmul(m, n, k)), rows=rows, width=8, parallel=parallel)
    assert s.steps[:2] == ["lt-distribute{loop=1}", "lt-distribute{loop=0}"]
    assert "alloc f32[k, n]" in s.loop_tree and "[unroll full, vectorize 8]" in s.loop_tree
    assert ("[parallel]" in s.loop_tree) == parallel
    rng = np.random.default_rng(m + k + n)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    out = guarded_copy(np.full((m, n), np.nan, np.float32))
    s.compile()(guarded_copy(A, readonly=True), guarded_copy(B, readonly=True), out)
    np.testing.assert_allclose(out, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-4)


def test_register_tile_takes_the_contraction_of_a_larger_program():
    """Covariance (benchmarks/bench_cpu.py's): a mean, a centred matrix D
    and then C[m, p] += D[n, m] D[n, p] inside n's loop beside D's nest.
    The recipe tiles the contraction, the largest nest with a reduction
    into two dims, and leaves D (a local buffer, which lt-cache does not
    copy) unpacked; m = 29 = 9 x 3 r 2 and p = 29 = 24 + 5."""
    n, m = 37, 29
    X = np.random.default_rng(5).standard_normal((n, m)).astype(np.float32)
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.n, s.m)
    d = x - x.sum(s.n) * (1.0 / n)
    t = (d * d.to(s.n, s.p)).sum(s.n)
    tiled = register_tile(t.schedule, width=8)
    assert "for m' in 3 : L11 [unroll full]" in tiled.loop_tree and "lt.cache" not in tiled.text
    out = guarded_copy(np.full((m, m), np.nan, np.float32))
    tiled.compile()(guarded_copy(X, readonly=True), out)
    d64 = X.astype(np.float64) - X.astype(np.float64).mean(0)
    np.testing.assert_allclose(out, d64.T @ d64, rtol=1e-4, atol=1e-4)


def conv2d(c, o, h, w, kh, kw):
    """The frontend's conv2d (benchmarks/bench_cpu.py's): C[o, y, x] = sum
    over c, ky, kx of X[c, y + ky, x + kx] W[o, c, ky, kx], and its float64
    reference."""
    rng = np.random.default_rng(c * 100 + o + h + w)
    X = rng.standard_normal((c, h + kh - 1, w + kw - 1)).astype(np.float32)
    W = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.c, s.h, s.w)
    win = x[s.c, s.y + s.ky, s.x + s.kx]
    t = (win * lt.Tensor(W).to(s.o, s.c, s.ky, s.kx)).sum(s.c, s.ky, s.kx).transpose(s.o, s.y, s.x)
    X64, W64 = X.astype(np.float64), W.astype(np.float64)
    ref = np.zeros((o, h, w))
    for ky in range(kh):
        for kx in range(kw):
            ref += np.einsum("oc,cyx->oyx", W64[:, :, ky, kx], X64[:, ky : ky + h, kx : kx + w])
    return X, W, t, ref


@pytest.mark.parametrize(
    "shape,width,parallel,unrolled",
    [
        ((3, 5, 13, 29, 3, 3), 8, True, True),  # a row of 29 = 3 vectors of 8 and a tail of 5; kx unrolled
        ((2, 4, 9, 16, 2, 11), 4, False, False),  # kx of 11 stays a loop; 4 vectors of 4
        ((16, 16, 8, 32, 3, 3), 16, False, True),  # AVX-512's width: 2 vectors
    ],
)
def test_vector_rows_keeps_an_output_row_in_registers(shape, width, parallel, unrolled):
    X, W, t, ref = conv2d(*shape)
    s = vector_rows(t.schedule, width=width, parallel=parallel)
    lines = s.loop_tree.splitlines()
    band = [line.split()[1] for line in lines[4:10]]
    assert band == ["y", "o", "c", "ky", "kx", "x"]  # output dims, reduced dims, the row
    assert lines[9].endswith(f"[unroll full, vectorize {width}]")
    assert lines[8].endswith("[unroll full]") == unrolled
    assert lines[4].endswith("[parallel]") == parallel
    out = guarded_copy(np.full(ref.shape, np.nan, np.float32))
    s.compile()(guarded_copy(X, readonly=True), guarded_copy(W, readonly=True), out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_vector_rows_refuses_what_it_cannot_keep_in_registers():
    s = lt.SymbolGenerator()
    rows = lt.Tensor(np.ones((4096, 8), np.float32)).to(s.r, s.c).sum(s.c)
    with pytest.raises(lt.PassError, match=r"innermost dim r of 8 to 64 elements \(8 vectors of 8\), not 4096$"):
        vector_rows(rows.schedule, width=8)  # R[r]: a row of 4096 outputs
    _, _, wide, _ = program(4, 8, 100, False)
    with pytest.raises(lt.PassError, match="perfectly nested"):
        vector_rows(wide.schedule, width=8)  # m holds C's initialisation beside k: register_tile's nest
    x = lt.Tensor(np.ones((4, 16), np.float32)).to(s.i, s.j)
    two = x.sum(s.j) + x.max_reduce(s.j)
    with pytest.raises(lt.PassError, match="one reduction, not 2"):
        vector_rows(two.schedule, width=8)


@pytest.mark.parametrize("host_width,row,want", [(16, 10, 8), (16, 29, 16), (8, 6, 4), (8, 3, None)])
def test_vector_rows_narrows_the_default_width_to_a_short_row(monkeypatch, host_width, row, want):
    """Without a width it takes this CPU's widest vector, halved while the
    row is shorter (an AVX-512 host keeps a row of 10 in 8-lane vectors),
    down to 128 bits; below that it refuses."""
    import lt_mlir.recipes as recipes

    monkeypatch.setattr(recipes, "host_vector_width", lambda element_bytes=4: host_width)
    X, W, t, ref = conv2d(2, 3, 5, row, 3, 3)
    if want is None:
        with pytest.raises(lt.PassError, match=rf"innermost dim x of 4 to 32 elements .*not {row}$"):
            vector_rows(t.schedule)
        return
    s = vector_rows(t.schedule)
    assert s.loop_tree.splitlines()[9].endswith(f"[unroll full, vectorize {want}]")
    out = guarded_copy(np.full(ref.shape, np.nan, np.float32))
    s.compile()(guarded_copy(X, readonly=True), guarded_copy(W, readonly=True), out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def gesummv(n, m):
    """y = 1.5 A x + 1.2 B x (two row reductions and an element-wise tail)."""
    rng = np.random.default_rng(n + m)
    A, B = rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal((n, m)).astype(np.float32)
    x = rng.standard_normal(m).astype(np.float32)
    s = lt.SymbolGenerator()
    xv = lt.Tensor(x).to(s.j)
    y = (lt.Tensor(A).to(s.i, s.j) * xv).sum(s.j) * 1.5 + (lt.Tensor(B).to(s.i, s.j) * xv).sum(s.j) * 1.2
    ref = 1.5 * A.astype(np.float64) @ x + 1.2 * B.astype(np.float64) @ x
    return (A, x, B), y, ref  # the kernel's arguments in order of first use


@pytest.mark.parametrize("width,parallel", [(8, False), (8, True), (16, True), (4, False)])
def test_vector_loops_vectorizes_each_row_whole_and_runs_the_rows_on_every_core(width, parallel):
    """gesummv's two dot products a row become vector loops over the whole
    row (37 = 4 x 8 + 5 and 2 x 16 + 5: a scalar tail), the row loop
    parallel when asked; the result matches float64 NumPy on guard pages."""
    inputs, y, ref = gesummv(29, 37)
    s = vector_loops(y.schedule, width=width, parallel=parallel)
    tree = s.loop_tree.splitlines()
    assert [line.strip().split(" : ")[1] for line in tree if " : L" in line] == [
        "L0 [parallel]" if parallel else "L0", f"L1 [vectorize {width}]", f"L2 [vectorize {width}]"]
    out = guarded_copy(np.full(ref.shape, np.nan, np.float32))
    s.compile()(*[guarded_copy(a, readonly=True) for a in inputs], out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("n,m,rows,width,parallel", [(29, 37, 4, 8, False), (29, 37, 4, 8, True), (64, 64, 8, 16, True),
                                                    (5, 9, 4, 8, False), (8, 64, 8, 4, False)])
def test_row_tile_reduces_rows_side_by_side_and_matches_numpy(n, m, rows, width, parallel):
    """gesummv's rows in groups of ``rows`` (29 = 7 x 4 + 1, 5 = 4 + 1: a
    tail group), each of its two dot products in blocks of ``width`` (37 =
    4 x 8 + 5: a tail block) with the rows unrolled inside the block loop
    and the block vectorized; the value crossing the row's parts (1.5 A x)
    expanded over the group.  Replayable as moves (a search's seed); the
    result matches float64 NumPy on guard pages."""
    inputs, y, ref = gesummv(n, m)
    s = row_tile(y.schedule, rows=rows, width=width, parallel=parallel)
    loops = [line.strip() for line in s.loop_tree.splitlines() if line.strip().startswith("for ")]
    groups, blocks = f"{n // rows}" + (f" r {n % rows}" if n % rows else ""), f"{m // width}" + (f" r {m % width}" if m % width else "")
    assert loops == [f"for i in {groups} : L0" + (" [parallel]" if parallel else ""), f"for i' in {rows} : L1",
                     f"for j in {blocks} : L2", f"for i' in {rows} : L3 [unroll full]", f"for j' in {width} : L4 [vectorize {width}]",
                     f"for i' in {rows} : L5",
                     f"for j in {blocks} : L6", f"for i' in {rows} : L7 [unroll full]", f"for j' in {width} : L8 [vectorize {width}]",
                     f"for i' in {rows} : L9"]
    assert s.moves is not None and space.replay(y.schedule, s.moves).key == s.key
    out = guarded_copy(np.full(ref.shape, np.nan, np.float32))
    s.compile()(*[guarded_copy(a, readonly=True) for a in inputs], out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_row_tile_takes_each_row_nest_and_refuses_without_one():
    """Row sums beside column sums: the row sums' nest is tiled, the column
    sums' (a reduction down a column: it would gather) and the element-wise
    nest are left as they were; a module with only column sums, rows
    shorter than a vector or fewer rows than a group is refused, unchanged."""
    X = np.random.default_rng(5).standard_normal((40, 27)).astype(np.float32)
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.r, s.c)
    y = x.sum(s.c).to(s.r) + x.transpose(s.c, s.r).sum(s.r).to(s.c)
    sched = row_tile(y.schedule, rows=4, width=8)
    loops = [line.strip() for line in sched.loop_tree.splitlines() if line.strip().startswith("for ")]
    assert loops[:5] == ["for r in 10 : L0", "for r' in 4 : L1", "for c in 3 r 3 : L2", "for r' in 4 : L3 [unroll full]",
                         "for c' in 8 : L4 [vectorize 8]"]
    untouched = [line.strip() for line in y.schedule.loop_tree.splitlines() if line.strip().startswith("for ")][2:]
    assert [line.split(" : ")[0] for line in loops[5:]] == [line.split(" : ")[0] for line in untouched]
    out = sched.compile()(guarded_copy(X, readonly=True))
    x64 = X.astype(np.float64)
    np.testing.assert_allclose(out, x64.sum(1)[:, None] + x64.sum(0)[None, :], rtol=1e-4, atol=1e-4)
    for t, why in ((x.transpose(s.c, s.r).sum(s.r), "columns"), (lt.Tensor(np.ones((64, 3), np.float32)).to(s.i, s.j).sum(s.j), "short rows"),
                   (lt.Tensor(np.ones((3, 64), np.float32)).to(s.i, s.j).sum(s.j), "three rows")):
        before = t.schedule
        with pytest.raises(lt.PassError, match="row_tile found no loop of at least 4 rows around a row reduction"):
            row_tile(before, rows=4, width=8)
        assert before.steps == [], why


def test_vector_loops_leaves_strided_and_short_loops_scalar_and_refuses_when_none_is_left():
    """Row sums plus column sums: the column sums' inner loop runs down a
    column (it would gather) and stays scalar, the row sums' and the
    element-wise nest's inner loops are vectorized; a module whose only
    inner loop gathers, or whose rows are shorter than a vector, is
    refused."""
    X = np.random.default_rng(3).standard_normal((40, 27)).astype(np.float32)
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.r, s.c)
    y = x.sum(s.c).to(s.r) + x.transpose(s.c, s.r).sum(s.r).to(s.c)
    sched = vector_loops(y.schedule, width=8)
    loops = [line.strip() for line in sched.loop_tree.splitlines() if line.strip().startswith("for ")]
    assert loops == ["for r in 40 : L0", "for c in 27 : L1 [vectorize 8]", "for c in 27 : L2", "for r in 40 : L3",
                     "for r in 40 : L4", "for c in 27 : L5 [vectorize 8]"]
    out = sched.compile()(guarded_copy(X, readonly=True))
    x64 = X.astype(np.float64)
    np.testing.assert_allclose(out, x64.sum(1)[:, None] + x64.sum(0)[None, :], rtol=1e-4, atol=1e-4)
    columns = x.transpose(s.c, s.r).sum(s.r)
    with pytest.raises(lt.PassError, match="no innermost loop of at least 8 iterations that reads and writes whole vectors"):
        vector_loops(columns.schedule, width=8)
    short = lt.Tensor(np.ones((64, 3), np.float32)).to(s.i, s.j).sum(s.j)
    with pytest.raises(lt.PassError, match="no innermost loop of at least 8 iterations"):
        vector_loops(short.schedule, width=8)


@pytest.mark.parametrize("batch,m,k,n,width,parallel", [(3, 13, 9, 40, 8, True), (2, 6, 5, 16, 16, False), (1, 9, 4, 20, 4, True)])
def test_register_tile_takes_a_batched_contraction(batch, m, k, n, width, parallel):
    """C[b, i, j] += A[b, i, k] B[b, k, j] (an attention block's heads): the
    loop over the batch dim stays outermost (parallel when asked, one fork
    for every tile; with a batch of one the row tiles are), the three loops
    inside it are tiled as a matmul's; tails in i and j; float64 NumPy on
    guard pages."""
    rng = np.random.default_rng(batch * 100 + m + k + n)
    A = rng.standard_normal((batch, m, k)).astype(np.float32)
    B = rng.standard_normal((batch, k, n)).astype(np.float32)
    s = lt.SymbolGenerator()
    c = (lt.Tensor(A).to(s.b, s.i, s.k) * lt.Tensor(B).to(s.b, s.k, s.j)).sum(s.k)
    t = register_tile(c.schedule, rows=3, vectors=2, width=width, parallel=parallel)
    tree = t.loop_tree
    assert "for i' in 3 : " in tree and f"[unroll full, vectorize {width}]" in tree, tree
    top = [line for line in tree.splitlines() if line.startswith("for ")]
    if parallel:
        assert ("[parallel]" in top[-1]) == (batch > 1), tree
        assert "[parallel]" in tree
    out = guarded_copy(np.full((batch, m, n), np.nan, np.float32))
    t.compile()(guarded_copy(A, readonly=True), guarded_copy(B, readonly=True), out)
    np.testing.assert_allclose(out, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-4)


def test_register_tile_refuses_a_row_reduction_and_a_strided_batched_b():
    """A sum of a row into C[b, i] (one operand, read at both of C's dims)
    is no contraction: no tile reuses its loads; a batched B read along j
    in other than its last index (B[b, j, k]) would be gathered."""
    s = lt.SymbolGenerator()
    rows = lt.Tensor(np.ones((3, 8, 16), np.float32)).to(s.b, s.i, s.k).sum(s.k)
    with pytest.raises(lt.PassError, match="wants loop_tool's default contraction schedule"):
        register_tile(rows.schedule, width=4)
    s = lt.SymbolGenerator()
    strided = (lt.Tensor(np.ones((2, 8, 4), np.float32)).to(s.b, s.i, s.k)
               * lt.Tensor(np.ones((2, 16, 4), np.float32)).to(s.b, s.j, s.k)).sum(s.k)
    with pytest.raises(lt.PassError, match="wants loop_tool's default contraction schedule"):
        register_tile(strided.schedule, width=4)


def _imported_conv(c, o, h, w, k):
    """A convolution as the linalg importer writes it (torch's conv2d:
    linalg.conv_2d_nchw_fchw, batch of one), its inputs and float64 reference."""
    from lt_mlir.importers.linalg import import_linalg

    H, Wd = h + k - 1, w + k - 1

    def t(shape):
        return "tensor<" + "x".join(map(str, shape)) + "xf32>"

    text = f"""
func.func @main(%x: {t([1, c, H, Wd])}, %w: {t([o, c, k, k])}) -> {t([1, o, h, w])} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {t([1, o, h, w])}
  %f = linalg.fill ins(%zero : f32) outs(%e : {t([1, o, h, w])}) -> {t([1, o, h, w])}
  %y = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
       ins(%x, %w : {t([1, c, H, Wd])}, {t([o, c, k, k])}) outs(%f : {t([1, o, h, w])}) -> {t([1, o, h, w])}
  return %y : {t([1, o, h, w])}
}}
"""
    rng = np.random.default_rng(c * 100 + o + h + w + k)
    X = rng.standard_normal((1, c, H, Wd)).astype(np.float32)
    W = rng.standard_normal((o, c, k, k)).astype(np.float32)
    X64, W64 = X[0].astype(np.float64), W.astype(np.float64)
    ref = np.zeros((1, o, h, w))
    for ky in range(k):
        for kx in range(k):
            ref[0] += np.einsum("oc,cyx->oyx", W64[:, :, ky, kx], X64[:, ky : ky + h, kx : kx + w])
    return lt.Schedule(import_linalg(text).text), X, W, ref


@pytest.mark.parametrize(
    "shape,width,rows,parallel,want_rows",
    [
        ((3, 10, 7, 29, 3), 8, None, True, 2),  # 29 = 3 vectors of 8 r 5: 4 vectors a row, 2 rows fill 8 of 16 registers; 10 = 5 x 2
        ((4, 9, 5, 56, 3), 16, None, False, 4),  # the ResNet block's row on AVX-512: 4 vectors, 4 rows; 9 = 2 x 4 r 1
        ((2, 7, 6, 12, 1), 4, 3, True, 3),  # a 1x1 convolution; rows given: 7 = 2 x 3 r 1
        ((3, 10, 5, 56, 3), 8, None, True, 4),  # 7 vectors a row do not fit twice: 4 rows of 16 columns, 56 = 3 x 16 r 8
        ((2, 6, 4, 200, 3), 16, None, False, 4),  # 13 vectors: 4 rows of 64 columns, 200 = 3 x 64 r 8
    ],
)
def test_channel_tile_keeps_output_channels_in_registers(shape, width, rows, parallel, want_rows):
    """The importer's convolution: the output-channel loop split by the
    rows of the tile, its inner part moved down past the reduction's loops
    to just outside the output row (unrolled, the row vectorized and
    unrolled), the initialisation in a loop of its own; a row too wide for
    two rows of it in registers is tiled too, its tiles' loop outside the
    reduced loops; channel and row tails; float64 NumPy on guard pages."""
    from lt_mlir.recipes import channel_tile

    s, X, W, ref = _imported_conv(*shape)
    channel_tile(s, rows=rows, width=width, parallel=parallel)
    lines = s.loop_tree.splitlines()
    row = next(k for k, line in enumerate(lines) if line.endswith(f"[unroll full, vectorize {width}]"))
    assert re.match(rf" *for \w+' in {want_rows} : L\d+ \[unroll full\]$", lines[row - 1]), s.loop_tree
    tiles = [k for k, line in enumerate(lines) if re.match(r" *for \w+ in 3 r 8 : L\d+$", line)]
    if shape[3] > 4 * width:
        assert tiles == [row - 5], s.loop_tree  # the tiles, then c, ky, kx, then the channels of the tile
    else:
        assert tiles == [], s.loop_tree
    assert lines[0].endswith("[parallel]") == parallel, s.loop_tree
    assert sum(1 for line in lines if "<- 0.0" in line) == 1 and lines[row + 1].lstrip().startswith("%0 <- read input0")
    out = guarded_copy(np.full(ref.shape, np.nan, np.float32))
    s.compile()(guarded_copy(X, readonly=True), guarded_copy(W, readonly=True), out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_a_parallel_tile_loop_that_runs_once_hands_its_rows_to_the_cores():
    """4 output channels in a tile of 4: the channel tiles' loop runs once,
    so the loop over output rows inside it is the parallel one."""
    from lt_mlir.recipes import channel_tile

    s, X, W, ref = _imported_conv(3, 4, 9, 16, 3)
    channel_tile(s, rows=4, width=8, parallel=True)
    lines = s.loop_tree.splitlines()
    assert re.match(r"for \w+ in 1 : L\d+$", lines[0]) and lines[1].endswith("[parallel]"), s.loop_tree
    out = guarded_copy(np.full(ref.shape, np.nan, np.float32))
    s.compile()(guarded_copy(X, readonly=True), guarded_copy(W, readonly=True), out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_channel_tile_refuses_what_it_cannot_take():
    """A tile wider than the channels, a single output channel, and a nest
    of another form (the frontend's conv, its row innermost not)."""
    from lt_mlir.recipes import TileTooLarge, channel_tile

    s, *_ = _imported_conv(3, 3, 4, 29, 3)
    with pytest.raises(TileTooLarge, match="channel_tile: 4 rows"):
        channel_tile(s, rows=4, width=8)
    s, *_ = _imported_conv(3, 1, 4, 200, 3)  # one output channel: no loop over it (the importer's unit dims)
    with pytest.raises(lt.PassError, match="channel_tile wants a nest C\\[o, .., x\\]"):
        channel_tile(s, width=8)
    *_, t, _ = conv2d(3, 5, 13, 29, 3, 3)
    with pytest.raises(lt.PassError, match="channel_tile wants a nest"):
        channel_tile(t.schedule, width=8)


@pytest.mark.parametrize("c,h,w,width,parallel", [(4, 24, 24, 8, False), (3, 5, 13, 4, True), (2, 4, 20, 16, False)])
def test_vector_rows_moves_a_row_past_the_initialisation_beside_its_reduction(c, h, w, width, parallel):
    """programs.conv2d (the environment's conv2d-v0) initialises Y[y, x]
    in the x loop, beside the reduction's loops: the first swap that moves x
    inward distributes the initialisation into a loop of its own, so the
    band's loops are no longer numbered one after another (the recipe once
    vectorized the c loop there and was refused on every such program)."""
    from lt_mlir import programs
    from lt_mlir.schedule import Schedule

    s = vector_rows(Schedule(programs.conv2d(c, h, w, 3, 3)), width=width, parallel=parallel)
    lines = s.loop_tree.splitlines()
    assert [line.split()[1] for line in lines[:7]] == ["y", "x", "x]", "c", "i", "j", "x"]  # Y[y, x] <- 0 in a loop of its own
    assert lines[0].endswith("[parallel]") == parallel
    assert lines[5].endswith("[unroll full]") and lines[6].endswith(f"[unroll full, vectorize {width}]")
    rng = np.random.default_rng(c * 100 + w)
    X = rng.standard_normal((c, h + 2, w + 2)).astype(np.float32)
    W = rng.standard_normal((c, 3, 3)).astype(np.float32)
    ref = sum(X[:, i:i + h, j:j + w].astype(np.float64) * W[:, i, j, None, None] for i in range(3) for j in range(3)).sum(0)
    out = guarded_copy(np.full((h, w), np.nan, np.float32))
    s.compile()(guarded_copy(X, readonly=True), guarded_copy(W, readonly=True), out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_parallel_nests_puts_every_nest_around_a_contraction_on_the_cores():
    """Covariance after the parallel register tile (k in blocks, C
    symmetric): the mean's sum over rows, the centring, C's
    initialisation and the scaling run on every core too, the tiles'
    loop keeps its own schedule; a second call changes nothing; the result
    matches float64 NumPy on guard pages."""
    from lt_mlir.recipes import parallel_nests

    X = np.random.default_rng(7).standard_normal((70, 50)).astype(np.float32)
    s = lt.SymbolGenerator()
    x = lt.Tensor(X).to(s.n, s.m)
    d = x - x.sum(s.n) * (1.0 / 70)
    cov = (d * d.to(s.n, s.p)).sum(s.n) * (1.0 / 69)
    tiled = register_tile(cov.schedule, rows=4, vectors=2, width=8, parallel=True, k_block=16)
    before = tiled.loop_tree
    sched = parallel_nests(tiled.copy())
    top = [line for line in sched.loop_tree.splitlines() if line.startswith("for ")]
    nests = [nest for nest in sched.loop_tree.split("\nfor ") if " : L" in nest]
    assert len(top) >= 6 and all("parallel" in nest for nest in nests), sched.loop_tree
    assert sum("[parallel]" in line for line in top) > sum("[parallel]" in line for line in before.splitlines() if line.startswith("for "))
    assert "schedule dynamic" in sched.loop_tree and sched.loop_tree.count("schedule dynamic") == before.count("schedule dynamic")
    assert parallel_nests(sched.copy()).key == sched.key
    assert sched.moves is not None and space.replay(cov.schedule, sched.moves).key == sched.key  # a search's seed
    out = sched.compile()(guarded_copy(X, readonly=True))
    d64 = X.astype(np.float64) - X.astype(np.float64).mean(0)
    np.testing.assert_allclose(out, d64.T @ d64 / 69, rtol=1e-4, atol=1e-4)
