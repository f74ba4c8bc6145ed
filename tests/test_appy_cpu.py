"""lt_mlir.appy on a machine without a GPU: a GPU backend runs its nests on
the CPU with one warning, ``lt.set_default_hardware("cuda")`` says what to
use instead, APPy's legacy array helpers, and a shared scalar that every
storing iteration sets to one value.  "No GPU" is simulated by making the
CUDA runtime's context fail as it does without a driver, so these run the
same on any host."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_appy import _load

import lt_mlir
import lt_mlir.appy as appy
from lt_mlir.errors import CudaError, LtError
from lt_mlir.runtime import cuda

NO_DRIVER = 'cuInit failed: DynamicLibNotFoundError: "cuda" is an NVIDIA driver library and can only be found via system search.'


@pytest.fixture
def no_gpu(monkeypatch):
    """This process as on a machine without a CUDA driver; the calls made
    to the runtime's device check are counted in the list yielded."""
    calls = []

    def fail():
        calls.append(1)
        raise CudaError(NO_DRIVER)

    monkeypatch.setattr(cuda, "_context", fail)
    monkeypatch.setattr(appy, "_cuda_check", appy._CudaCheck())  # forget what this process found
    monkeypatch.delenv(appy.BACKEND_ENV, raising=False)
    yield calls




GPU_PROGRAMS = """
    import numpy as np
    import lt_mlir.appy as appy

    @appy.jit(backend="triton")
    def vec_add(a, b):
        c = np.empty_like(a)
        #pragma parallel for simd
        for i in range(a.shape[0]):
            c[i] = a[i] + b[i]
        return c

    @appy.jit(backend="cuda")
    def row_sum(A):
        y = np.empty(A.shape[0], dtype=A.dtype)
        #pragma parallel for
        for i in range(A.shape[0]):
            s = 0.0
            #pragma simd
            for j in range(A.shape[1]):
                s += A[i, j]
            y[i] = s
        return y
    """


def test_a_gpu_backend_without_a_cuda_device_runs_on_the_cpu_with_one_warning(no_gpu, tmp_path):
    m = _load(tmp_path, GPU_PROGRAMS, "gpu_programs")
    a, b = np.arange(1000.0), np.ones(1000)
    A = np.arange(12.0).reshape(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            np.testing.assert_array_equal(m.vec_add(a, b), a + 1)
            np.testing.assert_array_equal(m.row_sum(A), A.sum(1))
        np.testing.assert_array_equal(m.vec_add(np.ones(7), np.ones(7)), np.full(7, 2.0))  # a new signature
    fallbacks = [w for w in caught if issubclass(w.category, appy.NoCudaDeviceWarning)]
    assert len(fallbacks) == 1, [str(w.message) for w in caught]
    text = str(fallbacks[0].message)
    assert "no usable CUDA device" in text and "cuInit failed: DynamicLibNotFoundError" in text
    assert "run on the CPU" in text and "LT_APPY_BACKEND=cpu" in text
    assert fallbacks[0].filename.endswith("gpu_programs.py")
    assert issubclass(appy.NoCudaDeviceWarning, UserWarning)
    assert len(no_gpu) == 1  # the device is looked for once a process
    assert all(name == "cpu" for name, _ in m.vec_add.nests[0].cache)


def test_compile_only_still_compiles_for_the_gpu_without_a_device(no_gpu, tmp_path, monkeypatch):
    monkeypatch.setenv(appy.KERNELS_ENV, str(tmp_path / "kernels"))
    m = _load(tmp_path, GPU_PROGRAMS, "gpu_compile_only")
    with warnings.catch_warnings():
        warnings.simplefilter("error", appy.NoCudaDeviceWarning)
        with appy.compile_only():
            m.vec_add(np.ones(64, np.float32), np.ones(64, np.float32))
    assert [name for name, _ in m.vec_add.nests[0].cache] == ["cuda"]
    assert list((tmp_path / "kernels").glob("vec_add_0_*.json"))
    assert no_gpu == []


def test_set_default_hardware_cuda_without_a_device_names_what_to_use(no_gpu, monkeypatch):
    with pytest.raises(lt_mlir.FrontendError) as e:
        lt_mlir.set_default_hardware("cuda")
    assert isinstance(e.value, LtError) and not isinstance(e.value, CudaError)
    message = str(e.value)
    assert message.startswith("hardware 'cuda' needs a CUDA device and this machine has no usable one")
    assert 'use "cpu" or "cuda-emulated"' in message and "cuInit failed" in message
    assert lt_mlir.default_hardware() == "cpu"
    lt_mlir.set_default_hardware("cuda-emulated")  # no device needed
    try:
        assert lt_mlir.default_hardware() == "cuda-emulated"
        monkeypatch.setattr(cuda, "_context", lambda: None)  # a machine with a GPU
        lt_mlir.set_default_hardware("cuda")
        assert lt_mlir.default_hardware() == "cuda"
    finally:
        lt_mlir.set_default_hardware("cpu")


def test_legacy_array_helpers_are_numpy_arrays(tmp_path):
    z = appy.zeros((3, 4), np.float32)
    assert isinstance(z, np.ndarray) and z.shape == (3, 4) and z.dtype == np.float32 and not z.any()
    assert appy.zeros(5).dtype == np.float64
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    e = appy.empty_like(x)
    assert isinstance(e, np.ndarray) and e.shape == (2, 3) and e.dtype == np.int32 and e is not x
    assert appy.empty_like(x, np.float64).dtype == np.float64
    assert appy.empty((2, 2), "float32").dtype == np.float32
    np.testing.assert_array_equal(appy.zeros_like(x), np.zeros((2, 3), np.int32))
    m = _load(tmp_path, """
        import numpy as np
        import lt_mlir.appy as appy

        @appy.jit
        def scaled(a):
            out = appy.empty_like(a)
            acc = appy.zeros(1, a.dtype)
            #pragma parallel for simd
            for i in range(a.shape[0]):
                out[i] = 2.0 * a[i]
                acc[0] += a[i]
            return out, acc
        """, "legacy_helpers")
    out, acc = m.scaled(np.arange(100.0))
    np.testing.assert_array_equal(out, 2 * np.arange(100.0))
    assert acc[0] == 4950.0


SHARED_STORES = """
    import numpy as np
    import lt_mlir.appy as appy

    @appy.jit
    def var_write(n):  # APPy's tests/integration/triton/tutorial/test_var_write.py
        a = 0
        #pragma parallel for shared(a)
        for i in range(n):
            if i == 3:
                a = 1
        return a

    @appy.jit
    def any_negative(x):
        found = False
        #pragma parallel for shared(found)
        for i in range(x.shape[0]):
            if x[i] < 0.0:
                found = True
        return found

    @appy.jit
    def every_iteration(x, v):
        a = 0.0
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = 2.0 * x[i]
            a = v
        return a

    @appy.jit
    def last_index(n):
        a = 0
        #pragma parallel for shared(a)
        for i in range(n):
            a = i
        return a

    @appy.jit
    def two_values(x):
        a = 0
        #pragma parallel for shared(a)
        for i in range(x.shape[0]):
            if x[i] > 0.0:
                a = 1
            else:
                a = 2
        return a

    @appy.jit
    def read_back(x):
        a = 0.0
        #pragma parallel for shared(a)
        for i in range(x.shape[0]):
            x[i] = a
            a = 1.0
        return a
    """


def test_a_shared_scalar_every_storing_iteration_sets_to_one_value_runs_in_parallel(tmp_path):
    m = _load(tmp_path, SHARED_STORES, "shared_stores")
    assert m.var_write(10) == 1 and type(m.var_write(10)) is int
    assert m.var_write(3) == 0  # no iteration stored: the value before the loop
    assert m.any_negative(np.array([1.0, -2.0, 3.0])) is True
    assert m.any_negative(np.ones(5)) is False
    x = np.arange(4.0)
    assert m.every_iteration(x, 2.5) == 2.5
    np.testing.assert_array_equal(x, 2 * np.arange(4.0))
    assert m.every_iteration(np.ones(0), 2.5) == 0.0
    # a value that differs between iterations, or a scalar the loop also reads, stays a race
    with pytest.raises(appy.AppyError, match=r"shared_stores.py:\d+: error: #pragma parallel for shared\(a\) refused: lt-parallel: cannot run L0"):
        m.last_index(10)
    with pytest.raises(appy.AppyError, match=r"#pragma parallel for shared\(a\) refused"):
        m.two_values(np.ones(4))
    with pytest.raises(appy.AppyError, match=r"#pragma parallel for shared\(a\) refused"):
        m.read_back(np.ones(4))
