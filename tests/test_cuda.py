"""The CUDA backend: mapping, lowering, PTX, artifacts, and (with a GPU) runs.

Without a GPU (CI) every case's PTX is assembled by ptxas and the small
cases run through the ``cuda-emulated`` target on guard-paged arrays, which
checks the GPU lowering's predication, privatised reductions, atomics and
scratch buffers against NumPy.  ``tests/test_cuda_device.py`` runs the
same cases on a GPU."""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest
from cuda_cases import CASES, check

import lt_mlir
from lt_mlir import CompileError, PassError, Schedule, programs, recipes
from lt_mlir.lowering.gpu import nvptx
from lt_mlir.runtime import cuda
from lt_mlir.testing import finish_job, start_job

EMULATED = [c for c in CASES if c.emulate]


def _ptxas() -> str:
    path = nvptx.ptxas_path()
    assert path, "ptxas is missing: pip install -e '.[test]' installs the nvidia-cuda-nvcc wheel"
    return path


@pytest.fixture(scope="module")
def lowered():
    """case name -> CudaLowered (PTX + launch plan)."""
    return {c.name: lt_mlir.compiler.lower_cuda(c.text()) for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_ptx_assembles_for_sm90(case, lowered, tmp_path):
    got = lowered[case.name]
    path = tmp_path / f"{case.name}.ptx"
    path.write_text(got.ptx)
    proc = subprocess.run([_ptxas(), "-arch=sm_90", str(path), "-o", str(tmp_path / "out.cubin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    kernels = {launch["kernel"] for launch in got.meta["launches"]}
    assert {line.split("(")[0].split()[-1] for line in got.ptx.splitlines() if line.startswith(".visible .entry")} == kernels


def test_launch_plan_of_a_tiled_add(lowered):
    """1003 elements as 10 r 3 blocks of 100 threads: 11 blocks; in the PTX
    blocks 0..9 run the full body, block 10 only with threads 0..2 (the
    tail: threads past it do nothing)."""
    got = lowered["add_1003_tail"]
    (launch,) = got.meta["launches"]
    assert launch["grid"] == [11, 1, 1] and launch["block"] == [100, 1, 1]
    assert [p["kind"] for p in launch["params"]] == ["arg", "arg", "arg"]
    assert "%ctaid.x" in got.ptx and "%tid.x" in got.ptx
    setp = [ln.split()[-2:] for ln in got.ptx.splitlines() if "setp" in ln]
    assert ["%r1,", "9;"] in setp  # block id > 9: not a full block
    assert ["%r1,", "10;"] in setp and ["%r2,", "2;"] in setp  # tail block, thread id > 2


def test_shared_reduction_is_privatised_then_atomic(lowered):
    """The 2^26 sum accumulates 64 elements per thread in a register, each
    warp combines its 32 partial sums with shuffles, lane 0 of each warp
    writes its sum to a shared slot, warp 0 combines the 8 slots with
    shuffles again and thread 0 adds the block's sum to S: one atom.add per
    block (it was one per warp)."""
    got = lowered["sum_2p26"]
    init, reduce = got.meta["launches"]
    assert init["grid"] == [1, 1, 1] and init["block"] == [1, 1, 1]  # S[0] = 0 on one thread
    assert reduce["grid"] == [4096, 1, 1] and reduce["block"] == [256, 1, 1]
    body = got.ptx.split(f".entry {reduce['kernel']}(")[1]
    assert body.count("atom.global.add.f32") == 1
    assert body.count("shfl.sync.bfly.b32") == 10 and "%laneid" in body
    assert ".shared .align 16 .b8 lt_shared_0[32];" in body  # 8 warps' slots
    assert body.count("st.shared.b32") == 1 and body.count("ld.shared.b32") == 1
    assert body.count("bar.sync") == 2
    assert "atom.shared" not in body
    assert "ld.local" not in body and "st.local" not in body  # the partial sum lives in a register


def test_no_warp_shuffle_under_a_thread_guard(lowered):
    """4000 columns = 15 r 160 blocks of 256 threads: full blocks combine
    across the warp, then across the block (the branch on the block id is
    uniform in a block: the barriers are safe); in the tail block threads
    160.. are off, so each thread adds its own partial sum (a shuffle there
    would read inactive lanes, a barrier would wait for them)."""
    got = lowered["total_sum_tail"]
    body = got.ptx.split(f".entry {got.meta['launches'][1]['kernel']}(")[1]
    assert body.count("shfl.sync.bfly.b32") == 10 and body.count("bar.sync") == 2
    assert body.count("atom.global.add.f32") == 2


def test_aligned_pointers_give_vector_accesses():
    """Four neighbouring floats a thread: with 16-byte aligned kernel
    pointers LLVM merges them into one 128-bit load or store."""
    s = Schedule(programs.pointwise_add(4096)).split(0, 4).split(0, 256).gpu_map(0, "block").gpu_map(1, "thread").unroll(2, 0)
    got = lt_mlir.compiler.lower_cuda(s.text)
    assert got.meta["alignment"] == 16
    assert got.ptx.count("ld.global.nc.v4.b32") == 2 and got.ptx.count("st.global.v4.b32") == 1


def test_mul_reduction_uses_compare_and_swap(lowered):
    assert "atom.global.cas" in lowered["prod_atomic"].ptx or "atom.acq_rel" in lowered["prod_atomic"].ptx


def test_softmax_scratch_is_block_shared_memory(lowered):
    """lt-gpu-auto moves softmax's row max and row sum (scratch over m, one
    element a row, a block a row) into the block: one shared f32 each, no
    device scratch, and the threads combine into them without a single
    device-memory atomic."""
    got = lowered["softmax_auto"]
    assert got.meta["scratch"] == []
    assert all(p["kind"] != "scratch" for launch in got.meta["launches"] for p in launch["params"])
    ptx = got.ptx
    assert ".shared .align 16 .b8 lt_shared_0[4];" in ptx and ".shared .align 16 .b8 lt_shared_1[4];" in ptx
    assert "atom.global" not in ptx and "ld.global.b32" not in ptx.replace("ld.global.nc", "")


def test_scratch_used_by_several_kernels_stays_device_memory():
    """A buffer written by one kernel and read by another cannot live in a
    block: it stays a device scratch buffer of the launch plan."""
    s = Schedule(programs.softmax(64, 32)).distribute(0).gpu_auto()
    meta = lt_mlir.compiler.lower_cuda(s.text).meta
    assert meta["scratch"] == [{"shape": [64], "element": "f32"}, {"shape": [64], "element": "f32"}]


def test_exp_links_libdevice_and_keeps_only_kernels(lowered):
    ptx = lowered["softmax_auto"].ptx
    assert "__nv_expf" not in ptx  # inlined from libdevice
    assert ".visible .func" not in ptx and ".extern" not in ptx


# ------------------------------------------------------------ emulated runs


@pytest.fixture(scope="module")
def emulated_runs(tmp_path_factory):
    """Every small case compiled for cuda-emulated and run, guard-paged, in
    a child process; returns the ChildRun."""
    tmp = tmp_path_factory.mktemp("emulated")
    named, cases = {}, []
    for c in EMULATED:
        xs = c.arrays()
        for j, x in enumerate(xs):
            named[f"{c.name}_{j}"] = x
        cases.append({"key": c.name, "id": c.name, "text": c.text(), "target": "cuda-emulated", "inputs": [f"{c.name}_{j}" for j in range(len(xs))]})
    np.savez(tmp / "inputs.npz", **named)
    job = {"inputs": str(tmp / "inputs.npz"), "outputs": str(tmp / "outputs.npz"), "cases": cases}
    return finish_job(start_job(job, str(tmp / "job.json")), job)


@pytest.mark.parametrize("case", EMULATED, ids=[c.name for c in EMULATED])
def test_emulated_gpu_lowering_matches_numpy(case, emulated_runs):
    if emulated_runs.returncode != 0:
        pytest.fail(emulated_runs.describe(), pytrace=False)
    for side in ("end", "start"):
        check(case, emulated_runs.outputs[f"{case.name}_{side}_0"])


# ------------------------------------------------------------ API and errors


def test_compile_for_cuda_needs_no_gpu():
    kernel = Schedule(programs.pointwise_add(1000)).gpu_auto().compile(target="cuda")
    assert isinstance(kernel, cuda.CudaKernel)
    assert repr(kernel) == "<lt_mlir.CudaKernel @add(f32[1000], f32[1000], out f32[1000]) sm_90>"
    if not cuda.available():
        with pytest.raises(lt_mlir.CudaError):
            kernel(np.ones(1000, np.float32), np.ones(1000, np.float32))
    with pytest.raises(lt_mlir.ArgumentError, match="expected shape"):
        kernel(np.ones(999, np.float32), np.ones(1000, np.float32))


def test_aot_artifact_round_trip(tmp_path):
    text = Schedule(programs.softmax(8, 40)).gpu_auto().text
    paths = lt_mlir.compile_aot(text, str(tmp_path / "softmax"), target="cuda", arch="sm_80")
    loaded = cuda.load(paths["json"])
    direct = lt_mlir.compiler.lower_cuda(text, arch="sm_80")
    assert loaded.meta["launches"] == direct.meta["launches"] and loaded.ptx == direct.ptx
    assert ".target sm_80" in loaded.ptx and loaded.arch == "sm_80"


def test_unmapped_program_runs_as_one_thread():
    got = lt_mlir.compiler.lower_cuda(programs.matmul(4, 5, 6))
    assert [(l["grid"], l["block"]) for l in got.meta["launches"]] == [([1, 1, 1], [1, 1, 1])]


def test_gpu_auto_remarks_what_stays_serial():
    # n outside m: the n iterations share S[m], so lt-gpu-auto leaves the nest
    s = Schedule(programs.row_sum(4, 100)).distribute(0).swap(1).gpu_auto()
    assert s.remarks == ['lt-gpu-auto: runs on one GPU thread: L1 "for n in 100"']
    assert "[gpu thread]" in s.loop_tree.splitlines()[0]


def test_illegal_mapping_is_refused_when_lowering():
    # A mapped loop under an unmapped one is legal for no pass, but IR written
    # by hand can carry the annotation anyway.
    text = programs.matmul(4, 5, 6).replace('{dim = "n", size = 5 : i64, tail = 0 : i64}', '{dim = "n", size = 5 : i64, tail = 0 : i64, lt.gpu = "thread"}')
    with pytest.raises(CompileError, match=r"^-:\d+:\d+: error: lower-lt-to-gpu: illegal GPU mapping: it is inside an unmapped loop"):
        lt_mlir.compile(text, target="cuda")


def test_cpu_target_refuses_gpu_annotations():
    text = Schedule(programs.pointwise_add(64)).gpu_auto().text
    with pytest.raises(CompileError, match="GPU-mapped loops compile for target cuda"):
        lt_mlir.compile(text)


def test_a_function_runs_on_the_cpu_or_the_gpu():
    """lt.parallel (CPU threads) and GPU mappings do not mix in one function,
    whichever comes first."""
    s = Schedule(programs.matmul(16, 16, 16)).distribute(1).distribute(0)  # two nests
    with pytest.raises(PassError, match="it would leave L0 GPU-mapped although the function has lt.parallel loops"):
        Schedule(s.text).gpu_map(0, "block").parallel(2)
    with pytest.raises(PassError, match="cannot map L0 .* the function has lt.parallel loops"):
        Schedule(s.text).parallel(2).gpu_map(0, "block")


def test_parallel_loops_are_refused_for_the_gpu():
    s = Schedule(programs.matmul(16, 16, 16)).parallel(0)
    for target in ("cuda", "cuda-emulated"):
        with pytest.raises(CompileError, match=r"^-:\d+:\d+: error: lower-lt-to-gpu: lt.parallel runs a loop on CPU threads"):
            s.compile(target=target)


def test_vector_code_inside_a_kernel(tmp_path):
    """lt-vectorize inside a thread: vector ops in the kernel, valid PTX, and
    the same numbers (emulated)."""
    s = Schedule(programs.pointwise_add(1000)).split(0, 8).gpu_map(0, "thread").vectorize(1, 8)
    assert nvptx.assemble(lt_mlir.compiler.lower_cuda(s.text).ptx) is None
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(s.compile(target="cuda-emulated")(a, b), a + b)


def test_bad_target_and_arch():
    with pytest.raises(CompileError, match="unknown target 'metal'"):
        lt_mlir.compile(programs.pointwise_add(4), target="metal")
    with pytest.raises(CompileError, match="unknown GPU architecture 'sm_42'"):
        lt_mlir.compile(programs.pointwise_add(4), target="cuda", arch="sm_42")


def test_too_many_threads_refused():
    with pytest.raises(PassError, match="2000 threads per block"):
        Schedule(programs.pointwise_add(2000)).gpu_map(0, "thread")
    # CUDA allows 64 threads along z (the outermost of three thread loops)
    s = Schedule(programs.pointwise_add(65 * 2 * 2)).split(0, 2).split(0, 2)  # 65 x 2 x 2
    with pytest.raises(PassError, match="65 threads along z"):
        s.gpu_map(0, "thread").gpu_map(1, "thread").gpu_map(2, "thread")


def test_missing_libdevice_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("LT_LIBDEVICE", str(tmp_path / "nope.bc"))
    with pytest.raises(CompileError, match="libdevice"):
        lt_mlir.compiler.lower_cuda(Schedule(programs.softmax(4, 8)).gpu_auto().text)


def test_arch_table_matches_ptxas(tmp_path):
    """Every architecture lt_mlir offers assembles with ptxas."""
    text = Schedule(programs.pointwise_add(100)).gpu_auto().text
    for arch in nvptx.ARCHS:
        ptx = lt_mlir.compiler.lower_cuda(text, arch=arch).ptx
        (tmp_path / "k.ptx").write_text(ptx)
        proc = subprocess.run([_ptxas(), f"-arch={arch}", str(tmp_path / "k.ptx"), "-o", "/dev/null"], capture_output=True, text=True)
        assert proc.returncode == 0, f"{arch}: {proc.stderr}"


# ------------------------------------------------------------ the frontend


@pytest.fixture
def hardware():
    yield lt_mlir.set_default_hardware
    lt_mlir.set_default_hardware("cpu")


def test_frontend_selects_the_gpu(hardware):
    s = lt_mlir.SymbolGenerator()
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((33, 20)).astype(np.float32), rng.standard_normal((20, 17)).astype(np.float32)
    c = (lt_mlir.Tensor(s.m, s.k).set(A) * lt_mlir.Tensor(s.k, s.n).set(B)).sum(s.k)
    # loop_tool's default schedule (m { n {C = 0}; k { n {C += ..} } }) has no
    # mapping: lt-gpu-auto makes m blocks, interchanges k and n, and runs the
    # two n loops on the block's threads one after the other.
    kernel = c.compile(target="cuda")
    assert isinstance(kernel, cuda.CudaKernel)
    assert [(l["grid"], l["block"]) for l in kernel.meta["launches"]] == [([33, 1, 1], [17, 1, 1])]
    assert kernel.ptx.count("bar.sync") == 1
    np.testing.assert_allclose(c.numpy(target="cuda-emulated"), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    hardware("cuda-emulated")
    assert lt_mlir.default_hardware() == "cuda-emulated"
    np.testing.assert_allclose(c.numpy(), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    with pytest.raises(lt_mlir.FrontendError, match="unknown hardware 'tpu'"):
        hardware("tpu")
    with pytest.raises(lt_mlir.FrontendError, match="unknown target 'gpu'"):
        c.numpy(target="gpu")


# ------------------------------------------------------------ review findings


def _row_text(body: str, m: int = 4, n: int = 64, extra_args: str = "") -> str:
    """A block-per-row program: ``body`` inside ``for m { ... }`` with %X, %S."""
    return f'''
func.func @f(%X: memref<{m}x{n}xf32> {{lt.name = "X"}}, %S: memref<{m}xf32> {{lt.name = "S"}}{extra_args}) {{
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %m = "lt.dim"() {{dim = "m"}} : () -> index
{body}
  }}) {{dim = "m", size = {m} : i64, tail = 0 : i64}} : () -> ()
  return
}}
'''


COUNT_POSITIVE = _row_text('''
    memref.store %zero, %S[%m] : memref<4x256xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<4x256xf32>
      %p = arith.cmpf ogt, %x, %zero : f32
      scf.if %p {
        "lt.reduce"(%one, %S, %m) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
      }
    }) {dim = "n", size = 256 : i64, tail = 0 : i64} : () -> ()'''.replace("memref.store %zero, %S[%m] : memref<4x256xf32>", "memref.store %zero, %S[%m] : memref<4xf32>"), n=256)


def test_no_warp_shuffle_under_a_branch_of_the_program():
    """A reduction inside the program's own scf.if runs on part of a warp:
    a warp-wide shuffle there is undefined (and loses lane 0's skipped
    count), so each thread updates with its own atomic."""
    s = Schedule(COUNT_POSITIVE).gpu_auto()
    assert "[gpu block]" in s.loop_tree and "[gpu thread]" in s.loop_tree
    ptx = lt_mlir.compiler.lower_cuda(s.text).ptx
    assert "shfl" not in ptx and "atom.global.add.f32" in ptx
    X = np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32)
    np.testing.assert_array_equal(s.compile(target="cuda-emulated")(X), (X > 0).sum(1))


def test_values_and_buffers_beside_thread_loops_are_refused():
    """Statements beside thread loops run on thread 0: what they compute
    cannot reach the other parts, and a buffer allocated there would be each
    thread's own; lt-gpu-auto then maps the rows to threads instead."""
    use_across = _row_text('''
    %w = memref.load %S[%m] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<4x64xf32>
      %y = arith.mulf %x, %w : f32
      memref.store %y, %Y[%m, %n] : memref<4x64xf32>
    }) {dim = "n", size = 64 : i64, tail = 0 : i64} : () -> ()''', extra_args=', %Y: memref<4x64xf32> {lt.name = "Y"}')
    with pytest.raises(PassError, match="a value computed beside thread loops .on thread 0. is used by another part"):
        Schedule(use_across).gpu_map(0, "block").gpu_map(1, "thread")
    auto = Schedule(use_across).gpu_auto()
    assert auto.loop_tree.splitlines()[0].endswith("[gpu thread]")
    rng = np.random.default_rng(1)
    X, S = rng.standard_normal((4, 64)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    Y = np.zeros((4, 64), np.float32)
    auto.compile(target="cuda-emulated")(X, S, Y)
    np.testing.assert_allclose(Y, X * S[:, None], rtol=1e-6)


def _reverse_rows(n: int) -> str:
    """Y[m, n] = X[m, N-1-n] through a buffer allocated in the block loop:
    one thread loop writes it, the next reads other threads' elements."""
    return _row_text(f'''
    %t = "lt.alloc"() {{dims = ["n"]}} : () -> memref<{n}xf32>
    "lt.loop"() ({{
    ^bb0(%i1: index):
      %n = "lt.dim"() {{dim = "n"}} : () -> index
      %x = memref.load %X[%m, %n] : memref<4x{n}xf32>
      memref.store %x, %t[%n] : memref<{n}xf32>
    }}) {{dim = "n", size = {n} : i64, tail = 0 : i64}} : () -> ()
    "lt.loop"() ({{
    ^bb0(%i1: index):
      %n = "lt.dim"() {{dim = "n"}} : () -> index
      %last = arith.constant {n - 1} : index
      %r = arith.subi %last, %n : index
      %x = memref.load %t[%r] : memref<{n}xf32>
      memref.store %x, %Y[%m, %n] : memref<4x{n}xf32>
    }}) {{dim = "n", size = {n} : i64, tail = 0 : i64}} : () -> ()''', n=n, extra_args=f', %Y: memref<4x{n}xf32> {{lt.name = "Y"}}')


def test_buffer_in_a_block_loop_is_block_shared_memory(tmp_path):
    """A buffer allocated in the block loop, beside its thread loops, is the
    block's: shared memory (``.shared``), written by one thread loop and
    read, other threads' elements, by the next after a barrier; it runs
    emulated against NumPy and assembles."""
    s = Schedule(_reverse_rows(64)).gpu_map(0, "block").gpu_map(1, "thread").gpu_map(2, "thread")
    got = lt_mlir.compiler.lower_cuda(s.text)
    assert got.meta["scratch"] == []
    assert ".shared .align 16 .b8 lt_shared_0[256];" in got.ptx
    body = got.ptx.split(".entry")[1]
    assert body.index("st.shared") < body.index("bar.sync") < body.index("ld.shared")
    (tmp_path / "k.ptx").write_text(got.ptx)
    assert subprocess.run([_ptxas(), "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", "/dev/null"], capture_output=True).returncode == 0
    X = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    S = np.zeros(4, np.float32)
    Y = np.full((4, 64), np.nan, np.float32)
    s.compile(target="cuda-emulated")(X, S, Y)
    np.testing.assert_array_equal(Y, X[:, ::-1])


def test_block_shared_memory_over_48_kib_is_refused():
    """Static shared memory is at most 48 KiB a block: 16384 floats (64 KiB)
    in a block loop are refused when mapping, and lt-gpu-auto's move into
    the block leaves a buffer that large in device memory."""
    with pytest.raises(PassError, match="65536 bytes of block-shared scratch buffers .at most 49152 bytes"):
        Schedule(_reverse_rows(16384)).gpu_map(0, "block").gpu_map(1, "thread").gpu_map(2, "thread")
    s = Schedule(programs.softmax(4, 100)).gpu_auto()
    assert "in shared memory" in s.remarks[-1]


def test_gpu_auto_maps_fewer_loops_when_the_grid_is_too_big():
    """70000 x 4 x 300: three block loops would put 70000 on z (at most
    65535); lt-gpu-auto maps a (blocks) and b (threads) instead of nothing."""
    t = "memref<70000x4x300xf32>"
    text = f'''
func.func @f(%X: {t} {{lt.name = "X"}}, %Y: {t} {{lt.name = "Y"}}) {{
  "lt.loop"() ({{
  ^bb0(%i0: index):
    "lt.loop"() ({{
    ^bb0(%i1: index):
      "lt.loop"() ({{
      ^bb0(%i2: index):
        %a = "lt.dim"() {{dim = "a"}} : () -> index
        %b = "lt.dim"() {{dim = "b"}} : () -> index
        %c = "lt.dim"() {{dim = "c"}} : () -> index
        %x = memref.load %X[%a, %b, %c] : {t}
        memref.store %x, %Y[%a, %b, %c] : {t}
      }}) {{dim = "c", size = 300 : i64, tail = 0 : i64}} : () -> ()
    }}) {{dim = "b", size = 4 : i64, tail = 0 : i64}} : () -> ()
  }}) {{dim = "a", size = 70000 : i64, tail = 0 : i64}} : () -> ()
  return
}}
'''
    s = Schedule(text).gpu_auto()
    assert s.remarks == []
    got = lt_mlir.compiler.lower_cuda(s.text)
    assert [(l["grid"], l["block"]) for l in got.meta["launches"]] == [([70000, 1, 1], [4, 1, 1])]


def test_lower_lt_to_gpu_alone_gives_valid_ir():
    """Constants between top-level statements stay on the host, before every launch."""
    text = '''
func.func @f(%A: memref<4xf32> {lt.name = "A"}, %B: memref<4xf32> {lt.name = "B"}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  memref.store %zero, %B[%c0] : memref<4xf32>
  %c1 = arith.constant 1 : index
  memref.store %zero, %B[%c1] : memref<4xf32>
  return
}
'''
    proc = subprocess.run([os.path.join(os.path.dirname(__file__), "..", "tools", "lt-opt"), "-", "-p", "builtin.module(lower-lt-to-gpu)"],
                          input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("gpu.launch") == 1


def test_empty_function_is_a_clear_error():
    with pytest.raises(CompileError, match="@f has no statements: nothing to run on the GPU"):
        lt_mlir.compile('func.func @f(%A: memref<4xf32>) {\n  return\n}\n', target="cuda")


def test_shared_memory_tiles_of_a_gemm_are_copied_by_the_block():
    """recipes.gpu_tiled_matmul: in each k-slice (a sequential loop of the
    block, run by every thread) the block's threads copy A's and B's slices
    into two shared tiles, a barrier, the register-tiled compute reads only
    shared memory, and a barrier ends the slice; 16 x 16 threads; sizes
    with tails everywhere run emulated against NumPy (cuda_cases)."""

    s = recipes.gpu_tiled_matmul(Schedule(programs.matmul(100, 72, 45)))
    assert "for k in 5 r 5 : L4\n" in s.loop_tree and s.loop_tree.count("[gpu thread]") == 7
    got = lt_mlir.compiler.lower_cuda(s.text)
    kernel = got.meta["launches"][1]
    assert kernel["grid"] == [3, 4, 1] and kernel["block"] == [16, 16, 1]
    body = got.ptx.split(f".entry {kernel['kernel']}(")[1]
    assert body.count(".shared .align 16 .b8") == 2 and "[1024];" in body
    assert "ld.shared" in body and "st.shared" in body and "bar.sync" in body
    # the compute reads A and B only from shared memory: every read-only
    # global load is a copy's (one per shared store, in the full and tail
    # versions of the copies)
    assert body.count("ld.global.nc") == body.count("st.shared")
    with pytest.raises(PassError, match="tile .30. must be a multiple of regs .4."):
        recipes.gpu_tiled_matmul(Schedule(programs.matmul(64, 64, 64)), tile=30, regs=4)
    with pytest.raises(PassError, match="wants programs.matmul's nest"):
        recipes.gpu_tiled_matmul(Schedule(programs.softmax(4, 8)))


def test_padded_shared_tile_keeps_its_128_bit_reads():
    """recipes.gpu_tiled_matmul(pad=4): B's k-slice (32 x 128 floats) is laid
    out with 4 floats after every 32 of a row (lt-pad): 32 x 144 floats of
    shared memory, one move (``pad_4@L5``); the compute still reads
    it with 128-bit loads (the padding term is shared by each thread's 4
    neighbouring columns); the schedule replays from its moves; the
    results are checked emulated against NumPy (cuda_cases)."""
    from lt_mlir import recipes

    base = dict(tile=128, regs=8, k_tile=32, vector=4, k_unroll=4, group=8)
    s = recipes.gpu_tiled_matmul(Schedule(programs.matmul(1024, 1024, 1024)), pad=4, **base)
    assert "alloc f32[k, n] (4096 elements, pad 4 every 32 n)" in s.loop_tree
    assert "pad_4@L5" in [str(m) for m in s.moves]
    plain = recipes.gpu_tiled_matmul(Schedule(programs.matmul(1024, 1024, 1024)), **base)
    shared = {}
    for name, schedule in (("padded", s), ("plain", plain)):
        got = lt_mlir.compiler.lower_cuda(schedule.text)
        body = got.ptx.split(f".entry {got.meta['launches'][1]['kernel']}(")[1]
        shared[name] = sorted(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", got.ptx))
        assert body.count("ld.shared.v4") >= 12, name  # of the 16 128-bit reads of a 4-step unrolled k'
    assert shared == {"plain": [16384, 16384], "padded": [16384, 18432]}
    replayed = Schedule(programs.matmul(1024, 1024, 1024))
    for move in s.moves:
        replayed.play(move)
    assert replayed.text == s.text


def test_double_buffered_slices_copy_ahead_with_cp_async():
    """recipes.gpu_tiled_matmul(double_buffer=True) (lt-double-buffer on the
    k-slice loop): two stages of each shared tile, the next slice's copies
    issued as cp.async before this slice's compute, 16 bytes each where an
    unrolled loop copies 4 aligned neighbours (cp.async.cg), element by
    element in the clipped blocks; C's register tile still kept across the
    slices; over 48 KiB of stages is a clear error.  Results: cuda_cases,
    emulated against NumPy (and on the device under racecheck)."""
    from lt_mlir import recipes

    kw = dict(tile=128, regs=8, k_tile=16, vector=4, k_unroll=4, group=2, pad=4)
    s = recipes.gpu_tiled_matmul(Schedule(programs.matmul(512, 203, 256)), double_buffer=True, **kw)
    assert "for k in 16 : L5 [double_buffer]" in s.loop_tree
    got = lt_mlir.compiler.lower_cuda(s.text)
    shared = sorted(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", got.ptx))
    assert shared == [16384, 18432]  # 2 x (128 x 16) of A, 2 x 16 x (128 + 16) of B
    assert "cp.async.cg.shared.global" in got.ptx and ", 16;" in got.ptx  # full blocks (N = 203: 1 of 2 is)
    assert re.search(r"cp\.async\.ca\.shared\.global \[[^]]*\], \[[^]]*\], 4;", got.ptx)  # the clipped block
    assert got.ptx.count("cp.async.wait_group") == 2  # one pipeline each for the full and the clipped block
    plain = lt_mlir.compiler.lower_cuda(recipes.gpu_tiled_matmul(Schedule(programs.matmul(512, 203, 256)), **kw).text)
    assert "cp.async" not in plain.ptx
    # the same global loads and stores of C (its register tile, once a block)
    for ptx in (got.ptx, plain.ptx):
        assert ptx.count("st.global") == plain.ptx.count("st.global")
    capped = recipes.gpu_tiled_matmul(Schedule(programs.matmul(512, 203, 256)), double_buffer=True, min_blocks=2, **kw)
    assert "[gpu block, min_blocks 2]" in capped.loop_tree
    ptx = lt_mlir.compiler.lower_cuda(capped.text).ptx
    assert ptx.count(".minnctapersm 2") == 1 and ".minnctapersm" not in got.ptx  # the GEMM's kernel, not C's initialisation
    with pytest.raises(CompileError, match=r"two stages of the tiles take 69632 bytes of shared memory, over the 49152"):
        lt_mlir.compiler.lower_cuda(recipes.gpu_tiled_matmul(Schedule(programs.matmul(256, 256, 256)), double_buffer=True, **dict(kw, k_tile=32)).text)
    with pytest.raises(PassError, match="has a tail iteration"):
        recipes.gpu_tiled_matmul(Schedule(programs.matmul(256, 256, 100)), double_buffer=True, **kw)


STALE = """func.func @f(%X: memref<4x32xf32> {lt.name = "X"}, %Y: memref<2x32xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%ib: index):
    %b = "lt.dim"() {dim = "b"} : () -> index
    "lt.loop"() ({
    ^bb0(%ik: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %t = "lt.alloc"() {dims = ["n"], lt.cache = 0 : i64} : () -> memref<32xf32>
      "lt.loop"() ({
      ^bb0(%i1: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %x = memref.load %X[%k, %n] : memref<4x32xf32>
        memref.store %x, %t[%n] : memref<32xf32>
      }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
      %u = "lt.alloc"() {dims = ["n"]} : () -> memref<32xf32>
      "lt.loop"() ({
      ^bb0(%i2: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %y = memref.load %Y[%b, %n] : memref<2x32xf32>
        memref.store %y, %u[%n] : memref<32xf32>
      }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
      "lt.loop"() ({
      ^bb0(%i3: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %v = memref.load %t[%n] : memref<32xf32>
        %o = memref.load %u[%n] : memref<32xf32>
        %w = arith.addf %o, %v : f32
        memref.store %w, %Y[%b, %n] : memref<2x32xf32>
      }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "b", size = 2 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
"""
OUTSIDE = """func.func @f(%X: memref<4x32xf32> {lt.name = "X"}, %Z: memref<2x32xf32> {lt.name = "Z"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%ib: index):
    %b = "lt.dim"() {dim = "b"} : () -> index
    %S = "lt.alloc"() {dims = ["n"]} : () -> memref<32xf32>
    "lt.loop"() ({
    ^bb0(%ik: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %t = "lt.alloc"() {dims = ["n"], lt.cache = 0 : i64} : () -> memref<32xf32>
      "lt.loop"() ({
      ^bb0(%i1: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %x = memref.load %X[%k, %n] : memref<4x32xf32>
        memref.store %x, %t[%n] : memref<32xf32>
      }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
      "lt.loop"() ({
      ^bb0(%i2: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        memref.store %zero, %S[%n] : memref<32xf32>
      }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
      "lt.loop"() ({
      ^bb0(%i3: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %v = memref.load %t[%n] : memref<32xf32>
        %o = memref.load %S[%n] : memref<32xf32>
        %w = arith.addf %o, %v : f32
        memref.store %w, %S[%n] : memref<32xf32>
      }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i4: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %s = memref.load %S[%n] : memref<32xf32>
      memref.store %s, %Z[%b, %n] : memref<2x32xf32>
    }) {dim = "n", size = 32 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "b", size = 2 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
"""


def test_double_buffering_fills_only_the_cache_tiles_ahead():
    """lt-double-buffer copies ahead only the loop's lt-cache tiles: a
    statement after them that fills another buffer (here from Y, which the
    loop itself updates) stays in its iteration, and a block-shared buffer
    made outside the loop keeps one stage (code after the loop reads it).
    Both checked emulated against NumPy; on CUDA, which arrays are
    doubled (and that the block buffer each thread owns an element of is
    no shared memory at all: ``keep_owned_in_registers``)."""
    rng = np.random.default_rng(0)
    X = rng.random((4, 32), dtype=np.float32)
    Y0 = rng.random((2, 32), dtype=np.float32)
    s = Schedule(STALE).double_buffer(1)
    Y = Y0.copy()
    lt_mlir.compile(s.text, target="cuda-emulated")(X, Y)
    np.testing.assert_allclose(Y, Y0 + X.sum(0), rtol=1e-6)
    s = Schedule(OUTSIDE).double_buffer(1)
    Z = np.zeros((2, 32), np.float32)
    lt_mlir.compile(s.text, target="cuda-emulated")(X, Z)
    np.testing.assert_allclose(Z, np.stack([X[3], X[3]]))
    ptx = lt_mlir.compiler.lower_cuda(s.text).ptx
    shared = sorted(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", ptx))
    assert shared == [256]  # X's tile in two stages; S, touched by each thread at its own n only, is that thread's (registers)


def test_double_buffering_without_cp_async_before_sm_80():
    """cp.async needs sm_80: for older GPUs the stages are filled by plain
    copies (no cp.async, no groups), the pipeline otherwise the same."""
    from lt_mlir import recipes

    s = recipes.gpu_tiled_matmul(Schedule(programs.matmul(128, 128, 64)), tile=64, regs=4, k_tile=16, vector=4, double_buffer=True)
    assert "cp.async" not in lt_mlir.compiler.lower_cuda(s.text, arch="sm_75").ptx
    assert "cp.async.commit_group" in lt_mlir.compiler.lower_cuda(s.text, arch="sm_80").ptx


def test_thread_loops_in_a_sequential_loop_need_a_plain_loop():
    """Thread loops may sit in sequential loops of the innermost block loop
    (every thread runs those); an annotated loop between is refused."""
    s = Schedule(programs.matmul(64, 64, 32)).distribute(1).distribute(0).split(4, 8).swap(3).swap(2)
    s.gpu_map(2, "block").unroll(3, 2)
    with pytest.raises(PassError, match="thread loops may sit in sequential loops of the innermost block loop only when no loop between has annotations"):
        s.gpu_map(4, "thread")


THREAD_ZERO_IN_STEPS = """func.func @f(%X: memref<4x40xf32> {lt.name = "X"}, %Y: memref<4x40xf32> {lt.name = "Y"}, %S: memref<1xf32> {lt.name = "S"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %x = memref.load %X[%m, %k] : memref<4x40xf32>
        memref.store %x, %Y[%m, %k] : memref<4x40xf32>
      }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%i2: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %c0 = arith.constant 0 : index
        %x = memref.load %X[%m, %k] : memref<4x40xf32>
        "lt.reduce"(%x, %S, %c0) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
      }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_thread_zero_reduction_in_a_block_level_loop_stays_on_thread_zero():
    """A reduction on thread 0 (beside a thread loop, inside a sequential
    loop every thread runs) keeps its partial sum in a register of thread
    0 and adds it under the thread-0 guard: the other threads never add
    (found by review: it was combined by every thread, times 8)."""
    from lt_mlir.passes.registry import run_pipeline

    module = lt_mlir.parse_module(THREAD_ZERO_IN_STEPS)
    run_pipeline(module, "builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lower-lt-to-gpu, canonicalize, cse)")
    text = str(module)
    assert "memref.get_global" not in text  # the partial sum is a register, not shared memory
    guard = text.index("scf.if")
    atomic = text.index("memref.atomic_rmw")
    assert guard < atomic and text.count("memref.atomic_rmw") == 1
    assert text[guard:atomic].count("{") > text[guard:atomic].count("}")  # still inside the guard
    X = np.random.default_rng(4).standard_normal((4, 40)).astype(np.float32)
    s = Schedule(THREAD_ZERO_IN_STEPS).gpu_map(0, "block").gpu_map(2, "thread")
    Y, S = np.zeros((4, 40), np.float32), np.zeros(1, np.float32)
    s.compile(target="cuda-emulated")(X, Y, S)
    np.testing.assert_allclose(S[0], X.astype(np.float64).sum(), rtol=1e-5)


def test_auto_rows_are_thread_strided_with_one_combine_a_block():
    """lt-gpu-auto on a row sum of 4096: a block a row, its 256 threads
    reading consecutive 16-byte chunks in 4 sequential steps, each thread's
    partial sum in a register across the steps, then one block combine
    (warp shuffles, shared slots) and one atomic a block."""
    s = Schedule(programs.row_sum(8, 4096)).gpu_auto()
    assert "for n in 4 : L1\n  for n' in 256 : L2 [gpu thread]\n   for n'' in 4 : L3 [unroll full]" in s.loop_tree
    ptx = lt_mlir.compiler.lower_cuda(s.text).ptx
    body = ptx.split(".entry")[-1]
    assert body.count("shfl.sync.bfly.b32") == 10 and body.count("bar.sync") == 3  # after S[m] = 0; two in the combine
    assert body.count("atom.global.add.f32") == 1 and "ld.global.nc.v4.b32" in body
    X = np.random.default_rng(5).standard_normal((8, 4096)).astype(np.float32)
    np.testing.assert_allclose(s.compile(target="cuda-emulated")(X), X.astype(np.float64).sum(1), rtol=1e-4)


def test_flash_attention_rows_state_is_each_threads_own():
    """recipes.flash_attention(shared=True): the block's rows step through
    tiles of keys together, K's and V's tiles in shared memory; a row's
    maximum, sum and output row, buffers of the block loop that only the
    row's thread touches in every part, become that thread's own
    (register_tiles.keep_owned_in_registers): the only shared memory is
    the two tiles (16 keys x 16 and x 24 floats), read 128 bits at a
    time, and no atomics."""
    s = Schedule(programs.attention(100, 70, 16, 24))
    recipes.flash_attention(s, tile=16, gpu_threads=32, shared=True)
    got = lt_mlir.compiler.lower_cuda(s.text)
    shared = sorted(line.split()[-1] for line in got.ptx.splitlines() if line.lstrip().startswith(".shared"))
    assert shared == ["lt_shared_0[1536];", "lt_shared_1[1024];"]
    assert "atom." not in got.ptx and "ld.shared.v4.b32" in got.ptx
    # the same schedule emulated keeps the block's buffers (threads run one after another): the same numbers
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((100, 16)), rng.standard_normal((70, 16)), rng.standard_normal((70, 24))
    scores = q @ k.T / 4.0
    p = np.exp(scores - scores.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v
    out = s.compile(target="cuda-emulated")(*(x.astype(np.float32) for x in (q, k, v)))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def _copy_rows(n: int) -> str:
    """Y[m, n] = X[m, n] through a buffer allocated in the block loop: each
    thread loop touches its own element of it."""
    return _reverse_rows(n).replace(f"%x = memref.load %t[%r] : memref<{n}xf32>", f"%x = memref.load %t[%n] : memref<{n}xf32>")


def test_buffer_each_thread_owns_is_registers_not_shared_memory():
    """The block loop's buffer of ``_copy_rows``: the loop writing it and the
    loop reading it map the same dim to the same threads, each touching
    only its own element: no shared memory, no barrier
    (``keep_owned_in_registers``).  With each of those loops split in two
    and only the inner level on threads (a sequential level of n around
    each thread: elements t and t + 32 for thread t), the rule is not
    applied: shared memory and a barrier.  Both emulated against NumPy."""
    X = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    own = Schedule(_copy_rows(64)).gpu_map(0, "block").gpu_map(1, "thread").gpu_map(2, "thread")
    split = Schedule(_copy_rows(64)).split(1, 32).split(3, 32).gpu_map(0, "block").gpu_map(2, "thread").gpu_map(4, "thread")
    for s, shared in ((own, False), (split, True)):
        ptx = lt_mlir.compiler.lower_cuda(s.text).ptx
        assert (".shared .align 16 .b8 lt_shared_0[256];" in ptx) == shared
        assert ("bar.sync" in ptx) == shared
        Y = np.full((4, 64), np.nan, np.float32)
        s.compile(target="cuda-emulated")(X, np.zeros(4, np.float32), Y)
        np.testing.assert_array_equal(Y, X)


_NEIGHBOUR_STEPS = """
func.func @f(%X: memref<4x4x64xf32> {lt.name = "X"}, %Y: memref<4x4x64xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    %t = "lt.alloc"() {dims = ["n"]} : () -> memref<68xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      "lt.loop"() ({
      ^bb0(%i2: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %p = arith.addi %n, %j : index
        %x = memref.load %t[%p] : memref<68xf32>
        memref.store %x, %Y[%m, %j, %n] : memref<4x4x64xf32>
      }) {dim = "n", size = 64 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%i3: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %p = arith.addi %n, %j : index
        %x = memref.load %X[%m, %j, %n] : memref<4x4x64xf32>
        memref.store %x, %t[%p] : memref<68xf32>
      }) {dim = "n", size = 64 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_buffer_placed_by_a_sequential_loop_stays_shared():
    """A block buffer indexed ``n + j``, j a block-level sequential loop:
    in iteration j thread n reads what thread n + 1 wrote in iteration
    j - 1.  Each access looks like "the thread's n plus a value from outside
    the chain", but that value moves with j: the buffer is not any one
    thread's (a review found it privatised: each thread would have read its
    own last value).  Shared memory and barriers; emulated, the neighbour's
    values."""
    s = Schedule(_NEIGHBOUR_STEPS).gpu_map(0, "block").gpu_map(2, "thread").gpu_map(3, "thread")
    ptx = lt_mlir.compiler.lower_cuda(s.text).ptx
    assert ".shared .align 16 .b8 lt_shared_0[272];" in ptx and "bar.sync" in ptx
    X = np.random.default_rng(0).standard_normal((4, 4, 64)).astype(np.float32)
    Y = np.zeros((4, 4, 64), np.float32)
    s.compile(target="cuda-emulated")(X, Y)
    np.testing.assert_array_equal(Y[:, 1:, :-1], X[:, :-1, 1:])


@pytest.mark.parametrize("threads, tile", [(128, 32), (64, 64)])
def test_flash_attention_rows_state_fits_at_any_block_size(threads, tile):
    """Blocks of 128 rows (or tiles of 64 keys): the rows' state (128 x 66
    floats) and the tiles together pass 48 KiB, but the state is each
    thread's own (``gpu_mapping.owned_plan``), so ``lt-shrink-buffers``
    moves it into the block anyway and the lowering keeps it in registers:
    the only shared memory is the two tiles, two barriers a tile (before,
    it stayed in device memory: 2.3 ms instead of 0.33 on an H100)."""
    s = Schedule(programs.attention(256, 128, 64, 64))  # (keys a multiple of the tile: no clipped tile's barriers)
    recipes.flash_attention(s, tile=tile, gpu_threads=threads, shared=True)
    ptx = lt_mlir.compiler.lower_cuda(s.text).ptx
    shared = sorted(line.split()[-1] for line in ptx.splitlines() if line.lstrip().startswith(".shared"))
    assert shared == [f"lt_shared_0[{tile * 256}];", f"lt_shared_1[{tile * 256}];"]
    assert ptx.count("bar.sync") == 2
