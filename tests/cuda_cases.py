"""The GPU test cases: an lt program, a schedule with GPU mappings, inputs
and a NumPy reference.

``tests/test_cuda.py`` uses them three ways:

* on every machine: each case's PTX must assemble with ``ptxas``, and the
  small cases run with the ``cuda-emulated`` target (the same GPU lowering,
  blocks and threads as sequential CPU loops) on guard-paged arrays;
* on a machine with a GPU and torch-mlir: compiled and run on the GPU;
* on a GPU machine without torch-mlir (the lent H100): built elsewhere with
  ``python tests/cuda_cases.py build DIR`` (PTX + JSON per case), then run
  there with ``LT_CUDA_ARTIFACTS=DIR pytest -m gpu tests/test_cuda.py``.

Building needs torch-mlir; inputs and references need only NumPy.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Case:
    name: str
    program: str  # a function of lt_mlir.programs
    args: tuple
    steps: tuple  # pipeline elements applied in order
    inputs: Callable  # rng -> list of arrays
    reference: Callable  # *inputs -> expected output (float64)
    rtol: float = 1e-5
    emulate: bool = True  # small enough for the emulated run in CI
    kwargs: dict = field(default_factory=dict)
    recipe: str = ""  # a function of lt_mlir.recipes applied after the steps
    recipe_kwargs: dict = field(default_factory=dict)

    def text(self) -> str:
        """The lt module after the schedule (needs torch-mlir)."""
        from lt_mlir import Schedule, programs, recipes

        s = Schedule(getattr(programs, self.program)(*self.args, **self.kwargs))
        for step in self.steps:
            s.apply(step)
        if self.recipe:
            getattr(recipes, self.recipe)(s, **self.recipe_kwargs)
        return s.text

    def arrays(self) -> list:
        return self.inputs(np.random.default_rng(sum(map(ord, self.name))))


def _normal(*shapes):
    return lambda rng: [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _uniform(lo, hi, *shapes):
    return lambda rng: [rng.uniform(lo, hi, s).astype(np.float32) for s in shapes]


def _add(a, b):
    return a.astype(np.float64) + b


def _matmul(a, b):
    return a.astype(np.float64) @ b


def _clipped(a, b):
    return np.maximum(a.astype(np.float64)[:, :, None] * b[None], 0).sum(1)


def _softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _attention(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def _map(*pairs) -> tuple:
    return tuple(f"lt-gpu-map{{loop={loop} to={to}}}" for loop, to in pairs)


AUTO = ("lt-gpu-auto",)
# A reduction over a whole row split over blocks x threads x a serial chunk:
# after lt-distribute, L1 is the row, L2 the blocks, L3 the threads.
def _reduce_schedule(chunk: int, threads: int) -> tuple:
    return ("lt-distribute{loop=0}", f"lt-split{{loop=2 factor={chunk}}}", f"lt-split{{loop=2 factor={threads}}}") + _map(
        (1, "block"), (2, "block"), (3, "thread")
    )


CASES = [
    Case("add_1000_auto", "pointwise_add", (1000,), AUTO, _normal(1000, 1000), _add),
    Case("add_1003_tail", "pointwise_add", (1003,), ("lt-split{loop=0 factor=100}",) + _map((0, "block"), (1, "thread")), _normal(1003, 1003), _add),
    Case("add_2p26", "pointwise_add", (2**26,), AUTO, _normal(2**26, 2**26), _add, emulate=False),
    Case("add_2p26_tail", "pointwise_add", (2**26 - 5,), AUTO, _normal(2**26 - 5, 2**26 - 5), _add, emulate=False),
    Case("row_sum_auto", "row_sum", (300, 500), AUTO, _normal((300, 500)), lambda a: a.astype(np.float64).sum(1), rtol=1e-4),
    Case(
        "row_sum_atomic",
        "row_sum",
        (7, 5000),
        ("lt-distribute{loop=0}", "lt-split{loop=2 factor=16}") + _map((1, "block"), (2, "thread")),
        _normal((7, 5000)),
        lambda a: a.astype(np.float64).sum(1),
        rtol=1e-4,
    ),
    Case("col_sum_auto", "col_sum", (500, 700), AUTO, _normal((500, 700)), lambda a: a.astype(np.float64).sum(0), rtol=1e-4),
    Case("sum_100003", "row_sum", (1, 100003), _reduce_schedule(64, 256), _uniform(0, 1, (1, 100003)), lambda a: a.astype(np.float64).sum(1), rtol=1e-4),
    Case("sum_2p26", "row_sum", (1, 2**26), _reduce_schedule(64, 256), _uniform(0, 1, (1, 2**26)), lambda a: a.astype(np.float64).sum(1), rtol=1e-3, emulate=False),
    Case("total_sum_2p26", "total_sum", (256, 2**18), ("lt-split{loop=0 factor=256}",) + _map((0, "block"), (1, "thread")), _uniform(0, 1, (256, 2**18)), lambda a: a.astype(np.float64).sum(), rtol=1e-3, emulate=False),
    Case("total_sum_tail", "total_sum", (64, 4000), ("lt-split{loop=0 factor=256}",) + _map((0, "block"), (1, "thread")), _uniform(0, 1, (64, 4000)), lambda a: a.astype(np.float64).sum(), rtol=1e-4),
    Case("max_atomic", "row_max", (3, 10007), _reduce_schedule(32, 64), _normal((3, 10007)), lambda a: a.astype(np.float64).max(1)),
    Case(
        "prod_atomic",
        "row_prod",
        (4, 300),
        ("lt-distribute{loop=0}", "lt-split{loop=2 factor=10}") + _map((1, "block"), (2, "thread")),
        _uniform(0.99, 1.01, (4, 300)),
        lambda a: a.astype(np.float64).prod(1),
        rtol=1e-4,
    ),
    Case("matmul_auto", "matmul", (128, 96, 64), AUTO, _normal((128, 64), (64, 96)), _matmul, rtol=1e-4),
    Case(
        "matmul_tiled",
        "matmul",
        (100, 200, 64),
        ("lt-split{loop=0 factor=16}", "lt-split{loop=2 factor=32}", "lt-swap{loop=1}")
        + _map((0, "block"), (1, "block"), (2, "thread"), (3, "thread")),
        _normal((100, 64), (64, 200)),
        _matmul,
        rtol=1e-4,
    ),
    Case("clipped_matmul_auto", "matmul", (128, 96, 200), AUTO, _normal((128, 200), (200, 96)), _clipped, rtol=1e-4, kwargs={"clipped": True}),
    Case("softmax_auto", "softmax", (64, 1000), AUTO, _normal((64, 1000)), _softmax, rtol=1e-5),
    # a block a row: thread 0 initialises, then three thread loops with barriers between
    Case("softmax_rows", "softmax", (37, 1000), _map((0, "block"), (1, "thread"), (2, "thread"), (3, "thread")), _normal((37, 1000)), _softmax, rtol=1e-5),
    Case(
        "softmax_rows_tail",
        "softmax",
        (5, 700),
        ("lt-split{loop=1 factor=3}", "lt-split{loop=3 factor=5}") + _map((0, "block"), (1, "thread"), (3, "thread"), (5, "thread")),
        _normal((5, 700)),
        _softmax,
        rtol=1e-5,
    ),
    # side by side, chains of different shapes: the block is 7 x 7 threads;
    # the one-axis chains run on the threads with y = 0 only (found by the fuzzer)
    Case("softmax_mixed_chains", "softmax", (7, 33), ("lt-gpu-auto{threads=7}", "lt-gpu-map{loop=6 to=thread}"), _normal((7, 33)), _softmax, rtol=1e-5),
    Case("serial_row_sum", "row_sum", (16, 100), (), _normal((16, 100)), lambda a: a.astype(np.float64).sum(1), rtol=1e-4),
    # block-shared row max and sum: 256 threads combine with shuffles and a
    # shared slot a warp (the block-wide combine)
    Case("softmax_block_combine", "softmax", (6, 2048), AUTO, _normal((6, 2048)), _softmax, rtol=1e-5),
    # rows of odd length: the thread loops have tails, so no shuffles
    Case("softmax_odd_rows", "softmax", (9, 301), AUTO, _normal((9, 301)), _softmax, rtol=1e-5),
    # 100 threads: the last warp is partial; shared-memory atomics, no shuffles
    Case("row_sum_partial_warp", "row_sum", (5, 1000), ("lt-gpu-auto{threads=100}",), _normal((5, 1000)), lambda a: a.astype(np.float64).sum(1), rtol=1e-4),
    Case("row_max_block_combine", "row_max", (4, 4096), AUTO, _normal((4, 4096)), lambda a: a.astype(np.float64).max(1)),
    # threads over the reduced k inside sequential k steps: C[m, n] moves with
    # the unrolled n, so it must not be kept in one register a thread (found
    # by the fuzzer)
    Case(
        "matmul_k_threads_in_steps",
        "matmul",
        (13, 7, 50),
        ("lt-unroll{loop=1 factor=0}", "lt-cache{loop=0 operand=0}", "lt-distribute{loop=2}", "lt-gpu-auto{threads=7}"),
        _normal((13, 50), (50, 7)),
        _matmul,
        rtol=1e-4,
    ),
    # shared-memory tiles (recipes.gpu_tiled_matmul): k-slices of A and B
    # copied by the block's threads, barriers; tails on M, N and K
    Case("sgemm_shared_tiles", "matmul", (100, 72, 45), (), _normal((100, 45), (45, 72)), _matmul, rtol=1e-4, recipe="gpu_tiled_matmul"),
    Case(
        "sgemm_shared_tiles_64",
        "matmul",
        (130, 200, 70),
        (),
        _normal((130, 70), (70, 200)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 64, "regs": 4, "k_tile": 16},
    ),
    # 128-bit copies (vector=4: a TX x TY x TH block) with tails on M, N
    # and K (sizes not multiples of 4 either: the tails' copies are scalar)
    Case(
        "sgemm_shared_vector",
        "matmul",
        (130, 203, 70),
        (),
        _normal((130, 70), (70, 203)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 64, "regs": 4, "k_tile": 16, "vector": 4},
    ),
    Case(
        "sgemm_shared_vector_128",
        "matmul",
        (260, 140, 50),
        (),
        _normal((260, 50), (50, 140)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 128, "regs": 8, "k_tile": 16, "vector": 4},
    ),
    # m's blocks in groups of 2 (three block loops), a partial last group
    Case(
        "sgemm_shared_grouped",
        "matmul",
        (300, 140, 50),
        (),
        _normal((300, 50), (50, 140)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 64, "regs": 4, "k_tile": 16, "vector": 4, "k_unroll": 4, "group": 2},
    ),
    # k-slices of 2 x TH (B's copy in two passes over k), K not a multiple
    Case(
        "sgemm_shared_k_passes",
        "matmul",
        (70, 130, 75),
        (),
        _normal((70, 75), (75, 130)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 64, "regs": 4, "k_tile": 32, "vector": 4, "k_unroll": 4},
    ),
    # B's slice laid out padded (lt-pad: 4 floats after every 32 of a row),
    # the documented 128 x 128 schedule's shape; tails on M, N (not a
    # multiple of 4: scalar copies) and K
    Case(
        "sgemm_shared_padded",
        "matmul",
        (260, 203, 70),
        (),
        _normal((260, 70), (70, 203)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 128, "regs": 8, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 2, "pad": 4},
    ),
    # double-buffered k-slices (lt-double-buffer: cp.async into two stages),
    # 16-byte copies in full blocks, element copies in the clipped ones
    # (N = 203); K a multiple of the slice; and the same asking for 2 blocks
    # an SM (lt-min-blocks: 128 registers, a little spilled)
    *[
        Case(
            name,
            "matmul",
            (260, 203, 96),
            (),
            _normal((260, 96), (96, 203)),
            _matmul,
            rtol=1e-4,
            recipe="gpu_tiled_matmul",
            recipe_kwargs={"tile": 128, "regs": 8, "k_tile": 16, "vector": 4, "k_unroll": 4, "group": 2, "pad": 4, "double_buffer": True, **extra},
        )
        for name, extra in (("sgemm_double_buffered", {}), ("sgemm_double_buffered_min_blocks", {"min_blocks": 2}))
    ],
    Case(
        "sgemm_double_buffered_64",
        "matmul",
        (130, 200, 64),
        (),
        _normal((130, 64), (64, 200)),
        _matmul,
        rtol=1e-4,
        recipe="gpu_tiled_matmul",
        recipe_kwargs={"tile": 64, "regs": 4, "k_tile": 32, "vector": 4, "k_unroll": 4, "double_buffer": True},
    ),
    # FlashAttention by passes (recipes.flash_attention: lt-online-softmax on
    # tiles of keys, a query row a thread): rows and keys with tails
    # (100 rows in blocks of 32, 70 keys in tiles of 16), and 3 heads on blocks
    Case("flash_attention", "attention", (100, 70, 16, 24), (), _normal((100, 16), (70, 16), (70, 24)), _attention,
         rtol=1e-4, recipe="flash_attention", recipe_kwargs={"tile": 16, "gpu_threads": 32}),
    Case("flash_attention_heads", "attention", (40, 37, 8, 8), (), _normal((3, 40, 8), (3, 37, 8), (3, 37, 8)), _attention,
         rtol=1e-4, kwargs={"heads": 3}, recipe="flash_attention", recipe_kwargs={"tile": 8, "gpu_threads": 16}),
    # a tile's keys unrolled by 4 (70 keys: the last tile of 6 a tail of the unrolled loop), and fully (tiles of 8)
    Case("flash_attention_unrolled", "attention", (100, 70, 16, 24), (), _normal((100, 16), (70, 16), (70, 24)), _attention,
         rtol=1e-4, recipe="flash_attention", recipe_kwargs={"tile": 16, "gpu_threads": 32, "key_unroll": 4}),
    Case("flash_attention_heads_unrolled", "attention", (40, 37, 8, 8), (), _normal((3, 40, 8), (3, 37, 8), (3, 37, 8)), _attention,
         rtol=1e-4, kwargs={"heads": 3}, recipe="flash_attention", recipe_kwargs={"tile": 8, "gpu_threads": 16, "key_unroll": 8}),
    # the block's rows through shared tiles of K and V (shared=True): the rows' state a thread's own registers
    Case("flash_attention_shared", "attention", (100, 70, 16, 24), (), _normal((100, 16), (70, 16), (70, 24)), _attention,
         rtol=1e-4, recipe="flash_attention", recipe_kwargs={"tile": 16, "gpu_threads": 32, "shared": True}),
    Case("flash_attention_shared_heads", "attention", (40, 37, 8, 8), (), _normal((3, 40, 8), (3, 37, 8), (3, 37, 8)), _attention,
         rtol=1e-4, kwargs={"heads": 3}, recipe="flash_attention", recipe_kwargs={"tile": 8, "gpu_threads": 16, "key_unroll": 4, "shared": True}),
    # the softmax, then @ V (lt-factor's scratch over e, expanded over the block's rows): shared tiles too
    Case("flash_attention_shared_normalised", "attention", (40, 37, 8, 8), (), _normal((3, 40, 8), (3, 37, 8), (3, 37, 8)), _attention,
         rtol=1e-4, kwargs={"heads": 3, "normalised": True}, recipe="flash_attention",
         recipe_kwargs={"tile": 8, "gpu_threads": 16, "shared": True}),
]
BY_NAME = {c.name: c for c in CASES}


def check(case: Case, got) -> None:
    """Assert ``got`` matches the reference within the case's tolerance."""
    ref = case.reference(*case.arrays())
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape, f"{case.name}: shape {got.shape}, expected {ref.shape}"
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(got, ref, rtol=case.rtol, atol=case.rtol * scale, err_msg=case.name)


# cases also built with the GPU profile's instrumentation (tests/test_cuda_device.py's run_profiled)
PROFILED = ("sgemm_shared_tiles_64", "softmax_auto", "flash_attention_shared")


def build(directory: str, arch: str = "sm_90") -> list[str]:
    """Compile every case to ``DIR/<name>.ptx`` + ``.json``, and the
    ``PROFILED`` ones instrumented too: ``DIR/<name>.profiled.ptx`` +
    ``.json`` and the counter layout, ``DIR/<name>.layout.json``."""
    import lt_mlir
    from lt_mlir.profile import save_instrumented_gpu

    os.makedirs(directory, exist_ok=True)
    written = []
    for case in CASES:
        paths = lt_mlir.compile_aot(case.text(), os.path.join(directory, case.name), target="cuda", arch=arch)
        written.append(paths["json"])
    for name in PROFILED:
        save_instrumented_gpu(BY_NAME[name].text(), os.path.join(directory, name), arch)
        written += [os.path.join(directory, f"{name}.profiled.json"), os.path.join(directory, f"{name}.layout.json")]
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "build":
        sys.exit("usage: python tests/cuda_cases.py build DIR")
    for path in build(sys.argv[2]):
        print(path)
