"""lt-hoist: an expression invariant in a loop computed once before it into
a scratch buffer (ReACT's ``A = (B + E) * (C @ D)``: ``B + E`` out of the
loop over k), applied through the Schedule API, compiled for the CPU and
compared with NumPy in float64.

Tolerance: float32 sums of K products of standard normal values (summed in
the same order before and after the rewrite) agree with the float64
reference to ``rtol=1e-4, atol=1e-4 * sqrt(K)``.
"""

import numpy as np
import pytest

import lt_mlir
from lt_mlir import Schedule
from lt_mlir.passes.registry import registry


def _react(m: int, n: int, K: int, expr: str = "%s = arith.addf %b, %e : f32") -> str:
    """A[i, j] = sum_k (B[i, j] + E[i, j]) * (C[i, k] * D[k, j]), maximally
    fused: L0 i, L1 j (A <- 0), L2 k, L3 j."""
    return f"""
func.func @react(%B: memref<{m}x{n}xf32> {{lt.name = "B"}}, %E: memref<{m}x{n}xf32> {{lt.name = "E"}}, %C: memref<{m}x{K}xf32> {{lt.name = "C"}}, %D: memref<{K}x{n}xf32> {{lt.name = "D"}}, %A: memref<{m}x{n}xf32> {{lt.name = "A"}}) {{
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    "lt.loop"() ({{
    ^bb0(%j0: index):
      %j = "lt.dim"() {{dim = "j"}} : () -> index
      memref.store %zero, %A[%i, %j] : memref<{m}x{n}xf32>
    }}) {{dim = "j", size = {n} : i64, tail = 0 : i64}} : () -> ()
    "lt.loop"() ({{
    ^bb0(%k0: index):
      %k = "lt.dim"() {{dim = "k"}} : () -> index
      "lt.loop"() ({{
      ^bb0(%j0: index):
        %j = "lt.dim"() {{dim = "j"}} : () -> index
        %b = memref.load %B[%i, %j] : memref<{m}x{n}xf32>
        %e = memref.load %E[%i, %j] : memref<{m}x{n}xf32>
        {expr}
        %c = memref.load %C[%i, %k] : memref<{m}x{K}xf32>
        %d = memref.load %D[%k, %j] : memref<{K}x{n}xf32>
        %cd = arith.mulf %c, %d : f32
        %p = arith.mulf %s, %cd : f32
        "lt.reduce"(%p, %A, %i, %j) {{kind = "add"}} : (f32, memref<{m}x{n}xf32>, index, index) -> ()
      }}) {{dim = "j", size = {n} : i64, tail = 0 : i64}} : () -> ()
    }}) {{dim = "k", size = {K} : i64, tail = 0 : i64}} : () -> ()
  }}) {{dim = "i", size = {m} : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""


def _inputs(m: int, n: int, K: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    B, E = rng.standard_normal((2, m, n)).astype(np.float32)
    C = rng.standard_normal((m, K)).astype(np.float32)
    D = rng.standard_normal((K, n)).astype(np.float32)
    return B, E, C, D


def _ref(B, E, C, D, s=None):
    B, E, C, D = (x.astype(np.float64) for x in (B, E, C, D))
    return (B + E if s is None else s(B, E)) * (C @ D)


def _close(got, ref, K: int) -> None:
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.sqrt(K))


def test_registered_with_its_option():
    info = registry()["lt-hoist"]
    assert list(info.options) == ["loop"]
    assert "invariant" in info.summary


def test_react_example_matches_numpy_and_adds_once_per_element():
    s = Schedule(_react(5, 9, 7)).apply("lt-hoist{loop=2}")
    tree = s.loop_tree.splitlines()
    assert tree[3:9] == [
        " %0 <- alloc f32[j] (9 elements)",
        " for j in 9 : L2",
        "  %1 <- read B[i, j]",
        "  %2 <- read E[i, j]",
        "  %3 <- add(%1, %2)",
        "  %0[j] <- %3",
    ]
    assert tree[9] == " for k in 7 : L3" and "   %4 <- read %0[j]" in tree
    assert s.loop_tree.count("add(") == 1
    B, E, C, D = _inputs(5, 9, 7)
    _close(s.compile()(B, E, C, D), _ref(B, E, C, D), 7)


@pytest.mark.parametrize("seed", range(4))
def test_random_splits_of_j_after_hoisting(seed):
    # Hoist, then split j in L's nest (L4) and in the new nest (L2) by
    # random factors (tails included).
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 20))
    s = Schedule(_react(4, n, 6)).apply("lt-hoist{loop=2}")
    s.apply(f"lt-split{{loop=4 factor={int(rng.integers(2, n))}}}")
    if seed % 2:
        s.apply(f"lt-split{{loop=2 factor={int(rng.integers(2, n))}}}")
    B, E, C, D = _inputs(4, n, 6, seed=seed)
    _close(s.compile()(B, E, C, D), _ref(B, E, C, D), 6)


def test_split_j_before_hoisting_is_refused_and_text_unchanged():
    s = Schedule(_react(4, 9, 6)).apply("lt-split{loop=3 factor=4}")
    before = s.text
    with pytest.raises(lt_mlir.PassError, match="dim 'j' is split into 2 levels inside L2"):
        s.apply("lt-hoist{loop=2}")
    assert s.text == before


def test_tail_split_k_outer_level():
    # k = 7 split `2 r 1` over `3`: L2 is the outer level of k; the sum is
    # inside the inner level too.
    s = Schedule(_react(4, 6, 7)).apply("lt-split{loop=2 factor=3}").apply("lt-hoist{loop=2}")
    tree = s.loop_tree.splitlines()
    assert " for k in 2 r 1 : L3" in tree and "  for k' in 3 : L4" in tree
    B, E, C, D = _inputs(4, 6, 7, seed=1)
    _close(s.compile()(B, E, C, D), _ref(B, E, C, D), 7)


def test_rank0_and_math_expression():
    # exp(B[i, i]) * E[i, j]: exp(B[i, i]) is invariant but its only user,
    # the product, is invariant too; the product is the frontier (its user
    # depends on k) and reads j: a scratch over j.  exp(B[i, i]) alone is
    # rank 0.
    expr = (
        "%bi = memref.load %B[%i, %i] : memref<4x6xf32>\n"
        "        %x = math.exp %bi : f32\n"
        "        %s = arith.mulf %x, %e : f32"
    )
    s = Schedule(_react(4, 6, 5, expr=expr)).apply("lt-hoist{loop=2}")
    assert "alloc f32[j]" in s.loop_tree and s.loop_tree.count("exp(") == 1
    B, E, C, D = _inputs(4, 6, 5, seed=2)
    _close(s.compile()(B, E, C, D), _ref(B, E, C, D, lambda b, e: np.exp(np.diag(b))[:, None] * e), 5)
    expr0 = "%bi = memref.load %B[%i, %i] : memref<4x6xf32>\n        %s = math.exp %bi : f32"
    s0 = Schedule(_react(4, 6, 5, expr=expr0)).apply("lt-hoist{loop=2}")
    assert " %0 <- alloc f32[] (1 elements)" in s0.loop_tree.splitlines()
    _close(s0.compile()(B, E, C, D), _ref(B, E, C, D, lambda b, e: np.exp(np.diag(b))[:, None] + 0 * e), 5)


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("lt-hoist{loop=0}", r"only loads are invariant in L0 .*: a lone load is no gain, and every arithmetic op depends on dim 'i'"),
        ("lt-hoist{loop=3}", r"only loads are invariant in L3 .* every arithmetic op depends on dim 'j'"),
        ("lt-parallel{loop=2}, lt-hoist{loop=2}", "is annotated parallel"),
    ],
)
def test_refusals_leave_the_text_unchanged(pipeline, message):
    s = Schedule(_react(4, 6, 5))
    *first, last = pipeline.split(", ")
    for element in first:
        s.apply(element)
    before = s.text
    with pytest.raises(lt_mlir.PassError, match=message):
        s.apply(last)
    assert s.text == before


def test_only_loads_invariant_is_refused():
    s = Schedule(_react(4, 6, 5, expr="%s = arith.addf %b, %e : f32").replace("%p = arith.mulf %s, %cd", "%p = arith.mulf %b, %cd"))
    before = s.text
    with pytest.raises(lt_mlir.PassError, match="only loads are invariant in L2"):
        s.apply("lt-hoist{loop=2}")
    assert s.text == before
