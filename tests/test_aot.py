"""Ahead-of-time compilation: ``compile_aot`` writes an object file, a C
header and a shared library, usable without Python.

The kernel is the 33x48x64 matmul split with tails: m as ``4 r 1`` over 8,
n as ``1 r 16`` over 32, k as 4 over 4 over 4.  The C
driver fills the inputs with multiples of 1/8 in [-0.75, 0.75]: every
product is a multiple of 1/64 and every partial sum stays far below 2^24/64,
so the float32 result is exact whatever the summation order, and the C
checksums can be compared with NumPy's for equality.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs

M, N, K = 33, 48, 64
SPLIT = {"m_blocks": [8], "n_blocks": [32], "k_blocks": [16, 4]}
CC = os.environ.get("CC", "cc")

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "mm.h"

enum { M = 33, N = 48, K = 64 };

int main(int argc, char **argv) {
    static float A[M * K], B[K * N], C[M * N];
    for (int i = 0; i < M * K; ++i) A[i] = (float)((i * 7) % 13 - 6) / 8.0f;
    for (int i = 0; i < K * N; ++i) B[i] = (float)((i * 5) % 11 - 5) / 8.0f;
    for (int i = 0; i < M * N; ++i) C[i] = -12345.0f; /* the kernel must overwrite it */
    matmul(A, B, C);
    double sum = 0.0, weighted = 0.0;
    for (int i = 0; i < M * N; ++i) {
        sum += C[i];
        weighted += (double)C[i] * (double)(i % 7 + 1);
    }
    printf("sum %.17g\nweighted %.17g\nfirst %.9g\nlast %.9g\n", sum, weighted, C[0], C[M * N - 1]);
    if (argc > 1) {
        FILE *f = fopen(argv[1], "wb");
        if (!f || fwrite(C, sizeof C, 1, f) != 1 || fclose(f) != 0) return 2;
    }
    return 0;
}
"""


def driver_inputs() -> tuple[np.ndarray, np.ndarray]:
    """The same inputs the C driver builds, computed independently here."""
    a = (((np.arange(M * K) * 7) % 13 - 6) / 8.0).reshape(M, K).astype(np.float32)
    b = (((np.arange(K * N) * 5) % 11 - 5) / 8.0).reshape(K, N).astype(np.float32)
    return a, b


@pytest.fixture(scope="module")
def aot(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("aot") / "mm"
    paths = lt_mlir.compile_aot(programs.matmul(M, N, K, **SPLIT), str(prefix))
    return prefix, paths


def test_compile_aot_writes_the_files(aot):
    prefix, paths = aot
    assert paths == {"object": f"{prefix}.o", "header": f"{prefix}.h", "shared": f"{prefix}.so"}
    for p in paths.values():
        assert os.path.getsize(p) > 0, p
    with open(paths["object"], "rb") as fh:
        assert fh.read(4) == b"\x7fELF"


def test_header_declares_the_entry_point(aot):
    _, paths = aot
    text = open(paths["header"]).read()
    decl = re.search(r"void\s+matmul\s*\(([^)]*)\)\s*;", text)
    assert decl, text
    params = [" ".join(p.split()) for p in decl.group(1).split(",")]
    assert params == ["const float *arg0", "const float *arg1", "float *arg2"], params
    assert "#include <stdint.h>" in text
    assert re.search(r"#ifndef (\w+)\s+#define \1\b", text), "no include guard"
    assert 'extern "C"' in text
    assert re.search(r"arg0: input f32\[33x64\]", text)
    assert re.search(r"arg1: input f32\[64x48\]", text)
    assert re.search(rf"arg2: output f32\[33x48\] \({M * N * 4} bytes\)", text)


def _bounded(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """|got - A@B| within the float32 summation bound 2 (K + 1) eps |A|@|B|."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 2 * (K + 1) * np.finfo(np.float32).eps * (np.abs(a64) @ np.abs(b64))
    err = np.abs(got - a64 @ b64)
    assert np.all(err <= bound), f"max error {err.max():.3g}, worst excess {(err - bound).max():.3g}"


def test_shared_library_matches_numpy(aot):
    _, paths = aot
    lib = ctypes.CDLL(os.path.abspath(paths["shared"]))
    fn = lib.matmul
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * 3
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    fn(a.ctypes.data, b.ctypes.data, c.ctypes.data)
    _bounded(c, a, b)
    # Same IR, same optimisation pipeline and target as the JIT: same numbers.
    np.testing.assert_array_equal(c, lt_mlir.compile(programs.matmul(M, N, K, **SPLIT))(a, b))

    da, db = driver_inputs()
    c2 = np.full((M, N), np.nan, np.float32)
    fn(da.ctypes.data, db.ctypes.data, c2.ctypes.data)
    np.testing.assert_array_equal(c2, da.astype(np.float64) @ db.astype(np.float64))


@pytest.mark.skipif(shutil.which(CC) is None, reason=f"no C compiler ({CC})")
def test_c_driver_links_the_object(aot, tmp_path):
    prefix, paths = aot
    src = tmp_path / "driver.c"
    src.write_text(DRIVER.replace('"mm.h"', f'"{os.path.basename(paths["header"])}"'))
    exe = tmp_path / "driver"
    build = subprocess.run(
        [CC, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(prefix.parent),
         "-o", str(exe), str(src), paths["object"], "-lm"],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    raw = tmp_path / "c.bin"
    run = subprocess.run([str(exe), str(raw)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr)
    printed = dict(line.split(" ", 1) for line in run.stdout.splitlines())

    a, b = driver_inputs()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    flat = ref.ravel()
    assert float(printed["sum"]) == flat.sum()
    assert float(printed["weighted"]) == (flat * (np.arange(flat.size) % 7 + 1)).sum()
    assert float(printed["first"]) == flat[0] and float(printed["last"]) == flat[-1]
    c = np.fromfile(raw, dtype=np.float32).reshape(M, N)
    np.testing.assert_array_equal(c, ref)


def test_compile_aot_without_shared_library(tmp_path):
    paths = lt_mlir.compile_aot(programs.pointwise_add(16), str(tmp_path / "sub" / "add"), shared=False)
    assert set(paths) == {"object", "header"}
    assert not os.path.exists(tmp_path / "sub" / "add.so")
    assert re.search(r"void\s+add\s*\(\s*const float \*arg0,\s*const float \*arg1,\s*float \*arg2\s*\)\s*;",
                     open(paths["header"]).read())
