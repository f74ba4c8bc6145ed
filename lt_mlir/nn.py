"""Neural-network helpers over frontend tensors (loop_tool's ``lt.nn``).

Every helper builds lazy tensors; nothing runs until a result is asked for.
Constants (``0``, ``1``, ``6``, ...) are compile-time constants of the
kernel (``arith.constant``), which the compiler folds and vectorizes.

    import lt_mlir as lt
    y = lt.nn.relu(lt.nn.linear(x, w, bias))
    z = lt.nn.conv(img, k, [s.y, s.x], [s.ky, s.kx], stride=2)
"""

from __future__ import annotations

from .frontend.errors import FrontendError
from .frontend.symbols import Expr, Symbol
from .frontend.tensor import Tensor, as_tensor


def _const(value: float) -> Tensor:
    return Tensor._constant(float(value))


def mean(X: Tensor, dims) -> Tensor:
    """Mean over ``dims`` (a Symbol or a list of them)."""
    dims = [dims] if isinstance(dims, Symbol) else list(dims)
    if not dims:
        raise FrontendError("mean needs at least one dim")
    ones = _const(1.0).to(*dims)  # a scalar broadcast over dims: counts them
    return X.sum(*dims) / ones.sum(*dims)


def relu(T: Tensor) -> Tensor:
    return T.max(_const(0.0))


def relu6(T: Tensor) -> Tensor:
    return T.max(_const(0.0)).min(_const(6.0))


def sigmoid(T: Tensor) -> Tensor:
    return ((-T).exp() + _const(1.0)).reciprocal()


def swish(T: Tensor) -> Tensor:
    return T * sigmoid(T)


def hardswish(T: Tensor) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return T * relu6(T + _const(3.0)) * _const(1.0 / 6.0)


def tanh(T: Tensor) -> Tensor:
    """``2 * sigmoid(2x) - 1``."""
    two = _const(2.0)
    return two * sigmoid(two * T) - _const(1.0)


def linear(X: Tensor, W: Tensor, bias: Tensor | None = None) -> Tensor:
    """Contract the dims ``X`` and ``W`` share, then add ``bias``."""
    shared = [d for d in X.symbolic_shape if d in W.symbolic_shape]
    if not shared:
        raise FrontendError(
            "linear: X and W share no dim to contract "
            f"(X over {[d.name for d in X.symbolic_shape]}, W over {[d.name for d in W.symbolic_shape]})"
        )
    Y = (X * W).sum(*shared)
    if bias is not None:
        Y = Y + as_tensor(bias)
    return Y


def pad(X: Tensor, *args) -> Tensor:
    """``pad(X, (s.k, 1), (s.x, (0, 1)))``: per dim, an amount for both
    sides or a ``(pre, post)`` pair."""
    for item in args:
        try:
            d, amount = item
        except (TypeError, ValueError):
            raise FrontendError(f"pad takes (dim, amount) or (dim, (pre, post)) pairs, got {item!r}") from None
        if isinstance(amount, (tuple, list)):
            X = X.pad(d, *amount)
        else:
            X = X.pad(d, amount)
    return X


def conv(X: Tensor, W: Tensor, spatial, window, stride: int = 1, channel_reduce: bool = True) -> Tensor:
    """Convolution (correlation, as in deep learning) of ``X`` over its
    ``spatial`` dims by ``W`` over its ``window`` dims.

    The output has ``X``'s other dims, one new dim per spatial dim (named
    ``<dim>o``, ``stride`` apart in the input), then ``W``'s other dims.
    With ``channel_reduce`` the dims ``X`` and ``W`` share (input channels)
    are summed as well; without it they stay (depthwise convolution)."""
    spatial, window = list(spatial), list(window)
    if len(spatial) != len(window):
        raise FrontendError(f"conv: {len(spatial)} spatial dims but {len(window)} window dims")
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
        raise FrontendError(f"conv: stride must be a positive int, got {stride!r}")
    xdims = X.symbolic_shape
    for d in spatial:
        if d not in xdims:
            raise FrontendError(f"conv: '{d.name}' is not a dim of X {[x.name for x in xdims]}")
    for d in window:
        if d not in W.symbolic_shape:
            raise FrontendError(f"conv: '{d.name}' is not a dim of W {[w.name for w in W.symbolic_shape]}")
    out_spatial = [Symbol(d.name + "o") for d in spatial]
    outer = [d for d in xdims if d not in spatial]
    exprs = [Expr(stride) * o + k for o, k in zip(out_spatial, window)]
    Xw = X.to(*outer, *out_spatial, *window, constraints=list(zip(spatial, exprs)))
    reduce = list(window)
    if channel_reduce:
        reduce = [d for d in Xw.symbolic_shape if d in W.symbolic_shape and d not in window] + reduce
    return (Xw * W).sum(*reduce)


def batch_norm(x: Tensor, mean: Tensor, var: Tensor, weight: Tensor, bias: Tensor, eps=None) -> Tensor:
    """``(x - mean) * weight / sqrt(var + eps) + bias`` (eps 1e-5 by default)."""
    eps = _const(1e-5) if eps is None else as_tensor(eps)
    return (x - mean) * weight / (var + eps).sqrt() + bias
