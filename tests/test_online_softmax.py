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


def _frontend_attention(q, k, v, softmax_first: bool):
    """Attention as a loop_tool user writes it (under fastmath=fast, which
    the caller sets): ``(E * V).sum(j) / E.sum(j)``, or with
    ``softmax_first`` ``(E / E.sum(j) * V).sum(j)``."""
    s = lt.SymbolGenerator()
    Q, K, V = lt.Tensor(q).to(s.i, s.d), lt.Tensor(k).to(s.j, s.d), lt.Tensor(v).to(s.j, s.e)
    S = (Q * K).sum(s.d) * (1.0 / np.sqrt(q.shape[1]))
    E = (S - S.max_reduce(s.j)).exp()
    return (E / E.sum(s.j) * V).sum(s.j) if softmax_first else (E * V).sum(s.j) / E.sum(s.j)


def test_flash_attention_from_the_frontend():
    """As a loop_tool user writes attention; the recipe on its schedule."""
    n, m, d = 12, 40, 8
    q, k, v = _qkv(n, m, d, d, seed=2)
    lt.set_fastmath("fast")
    try:
        O = _frontend_attention(q, k, v, softmax_first=False)
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


# ----------------------------------------------------- review regressions
# (a helper's review of the pass: each of these was applied wrongly, crashed,
# or was refused needlessly before)


def _rows(max_body: str, consumer: str, inits: str = "    memref.store %zero, %A[%m] : memref<2xf32>\n",
          args: str = "", consumer_loops: str = "") -> str:
    """for m in 2 { M = -inf; INITS; for n in 8 { MAX_BODY }; for n in 8 { CONSUMER } }
    over X (2 x 8) into A (2), fastmath=reassoc; ``%x`` is X[m, n] in both loops."""
    return f'''func.func @f(%X: memref<2x8xf32> {{lt.name = "X"}}, %A: memref<2xf32> {{lt.name = "A"}}{args}) attributes {{lt.fastmath = "reassoc"}} {{
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %c4 = arith.constant 4 : index
  %MX = "lt.alloc"() {{dims = ["m"]}} : () -> memref<2xf32>
  "lt.loop"() ({{
  ^bb0(%i3: index):
    %m = "lt.dim"() {{dim = "m"}} : () -> index
    memref.store %ninf, %MX[%m] : memref<2xf32>
{inits}    "lt.loop"() ({{
    ^bb0(%i0: index):
      %n = "lt.dim"() {{dim = "n"}} : () -> index
      %x = memref.load %X[%m, %n] : memref<2x8xf32>
{max_body}
    }}) {{dim = "n", size = 8 : i64, tail = 0 : i64}} : () -> ()
    "lt.loop"() ({{
    ^bb0(%i1: index):
      %n = "lt.dim"() {{dim = "n"}} : () -> index
      %x = memref.load %X[%m, %n] : memref<2x8xf32>
      %mx = memref.load %MX[%m] : memref<2xf32>
{consumer}
    }}) {{dim = "n", size = 8 : i64, tail = 0 : i64}} : () -> ()
  }}) {{dim = "m", size = 2 : i64, tail = 0 : i64}} : () -> ()
  return
}}'''


MAX = '      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<2xf32>, index) -> ()'
TERM = "      %d = arith.subf %x, %mx : f32\n      %e = math.exp %d : f32\n"
SUM_A = '      "lt.reduce"(%e, %A, %m) {kind = "add"} : (f32, memref<2xf32>, index) -> ()'


def _both(text, inputs):
    """(without the pass, with it) on copies of ``inputs``."""
    plain = Schedule(text).compile()(*[a.copy() for a in inputs])
    fused = Schedule(text).online_softmax(1).compile()(*[a.copy() for a in inputs])
    return plain, fused


def test_review_a_maximum_under_a_condition_is_refused():
    guarded = '''      %lo = arith.cmpi sge, %n, %c4 : index
      scf.if %lo {
  ''' + MAX + '''
      }'''
    with pytest.raises(PassError, match="the maximum is taken under 'scf.if'"):
        Schedule(_rows(guarded, TERM + SUM_A)).online_softmax(1)


def test_review_a_recomputed_maximum_operand_is_the_same_value():
    """``exp(x * 0.5 - M)`` with L taking the maximum of ``x * 0.5``: two
    ops with attributes compared (this crashed)."""
    scaled_max = "      %s = arith.mulf %x, %half : f32\n" + MAX.replace("(%x,", "(%s,")
    consumer = "      %s = arith.mulf %x, %half : f32\n      %d = arith.subf %s, %mx : f32\n      %e = math.exp %d : f32\n" + SUM_A
    x = np.random.default_rng(0).uniform(-30, 30, (2, 8)).astype(np.float32)
    plain, fused = _both(_rows(scaled_max, consumer), [x])
    np.testing.assert_allclose(fused, plain, rtol=2e-6)


def test_review_two_accumulators_with_plain_initialisations():
    """A += E and B += 2E, each set to zero by one store (this crashed)."""
    inits = "    memref.store %zero, %A[%m] : memref<2xf32>\n    memref.store %zero, %B[%m] : memref<2xf32>\n"
    consumer = (TERM + SUM_A + "\n      %e2 = arith.addf %e, %e : f32\n"
                '      "lt.reduce"(%e2, %B, %m) {kind = "add"} : (f32, memref<2xf32>, index) -> ()')
    text = _rows(MAX, consumer, inits=inits, args=', %B: memref<2xf32> {lt.name = "B"}')
    x = np.random.default_rng(1).uniform(-30, 30, (2, 8)).astype(np.float32)
    (a0, b0), (a1, b1) = _both(text, [x])
    np.testing.assert_allclose(a1, a0, rtol=2e-6)
    np.testing.assert_allclose(b1, 2 * a0, rtol=2e-6)


def test_review_an_accumulator_indexed_by_the_loops_dim_is_refused():
    text = _rows(MAX, TERM + SUM_A.replace("%A, %m)", "%A, %m)").replace(
        '"lt.reduce"(%e, %A, %m) {kind = "add"} : (f32, memref<2xf32>, index)',
        '"lt.reduce"(%e, %W, %n) {kind = "add"} : (f32, memref<8xf32>, index)'),
        inits='''    "lt.loop"() ({
    ^bb0(%i9: index):
      %n9 = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %W[%n9] : memref<8xf32>
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
''', args=', %W: memref<8xf32> {lt.name = "W"}')
    with pytest.raises(PassError, match="the location a term is summed into changes across the iterations of L"):
        Schedule(text).online_softmax(2)


def test_review_a_wider_zero_initialisation_is_refused():
    """Zeros at 5 locations, sums into 3: a -inf row would turn the other
    two NaN."""
    inits = '''    "lt.loop"() ({
    ^bb0(%i9: index):
      %e9 = "lt.dim"() {dim = "e"} : () -> index
      memref.store %zero, %O[%m, %e9] : memref<2x5xf32>
    }) {dim = "e", size = 5 : i64, tail = 0 : i64} : () -> ()
'''
    consumer = TERM + '''      "lt.loop"() ({
      ^bb0(%i8: index):
        %e8 = "lt.dim"() {dim = "e"} : () -> index
        "lt.reduce"(%e, %O, %m, %e8) {kind = "add"} : (f32, memref<2x5xf32>, index, index) -> ()
      }) {dim = "e", size = 3 : i64, tail = 0 : i64} : () -> ()'''
    text = _rows(MAX, consumer, inits=inits, args=', %O: memref<2x5xf32> {lt.name = "O"}')
    with pytest.raises(PassError, match="covers dim 'e' otherwise than the sum"):
        Schedule(text).online_softmax(2)


def test_review_a_parallel_maximum_loop_is_refused():
    s = Schedule(programs.softmax(2, 4096, fastmath="reassoc")).parallel(2).parallel(1)
    with pytest.raises(PassError, match="annotated parallel"):
        s.online_softmax(1)


def test_review_the_group_ends_before_a_loop_it_cannot_take():
    """Softmax whose third loop stores e / SUM into a scratch buffer a
    fourth copies out: the group is the first two loops."""
    s = Schedule(programs.softmax(3, 20, fastmath="reassoc")).online_softmax(1)
    assert s.loop_tree.count("for n in 20") == 2
    x = np.random.default_rng(2).uniform(-9, 9, (3, 20)).astype(np.float32)
    np.testing.assert_allclose(s.compile()(x), _softmax_ref(x), rtol=2e-6, atol=1e-7)


WIDER_K = """func.func @f(%X: memref<4x4xf32> {lt.name = "X"}, %Y: memref<1xf32> {lt.name = "Y"}) attributes {lt.fastmath = "reassoc"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %MX = "lt.alloc"() {dims = ["z"]} : () -> memref<1xf32>
  memref.store %ninf, %MX[%c0] : memref<1xf32>
  memref.store %zero, %Y[%c0] : memref<1xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %n = "lt.dim"() {dim = "n"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %x = memref.load %X[%n, %k] : memref<4x4xf32>
      "lt.reduce"(%x, %MX, %c0) {kind = "max"} : (f32, memref<1xf32>, index) -> ()
    }) {dim = "k", size = KL : i64, tail = 0 : i64} : () -> ()
  }) {dim = "n", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %n = "lt.dim"() {dim = "n"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %x = memref.load %X[%n, %k] : memref<4x4xf32>
      %mx = memref.load %MX[%c0] : memref<1xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %Y, %c0) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "n", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_review_terms_over_elements_the_maximum_never_saw_are_refused():
    """L takes the maximum over k < 2, the consumer sums over k < 4: a term
    could exceed the maximum (overflow, or lost terms)."""
    with pytest.raises(PassError, match="x is not the value L0 .* takes the maximum of"):
        Schedule(WIDER_K.replace("KL", "2")).online_softmax(0)
    x = np.random.default_rng(0).uniform(-3, 3, (4, 4)).astype(np.float32)
    x[0, 3] = 95.0
    plain = Schedule(WIDER_K.replace("KL", "4")).compile()(x)
    fused = Schedule(WIDER_K.replace("KL", "4")).online_softmax(0).compile()(x)
    np.testing.assert_allclose(fused, plain, rtol=2e-6)


@pytest.mark.parametrize("kw", [{}, {"parallel": True}, {"gpu_threads": 16}, {"gpu_threads": 16, "shared": True, "key_unroll": 4}])
def test_flash_attention_from_softmax_then_matmul(kw):
    """``P = E / E.sum(j); O = (P * V).sum(j)`` (the softmax, then ``@ V``):
    lt-factor takes the division out of the sum over j first."""
    n, m, d = 21, 37, 8
    q, k, v = _qkv(n, m, d, d, seed=6)
    lt.set_fastmath("fast")
    try:
        sch = recipes.flash_attention(_frontend_attention(q, k, v, softmax_first=True).schedule, tile=8, **kw)
    finally:
        lt.set_fastmath("default")
    assert "lt-factor" in sch.pipeline and "lt-online-softmax" in sch.pipeline
    assert f"({m} elements)" not in sch.loop_tree
    target = "cuda-emulated" if kw.get("gpu_threads") else "cpu"
    np.testing.assert_allclose(sch.compile(target=target)(q, k, v), _attention_ref(q, k, v), rtol=1e-5, atol=1e-6)


def test_normalised_program_through_the_recipe():
    n, m, d, e = 9, 30, 4, 5
    q, k, v = _qkv(n, m, d, e, seed=7)
    s = recipes.flash_attention(Schedule(programs.attention(n, m, d, e, normalised=True)), tile=7)
    np.testing.assert_allclose(s.compile()(q, k, v), _attention_ref(q, k, v), rtol=1e-5, atol=1e-6)


def test_rows_inside_the_tile_loop_after_the_pass():
    """The statements the pass adds after L read the maximum themselves: the
    row loop can be split, distributed and interchanged with the tile loop
    (a block of rows reads each tile of K and V once)."""
    h, n, m, d = 2, 12, 20, 4
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((h, r, d)).astype(np.float32) for r in (n, m, m))
    s = Schedule(programs.attention(n, m, d, d, heads=h))
    s.apply("lt-swap{loop=3}").apply("lt-merge{loop=3}").apply("lt-merge{loop=4 rename=true}")
    s.split(5, 8).split(2, 8).online_softmax(2)
    s.split(1, 4).distribute(2)
    lines = s.loop_tree.splitlines()
    assert lines[lines.index("  for i' in 4 : L6") + 1] == "   for j in 2 r 4 : L7"
    s.swap(6)  # for i' { for j } -> for j { for i' }
    lines = s.loop_tree.splitlines()
    assert lines[lines.index("  for j in 2 r 4 : L6") + 1] == "   for i' in 4 : L7"
    want = np.stack([_attention_ref(q[x], k[x], v[x]) for x in range(h)])
    np.testing.assert_allclose(s.compile()(q, k, v), want, rtol=1e-5, atol=1e-6)


def test_rows_inside_the_tile_loop_softmax_then_matmul():
    """The same with the softmax-then-@V form: lt-factor's scratch over e is
    allocated in the row's body; lt-expand gives it the rows' axis, and the
    rows' loop distributes."""
    h, n, m, d = 2, 12, 20, 4
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((h, r, d)).astype(np.float32) for r in (n, m, m))
    s = Schedule(programs.attention(n, m, d, d, heads=h, normalised=True))
    s.apply("lt-swap{loop=3}").apply("lt-merge{loop=3}").apply("lt-merge{loop=4 rename=true}").apply("lt-factor{loop=6}")
    s.split(7, 8).split(4, 8).split(2, 8).online_softmax(2)
    s.split(1, 4)
    with pytest.raises(PassError, match="a value computed in one part of the body is used in another"):
        s.copy().distribute(2)
    s.apply("lt-expand{loop=2}").distribute(2)
    lines = s.loop_tree.splitlines()
    assert "  %5 <- alloc f32[i, e] (16 elements)" in lines  # the scratch over the 4 rows of L2, before them
    assert lines[lines.index("  for i' in 4 : L7") + 1] == "   for j in 2 r 4 : L8"
    s.swap(7)
    want = np.stack([_attention_ref(q[x], k[x], v[x]) for x in range(h)])
    np.testing.assert_allclose(s.compile()(q, k, v), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("width", [4, 8, 16])
@pytest.mark.parametrize("normalised", [False, True])
def test_flash_attention_recipe_at_every_vector_width(width, normalised):
    """The CPU schedule at the widths of other hosts (SSE, AVX2, AVX-512:
    the recipe follows the host's by default), heads in parallel, with K
    transposed and keys innermost: the same result."""
    h, n, m, d = 2, 13, 45, 16
    rng = np.random.default_rng(width)
    q, k, v = (rng.standard_normal((h, r, d)).astype(np.float32) for r in (n, m, m))
    s = recipes.flash_attention(Schedule(programs.attention(n, m, d, d, heads=h, normalised=normalised)), tile=16,
                                vectorize=width, parallel=True)
    assert "order=10" in s.pipeline and f"width={width}" in s.pipeline
    want = np.stack([_attention_ref(q[x], k[x], v[x]) for x in range(h)])
    np.testing.assert_allclose(s.compile()(q, k, v), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [{"shared": True}, {"shared": True, "gpu_threads": 24}, {"key_unroll": -1},
                                {"shared": True, "gpu_threads": 64, "tile": 3}, {"shared": True, "gpu_threads": 2048}])
def test_flash_attention_recipe_refuses_bad_gpu_options_up_front(kw):
    """shared=True wants blocks of a positive multiple of 16 threads, at
    most 1024 and at most 16 x tile (a tile's copies take threads/16 keys
    a pass); a negative key_unroll is refused; all before any step (the
    schedule untouched)."""
    s = Schedule(programs.attention(64, 64, 16, 16))
    with pytest.raises(PassError, match="flash_attention"):
        recipes.flash_attention(s, **kw)
    assert s.steps == []
