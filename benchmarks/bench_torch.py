"""PyTorch models through lt_mlir against torch eager, torch.compile and onnxruntime (issue "PyTorch and ONNX models into lt").

Four models, the issue's sizes, float32, one process, the same inputs:

* ``mlp``: Linear 1024 -> 4096, ReLU, Linear 4096 -> 1024, batch 64;
* ``conv block``: a ResNet basic block on 1x32x56x56 (conv3x3, BatchNorm,
  ReLU, conv3x3, BatchNorm, the residual add, ReLU; eval mode);
* ``attention``: a transformer attention block, sequence 256, model 256,
  4 heads (Linear to q, k, v; softmax(q k^T / sqrt(d)) v; the output Linear);
* ``layernorm + gelu``: LayerNorm(1024) then GELU on 512x1024.

Peers: torch eager (``torch.set_num_threads`` = the cores), ``torch.compile``
(inductor, CPU), onnxruntime (CPU, the model exported with
``torch.onnx.export``; its intra-op threads = the cores).  lt_mlir: the
importer's default schedule and, when the tuning database holds one (``--tune
SECONDS`` searches each model with ``Model.optimize`` first; ``make
tune-torch``), the tuned schedule.  Every variant's result is checked against
torch eager's before it is timed; times are medians of blocks that
alternate (``timing.block_medians``), printed as ratios to torch eager and
torch.compile.  The import's phases (torch.export, torch-mlir, lt) and the
first compile are printed too.

    .venv/bin/python benchmarks/bench_torch.py                 # the table
    .venv/bin/python benchmarks/bench_torch.py --tune 120      # tune each model for 120 s first
    .venv/bin/python benchmarks/bench_torch.py --only mlp --no-compile --no-onnx
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")  # torch.export's and the ONNX exporter's deprecation notes

import torch  # noqa: E402

import lt_mlir  # noqa: E402
from lt_mlir.importers import frontdoors  # noqa: E402
from lt_mlir.runtime.timing import block_medians  # noqa: E402

nn = torch.nn


class Block(nn.Module):
    """A ResNet basic block (He et al. 2016): two 3x3 convolutions with batch norm, the identity added."""

    def __init__(self, c: int = 32):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class Attention(nn.Module):
    """Multi-head self-attention as a transformer block writes it."""

    def __init__(self, d: int = 256, heads: int = 4):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(q @ k.transpose(-2, -1) / (d // h) ** 0.5, dim=-1)
        return self.out((a @ v).transpose(1, 2).reshape(b, t, d))


class NormGelu(nn.Module):
    def __init__(self, d: int = 1024):
        super().__init__()
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return nn.functional.gelu(self.norm(x))


def models(quick: bool) -> dict:
    """name -> (module, example input); ``quick``: small sizes."""
    torch.manual_seed(0)
    if quick:
        return {
            "mlp": (nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32)), torch.randn(8, 64)),
            "conv block": (Block(8), torch.randn(1, 8, 12, 12)),
            "attention": (Attention(32, 4), torch.randn(1, 16, 32)),
            "layernorm + gelu": (NormGelu(64), torch.randn(16, 64)),
        }
    return {
        "mlp": (nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)), torch.randn(64, 1024)),
        # the same MLP at batch 8: reading the weights is most of the work (what packing them once saves)
        "mlp batch 8": (nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)), torch.randn(8, 1024)),
        "conv block": (Block(32), torch.randn(1, 32, 56, 56)),
        "attention": (Attention(256, 4), torch.randn(1, 256, 256)),
        "layernorm + gelu": (NormGelu(1024), torch.randn(512, 1024)),
    }


def onnx_session(module, x, threads: int):
    import onnxruntime as ort

    path = os.path.join(tempfile.mkdtemp(), "model.onnx")
    torch.onnx.export(module, (x,), path, dynamo=False, input_names=["x"])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return lambda a: sess.run(None, {"x": a})[0]


def run(args) -> int:
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    rows = []
    for name, (module, x) in models(args.quick).items():
        if args.only and args.only not in name:
            continue
        module.eval()
        xs = x.numpy()
        with torch.no_grad():
            ref = module(x).numpy()
        t0 = time.perf_counter()
        model = lt_mlir.from_torch(module, x)
        t_import = time.perf_counter() - t0
        phases = dict(frontdoors.timings)
        t0 = time.perf_counter()
        model.compile()
        t_compile = time.perf_counter() - t0
        if args.tune is not None:
            r = model.optimize(budget=args.budget, seconds=args.tune)
            print(f"{name}: tuned {r.speedup:.2f}x over the start in {r.evaluations} measurements", flush=True)
        variants = {}
        with torch.no_grad():
            variants["torch eager"] = lambda: module(x)
        if not args.no_compile:
            compiled = torch.compile(module)
            with torch.no_grad():
                compiled(x)  # compiles
            variants["torch.compile"] = lambda: compiled(x).detach()
        if not args.no_onnx:
            sess = onnx_session(module, x, cores)
            variants["onnxruntime"] = lambda: sess(xs)
        model.schedule = model.start.copy()  # (optimize() left its winner there)
        variants["lt_mlir default"] = model.bind(xs)
        if model.tuned():
            variants["lt_mlir tuned"] = model.bind(xs)
        errors = {}
        for k, fn in variants.items():
            with torch.no_grad():
                out = fn()
            out = out.numpy() if isinstance(out, torch.Tensor) else np.asarray(out)
            err = float(np.abs(out - ref).max() / max(1.0, float(np.abs(ref).max())))
            if not err <= 1e-4:
                errors[k] = err
        for k in errors:
            print(f"error: {name}: {k} differs from torch eager by {errors[k]:.2e} (relative)", file=sys.stderr)
            variants.pop(k)
        if args.quick:
            print(f"{name:18s} ok: {', '.join(variants)}; import {t_import:.2f} s, compile {t_compile:.2f} s")
            rows.append((name, {}, t_import, t_compile, phases))
            continue
        with torch.no_grad():
            times = block_medians(variants, rounds=args.rounds)
        rows.append((name, times, t_import, t_compile, phases))
        print(f"{name}: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in times.items()), flush=True)
    if args.quick:
        return 0
    print()
    from lt_mlir import tuning

    model_name = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), None) \
        if os.path.exists("/proc/cpuinfo") else None
    print(f"Host: {model_name or platform.machine()} (LLVM CPU {tuning.host()['cpu']}), {cores} cores; torch {torch.__version__}")
    print()
    cols = ["torch eager", "torch.compile", "onnxruntime", "lt_mlir default", "lt_mlir tuned"]
    print("| model | " + " | ".join(cols) + " | lt best × eager | lt best × torch.compile | import + compile |")
    print("|---|" + "---|" * (len(cols) + 3))
    for name, times, t_import, t_compile, _ in rows:
        cells = [f"{times[c] * 1e3:.3f} ms" if c in times else "–" for c in cols]
        lt = min(times[c] for c in ("lt_mlir default", "lt_mlir tuned") if c in times)
        eager = f"{times['torch eager'] / lt:.2f}"
        comp = f"{times['torch.compile'] / lt:.2f}" if "torch.compile" in times else "–"
        print(f"| {name} | " + " | ".join(cells) + f" | {eager} | {comp} | {t_import:.2f} + {t_compile:.2f} s |")
    print()
    for name, _, _, _, phases in rows:
        print(f"{name}: import phases " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes: check every variant, time nothing")
    p.add_argument("--only", default=None, help="the models whose name contains this")
    p.add_argument("--rounds", type=int, default=5, help="rounds of timing blocks")
    p.add_argument("--tune", type=float, default=None, metavar="SECONDS", help="Model.optimize each model first (into the tuning database)")
    p.add_argument("--budget", type=int, default=300, help="with --tune: measurements a model")
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out (its first compile takes a while)")
    p.add_argument("--no-onnx", action="store_true", help="leave onnxruntime out")
    return run(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
