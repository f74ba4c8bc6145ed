"""lt-factor: a reduction's loop-invariant factor taken out of the sum
(``sum_k b[i] * A[i, k]`` -> ``b[i] * sum_k A[i, k]``), applied through the
registry, compiled for the CPU and compared with NumPy in float64.

Tolerance: float32 sums of n terms of standard normal products, summed in
a different order before and after the rewrite, agree with the float64
reference to ``rtol=1e-4, atol=1e-4 * sqrt(n)``; integer sums are exact.
"""

import numpy as np
import pytest

import lt_mlir
from lt_mlir import Schedule, frontend, programs
from lt_mlir.passes.registry import registry, run_pipeline


def _row_scale(m: int, n: int, fastmath: str | None = "fast", dtype: str = "f32") -> str:
    """S[i] = sum_k A[i, k] * b[i]."""
    attr = f' attributes {{lt.fastmath = "{fastmath}"}}' if fastmath else ""
    mul = "arith.mulf" if dtype.startswith("f") else "arith.muli"
    zero = "0.0" if dtype.startswith("f") else "0"
    return f"""
func.func @row_scale(%A: memref<{m}x{n}x{dtype}> {{lt.name = "A"}}, %b: memref<{m}x{dtype}> {{lt.name = "b"}}, %S: memref<{m}x{dtype}> {{lt.name = "S"}}){attr} {{
  %zero = arith.constant {zero} : {dtype}
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    memref.store %zero, %S[%i] : memref<{m}x{dtype}>
    "lt.loop"() ({{
    ^bb0(%k0: index):
      %k = "lt.dim"() {{dim = "k"}} : () -> index
      %a = memref.load %A[%i, %k] : memref<{m}x{n}x{dtype}>
      %c = memref.load %b[%i] : memref<{m}x{dtype}>
      %p = {mul} %a, %c : {dtype}
      "lt.reduce"(%p, %S, %i) {{kind = "add"}} : ({dtype}, memref<{m}x{dtype}>, index) -> ()
    }}) {{dim = "k", size = {n} : i64, tail = 0 : i64}} : () -> ()
  }}) {{dim = "i", size = {m} : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""


# S[i] = sum_{k, j} w[i] * (A[i, k, j] * (B[j] * w[i + 1]))  (i < 5, w has 6)
NESTED = """
func.func @nested(%A: memref<5x6x7xf32> {lt.name = "A"}, %B: memref<7xf32> {lt.name = "B"}, %w: memref<6xf32> {lt.name = "w"}, %S: memref<5xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<5xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      "lt.loop"() ({
      ^bb0(%j0: index):
        %ii = "lt.dim"() {dim = "i"} : () -> index
        %k = "lt.dim"() {dim = "k"} : () -> index
        %j = "lt.dim"() {dim = "j"} : () -> index
        %next = arith.addi %ii, %one : index
        %a = memref.load %A[%ii, %k, %j] : memref<5x6x7xf32>
        %x = memref.load %B[%j] : memref<7xf32>
        %u = memref.load %w[%ii] : memref<6xf32>
        %v = memref.load %w[%next] : memref<6xf32>
        %xv = arith.mulf %x, %v : f32
        %axv = arith.mulf %a, %xv : f32
        %p = arith.mulf %u, %axv : f32
        "lt.reduce"(%p, %S, %ii) {kind = "add"} : (f32, memref<5xf32>, index) -> ()
      }) {dim = "j", size = 7 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def _inputs(m: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, n)).astype(np.float32), rng.standard_normal(m).astype(np.float32)


def _close(got, ref, n: int) -> None:
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.sqrt(n))


def test_registered_with_its_option():
    info = registry()["lt-factor"]
    assert list(info.options) == ["loop"]
    assert "invariant" in info.summary


def test_row_scale_matches_numpy_and_reads_b_once_per_row():
    s = Schedule(_row_scale(7, 50)).apply("lt-factor{loop=1}")
    assert s.loop_tree.splitlines()[2:5] == [" %0 <- alloc f32[] (1 elements)", " %0[] <- 0.0", " for k in 50 : L1"]
    assert " %2 <- read b[i]" in s.loop_tree.splitlines()  # after the k loop, at depth 1
    A, b = _inputs(7, 50)
    _close(s.compile()(A, b), (A.astype(np.float64) * b[:, None]).sum(1), 50)


@pytest.mark.parametrize("loop", [1, 2])
def test_tail_split_outer_or_inner_level(loop):
    # k = 33 split `4 r 1` over `8`: factoring the outer level sums both
    # levels (tail included) into one scratch; factoring the inner one makes
    # a scratch per outer iteration.
    s = Schedule(_row_scale(5, 33)).apply("lt-split{loop=1 factor=8}").apply(f"lt-factor{{loop={loop}}}")
    tree = s.loop_tree.splitlines()
    assert "for k in 4 r 1 : L1" in tree[4 if loop == 1 else 2]
    A, b = _inputs(5, 33, seed=1)
    _close(s.compile()(A, b), (A.astype(np.float64) * b[:, None]).sum(1), 33)


def test_chain_over_two_loops_with_index_arithmetic():
    # L1 (k) holds the j loop: w[i] and w[i + 1] are invariant in both and
    # are recomputed after L1 (their lt.dim and addi cloned there).
    s = Schedule(NESTED).apply("lt-factor{loop=1}")
    tree = s.loop_tree
    assert "  for j in 7 : L2" in tree and tree.count("read w[") == 2
    assert tree.index("read w[i]") > tree.index("for j in 7")  # after the loops
    rng = np.random.default_rng(2)
    A = rng.standard_normal((5, 6, 7)).astype(np.float32)
    B = rng.standard_normal(7).astype(np.float32)
    w = rng.standard_normal(6).astype(np.float32)
    A64, B64, w64 = A.astype(np.float64), B.astype(np.float64), w.astype(np.float64)
    ref = w64[:5] * w64[1:] * (A64 * B64[None, None, :]).sum((1, 2))
    _close(s.compile()(A, B, w), ref, 42)
    # the inner level too: a scratch per k iteration
    s2 = Schedule(NESTED).apply("lt-factor{loop=2}")
    _close(s2.compile()(A, B, w), ref, 42)


def test_integers_need_no_fastmath_and_are_exact():
    s = Schedule(_row_scale(4, 9, fastmath=None, dtype="i32")).apply("lt-factor{loop=1}")
    rng = np.random.default_rng(3)
    A = rng.integers(-100, 100, (4, 9)).astype(np.int32)
    b = rng.integers(-100, 100, 4).astype(np.int32)
    np.testing.assert_array_equal(s.compile()(A, b), (A.astype(np.int64) * b[:, None]).sum(1).astype(np.int32))


def test_parallel_and_vectorized_reduction_loop():
    # The scratch is shared by L's iterations as the accumulator was: a
    # parallel L accumulates per-thread partials of it, a vectorized inner
    # level reduces vectors into it.
    m, n = 3, 24000
    for pipeline in (
        "lt-split{loop=1 factor=1000}, lt-vectorize{loop=2 width=8}, lt-parallel{loop=1}, lt-factor{loop=1}",
        "lt-split{loop=1 factor=1000}, lt-factor{loop=1}, lt-parallel{loop=1}, lt-vectorize{loop=2 width=8}",
        "lt-parallel{loop=0}, lt-factor{loop=1}",
    ):
        s = Schedule(_row_scale(m, n))
        for element in pipeline.split(", "):
            s.apply(element)
        A, b = _inputs(m, n, seed=4)
        _close(s.compile()(A, b), (A.astype(np.float64) * b[:, None]).sum(1), n)


def test_gpu_mapped_block_and_thread_loops_emulated():
    # L is the thread loop of a block: the scratch is the block's shared
    # memory, the threads add into it, thread 0 adds b[i] * sum once.
    s = Schedule(_row_scale(6, 64)).apply("lt-gpu-auto").apply("lt-factor{loop=1}")
    assert "for k in 64 : L1 [gpu thread]" in s.loop_tree
    A, b = _inputs(6, 64, seed=5)
    _close(s.compile("cuda-emulated")(A, b), (A.astype(np.float64) * b[:, None]).sum(1), 64)
    assert "atom.shared.add.f32" in lt_mlir.compiler.lower_cuda(s.parsed).ptx


def test_frontend_program():
    s = lt_mlir.SymbolGenerator()
    A, b = _inputs(9, 40, seed=6)
    previous = frontend.fastmath()
    lt_mlir.set_fastmath("fast")
    try:
        c = (lt_mlir.Tensor(A).to(s.m, s.k) * lt_mlir.Tensor(b).to(s.m)).sum(s.k)
        assert "for k in 40 : L1" in c.loop_tree
        c.set("builtin.module(lt-factor{loop=1})")
        assert "alloc f32[]" in c.loop_tree
        got = c.numpy()
    finally:
        lt_mlir.set_fastmath(previous)
    _close(got, (A.astype(np.float64) * b[:, None]).sum(1), 40)


@pytest.mark.parametrize(
    "text, loop, message",
    [
        (_row_scale(3, 4, fastmath=None), 1, "fastmath mode 'default' does not allow it: use --fastmath=fast"),
        (_row_scale(3, 4, fastmath="strict"), 1, "fastmath mode 'strict' does not allow it"),
        (_row_scale(3, 4, fastmath="nnan,nsz"), 1, "fastmath mode 'nnan,nsz' does not allow it"),
        (_row_scale(3, 4).replace('kind = "add"', 'kind = "min"'), 1, "does not distribute over min"),
        (_row_scale(3, 4).replace('kind = "add"', 'kind = "mul"'), 1, "does not distribute over mul"),
        (_row_scale(3, 3).replace("%b[%i]", "%b[%k]"), 1, "no factor of the product is invariant"),
        (_row_scale(3, 4), 0, "the location the reduction updates in S changes across the iterations of L0"),
        (programs.row_sum(4, 8), 1, "holds no lt.reduce of a product"),
    ],
)
def test_refusals_leave_the_module_as_it_was(text, loop, message):
    module = lt_mlir.parse_module(text)
    before = str(module)
    with pytest.raises(lt_mlir.PassError, match=message.replace("(", r"\(")):
        run_pipeline(module, f"builtin.module(lt-factor{{loop={loop}}})")
    assert str(module) == before


def test_reassoc_flag_is_enough():
    s = Schedule(_row_scale(3, 4, fastmath="reassoc,contract")).apply("lt-factor{loop=1}")
    A, b = _inputs(3, 4, seed=7)
    _close(s.compile()(A, b), (A.astype(np.float64) * b[:, None]).sum(1), 4)


# S[i] = sum_{k <= i} A[i, k] * b[i], the guard an scf.if in the k loop;
# b[i] read before the guard (BEFORE) or under it (UNDER).
TRIANGLE = """
func.func @lower(%A: memref<6x6xf32> {{lt.name = "A"}}, %b: memref<6xf32> {{lt.name = "b"}}, %S: memref<6xf32> {{lt.name = "S"}}) attributes {{lt.fastmath = "fast"}} {{
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    memref.store %zero, %S[%i] : memref<6xf32>
    "lt.loop"() ({{
    ^bb0(%k0: index):
      %k = "lt.dim"() {{dim = "k"}} : () -> index
      {before}
      %in = arith.cmpi ule, %k, %i : index
      scf.if %in {{
        {under}
        %a = memref.load %A[%i, %k] : memref<6x6xf32>
        %p = arith.mulf %a, %c : f32
        "lt.reduce"(%p, %S, %i) {{kind = "add"}} : (f32, memref<6xf32>, index) -> ()
      }}
    }}) {{dim = "k", size = 6 : i64, tail = 0 : i64}} : () -> ()
  }}) {{dim = "i", size = 6 : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""
_LOAD_B = "%c = memref.load %b[%i] : memref<6xf32>"


def test_guarded_reduction():
    A, b = _inputs(6, 6, seed=8)
    ref = (np.tril(A.astype(np.float64)) * b[:, None]).sum(1)
    s = Schedule(TRIANGLE.format(before=_LOAD_B, under="")).apply("lt-factor{loop=1}")
    _close(s.compile()(A, b), ref, 6)
    # read under the guard: reading it once after the loop is refused
    module = lt_mlir.parse_module(TRIANGLE.format(before="", under=_LOAD_B))
    with pytest.raises(lt_mlir.PassError, match=r"an invariant factor is computed under a condition \('scf.if'\)"):
        run_pipeline(module, "builtin.module(lt-factor{loop=1})")


def _normalised(m: int, n: int, e: int, e_levels=None) -> str:
    """O[i, :] += sum_j P[i, j] / s[i] * V[j, :] (softmax's normalisation
    before @ V), e inside the j loop."""
    from lt_mlir.builder import Builder, memref

    b = Builder()
    args = [("P", memref((m, n), "f32")), ("s", memref((m,), "f32")), ("V", memref((n, e), "f32")), ("O", memref((m, e), "f32"))]
    with b.func("normalised", args, attributes={"lt.fastmath": "fast"}) as (P, sv, V, O):
        with b.loop("i", m):
            i = b.dim("i")
            with b.loop("j", n):
                j = b.dim("j")
                q = b.binary("divf", b.load(P, [i, j]), b.load(sv, [i]))
                with b.nest("e", e, e_levels or ()):
                    ee = b.dim("e")
                    b.reduce("add", b.binary("mulf", q, b.load(V, [j, ee])), O, [i, ee])
    return b.text()


@pytest.mark.parametrize("levels", [None, [2]])
def test_a_divisor_and_an_accumulator_along_an_inner_dim(levels):
    """The division by s[i] leaves the sum over j; the sum goes to a scratch
    over e (a tail where e = 5 is split by 2)."""
    m, n, e = 4, 9, 5
    s = Schedule(_normalised(m, n, e, levels)).apply("lt-factor{loop=1}")
    tree = s.loop_tree
    assert "alloc f32[e] (5 elements)" in tree and tree.count("div(") == 1
    assert tree.index("div(") > tree.index("for j in 9")
    rng = np.random.default_rng(3)
    P, sv, V = rng.random((m, n), dtype=np.float32), rng.random(m, dtype=np.float32) + 0.5, rng.standard_normal((n, e)).astype(np.float32)
    O = np.zeros((m, e), np.float32)
    s.compile()(P, sv, V, O)
    ref = (P.astype(np.float64) / sv[:, None]) @ V
    np.testing.assert_allclose(O, ref, rtol=1e-5, atol=1e-6)


def test_one_inner_dim_on_two_axes_is_refused():
    """O[e, e] += P[i, j] / s[i] * V[j, e]: a scratch over e twice would not
    be an lt.alloc over distinct dims (this was a verifier error)."""
    from lt_mlir.builder import Builder, memref

    b = Builder()
    args = [("P", memref((3, 5), "f32")), ("s", memref((3,), "f32")), ("V", memref((5, 4), "f32")), ("O", memref((4, 4), "f32"))]
    with b.func("diagonal", args, attributes={"lt.fastmath": "fast"}) as (P, sv, V, O):
        with b.loop("i", 3):
            i = b.dim("i")
            with b.loop("j", 5):
                j = b.dim("j")
                q = b.binary("divf", b.load(P, [i, j]), b.load(sv, [i]))
                with b.loop("e", 4):
                    e = b.dim("e")
                    b.reduce("add", b.binary("mulf", q, b.load(V, [j, e])), O, [e, e])
    with pytest.raises(lt_mlir.PassError, match="moves along one dim on two axes"):
        Schedule(b.text()).apply("lt-factor{loop=1}")
