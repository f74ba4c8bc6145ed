"""lt-online-softmax: a maximum's loop and the loops summing exp(x - max)
after it as one loop, the sums rescaled as the maximum grows (softmax's
online normaliser; with tiles, FlashAttention's loop, reached from the
frontend's attention by ``recipes.flash_attention``): results against
NumPy in float64, tails, -inf rows, the GPU schedule emulated and compiled
to PTX, refusals.  The lit file has the IR and every refusal."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir import PassError, Schedule, programs, recipes


def _softmax_ref(x):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _attention_ref(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def _qkv(n, m, d, e, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((m, d)).astype(np.float32),
            rng.standard_normal((m, e)).astype(np.float32))


@pytest.mark.parametrize("m,n,tile", [(5, 13, None), (4, 37, 8), (3, 16, 16), (6, 9, 1), (2, 50, 7)])
def test_softmax_online_normaliser_matches_numpy(m, n, tile):
    x = np.random.default_rng(n).uniform(-30, 30, (m, n)).astype(np.float32)  # the maximum moves often
    s = Schedule(programs.softmax(m, n, fastmath="reassoc"))
    if tile:
        s.split(2, tile).split(1, tile)  # the sum's loop, then the maximum's
    s.online_softmax(1)
    assert "for n" in s.loop_tree and s.loop_tree.count("max=") == 1
    np.testing.assert_allclose(s.compile()(x), _softmax_ref(x), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("n,m,d,e,tile", [(7, 22, 8, 5, None), (6, 22, 8, 5, 4), (5, 31, 3, 9, 8), (3, 16, 4, 4, 16), (4, 9, 5, 2, 1)])
def test_attention_online_matches_numpy(n, m, d, e, tile):
    q, k, v = _qkv(n, m, d, e, seed=m)
    s = Schedule(programs.attention(n, m, d, e))
    if tile:
        s.split(6, tile).split(4, tile)
    s.online_softmax(4)
    np.testing.assert_allclose(s.compile()(q, k, v), _attention_ref(q, k, v), rtol=1e-5, atol=1e-6)


def test_minus_infinity_rows_are_exact():
    """A row whose first tiles are all -inf gets the right softmax (the
    terms of a -inf maximum are exp(-inf) = 0, not NaN); a row that is -inf
    throughout is NaN, as the three-pass original makes it."""
    x = np.random.default_rng(3).uniform(-2, 2, (4, 12)).astype(np.float32)
    x[0, :8] = -np.inf          # two whole tiles of 4
    x[1, :] = -np.inf           # everything
    x[2, 5] = -np.inf           # one element
    plain = Schedule(programs.softmax(4, 12, fastmath="reassoc")).compile()(x)
    s = Schedule(programs.softmax(4, 12, fastmath="reassoc")).split(2, 4).split(1, 4).online_softmax(1)
    got = s.compile()(x)
    ref = _softmax_ref(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(plain))
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2, 3]]).any()
    np.testing.assert_allclose(got[[0, 2, 3]], ref[[0, 2, 3]], rtol=2e-6, atol=1e-7)
    assert (got[0, :8] == 0).all()


def test_fast_mode_keeps_the_minus_infinity_start():
    """Under fastmath=fast (nnan, ninf on the program's ops) the ops that see
    the maximum's -inf start keep exact flags: the result is still right."""
    x = np.random.default_rng(4).uniform(-5, 5, (3, 40)).astype(np.float32)
    s = Schedule(programs.softmax(3, 40, fastmath="fast")).split(2, 8).split(1, 8).online_softmax(1)
    np.testing.assert_allclose(s.compile()(x), _softmax_ref(x), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("parallel", [False, True])
def test_flash_attention_recipe_cpu(parallel):
    n, m, d, e = 37, 70, 16, 24
    q, k, v = _qkv(n, m, d, e, seed=1)
    s = recipes.flash_attention(Schedule(programs.attention(n, m, d, e)), tile=16, parallel=parallel)
    assert "lt-online-softmax" in s.pipeline and "lt-shrink-buffers" in s.pipeline
    # no n x m (nor 1 x m) matrix of scores: a tile of them a row
    assert "(16 elements)" in s.loop_tree and f"({m} elements)" not in s.loop_tree and f"({n * m} elements)" not in s.loop_tree
    np.testing.assert_allclose(s.compile()(q, k, v), _attention_ref(q, k, v), rtol=1e-5, atol=1e-6)


def test_flash_attention_from_the_frontend():
    """As a loop_tool user writes attention; the recipe on its schedule."""
    n, m, d = 12, 40, 8
    q, k, v = _qkv(n, m, d, d, seed=2)
    lt.set_fastmath("fast")
    try:
        s = lt.SymbolGenerator()
        Q, K, V = lt.Tensor(q).to(s.i, s.d), lt.Tensor(k).to(s.j, s.d), lt.Tensor(v).to(s.j, s.e)
        S = (Q * K).sum(s.d) * (1.0 / np.sqrt(d))
        E = (S - S.max_reduce(s.j)).exp()
        O = (E * V).sum(s.j) / E.sum(s.j)
        O.set(recipes.flash_attention(O.schedule, tile=8))
        assert "cmpf oeq" in O.loop_tree and f"({m} elements)" not in O.loop_tree  # the rescale; a tile of scores
        np.testing.assert_allclose(O.numpy(), _attention_ref(q, k, v), rtol=1e-5, atol=1e-6)
    finally:
        lt.set_fastmath("default")


def test_flash_attention_gpu_emulated_and_ptx():
    n, m, d, e = 100, 70, 16, 24  # 100 rows: 3 blocks of 32 and a tail of 4
    q, k, v = _qkv(n, m, d, e, seed=5)
    s = recipes.flash_attention(Schedule(programs.attention(n, m, d, e)), tile=16, gpu_threads=32)
    assert "[gpu block]" in s.loop_tree and "[gpu thread]" in s.loop_tree
    np.testing.assert_allclose(s.compile(target="cuda-emulated")(q, k, v), _attention_ref(q, k, v), rtol=1e-5, atol=1e-6)
    ptx = s.compile(target="cuda").ptx
    assert ".entry" in ptx and "ex2.approx" in ptx


def test_refused_without_reassociation_and_module_unchanged():
    s = Schedule(programs.softmax(3, 8))
    before = s.text
    with pytest.raises(PassError, match="does not allow reassociation"):
        s.online_softmax(1)
    assert s.text == before


def test_refused_on_a_loop_without_a_maximum():
    with pytest.raises(PassError, match=r"L2 .* holds no lt.reduce of kind max"):
        Schedule(programs.softmax(3, 8, fastmath="fast")).online_softmax(2)


def test_lt_merge_refuses_what_online_softmax_does():
    """Plain fusion of the maximum's loop with the sum's is wrong (the sum
    would read a partial maximum): lt-merge refuses it."""
    s = Schedule(programs.softmax(3, 8, fastmath="fast"))
    with pytest.raises(PassError, match="lt-merge"):
        s.merge(2)


def test_refused_where_the_maximum_moves_inside_the_loop():
    """Column order (n outside m): each row's maximum changes inside L, so
    one rescale an iteration of L would mix rows."""
    s = Schedule(programs.softmax(4, 8, fastmath="reassoc")).distribute(0).swap(3).swap(1)
    assert s.loop_tree.splitlines()[5].startswith("for n in 8 : L1")
    with pytest.raises(PassError, match="the location of the maximum changes across the iterations of L1"):
        s.online_softmax(1)
