"""lt-fuse: a producer nest inlined at the reads of its scratch buffer,
checked against NumPy (dense type 3, SDDMM on a real CSR matrix, split
producers with tails, recomputation refused then accepted)."""

import os
import re

import numpy as np
import pytest

import lt_mlir
from lt_mlir import Schedule
from lt_mlir.dialect import lt
from lt_mlir.mlir import ir
from lt_mlir.passes.registry import registry

RTOL = dict(rtol=1e-4, atol=1e-4)


def _loop(dim: str, size: int, body: str, tail: int = 0) -> str:
    return f'"lt.loop"() ({{\n^bb0(%{dim}_{size}_it: index):\n{body}\n}}) {{dim = "{dim}", size = {size} : i64, tail = {tail} : i64}} : () -> ()'


DENSE = """
func.func @dense(%A: memref<5x7xf32> {lt.name = "A"}, %out: memref<5x7xf32> {lt.name = "out"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<5x7xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<5x7xf32>
      %b = arith.mulf %a, %two : f32
      memref.store %b, %T[%i, %j] : memref<5x7xf32>
    }) {dim = "j", size = 7 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%j1: index):
    %j = "lt.dim"() {dim = "j"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %t = memref.load %T[%i, %j] : memref<5x7xf32>
      %d = arith.addf %t, %one : f32
      memref.store %d, %out[%i, %j] : memref<5x7xf32>
    }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "j", size = 7 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_dense_type3_the_buffer_disappears():
    s = Schedule(DENSE).apply("lt-fuse{loop=0}")
    assert "alloc" not in s.loop_tree and s.loops() == 2
    A = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    np.testing.assert_allclose(s.compile()(A), A * 2 + 1, **RTOL)


def sddmm_text(n: int, m: int, k: int, nnz: int) -> str:
    """SDDMM, out = A .* (B C^T) at A's stored positions (CSR): the dense
    product in a producer nest, the sampling in a consumer with an scf.for
    over each row's entries (clamped as the APPy translator clamps)."""
    return f"""
func.func @sddmm(%indptr: memref<{n + 1}xi32>, %indices: memref<{nnz}xi32>, %data: memref<{nnz}xf32>, %B: memref<{n}x{k}xf32>, %C: memref<{m}x{k}xf32>, %out: memref<{nnz}xf32>) {{
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm = arith.constant {m - 1} : index
  %cnnz = arith.constant {nnz} : index
  %T = "lt.alloc"() {{dims = ["i", "j"]}} : () -> memref<{n}x{m}xf32>
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    "lt.loop"() ({{
    ^bb0(%j0: index):
      %j = "lt.dim"() {{dim = "j"}} : () -> index
      memref.store %zero, %T[%i, %j] : memref<{n}x{m}xf32>
      "lt.loop"() ({{
      ^bb0(%k0: index):
        %k = "lt.dim"() {{dim = "k"}} : () -> index
        %b = memref.load %B[%i, %k] : memref<{n}x{k}xf32>
        %c = memref.load %C[%j, %k] : memref<{m}x{k}xf32>
        %p = arith.mulf %b, %c : f32
        "lt.reduce"(%p, %T, %i, %j) {{kind = "add"}} : (f32, memref<{n}x{m}xf32>, index, index) -> ()
      }}) {{dim = "k", size = {k} : i64, tail = 0 : i64}} : () -> ()
    }}) {{dim = "j", size = {m} : i64, tail = 0 : i64}} : () -> ()
  }}) {{dim = "i", size = {n} : i64, tail = 0 : i64}} : () -> ()
  "lt.loop"() ({{
  ^bb0(%i1: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<{n + 1}xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<{n + 1}xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_c = arith.maxsi %lo, %c0 : index
    %hi_c = arith.minsi %hi, %cnnz : index
    scf.for %p = %lo_c to %hi_c step %c1 {{
      %j32 = memref.load %indices[%p] : memref<{nnz}xi32>
      %jr = arith.index_cast %j32 : i32 to index
      %jl = arith.maxsi %jr, %c0 : index
      %j = arith.minsi %jl, %cm : index
      %a = memref.load %data[%p] : memref<{nnz}xf32>
      %t = memref.load %T[%i, %j] : memref<{n}x{m}xf32>
      %v = arith.mulf %a, %t : f32
      memref.store %v, %out[%p] : memref<{nnz}xf32>
    }}
  }}) {{dim = "i", size = {n} : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""


def _random_csr(n: int, m: int, density: float, seed: int):
    """(indptr, indices, data) of a random float32 CSR matrix, int32 indices."""
    try:
        import scipy.sparse
    except ImportError:  # scipy is a bench extra: the same structure from NumPy
        rng = np.random.default_rng(seed)
        dense = np.where(rng.random((n, m)) < density, rng.standard_normal((n, m)), 0).astype(np.float32)
        rows, cols = np.nonzero(dense)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
        return indptr.astype(np.int32), cols.astype(np.int32), dense[rows, cols]
    a = scipy.sparse.random(n, m, density=density, format="csr", dtype=np.float32, random_state=seed)
    a.sort_indices()
    return a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data.astype(np.float32)


def test_sddmm_on_a_real_csr_computes_only_the_stored_dot_products():
    n, m, k = 24, 20, 16
    indptr, indices, data = _random_csr(n, m, 0.2, seed=3)
    nnz = len(data)
    s = Schedule(sddmm_text(n, m, k, nnz))
    before = s.compile()
    s.apply("lt-fuse{loop=0}")
    tree = s.loop_tree.splitlines()
    assert not any("alloc f32[i, j]" in line for line in tree)
    # the dot product moved into the scf.for over the row's entries
    scf = next(i for i, line in enumerate(tree) if "bounds known at run time" in line)
    assert any(line.strip().startswith("for k in 16") for line in tree[scf + 1 :])
    rng = np.random.default_rng(4)
    B = rng.standard_normal((n, k)).astype(np.float32)
    C = rng.standard_normal((m, k)).astype(np.float32)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    want = data * (B.astype(np.float64) @ C.T)[rows, indices]
    for kernel in (before, s.compile()):
        np.testing.assert_allclose(kernel(indptr, indices, data, B, C), want, **RTOL)


MATMUL_SCALE = """
func.func @mm(%A: memref<33x8xf32> {lt.name = "A"}, %B: memref<8x20xf32> {lt.name = "B"}, %out: memref<33x20xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %T = "lt.alloc"() {dims = ["m", "n"]} : () -> memref<33x20xf32>
  "lt.loop"() ({
  ^bb0(%m0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%n0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %T[%m, %n] : memref<33x20xf32>
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%m, %k] : memref<33x8xf32>
        %b = memref.load %B[%k, %n] : memref<8x20xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %T, %m, %n) {kind = "add"} : (f32, memref<33x20xf32>, index, index) -> ()
      }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 20 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 33 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%m1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%n1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %t = memref.load %T[%m, %n] : memref<33x20xf32>
      %v = arith.mulf %t, %two : f32
      memref.store %v, %out[%m, %n] : memref<33x20xf32>
    }) {dim = "n", size = 20 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 33 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_a_producer_split_with_tails_fuses_into_a_split_consumer():
    s = Schedule(MATMUL_SCALE)
    s.split(0, 8).split(2, 6)  # producer m: 4 r 1 over 8, n: 3 r 2 over 6
    assert "for m in 4 r 1 : L0" in s.loop_tree and "for n in 3 r 2 : L2" in s.loop_tree
    consumer = len([line for line in s.loop_tree.splitlines() if "for " in line]) - 2  # the consumer's m loop
    s.split(consumer, 5)  # consumer m: 6 r 3 over 5
    s.apply("lt-fuse{loop=0}")
    assert s.loops() == 4 and "alloc f32[] (1 elements)" in s.loop_tree
    rng = np.random.default_rng(5)
    A = rng.standard_normal((33, 8)).astype(np.float32)
    B = rng.standard_normal((8, 20)).astype(np.float32)
    np.testing.assert_allclose(s.compile()(A, B), 2 * (A.astype(np.float64) @ B), **RTOL)


CHAIN = """
func.func @chain(%A: memref<4x8xf32> {lt.name = "A"}, %C: memref<8x6xf32> {lt.name = "C"}, %out: memref<4x6xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["i", "h"]} : () -> memref<4x8xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%h0: index):
      %h = "lt.dim"() {dim = "h"} : () -> index
      %a = memref.load %A[%i, %h] : memref<4x8xf32>
      %e = math.exp %a : f32
      memref.store %e, %T[%i, %h] : memref<4x8xf32>
    }) {dim = "h", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %out[%i, %j] : memref<4x6xf32>
      "lt.loop"() ({
      ^bb0(%h1: index):
        %h = "lt.dim"() {dim = "h"} : () -> index
        %t = memref.load %T[%i, %h] : memref<4x8xf32>
        %c = memref.load %C[%h, %j] : memref<8x6xf32>
        %p = arith.mulf %t, %c : f32
        "lt.reduce"(%p, %out, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "h", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_recomputation_is_refused_unless_asked_for():
    s = Schedule(CHAIN)
    before = s.loop_tree
    with pytest.raises(lt_mlir.PassError, match=r'sits in "for j in 6".*computed 6 times.*recompute=true\} accepts that'):
        s.apply("lt-fuse{loop=0}")
    assert s.loop_tree == before and s.steps == []
    s.apply("lt-fuse{loop=0 recompute=true}")
    assert "alloc" not in s.loop_tree and "exp(" in s.loop_tree
    rng = np.random.default_rng(6)
    A = rng.standard_normal((4, 8)).astype(np.float32)
    C = rng.standard_normal((8, 6)).astype(np.float32)
    np.testing.assert_allclose(s.compile()(A, C), np.exp(A.astype(np.float64)) @ C, **RTOL)


BATCHED = """
func.func @batched(%A: memref<3x4x6xf32> {lt.name = "A"}, %out: memref<3x6x4xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["j", "i"]} : () -> memref<6x4xf32>
  "lt.loop"() ({
  ^bb0(%b0: index):
    %b = "lt.dim"() {dim = "b"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%b, %i, %j] : memref<3x4x6xf32>
        %x = arith.maximumf %a, %zero : f32
        memref.store %x, %T[%j, %i] : memref<6x4xf32>
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      "lt.loop"() ({
      ^bb0(%i1: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %t = memref.load %T[%j, %i] : memref<6x4xf32>
        memref.store %t, %out[%b, %j, %i] : memref<3x6x4xf32>
      }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "b", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_a_nest_inside_an_outer_loop_with_transposed_writes():
    s = Schedule(BATCHED)
    with pytest.raises(lt_mlir.PassError, match=r"writes 2 buffers \(%0, out\)"):
        s.apply("lt-fuse{loop=0}")
    s.apply("lt-fuse{loop=1}")
    assert "alloc" not in s.loop_tree and s.loops() == 3
    A = np.random.default_rng(7).standard_normal((3, 4, 6)).astype(np.float32)
    np.testing.assert_allclose(s.compile()(A), np.maximum(A, 0).transpose(0, 2, 1), **RTOL)


def _lit_chunks():
    path = os.path.join(os.path.dirname(__file__), "..", "test", "lit", "passes", "lt-fuse.mlir")
    with open(path) as f:
        return [c for c in f.read().split("\n// -----\n") if re.search(r"^// ERR(-NEXT)?: ", c, re.M)]


@pytest.mark.parametrize("chunk", _lit_chunks(), ids=lambda c: re.search(r"func.func @(\w+)", c).group(1))
def test_a_refusal_changes_nothing(chunk):
    """The pass itself checks everything before it changes anything (no
    restore by the pipeline: the module is run on directly)."""
    module = lt.parse_module(chunk)
    text = str(module)
    with module.context, ir.Location.unknown():
        with pytest.raises(lt_mlir.PassError, match="error: lt-fuse: "):
            registry()["lt-fuse"].run(module.operation, loop=0)
    assert str(module) == text
    module.operation.verify()
