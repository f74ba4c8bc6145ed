"""lt-symmetric: a symmetric output (``A^T A``, covariance) computed only in
the tiles that reach the diagonal, the upper triangle mirrored into the
lower one.  Checked through the Schedule API and ``recipes.register_tile``
against NumPy in float64, bit for bit against the same schedule without
the pass (each element is the same sum of the same products), and on
guard-paged buffers.

Tolerance: float32 sums of K products of values in [-1, 1) agree with the
float64 reference to ``2 (K + 1) eps sum|terms|`` (the fuzzer's bound).
"""

import numpy as np
import pytest

import lt_mlir
from lt_mlir import PassError, Schedule, programs, recipes
from lt_mlir.testing.guard import guarded_array, guarded_copy

EPS = np.finfo(np.float32).eps


def _syrk_inputs(n: int, k: int, seed: int = 0):
    return np.random.default_rng(seed).uniform(-1, 1, (k, n)).astype(np.float32)


def _run(schedule: Schedule, a: np.ndarray, guarded: bool = False) -> np.ndarray:
    kernel = lt_mlir.compile(schedule.text)
    n = a.shape[1]
    if guarded:
        out = guarded_array((n, n), np.float32, fill=np.nan)
        kernel(guarded_copy(a, readonly=True), out)
        return np.array(out)
    out = np.full((n, n), np.nan, np.float32)
    kernel(a, out)
    return out


def _check(got: np.ndarray, a: np.ndarray) -> None:
    a64 = a.astype(np.float64)
    ref, bound = a64.T @ a64, np.abs(a64).T @ np.abs(a64)
    tol = 2 * (a.shape[0] + 1) * EPS * bound
    assert not np.isnan(got).any()
    assert (np.abs(got - ref) <= tol).all(), np.abs(got - ref).max()


def _tiled(n: int, k: int, tile_i: int, tile_j: int) -> Schedule:
    """syrk (L0 i, L1 j, L2 k) with i and j split into tiles and the k
    loop moved inside the column tiles: i/ti { j/tj { k { i' { j' } } } }."""
    s = Schedule(programs.syrk(n, k))
    s.split(1, tile_j).split(0, tile_i)  # L0 i, L1 i', L2 j, L3 j', L4 k
    s.swap(1)  # i, j, i', j', k: statements first get loops of their own
    return s


@pytest.mark.parametrize("n,k,tile_i,tile_j", [(12, 5, 4, 4), (13, 7, 3, 5), (33, 4, 8, 16), (9, 9, 9, 2)])
def test_tiles_below_the_diagonal_are_skipped_and_mirrored(n, k, tile_i, tile_j):
    """Element by element (L1, the j loop in the i loop) and by tiles (L1,
    the loop over j's tiles in the one over i's, tails included)."""
    a = _syrk_inputs(n, k)
    for s in (Schedule(programs.syrk(n, k)), _tiled(n, k, tile_i, tile_j)):
        got = _run(s.copy().symmetric(1), a)
        _check(got, a)
        assert np.array_equal(np.triu(got), np.triu(_run(s, a)))  # the same code computes the upper triangle
        assert np.array_equal(got, got.T)


def test_register_tile_of_covariance_is_symmetric_and_bit_identical():
    """The recipe applies lt-symmetric to covariance's d^T d (centred
    matrix times itself, after the nests that compute it), on one core and
    on all, with and without blocks of the reduction; nothing changes but
    the work: the upper triangle is the unpruned schedule's, bit for bit
    (the lower one is its mirror: in the unpruned product a tile and its
    tail may round differently, an FMA in one and not the other)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, (70, 61)).astype(np.float32)
    s = lt_mlir.SymbolGenerator()
    t = lt_mlir.Tensor(x).to(s.n, s.m)
    d = t - t.sum(s.n) * lt_mlir.Tensor(np.array(1 / 70, np.float32))
    cov = (d * d.to(s.n, s.p)).sum(s.n)
    start = cov.schedule
    d64 = x.astype(np.float64) - x.astype(np.float64).mean(0)
    for options in (dict(), dict(parallel=True), dict(parallel=True, k_block=16), dict(rows=2, vectors=1)):
        full = recipes.register_tile(start.copy(), width=8, symmetric=False, **options)
        half = recipes.register_tile(start.copy(), width=8, **options)
        assert "lt-symmetric" in half.pipeline and "lt-symmetric" not in full.pipeline, options
        cov.set(full)
        want = cov.numpy()
        cov.set(half)
        got = cov.numpy()
        np.testing.assert_allclose(got, d64.T @ d64, rtol=1e-4, atol=1e-4)
        assert np.array_equal(np.triu(got), np.triu(want)), options
        assert np.array_equal(got, got.T), options
        if options.get("parallel"):
            assert "schedule dynamic" in half.loop_tree  # tiles of unequal work dealt as threads finish
            assert half.loop_tree.count("[parallel") == 2  # the mirror's rows too


def test_matmul_is_not_made_symmetric():
    """A^T B with B another matrix: register_tile leaves it alone, and the
    pass refuses it naming the reason."""
    s = Schedule(programs.matmul(12, 12, 5))
    tiled = recipes.register_tile(s.copy(), width=4, rows=2, vectors=1)
    assert "lt-symmetric" not in tiled.pipeline
    with pytest.raises(PassError, match="not symmetric in 'm' and 'n'"):
        s.copy().symmetric(1)


@pytest.mark.parametrize("loop,message", [
    (0, "no loop around L0 .* iterates 'j'"),
    (2, "iterates dim 'k', not one of the matrix's dims 'i', 'j'"),
    (9, "no loop L9"),
])
def test_refusals_are_located_and_leave_the_schedule(loop, message):
    s = Schedule(programs.syrk(6, 5))
    before = s.text
    with pytest.raises(lt_mlir.LtError, match=message):
        s.symmetric(loop)
    assert s.text == before


def test_guard_pages_and_tails():
    """Tiles with tails in both dims, on guard-paged arrays flush against
    either end: no access leaves the matrices."""
    n, k = 13, 6
    a = _syrk_inputs(n, k, seed=3)
    s = _tiled(n, k, 4, 5).symmetric(2)
    assert "cmpi sgt(j + 5, i)" in s.loop_tree, s.loop_tree
    got = _run(s, a, guarded=True)
    _check(got, a)
    assert np.array_equal(got, got.T)


@pytest.mark.parametrize("edit,message", [
    # i's iteration number instead of its logical index (the same here, but
    # not after a split): the pass compares indices, so it refuses
    (("%A[%k, %i] :", "%A[%k, %i2] :"), "iteration number"),
    # the product with C's other element: not symmetric
    (("%b = memref.load %A[%k, %j] : memref<3x4xf32>", "%b = memref.load %C[%j, %i] : memref<4x4xf32>"),
     "reads the matrix at another element"),
    # a different scale for the row and the column: the value changes when swapped
    (("%p = arith.mulf %a, %b : f32", "%q = arith.mulf %a, %b : f32\n        %p = arith.subf %q, %a : f32"),
     "swapping the two dims gives another expression"),
])
def test_asymmetric_values_are_refused(edit, message):
    text = programs.syrk(4, 3).replace(*edit)
    s = Schedule(text)
    with pytest.raises(PassError, match=message):
        s.symmetric(1)


def test_a_nest_over_part_of_the_matrix_is_refused():
    """Rows 0..3 of a 6 x 6 C (the rest written elsewhere): the mirror
    would copy elements the nest never computed."""
    text = programs.syrk(6, 3).replace('{dim = "i", size = 6', '{dim = "i", size = 4')
    with pytest.raises(PassError, match="covers 4 of dim 'i', not all 6"):
        Schedule(text).symmetric(1)


_SCRATCH = """
func.func @f(%X: memref<4x4xf32>, %C: memref<4x4xf32>, %T: memref<4xf32>) {
  "lt.loop"() ({
  ^bb0(%a: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%b: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %X[%i, %j] : memref<4x4xf32>
      memref.store %x, %T[%j] : memref<4xf32>
    }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%c: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %u = memref.load %T[%i] : memref<4xf32>
      %v = memref.load %T[%j] : memref<4xf32>
      %p = arith.mulf %u, %v : f32
      memref.store %p, %C[%i, %j] : memref<4x4xf32>
    }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""

_CONDITION = """
func.func @f(%A: memref<4xf32>, %C: memref<4x4xf32>) {
  %two = arith.constant 2 : index
  "lt.loop"() ({
  ^bb0(%a: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %cond = arith.cmpi slt, %i, %two : index
    scf.if %cond {
      "lt.loop"() ({
      ^bb0(%c: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %u = memref.load %A[%i] : memref<4xf32>
        %v = memref.load %A[%j] : memref<4xf32>
        %p = arith.mulf %u, %v : f32
        memref.store %p, %C[%i, %j] : memref<4x4xf32>
      }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
    }
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


@pytest.mark.parametrize("text,loop,message", [
    # C += A^T A onto C's incoming values (BLAS's beta = 1): those need not be symmetric
    (programs.syrk(4, 3).replace("      memref.store %zero, %C[%i, %j] : memref<4x4xf32>\n", ""), 1,
     "adds to the matrix's earlier values, and nothing before it sets every element"),
    # T[i] * T[j] looks symmetric, but T is rewritten every row (T[j] = X[i, j])
    (_SCRATCH, 2, "it reads a buffer the nest writes"),
    # only rows 0 and 1 are computed: the mirror would fill rows 2 and 3
    (_CONDITION, 1, "runs under 'scf.if' inside its nest"),
    # the initialisation at the transposed element
    (programs.syrk(4, 3).replace("memref.store %zero, %C[%i, %j]", "memref.store %zero, %C[%j, %i]"), 1,
     r"writes the matrix at \[j, i\] and at \[i, j\]|writes the matrix at \[i, j\] and at \[j, i\]"),
])
def test_what_would_change_the_result_is_refused(text, loop, message):
    """Review findings: accepted, each of these changed the result."""
    with pytest.raises(PassError, match=message):
        Schedule(text).symmetric(loop)


def test_an_imported_matmul_into_nonzero_outs_keeps_its_full_product():
    """linalg.matmul adds into its ``outs``: C_in + X^T X with X^T X's
    operands the same matrix is not symmetric unless C_in is, so the
    default schedule (register tiles) must not prune it."""
    from lt_mlir.importers import from_linalg

    n, k = 40, 5
    text = f"""
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<{k}x{n}xf32>, %c: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{
  %two = arith.constant 2.0 : f32
  %e0 = tensor.empty() : tensor<{k}x{n}xf32>
  %x = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%a : tensor<{k}x{n}xf32>) outs(%e0 : tensor<{k}x{n}xf32>) {{
  ^bb0(%v: f32, %out: f32):
    %m = arith.mulf %v, %two : f32
    linalg.yield %m : f32
  }} -> tensor<{k}x{n}xf32>
  %e = tensor.empty() : tensor<{n}x{k}xf32>
  %t = linalg.transpose ins(%x : tensor<{k}x{n}xf32>) outs(%e : tensor<{n}x{k}xf32>) permutation = [1, 0]
  %y = linalg.matmul ins(%t, %x : tensor<{n}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%c : tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  return %y : tensor<{n}x{n}xf32>
}}
"""
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    for cpu in ("znver2", "znver4"):
        model = from_linalg(text, cpu=cpu)
        assert "lt-symmetric" not in model.schedule.pipeline
        got = np.asarray(model(x, c))
        x2 = 2 * x.astype(np.float64)
        np.testing.assert_allclose(got, c + x2.T @ x2, rtol=1e-5, atol=1e-5)


def test_register_tile_of_syrk_on_an_argument():
    """A^T A with A a function argument: B's panels cannot be packed (A is
    read at two indices), so register_tile leaves them and prunes the
    product instead (it used to refuse the whole recipe in lt-cache)."""
    n, k = 40, 37
    a = _syrk_inputs(n, k, seed=5)
    for parallel in (False, True):
        s = recipes.register_tile(Schedule(programs.syrk(n, k)), width=8, parallel=parallel)
        assert "lt-cache" not in s.pipeline and "lt-symmetric" in s.pipeline
        got = _run(s, a, guarded=True)
        _check(got, a)
        assert np.array_equal(got, got.T)
