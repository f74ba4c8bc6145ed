"""APPy programs on an NVIDIA GPU: ``lt_mlir.appy`` against APPy's own
compiler (``appyc``, which generates Triton) and torch, in one process, on
the same CUDA tensors.

The programs (``appy_gpu_programs.py``) are the loops the APPy issue names,
at its sizes, written once and decorated by each implementation:

* ``vec_add``: ``C[i] = A[i] + B[i]``, 2^26 f32 (``parallel for simd``);
* ``mv``: matrix-vector product, 4096^2 f32 (``parallel for`` rows, a
  ``simd`` reduction along each);
* ``jacobi_step``: one Jacobi-2D step, 4096^2 f32;
* ``gesummv``: ``y = alpha A x + beta B x``, 4096^2 f32;
* ``spmv``: CSR matrix-vector product as APPy's README writes it, 2^16
  rows of 64 nonzeros on average (data-dependent bounds, a gather),
  against ``torch.mv`` of a sparse CSR tensor.

The GPU machine has no MLIR bindings, so lt_mlir's kernels are compiled
here and carried (``lt_mlir.appy``'s kernel store)::

    python benchmarks/bench_appy_cuda.py build .gpu-artifacts/appy   # here
    python benchmarks/bench_appy_cuda.py run .gpu-artifacts/appy     # GPU machine

``run`` checks every implementation's result against torch before timing
it, and times whole calls (Python included: what a user's program waits
for) with CUDA events, median after warm-up; for lt_mlir also its kernels
alone (events around the launches).  ``appyc`` and its
pure-Python dependencies install from wheels carried to the GPU machine;
without it, its column says why.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # bench_cuda (its timer), lt_mlir

# (program, implementation) -> why it is not run
SKIP = {("spmv", "appyc"): "appyc 0.2.0's Triton compile aborts the process on it (MLIR assertion in getIntOrFloatBitWidth, seen on the H100)"}
ADD_N = 2**26
N = 4096
SP_N = 2**16


def load_programs(jit, name: str):
    """``appy_gpu_programs.py`` with ``jit`` as its decorator."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "appy_gpu_programs.py"))
    module = importlib.util.module_from_spec(spec)
    module.__dict__["jit"] = jit
    spec.loader.exec_module(module)
    return module


def workloads(xp, dev):
    """name -> (program, arguments, output index, reference, bytes moved)
    with arrays of ``xp`` (torch or a NumPy stand-in) on ``dev``."""
    if xp.__name__ == "torch":
        g = xp.Generator(device=dev).manual_seed(0)
        rand = lambda *shape: xp.rand(*shape, device=dev, generator=g)  # noqa: E731
        empty = lambda *shape: xp.empty(*shape, device=dev)  # noqa: E731
    else:
        rand = lambda *shape: xp.zeros(shape, xp.float32)  # noqa: E731
        empty = rand
    a, b = rand(ADD_N), rand(ADD_N)
    # CSR, 2^16 rows of 64 nonzeros on average (APPy README's spmv: indptr has N entries, N - 1 rows)
    # (built from formulas, not a random stream: the structure, and so the
    # kernel's signature, must be the same on the machine that compiles)
    nnz_row = 32 + (np.arange(SP_N - 1) * 7919) % 65
    indptr = np.concatenate([[0], np.cumsum(nnz_row)]).astype(np.int32)
    cols = np.concatenate([np.sort((i * 31 + np.arange(k) * 997) % SP_N) for i, k in enumerate(nnz_row)]).astype(np.int32)
    vals = ((np.arange(len(cols)) * 0.618) % 1).astype(np.float32)
    if xp.__name__ == "torch":
        sp = [xp.from_numpy(v).to(dev) for v in (indptr, cols, vals)]
        sx = rand(SP_N)
        rows = xp.from_numpy(np.repeat(np.arange(SP_N - 1), nnz_row)).to(dev)
        csr = xp.sparse_csr_tensor(sp[0].long(), sp[1].long(), sp[2], size=(SP_N - 1, SP_N))
        spmv_ref = lambda: xp.mv(csr, sx)  # noqa: E731
        del rows
    else:
        sp, sx, spmv_ref = [indptr, cols, vals], rand(SP_N), None
    sy = empty(SP_N - 1)
    A, B, x = rand(N, N), rand(N, N), rand(N)
    out = {
        "vec_add": ("vec_add", [a, b, empty(ADD_N), ADD_N], 2, lambda: a + b, 3 * ADD_N * 4),
        "mv": ("mv", [A, x, empty(N), N, N], 2, lambda: A @ x, (N * N + 2 * N) * 4),
        "jacobi_step": ("jacobi_step", [A, A.clone() if hasattr(A, "clone") else A.copy(), N], 1, None, 2 * N * N * 4),
        "gesummv": ("gesummv", [1.5, 1.2, A, B, x, empty(N), N, N], 5, lambda: 1.5 * (A @ x) + 1.2 * (B @ x), (2 * N * N + 2 * N) * 4),
        "spmv": ("spmv", [*sp, sx, sy, SP_N], 4, spmv_ref, (2 * len(cols) + SP_N) * 4),
    }
    return out


def jacobi_reference(A, B):
    ref = B.clone()
    ref[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
    return ref


def build(directory: str) -> None:
    """Compile lt_mlir's kernels for every workload into ``directory``."""
    import lt_mlir.appy as appy

    os.environ[appy.KERNELS_ENV] = directory
    ours = load_programs(appy.jit(backend="cuda"), "lt_programs")
    with appy.compile_only():
        for name, (program, args, _, _, _) in workloads(np, None).items():
            getattr(ours, program)(*args)
            print(f"built {name}", flush=True)


def run(directory: str, repeat: int) -> dict:
    import torch
    from bench_cuda import _torch_time

    import lt_mlir.appy as appy

    os.environ[appy.KERNELS_ENV] = directory
    dev = "cuda"
    impls = {"lt_mlir": load_programs(appy.jit(backend="cuda"), "lt_programs")}
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "failures": []}
    try:
        import appy as appyc

        impls["appyc"] = load_programs(appyc.jit, "appyc_programs")
        results["appyc"] = getattr(appyc, "__version__", "?")
    except Exception as e:  # noqa: BLE001 (say why the column is empty)
        results["appyc"] = f"not run: {type(e).__name__}: {e}"

    def timed(fn) -> float:
        return _torch_time(torch, fn, 5, repeat)  # bench_cuda's: CUDA events, median after warm-up

    for name, (program, args, out, reference, nbytes) in workloads(torch, dev).items():
        row = {}
        ref_fn = reference if reference is not None else (lambda: jacobi_reference(args[0], args[1]))
        ref = ref_fn()
        row["torch_ms"] = timed(ref_fn) * 1e3
        for who, module in impls.items():
            if (name, who) in SKIP:
                results["failures"].append(f"{name} {who}: not run: {SKIP[name, who]}")
                continue
            args[out].fill_(float("nan")) if name != "jacobi_step" else args[out].copy_(args[0])
            try:
                getattr(module, program)(*args)
                torch.cuda.synchronize()
                err = (args[out].double() - ref.double()).abs().max().item()
                if not err <= 1e-3 * max(1.0, ref.double().abs().max().item()):
                    raise AssertionError(f"differs from torch by {err:.3g}")
                row[f"{who}_ms"] = timed(lambda m=module: getattr(m, program)(*args)) * 1e3
                row[f"{who}_GBps"] = nbytes / row[f"{who}_ms"] / 1e6
                if who == "lt_mlir":
                    row["lt_mlir_kernel_ms"] = kernel_ms(getattr(module, program), args, repeat) * 1e3
            except Exception as e:  # noqa: BLE001 (one implementation failing must not stop the others)
                import traceback

                traceback.print_exc()
                results["failures"].append(f"{name} {who}: {type(e).__name__}: {str(e)[:300]}")
                print("FAILED", results["failures"][-1], flush=True)
        if "lt_mlir_ms" in row and "appyc_ms" in row:
            row["lt_over_appyc"] = row["appyc_ms"] / row["lt_mlir_ms"]
        if "lt_mlir_ms" in row:
            row["lt_over_torch"] = row["torch_ms"] / row["lt_mlir_ms"]
        results[name] = row
        print(name, ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    return results


def kernel_ms(program, args, repeat: int) -> float:
    """Seconds of the kernels of ``program``'s nests alone (CUDA events
    around the launches: no Python), as called last with ``args``."""
    import inspect

    from lt_mlir.appy.translate import OOB_FLAG

    values = dict(zip(inspect.signature(program.fn).parameters, args))
    total = 0.0
    for nest in program.nests:
        kernel, names, _ = next(iter(nest.cache.values()))
        flag = _zero_flag  # the data-dependent index check's flag: a fresh zero
        arrays = [flag() if n == OOB_FLAG else nest.scalars[n][2] if n in nest.scalars else values[n] for n in names]
        total += statistics.median(kernel.time(*arrays, warmup=5, repeat=repeat))
    return total


def _zero_flag():
    import torch

    return torch.zeros(1, dtype=torch.int64, device="cuda")


def summary(results: dict) -> str:
    rows = ["| program | lt_mlir call | its kernel | appyc call | torch | lt ÷ appyc | lt ÷ torch |", "|---|---|---|---|---|---|---|"]
    ratios = []
    for name in ("vec_add", "mv", "jacobi_step", "gesummv", "spmv"):
        r = results.get(name, {})
        cell = lambda k: f"{r[k]:.3f} ms" if k in r else "failed"  # noqa: E731
        ra = f"{r['lt_over_appyc']:.2f}" if "lt_over_appyc" in r else ""
        if "lt_over_appyc" in r:
            ratios.append(r["lt_over_appyc"])
        rt = f"{r['lt_over_torch']:.2f}" if "lt_over_torch" in r else ""
        rows.append(f"| {name} | {cell('lt_mlir_ms')} | {cell('lt_mlir_kernel_ms')} | {cell('appyc_ms')} | {cell('torch_ms')} | {ra} | {rt} |")
    if ratios:
        geo = statistics.geometric_mean(ratios)
        rows.append(f"\ngeometric mean, lt_mlir over appyc (above 1: faster): {geo:.2f} over {len(ratios)} programs")
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("build", "run"))
    p.add_argument("directory", nargs="?", default=".gpu-artifacts/appy")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    directory = os.path.abspath(args.directory)
    if args.mode == "build":
        build(directory)
        return
    results = run(directory, args.repeat)
    print(f"device: {results['device']}, torch {results['torch']}, appyc {results['appyc']}")
    print(summary(results))
    for f in results["failures"]:
        print("FAILED", f)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
