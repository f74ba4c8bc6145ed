"""``lt-prepack``: the copy a cache makes in each iteration of an outermost
loop, made once by a pack function; the pack function and the function
that reads what it made, run on guard-paged arrays, give what the function
gave before (NumPy float64 the reference), tails included; a model packs
its weights once, at compile time."""

from __future__ import annotations

import numpy as np
import pytest

import lt_mlir as lt
from lt_mlir.compiler import compile_functions
from lt_mlir.dialect import lt as ltd
from lt_mlir.errors import PassError
from lt_mlir.importers.model import prepacked
from lt_mlir.passes.prepack import pack_plan
from lt_mlir.recipes import register_tile
from lt_mlir.testing.guard import guarded_array, guarded_copy


def _matmul(m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    s = lt.SymbolGenerator()
    c = (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)).sum(s.k)
    return A, B, c.schedule, A.astype(np.float64) @ B.astype(np.float64)


def _run(schedule, inputs, side):
    """The module's entry run after its pack functions, every array guarded
    on ``side``; its output."""
    module = schedule.module
    kernels = compile_functions(module)
    entry = kernels[ltd.functions(module.operation)[0].attributes["sym_name"].value]
    args = [guarded_copy(x, side=side, readonly=True) for x in inputs]
    for name, k in pack_plan(module.operation):
        spec = kernels[name].specs[1]
        packed = guarded_array(spec.shape, spec.dtype, fill=np.nan, side=side)
        kernels[name](args[k], packed)
        args.append(packed)
    (out_spec,) = entry.outputs
    out = guarded_array(out_spec.shape, out_spec.dtype, fill=np.nan, side=side)
    entry(*args, out)
    return np.array(out)


@pytest.mark.parametrize(
    "m,k,n,width,rows,vectors",
    [
        (33, 64, 48, 8, 3, 2),  # two whole panels of 16
        (10, 5, 13, 4, 3, 2),  # 13 = 1 x 8 r 5: the tail panel's slab is 5 wide
        (29, 11, 100, 16, 4, 2),  # 100 = 3 x 32 r 4, m tail
    ],
)
def test_prepacked_register_tile_matches_numpy_and_the_unpacked_kernel(m, k, n, width, rows, vectors):
    A, B, start, ref = _matmul(m, k, n)
    s = register_tile(start, rows=rows, vectors=vectors, width=width, parallel=True, pack=True)
    assert "alloc f32[k, n]" in s.loop_tree  # B's panel, copied in each call
    p = prepacked(s, {1})
    assert "alloc" not in p.loop_tree and "B.packed[" in p.loop_tree
    plan = pack_plan(p.parsed.operation)
    assert len(plan) == 1 and plan[0][1] == 1  # packs B, the entry's argument 1
    before = s.compile()(A, B)
    for side in ("end", "start"):
        got = _run(p, [A, B], side)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())
        np.testing.assert_array_equal(got, before)  # the same reads, the same sums


def test_a_cache_with_no_level_over_the_loop_dim_is_one_slab_an_iteration():
    """B's cache in the loop over m (7 = 2 r 1 over 3) copies all of B in
    each iteration: the pack loop has one iteration a slab, the tail's
    included; A's has the level over m and keeps the tail."""
    A, B, start, ref = _matmul(7, 13, 9)
    s = start.copy().split(0, 3).cache(0, 1).cache(0, 0)
    s.apply("lt-prepack{loop=0 operand=1}")
    s.apply("lt-prepack{loop=0 operand=0}")
    tree = s.loop_tree
    assert "for m in 3 : " in tree  # B's pack loop: 3 slabs
    assert tree.count("for m in 2 r 1") == 2  # the entry's L0 and A's pack loop
    for side in ("end", "start"):
        np.testing.assert_allclose(_run(s, [A, B], side), ref, rtol=1e-5, atol=1e-5)


def test_prepack_refusals_are_located_errors():
    _, _, start, _ = _matmul(7, 13, 9)
    s = start.copy().split(0, 3)
    with pytest.raises(PassError, match=r'lt-prepack: L0 "for m in 2 r 1" has no cache \(made by lt-cache\)'):
        s.apply("lt-prepack{loop=0}")
    s.cache(1, 1)
    with pytest.raises(PassError, match="is inside another loop"):
        s.apply("lt-prepack{loop=1}")


def _onnx_mlp(tmp_path, hidden: int):
    onnx = pytest.importorskip("onnx", reason="the model test imports an ONNX file")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    W1 = (0.3 * rng.standard_normal((16, hidden))).astype(np.float32)
    W2 = (0.3 * rng.standard_normal((hidden, 10))).astype(np.float32)
    node = helper.make_node
    graph = helper.make_graph(
        [node("MatMul", ["x", "W1"], ["h"]), node("Relu", ["h"], ["r"]), node("MatMul", ["r", "W2"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 10])],
        [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(W2, "W2")],
    )
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    x = rng.standard_normal((5, 16)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ W1, 0)
    return lt.from_onnx(path), x, h @ W2


def test_a_model_packs_its_weights_once_when_it_compiles(tmp_path):
    model, x, ref = _onnx_mlp(tmp_path, hidden=200)  # 200 columns: several register tiles, B packed
    if model.target != "cpu":
        pytest.skip("weights are packed for native CPU code")
    assert "alloc f32[" in model.loop_tree and "lt-cache" in model.start.pipeline
    kernel = model.compile()
    packed = len(kernel.inputs) - 1 - len(model.weights)
    assert packed >= 1  # W1's panels, an argument of the kernel now
    assert all(c.flags.c_contiguous for c in model._constants)
    assert "llvm.prefetch" in kernel.llvm_ir  # the k loops prefetch the packed panels (lt-prefetch)
    got = model(x)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    np.testing.assert_array_equal(model.bind(x)(), got)
    # without the packing the same schedule gives the same numbers
    plain = model.schedule.compile()(x, *[w.data for w in model.weights])
    np.testing.assert_array_equal(plain, got)


def test_a_module_with_a_pack_function_runs_on_the_cpu_or_the_gpu():
    """The pack function compiles with its function, for one target:
    lt.parallel in it and a GPU-mapped loop in the function do not mix."""
    _, _, start, _ = _matmul(7, 13, 9)
    s = start.copy().cache(0, 0)
    s.apply("lt-prepack{loop=0}")
    s.gpu_map(0, "thread")
    pack_k = s.loops() - 1  # the pack function's loop over k, inside its loop over m
    with pytest.raises(PassError, match="the module has lt.parallel loops .* a module runs on the CPU or on the GPU"):
        s.copy().parallel(pack_k)
    t = start.copy().cache(0, 0)
    t.apply("lt-prepack{loop=0}")
    t.parallel(t.loops() - 1)  # the other way round: the pack function's loop first
    with pytest.raises(PassError, match="the module has lt.parallel loops"):
        t.gpu_map(0, "thread")
