"""The Python frontend against NumPy: symbols, size inference, arithmetic,
reductions, views (windows, pads, concatenation), caching, schedules, and
the errors users see.  Shapes follow loop_tool's README, blog and tests."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir.frontend import clear_cache, stats

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def close(got, want, tol=1e-4):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------- symbols
def test_symbols_and_generators():
    m, n, k = lt.symbols("m n k")
    assert [x.name for x in (m, n, k)] == ["m", "n", "k"]
    assert m is not lt.Symbol("m") and m != lt.Symbol("m")  # identity, not name
    s = lt.SymbolGenerator()
    assert s.x is s.x and s.x is not lt.SymbolGenerator().x
    with lt.SymbolGenerator() as g:
        assert g.a.name == "a"
    assert repr(s.x) == "Symbol{x}"
    e = lt.Expr(2) * s.yo + s.wy - 1
    assert repr(e) == "2*yo+wy-1"
    assert repr(lt.Size(s.x) + lt.Expr(2)) == "|x|+2"
    with pytest.raises(lt.FrontendError, match="affine"):
        s.x * s.y


# ---------------------------------------------------------------- the blog
def test_blog_symbolic_shape_and_backward_inference():
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.x)
    b = lt.Tensor(s.x, s.k)
    c = (a * b).sum(s.x)
    assert c.symbolic_shape == [s.k]
    b.set_size(128, 7)
    assert a.shape == [128]  # backward: b's size fixes a's, no unify() needed
    assert c.shape == [7]
    A, B = rand(128), rand(128, 7)
    a.set(A)
    b.set(B)
    close(c.numpy(), A @ B)
    assert c.loop_tree == "\n".join(
        [
            "for k in 7 : L0",
            " C[k] <- 0.0",
            "for x in 128 : L1",
            " for k in 7 : L2",
            "  %0 <- read A[x]",
            "  %1 <- read B[x, k]",
            "  %2 <- mul(%0, %1)",
            "  C[k] += %2",
        ]
    )


def test_blog_numpy_integration_computes_float32_like_loop_tool():
    s = lt.SymbolGenerator()
    data = np.random.randn(128, 128)
    a = lt.Tensor(data)
    a = a.to(s.m, s.n)
    assert a.symbolic_shape == [s.m, s.n]
    assert a.shape == [128, 128]
    b = a.sum(s.n).numpy()
    assert b.dtype == np.float32
    np.testing.assert_allclose(b, data.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_blog_matmul_ir_is_graphviz():
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.m, s.k).set_size(200, 300)
    b = lt.Tensor(s.k, s.n).set_size(300, 400)
    c = (a * b).sum(s.k)
    dot = c.ir
    assert dot.startswith("digraph G {") and dot.rstrip().endswith("}")
    assert "mul : [m, k, n]|{<0>m:200|<1>k:300|<2>n:400}" in dot
    assert "sum : [m, n]" in dot
    assert dot.count(" -> ") >= 3


# ---------------------------------------------------------------- matmul
def test_matmul_128_and_loop_tree():
    s = lt.SymbolGenerator()
    A, B = rand(128, 128), rand(128, 128)
    a = lt.Tensor(s.m, s.k).set(A)
    b = lt.Tensor(s.k, s.n).set(B)
    c = (a * b).sum(s.k)
    close(c.numpy(), A @ B, 1e-3)
    # loop_tool's default rule: the product's loops (m, k, n) in order, the
    # reduction coalesced into them, C's initialisation before the k loop.
    assert c.loop_tree == "\n".join(
        [
            "for m in 128 : L0",
            " for n in 128 : L1",
            "  C[m, n] <- 0.0",
            " for k in 128 : L2",
            "  for n in 128 : L3",
            "   %0 <- read A[m, k]",
            "   %1 <- read B[k, n]",
            "   %2 <- mul(%0, %1)",
            "   C[m, n] += %2",
        ]
    )
    code = c.code
    assert code.startswith("func.func @graph(") and '"lt.reduce"' in code
    lt.parse_module(code)  # the text is a valid lt module
    assert "define" in c.llvm


def test_readme_eager_and_lazy():
    X = lt.Tensor(128).set(np.random.randn(128))
    N = lt.Symbol("N")
    Y = X.to(N).sum(N)
    close(Y.numpy(), np.sum(X.numpy()), 1e-5)
    K = lt.Symbol("K")
    Z = lt.Tensor(K)
    W = (Z.to(N) * X.to(N)).sum(N)
    W.unify()
    assert Z.shape[0] == 128
    Z.set(np.random.randn(Z.shape[0]))
    close(W.numpy(), np.sum(X.numpy() * Z.numpy()), 1e-5)


# ---------------------------------------------------------------- caching
def test_kernels_are_cached_by_structure_sizes_and_schedule():
    clear_cache()
    s = lt.SymbolGenerator()
    A, B = rand(16, 8), rand(8)

    def program(a, b):
        return (lt.Tensor(s.i, s.j).set(a) * lt.Tensor(s.j).set(b)).sum(s.j)

    before = stats["compiles"]
    close(program(A, B).numpy(), A @ B)
    close(program(2 * A, B).numpy(), 2 * A @ B)  # new graph, same structure: no compile
    assert stats["compiles"] == before + 1
    program(rand(17, 8), B).numpy()  # new sizes: a new kernel
    assert stats["compiles"] == before + 2

    t = program(A, B)
    x = t._inputs[0]._inputs[0]
    runs = stats["runs"]
    t.resolve()
    t.resolve()
    close(t.numpy(), A @ B)
    assert stats["runs"] == runs + 1  # resolve() keeps the result; numpy() hands it over
    first = t.numpy()
    assert stats["runs"] == runs + 2  # so the next numpy() computes again
    first[:] = -1  # the caller owns it: the next result is unaffected
    close(t.numpy(), A @ B)
    t.resolve()
    t.force_recompute()
    t.numpy()
    assert stats["runs"] == runs + 5
    lowerings = stats["lowerings"]
    for _ in range(3):
        t.force_recompute().numpy()
    assert stats["lowerings"] == lowerings  # nothing changed: the module is not lowered again
    x.set(3 * A)  # a new input value invalidates the result, not the kernel
    close(t.numpy(), 3 * A @ B)
    assert stats["compiles"] == before + 2
    t.set("lt-split{loop=0 factor=4}")
    t.resolve()
    assert stats["compiles"] == before + 3  # a schedule is part of the key
    close(t.numpy(), 3 * A @ B)
    assert t.compile() is t.compiled
    with pytest.raises(lt.FrontendError, match="loop tree cannot be read back"):
        t.set(t.loop_tree)


# ---------------------------------------------------------------- arithmetic
UNARY = {
    "exp": (lambda t: t.exp(), np.exp),
    "log": (lambda t: t.abs().log(), lambda x: np.log(np.abs(x))),
    "sqrt": (lambda t: t.abs().sqrt(), lambda x: np.sqrt(np.abs(x))),
    "neg": (lambda t: -t, np.negative),
    "reciprocal": (lambda t: t.reciprocal(), np.reciprocal),
    "abs": (lambda t: lt.abs(t), np.abs),
    "lt.exp": (lambda t: lt.exp(lt.sqrt(lt.abs(t))), lambda x: np.exp(np.sqrt(np.abs(x)))),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    ours, ref = UNARY[name]
    x = rand(5, 7) + 0.1
    close(ours(lt.Tensor(x)).numpy(), ref(x), 1e-5)


def test_binary_ops_broadcast_by_name():
    s = lt.SymbolGenerator()
    A, b, c = rand(6, 5), rand(5) + 3.0, rand(6)
    a_ = lt.Tensor(s.m, s.n).set(A)
    b_ = lt.Tensor(s.n).set(b)
    c_ = lt.Tensor(s.m).set(c)
    out = ((a_ + b_) * c_ - a_ / b_).max(c_).min(b_ - 3.5)
    want = np.minimum(np.maximum((A + b) * c[:, None] - A / b, c[:, None]), b - 3.5)
    close(out.numpy(), want, 1e-5)
    outer = (c_ * b_).numpy()  # dims m, n: an outer product
    close(outer, c[:, None] * b[None, :], 1e-5)
    scalars = (2.0 * a_ + 1 - lt.Tensor().set(1.0) / a_.abs()).numpy()
    close(scalars, 2 * A + 1 - 1 / np.abs(A), 1e-4)
    assert (b_ * c_).symbolic_shape == [s.n, s.m]


def test_reductions():
    s = lt.SymbolGenerator()
    X = rand(4, 5, 6)
    x = lt.Tensor(s.a, s.b, s.c).set(X)
    close(x.sum(s.a, s.c).numpy(), X.sum((0, 2)), 1e-4)
    close(x.sum().numpy(), X.sum(), 1e-3)
    close(x.max_reduce(s.b).numpy(), X.max(1))
    close(x.min_reduce(s.c).numpy(), X.min(2))
    close(x.prod(s.a).numpy(), X.prod(0), 1e-4)
    # a reduction read back inside the loops it reduced over: x - sum_c(x)
    close((x - x.sum(s.c)).numpy(), X - X.sum(2, keepdims=True), 1e-4)


def test_softmax_shares_loops_like_loop_tool():
    s = lt.SymbolGenerator()
    X = rand(8, 33)
    x = lt.Tensor(s.r, s.c).set(X)
    e = (x - x.max_reduce(s.c)).exp()
    y = e / e.sum(s.c)
    E = np.exp(X - X.max(1, keepdims=True))
    close(y.numpy(), E / E.sum(1, keepdims=True), 1e-5)
    tree = y.loop_tree
    # one loop over r holds three loops over c (max, exp+sum, divide)
    assert tree.count("for r in 8") == 1 and tree.count("for c in 33") == 3
    assert "max= " in tree and "<- -inf" in tree


def test_transpose_and_named_reorder():
    s = lt.SymbolGenerator()
    A = rand(5, 7)
    a = lt.Tensor(s.m, s.n).set(A)
    close(a.transpose(s.n, s.m).numpy(), A.T)
    close(a.to(s.n, s.m).numpy(), A.T)  # dims are names: to() reorders them
    t = a.exp().transpose(s.n, s.m)
    close(t.numpy(), np.exp(A).T, 1e-5)
    assert "B[n, m] <- %1" in t.loop_tree  # written transposed, no copy nest
    # a symbolic_shape rename of anonymous dims is positional
    b = lt.Tensor(A).to(s.p, s.q)
    assert b.shape == [5, 7]
    close(b.sum(s.q).numpy(), A.sum(1), 1e-5)


def test_float32_unless_float64_is_asked_for():
    """loop_tool's rule: float32 whatever the data's NumPy type; a Python
    number (``lt.Tensor(0.0)`` too) never widens; float64 only from an input
    made with ``dtype=np.float64``."""
    x32 = lt.Tensor(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert x32.exp().numpy().dtype == np.float32
    assert (lt.Tensor().set(1.0) + x32).numpy().dtype == np.float32
    a = np.random.randn(50)
    got = (lt.Tensor(a).exp() + 1.0).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.exp(a) + 1.0, rtol=1e-6)
    assert lt.Tensor(np.ones((3, 4))).numpy().dtype == np.float32
    s = lt.SymbolGenerator()
    A, B = np.random.randn(33, 64), np.random.randn(64, 48)
    c = (lt.Tensor(s.m, s.k).set(A) * lt.Tensor(s.k, s.n).set(B)).max(lt.Tensor(0.0)).sum(s.k)
    assert "f64" not in c.code and c.numpy().dtype == np.float32
    np.testing.assert_allclose(c.numpy(), np.maximum(A[:, :, None] * B[None], 0).sum(1), rtol=1e-4, atol=1e-4)
    # asked for: the whole graph computes in float64
    x64 = lt.Tensor(a, dtype=np.float64)
    got = (x64.exp() + 1.0).numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.exp(a) + 1.0, rtol=1e-14)
    mixed = lt.Tensor(s.i).set(np.ones(3, np.float32)) + lt.Tensor(s.i, dtype=np.float64).set(np.full(3, 1e-12))
    assert mixed.numpy().dtype == np.float64 and mixed.numpy()[0] == 1 + 1e-12
    assert "f64" in lt.Tensor(s.j, dtype=np.float64).set_size(4).exp().code


def test_element_types_match_loop_tool():
    """The same programs under loop_tool 0.1.0: every result is float32."""
    loop_tool = pytest.importorskip("loop_tool")
    A, B = np.random.randn(3, 4), np.random.randn(4, 5)
    for mod in (lt, loop_tool):
        s = mod.SymbolGenerator()
        c = (mod.Tensor(s.m, s.k).set(A) * mod.Tensor(s.k, s.n).set(B)).max(mod.Tensor(0.0)).sum(s.k)
        assert c.numpy().dtype == np.float32, mod.__name__
        t = mod.Tensor(np.ones((3, 4)))
        assert (t + t).numpy().dtype == np.float32, mod.__name__


def test_scalar_tensors():
    one = lt.Tensor().set(1.0)
    assert one.symbolic_shape == [] and one.shape == []
    assert float(one.numpy()) == 1.0
    A = rand(128)
    close((one + lt.Tensor(A)).numpy(), 1 + A, 1e-6)
    s = lt.SymbolGenerator()
    x = lt.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).to(s.m, s.n)
    assert float(x[1, 2].numpy()) == 5.0  # constant indices
    close(x[s.m, 1].numpy(), np.array([1.0, 4.0]))


# ---------------------------------------------------------------- windows
def _correlate_valid(x, w):
    n = len(x) - len(w) + 1
    return np.array([sum(x[i + j] * w[j] for j in range(len(w))) for i in range(n)])


def test_conv1d_128_window_3():
    X, W = rand(128), rand(3)
    x, w = lt.Tensor(128).set(X), lt.Tensor(3).set(W)
    Ni, No, K = lt.symbols("Ni No K")
    y = (x.to(Ni).to(No, K, constraints=[(Ni, No + K)]) * w.to(K)).sum(K)  # loop_tool's im2col
    ref = _correlate_valid(X.astype(np.float64), W.astype(np.float64))
    assert y.shape == [126]
    close(y.numpy(), ref, 1e-5)
    close(y.numpy(), np.correlate(X, W, mode="valid"), 1e-5)
    s = lt.SymbolGenerator()
    y2 = (x[s.No + s.K] * w.to(s.K)).sum(s.K)  # the same window as an index view
    assert x[s.No + s.K].symbolic_shape == [s.No, s.K]
    close(y2.numpy(), ref, 1e-5)
    tree = y2.loop_tree
    assert "read A[No + K]" in tree and "alloc" not in tree


def test_unbound_sizes_are_inferred_through_a_window():
    def conv(X, W):
        Ni, No, K = lt.Symbol("Ni"), lt.Symbol("No"), lt.Symbol("K")
        X = X.to(Ni).to(No, K, constraints=[(Ni, No + K)])
        return (X * W.to(K)).sum(K)

    N, K = lt.Symbol("N"), lt.Symbol("K")
    X = lt.Tensor(N)
    W = lt.Tensor(3)
    W1 = lt.Tensor(8)
    Y = conv(X, W)
    Z = (Y.to(K) * W1.to(K)).sum()
    Z.unify()
    assert X.shape[0] == 10  # 8 outputs of a 3-wide window
    assert Y.shape == [8]


def test_strided_window_via_constraints():
    s = lt.SymbolGenerator()
    x = lt.Tensor(np.arange(10, dtype=np.float32)).to(s.Ni)
    v = x.to(s.No, s.K, constraints=[(s.Ni, lt.Expr(2) * s.No + s.K), (lt.Size(s.K), lt.Expr(3))])
    assert v.shape == [4, 3]
    close(v.numpy(), np.array([[2 * i + j for j in range(3)] for i in range(4)], np.float32))
    close(v.sum(s.K).numpy(), np.array([3.0, 9.0, 15.0, 21.0]))


def _conv2d_ref(X, W, pad=0):
    X = np.pad(X.astype(np.float64), [(0, 0), (pad, pad), (pad, pad)])
    co, ci, kh, kw = W.shape
    _, h, w = X.shape
    Y = np.zeros((co, h - kh + 1, w - kw + 1))
    for o in range(co):
        for i in range(h - kh + 1):
            for j in range(w - kw + 1):
                Y[o, i, j] = np.sum(X[:, i : i + kh, j : j + kw] * W[o])
    return Y


@pytest.mark.parametrize("padded", [False, True])
def test_conv2d_16x8x8_3x3(padded):
    def conv2d(X, W):
        s = lt.SymbolGenerator()
        if padded:
            X = X.to(s.c, s.h, s.w).pad(s.h, 1).pad(s.w, 1)
        X = X[s.C, s.H + s.Kh, s.W + s.Kw]
        W = W.to(s.Co, s.C, s.Kh, s.Kw)
        return (X * W).sum(s.C, s.Kh, s.Kw).transpose(s.Co, s.H, s.W)

    Xn, Wn = rand(16, 8, 8), rand(16, 16, 3, 3)
    Y = conv2d(lt.Tensor(16, 8, 8).set(Xn), lt.Tensor(16, 16, 3, 3).set(Wn))
    close(Y.numpy(), _conv2d_ref(Xn, Wn, int(padded)), 1e-3)
    tree = Y.loop_tree
    assert "alloc" not in tree  # the window and the pad are index arithmetic on loads
    if padded:
        assert "select(" in tree and "maxsi(" in tree and "minsi(" in tree


# ---------------------------------------------------------------- pad / concat
def test_pad_one_and_two_sided():
    m, n = 128, 16
    base = np.random.randn(m, n)
    t = lt.Tensor(m, n, dtype=np.float64).set(base)
    padded = t.pad(t.symbolic_shape[1], 3)
    assert padded.shape == [128, 22] and padded.symbolic_shape[1].name.endswith("_p_3_3")
    close(padded.numpy(), np.pad(base, [(0, 0), (3, 3)]), 1e-12)
    s = lt.SymbolGenerator()
    A = rand(5, 7)
    a = lt.Tensor(s.m, s.n).set(A)
    close(a.pad(s.n, 1, 2).pad(s.m, 0, 1).numpy(), np.pad(A, [(0, 1), (1, 2)]))
    # pads compose with arithmetic and reductions
    close(a.pad(s.n, 2).exp().sum(s.m).numpy(), np.exp(np.pad(A, [(0, 0), (2, 2)])).sum(0), 1e-5)


def test_offset_constraints_pad_like_loop_tool():
    import string

    a = lt.Tensor(lt.Symbol("A")).set(np.arange(5, dtype=np.float32) + 1)
    b = a
    for i in range(4):
        X = b.symbolic_shape[0]
        Y = lt.Symbol(string.ascii_uppercase[i + 1])
        b = b.to(Y, constraints=[(Y, X + lt.Expr(1)), (lt.Size(Y), lt.Size(X) + lt.Expr(2))])
    assert b.shape == [13]
    close(b.numpy(), np.pad(np.arange(5, dtype=np.float32) + 1, 4))


def test_concat():
    m, n, k = 128, 16, 5
    A, B = np.random.randn(m, n), np.random.randn(m, k)
    a, b = lt.Tensor(m, n, dtype=np.float64).set(A), lt.Tensor(m, k).set(B)
    with lt.SymbolGenerator() as s:
        c = a.to(s.m, s.n) | b.to(s.m, s.k)
    assert c.shape == [128, 21] and c.symbolic_shape[1].name == "nk"
    close(c.numpy(), np.concatenate((A, B), axis=1), 1e-12)
    close((c * 2.0).sum(s.m).numpy(), 2 * np.concatenate((A, B), axis=1).sum(0), 1e-9)


def test_window_over_a_computed_tensor_materialises_it():
    s = lt.SymbolGenerator()
    V, W = rand(20), rand(3)
    rv = lt.Tensor(V).exp()
    y = (rv[s.o + s.k] * lt.Tensor(W).to(s.k)).sum(s.k)
    close(y.numpy(), np.correlate(np.exp(V), W, mode="valid"), 1e-4)
    tree = y.loop_tree
    assert "alloc f32[X] (20 elements)" in tree  # scratch for exp(V), read through the window


# ---------------------------------------------------------------- schedules
def test_schedule_through_the_api_changes_loop_tree_not_numbers():
    s = lt.SymbolGenerator()
    A, B = rand(33, 64), rand(64, 48)
    a = lt.Tensor(s.m, s.k).set(A)
    b = lt.Tensor(s.k, s.n).set(B)
    c = (a * b).max(lt.Tensor().set(0.0)).sum(s.k)  # the blog's clipped matmul
    want = np.maximum(A[:, :, None] * B[None], 0).sum(1)
    default_tree = c.loop_tree
    close(c.numpy(), want, 1e-4)
    sched = c.schedule
    sched.split(0, 8).swap(3)  # m by 8 (33 = 4 r 1), then n outside k
    c.set(sched)
    tree = c.loop_tree
    assert tree != default_tree
    assert tree.startswith("for m in 4 r 1 : L0\n for m' in 8 : L1")
    assert "  for n in 48 : L3\n   for k in 64 : L4" in tree
    close(c.numpy(), want, 1e-4)
    c.set(c.schedule.swap(3).vectorize(4, 16))  # back to k outside n; n in 16 lanes
    assert "for n in 48 : L4 [vectorize 16]" in c.loop_tree
    close(c.numpy(), want, 1e-4)
    # a pipeline string applies to the default schedule
    d = (a * b).sum(s.k).exp()
    assert "alloc f32[m, n] (1584 elements)" in d.loop_tree  # the blog's 1584
    d.set("lt-split{loop=0 factor=8}, lt-shrink-buffers")
    assert "for m in 4 r 1 : L0" in d.loop_tree and "(48 elements)" in d.loop_tree
    close(d.numpy(), np.exp(A @ B), 1e-4)


def test_bad_schedules_are_refused():
    s = lt.SymbolGenerator()
    c = (lt.Tensor(s.m, s.k).set(rand(4, 4)) * lt.Tensor(s.k, s.n).set(rand(4, 4))).sum(s.k)
    tree = c.loop_tree
    with pytest.raises(lt.PassError, match="lt-swap"):
        c.set("lt-swap{loop=0}")
    with pytest.raises(lt.PipelineError):
        c.set("lt-no-such-pass")
    assert c.loop_tree == tree  # a refused schedule leaves the old one
    other = lt.Tensor(rand(3, 3)).exp()
    with pytest.raises(lt.FrontendError, match="schedule's function takes"):
        c.set(other.schedule)
    with pytest.raises(lt.FrontendError, match="input"):
        lt.Tensor(3).set(other.schedule)


# ---------------------------------------------------------------- errors
def test_size_errors_are_clear():
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.x).set_size(3)
    b = lt.Tensor(s.x).set_size(4)
    with pytest.raises(lt.SizeError, match=r"contradictory sizes for 'x': 3 \(set_size\) but 4 \(set_size\)"):
        (a + b).numpy()
    with pytest.raises(lt.SizeError, match="unknown size of dim 'y'"):
        lt.Tensor(s.y).exp().numpy()
    with pytest.raises(lt.SizeError, match="unknown size"):
        lt.Tensor(s.y2).shape
    with pytest.raises(lt.SizeError, match="contradictory sizes for 'q'"):
        lt.Tensor(s.q).set_size(4).set(np.ones(3))
    e = lt.Tensor(np.ones(2, np.float32))[s.o + s.w]
    with pytest.raises(lt.SizeError, match="does not fit"):
        (e * lt.Tensor(s.w).set_size(5)).sum(s.w).numpy()
    X = lt.Tensor(s.C, s.H).set(np.ones((2, 8)))
    with pytest.raises(lt.SizeError, match="'H'"):  # H on both sides of H = H + Kh
        (X[s.C, s.H + s.Kh] * lt.Tensor(s.Kh).set_size(3)).numpy()
    assert issubclass(lt.SizeError, lt.FrontendError) and issubclass(lt.FrontendError, lt.LtError)


def test_usage_errors_are_clear():
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.x).set_size(3)
    cases = [
        (lambda: lt.Tensor(s.z).set_size(3).exp().numpy(), "has no data"),
        (lambda: lt.Tensor(s.m, s.n).set(np.ones(3)), "does not fit a tensor over 2 dims"),
        (lambda: (a + a).set(np.ones(3)), "cannot set data on a computed tensor"),
        (lambda: a.sum(s.nope), "cannot reduce over 'nope'"),
        (lambda: a | a, "exactly one dim must differ"),
        (lambda: a.transpose(s.m), "must list each dim"),
        (lambda: lt.Tensor(np.ones(3)).to(s.a1, s.b1), "cannot tell which new dims"),
        (lambda: a[s.i, s.j], "2 expressions into a tensor over 1 dims"),
        (lambda: a.to("x"), "takes Symbols"),
        (lambda: lt.Tensor("x"), "argument 0 is str"),
        (lambda: a.pad(s.x, -1), "non-negative"),
        (lambda: a.to(s.u, constraints=[(s.v, s.u)]), "neither a dim"),
        (lambda: a + "1", "expected a Tensor or a number"),
        (lambda: iter(a), "not iterable"),
    ]
    for fn, message in cases:
        with pytest.raises((lt.LtError, TypeError), match=message):
            fn()
    # the loop tree of a program without data still prints: it needs sizes only
    assert "exp(%0)" in lt.Tensor(s.z2).set_size(3).exp().loop_tree


def test_frontend_errors_speak_of_the_users_dims():
    """Unnamed dims are named by axis and tensor, not by the internal
    placeholder 'X'; max over a Symbol points to max_reduce."""
    s = lt.SymbolGenerator()
    with pytest.raises(lt.FrontendError, match=r"to\[a\]: cannot tell which new dims rename \[axes 0, 1 of Tensor\(data of shape \(3, 4\)\)\]"):
        lt.Tensor(np.ones((3, 4))).to(s.a)
    with pytest.raises(lt.SizeError, match=r"contradictory sizes for axis 0 of Tensor\(3, k\): 4 \(data of shape \(4, 4\)\) but 3"):
        lt.Tensor(3, s.k).set(np.ones((4, 4)))
    with pytest.raises(lt.FrontendError, match=r"input 0 over \[axes 0, 1 of Tensor\(3, 4\)\] has no data"):
        (lt.Tensor(3, 4) * 2.0).numpy()
    x = lt.Tensor(np.ones((3, 4))).to(s.m, s.n)
    with pytest.raises(lt.FrontendError, match=r"max\(\) is elementwise \(a Tensor or a number\); to reduce over 'n' use max_reduce\(n\)"):
        x.max(s.n)
    with pytest.raises(lt.FrontendError, match=r"min\(\) is elementwise .* use min_reduce\(m\)"):
        x.min(s.m)


def test_loop_tool_backend_api():
    """loop_tool's lt.backends / set_default_backend / Backend run unchanged;
    its backend names compute what lt_mlir's one code generator computes."""
    assert lt.backends() == ["llvm"] and lt.get_default_backend() == "llvm"
    A = np.random.randn(16, 8).astype(np.float32)
    s = lt.SymbolGenerator()
    want = lt.Tensor(A).to(s.m, s.n).sum(s.n).numpy().copy()
    for name in ("cpp", "cpu_interpreted"):
        with lt.Backend(name):
            assert lt.get_default_backend() == name
            np.testing.assert_array_equal(lt.Tensor(A).to(s.m, s.n).sum(s.n).numpy(), want)
    assert lt.get_default_backend() == "llvm"
    with pytest.raises(lt.FrontendError, match=r"unknown backend 'tpu' \(one of: llvm, cpp, cpu_interpreted\)"):
        lt.set_default_backend("tpu")


def test_flatten_matches_numpy_and_loop_tool():
    s = lt.SymbolGenerator()
    T = np.random.randn(3, 4, 5).astype(np.float32)
    t = lt.Tensor(s.p, s.q, s.r).set(T)
    f = t.flatten(s.q, s.r)
    assert f.shape == [3, 20] and f.symbolic_shape[0] is s.p and f.symbolic_shape[1].name == "qr"
    np.testing.assert_array_equal(f.numpy(), T.reshape(3, 20))
    np.testing.assert_array_equal(t.flatten(s.r, s.p).numpy(), T.transpose(1, 2, 0).reshape(4, 15))  # q stays first
    # a sum of 60 values of either sign can cancel to near zero (0.0877 where the terms are ~1): its
    # rounding error is bounded by n eps sum|x| whatever the order of the additions, not by the result
    bound = T.size * np.finfo(np.float32).eps * 2 * np.abs(T).sum()
    np.testing.assert_allclose((t.flatten() * 2.0).sum().numpy(), 2 * T.sum(dtype=np.float64), rtol=1e-5, atol=bound)
    with pytest.raises(lt.FrontendError, match=r"cannot flatten 'x': the tensor's dims are \[p, q, r\]"):
        t.flatten(s.x)
    with pytest.raises(lt.SizeError, match="flatten needs the sizes of its dims: unknown size of dim 'a', 'b'"):
        lt.Tensor(s.a, s.b).flatten(s.a, s.b)
    loop_tool = pytest.importorskip("loop_tool")
    ls = loop_tool.SymbolGenerator()
    theirs = loop_tool.Tensor(ls.m, ls.n).set(T[0]).flatten(ls.n, ls.m).numpy()
    ours = lt.Tensor(s.m, s.n).set(T[0]).flatten(s.n, s.m).numpy()
    np.testing.assert_array_equal(ours, theirs)
