"""``lt.nn`` helpers against NumPy (shapes from loop_tool's test_ops.py)."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir import nn

RNG = np.random.default_rng(99)


def close(got, want, tol=1e-3):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


POINTWISE = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, _sigmoid),
    "swish": (nn.swish, lambda x: x * _sigmoid(x)),
    "hardswish": (nn.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "tanh": (nn.tanh, np.tanh),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise(name):
    ours, ref = POINTWISE[name]
    x = RNG.standard_normal((1, 32, 8, 8)) * 4  # float64, as loop_tool's tests
    got = ours(lt.Tensor(x)).numpy()
    assert got.dtype == np.float32  # loop_tool's rule: float32 unless asked
    close(got, ref(x), 1e-5)
    got = ours(lt.Tensor(x, dtype=np.float64)).numpy()
    assert got.dtype == np.float64
    close(got, ref(x), 1e-9)


def test_pointwise_float32_shares_constants():
    x = (RNG.standard_normal(128) * 4).astype(np.float32)
    y = nn.relu6(lt.Tensor(x))
    close(y.numpy(), np.clip(x, 0, 6), 1e-6)
    assert y.numpy().dtype == np.float32
    # constants are scalar inputs, so a second graph reuses the kernel
    from lt_mlir.frontend import stats

    before = stats["compiles"]
    close(nn.relu6(lt.Tensor(-x)).numpy(), np.clip(-x, 0, 6), 1e-6)
    assert stats["compiles"] == before


def test_mean():
    A = RNG.standard_normal((32, 32))
    a = lt.Tensor(A, dtype=np.float64)
    close(nn.mean(a, [a.symbolic_shape[0]]).numpy(), A.mean(0), 1e-9)
    close(nn.mean(a, a.symbolic_shape).numpy(), A.mean(), 1e-9)


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(with_bias):
    M, N, K = 123, 231, 128
    A, B, bias = RNG.standard_normal((M, K)), RNG.standard_normal((K, N)), RNG.standard_normal(N)
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.M, s.K, dtype=np.float64).set(A)
    b = lt.Tensor(s.K, s.N, dtype=np.float64).set(B)
    c = nn.linear(a, b, lt.Tensor(s.N, dtype=np.float64).set(bias) if with_bias else None)
    close(c.numpy(), A @ B + (bias if with_bias else 0), 1e-9)


def _conv_ref(X, W, stride=1):
    """(b, c, y, x) * (o, c, ky, kx) -> (b, yo, xo, o), by explicit windows."""
    b, c, h, w = X.shape
    o, _, kh, kw = W.shape
    ho, wo = (h - kh) // stride + 1, (w - kw) // stride + 1
    Y = np.zeros((b, ho, wo, o))
    for i in range(ho):
        for j in range(wo):
            patch = X[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            Y[:, i, j, :] = np.einsum("bcyx,ocyx->bo", patch, W)
    return Y


@pytest.mark.parametrize("stride", [1, 2])
def test_conv(stride):
    X, W = RNG.standard_normal((3, 16, 11, 11)), RNG.standard_normal((8, 16, 3, 3))
    s = lt.SymbolGenerator()
    x = lt.Tensor(s.b, s.ic, s.y, s.x, dtype=np.float64).set(X)
    w = lt.Tensor(s.oc, s.ic, s.wy, s.wx, dtype=np.float64).set(W)
    y = nn.conv(x, w, [s.y, s.x], [s.wy, s.wx], stride=stride)
    b, yo, xo, oc = y.symbolic_shape
    assert [d.name for d in (b, yo, xo, oc)] == ["b", "yo", "xo", "oc"]
    close(y.numpy(), _conv_ref(X, W, stride), 1e-9)
    # loop_tool's test transposes to NCHW
    close(y.transpose(b, oc, yo, xo).numpy(), _conv_ref(X, W, stride).transpose(0, 3, 1, 2), 1e-9)


def test_depthwise_conv():
    X, W = RNG.standard_normal((2, 4, 9, 9)), RNG.standard_normal((4, 3, 3))
    s = lt.SymbolGenerator()
    x = lt.Tensor(s.b, s.c, s.y, s.x, dtype=np.float64).set(X)
    w = lt.Tensor(s.c, s.wy, s.wx, dtype=np.float64).set(W)
    y = nn.conv(x, w, [s.y, s.x], [s.wy, s.wx], channel_reduce=False)
    assert [d.name for d in y.symbolic_shape] == ["b", "c", "yo", "xo"]
    want = np.zeros((2, 4, 7, 7))
    for i in range(3):
        for j in range(3):
            want += X[:, :, i : i + 7, j : j + 7] * W[None, :, i, j, None, None]
    close(y.numpy(), want, 1e-9)


def test_pad_then_conv():
    A = RNG.standard_normal((1, 2, 3, 3))
    Wt = RNG.standard_normal((1, 2, 3, 3))
    s = lt.SymbolGenerator()
    a = lt.Tensor(s.b, s.c, s.y, s.x, dtype=np.float64).set(A)
    w = lt.Tensor(s.co, s.c, s.ky, s.kx, dtype=np.float64).set(Wt)
    _, _, m, n = a.symbolic_shape
    p = nn.pad(a, (m, (2, 3)), (n, (2, 3)))
    P = np.pad(A, [(0, 0), (0, 0), (2, 3), (2, 3)])
    close(p.numpy(), P, 1e-12)
    _, _, pm, pn = p.symbolic_shape
    y = nn.conv(p, w, [pm, pn], [s.ky, s.kx])
    close(y.numpy(), _conv_ref(P, Wt), 1e-9)
    assert "alloc" not in y.loop_tree  # the pad is folded into the window's loads


def test_batch_norm():
    B, C, Y, X = 8, 8, 8, 8
    s = lt.SymbolGenerator()
    A = RNG.standard_normal((B, C, Y, X))
    mean, var = RNG.standard_normal(C), np.abs(RNG.standard_normal(C))
    weight, bias = RNG.standard_normal(C), RNG.standard_normal(C)
    a = lt.Tensor(s.B, s.C, s.Y, s.X, dtype=np.float64).set(A)
    out = nn.batch_norm(
        a,
        lt.Tensor(s.C, dtype=np.float64).set(mean),
        lt.Tensor(s.C, dtype=np.float64).set(var),
        lt.Tensor(s.C, dtype=np.float64).set(weight),
        lt.Tensor(s.C, dtype=np.float64).set(bias),
    )
    c = (None, slice(None), None, None)
    want = (A - mean[c]) * weight[c] / np.sqrt(var[c] + 1e-5) + bias[c]
    close(out.numpy(), want, 1e-9)


def test_nn_errors():
    s = lt.SymbolGenerator()
    x = lt.Tensor(s.a, s.b).set_size(4, 4)
    with pytest.raises(lt.FrontendError, match="share no dim"):
        nn.linear(x, lt.Tensor(s.c).set_size(3))
    with pytest.raises(lt.FrontendError, match="spatial dims but"):
        nn.conv(x, x, [s.a], [])
    with pytest.raises(lt.FrontendError, match="stride"):
        nn.conv(x, lt.Tensor(s.k).set_size(2), [s.a], [s.k], stride=0)
    with pytest.raises(lt.FrontendError, match="pairs"):
        nn.pad(x, s.a)
