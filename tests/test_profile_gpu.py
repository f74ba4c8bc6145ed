"""The per-loop profile on a GPU mapping (lt_mlir/profile.py's
``_profile_gpu``, lowering/profile.py's marks, lt_to_gpu's launch timing):
checked on ``cuda-emulated`` (blocks and threads one after another on the
CPU, timed by the cycle counter) and, for ``cuda``, by assembling the
instrumented PTX with ptxas; the device run is in tests/test_cuda_device.py."""

import os
import subprocess
import sys

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs, recipes
from lt_mlir.dialect import lt
from lt_mlir.dialect.entry import find_function
from lt_mlir.dialect.loop_tree import loop_tree
from lt_mlir.lowering.gpu import nvptx
from lt_mlir.lowering.gpu.lt_to_gpu import lower_lt_to_gpu
from lt_mlir.lowering.profile import COUNTERS, instrument_gpu_loops
from lt_mlir.mlir import func, ir
from lt_mlir.profile import compile_instrumented_gpu, profile_loops
from lt_mlir.schedule import Schedule

sys.path.insert(0, os.path.dirname(__file__))
import cuda_cases  # noqa: E402

MATMUL = recipes.gpu_tiled_matmul(Schedule(programs.matmul(128, 96, 64))).text
# 64 rows: a launch per nest; the row loops mapped to threads, the last nest's rows to blocks
SOFTMAX = Schedule(programs.softmax(64, 32)).distribute(0).gpu_auto().text


def loops_of(text: str) -> dict:
    """L-number -> (dim, annotations) from the loop tree."""
    out = {}
    for line in loop_tree(text).splitlines():
        head, _, tail = line.partition(" : L")
        if tail:
            number, _, notes = tail.partition(" ")
            out[int(number)] = (head.split()[1], notes)
    return out


def test_layout_times_sequential_loops_and_not_mapped_or_unrolled_ones():
    module = lt.parse_module(MATMUL)
    f = find_function(module.operation, None)
    layout = instrument_gpu_loops(module, f)
    notes = loops_of(MATMUL)
    assert layout.loops == len(notes) == 16
    for i, (dim, ann) in notes.items():
        mapped = "gpu block" in ann and "block" or "gpu thread" in ann and "thread" or None
        assert layout.mapped[i] == mapped, (i, ann)
        assert layout.timed[i] == (mapped is None and "unroll" not in ann), (i, ann)
        assert layout.why[i] == (f"{mapped}s" if mapped else "unrolled" if "unroll" in ann else None), (i, ann)
    # two kernels: C's zeros (L0), the tiled product (L2); their slots follow the loops'
    assert layout.launches == [[0], [2]] and layout.size == 18
    # a thread enters the tile loop (k in 8) once and its k' loop 8 times a call
    assert layout.entries[4] == 1 and layout.entries[13] == 8
    module = lt.parse_module(MATMUL)
    layout = instrument_gpu_loops(module, find_function(module.operation, None), max_entries=4)
    assert layout.timed[4] and not layout.timed[13]


def test_emulated_profile_of_the_tiled_matmul():
    p = profile_loops(MATMUL, target="cuda-emulated", repeat=3)
    by = {l.index: l for l in p.loops}
    notes = loops_of(MATMUL)
    # the product's launch is nearly all of the time, its tile loop nearly all of that
    assert by[2].share > 0.9 and by[4].inclusive_s > 0.9 * by[2].inclusive_s
    assert by[2].inclusive_s == pytest.approx(by[2].own_s + by[4].inclusive_s)
    # the two launches make up the call; a loop's children never exceed it
    assert by[0].inclusive_s + by[2].inclusive_s == pytest.approx(p.total_s, rel=1e-6)
    assert sum(l.own_s for l in p.loops) == pytest.approx(p.total_s, rel=1e-6)
    for i, (dim, ann) in notes.items():
        t = by[i]
        if i in (0, 2):  # the kernels' roots: their launches' wall time
            assert t.timed and t.inclusive_s > 0
        elif "gpu" in ann:
            assert not t.timed and t.note == ("blocks" if "block" in ann else "threads")
        elif "unroll" in ann:
            assert not t.timed and t.note == "unrolled" and t.within == 13
        else:
            assert t.timed and t.own_s > 0
    text = p.annotate(loop_tree(MATMUL))
    assert "·  threads, in L4" in text and "·  unrolled, in L13" in text and "·  blocks, in L2" in text
    assert text.splitlines()[-1].startswith("total ") and "plain" in text


def test_emulated_profile_of_softmax_launches():
    p = profile_loops(SOFTMAX, target="cuda-emulated", repeat=3)
    notes = loops_of(SOFTMAX)
    roots = [i for i, (dim, ann) in notes.items() if i in (0, 1, 3, 5)]
    # each nest is a launch; the row loops' inner n loops are timed within their launch
    assert sum(p.loops[i].inclusive_s for i in roots) == pytest.approx(p.total_s, rel=1e-6)
    assert p.loops[2].timed and 0 < p.loops[2].inclusive_s <= p.loops[1].inclusive_s
    assert p.loops[4].timed and 0 < p.loops[4].inclusive_s <= p.loops[3].inclusive_s
    assert not p.loops[6].timed and p.loops[6].note == "threads" and p.loops[6].within == 5


@pytest.mark.parametrize("text", [MATMUL, SOFTMAX], ids=["matmul", "softmax"])
def test_instrumentation_changes_no_emulated_result(text):
    plain = lt_mlir.compile(text, target="cuda-emulated")
    inst, layout, jit = compile_instrumented_gpu(text, target="cuda-emulated")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s.shape).astype(s.dtype) for s in plain.inputs]
    np.testing.assert_array_equal(inst(*inputs), plain(*inputs))
    import ctypes

    address = jit.engine.get_global_value_address(COUNTERS)
    counters = np.ctypeslib.as_array((ctypes.c_int64 * layout.size).from_address(address))
    timed = np.array(layout.timed)
    assert counters[: layout.loops][timed].min() > 0 and not counters[: layout.loops][~timed].any()
    assert counters[layout.loops:].min() > 0  # every launch


@pytest.mark.skipif(nvptx.ptxas_path() is None, reason="ptxas not installed (the nvidia-cuda-nvcc wheel)")
@pytest.mark.parametrize("text", [MATMUL, SOFTMAX], ids=["matmul", "softmax"])
def test_instrumented_ptx_assembles(text):
    kernel, layout, _ = compile_instrumented_gpu(text, target="cuda")
    ptx = kernel.ptx
    assert f".visible .global .align 8 .b8 {COUNTERS}[{8 * layout.size}]" in ptx  # the runtime finds it by name
    assert "%clock64" in ptx and "atom.global.add.u64" in ptx
    assert nvptx.assemble(ptx) is None
    plain = lt_mlir.compile(text, target="cuda")
    assert [l.kernel for l in kernel._launches] == [l.kernel for l in plain._launches]  # the same launches


def test_refusals():
    with pytest.raises(lt_mlir.CompileError, match="max_entries must be a positive integer"):
        profile_loops(MATMUL, target="cuda-emulated", max_entries=0)
    taken = lt.parse_module(MATMUL)
    with taken.context, ir.Location.unknown(), ir.InsertionPoint(taken.body):
        func.FuncOp("lt_profile_clock", ir.FunctionType.get([], []), visibility="private")
    with pytest.raises(lt_mlir.CompileError, match="already defines @lt_profile_clock"):
        compile_instrumented_gpu(taken, target="cuda-emulated")


def test_lt_opt_profiles_on_the_emulated_gpu(tmp_path):
    path = tmp_path / "matmul.mlir"
    path.write_text(MATMUL)
    out = subprocess.run([sys.executable, "-m", "lt_mlir.tools.lt_opt", str(path), "--profile", "--target", "cuda-emulated",
                          "--repeat", "2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "·  threads, in L4" in out.stdout and out.stdout.splitlines()[-1].startswith("total ")


def _count(module, name: str) -> int:
    found = []
    module.operation.walk(lambda o: (found.append(o) if o.name == name else None, ir.WalkResult.ADVANCE)[1])
    return len(found)


@pytest.mark.parametrize("name", ["sgemm_shared_tiles_64", "softmax_auto", "flash_attention_shared", "sgemm_double_buffered",
                                  "softmax_block_combine"])
def test_marks_keep_the_barriers_and_the_pipelines(name):
    """The marks change neither the barriers between a block's parts nor
    what the GPU lowering pipelines: loops directly in a double-buffered
    loop are not timed (marks between its copies would hide them from
    ``passes/double_buffer.stages``, and the copies would not be issued
    ahead)."""
    text = cuda_cases.BY_NAME[name].text()
    plain = lt.parse_module(text)
    lower_lt_to_gpu(plain)
    inst = lt.parse_module(text)
    layout = instrument_gpu_loops(inst, find_function(inst.operation, None))
    lower_lt_to_gpu(inst)
    for op in ("gpu.barrier", "nvgpu.device_async_copy", "gpu.shuffle"):
        assert _count(inst, op) == _count(plain, op), op
    if "double" in name:
        assert _count(plain, "nvgpu.device_async_copy") > 0
        assert any(w and w.startswith("in double-buffered L") for w in layout.why)


def test_an_unrolled_top_level_loop_is_timed():
    s = Schedule(programs.softmax(16, 64)).unroll(0, 0)
    p = profile_loops(s.text, target="cuda-emulated", repeat=2)
    top = [l for l in p.loops if l.index in (0,)]
    assert top[0].timed and top[0].inclusive_s == pytest.approx(p.total_s, rel=0.05)
    assert sum(l.own_s for l in p.loops) == pytest.approx(p.total_s, rel=0.05)


def test_other_functions_are_not_profiled():
    module = lt.parse_module(SOFTMAX)
    other = lt.parse_module(MATMUL)
    with module.context:
        f = find_function(other.operation, None).clone(ip=ir.InsertionPoint(module.body))
        f.attributes["sym_name"] = ir.StringAttr.get("second")
    text = str(module)
    p = profile_loops(text, entry="second", target="cuda-emulated", repeat=2)
    softmax_loops = len(loops_of(SOFTMAX))
    assert all(not l.timed and l.note == "another function" for l in p.loops[:softmax_loops])
    assert p.loops[softmax_loops + 2].timed and p.loops[softmax_loops + 2].share > 0.9  # the tiled product's launch
    kernel, layout, _ = compile_instrumented_gpu(text, entry="second", target="cuda")
    assert layout.launches == [[softmax_loops], [softmax_loops + 2]]


def test_a_layout_read_back_from_json_gives_the_same_profile_without_mlir():
    """bench_cuda.py builds the instrumented kernels here and profiles them on
    a GPU machine without MLIR: the layout goes as JSON and
    ``runtime.loop_profile`` (no MLIR) turns the counters into the tree."""
    import dataclasses
    import json
    import types

    from lt_mlir.runtime.loop_profile import gpu_loop_profile

    module = lt.parse_module(MATMUL)
    layout = instrument_gpu_loops(module, find_function(module.operation, None))
    back = types.SimpleNamespace(**json.loads(json.dumps(dataclasses.asdict(layout))))
    cycles = np.arange(1, layout.size + 1, dtype=np.float64) * 1000
    a = gpu_loop_profile(layout, cycles, [1e-5, 4e-4], 4.1e-4, 4e-4, 5)
    b = gpu_loop_profile(back, cycles, [1e-5, 4e-4], 4.1e-4, 4e-4, 5)
    assert a == b and a.loops[2].inclusive_s == 4e-4 and a.loops[4].inclusive_s == pytest.approx(5 / 18 * 4e-4)
    script = "import sys; sys.modules['torch_mlir'] = None\nimport lt_mlir.runtime.loop_profile as p\nprint(p.gpu_loop_profile.__name__)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "gpu_loop_profile", out.stderr


def test_the_cuda_profile_without_a_device_is_one_clear_error():
    from lt_mlir.runtime import cuda

    if cuda.available():
        pytest.skip("this host has a CUDA device (tests/test_cuda_device.py profiles on it)")
    with pytest.raises(lt_mlir.CompileError, match=r"^error: the profile on target 'cuda' runs on a CUDA device, and this process has none .*cuda-emulated"):
        profile_loops(MATMUL, target="cuda")
