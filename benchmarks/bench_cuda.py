"""lt_mlir on an NVIDIA GPU against torch, in one process, on the same inputs.

1. Pointwise add of 2^26 fp32 (lt-gpu-auto: 4 neighbouring elements a
   thread, 128-bit accesses; and one element a thread), as bandwidth
   against ``torch.add(a, b, out=c)``.  Target: >= 90%.
2. Sum of 2^26 fp32 (viewed as 256 x 2^18: a thread a column, coalesced,
   partial sums combined across the warp, one atomic a warp), as bandwidth
   against ``torch.sum``.  Target: >= 80%.
3. Clipped matmul 1024^3, ``C = sum_k max(A[m,k] * B[k,n], 0)``, register
   tiled (blocks of 16 x 16 threads, a 4 x 4 tile of C a thread; and
   ``recipes.gpu_tiled_matmul`` with shared-memory k-slices), against
   torch's materialised ``clamp(A[:,:,None] * B[None], min=0).sum(1)``.
   Target: >= 30x torch and >= 2x the Triton peer.
4. SGEMM 4096^3 fp32 as a fraction of cuBLAS (torch.matmul with TF32 off):
   registers only (8 x 8 a thread), and ``recipes.gpu_tiled_matmul``:
   ``sgemm_4096_shared`` 64 x 64 blocks with scalar copies, and the
   documented schedule ``sgemm_4096``: 128 x 128 blocks of 16 x 16 threads,
   8 x 8 registers a thread kept across the k-slices, k-slices of 32
   copied with 128-bit loads, k' unrolled by 4, m's blocks in groups of 8.
   Target: >= 0.7x cuBLAS.  Also ``sgemm_4096_pad``: B's slice laid out
   with 4 floats after every 32 (``lt-pad``: no bank conflicts in the
   compute's 128-bit reads), and ``sgemm_4096_double``: k-slices of 16
   double-buffered (``lt-double-buffer``: the next slice's ``cp.async``
   copies in flight during this one's compute).
4b. SGEMM 1024^3 (64 x 64 blocks of 16 x 16 threads: 256 blocks for 132
   SMs; and the 128 x 128 schedule, 64 blocks) and M x N x K = 4096 x 1024
   x 4096, against cuBLAS.  Targets (issue 31): >= 0.9x at 4096^3, >= 0.8x
   at 1024^3 and 4096 x 1024 x 4096.
5. Softmax, row sum and row max of 4096 x 4096 fp32 rows (lt-gpu-auto: a
   block a row, its loops side by side on the block's threads, each read
   thread-strided with 128-bit accesses, the row max and sum in shared
   memory, each thread's partial in a register, combined with warp
   shuffles and across warps in shared memory) against ``torch.softmax``,
   ``torch.sum(x, 1)``, ``torch.amax(x, 1)``.  Target: >= 0.9x torch.
6. Attention, softmax(Q K^T / sqrt(d)) V over batch x heads, fp32:
   ``recipes.flash_attention`` (``lt-online-softmax`` on tiles of 32 keys,
   no n x n matrix stored, a query row a thread, the block's 64 rows
   stepping through tiles of K and V in shared memory at d 64) against torch's
   ``scaled_dot_product_attention`` (the faster of its math and
   memory-efficient backends).  Target (issue 31): >= 1.0x torch.  No
   Triton peer yet (the tutorial's fused attention is written for fp16).
7. The per-loop profile (``lt-opt --profile --target cuda``) of ``PROFILED``
   kernels from their instrumented builds: the annotated loop tree, and
   the instrumented time against the plain one (the overhead), the two
   builds' results compared first.

The last lines printed are the summary table (``HEADLINE``: one kernel a
workload).

Every workload also runs its Triton peer (``triton_peers.py``, written as
Triton's tutorials write them) when Triton is installed: ``triton_ms`` and
``lt_over_triton`` (the peer's time over lt_mlir's: above 1 is faster).

The machine that runs the GPU need not have torch-mlir: compile where it is,
run where the GPU is::

    python benchmarks/bench_cuda.py build .gpu-artifacts   # PTX + JSON per kernel
    python benchmarks/bench_cuda.py run .gpu-artifacts     # needs torch, cuda-python
    python benchmarks/bench_cuda.py                        # both, on one machine

Times are medians of CUDA-event timings after warm-up; every lt kernel's
result is checked against torch's before it is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

ADD_N = 2**26
SUM_ROWS, SUM_COLS = 256, 2**18  # 2^26 elements
CLIP_N = 1024
GEMM_N = 4096
SOFTMAX_N = 4096
RECT = (4096, 1024, 4096)  # M, N, K of the non-square SGEMM
ATTENTION = ((16, 1024, 64), (8, 4096, 64), (16, 1024, 128))  # (batch x heads, sequence, head dim)
# (threads a block, keys a tile, key_unroll, K and V tiles in shared memory) besides the documented (64, 32, 0, d <= 64)
ATTENTION_VARIANTS = ((64, 32, 0, False), (64, 32, 4, False), (32, 32, 0, False), (64, 32, 4, True), (64, 16, 16, True), (32, 32, 0, True),
                      (128, 32, 0, True), (64, 64, 0, True))  # (the last two: not yet run on a device)


def _map(*pairs) -> list:
    return [f"lt-gpu-map{{loop={loop} to={to}}}" for loop, to in pairs]


def tiled_matmul_steps(tile: int, threads: int = 16) -> list:
    """m and n each as blocks x ``threads`` threads x ``tile`` (unrolled),
    k between the threads and the tile: a tile x tile block of C in
    registers a thread; C's initialisation mapped by lt-gpu-auto."""
    return (
        ["lt-distribute{loop=1}", "lt-distribute{loop=0}"]
        + [f"lt-split{{loop=2 factor={tile}}}", f"lt-split{{loop=2 factor={threads}}}"]
        + [f"lt-split{{loop=5 factor={tile}}}", f"lt-split{{loop=5 factor={threads}}}"]
        + ["lt-swap{loop=4}", "lt-swap{loop=3}", "lt-swap{loop=5}", "lt-swap{loop=7}", "lt-swap{loop=6}"]
        + _map((2, "block"), (3, "block"), (4, "thread"), (5, "thread"))
        + ["lt-unroll{loop=7 factor=0}", "lt-unroll{loop=8 factor=0}", "lt-gpu-auto"]
    )


# name -> (program, args, kwargs, schedule)
KERNELS = {
    "add_2p26": ("pointwise_add", (ADD_N,), {}, ["lt-gpu-auto"]),  # 4 elements (one 128-bit access) a thread
    "add_2p26_x1": ("pointwise_add", (ADD_N,), {}, ["lt-split{loop=0 factor=256}"] + _map((0, "block"), (1, "thread"))),
    "sum_2p26": ("total_sum", (SUM_ROWS, SUM_COLS), {}, ["lt-split{loop=0 factor=256}"] + _map((0, "block"), (1, "thread"))),
    "clipped_1024_t4": ("matmul", (CLIP_N, CLIP_N, CLIP_N), {"clipped": True}, tiled_matmul_steps(4)),
    "clipped_1024_auto": ("matmul", (CLIP_N, CLIP_N, CLIP_N), {"clipped": True}, ["lt-gpu-auto"]),
    "clipped_1024_shared": ("matmul", (CLIP_N, CLIP_N, CLIP_N), {"clipped": True}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 16}),
    "sgemm_4096_t8": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, tiled_matmul_steps(8)),
    # shared-memory k-slices of A and B, 16 x 16 threads of 4 x 4 registers (scalar copies)
    "sgemm_4096_shared": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 16}),
    "sgemm_4096_vector": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 16, "vector": 4}),
    "sgemm_4096_k16": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 16, "vector": 4, "k_unroll": 4, "group": 8}),
    # the documented schedule (recipes.gpu_tiled_matmul, README "GPU")
    "sgemm_4096": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8}),
    # + B's slice padded (lt-pad: no shared-memory bank conflicts)
    "sgemm_4096_pad": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8, "pad": 4}),
    # k-slices of 16 double-buffered (lt-double-buffer: cp.async into two stages; 2 x 17 KiB)
    "sgemm_4096_double": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 16, "vector": 4, "k_unroll": 4, "group": 8, "pad": 4, "double_buffer": True}),
    # the same asking for 2 blocks an SM (lt-min-blocks: 128 registers)
    "sgemm_4096_double2": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 16, "vector": 4, "k_unroll": 4, "group": 8, "pad": 4, "double_buffer": True, "min_blocks": 2}),
    # 64 x 64 tiles double-buffered (k-slices of 32: 2 x 16 KiB)
    "sgemm_4096_double64": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8, "double_buffer": True}),
    "sgemm_4096_64": ("matmul", (GEMM_N, GEMM_N, GEMM_N), {}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8}),
    # 1024^3: 128 x 128 blocks are 64, half the H100's 132 SMs; 64 x 64 blocks (16 x 16 threads of 4 x 4) are 256
    "sgemm_1024": ("matmul", (1024, 1024, 1024), {}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8}),
    "sgemm_1024_double": ("matmul", (1024, 1024, 1024), {}, {"recipe": "gpu_tiled_matmul", "tile": 64, "regs": 4, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8, "double_buffer": True}),
    "sgemm_1024_128": ("matmul", (1024, 1024, 1024), {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8, "pad": 4}),
    # M x N x K = 4096 x 1024 x 4096: 256 blocks of 128 x 128
    "sgemm_4096x1024": ("matmul", RECT, {}, {"recipe": "gpu_tiled_matmul", "tile": 128, "regs": 8, "k_tile": 32, "vector": 4, "k_unroll": 4, "group": 8, "pad": 4}),
    # FlashAttention by passes (recipes.flash_attention): lt-online-softmax on tiles of 32 keys, blocks of
    # 64 query rows (a row a thread, heads on blocks) stepping through tiles of K and V in shared memory
    # (shared=True; at d 128 a thread's query and output rows would pass the registers: without), fp32
    **{f"attention_{n}_d{d}": ("attention", (n, n, d, d), {"heads": h}, {"recipe": "flash_attention", "tile": 32, "gpu_threads": 64, "shared": d <= 64})
       for (h, n, d) in ATTENTION},
    # written as the softmax, then @ V (lt-factor takes the division out first): the same kernel
    **{f"attention_{n}_d{d}_normalised": ("attention", (n, n, d, d), {"heads": h, "normalised": True},
                                          {"recipe": "flash_attention", "tile": 32, "gpu_threads": 64, "shared": True})
       for (h, n, d) in ATTENTION if d <= 64},
    # variants: blocks of b threads, tiles of t keys, their loops unrolled by u (key_unroll), _s: shared tiles
    **{f"attention_{n}_d{d}_b{b}_t{t}_u{u}{'_s' if sh else ''}": (
        "attention", (n, n, d, d), {"heads": h}, {"recipe": "flash_attention", "tile": t, "gpu_threads": b, "key_unroll": u, "shared": sh})
       for (h, n, d) in ATTENTION for (b, t, u, sh) in ATTENTION_VARIANTS if not (sh and d > 64)},
    "softmax_4096": ("softmax", (SOFTMAX_N, SOFTMAX_N), {}, ["lt-gpu-auto"]),
    "row_sum_4096": ("row_sum", (SOFTMAX_N, SOFTMAX_N), {}, ["lt-gpu-auto"]),
    "row_max_4096": ("row_max", (SOFTMAX_N, SOFTMAX_N), {}, ["lt-gpu-auto"]),
}
SGEMMS = [name for name in KERNELS if name.startswith("sgemm_4096") and name != "sgemm_4096x1024"]
OTHER_GEMMS = {"sgemm_1024": (1024, 1024, 1024), "sgemm_1024_double": (1024, 1024, 1024), "sgemm_1024_128": (1024, 1024, 1024),
               "sgemm_4096x1024": RECT}
CLIPPED = [name for name in KERNELS if name.startswith("clipped")]


def build(directory: str, arch: str) -> None:
    import lt_mlir
    from lt_mlir import programs, recipes

    os.makedirs(directory, exist_ok=True)
    for name, (program, args, kwargs, steps) in KERNELS.items():
        s = lt_mlir.Schedule(getattr(programs, program)(*args, **kwargs))
        if isinstance(steps, dict):  # a documented schedule of lt_mlir.recipes
            options = dict(steps)
            getattr(recipes, options.pop("recipe"))(s, **options)
            steps = []
        for step in steps:
            s.apply(step)
        paths = lt_mlir.compile_aot(s.text, os.path.join(directory, name), target="cuda", arch=arch)
        launches = json.load(open(paths["json"]))["launches"]
        sizes = ", ".join(f"grid {l['grid']} block {l['block']}" for l in launches)
        print(f"built {name}: {sizes}", flush=True)
        if name in PROFILED:
            from lt_mlir.profile import save_instrumented_gpu

            layout = save_instrumented_gpu(s.text, os.path.join(directory, name), arch)
            print(f"built {name}, instrumented: {sum(layout.timed)} loops timed", flush=True)


# kernels also built with the per-loop profile's instrumentation (lt_mlir/profile.py):
# ``run`` prints their annotated loop trees and the instrumentation's overhead
PROFILED = ("sgemm_4096_pad", "attention_1024_d64", "softmax_4096")


def profile_run(directory: str, name: str, plain, repeat: int) -> dict:
    """The per-loop profile of kernel ``name`` on this GPU from its
    instrumented build: the annotated loop tree, and the instrumented time
    against the plain one (events), on random inputs; the outputs of the
    two builds compared first."""
    import types

    import numpy as np
    import torch

    from lt_mlir.runtime import cuda
    from lt_mlir.runtime.loop_profile import gpu_loop_profile

    inst = cuda.load(os.path.join(directory, f"{name}.profiled.json"))
    with open(os.path.join(directory, f"{name}.layout.json")) as fh:
        layout = json.load(fh)
    g = torch.Generator(device="cuda").manual_seed(1)
    arrays = [torch.randn(s.shape, device="cuda", generator=g) if not s.written else torch.zeros(s.shape, device="cuda")
              for s in plain.specs]
    plain(*arrays)
    expected = arrays[-1].clone()
    arrays[-1].fill_(float("nan"))
    inst(*arrays)
    torch.cuda.synchronize()
    same = bool(torch.allclose(arrays[-1], expected, rtol=1e-4, atol=1e-4))  # (LLVM may contract differently around the marks)
    plain_s = statistics.median(plain.time(*arrays, warmup=3, repeat=repeat))
    inst.zero_global("lt_profile_counters")
    runs = inst.time_launches(*arrays, warmup=0, repeat=repeat)
    cycles = inst.global_array("lt_profile_counters", np.int64)[: layout["size"]].astype(np.float64) / repeat
    launch_s = [statistics.median(r[k] for r in runs) for k in range(len(runs[0]))]
    total_s = statistics.median(sum(r) for r in runs)
    fields = {k: v for k, v in layout.items() if k != "loop_tree"}
    profile = gpu_loop_profile(types.SimpleNamespace(**fields), cycles, launch_s, total_s, plain_s, repeat)
    tree = profile.annotate(layout["loop_tree"])
    print(f"profile of {name} (thread 0 of each block, %clock64):\n{tree}", flush=True)
    return {"plain_ms": plain_s * 1e3, "instrumented_ms": total_s * 1e3, "overhead": profile.overhead, "same_result": same, "tree": tree}


def _torch_time(torch, fn, warmup: int, repeat: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def run(directory: str, repeat: int) -> dict:
    import torch

    from lt_mlir.runtime import cuda

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    kernels = {name: cuda.load(os.path.join(directory, f"{name}.json")) for name in KERNELS}
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    failures = results["failures"] = []

    def close(got, ref, rtol, what, who="lt_mlir") -> bool:
        """Whether ``got`` matches ``ref``; a mismatch is recorded (the
        run goes on with the other kernels) and the kernel is not timed."""
        err = (got.double() - ref.double()).abs().max().item()
        scale = max(1.0, ref.double().abs().max().item())
        if err <= rtol * scale:
            return True
        failures.append(f"{what}: {who} differs from torch by {err:.3g} (scale {scale:.3g})")
        print("WRONG:", failures[-1], flush=True)
        return False

    def lt_time(name, ref, rtol, *arrays):
        """Median time of lt kernel ``name`` (its last array is the output,
        poisoned with NaN and checked against ``ref`` first), or None."""
        arrays[-1].fill_(float("nan"))
        kernels[name](*arrays)
        if not close(arrays[-1], ref, rtol, name):
            return None
        return statistics.median(kernels[name].time(*arrays, warmup=5, repeat=repeat))

    try:
        import triton_peers
    except ImportError as e:  # Triton is on the GPU machine; say so if not
        triton_peers = None
        results["triton"] = f"not run: {e}"

    def triton_time(name, fn, ref, rtol, *arrays):
        """Median time of the Triton peer ``fn(*arrays)`` (its last array
        is the output, checked against ``ref`` first), or None."""
        if triton_peers is None or fn is None:
            return None
        fn(*arrays)
        torch.cuda.synchronize()
        if not close(arrays[-1], ref, rtol, name, "Triton"):
            return None
        return _torch_time(torch, lambda: fn(*arrays), 5, repeat)

    def entry(t, t_peer, peer: str, t_triton, nbytes=None, flops=None) -> dict:
        e = {"lt_ms": t * 1e3, f"{peer}_ms": t_peer * 1e3}
        if nbytes:
            e.update(lt_GBps=nbytes / t / 1e9, torch_GBps=nbytes / t_peer / 1e9)
        if flops:
            e.update({"lt_TFLOPs": flops / t / 1e12, f"{peer}_TFLOPs": flops / t_peer / 1e12})
        e["ratio"] = t_peer / t
        if t_triton is not None:
            e.update(triton_ms=t_triton * 1e3, lt_over_triton=t_triton / t)
        return e

    def record(name, t, *rest, **kw):
        if t is not None:
            results[name] = entry(t, *rest, **kw)
            print(name, ", ".join(f"{k} {v:.3f}" for k, v in results[name].items()), flush=True)

    peer = lambda name: getattr(triton_peers, name, None)  # noqa: E731

    # 1. add
    a = torch.randn(ADD_N, device=dev, generator=g)
    b = torch.randn(ADD_N, device=dev, generator=g)
    c = torch.empty_like(a)
    t_torch = _torch_time(torch, lambda: torch.add(a, b, out=c), 5, repeat)
    t_triton = triton_time("add", peer("add"), a + b, 0, a, b, torch.empty_like(a))
    for name in ("add_2p26", "add_2p26_x1"):
        record(name, lt_time(name, a + b, 0, a, b, torch.empty_like(a)), t_torch, "torch", t_triton, nbytes=3 * ADD_N * 4)

    # 2. sum
    x = torch.rand(SUM_ROWS, SUM_COLS, device=dev, generator=g)
    # torch.sum over all elements has no out= overload: time the allocating call
    t_torch = _torch_time(torch, lambda: torch.sum(x), 5, repeat)
    ref = x.double().sum()
    t_triton = triton_time("sum", peer("total_sum"), ref, 1e-4, x, torch.empty((1,), device=dev))
    record("sum_2p26", lt_time("sum_2p26", ref, 1e-4, x, torch.empty((), device=dev)), t_torch, "torch", t_triton, nbytes=x.numel() * 4)

    # 3. clipped matmul
    A = torch.randn(CLIP_N, CLIP_N, device=dev, generator=g)
    B = torch.randn(CLIP_N, CLIP_N, device=dev, generator=g)
    ref = torch.clamp(A[:, :, None] * B[None], min=0).sum(1)
    t_torch = _torch_time(torch, lambda: torch.clamp(A[:, :, None] * B[None], min=0).sum(1), 2, max(5, repeat // 4))
    t_triton = triton_time("clipped", peer("clipped_matmul"), ref, 1e-4, A, B, torch.empty((CLIP_N, CLIP_N), device=dev))
    for name in CLIPPED:
        record(name, lt_time(name, ref, 1e-4, A, B, torch.empty((CLIP_N, CLIP_N), device=dev)), t_torch, "torch_materialised", t_triton)
    torch.cuda.empty_cache()

    # 4. SGEMM
    A = torch.randn(GEMM_N, GEMM_N, device=dev, generator=g)
    B = torch.randn(GEMM_N, GEMM_N, device=dev, generator=g)
    C = torch.empty(GEMM_N, GEMM_N, device=dev)
    t_torch = _torch_time(torch, lambda: torch.matmul(A, B, out=C), 3, repeat)
    ref = A @ B
    t_triton = triton_time("sgemm", peer("matmul"), ref, 1e-4, A, B, torch.empty_like(C))
    for name in SGEMMS:
        record(name, lt_time(name, ref, 1e-4, A, B, torch.empty_like(C)), t_torch, "cublas", t_triton, flops=2 * GEMM_N**3)

    # 4b. SGEMM 1024^3 and 4096 x 1024 x 4096 (M x N x K) against cuBLAS
    for (m, n, k) in dict.fromkeys(OTHER_GEMMS.values()):
        A = torch.randn(m, k, device=dev, generator=g)
        B = torch.randn(k, n, device=dev, generator=g)
        C = torch.empty(m, n, device=dev)
        t_torch = _torch_time(torch, lambda A=A, B=B, C=C: torch.matmul(A, B, out=C), 3, repeat)
        ref = A @ B
        t_triton = triton_time("sgemm", peer("matmul"), ref, 1e-4, A, B, torch.empty_like(C))
        for name in [k_ for k_, shape in OTHER_GEMMS.items() if shape == (m, n, k)]:
            record(name, lt_time(name, ref, 1e-4, A, B, torch.empty_like(C)), t_torch, "cublas", t_triton, flops=2 * m * n * k)
    torch.cuda.empty_cache()

    # 6. attention against torch's scaled_dot_product_attention, math and
    # memory-efficient backends (fp32; the flash backend takes no fp32): the faster is the peer
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    for (h, n, d) in ATTENTION:
        q, k, v = (torch.randn(h, n, d, device=dev, generator=g) for _ in range(3))
        ref = sdpa(q.double()[None], k.double()[None], v.double()[None])[0]
        times = {}
        for backend in (SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION):
            with sdpa_kernel(backend):
                out = sdpa(q[None], k[None], v[None])[0]
                if close(out, ref, 1e-4, f"attention {n} d{d}", f"torch {backend.name}"):
                    times[backend.name] = _torch_time(torch, lambda: sdpa(q[None], k[None], v[None]), 3, repeat)
        if not times:
            continue
        best = min(times, key=times.get)
        name = f"attention_{n}_d{d}"
        record(name, lt_time(name, ref, 1e-4, q, k, v, torch.empty_like(q)), times[best], f"torch_{best.lower()}", None,
               flops=4 * h * n * n * d)
        if name in results:
            results[name].update({f"torch_{b.lower()}_ms": t * 1e3 for b, t in times.items()})
        for variant in [k_ for k_ in KERNELS if k_.startswith(name + "_")]:  # other block and tile sizes
            record(variant, lt_time(variant, ref, 1e-4, q, k, v, torch.empty_like(q)), times[best], f"torch_{best.lower()}",
                   None, flops=4 * h * n * n * d)
    torch.cuda.empty_cache()

    # 5. softmax, row sum, row max
    X = torch.randn(SOFTMAX_N, SOFTMAX_N, device=dev, generator=g)
    t_torch = _torch_time(torch, lambda: torch.softmax(X, dim=1), 5, repeat)
    ref = torch.softmax(X.double(), dim=1)
    t_triton = triton_time("softmax", peer("softmax"), ref, 1e-5, X, torch.empty_like(X))
    record("softmax_4096", lt_time("softmax_4096", ref, 1e-5, X, torch.empty_like(X)), t_torch, "torch", t_triton, nbytes=2 * X.numel() * 4)
    row = torch.empty(SOFTMAX_N, device=dev)
    for name, fn, reduce in (("row_sum_4096", "row_sum", lambda v: torch.sum(v, 1, out=row)), ("row_max_4096", "row_max", lambda v: torch.amax(v, 1, out=row))):
        t_torch = _torch_time(torch, lambda: reduce(X), 5, repeat)
        ref = X.double().sum(1) if fn == "row_sum" else X.double().amax(1)
        t_triton = triton_time(fn, peer(fn), ref, 1e-4, X, torch.empty_like(row))
        record(name, lt_time(name, ref, 1e-4, X, torch.empty_like(row)), t_torch, "torch", t_triton, nbytes=X.numel() * 4)
    torch.cuda.empty_cache()

    # 7. the per-loop profile of a few kernels, and what its instrumentation costs
    results["profile"] = {}
    for name in PROFILED:
        try:
            results["profile"][name] = profile_run(directory, name, kernels[name], repeat)
        except Exception as e:  # noqa: BLE001  (the other figures stand)
            failures.append(f"profile of {name}: {type(e).__name__}: {e}")
            print("FAILED:", failures[-1], flush=True)
    return results


# workload -> (its kernel in the summary table, the unit of its rate)
HEADLINE = {
    "add 2^26 f32": ("add_2p26", "GBps"),
    "sum 2^26 f32": ("sum_2p26", "GBps"),
    "clipped matmul 1024^3": ("clipped_1024_shared", None),
    "SGEMM 4096^3 f32 (TF32 off)": ("sgemm_4096_pad", "TFLOPs"),
    "SGEMM 1024^3 f32": ("sgemm_1024_double", "TFLOPs"),
    "SGEMM 4096x1024x4096 f32": ("sgemm_4096x1024", "TFLOPs"),
    "attention 16 x 1024, d 64 f32": ("attention_1024_d64", "TFLOPs"),
    "attention 8 x 4096, d 64 f32": ("attention_4096_d64", "TFLOPs"),
    "attention 16 x 1024, d 128 f32": ("attention_1024_d128", "TFLOPs"),
    "softmax 4096^2": ("softmax_4096", "GBps"),
    "row sum 4096^2": ("row_sum_4096", "GBps"),
    "row max 4096^2": ("row_max_4096", "GBps"),
}


def summary(results: dict) -> str:
    """The markdown table: lt_mlir, Triton and torch (cuBLAS; for the
    clipped matmul torch materialised) times, and the peers' times over
    lt_mlir's (above 1: lt_mlir is faster)."""
    rows = ["| workload | lt_mlir | Triton | torch | lt ÷ torch | lt ÷ Triton |", "|---|---|---|---|---|---|"]
    for workload, (name, unit) in HEADLINE.items():
        r = results.get(name)
        if r is None:
            rows.append(f"| {workload} | failed or not run | | | | |")
            continue
        peer = next(v for k, v in r.items() if k.endswith("_ms") and k not in ("lt_ms", "triton_ms"))
        rate = f", {r['lt_' + unit]:.0f} {dict(GBps='GB/s', TFLOPs='TFLOP/s')[unit]}" if unit else ""
        triton = f"{r['triton_ms']:.3f} ms" if "triton_ms" in r else "not run"
        ratio = f"{r['lt_over_triton']:.2f}" if "lt_over_triton" in r else ""
        rows.append(f"| {workload} | {r['lt_ms']:.3f} ms{rate} | {triton} | {peer:.3f} ms | {r['ratio']:.2f} | {ratio} |")
    return "\n".join(rows)


def report(results: dict) -> str:
    lines = [f"device: {results['device']}, torch {results['torch']}"]
    for name, r in results.items():
        if isinstance(r, dict) and name != "profile":
            lines.append(f"{name:20s} " + ", ".join(f"{k} {v:.3f}" for k, v in r.items()))
    for name, p in results.get("profile", {}).items():
        lines.append(f"profile {name}: plain {p['plain_ms']:.3f} ms, instrumented {p['instrumented_ms']:.3f} ms "
                     f"({p['overhead'] * 100:+.1f}%), results {'the same' if p['same_result'] else 'DIFFER'}")
    lines += [f"FAILED {f}" for f in results["failures"]]
    return "\n".join(lines) + "\n\n" + summary(results)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", nargs="?", choices=("build", "run", "all"), default="all")
    p.add_argument("directory", nargs="?", default=".gpu-artifacts/bench")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args()
    if args.mode in ("build", "all"):
        build(args.directory, args.arch)
    if args.mode in ("run", "all"):
        from lt_mlir.runtime import cuda

        if not cuda.available():
            message = f"bench_cuda: no CUDA device here; run 'python benchmarks/bench_cuda.py run {args.directory}' on a GPU machine"
            if args.mode == "run":
                sys.exit(message)
            print(message)
            return
        results = run(args.directory, args.repeat)
        print(report(results))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
