"""``lt_mlir.recipes.register_tile``: the documented register-tiled
contraction schedule, checked against NumPy (float64) on guard-paged arrays
for tails in every direction, each vector width, serial and parallel."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir.recipes import default_rows, register_tile, register_tile_shapes, vector_registers
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
