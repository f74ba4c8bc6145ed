"""lt-shrink-buffers, lt-cache and lt-uncache: the IR they make and the
numbers it computes.

The blog's clipped matmul with a scratch buffer ``T[m, n]`` (33x48, k = 64):
lt-shrink-buffers must shrink T to the 8x32 tile live under
``for m in 4 r 1`` / ``for n in 1 r 16`` and still compute NumPy's numbers,
tail iterations (m = 32, n in 32..47) included.  lt-cache copies input tiles
of matmul and conv1d programs (with tails) into local buffers.  Kernels are
compared with float64 NumPy references, and run once more on guard-paged
arrays (``lt_mlir.testing``) in a child process, since an out-of-bounds
access there kills the process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.dialect.loop_tree import preorder_loops
from lt_mlir.errors import PassError
from lt_mlir.mlir import ir
from lt_mlir.passes.registry import run_pipeline

REPO = os.path.dirname(os.path.dirname(os.path.abspath(lt_mlir.__file__)))

# ------------------------------------------------------------------ programs


def scratch_matmul(M: int = 33, N: int = 48, K: int = 64, m_block: int | None = 8, n_block: int | None = 32) -> str:
    """The blog's clipped matmul through a scratch buffer T over [m, n]:

        for m in 4 r 1 { for n in 1 r 16 {
          for m' in 8 { for n' in 32 { T[m, n] = 0 } }
          for k in 64 { for m' in 8 { for n' in 32 { T[m, n] += max(A[m, k] * B[k, n], 0) } } }
          for m' in 8 { for n' in 32 { C[m, n] = T[m, n] } } } }

    ``m_block``/``n_block`` None: no outer level of that dim."""
    nest = programs.Nest()
    a, b, c = f"memref<{M}x{K}xf32>", f"memref<{K}x{N}xf32>", f"memref<{M}x{N}xf32>"
    t = c

    def dim(d):
        return f'%{d} = "lt.dim"() {{dim = "{d}"}} : () -> index'

    def inner(d, extent, block, body):
        return nest.loop(d, block or extent, 0, body)

    def tile(body_n, before_n=()):
        return inner("m", M, m_block, [dim("m"), *before_n, *inner("n", N, n_block, [dim("n"), *body_n])])

    zero = tile([f"memref.store %zero, %T[%m, %n] : {t}"])
    update = nest.loop(
        "k",
        K,
        0,
        [dim("k")]
        + tile(
            [
                f"%b = memref.load %B[%k, %n] : {b}",
                "%p = arith.mulf %a, %b : f32",
                "%q = arith.maximumf %p, %zero : f32",
                f'"lt.reduce"(%q, %T, %m, %n) {{kind = "add"}} : (f32, {t}, index, index) -> ()',
            ],
            [f"%a = memref.load %A[%m, %k] : {a}"],
        ),
    )
    copy = tile([f"%v = memref.load %T[%m, %n] : {t}", f"memref.store %v, %C[%m, %n] : {c}"])
    body = zero + update + copy
    if n_block:
        body = nest.loop("n", N // n_block, N % n_block, body)
    if m_block:
        body = nest.loop("m", M // m_block, M % m_block, body)
    lines = [
        f'func.func @clipped_matmul(%A: {a} {{lt.name = "A"}}, %B: {b} {{lt.name = "B"}}, %C: {c} {{lt.name = "C"}}) {{',
        "  %zero = arith.constant 0.0 : f32",
        f'  %T = "lt.alloc"() {{dims = ["m", "n"]}} : () -> {t}',
        *["  " + line for line in body],
        "  return",
        "}",
    ]
    return "\n".join(lines) + "\n"


def clipped_reference(a, b):
    prod = a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None, :, :]
    s = np.maximum(prod, 0.0).sum(axis=1)
    return s, s, a.shape[1]


def matmul_reference(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return a @ b, np.abs(a) @ np.abs(b), a.shape[1]


def conv_reference(x, w):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n = len(x) - len(w) + 1
    ref, scale = np.zeros(n), np.zeros(n)
    for j in range(len(w)):
        ref += x[j : j + n] * w[j]
        scale += np.abs(x[j : j + n] * w[j])
    return ref, scale, len(w)


def assert_close(got, ref, scale, length, what=""):
    """A float32 sum of ``length`` terms in any order: within
    ``2 (length + 1) eps`` of the exact value, relative to sum |terms|."""
    bound = 2.0 * (length + 1) * np.finfo(np.float32).eps * scale + np.finfo(np.float32).tiny
    err = np.abs(got.astype(np.float64) - ref)
    bad = ~(err <= bound)
    assert not bad.any(), f"{what}: {np.count_nonzero(bad)} elements off, first at {np.argwhere(bad)[0].tolist()}"


def transformed(text: str, pipeline: str | None):
    module = lt_mlir.parse_module(text)
    remarks = run_pipeline(module, pipeline) if pipeline else []
    module.operation.verify()
    return module, remarks


def execute(module_or_text, inputs):
    kernel = lt_mlir.compile(module_or_text)
    outs = [np.full(s.shape, np.nan, s.dtype) for s in kernel.outputs]
    kernel(*inputs, *outs)
    return outs


def alloc_types(module) -> list[str]:
    found = []
    module.operation.walk(
        lambda o: (found.append(str(o.results[0].type)) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1]
    )
    return found


def uniform(rng, shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


# ------------------------------------------------------- lt-shrink-buffers


def test_blog_scratch_shrinks_to_the_8x32_tile():
    text = scratch_matmul()
    assert "for m in 4 r 1 : L0\n for n in 1 r 16 : L1\n  for m' in 8 : L2\n   for n' in 32 : L3" in lt_mlir.loop_tree(text)
    module, remarks = transformed(text, "builtin.module(lt-shrink-buffers)")
    assert remarks == ["lt-shrink-buffers: %0 over [m, n]: 1584 -> 256 elements (6336 -> 1024 bytes)"]
    assert alloc_types(module) == ["memref<8x32xf32>"]
    assert "%0 <- alloc f32[m, n] (256 elements)" in lt_mlir.loop_tree(module)


@pytest.mark.parametrize(
    "m_block, n_block, shrunk",
    [(8, 32, "8x32"), (8, None, "8x48"), (None, 32, "33x32"), (5, 7, "5x7"), (None, None, None)],
)
def test_shrunk_scratch_computes_numpys_numbers(m_block, n_block, shrunk):
    text = scratch_matmul(m_block=m_block, n_block=n_block)
    module, remarks = transformed(text, "builtin.module(lt-shrink-buffers)")
    if shrunk is None:  # three sibling nests: no common enclosing loop
        assert remarks == ["lt-shrink-buffers: no lt.alloc could shrink"]
        assert alloc_types(module) == ["memref<33x48xf32>"]
    else:
        assert alloc_types(module) == [f"memref<{shrunk}xf32>"]
    rng = np.random.default_rng(7)
    a, b = uniform(rng, (33, 64)), uniform(rng, (64, 48))
    (before,) = execute(text, [a, b])
    (after,) = execute(module, [a, b])
    assert_close(after, *clipped_reference(a, b), what="shrunk")
    # Same sums in the same order (max between mul and add: nothing to contract).
    np.testing.assert_array_equal(after, before)
    assert after[32].any() and after[:, 32:].any()  # the tail iterations wrote their rows/columns


def test_shrink_keeps_an_axis_not_indexed_by_its_dim():
    text = scratch_matmul().replace(
        "%v = memref.load %T[%m, %n]", "%c0 = arith.constant 0 : index\n%v = memref.load %T[%m, %c0]"
    )
    module, remarks = transformed(text, "builtin.module(lt-shrink-buffers)")
    assert alloc_types(module) == ["memref<8x48xf32>"]
    assert remarks == ["lt-shrink-buffers: %0 over [m, n]: 1584 -> 384 elements (6336 -> 1536 bytes)"]


def test_shrink_gives_each_thread_of_a_parallel_loop_its_tile(monkeypatch):
    """A scratch buffer whose accesses all lie in a parallel `for m` moves
    into its body, one tile a thread, shrunk along m as well as n (not one
    33x32 tile the threads share); on two threads the numbers stay NumPy's."""
    monkeypatch.setenv("LT_PARALLEL_MIN_WORK", "0")  # threads even for this small loop
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    module, remarks = transformed(scratch_matmul(), "builtin.module(lt-parallel{loop=0}, lt-shrink-buffers)")
    assert remarks == ["lt-shrink-buffers: %0 over [m, n]: 1584 -> 256 elements (6336 -> 1024 bytes), one per thread of the parallel loop"]
    assert alloc_types(module) == ["memref<8x32xf32>"]
    (loop,) = [op for op in module.body.operations[0].regions[0].blocks[0].operations if op.operation.name == "lt.loop"]
    assert "lt.parallel" in loop.operation.attributes
    assert "lt.alloc" in [o.operation.name for o in loop.operation.regions[0].blocks[0].operations]  # in the parallel body
    rng = np.random.default_rng(8)
    a, b = uniform(rng, (33, 64)), uniform(rng, (64, 48))
    for _ in range(3):
        (got,) = execute(module, [a, b])
        assert_close(got, *clipped_reference(a, b), what="parallel m, a tile a thread")


def test_shrink_without_allocs_says_so():
    module, remarks = transformed(programs.matmul(33, 48, 64, [8], [32]), "builtin.module(lt-shrink-buffers)")
    assert remarks == ["lt-shrink-buffers: no lt.alloc could shrink"]


# ---------------------------------------------------------------- lt-cache

MATMUL = programs.matmul(33, 48, 64, m_blocks=[8], n_blocks=[32], k_blocks=[16, 4])
CONV = programs.conv1d(33, 5, [8])
CONV_DEEP = programs.conv1d(100, 7, [8, 3])  # levels 12 r 4, 2 r 2, 3

CACHE_CASES = {
    # id: (program, pipeline, local buffer types)
    "matmul-A@L0": (MATMUL, "lt-cache{loop=0 operand=0}", ["memref<8x64xf32>"]),
    "matmul-B@L2": (MATMUL, "lt-cache{loop=2 operand=1}", ["memref<64x32xf32>"]),
    "matmul-A@L3": (MATMUL, "lt-cache{loop=3 operand=0}", ["memref<64xf32>"]),
    "matmul-A,B@L0": (MATMUL, "lt-cache{loop=0 operand=0}, lt-cache{loop=0 operand=1}", ["memref<64x48xf32>", "memref<8x64xf32>"]),
    "conv-X@L0": (CONV, "lt-cache{loop=0 operand=0}", ["memref<12xf32>"]),
    "conv-W@L0": (CONV, "lt-cache{loop=0 operand=1}", ["memref<5xf32>"]),
    "conv-X@L2": (CONV, "lt-cache{loop=2 operand=0}", ["memref<f32>"]),
    "conv-deep-X@L1": (CONV_DEEP, "lt-cache{loop=1 operand=0}", ["memref<9xf32>"]),
}


def _inputs(program: str, rng):
    if program is CONV:
        return [uniform(rng, 37), uniform(rng, 5)], conv_reference
    if program is CONV_DEEP:
        return [uniform(rng, 106), uniform(rng, 7)], conv_reference
    return [uniform(rng, (33, 64)), uniform(rng, (64, 48))], matmul_reference


@pytest.mark.parametrize("case", list(CACHE_CASES))
def test_cache_copies_the_tile_and_keeps_the_numbers(case):
    program, pipeline, types = CACHE_CASES[case]
    module, remarks = transformed(program, f"builtin.module({pipeline})")
    assert alloc_types(module) == types
    assert all(r.startswith("lt-cache: ") for r in remarks) and remarks
    inputs, reference = _inputs(program, np.random.default_rng(3))
    (got,) = execute(module, inputs)
    assert_close(got, *reference(*inputs), what=case)


@pytest.mark.parametrize("case", ["matmul-A@L0", "matmul-B@L2", "conv-X@L0", "conv-deep-X@L1"])
def test_uncache_restores_the_program(case):
    program, pipeline, _ = CACHE_CASES[case]
    loop = pipeline.split("loop=")[1].split()[0]
    module, remarks = transformed(program, f"builtin.module({pipeline}, lt-uncache{{loop={loop}}})")
    assert remarks[-1].startswith("lt-uncache: removed the cache of ")
    assert str(module) == str(lt_mlir.parse_module(program))


def test_cache_tail_iteration_copies_a_prefix():
    """m = 4 r 1 over 8: the copy nest is one more inner level of L0, so in
    the tail iteration it copies the one remaining row."""
    module, _ = transformed(MATMUL, "builtin.module(lt-cache{loop=0 operand=0})")
    tree = lt_mlir.loop_tree(module)
    assert tree.startswith("for m in 4 r 1 : L0\n %0 <- alloc f32[m, k] (512 elements)\n for m' in 8 : L1\n  for k in 64 : L2\n")
    rng = np.random.default_rng(5)
    a, b = uniform(rng, (33, 64)), uniform(rng, (64, 48))
    (got,) = execute(module, [a, b])
    assert_close(got[32:], *(x[32:] if isinstance(x, np.ndarray) else x for x in matmul_reference(a, b)), what="tail row")


@pytest.mark.parametrize(
    "program, pipeline, message",
    [
        (MATMUL, "lt-cache{loop=0 operand=2}", r"-:\d+:\d+: error: lt-cache: C is written inside L0"),
        (MATMUL, "lt-cache{loop=0 operand=3}", r"-:\d+:\d+: error: lt-cache: operand 3 is not an argument of @matmul \(it has 3\)"),
        (MATMUL, "lt-cache{loop=99 operand=0}", r"error: lt-cache: no loop L99"),
        (scratch_matmul(), "lt-cache{loop=2 operand=0}", r"-:\d+:\d+: error: lt-cache: A is not read inside L2 .for m'? in 8."),
        (
            CONV.replace("%ij = arith.addi %i, %j", "%ij = arith.muli %i, %j"),
            "lt-cache{loop=0 operand=0}",
            r"error: lt-cache: index 0 of a read of X is not a sum of lt.dim values",
        ),
        (MATMUL, "lt-uncache{loop=0}", r"error: lt-uncache: L0 .for m in 4 r 1. has no cache \(made by lt-cache\)"),
        (
            MATMUL,
            "lt-gpu-map{loop=0 to=block}, lt-cache{loop=1 operand=0}",
            r"error: lt-cache: the enclosing .for m in 4 r 1. is annotated 'gpu': its iterations run at the same time",
        ),
    ],
    ids=["written", "operand-range", "loop-range", "not-read", "not-rebaseable", "uncache-none", "gpu"],
)
def test_refusals_are_located_and_change_nothing(program, pipeline, message):
    *setup, last = [p.strip() for p in pipeline.split(", ")]
    module = lt_mlir.parse_module(program)
    if setup:
        run_pipeline(module, f"builtin.module({', '.join(setup)})")
    before = str(module)
    with pytest.raises(PassError, match=message):
        run_pipeline(module, f"builtin.module({last})")
    assert str(module) == before


@pytest.mark.parametrize(
    "pipeline",
    [
        "lt-parallel{loop=0}, lt-cache{loop=1 operand=0}",  # a tile of A in each m iteration, filled per m'
        "lt-cache{loop=0 operand=1}, lt-parallel{loop=0}",  # B cached at the parallel loop itself
        "lt-cache{loop=2 operand=1}, lt-parallel{loop=0}",  # inside it, two levels down
    ],
    ids=["cache-under-parallel", "cache-at-parallel", "cache-deeper"],
)
def test_cache_in_a_parallel_loop_is_private_to_each_iteration(pipeline):
    """A local buffer made inside a parallel loop is allocated in that loop's
    body (one an iteration), so threads never share it; the result, tails
    included, is the matmul's."""
    module, _ = transformed(MATMUL, f"builtin.module({pipeline})")
    lowered = lt_mlir.parse_module(str(module))
    run_pipeline(lowered, "builtin.module(lower-lt-to-scf)")
    text = str(lowered)
    body = text[text.index("scf.parallel"):]
    before = text[: text.index("scf.parallel")]
    assert "memref.alloca" in body
    # outside the parallel loop only at the function's entry (the tail
    # iteration's buffer, run after it): never inside a loop
    assert "memref.alloca" not in before[before.find("scf.for"):] if "scf.for" in before else True
    rng = np.random.default_rng(11)
    a, b = uniform(rng, (33, 64)), uniform(rng, (64, 48))
    (got,) = execute(module, [a, b])
    assert_close(got, *matmul_reference(a, b), what=pipeline)


# ------------------------------------------------------------ guard pages

def test_transformed_kernels_stay_inside_guarded_arrays(tmp_path):
    rng = np.random.default_rng(11)
    arrays, cases, refs = {}, [], {}
    shrunk, _ = transformed(scratch_matmul(), "builtin.module(lt-shrink-buffers)")
    a, b = uniform(rng, (33, 64)), uniform(rng, (64, 48))
    arrays.update(A=a, B=b)
    cases.append({"key": "blog-shrunk", "text": str(shrunk), "inputs": ["A", "B"]})
    refs["blog-shrunk"] = clipped_reference(a, b)
    # Shrinking after caching: the local copies already are tiles.
    both, _ = transformed(scratch_matmul(), "builtin.module(lt-cache{loop=1 operand=1}, lt-shrink-buffers)")
    cases.append({"key": "blog-cached-shrunk", "text": str(both), "inputs": ["A", "B"]})
    refs["blog-cached-shrunk"] = clipped_reference(a, b)
    for case in ("matmul-A,B@L0", "matmul-B@L2", "conv-X@L0", "conv-deep-X@L1"):
        program, pipeline, _ = CACHE_CASES[case]
        module, _ = transformed(program, f"builtin.module({pipeline})")
        inputs, reference = _inputs(program, rng)
        names = [f"{case}:{i}" for i in range(len(inputs))]
        arrays.update(zip(names, inputs))
        cases.append({"key": case, "text": str(module), "inputs": names})
        refs[case] = reference(*inputs)
    np.savez(tmp_path / "inputs.npz", **arrays)
    job = {"inputs": str(tmp_path / "inputs.npz"), "outputs": str(tmp_path / "outputs.npz"), "cases": cases}
    (tmp_path / "job.json").write_text(json.dumps(job))
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-m", "lt_mlir.testing", str(tmp_path / "job.json")],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )
    if proc.returncode != 0:
        runs = [ln for ln in proc.stdout.splitlines() if ln.startswith("RUN ")]
        why = f"signal {signal.Signals(-proc.returncode).name}" if proc.returncode < 0 else f"status {proc.returncode}"
        pytest.fail(f"child died ({why}) in {runs[-1] if runs else 'compilation'}\n{proc.stderr[-2000:]}")
    with np.load(tmp_path / "outputs.npz") as out:
        for case in cases:
            for side in ("end", "start"):
                assert_close(out[f"{case['key']}_{side}_0"], *refs[case["key"]], what=f"{case['key']} ({side})")


def test_blog_loop_numbers_for_the_cases_above():
    """The L-numbers the cases use point at the loops they mean."""
    def label(text, i):
        loop = preorder_loops(lt_mlir.parse_module(text).operation)[i]
        return f"{ir.StringAttr(loop.attributes['dim']).value} {ir.IntegerAttr(loop.attributes['size']).value}"

    assert label(MATMUL, 0) == "m 4" and label(MATMUL, 2) == "n 1" and label(MATMUL, 3) == "n 32"
    assert label(CONV, 0) == "i 4" and label(CONV, 2) == "j 5" and label(CONV_DEEP, 1) == "i 2"
    assert label(scratch_matmul(), 1) == "n 1" and label(scratch_matmul(), 2) == "m 8"
