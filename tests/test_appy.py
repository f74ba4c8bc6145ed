"""lt_mlir.appy: APPy programs run unchanged, checked against NumPy; races
refused with the loop named; pragma errors located; kernels cached per
signature (shapes, dtypes, int values)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from appy_programs import npbench  # noqa: E402

import lt_mlir.appy as appy  # noqa: E402


def test_gesummv_as_npbench_writes_it():
    N = 100
    A = np.fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, N))
    B = np.fromfunction(lambda i, j: ((i * j + 2) % N) / N, (N, N))
    x = np.fromfunction(lambda i: (i % N) / N, (N,))
    np.testing.assert_allclose(npbench.gesummv(1.5, 1.2, A, B, x), 1.5 * A @ x + 1.2 * B @ x, rtol=1e-12)
    # float32 data: the kernel computes in float32 (a new signature)
    A32, B32, x32 = A.astype(np.float32), B.astype(np.float32), x.astype(np.float32)
    got = npbench.gesummv(1.5, 1.2, A32, B32, x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 1.5 * A @ x + 1.2 * B @ x, rtol=1e-5)


def test_jacobi_2d_time_steps_around_two_nests():
    N = 60
    A = np.fromfunction(lambda i, j: i * (j + 2) / N, (N, N))
    B = np.fromfunction(lambda i, j: i * (j + 3) / N, (N, N))
    A1, B1 = A.copy(), B.copy()
    for _ in range(1, 10):
        B1[1:-1, 1:-1] = 0.2 * (A1[1:-1, 1:-1] + A1[1:-1, :-2] + A1[1:-1, 2:] + A1[2:, 1:-1] + A1[:-2, 1:-1])
        A1[1:-1, 1:-1] = 0.2 * (B1[1:-1, 1:-1] + B1[1:-1, :-2] + B1[1:-1, 2:] + B1[2:, 1:-1] + B1[:-2, 1:-1])
    A2, B2 = A.copy(), B.copy()
    npbench.jacobi_2d(10, A2, B2)
    np.testing.assert_allclose(A2, A1, rtol=1e-12)
    np.testing.assert_allclose(B2, B1, rtol=1e-12)


def test_vec_add_and_conditional_reduction():
    a, b = np.random.default_rng(0).standard_normal((2, 1003))
    np.testing.assert_array_equal(npbench.vec_add(a, b), a + b)
    X = np.random.default_rng(1).standard_normal((7, 33))
    m = X.max(1)
    np.testing.assert_allclose(npbench.row_max_exp(X), np.where(m < 5.0, np.exp(m), 5.0), rtol=1e-12)


def test_kernels_are_cached_per_signature():
    a, b = np.ones(64), np.ones(64)
    nest = npbench.vec_add.nests[0]
    nest.cache.clear()
    npbench.vec_add(a, b)
    npbench.vec_add(a * 2, b)  # same shapes and dtypes: no new kernel
    assert len(nest.cache) == 1
    np.testing.assert_array_equal(npbench.vec_add(np.ones(65), np.ones(65)), np.full(65, 2.0))  # new shape: a new kernel
    npbench.vec_add(np.ones(64, np.float32), np.ones(64, np.float32))  # new dtype
    assert len(nest.cache) == 3


def test_a_racy_parallel_loop_is_refused_with_the_loop_named():
    a = np.ones(16)
    with pytest.raises(appy.AppyError, match=r"npbench.py:\d+: error: #pragma parallel for refused: lt-parallel: cannot run L0 \"for i in 15\" in parallel: argument 0 is written"):
        npbench.shifted_race(a)
    b = np.zeros(16)
    np.testing.assert_array_equal(npbench.shifted_unsafe(np.arange(16.0), b)[1:], 2 * np.arange(15.0))  # unsafe=True: the user vouches


def _load(tmp_path, source: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_pragma_and_option_errors_are_located(tmp_path):
    with pytest.raises(appy.AppyError, match=r"bad_pragma.py:6: error: unknown pragma '#pragma paralel for'"):
        _load(tmp_path, """
            import lt_mlir.appy as appy

            @appy.jit
            def f(a):
                #pragma paralel for
                for i in range(a.shape[0]):
                    a[i] = 1.0
            """, "bad_pragma")
    with pytest.raises(appy.AppyError, match=r"unknown appy.jit option\(s\): dumpcode"):
        appy.jit(dumpcode=True)
    with pytest.raises(appy.AppyError, match=r"unknown backend 'opencl'"):
        appy.jit(backend="opencl")
    m = _load(tmp_path, """
        import lt_mlir.appy as appy

        @appy.jit
        def g(a):
            #pragma parallel for
            for i in range(a.shape[0]):
                while a[i] > 0:
                    a[i] = a[i] - 1.0
        """, "unsupported")
    with pytest.raises(appy.AppyError, match=r"unsupported.py:8: error: While statements are not supported in an annotated loop"):
        m.g(np.ones(4))


def test_simd_that_cannot_vectorize_warns_at_the_loop(tmp_path):
    m = _load(tmp_path, """
        import lt_mlir.appy as appy

        @appy.jit
        def h(a, s):
            #pragma simd
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    s[0] += a[i, j]
            return s
        """, "simd_warn")
    with pytest.warns(RuntimeWarning, match="#pragma simd: lt-vectorize: cannot vectorize L0 .for i in 16.: only an innermost loop can be vectorized"):
        got = m.h(np.arange(32.0).reshape(16, 2), np.zeros(1))  # 16 rows: more than any CPU's float64 lanes
    assert got[0] == 496.0


def test_gemver_and_rowwise_reductions_as_appy_writes_them():
    N = 100
    fn = float(N)
    A = np.fromfunction(lambda i, j: (i * j % N) / N, (N, N))
    u1 = np.fromfunction(lambda i: i, (N,), dtype=np.float64)
    u2 = np.fromfunction(lambda i: ((i + 1) / fn) / 2.0, (N,))
    v1 = np.fromfunction(lambda i: ((i + 1) / fn) / 4.0, (N,))
    v2 = np.fromfunction(lambda i: ((i + 1) / fn) / 6.0, (N,))
    y = np.fromfunction(lambda i: ((i + 1) / fn) / 8.0, (N,))
    z = np.fromfunction(lambda i: ((i + 1) / fn) / 9.0, (N,))
    A1, x1, w1 = A.copy(), np.zeros(N), np.zeros(N)
    A1 += np.outer(u1, v1) + np.outer(u2, v2)
    x1 += 1.2 * y @ A1 + z
    w1 += 1.5 * A1 @ x1
    A2, x2, w2 = A.copy(), np.zeros(N), np.zeros(N)
    npbench.gemver(1.5, 1.2, A2, u1, v1, u2, v2, w2, x2, y, z)
    for got, want in ((A2, A1), (x2, x1), (w2, w1)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    a = np.random.default_rng(6).random((100, 100))
    b = np.empty(100)
    npbench.rowwise_max(a, b)
    np.testing.assert_array_equal(b, a.max(axis=1))
    npbench.rowwise_min(a, b)
    np.testing.assert_array_equal(b, a.min(axis=1))


def test_cuda_emulated_backend_maps_pragmas_to_blocks_and_threads():
    """backend="cuda-emulated": ``parallel for`` -> blocks, ``simd`` ->
    threads of a block, ``parallel for simd`` -> blocks x threads
    (lt-gpu-auto); the GPU lowering runs on the CPU against NumPy."""
    on_gpu = appy.jit(backend="cuda-emulated")
    m = types.SimpleNamespace(gesummv=on_gpu(npbench.gesummv.__wrapped__), vec_add=on_gpu(npbench.vec_add.__wrapped__))
    A, B, x = np.random.default_rng(7).random((3, 300, 200))[0], np.random.default_rng(8).random((300, 200)), np.random.default_rng(9).random(200)
    np.testing.assert_allclose(m.gesummv(1.5, 1.2, A, B, x), 1.5 * A @ x + 1.2 * B @ x, rtol=1e-12)
    tree = m.gesummv.nests[0].schedule_tree
    assert "[gpu block]" in tree and "[gpu thread]" in tree
    a, b = np.random.default_rng(10).random((2, 5003))
    np.testing.assert_array_equal(m.vec_add(a, b), a + b)
    assert "[gpu block]" in m.vec_add.nests[0].schedule_tree and "[gpu thread]" in m.vec_add.nests[0].schedule_tree


def test_triangular_loops_run_guarded():
    """syrk as APPy's tests write it: ``range(i + 1)`` bounds become a loop
    over every value with a guard (the upper triangle stays untouched); the
    simd loops vectorize under the guard's mask (A[j, k] gathered down a
    column), and the parallel loop's rows, of unequal work, are dealt to
    threads as they finish (guided)."""
    N = M = 60
    C = np.fromfunction(lambda i, j: ((i * j + 2) % N) / M, (N, N))
    A = np.fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, M))
    C1, C2 = C.copy(), C.copy()
    for i in range(A.shape[0]):
        C1[i, : i + 1] *= 1.2
        for k in range(A.shape[1]):
            C1[i, : i + 1] += 1.5 * A[i, k] * A[: i + 1, k]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every pragma honoured
        npbench.syrk(1.5, 1.2, C2, A)
    np.testing.assert_allclose(C2, C1, rtol=1e-12)
    tree = npbench.syrk.nests[0].schedule_tree
    assert "[parallel, schedule guided]" in tree and tree.count("[vectorize") == 2, tree


def test_if_statements_in_annotated_loops(tmp_path):
    """``if``/``else`` with comparisons joined by and/or -> scf.if."""
    m = _load(tmp_path, """
        import lt_mlir.appy as appy

        @appy.jit
        def clip_band(a, b, lo, hi):
            #pragma parallel for
            for i in range(a.shape[0]):
                if a[i] < lo or a[i] > hi:
                    b[i] = 0.0
                else:
                    b[i] = a[i] * 2.0
            return b
        """, "branches")
    a = np.random.default_rng(11).standard_normal(1000)
    got = m.clip_band(a, np.full(1000, np.nan), -0.5, 0.5)
    np.testing.assert_array_equal(got, np.where((a < -0.5) | (a > 0.5), 0.0, a * 2.0))


# -- the CUDA target without a GPU here: kernels saved, loaded, GPU arrays --


def _gpu_programs(backend: str):
    """benchmarks/appy_gpu_programs.py under ``appy.jit(backend=...)``."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "appy_gpu_programs.py")
    spec = importlib.util.spec_from_file_location(f"appy_gpu_programs_{backend}", path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__["jit"] = appy.jit(backend=backend)
    spec.loader.exec_module(module)
    return module


def test_compile_only_saves_cuda_kernels_that_load_without_compiling(tmp_path, monkeypatch):
    monkeypatch.setenv(appy.KERNELS_ENV, str(tmp_path))
    A, x, y = np.ones((300, 200), np.float32), np.ones(200, np.float32), np.full(300, np.nan, np.float32)
    with appy.compile_only():
        _gpu_programs("cuda").mv(A, x, y, 300, 200)
    assert np.isnan(y).all()  # compiled, not run
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert len(saved) == 3 and saved[0].startswith("mv_0_") and {s.rsplit(".", 1)[-1] for s in saved} == {"json", "ptx"}
    # a fresh program finds the kernel: nothing compiles (no MLIR needed)
    fresh = _gpu_programs("cuda")
    monkeypatch.setattr(appy.Nest, "compile", lambda *a: pytest.fail("compiled instead of loading the saved kernel"))
    with appy.compile_only():
        fresh.mv(A, x, y, 300, 200)
    (kernel, names, checks), = fresh.mv.nests[0].cache.values()
    assert type(kernel).__name__ == "CudaKernel" and names == ["A", "x", "y"] and checks == []
    # another shape is another signature: it would compile
    with pytest.raises(pytest.fail.Exception, match="compiled instead"), appy.compile_only():
        fresh.mv(A[:100], x, y[:100], 100, 200)


class _GpuArray:
    """What appy reads of a GPU array (a torch CUDA tensor): shape, dtype
    spelt by its library, and the DLPack device."""

    def __init__(self, shape, dtype="torch.float32"):
        self.shape, self.dtype = shape, dtype

    def __dlpack_device__(self):
        return (2, 0)


def test_gpu_arrays_are_read_by_shape_and_dtype_and_refused_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv(appy.KERNELS_ENV, str(tmp_path))
    A, x, y = _GpuArray((64, 32)), _GpuArray((32,)), _GpuArray((64,))
    p = _gpu_programs("cuda")
    with appy.compile_only():
        p.mv(A, x, y, 64, 32)
    (target, key), = p.mv.nests[0].cache  # kernels are cached per target and signature
    assert target == "cuda"
    assert ("A", "array", (64, 32), "<f4") in key
    # the NumPy stand-ins used to compile give the same signature: a kernel
    # built here from NumPy arrays serves GPU tensors on the GPU machine
    assert p.mv.nests[0].signature({"A": np.zeros((64, 32), np.float32), "M": 64, "N": 32, "x": np.zeros(32, np.float32), "y": np.zeros(64, np.float32), "range": None}) == key
    with pytest.raises(appy.AppyError, match=r"appy_gpu_programs.py:\d+: error: array 'A' is on a GPU; the cpu backend takes NumPy arrays"):
        _gpu_programs("cpu").mv(A, x, y, 64, 32)


def test_nest_inputs_leave_out_names_the_nest_binds_first(tmp_path):
    prog = npbench.gesummv
    assert prog.nests[0].inputs == ["A", "B", "alpha", "beta", "range", "x", "y"]  # not i, j, s
    # a stale loop variable of an earlier Python loop does not enter the signature
    path = tmp_path / "stale.py"
    path.write_text(textwrap.dedent('''
        import numpy as np
        import lt_mlir.appy as appy

        @appy.jit
        def twice(a):
            for i in range(3):
                pass
            b = np.empty_like(a)
            #pragma parallel for
            for i in range(a.shape[0]):
                b[i] = 2.0 * a[i]
            return b
    '''))
    spec = importlib.util.spec_from_file_location("stale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_array_equal(module.twice(np.arange(5.0)), 2 * np.arange(5.0))
    assert module.twice.nests[0].inputs == ["a", "b", "range"]


def test_a_nest_relaunches_only_for_the_same_gpu_arrays_and_values():
    from lt_mlir.appy import _snapshot, _unchanged

    A, x = _GpuArray((4, 4)), _GpuArray((4,))
    snaps = [_snapshot(A, True), _snapshot(x, True), _snapshot(4, False), _snapshot(1.5, False), _snapshot(None, False)]
    assert _unchanged([A, x, 4, 1.5, None], snaps)
    assert not _unchanged([_GpuArray((4, 4)), x, 4, 1.5, None], snaps)  # another array object
    assert not _unchanged([A, x, 5, 1.5, None], snaps)  # an int sizes loops: another kernel
    assert not _unchanged([A, x, 4.0, 1.5, None], snaps)  # a float where an int was
    assert not _unchanged([A, x, 4, 2.5, None], snaps)  # another scalar value: another GPU copy
    A.shape = (2, 8)
    assert not _unchanged([A, x, 4, 1.5, None], snaps)  # resized in place


def _jacobi_1d_reference(steps, A, B):
    """npbench's jacobi_1d in NumPy, on copies."""
    A, B = A.copy(), B.copy()
    for _ in range(1, steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def test_a_cpu_nest_reruns_its_bound_kernel_only_for_the_same_arrays():
    """The CPU's fast path: the same array objects, layout and values run
    the kernel bound at the last call; anything else goes the full way
    (signature, checks) and still computes the right thing."""
    from lt_mlir.appy import _snapshot, _unchanged

    rng = np.random.default_rng(11)
    A, B = rng.random(50), rng.random(50)
    A1, B1 = _jacobi_1d_reference(4, A, B)
    npbench.jacobi_1d(4, A, B)  # the second and third steps take the fast path
    np.testing.assert_allclose(A, A1, rtol=1e-12)
    nest = npbench.jacobi_1d.nests[0]
    assert nest._last is not None
    # other arrays of the same shape: the full path, right results
    C, D = rng.random(50), rng.random(50)
    C1, D1 = _jacobi_1d_reference(3, C, D)
    npbench.jacobi_1d(3, C, D)
    np.testing.assert_allclose(C, C1, rtol=1e-12)
    np.testing.assert_allclose(D, D1, rtol=1e-12)
    # what the snapshot of a NumPy array catches
    X = np.zeros((4, 6))
    snaps = [_snapshot(X, False), _snapshot(2, False)]
    assert _unchanged([X, 2], snaps)
    assert not _unchanged([X.copy(), 2], snaps)  # another object
    assert not _unchanged([X, 3], snaps)
    X.shape = (6, 4)
    assert not _unchanged([X, 2], snaps)  # reshaped in place


def test_jacobi_1d_go_fast_and_softmax_as_appy_writes_them():
    rng = np.random.default_rng(5)
    A, B = rng.random(300), rng.random(300)
    A1, B1 = _jacobi_1d_reference(10, A, B)
    npbench.jacobi_1d(10, A, B)
    np.testing.assert_allclose(A, A1, rtol=1e-12)
    np.testing.assert_allclose(B, B1, rtol=1e-12)
    # a reduction into the function's scalar (shared(trace)), used after the nest
    a = rng.random((60, 60))
    np.testing.assert_allclose(npbench.go_fast(a), a + np.tanh(np.diag(a)).sum(), rtol=1e-12)
    # -np.inf, a max then a sum through locals, then a normalisation
    x = rng.standard_normal((40, 70))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(npbench.softmax(x, np.empty_like(x)), e / e.sum(1, keepdims=True), rtol=1e-12)


def _csr(rng, m, n, density):
    dense = rng.random((m, n)) * (rng.random((m, n)) < density)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))]).astype(np.int32)
    rows, cols = np.nonzero(dense)
    return dense, dense[rows, cols], indptr, cols.astype(np.int32)


@pytest.mark.parametrize("program", ["spmv", "spmv_emulated", "spmv_simd"])
def test_csr_spmv_with_data_dependent_bounds_and_a_gather(program):
    rng = np.random.default_rng(7)
    dense, data, indptr, indices = _csr(rng, 90, 70, 0.1)
    x = rng.random(70)
    got = getattr(npbench, program)(data, indptr, indices, x, 90)
    np.testing.assert_allclose(got, dense @ x, rtol=1e-12)
    # an empty row
    dense[3] = 0
    data, indptr, indices = _csr_of(dense)
    np.testing.assert_allclose(getattr(npbench, program)(data, indptr, indices, x, 90), dense @ x, rtol=1e-12)


def _csr_of(dense):
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))]).astype(np.int32)
    return dense[rows, cols], indptr, cols.astype(np.int32)


def test_an_index_from_the_data_outside_its_array_is_a_located_error():
    rng = np.random.default_rng(8)
    dense, data, indptr, indices = _csr(rng, 20, 30, 0.2)
    x = rng.random(30)
    wrong = indices.copy()
    wrong[5] = 30  # one past x's end
    with pytest.raises(appy.AppyError, match=r"npbench.py:\d+: 'x\[A_indices\[j\]\]': error: an index computed from the data is outside its array"):
        npbench.spmv(data, indptr, wrong, x, 20)
    # the bounds themselves are data too: a row running past A_data
    bad = indptr.copy()
    bad[-1] += 3
    with pytest.raises(appy.AppyError, match=r"npbench.py:\d+: 'range\(start, end\)': error: the loop's bounds, from the data, run outside A_data, A_indices, which it indexes by 'j'"):
        npbench.spmv(data, bad, indices, x, 20)


@pytest.mark.parametrize("seed", range(12))
def test_property_random_csr_matrices_and_index_data(seed):
    """Data-dependent bounds and gathers on random CSR matrices (empty
    rows, both index widths, either backend, the row loop scalar or
    vectorized in groups and a scalar rest) against the dense product;
    one corrupted index is always reported, never read past an array."""
    rng = np.random.default_rng(100 + seed)
    m, n = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    dense = rng.random((m, n)) * (rng.random((m, n)) < rng.choice([0.0, 0.05, 0.3, 1.0]))
    data, indptr, indices = _csr_of(dense)
    width = rng.choice([np.int32, np.int64])
    indptr, indices = indptr.astype(width), indices.astype(width)
    x = rng.random(n)
    program = (npbench.spmv_emulated, npbench.spmv, npbench.spmv_simd)[seed % 3]
    np.testing.assert_allclose(program(data, indptr, indices, x, m), dense @ x, rtol=1e-12, atol=1e-15)
    if len(indices):
        wrong = indices.copy()
        wrong[rng.integers(len(wrong))] = rng.choice([-1, n, n + 7])
        with pytest.raises(appy.AppyError, match="an index computed from the data is outside its array"):
            program(data, indptr, wrong, x, m)


def test_syr2k_fdtd_2d_and_black_scholes_as_appy_writes_them():
    import math

    rng = np.random.default_rng(9)
    C, A, B = rng.random((50, 50)), rng.random((50, 30)), rng.random((50, 30))
    ref = C.copy()
    for i in range(50):
        ref[i, : i + 1] *= 1.2
        for k in range(30):
            ref[i, : i + 1] += A[: i + 1, k] * 1.5 * B[i, k] + B[: i + 1, k] * 1.5 * A[i, k]
    np.testing.assert_allclose(npbench.syr2k(1.5, 1.2, C.copy(), A, B), ref, rtol=1e-12)
    # fdtd_2d: four nests a time step, one reading a host int (the step) as an index
    ex, ey, hz, fict = rng.random((20, 30)), rng.random((20, 30)), rng.random((20, 30)), rng.random(4)
    e1, e2, h = ex.copy(), ey.copy(), hz.copy()
    for t in range(4):
        e2[0, :] = fict[t]
        e2[1:, :] -= 0.5 * (h[1:, :] - h[:-1, :])
        e1[:, 1:] -= 0.5 * (h[:, 1:] - h[:, :-1])
        h[:-1, :-1] -= 0.7 * (e1[:-1, 1:] - e1[:-1, :-1] + e2[1:, :-1] - e2[:-1, :-1])
    for got, want in zip(npbench.fdtd_2d(4, ex, ey, hz, fict), (e1, e2, h)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # black_scholes: log, sqrt, exp and erf (libm) per option
    n = 500
    price, strike, t = rng.uniform(10, 50, n), rng.uniform(10, 50, n), rng.uniform(1, 2, n)
    call, put = npbench.black_scholes(price, strike, t, 0.1, 0.2, np.empty(n), np.empty(n))
    erf = np.vectorize(math.erf)
    a, b, z = np.log(price / strike), t * -0.1, t * 0.2 * 0.2 * 2
    y = 1 / np.sqrt(z)
    se = np.exp(b) * strike
    want_call = price * (0.5 + 0.5 * erf((a - b + 0.25 * z) * y)) - se * (0.5 + 0.5 * erf((a - b - 0.25 * z) * y))
    np.testing.assert_allclose(call, want_call, rtol=1e-12)
    np.testing.assert_allclose(put, want_call - price + se, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["cpu", "cuda-emulated"])
def test_tensor_expression_pragmas_as_appy_writes_them(backend, monkeypatch):
    monkeypatch.setenv("LT_APPY_BACKEND", backend)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "appy_programs", "tensor.py")
    spec = importlib.util.spec_from_file_location(f"tensor_{backend.replace('-', '_')}", path)
    tensor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tensor)
    rng = np.random.default_rng(3)
    M, N = 37, 53
    A, B = rng.standard_normal((2, M, N))
    x = rng.standard_normal(N)
    y, tmp = np.empty(M), np.empty(M)
    tensor.gesummv(1.5, 1.2, A, B, x, y, tmp, M, N)
    np.testing.assert_allclose(y, 1.5 * A @ x + 1.2 * B @ x, rtol=1e-12)
    np.testing.assert_allclose(tensor.gemv(2.0, A, x), 2.0 * A @ x, rtol=1e-12)
    A32, x32 = A.astype(np.float32), x.astype(np.float32)
    got = tensor.gemv(2.0, A32, x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 2.0 * A @ x, rtol=1e-4, atol=1e-4)
    # jacobi: slices offset from the pragma's dims (:N-2 against 1:N-1)
    A1, B1 = A.copy(), B.copy()
    for _ in range(1, 4):
        B1[1:-1, 1:-1] = 0.2 * (A1[1:-1, 1:-1] + A1[1:-1, :-2] + A1[1:-1, 2:] + A1[2:, 1:-1] + A1[:-2, 1:-1])
        A1[1:-1, 1:-1] = 0.2 * (B1[1:-1, 1:-1] + B1[1:-1, :-2] + B1[1:-1, 2:] + B1[2:, 1:-1] + B1[:-2, 1:-1])
    A2, B2 = tensor.jacobi_2d(A.copy(), B.copy(), 4)
    np.testing.assert_allclose(A2, A1, rtol=1e-12)
    np.testing.assert_allclose(B2, B1, rtol=1e-12)
    # the loops the pragma made: dims named after their bounds, parallel outside
    tree = tensor.jacobi_2d.nests[0].schedule_tree
    assert tree.splitlines()[0].startswith("for m in 35 : L0 [parallel]" if backend == "cpu" else "for m in 35 : L0 [gpu block]"), tree
    np.testing.assert_allclose(tensor.row_max_exp(A), np.exp(A).max(axis=1), rtol=1e-12)
    assert tensor.total(x) == pytest.approx(float(np.sum(x)), rel=1e-12)
    C = tensor.matmul(A, B.T.copy(), np.zeros((M, M)))
    np.testing.assert_allclose(C, A @ B.T, rtol=1e-10)


@pytest.mark.parametrize(
    "pragma, statement, message",
    [
        (":M=>parallel", "y[:M] = A[:M, :N].sum()", r"slice ':N' of 'A\[:M, :N\]' matches no dim of the pragma \(:M\)"),
        (":M=>parallel :N=>block(128)", "y[:M] = A[:M, :N]", r"'block\(128\)' is not honoured"),
        (":M=>parallel :N=>fast", "y[:M] = A[:M, :N]", r"unknown property 'fast' of ':N'"),
        (":M=>parallel :N=>reduce(sum)", "y[:M] = A[:M, 0]", r"dim ':N' is reduced but the value never reads it"),
        (":M=>parallel", "y[:M] = appy.mv(A[:M, :M], y[:M])", r"reduces, but no dim of the pragma is reduce\(sum\)"),
        (":M=>parallel :N=>reduce(max)", "y[:M] = np.sum(A[:M, :N], axis=1)", r"is a sum reduction; the pragma's reduced dims are reduce\(max\)"),
        (":M=>parallel :N=>reduction(sum:z)", "y[:M] = np.sum(A[:M, :N], axis=1)", r"reduction\(sum:z\) names 'z', but the statement assigns 'y\[:M\]'"),
        (":N=>reduce(sum) :M=>parallel", "y[:M] = np.sum(A[:M, :N], axis=1)", r"reduced dims come after the others"),
        (":M=>parallel :M=>parallel", "y[:M] = A[:M, 0]", r"two dims are ':M'"),
    ],
)
def test_tensor_expression_pragma_errors_are_located(tmp_path, pragma, statement, message):
    name = f"tensor_bad_{abs(hash((pragma, statement))) % 10**8}"
    with pytest.raises(appy.AppyError, match=rf"{name}.py:(8|9): error: .*{message}"):
        # refused when the function is decorated: no call needed
        _load(tmp_path, f"""
            import numpy as np
            import lt_mlir.appy as appy

            @appy.jit
            def f(A, y):
                M, N = A.shape
                #pragma {pragma}
                {statement}
                return y
            """, name)


def test_a_pragma_above_the_wrong_statement_is_refused_located(tmp_path):
    with pytest.warns(SyntaxWarning, match=r"#pragma parallel for needs a for loop below it, not 'y\[0\] = x\[0\]': ignored"):
        _load(tmp_path, """
            import lt_mlir.appy as appy

            @appy.jit
            def f(x, y):
                #pragma parallel for
                y[0] = x[0]
            """, "misplaced")
    with pytest.raises(appy.AppyError, match=r"tensor_on_loop.py:7: error: #pragma :N=>parallel needs an assignment below it, not 'for i in range\(N\):'"):
        _load(tmp_path, """
            import lt_mlir.appy as appy

            @appy.jit
            def f(x, N):
                #pragma :N=>parallel
                for i in range(N):
                    x[i] = 1.0
            """, "tensor_on_loop")
    with pytest.raises(appy.AppyError, match=r"twice.py:7: error: a second pragma above one statement"):
        _load(tmp_path, """
            import lt_mlir.appy as appy

            @appy.jit
            def f(x):
                #pragma parallel for
                #pragma simd
                for i in range(x.shape[0]):
                    x[i] = 1.0
            """, "twice")
    # a tensor-expression statement whose dims conflict is refused like any loop
    m = _load(tmp_path, """
        import lt_mlir.appy as appy

        @appy.jit
        def shift(x):
            N = x.shape[0]
            #pragma 1:N=>parallel
            x[1:N] = x[0:N-1] + 1.0
        """, "tensor_race")
    with pytest.raises(appy.AppyError, match=r"tensor_race.py:8: error: #pragma 1:N=>parallel refused"):
        m.shift(np.zeros(8))


def test_trmm_and_floyd_warshall_written_race_free():
    """The two npbench kernels whose APPy versions are races, written with a
    parallel loop that is not (columns; the step's row copied first),
    against npbench's NumPy."""
    rng = np.random.default_rng(21)
    M, N = 37, 29
    A, B = rng.random((M, M)), rng.random((M, N))
    want = B.copy()
    for i in range(M):
        for j in range(N):
            want[i, j] += np.dot(A[i + 1 :, i], want[i + 1 :, j])
    want *= 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no pragma refused
        np.testing.assert_allclose(npbench.trmm(1.5, A, B.copy()), want, rtol=1e-12)
    path = rng.integers(1, 100, (41, 41)).astype(np.float64)
    path[rng.random((41, 41)) < 0.3] = np.inf
    np.fill_diagonal(path, 0.0)
    ref = path.copy()
    for k in range(41):
        ref[:] = np.minimum(ref, np.add.outer(ref[:, k], ref[k, :]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(npbench.floyd_warshall(path.copy()), ref)
    assert "[vectorize" in npbench.floyd_warshall.nests[0].schedule_tree


def test_an_int_that_sizes_no_loop_is_a_runtime_argument(tmp_path):
    """fdtd's time step t indexes fict[t]: one kernel serves every step
    (it sizes no loop), checked where it indexes; an int in a range() is
    still part of the signature by value."""
    rng = np.random.default_rng(4)
    ex, ey, hz, fict = rng.random((9, 11)), rng.random((9, 11)), rng.random((9, 11)), rng.random(6)
    e1, y1, h1 = ex.copy(), ey.copy(), hz.copy()
    for t in range(6):
        y1[0, :] = fict[t]
        y1[1:, :] -= 0.5 * (h1[1:, :] - h1[:-1, :])
        e1[:, 1:] -= 0.5 * (h1[:, 1:] - h1[:, :-1])
        h1[:-1, :-1] -= 0.7 * (e1[:-1, 1:] - e1[:-1, :-1] + y1[1:, :-1] - y1[:-1, :-1])
    npbench.fdtd_2d(6, ex, ey, hz, fict)
    np.testing.assert_allclose(hz, h1, rtol=1e-12)
    first = npbench.fdtd_2d.nests[0]
    mine = [dict((e[0], e) for e in k) for _, k in first.cache]
    mine = [k for k in mine if k["ey"][2] == (9, 11)]  # (other tests ran it at other shapes)
    assert "t" not in first.static and len(mine) == 1 and mine[0]["t"] == ("t", "int")
    m = _load(tmp_path, """
        import lt_mlir.appy as appy

        @appy.jit
        def pick(a, out, k, n):
            #pragma parallel for
            for i in range(n):
                out[i] = a[k] + i
        """, "runtime_int")
    a, out = np.arange(10.0), np.zeros(4)
    m.pick(a, out, 7, 4)
    np.testing.assert_array_equal(out, 7.0 + np.arange(4))
    m.pick(a, out, 2, 4)  # another k: the same kernel
    np.testing.assert_array_equal(out, 2.0 + np.arange(4))
    assert len(m.pick.nests[0].cache) == 1
    m.pick(a, np.zeros(3), 2, 3)  # another n sizes the loop: a new kernel
    assert len(m.pick.nests[0].cache) == 2
    with pytest.raises(appy.AppyError, match=r"runtime_int.py:8: 'a\[k\]': error: an index computed from the data is outside its array"):
        m.pick(a, out, 10, 4)
