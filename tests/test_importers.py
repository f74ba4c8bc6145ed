"""lt_mlir.importers: PyTorch, ONNX and linalg-on-tensors models as lt loop nests.

Every imported model is checked against an independent reference: the torch
module's own output, onnxruntime on the same ONNX file, or NumPy.  Inputs are
float32 (int64 for an embedding's indices) and small (a few hundred
elements); the tolerance is ``rtol=1e-5, atol=1e-5`` unless a test says why it
needs more.  Most torch models run for the CPU and for ``cuda-emulated`` (the
GPU lowering, mapped by ``lt-gpu-auto``, compiled as CPU code).

The torch tests skip without torch, the ONNX ones without onnx/onnxruntime;
the linalg ones need neither.  torch-mlir is reached only through
``lt_mlir.mlir.torch_importers()``.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lt_mlir
from lt_mlir.importers import ImportError as LtImportError
from lt_mlir.importers import Model
from lt_mlir.testing import finish_job, start_job

RTOL = ATOL = 1e-5
TARGETS = ("cpu", "cuda-emulated")


def _torch():
    return pytest.importorskip("torch", reason="from_torch needs torch (pip install torch; the CPU build is enough)")


def _onnx():
    onnx = pytest.importorskip("onnx", reason="from_onnx needs the onnx package")
    ort = pytest.importorskip("onnxruntime", reason="the ONNX tests compare with onnxruntime")
    return onnx, ort


def _one_line(message: str) -> bool:
    return "\n" not in message.strip() and "Traceback" not in message


# ------------------------------------------------------------ torch models
#
# Each factory takes the torch module and returns (nn.Module, example inputs);
# it runs right after torch.manual_seed(0).


def _mlp(t):
    nn = t.nn
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)), (t.randn(4, 16),)


def _conv_bn_relu(t):
    nn = t.nn
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
    with t.no_grad():  # statistics and affine parameters that are not the identity
        m[1].running_mean.uniform_(-1, 1)
        m[1].running_var.uniform_(0.5, 2)
        m[1].weight.uniform_(0.5, 1.5)
        m[1].bias.uniform_(-1, 1)
    return m, (t.randn(1, 3, 8, 8),)


def _depthwise(t):
    return t.nn.Conv2d(4, 4, 3, padding=1, groups=4), (t.randn(1, 4, 8, 8),)


def _layer_norm(t):
    m = t.nn.LayerNorm(16)
    with t.no_grad():
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-1, 1)
    return m, (t.randn(4, 16),)


def _softmax(t):
    return t.nn.Softmax(dim=-1), (t.randn(4, 16),)


def _attention(t):
    nn = t.nn

    class Attention(nn.Module):
        """One multi-head self-attention block: qkv projection, heads, softmax(QK^T/sqrt(d))V, output projection."""

        def __init__(self, d=16, heads=2):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=-1)
            q, k, v = (z.view(b, n, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            a = t.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
            return self.out((a @ v).transpose(1, 2).reshape(b, n, d))

    return Attention(), (t.randn(1, 4, 16),)


def _gelu(t):
    return t.nn.GELU(), (t.randn(4, 16),)


def _gelu_tanh(t):
    return t.nn.GELU(approximate="tanh"), (t.randn(4, 16),)


def _residual(t):
    nn = t.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            return x + t.relu(self.fc(x))

    return Residual(), (t.randn(4, 16),)


def _maxpool(t):
    return t.nn.MaxPool2d(2), (t.randn(1, 3, 8, 8),)


def _embedding(t):
    return t.nn.Embedding(10, 8), (t.tensor([[1, 3, 5, 9], [0, 2, 4, 6]], dtype=t.int64),)


def _mean(t):
    nn = t.nn

    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(dim=1)

    return Mean(), (t.randn(4, 6, 5),)


def _strided_conv(t):
    return t.nn.Conv2d(3, 4, 3, stride=2, padding=1), (t.randn(1, 3, 9, 9),)


# name -> (factory, atol)
CASES = {
    "mlp": (_mlp, ATOL),
    "conv_bn_relu": (_conv_bn_relu, ATOL),
    "depthwise_conv": (_depthwise, ATOL),
    "layer_norm": (_layer_norm, ATOL),
    "softmax": (_softmax, ATOL),
    "attention": (_attention, ATOL),
    "gelu_erf": (_gelu, ATOL),
    # torch-mlir's decomposition of GELU(approximate='tanh') writes sqrt(2/pi)
    # as 0.797724 (it is 0.7978846): the results differ from torch's by ~5e-5.
    "gelu_tanh": (_gelu_tanh, 1e-4),
    "residual": (_residual, ATOL),
    "maxpool": (_maxpool, ATOL),
    "embedding": (_embedding, ATOL),
    "mean": (_mean, ATOL),
    "strided_conv": (_strided_conv, ATOL),
}

_MODELS: dict = {}  # (case, target) -> (module, inputs, Model): each model is imported once per test module


def _imported(case: str, target: str = "cpu", cpu: str | None = None):
    """``cpu``: the LLVM CPU whose vector register the default schedule is
    for (None: this host's), for tests of one schedule's structure."""
    key = (case, target, cpu)
    if key not in _MODELS:
        t = _torch()
        t.manual_seed(0)
        module, inputs = CASES[case][0](t)
        module.eval()
        _MODELS[key] = (module, inputs, lt_mlir.from_torch(module, *inputs, target=target, cpu=cpu))
    return _MODELS[key]


# The vector register the structural tests' schedules are made for: with
# AVX-512's 16 lanes the 4 x 16 -> 8 MLP and the 4-channel convolution are
# too narrow for register tiles (with AVX2's 8 they are tiled, and their
# panels of weights packed into extra kernel arguments).
WIDE = "znver4"


def _reference(module, inputs):
    t = _torch()
    with t.no_grad():
        return module(*inputs)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(CASES))
def test_torch_model_matches_torch(case, target):
    t = _torch()
    module, inputs, model = _imported(case, target)
    assert isinstance(model, Model) and model.target == target
    got = model(*inputs)
    ref = _reference(module, inputs)
    assert isinstance(got, t.Tensor) and got.dtype == ref.dtype and tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=RTOL, atol=CASES[case][1], err_msg=f"{case} on {target}")


def test_model_describes_its_arguments():
    """Inputs take the forward's argument names, weights the state_dict's
    (a weight folded at import, e.g. transposed, keeps its source's name as
    a prefix), outputs are output0...; the kernel's signature is inputs,
    weights, outputs."""
    module, inputs, model = _imported("mlp")
    assert [(a.name, tuple(a.shape), a.dtype) for a in model.inputs] == [("input", (4, 16), np.dtype(np.float32))]
    assert [(a.name, tuple(a.shape)) for a in model.outputs] == [("output0", (4, 8))]
    state = set(module.state_dict())
    assert len(model.weights) == 4
    for w in model.weights:
        assert w.role == "weight" and w.data is not None
        assert w.data.shape == tuple(w.shape) and w.data.dtype == w.dtype
        assert any(w.name == k or w.name.startswith(k + ".") for k in state), (w.name, state)
    assert [a.role for a in model.arguments] == ["input"] + ["weight"] * 4 + ["output"]
    assert "for " in model.loop_tree and "lt.loop" in model.module
    assert isinstance(model.schedule, lt_mlir.Schedule) and isinstance(model.start, lt_mlir.Schedule)


def test_weight_combined_with_a_constant_tensor():
    t = _torch()

    class Shifted(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = t.nn.Parameter(t.randn(4, 4))

        def forward(self, x):
            return x * (self.w + t.full((4, 4), 2.0))

    t.manual_seed(0)
    module, x = Shifted().eval(), t.randn(4, 4)
    np.testing.assert_allclose(lt_mlir.from_torch(module, x)(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


def test_folded_weights_are_no_larger_than_the_model():
    module, _, model = _imported("conv_bn_relu")
    state = sum(v.numel() for v in module.state_dict().values())
    assert sum(w.data.size for w in model.weights) <= state, [(w.name, w.shape) for w in model.weights]


def test_a_parameter_used_twice_is_one_weight():
    t = _torch()

    class Affine(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = t.nn.Parameter(t.randn(4, 4))

        def forward(self, x):
            return x * self.w + self.w

    t.manual_seed(0)
    module, x = Affine().eval(), t.randn(4, 4)
    model = lt_mlir.from_torch(module, x)
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)
    assert [w.name for w in model.weights] == ["w"]


# ------------------------------------------------------------ call conventions


def test_torch_in_torch_out_numpy_in_numpy_out():
    t = _torch()
    module, (x,), model = _imported("mlp")
    ref = _reference(module, (x,)).numpy()
    from_torch = model(x)
    from_numpy = model(x.numpy())
    assert isinstance(from_torch, t.Tensor) and isinstance(from_numpy, np.ndarray)
    np.testing.assert_allclose(from_torch.numpy(), ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(from_numpy, from_torch.numpy())
    # a non-contiguous tensor of the right shape is taken as its values
    np.testing.assert_allclose(model(x.t().contiguous().t()).numpy(), ref, rtol=RTOL, atol=ATOL)


def test_compiled_kernel_takes_inputs_weights_outputs():
    module, (x,), model = _imported("mlp", cpu=WIDE)  # no packed panels
    kernel = model.compile()
    out = np.full(model.outputs[0].shape, np.nan, np.float32)
    kernel(x.numpy(), *[w.data for w in model.weights], out)
    np.testing.assert_allclose(out, _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)
    assert model.compile() is kernel  # cached while the schedule stays


@pytest.mark.parametrize("cpu", ["znver2", "znver4"])
def test_compiled_kernel_takes_inputs_constants_outputs(cpu):
    """Whatever the schedule packs (AVX2's register tiles pack the MLP's
    weight panels into extra arguments; AVX-512's schedule packs nothing),
    ``constants`` is what goes between the inputs and the outputs."""
    module, (x,), model = _imported("mlp", cpu=cpu)
    kernel = model.compile()
    weights = [w.data for w in model.weights]
    packed = model.constants[len(weights):]
    assert all(a is b for a, b in zip(model.constants, weights))
    assert bool(packed) == ("lt-cache" in model.schedule.pipeline)
    out = np.full(model.outputs[0].shape, np.nan, np.float32)
    kernel(x.numpy(), *model.constants, out)
    np.testing.assert_allclose(out, _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


def test_wrong_shape_dtype_or_count_is_an_argument_error_naming_the_input():
    t = _torch()
    _, (x,), model = _imported("mlp")
    with pytest.raises(lt_mlir.ArgumentError, match=r"'input'.*shape \(4, 16\).*\(3, 16\)"):
        model(np.zeros((3, 16), np.float32))
    with pytest.raises(lt_mlir.ArgumentError, match=r"'input'.*dtype float32.*float64"):
        model(np.zeros((4, 16), np.float64))
    with pytest.raises(lt_mlir.ArgumentError, match=r"'input'.*dtype float32.*float64"):
        model(x.double())
    with pytest.raises(lt_mlir.ArgumentError, match=r"1 input\(s\) \(input\); got 0"):
        model()
    with pytest.raises(lt_mlir.ArgumentError, match=r"1 input\(s\) \(input\); got 2"):
        model(x, x)
    _, (tokens,), emb = _imported("embedding")
    with pytest.raises(lt_mlir.ArgumentError, match=r"'input'.*dtype int64.*int32"):
        emb(tokens.to(t.int32))


def test_two_inputs_are_named_after_the_forward_arguments():
    t = _torch()

    class Scores(t.nn.Module):
        def forward(self, query, keys):
            return query @ keys.transpose(0, 1)

    t.manual_seed(0)
    q, k = t.randn(3, 8), t.randn(5, 8)
    model = lt_mlir.from_torch(Scores(), q, k)
    assert [a.name for a in model.inputs] == ["query", "keys"]
    np.testing.assert_allclose(model(q.numpy(), k.numpy()), (q @ k.T).numpy(), rtol=RTOL, atol=ATOL)
    with pytest.raises(lt_mlir.ArgumentError, match=r"2 input\(s\) \(query, keys\); got 1"):
        model(q)
    with pytest.raises(lt_mlir.ArgumentError, match=r"'keys'.*shape \(5, 8\)"):
        model(q, k[:4])


def test_rank_0_input():
    t = _torch()

    class Scale(t.nn.Module):
        def forward(self, x):
            return x * 2.0

    x = t.tensor(3.0)
    model = lt_mlir.from_torch(Scale(), x)
    assert float(model(x)) == 6.0


# ------------------------------------------------------------ the default schedule fuses


def _top_level_loops(tree: str) -> int:
    return sum(1 for line in tree.splitlines() if line.startswith("for "))


def _linear_relu():
    t = _torch()
    t.manual_seed(0)
    module = t.nn.Sequential(t.nn.Linear(16, 8), t.nn.ReLU()).eval()
    x = t.randn(4, 16)
    return module, x, lt_mlir.from_torch(module, x, cpu=WIDE)


def _allocs(tree: str) -> list:
    """The element counts of the loop tree's buffers."""
    return [int(n) for n in re.findall(r"alloc \w+\[[^\]]*\] \((\d+) elements\)", tree)]


def test_linear_relu_keeps_the_matmul_tileable():
    """The default schedule's rule for a contraction (model.py): the matmul
    keeps its own nest in loop_tool's order and its output buffer, so the
    register-tile recipe applies to it; the bias add and the ReLU are one
    nest after it.  register_tile's schedule still matches torch."""
    from lt_mlir import recipes

    module, x, model = _linear_relu()
    tree = model.tuning_start.loop_tree
    assert _top_level_loops(tree) == 2, tree
    assert _allocs(tree) == [4 * 8], tree
    s = model.tuning_start.copy()
    recipes.register_tile(s, rows=2, vectors=1, width=4)
    model.schedule = s
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


def test_default_schedule_register_tiles_each_matmul():
    """On the CPU the default schedule register-tiles every contraction into
    two dims (B's panels packed, the panels parallel): an MLP's two
    matmuls, with a tail of rows (17) and of columns (80 and 40 are not
    multiples of every tile); the result matches torch."""
    t = _torch()
    module = t.nn.Sequential(t.nn.Linear(48, 80), t.nn.ReLU(), t.nn.Linear(80, 40))
    x = t.randn(17, 48)
    model = lt_mlir.from_torch(module, x)
    tree = model.loop_tree
    assert tree.count("[unroll full, vectorize") == 2, tree
    assert len(re.findall(r"\[parallel\]\n %\d+ <- alloc", tree)) == 2, tree  # a packed panel of B a thread
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("width", [8, 16])
def test_attention_default_schedule_tiles_both_batched_matmuls_and_keeps_the_softmax_one_row_loop(width):
    """The attention block's default schedule on the CPU: k is copied into
    [head, d, seq] first (q @ k^T reads it along its columns with a stride),
    so every contraction -- the two Linears, q k^T and the weights @ v, the
    last two batched over the heads -- is register-tiled; the softmax's max
    and sum (reductions of one operand) are not, and stay in the one row loop
    that the scale, max, exp, sum and divide share; the result matches torch."""
    t = _torch()
    t.manual_seed(0)
    module, (x,) = _attention(t)
    module = type(module)(32, 2).eval()  # head dim 16, 24 positions: wide enough for a tile of any CPU's vectors
    x = t.randn(1, 24, 32)
    model = lt_mlir.from_torch(module, x)
    from lt_mlir.importers import model as model_module

    model.schedule = model_module.default_schedule(model.tuning_start, width=width)  # AVX2's and AVX-512's lanes
    tree = model.schedule.loop_tree
    assert tree.count(f"[unroll full, vectorize {width}]") == 4, tree
    nests = re.split(r"\n(?=for )", tree)
    softmax = [n for n in nests if "max=" in n]
    assert len(softmax) == 1 and "exp(" in softmax[0] and "[unroll full" not in softmax[0], tree
    assert any(re.fullmatch(r"for .*\n(?: .*\n)*? *(%\d+) <- read %\d+\[\w+, [^\]]+\]\n *%\d+\[\w+, \w+, \w+\] <- \1", n)
               for n in nests), tree  # the layout copy of k: a nest of one read and one store
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("width", [4, 8, 16])
def test_default_schedule_tiles_a_convolutions_output_channels(width):
    """On the CPU the default schedule register-tiles each convolution's
    output channels (``recipes.channel_tile``: a few channels' rows in
    registers, each input vector loaded once for all of them) at every
    vector width (a row of 24 is whole in 2 vectors of 16 or 3 of 8; with
    4 lanes it is tiled too); conv + batch norm + ReLU with 10 channels (a
    channel tail) matches torch."""
    from lt_mlir.importers import model as model_module

    t = _torch()
    t.manual_seed(0)
    module = t.nn.Sequential(t.nn.Conv2d(3, 10, 3, padding=1), t.nn.BatchNorm2d(10), t.nn.ReLU()).eval()
    x = t.randn(1, 3, 9, 24)
    model = lt_mlir.from_torch(module, x)
    model.schedule = model_module.default_schedule(model.tuning_start, width=width)
    tree = model.schedule.loop_tree
    tiles = re.findall(rf"for \w+' in (\d+) : L\d+ \[unroll full\]\n *for \w+'? in (\d+) : L\d+ \[unroll full, vectorize {width}\]", tree)
    assert len(tiles) == 1 and int(tiles[0][0]) >= 2, tree
    assert (int(tiles[0][1]) == 24) == (width >= 8), tree  # the whole row (2 or 3 vectors), or a tile of it
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


def test_linear_relu_epilogue_is_fused():
    """Whatever the matmul's nest: the bias add and the ReLU are computed in
    the nest that writes the output (no buffer holds the biased value), and
    fuse=False keeps one nest per op (more nests, more buffers)."""
    module, x, model = _linear_relu()
    tree = model.loop_tree
    assert _top_level_loops(tree) <= 2 and len(_allocs(tree)) <= 1, tree
    ref = _reference(module, (x,)).numpy()
    np.testing.assert_allclose(model(x).numpy(), ref, rtol=RTOL, atol=ATOL)
    unfused = lt_mlir.from_torch(module, x, fuse=False, cpu=WIDE)
    assert _top_level_loops(unfused.loop_tree) > _top_level_loops(tree)
    assert len(_allocs(unfused.loop_tree)) > len(_allocs(tree))
    np.testing.assert_allclose(unfused(x).numpy(), ref, rtol=RTOL, atol=ATOL)


def test_layer_norm_gelu_is_one_row_loop_without_a_wide_copy():
    """torch-mlir's layer norm computes its variance from an f64 copy of the
    input that two nests read: that cast is recomputed where it is read
    (no m x n f64 buffer), and the statistics' row loops, each allocating
    its accumulator, merge into one loop over the rows (parallel in the
    default schedule); the result matches torch."""
    t = _torch()
    module = t.nn.Sequential(t.nn.LayerNorm(40), t.nn.GELU())
    with t.no_grad():
        module[0].weight.uniform_(0.5, 1.5)
        module[0].bias.uniform_(-1, 1)
    x = t.randn(6, 40) * 3 + 1
    model = lt_mlir.from_torch(module, x)
    assert _top_level_loops(model.tuning_start.loop_tree) == 1, model.tuning_start.loop_tree
    assert max(_allocs(model.loop_tree)) < 6 * 40, model.loop_tree
    assert next(line for line in model.loop_tree.splitlines() if line.startswith("for ")).endswith("[parallel]"), model.loop_tree
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


def test_softmax_of_large_rows_is_right():
    """Rows of odd length with values up to ~100: exp overflows unless the
    row's max is subtracted first; the max and sum nests stay correct under
    the default schedule's fusion."""
    t = _torch()
    t.manual_seed(0)
    x = t.randn(3, 37) * 40
    module = t.nn.Softmax(dim=1)
    for target in TARGETS:
        got = lt_mlir.from_torch(module, x, target=target)(x)
        ref = _reference(module, (x,))
        assert bool(t.isfinite(got).all())
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=RTOL, atol=ATOL, err_msg=target)


# ------------------------------------------------------------ ONNX


def _onnx_model(nodes, name, x_shape, y_shape, initializers):
    onnx, _ = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))],
        [numpy_helper.from_array(a, k) for k, a in initializers.items()],
    )
    # IR version 8: onnxruntime 1.31 refuses the newest IR version onnx writes by default
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def _check_onnx(model_proto, initializers, x, tmp_path, exact_names: bool):
    onnx, ort = _onnx()
    path = tmp_path / f"{model_proto.graph.name}.onnx"
    onnx.save(model_proto, str(path))
    model = lt_mlir.from_onnx(path)
    assert [a.name for a in model.inputs] == ["x"]
    names = [w.name for w in model.weights]
    if exact_names:
        assert sorted(names) == sorted(initializers)
    else:  # an initializer folded at import (Gemm's transB: a transposed copy) keeps its name as a prefix
        assert all(any(n == k or n.startswith(k + ".") for k in initializers) for n in names), names
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (ref,) = session.run(None, {"x": x})
    got = model(x)
    assert isinstance(got, np.ndarray) and got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
    return model


def test_onnx_mlp_softmax_matches_onnxruntime(tmp_path):
    onnx, _ = _onnx()
    rng = np.random.default_rng(0)
    inits = {
        "W1": (0.3 * rng.standard_normal((16, 32))).astype(np.float32),
        "B1": (0.3 * rng.standard_normal(32)).astype(np.float32),
        "W2": (0.3 * rng.standard_normal((32, 10))).astype(np.float32),
    }
    node = onnx.helper.make_node
    proto = _onnx_model(
        [node("MatMul", ["x", "W1"], ["h"]), node("Add", ["h", "B1"], ["hb"]), node("Relu", ["hb"], ["r"]),
         node("MatMul", ["r", "W2"], ["z"]), node("Softmax", ["z"], ["y"], axis=1)],
        "mlp_softmax", (4, 16), (4, 10), inits)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    model = _check_onnx(proto, inits, x, tmp_path, exact_names=True)
    # a ModelProto is taken as well as a path: the same program, the same numbers
    from_proto = lt_mlir.from_onnx(proto)
    assert from_proto.start.text == model.start.text
    np.testing.assert_array_equal(from_proto(x), model(x))


@pytest.mark.parametrize("flatten", ["Flatten", "Reshape"])
def test_onnx_cnn_matches_onnxruntime(flatten, tmp_path):
    onnx, _ = _onnx()
    rng = np.random.default_rng(1)
    inits = {
        "Wc": (0.3 * rng.standard_normal((4, 3, 3, 3))).astype(np.float32),
        "Bc": (0.3 * rng.standard_normal(4)).astype(np.float32),
        "Wg": (0.3 * rng.standard_normal((5, 4 * 4 * 4))).astype(np.float32),
        "Bg": (0.3 * rng.standard_normal(5)).astype(np.float32),
    }
    node = onnx.helper.make_node
    if flatten == "Flatten":
        flat = node("Flatten", ["p"], ["f"], axis=1)
    else:
        inits["shape"] = np.array([2, -1], np.int64)
        flat = node("Reshape", ["p", "shape"], ["f"])
    proto = _onnx_model(
        [node("Conv", ["x", "Wc", "Bc"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
         node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]), flat,
         node("Gemm", ["f", "Wg", "Bg"], ["y"], transB=1)],
        f"cnn_{flatten.lower()}", (2, 3, 8, 8), (2, 5), inits)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    model = _check_onnx(proto, inits, x, tmp_path, exact_names=False)
    assert "shape" not in [w.name for w in model.weights]  # the reshape's target shape is no runtime argument


# ------------------------------------------------------------ errors

UNSUPPORTED = """\
func.func @main(%a: tensor<2x3xf32>, %s: tensor<1xi64>) -> tensor<6xf32> {
  %c = tensor.reshape %a(%s) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  return %c : tensor<6xf32>
}
"""  # tensor.reshape (its shape from a tensor): line 2

CONCAT = """\
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %c = tensor.concat dim(1) %a, %b : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}
"""

REDUCTION = """\
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @main(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.COMBINE %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""  # the linalg.generic: line 7


def test_import_error_is_a_project_error():
    assert issubclass(LtImportError, lt_mlir.LtError)
    assert LtImportError is lt_mlir.importers.ImportError


def test_unsupported_linalg_op_is_named_with_its_line():
    with pytest.raises(LtImportError) as info:
        lt_mlir.from_linalg(UNSUPPORTED)
    message = str(info.value)
    assert _one_line(message), message
    assert re.match(r"^\S*:2:\d+: error: ", message), message
    assert "'tensor.reshape'" in message


EMPTY_INPUT = """#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<0x4xf32>) -> tensor<0x4xf32> {
  %e = tensor.empty() : tensor<0x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<0x4xf32>) outs(%e : tensor<0x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<0x4xf32>
  return %r : tensor<0x4xf32>
}
"""


def test_a_tensor_without_elements_is_refused_with_its_location():
    with pytest.raises(LtImportError) as info:
        lt_mlir.from_linalg(EMPTY_INPUT)
    message = str(info.value)
    assert _one_line(message), message
    assert re.match(r"^\S*:2:1: error: input 0 has type tensor<0x4xf32>: .*size 0", message), message


def test_two_weights_made_of_one_parameter_have_distinct_names():
    """Both halves of one parameter become weights; each keeps the
    parameter's name, made distinct."""
    t = _torch()

    class Halves(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = t.nn.Parameter(t.randn(4, 6))

        def forward(self, x):
            return x @ self.w[:, :3] + (x * 2) @ self.w[:, 3:]

    module, x = Halves(), t.randn(5, 4)
    model = lt_mlir.from_torch(module, x)
    assert [(a.name, a.shape) for a in model.weights] == [("w", (4, 3)), ("w#2", (4, 3))]
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)


def test_concat_is_copied_into_place():
    """tensor.concat (torch.cat): each input copied to its place along the axis; of two
    weights, one weight made at import."""
    model = lt_mlir.from_linalg(CONCAT)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_array_equal(model(a, b), np.concatenate([a, b], axis=1))
    t = _torch()

    class Cat(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.w, self.v = t.nn.Parameter(t.randn(2, 3)), t.nn.Parameter(t.randn(2, 2))

        def forward(self, x):
            return t.cat([x * 2, t.cat([self.w * 1.5, self.v - 1.0], dim=1)], dim=0)  # (a bare parameter in a list: torch-mlir refuses)

    module, x = Cat(), t.randn(2, 5)
    model = lt_mlir.from_torch(module, x)
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)
    assert len(model.weights) == 1 and model.weights[0].shape == (2, 5)


def test_reduction_that_is_not_a_combine_is_refused():
    """out - in is no reduction lt.reduce has (and not associative): refused,
    naming the reduction and its line; out + in is imported and sums the rows."""
    with pytest.raises(LtImportError) as info:
        lt_mlir.from_linalg(REDUCTION.replace("COMBINE", "subf"))
    message = str(info.value)
    assert _one_line(message), message
    assert re.match(r"^\S*:7:\d+: error: .*reduction", message), message
    a = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    model = lt_mlir.from_linalg(REDUCTION.replace("COMBINE", "addf"))
    np.testing.assert_allclose(model(a), a.sum(axis=1), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("how", ["filename", "path"])
def test_unsupported_op_error_names_the_file(how, tmp_path):
    path = tmp_path / "model.mlir"
    path.write_text(UNSUPPORTED)
    with pytest.raises(LtImportError) as info:
        if how == "filename":
            lt_mlir.from_linalg(UNSUPPORTED, filename="model.mlir")
        else:
            lt_mlir.from_linalg(str(path))
    name = "model.mlir" if how == "filename" else str(path)
    assert str(info.value).startswith(f"{name}:2:"), str(info.value)


def test_linalg_parse_error_names_the_file():
    with pytest.raises(LtImportError) as info:
        lt_mlir.from_linalg("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %nope : tensor<2xf32>\n}\n", filename="broken.mlir")
    message = str(info.value)
    assert _one_line(message) and message.startswith("broken.mlir:2:"), message


def test_unsupported_torch_op_names_the_op_and_the_python_line():
    t = _torch()

    class CumSum(t.nn.Module):
        def forward(self, x):
            return t.cumsum(x, dim=1)

    line = inspect.getsourcelines(CumSum.forward)[1] + 1
    with pytest.raises(LtImportError) as info:
        lt_mlir.from_torch(CumSum(), t.randn(2, 3))
    message = str(info.value)
    assert _one_line(message), message
    assert f"{__file__}:{line}:" in message, message
    assert "tm_tensor.scan" in message


def test_from_torch_of_a_function_is_an_import_error():
    _torch()
    with pytest.raises(LtImportError, match=r"torch\.nn\.Module.*got function") as info:
        lt_mlir.from_torch(lambda x: x * 2, np.ones(3, np.float32))
    assert _one_line(str(info.value))


def test_from_onnx_of_a_file_that_is_not_onnx_names_it(tmp_path):
    _onnx()
    path = tmp_path / "model.onnx"
    path.write_text("this is not a protobuf\n")
    with pytest.raises(LtImportError) as info:
        lt_mlir.from_onnx(path)
    message = str(info.value)
    assert _one_line(message) and str(path) in message and "not an ONNX model" in message, message
    missing = tmp_path / "missing.onnx"
    with pytest.raises(LtImportError, match=re.escape(str(missing))):
        lt_mlir.from_onnx(str(missing))


# ------------------------------------------------------------ lt-opt --import=linalg


def _lt_opt(*args):
    return subprocess.run([sys.executable, "-m", "lt_mlir.tools.lt_opt", *args], capture_output=True, text=True, timeout=120)


def _torch_mlir_file(module, inputs, path):
    """The linalg-on-tensors module torch-mlir writes for ``module`` (weights in its dialect_resources)."""
    from lt_mlir.mlir import torch_importers

    fx, _, _ = torch_importers()
    path.write_text(str(fx.export_and_import(module, *inputs, output_type="linalg-on-tensors")))
    return path


def test_linalg_file_from_torch_mlir_matches_torch(tmp_path):
    """Weights read from the file's dialect_resources (no torch at import)."""
    t = _torch()
    t.manual_seed(0)
    module = t.nn.Sequential(t.nn.Linear(16, 8), t.nn.ReLU(), t.nn.Linear(8, 4)).eval()
    x = t.randn(2, 16)
    path = _torch_mlir_file(module, (x,), tmp_path / "mlp.mlir")
    model = lt_mlir.from_linalg(str(path))
    assert len(model.weights) == 4
    np.testing.assert_allclose(model(x.numpy()), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)
    tree = _lt_opt(str(path), "--import=linalg", "--emit=loop-tree")
    assert tree.returncode == 0, tree.stderr
    assert tree.stdout.strip() == model.start.loop_tree.strip()
    assert "for " in tree.stdout and "output0" in tree.stdout


def test_lt_opt_runs_an_imported_file_and_its_checksum_matches_numpy(tmp_path):
    t = _torch()

    class TanhScaled(t.nn.Module):
        def forward(self, x):
            return t.tanh(x) * x.amax(dim=-1, keepdim=True)

    path = _torch_mlir_file(TanhScaled(), (t.randn(3, 10),), tmp_path / "tanh.mlir")
    result = _lt_opt(str(path), "--import=linalg", "--run", "--repeat", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("@main: ") and "median of 2 runs" in lines[0], result.stdout
    # lt-opt --run's inputs: seeded standard normal (lt_mlir.runtime.specs.random_inputs)
    x = np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32)
    expected = float((np.tanh(x) * x.max(axis=-1, keepdims=True)).sum(dtype=np.float64))
    assert "f32[3, 10] checksum" in lines[1], result.stdout
    assert float(lines[1].split()[-1]) == pytest.approx(expected, rel=1e-4, abs=1e-4)


def test_lt_opt_import_of_a_bad_file_is_one_line_exit_1(tmp_path):
    path = tmp_path / "reshape.mlir"
    path.write_text(UNSUPPORTED)
    result = _lt_opt(str(path), "--import=linalg", "--emit=loop-tree")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"{path}:2:") and "'tensor.reshape'" in lines[0], lines[0]


# ------------------------------------------------------------ guard pages


def test_kernels_stay_inside_their_arrays_on_guard_pages(tmp_path):
    """The conv + batch norm + ReLU (padding: clamped, selected reads) and the
    embedding (a data-dependent gather) compiled from their imported modules,
    run in a child process on guard-paged copies of the inputs, weights and
    outputs (guard after, then before; inputs read-only, outputs NaN): a read
    or write outside an array faults.  Out-of-range tokens read the clamped
    row (the importer's documented behaviour; torch raises)."""
    _torch()
    runs = {}  # key -> (model, inputs as arrays, reference)
    for target in TARGETS:
        module, inputs, model = _imported("conv_bn_relu", target)
        runs[f"conv_{target}"] = (model, [x.numpy() for x in inputs], _reference(module, inputs).numpy())
    module, (tokens,), model = _imported("embedding")
    table = module.weight.detach().numpy()
    runs["embedding"] = (model, [tokens.numpy()], _reference(module, (tokens,)).numpy())
    wild = np.array([[-3, 0, 9, 10], [12, 5, -1, 1 << 40]], np.int64)
    runs["embedding_out_of_range"] = (model, [wild], table[np.clip(wild, 0, 9)])
    named, cases = {}, []
    for key, (model, xs, _) in runs.items():
        arrays = xs + [w.data for w in model.weights]
        for j, a in enumerate(arrays):
            named[f"{key}_{j}"] = a
        cases.append({"key": key, "id": key, "text": model.module, "target": model.target,
                      "inputs": [f"{key}_{j}" for j in range(len(arrays))]})
    np.savez(tmp_path / "inputs.npz", **named)
    job = {"inputs": str(tmp_path / "inputs.npz"), "outputs": str(tmp_path / "outputs.npz"), "cases": cases}
    run = finish_job(start_job(job, str(tmp_path / "job.json")), job)
    assert run.returncode == 0, run.describe()
    for key, (_, _, ref) in runs.items():
        for side in ("end", "start"):
            np.testing.assert_allclose(run.outputs[f"{key}_{side}_0"], ref, rtol=RTOL, atol=ATOL, err_msg=f"{key}, guard at the {side}")


# ------------------------------------------------------------ optimize


def test_optimize_keeps_the_result_and_records_the_schedule():
    t = _torch()
    t.manual_seed(0)
    module, (x,) = _mlp(t)
    module.eval()
    model = lt_mlir.from_torch(module, x)
    start = model.start.text
    log = os.path.join(os.path.dirname(os.environ["LT_MLIR_TUNING_DB"]), "mlp-tune.jsonl")
    result = model.optimize(budget=6, seconds=20, log=log)
    assert result.evaluations and model.schedule.key == result.schedule.key
    # the search measured the default schedule's moves (a seed, always a finalist): it cannot end below it
    logged = [d["moves"] for d in map(json.loads, open(log)) if "moves" in d]
    assert model.start.moves and [str(m) for m in model.start.moves] in logged
    assert model.start.text == start  # the search starts from, and keeps, the default schedule
    ref = _reference(module, (x,)).numpy()
    np.testing.assert_allclose(model(x).numpy(), ref, rtol=RTOL, atol=ATOL)
    # the winner is in the test's own tuning database (conftest), and a model of the same program gets it
    assert os.path.exists(os.environ["LT_MLIR_TUNING_DB"])
    lt_mlir.set_default_schedule("tuned")
    try:
        again = lt_mlir.from_torch(module, x)
    finally:
        lt_mlir.set_default_schedule("default")
    assert again.loop_tree == model.loop_tree
    np.testing.assert_allclose(again(x).numpy(), ref, rtol=RTOL, atol=ATOL)


MATMUL_T = """
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @main(%x: tensor<8x16xf32>, %y: tensor<12x16xf32>) -> tensor<8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<8x12xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<8x12xf32>) -> tensor<8x12xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<8x16xf32>, tensor<12x16xf32>) outs(%f : tensor<8x12xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x12xf32>
  return %r : tensor<8x12xf32>
}
"""


def _innermost_dim(tree: str) -> str:
    """The dim of the most deeply nested loop of the loop tree."""
    loops = [(len(line) - len(line.lstrip()), line.split()[1]) for line in tree.splitlines() if line.lstrip().startswith("for ")]
    return max(loops)[1]


def test_contraction_order_follows_the_strides():
    """x @ y.T with y an activation (no weight to transpose at import): y is
    read along the output's columns with a stride, so the importer first
    copies it into a scratch buffer laid out [k, j] (a transpose nest of its
    own), and the contraction reads that copy in loop_tool's order (the
    columns innermost, contiguous), which a register tile takes; x @ w (w's
    rows already contiguous along the output's columns) needs no copy."""
    model = lt_mlir.from_linalg(MATMUL_T)
    tree = model.tuning_start.loop_tree
    copy = re.search(r"(%\d+) <- read input1\[(\w+), (\w+)\]\n\s*(%\d+)\[(\w+), (\w+)\] <- \1", tree)
    assert copy, tree
    j, k, scratch = copy.group(2), copy.group(3), copy.group(4)
    assert (copy.group(5), copy.group(6)) == (k, j), tree  # transposed
    assert re.search(rf"read {scratch}\[{k}, {j}\]", tree) and "read input1" not in tree.split(copy.group(0))[1], tree
    col_dim = re.search(r"output0\[\w+, (\w+)\]", tree).group(1)
    assert col_dim == j and _innermost_dim(tree) == col_dim, tree
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((12, 16)).astype(np.float32)
    np.testing.assert_allclose(model(x, y), x @ y.T, rtol=1e-5, atol=1e-5)
    plain = MATMUL_T.replace("(d1, d2)>", "(d2, d1)>").replace("tensor<12x16xf32>", "tensor<16x12xf32>")
    model = lt_mlir.from_linalg(plain)
    assert "alloc" not in model.tuning_start.loop_tree, model.tuning_start.loop_tree
    col_dim = re.search(r"output0\[\w+, (\w+)\]", model.start.loop_tree).group(1)
    assert _innermost_dim(model.tuning_start.loop_tree) == col_dim, model.tuning_start.loop_tree
    yt = np.ascontiguousarray(y.T)
    np.testing.assert_allclose(model(x, yt), x @ yt, rtol=1e-5, atol=1e-5)


def test_unit_dims_have_no_loops():
    """A batch of one (the attention block's, a conv's N): no loop of one
    iteration, so the outermost parallel loop is one with work to share."""
    _torch()
    module, inputs, model = _imported("conv_bn_relu", cpu=WIDE)
    assert inputs[0].shape[0] == 1
    assert not re.search(r"for \w+ in 1 :", model.loop_tree), model.loop_tree


RANK_REDUCING = """\
func.func @main(%a: tensor<1x4x1xf32>) -> tensor<1x4xf32> {
  %s = tensor.extract_slice %a[0, 0, 0] [1, 4, 1] [1, 1, 1] : tensor<1x4x1xf32> to tensor<1x4xf32>
  return %s : tensor<1x4xf32>
}
"""

PARTIAL_OUTPUT = """\
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> (d0, 0)>
func.func @main(%a: tensor<4xf32>) -> tensor<4x2xf32> {
  %five = arith.constant 5.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%five : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%f : tensor<4x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}
"""

FOLDED_COMPARE = """\
#id = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %w = arith.constant dense<[0x7FC00000, 0.0, 2.0, -1.0]> : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%w : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.cmpf one, %x, %zero : f32
    %s = arith.select %c, %one, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %m : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def test_rank_reducing_slice_drops_the_axes_mlir_drops():
    """tensor<1x4x1> -> tensor<1x4>: MLIR matches result axes greedily (the last unit axis goes)."""
    a = np.arange(4, dtype=np.float32).reshape(1, 4, 1)
    np.testing.assert_array_equal(lt_mlir.from_linalg(RANK_REDUCING)(a), a[:, :, 0])


def test_output_map_that_leaves_elements_unwritten_is_refused():
    with pytest.raises(LtImportError, match="leaves elements of its output unwritten"):
        lt_mlir.from_linalg(PARTIAL_OUTPUT)


def test_folded_ordered_compare_is_false_on_nan():
    """A weight-only op computed at import (NumPy) gives what the compiled op gives: cmpf one is false on NaN."""
    a = np.zeros(4, np.float32)
    np.testing.assert_array_equal(lt_mlir.from_linalg(FOLDED_COMPARE)(a), [0.0, 0.0, 1.0, 1.0])


def test_training_mode_state_update_is_refused():
    t = _torch()
    with pytest.raises(LtImportError, match="changes its own state"):
        lt_mlir.from_torch(t.nn.BatchNorm1d(4).train(), t.randn(6, 4))


def test_weights_are_a_snapshot():
    """The model keeps the weights it was imported with (changing the torch module later changes nothing)."""
    t = _torch()
    lin, x = t.nn.Linear(3, 3), t.randn(2, 3)
    model = lt_mlir.from_torch(lin, x)
    before = model(x).numpy().copy()
    with t.no_grad():
        lin.weight.mul_(2)
        lin.bias.add_(10)
    np.testing.assert_array_equal(model(x).numpy(), before)


def test_tuned_ignores_a_schedule_tuned_against_another_default(tmp_path, monkeypatch):
    """A model's tuning-database entry holds for its program and its
    default schedule (``optimize()`` starts from it): an entry recorded
    against another default -- an older lt_mlir's, which a newer default
    may beat -- is not looked up; one recorded against this default is."""
    from lt_mlir import tuning

    monkeypatch.setenv("LT_MLIR_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    module, x, model = _linear_relu()
    stale = model.tuning_start.copy().split(0, 2)
    tuning.record(model.tuning_start.text, model.target, stale.file_text, stale.pipeline, 9.0,
                  variant="default schedule: builtin.module(lt-parallel{loop=0})")
    assert tuning.lookup(model.tuning_start.text, model.target, "default schedule: builtin.module(lt-parallel{loop=0})")
    assert not model.tuned() and model.schedule.key == model.start.key
    tuning.record(model.tuning_start.text, model.target, stale.file_text, stale.pipeline, 2.0, variant=model.tuning_variant)
    assert model.tuned() and model.schedule.loop_tree == stale.loop_tree
    np.testing.assert_allclose(model(x).numpy(), _reference(module, (x,)).numpy(), rtol=RTOL, atol=ATOL)
