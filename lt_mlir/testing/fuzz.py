"""Differential fuzzer: random schedules of loop transformations, checked
against NumPy on guard-paged arrays.

For every schedule the fuzzer picks a reference program at an odd size
(pointwise add, row sum, row max, matmul, clipped matmul, syrk, conv1d, conv2d,
softmax, in-place smoothing sweeps whose loops carry dependences), then 1-8
random transformations: a pass from the registry (every
``lt-*`` pass there, so passes added later are fuzzed too), a random loop
among the current ones (now and then one that does not exist), random
factors 2..64 (non-divisors included), widths from {2, 4, 8, 16}, resize
deltas mostly +-1 (sometimes +-2..5, rarely 0), GPU mappings to blocks or
threads (GPU-mapped schedules compile for the ``cuda-emulated`` target: the
GPU lowering run sequentially on the CPU).  The
passes run one at a time; a pass that refuses (``PassError`` or
``PipelineError``) is skipped and the schedule goes on from the IR as it was
before it.  The result is compiled and run on guard-paged arrays (inputs
read-only, outputs pre-filled with NaN), once flush against the end guard
and once against the start guard, and compared with a float64 NumPy
reference within ``2 (L + 1) eps sum|terms|`` for sums of ``L`` terms (as in
``tests/test_kernels.py``).

Failures:

* ``wrong-result``  an output element off the reference (or left NaN);
* ``crash``         the worker died of a signal (a guard page hit, an abort
  in LLVM): the parent reports it and starts a fresh worker;
* ``timeout``       a schedule ran past ``--timeout`` seconds (worker killed);
* ``pass-exception`` / ``compile-exception`` / ``run-exception``: a Python
  exception that is not an ``lt_mlir.LtError``;
* ``invalid-ir``    a pass left IR that fails verification (``run_pipeline``
  reports that as a bare ``LtError``, not as a refusal);
* ``compile-error`` an accepted schedule that does not compile (an
  ``LtError`` from lowering or code generation);
* ``invalid-ptx`` / ``ptx-exception``: a GPU-mapped schedule right when
  emulated whose PTX ptxas rejects, or whose PTX could not be made;
* ``baseline-*``    an untransformed program fails (each program and size is
  run once untransformed before the schedules).

Not failures, but counted: refusals that left the IR modified (the fuzzer
restores the IR from before the pass), programs the static bounds check
rejects after transformation although every access is in bounds (run again
unchecked, on guard pages, to tell).

Every schedule is determined by ``(seed, index)`` alone, whichever worker
runs it and whatever ran before.  Failures are grouped by signature (kind,
plus the error line, or the program for wrong results); the CLI prints the
simplest failure of each group in full after minimising it (``minimize``:
drop applied steps one at a time while the failure keeps its signature, on
the schedule's own inputs, in worker processes).  Each report names the
seed, the program (the ``lt_mlir.programs`` call), the pipeline applied
and the loop tree, and replays in this process with either of::

    .venv/bin/python -m lt_mlir.testing.fuzz --seed S --replay INDEX
    .venv/bin/python -c "from lt_mlir.testing import fuzz; fuzz.replay_pipeline('row_max', (7, 33), 'builtin.module(lt-vectorize{loop=1 width=8}, lt-swap{loop=0})')"

CI runs 2,000 schedules of a fixed seed (``tests/test_fuzz.py``).  The
long run, before a release or after changing a pass, is ``make fuzz``
(100,000 schedules of seed 29, then the seeded bugs; the tables go to
``docs/fuzz.md`` and ``docs/fuzz-mutants.md``), or by hand::

    .venv/bin/python -m lt_mlir.testing.fuzz --schedules 20000 --seed 1 --workers 2

A schedule costs about 65 ms of CPU (the LLVM O3 compile and, for a
GPU-mapped one, the PTX and ptxas are most of it; a worker reuses the kernel
of a module it compiled before, about a quarter of them): 2,000 schedules
take about 70 s on two idle cores, 100,000 about an hour;
``--time-limit 1500`` stops handing out schedules after 25 minutes (the
summary says how many ran) and ``--first N`` carries on from schedule N
later.  A new seed gives new schedules.  The exit status is 1 when
anything failed.  ``--programs`` and ``--passes`` restrict the choice,
``--mutant-pass`` adds a deliberately wrong pass (``lt-fuzz-drop-tail``),
``--mutant NAME`` runs with one of the seeded bugs of ``mutants.py``,
``--mutants`` fuzzes with each in turn and reports after how many schedules
each was caught (each must be, within 2,000), and
the ``mutant-*`` programs (a wrong reference, an out-of-bounds read) exist
to show that the fuzzer notices (``tests/test_fuzz.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..builder import Builder, memref
from . import mutants
from .mutants import MUTANT_PASS, register_mutant_pass  # the deliberately wrong pass (--mutant-pass)

DEFAULT_SEED = 1
DEFAULT_TIMEOUT = 120.0
MAX_TRANSFORMS = 8
WIDTHS = (2, 4, 8, 16)
SIDES = ("end", "start")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ------------------------------------------------------------- programs


def _uniform(rng, shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def _maybe_negative(rng, shape):
    """Uniform in [-1, 1), or, half the time, every element in [-3, -1): a
    max over all-negative values tells a wrong identity (0 for -inf) from
    the right one, which mixed signs never do."""
    return _uniform(rng, shape) - np.float32(2.0 if rng.random() < 0.5 else 0.0)


def _f64(xs):
    return [x.astype(np.float64) for x in xs]


def _conv1d_ref(x, w):
    n = len(x) - len(w) + 1
    y = np.zeros(n)
    for j in range(len(w)):
        y += x[j : j + n] * w[j]
    return y


def _conv2d_ref(x, w):
    c, kh, kw = w.shape
    h, wd = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    y = np.zeros((h, wd))
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                y += x[ci, i : i + h, j : j + wd] * w[ci, i, j]
    return y


def _ref_add(xs, size):
    a, b = _f64(xs)
    return [(a + b, np.abs(a) + np.abs(b), 1)]


def _ref_row_sum(xs, size):
    (a,) = _f64(xs)
    return [(a.sum(axis=1), np.abs(a).sum(axis=1), size[1])]


def _ref_row_max(xs, size):
    (a,) = _f64(xs)
    m = a.max(axis=1)
    return [(m, np.abs(m), 0)]  # max is exact


def _ref_lower_row_sum(xs, size):
    (a,) = _f64(xs)
    low = np.tril(a)
    return [(low.sum(axis=1), np.abs(low).sum(axis=1), size[1])]


def _ref_matmul(xs, size):
    a, b = _f64(xs)
    return [(a @ b, np.abs(a) @ np.abs(b), size[2])]


def _ref_syrk(xs, size):
    (a,) = _f64(xs)
    return [(a.T @ a, np.abs(a).T @ np.abs(a), size[1])]


def _ref_clipped(xs, size):
    a, b = _f64(xs)
    p = np.maximum(a[:, :, None] * b[None, :, :], 0.0).sum(axis=1)
    return [(p, p, size[2])]


def _ref_conv1d(xs, size):
    x, w = _f64(xs)
    return [(_conv1d_ref(x, w), _conv1d_ref(np.abs(x), np.abs(w)), size[1])]


def _ref_conv2d(xs, size):
    x, w = _f64(xs)
    c, _, _, kh, kw = size
    return [(_conv2d_ref(x, w), _conv2d_ref(np.abs(x), np.abs(w)), c * kh * kw)]


def _sweep_ref(x, steps: int):
    y = x.copy()
    for _ in range(steps):
        for j in range(len(y) - 1):
            y[j] = 0.5 * (y[j] + y[j + 1])
    return y


def _ref_sweep(xs, size):
    (x,) = _f64(xs)
    return [(_sweep_ref(x, size[0]), _sweep_ref(np.abs(x), size[0]), size[0] + 1)]


def _ref_softmax(xs, size):
    (x,) = _f64(xs)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    # float32: the shift and exp cost a few ulps, the row sum n ulps, the
    # division one; relative to the value itself.
    return [(y, y, size[1] + 8)]


def _ref_attention(xs, size):
    q, k, v = _f64(xs)
    s = q @ k.T / np.sqrt(size[2])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    # the scores' rounding (d terms) moves each weight relatively, the sums m terms
    return [(p @ v, p @ np.abs(v), size[1] + 4 * size[2] + 8)]


def _ref_wrong_add(xs, size):
    a, b = _f64(xs)
    return [(a - b, np.abs(a) + np.abs(b), 1)]  # deliberately wrong: the program adds


def _out_of_bounds_shift(n: int) -> str:
    """Y[i] = X[i + 1] for i < n over an X of n elements: reads one past the end."""
    t = memref([n], "f32")
    b = Builder()
    with b.func("shift", [("X", t), ("Y", t)]) as (X, Y):
        one = b.constant(1, "index", name="one")
        with b.loop("i", n, 0, index="i0"):
            i = b.dim("i", name="i")
            x = b.load(X, [b.binary("addi", i, one, name="r")], name="x")
            b.store(x, Y, [i])
    return b.text()


def _ref_shift(xs, size):
    (x,) = _f64(xs)
    return [(x, np.abs(x), 1)]  # never reached: the kernel faults first


@dataclass(frozen=True)
class Program:
    """A reference program: ``make(*size)`` is its text, ``inputs(rng, size)``
    its read-only arguments in order, ``reference(inputs, size)`` a list of
    ``(exact float64 result, sum of |terms|, terms per element)`` per output."""

    name: str
    sizes: tuple
    make: Callable[..., str]
    inputs: Callable
    reference: Callable
    call: str  # Python that builds the text, "{}" for the size
    check_bounds: bool = True


def _react_module():
    from . import kernel_programs

    return kernel_programs


def _kernel_programs():
    from .kernel_programs import PROGRAMS as KERNEL_PROGRAMS

    return KERNEL_PROGRAMS


def _imported_module():
    from . import imported_programs

    return imported_programs


def _imported_programs():
    return _imported_module().PROGRAMS


def _programs_module():
    from .. import programs

    return programs


PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in [
        Program(
            "add",
            ((33,), (50,), (7,)),
            lambda n: _programs_module().pointwise_add(n),
            lambda rng, s: [_uniform(rng, s[0]), _uniform(rng, s[0])],
            _ref_add,
            "programs.pointwise_add({})",
        ),
        Program(
            "row_sum",
            ((7, 33), (13, 50)),
            lambda m, n: _programs_module().row_sum(m, n),
            lambda rng, s: [_uniform(rng, s)],
            _ref_row_sum,
            "programs.row_sum({})",
        ),
        Program(
            "lower_row_sum",
            ((7, 9), (13, 50), (33, 20)),
            lambda m, n: _programs_module().lower_row_sum(m, n),
            lambda rng, s: [_uniform(rng, s)],
            _ref_lower_row_sum,
            "programs.lower_row_sum({})",
        ),
        Program(
            "row_max",
            ((7, 33), (13, 50)),
            lambda m, n: _programs_module().row_max(m, n),
            lambda rng, s: [_maybe_negative(rng, s)],
            _ref_row_max,
            "programs.row_max({})",
        ),
        Program(
            "matmul",
            ((7, 13, 33), (13, 7, 50)),
            lambda m, n, k: _programs_module().matmul(m, n, k),
            lambda rng, s: [_uniform(rng, (s[0], s[2])), _uniform(rng, (s[2], s[1]))],
            _ref_matmul,
            "programs.matmul({})",
        ),
        Program(
            "clipped_matmul",
            ((7, 13, 33), (13, 7, 13)),
            lambda m, n, k: _programs_module().matmul(m, n, k, clipped=True),
            lambda rng, s: [_uniform(rng, (s[0], s[2])), _uniform(rng, (s[2], s[1]))],
            _ref_clipped,
            "programs.matmul({}, clipped=True)",
        ),
        Program(
            "syrk",
            ((7, 5), (13, 6), (33, 4)),
            lambda n, k: _programs_module().syrk(n, k),
            lambda rng, s: [_uniform(rng, (s[1], s[0]))],
            _ref_syrk,
            "programs.syrk({})",
        ),
        Program(
            "conv1d",
            ((50, 7), (33, 5)),
            lambda n, w: _programs_module().conv1d(n, w),
            lambda rng, s: [_uniform(rng, s[0] + s[1] - 1), _uniform(rng, s[1])],
            _ref_conv1d,
            "programs.conv1d({})",
        ),
        Program(
            "conv2d",
            ((3, 7, 13, 3, 5), (2, 13, 7, 5, 3)),
            lambda c, h, w, kh, kw: _programs_module().conv2d(c, h, w, kh, kw),
            lambda rng, s: [_uniform(rng, (s[0], s[1] + s[3] - 1, s[2] + s[4] - 1)), _uniform(rng, (s[0], s[3], s[4]))],
            _ref_conv2d,
            "programs.conv2d({})",
        ),
        Program(
            "sweep",
            ((3, 13), (5, 33)),
            lambda t, n: _programs_module().sweep(t, n),
            lambda rng, s: [_uniform(rng, s[1] + 1)],
            _ref_sweep,
            "programs.sweep({})",
        ),
        Program(
            "softmax",
            ((7, 33), (13, 50)),
            lambda m, n: _programs_module().softmax(m, n),
            lambda rng, s: [_maybe_negative(rng, s)],
            _ref_softmax,
            "programs.softmax({})",
        ),
        # softmax under fastmath=reassoc and attention as the frontend
        # writes it (fastmath=fast): what lt-online-softmax fuses
        Program(
            "softmax_reassoc",
            ((7, 33), (13, 50)),
            lambda m, n: _programs_module().softmax(m, n, fastmath="reassoc"),
            lambda rng, s: [_maybe_negative(rng, s)],
            _ref_softmax,
            "programs.softmax({}, fastmath='reassoc')",
        ),
        Program(
            "attention",
            ((5, 13, 4, 3), (7, 9, 3, 5)),
            lambda n, m, d, e: _programs_module().attention(n, m, d, e),
            lambda rng, s: [_uniform(rng, (s[0], s[2])), _uniform(rng, (s[1], s[2])), _uniform(rng, (s[1], s[3]))],
            _ref_attention,
            "programs.attention({})",
        ),
        Program(
            "attention_normalised",
            ((5, 13, 4, 3), (4, 7, 3, 6)),
            lambda n, m, d, e: _programs_module().attention(n, m, d, e, normalised=True),
            lambda rng, s: [_uniform(rng, (s[0], s[2])), _uniform(rng, (s[1], s[2])), _uniform(rng, (s[1], s[3]))],
            _ref_attention,
            "programs.attention({}, normalised=True)",
        ),
        # lt_mlir.kernel's unfused modules: producer nests (lt-fuse), a sum
        # of products under fastmath=fast (lt-factor), CSR nests
        *[
            Program(
                name,
                sizes,
                (lambda *s, _n=name: _kernel_programs()[_n].text(*s)),
                (lambda rng, s, _n=name: _kernel_programs()[_n].inputs(rng, s)),
                (lambda xs, s, _n=name: _kernel_programs()[_n].reference(xs, s)),
                f"lt_mlir.testing.kernel_programs.PROGRAMS[{name!r}].text({{}})",
            )
            for name, sizes in (
                ("k_sddmm", ((7, 9, 5), (13, 6, 17))),
                ("k_sddmm_fast", ((7, 9, 5), (13, 6, 17))),
                ("k_spmm_mm", ((7, 9, 5, 3), (5, 13, 2, 9))),
                ("k_spmv", ((7, 9), (13, 40))),
                ("k_sparse_softmax", ((7, 9), (13, 40))),
                ("k_sparse_softmax_rows", ((7, 9), (13, 40))),
                ("k_dense_spmm", ((7, 9, 5), (13, 6, 3))),
                ("k_chain", ((7, 33), (5, 8))),
                ("k_logistic_grad", ((7, 5), (13, 33))),
                ("k_scaled_rows", ((7, 33), (13, 9))),
            )
        ],
        # lt_mlir.importers' modules of linalg programs in torch-mlir's form: views,
        # a padded copy, a strided window, a clamped gather, unit dims without loops,
        # a layer norm's row loops (fused, unmerged: an accumulator allocated in a row loop),
        # q @ k^T with k laid out by a copy nest
        *[
            Program(
                name,
                _imported_programs()[name][3],
                (lambda *s, _n=name: _imported_module().text(_n, *s)),
                (lambda rng, s, _n=name: _imported_programs()[_n][1](rng, s)),
                (lambda xs, s, _n=name: _imported_programs()[_n][2](xs, s)),
                f"lt_mlir.testing.imported_programs.text({name!r}, {{}})",
            )
            for name in ("i_linear_relu", "i_conv_pad_stride", "i_softmax", "i_gather", "i_layer_norm", "i_batched_qk")
        ],
        Program(
            "react_type2",
            ((4, 6, 8), (7, 5, 3)),
            lambda n, m, k: _react_module().react_type2(n, m, k),
            lambda rng, s: _react_module().react_type2_inputs(rng, s),
            lambda xs, s: _react_module().react_type2_reference(xs, s),
            "lt_mlir.testing.kernel_programs.react_type2({})",
        ),
        # Deliberately broken: only for showing that failures are noticed.
        Program(
            "mutant-wrong-reference",
            ((33,),),
            lambda n: _programs_module().pointwise_add(n),
            lambda rng, s: [_uniform(rng, s[0]), _uniform(rng, s[0])],
            _ref_wrong_add,
            "programs.pointwise_add({})  # reference A - B",
        ),
        Program(
            "mutant-out-of-bounds",
            ((33,),),
            _out_of_bounds_shift,
            lambda rng, s: [_uniform(rng, s[0])],
            _ref_shift,
            "lt_mlir.testing.fuzz._out_of_bounds_shift({})  # compiled with check_bounds=False",
            check_bounds=False,
        ),
    ]
}
DEFAULT_PROGRAMS = tuple(n for n in PROGRAMS if not n.startswith("mutant-"))

def fuzz_passes(mutants: bool = False, only: tuple | None = None) -> list:
    """The passes schedules draw from: every ``lt-*`` pass of the registry
    (lowering steps excluded), sorted by name; plus the mutant pass."""
    from ..passes.registry import registry

    if mutants:
        register_mutant_pass()
    names = sorted(n for n in registry() if n.startswith("lt-") and (mutants or n != MUTANT_PASS))
    if only:
        missing = [n for n in only if n not in names]
        if missing:
            raise SystemExit(f"lt_mlir.testing.fuzz: unknown pass(es) {', '.join(missing)} (have {', '.join(names)})")
        names = [n for n in names if n in only]
    return names


# ------------------------------------------------------------- one schedule


def _choose_options(rng: random.Random, info, loops: list) -> dict:
    """Random option values for ``info`` (a registry PassInfo) given the loops."""
    from ..dialect import lt

    values: dict = {}
    target = None
    if "loop" in info.options:
        if not loops or rng.random() < 0.05:
            values["loop"] = len(loops) + rng.randint(0, 2)  # out of range
        else:
            i = rng.randrange(len(loops))
            if "delta" in info.options and rng.random() < 0.9:
                # lt-resize: mostly a level that has a parent level over its dim
                inner = [j for j, l in enumerate(loops) if any(lt.loop_dim(p) == lt.loop_dim(l) for p in lt.enclosing_loops(l))]
                i = rng.choice(inner) if inner else i
            elif info.name == "lt-cache" and rng.random() < 0.5:
                # an outermost loop's cache now and then: what lt-prepack takes
                i = rng.choice([j for j, l in enumerate(loops) if not lt.enclosing_loops(l)])
            elif info.name == "lt-prepack" and rng.random() < 0.9:
                # mostly an outermost loop holding a cache (others are refused at once)
                held = [j for j in _cache_holders(loops) if not lt.enclosing_loops(loops[j])]
                i = rng.choice(held) if held else i
                if held and rng.random() < 0.8:
                    values["operand"] = -1
            elif info.name == "lt-min-blocks" and rng.random() < 0.9:
                # mostly a kernel's outermost block loop (others are refused at once)
                from ..analysis import gpu_mapping

                roots = [j for j, l in enumerate(loops) if gpu_mapping.mapping(l) == "block"
                         and not any(gpu_mapping.mapping(p) for p in lt.enclosing_loops(l))]
                i = rng.choice(roots) if roots else i
                values["blocks"] = rng.choice((1, 2, 2, 3, 8))
            elif info.name == "lt-double-buffer" and rng.random() < 0.9:
                # mostly a loop holding a cache (others are refused at once)
                held = _cache_holders(loops)
                i = rng.choice(held) if held else i
            elif info.name == "lt-pad" and rng.random() < 0.9:
                # mostly a loop holding a cache (others are refused at once)
                held = _cache_holders(loops)
                i = rng.choice(held) if held else i
                if held and rng.random() < 0.8:
                    values["operand"] = -1
                values["axis"] = rng.choice((-1, -1, 0, 1, 2, -1))
                values["every"] = rng.choice((1, 2, 3, 4, 8, 16, 32, 32))
                values["by"] = rng.choice((1, 2, 4, 4))
            elif info.name == "lt-expand" and rng.random() < 0.9:
                # mostly a loop that allocates a scratch buffer in its body, or (values=true)
                # one whose body's parts share a value (others are refused at once)
                crossing = _crossing_holders(loops)
                use_values = bool(crossing) and (rng.random() < 0.5 or not _alloc_holders(loops))
                held = crossing if use_values else _alloc_holders(loops)
                i = rng.choice(held) if held else i
                values["values"] = use_values
            elif info.name == "lt-sink-factor" and rng.random() < 0.9:
                # mostly a loop summing into a scalar whose result a product takes after it
                held = _sum_holders(loops)
                i = rng.choice(held) if held else i
            elif info.name == "lt-online-softmax" and rng.random() < 0.9:
                # mostly a loop holding a maximum (others are refused at once)
                held = _max_holders(loops)
                i = rng.choice(held) if held else i
            elif info.name == "lt-symmetric" and rng.random() < 0.9:
                # mostly a loop inside another (an outermost one is refused at once)
                inner = [j for j, l in enumerate(loops) if lt.enclosing_loops(l)]
                i = rng.choice(inner) if inner else i
            elif info.name == "lt-distribute" and rng.random() < 0.9:
                # mostly a loop whose body has parts to distribute (others are refused at once)
                from ..passes.distribute import body_parts

                parts = [j for j, l in enumerate(loops) if len(body_parts(l)) >= 2]
                i = rng.choice(parts) if parts else i
            values["loop"] = i
            target = loops[i]
            if info.name in ("lt-vectorize-data", "lt-prefetch-data"):
                # counted among the loops of bounds known at run time (mostly one that exists)
                from ..passes.vectorize_data import data_loops

                top = loops[0]
                while top.parent is not None and top.name != "builtin.module":
                    top = top.parent
                data = data_loops(top)
                values["loop"] = rng.randrange(len(data)) if data and rng.random() < 0.9 else len(data) + rng.randint(0, 1)
                target = None
    for name, opt in info.options.items():
        if name in values:
            continue
        if name == "factor":
            size = lt.loop_size(target) if target is not None else 64
            r = rng.random()
            if r < 0.5 and size >= 2:
                values[name] = rng.randint(2, min(size, 64))  # mostly accepted
            elif r < 0.9 or opt.default is None:
                values[name] = rng.randint(2, 64)
            else:
                values[name] = opt.default  # e.g. full unrolling
        elif name == "width":
            values[name] = rng.choice(WIDTHS)
        elif name == "distance":  # lt-prefetch, lt-prefetch-data: mostly ahead within a row, sometimes past every array's end
            values[name] = rng.choice((0, 1, 2, 4, 16, 64, 10**6))
        elif name == "delta":  # lt-resize: mostly one iteration, sometimes a few, rarely none
            r = rng.random()
            magnitude = 1 if r < 0.8 else rng.randint(2, 5) if r < 0.97 else 0
            values[name] = magnitude * rng.choice((1, -1))
        elif name == "to":  # lt-gpu-map
            values[name] = rng.choice(("block", "thread", "block", "thread", "warp"))
        elif name == "name":  # lt-unannotate
            values[name] = rng.choice(("parallel", "unroll", "vectorize", "gpu", "parallel", "unroll", "vectorize", "gpu", "fast"))
        elif name == "schedule":  # lt-parallel
            values[name] = rng.choice(("static", "dynamic", "guided", "static", "dynamic", "guided", "auto"))
        elif name == "threads":  # lt-gpu-auto
            values[name] = rng.choice((1, 7, 32, 64, 256, 2000))
        elif name == "order":  # lt-cache: mostly as it is, else a transposed (or 3-D permuted, or invalid) tile
            values[name] = rng.choice(("", "", "", "", "", "", "10", "10", "01", "3"))
        elif name == "operand" and info.name == "lt-cache" and target is not None and rng.random() < 0.7:
            read = _arguments_read(target)  # mostly an argument the loop reads (others are refused at once)
            values[name] = rng.choice(read) if read else rng.randint(0, 3)
        elif opt.type is bool:
            values[name] = rng.random() < 0.5
        elif opt.type is int:
            values[name] = rng.randint(0, 3)
        elif opt.default is None:
            values[name] = ""  # unknown kind of required option: the pass will say
    return values


def _cache_holders(loops) -> list:
    """Positions of the loops with an lt-cache buffer at the start of their body."""
    from ..dialect import lt

    return [j for j, l in enumerate(loops) if any(o.name == "lt.alloc" and "lt.cache" in o.attributes for o in lt.body_ops(lt.loop_body(l)))]


def _alloc_holders(loops) -> list:
    """Positions of the loops with a scratch lt.alloc (not a cache) in their body."""
    from ..analysis.dependence import PRIVATE_MARKERS
    from ..dialect import lt

    return [j for j, l in enumerate(loops) if any(o.name == "lt.alloc" and not any(m in o.attributes for m in PRIVATE_MARKERS)
                                                  for o in lt.body_ops(lt.loop_body(l)))]


def _crossing_holders(loops) -> list:
    """Positions of the loops whose body's parts (``lt-distribute``'s) share a value."""
    from ..passes.distribute import crossing_values

    return [j for j, l in enumerate(loops) if crossing_values(l)]


def _sum_holders(loops) -> list:
    """Positions of the loops lt-sink-factor takes (a scalar sum, a product after them)."""
    from ..passes.sink_factor import sinkable

    return [j for j, l in enumerate(loops) if sinkable(l)]


def _max_holders(loops) -> list:
    """Positions of the loops with an lt.reduce of kind max inside."""
    from ..analysis.dependence import accesses

    return [j for j, l in enumerate(loops) if any(a.kind == "reduce:max" for a in accesses(l))]


def _holds_cache(loops) -> bool:
    return bool(_cache_holders(loops))


def _has_kernel(loops) -> bool:
    from ..analysis import gpu_mapping

    return any(gpu_mapping.mapping(l) == "block" for l in loops)


# passes that act only on what an earlier step made (an lt-cache buffer, a kernel)
_NEEDS = {"lt-pad": _holds_cache, "lt-double-buffer": _holds_cache, "lt-min-blocks": _has_kernel,
          "lt-online-softmax": lambda loops: bool(_max_holders(loops)), "lt-sink-factor": lambda loops: bool(_sum_holders(loops)),
          "lt-expand": lambda loops: bool(_alloc_holders(loops) or _crossing_holders(loops))}


def _arguments_read(loop) -> list:
    """Positions of the function arguments that ``loop`` loads from."""
    from ..mlir import ir

    found = set()

    def visit(op):
        if op.name == "memref.load":
            v = op.operands[0]
            if isinstance(v.owner, ir.Block) and v.owner.owner is not None and v.owner.owner.name == "func.func":
                found.add(ir.BlockArgument(v).arg_number)
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    return sorted(found)


def _step_text(name: str, values: dict) -> str:
    if not values:
        return name
    opts = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items())
    return f"{name}{{{opts}}}"


def pipeline_text(steps: list[str]) -> str:
    return f"builtin.module({', '.join(steps)})"


def _schedule_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"lt-fuzz/{seed}/{index}")


def _describe_exception(e: BaseException) -> str:
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return "".join(tb)[-4000:]


class _Failed(Exception):
    def __init__(self, kind: str, detail: str):
        super().__init__(kind)
        self.kind, self.detail = kind, detail


_KERNELS: OrderedDict = OrderedDict()  # this worker's compiled kernels by (module text, bounds check)
_KERNELS_KEPT = 256
_PTX_ASSEMBLED: set = set()  # module texts whose PTX ptxas assembled, in this worker
_HOW = ["compiled"]  # how _compile had its last kernel (compiled, or which cache)
_SHARED: dict = {"dir": None}  # the run's folder where workers share what they compiled (--cache)


def _shared_path(text: str, what: str) -> str | None:
    """Where the run's workers keep ``what`` for a module text, or None when
    they share nothing (an in-process run)."""
    folder = _SHARED["dir"]
    if folder is None:
        return None
    import hashlib

    digest = hashlib.sha256(f"{what}\n{text}".encode()).hexdigest()
    return os.path.join(folder, digest[:2], digest)


def _shared_load(path: str | None):
    if path is None:
        return None
    import pickle

    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError):  # not there (or unreadable): compiled here
        return None


def _shared_store(path: str | None, value) -> None:
    """Written whole or not at all (another worker may be reading)."""
    if path is None:
        return
    import pickle

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:  # a full disk: the workers share less, nothing else changes
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _compile(module, check_bounds: bool, text: str | None = None):
    """``lt_mlir.compile`` (``text``: the module's, if printed already);
    returns the kernel.  GPU-mapped schedules compile for ``cuda-emulated``: the GPU lowering
    with blocks and threads run one after another on the CPU.

    Many schedules end in the same IR (most steps are refused), and more
    lower to the same LLVM IR: a module compiled before, by this worker or
    (through the run's ``--cache`` folder) another, or one whose LLVM IR
    was, is not optimised and compiled again: its object code is loaded
    (``NativeTarget.object_from_lowered``: the same bytes ``compile`` would
    have made) and run on the new schedule's inputs.  An error is not kept."""
    from ..targets import CompileOptions, get_target

    text = str(module) if text is None else text
    key = (text, check_bounds)
    kernel = _KERNELS.get(key)
    _HOW[0] = "worker"
    if kernel is None:
        target = "cuda-emulated" if "lt.gpu" in text else "cpu"
        options = CompileOptions(check_bounds=check_bounds)
        path = _shared_path(text, f"{target} {options}")
        obj = _shared_load(_shared_load(path))  # it holds where its LLVM IR's object code is
        _HOW[0] = "shared"
        if obj is None:
            t = get_target(target)
            lowered = t.lower(module, None, options, vector_math=True)
            path_ir = _shared_path(lowered.llvm_ir, f"llvm {options}")
            obj = _shared_load(path_ir)
            _HOW[0] = "llvm-ir"
            if obj is not None:  # its code, with this module's entry (the IR has no argument shapes)
                obj = dataclasses.replace(obj, name=lowered.name, specs=lowered.specs)
            else:
                _HOW[0] = "compiled"
                obj = t.object_from_lowered(lowered, options)
                _shared_store(path_ir, obj)
            _shared_store(path, path_ir)
        kernel = obj.kernel()
        _KERNELS[key] = kernel
        if len(_KERNELS) > _KERNELS_KEPT:
            _KERNELS.popitem(last=False)
    else:
        _KERNELS.move_to_end(key)
    return kernel


def _build(module, check_bounds: bool, text: str):
    """``(kernel, packs)``: the entry compiled (``_compile``) and, for a
    module ``lt-prepack`` changed, its pack functions compiled with it as
    ``[(kernel, source position)]`` (``passes.prepack.pack_plan``)."""
    from ..compiler import compile_functions
    from ..dialect import lt
    from ..passes.prepack import pack_plan

    plan = pack_plan(module.operation)
    if not plan:
        return _compile(module, check_bounds, text), []
    target = "cuda-emulated" if "lt.gpu" in text else "cpu"
    kernels = compile_functions(module, target=target, check_bounds=check_bounds)
    _HOW[0] = "compiled"
    entry = lt.functions(module.operation)[0].attributes["sym_name"].value
    return kernels[entry], [(kernels[name], k) for name, k in plan]


def _compare(got: np.ndarray, ref, scale, length: int, what: str) -> str | None:
    if got.shape != ref.shape:
        return f"{what}: shape {got.shape}, expected {ref.shape}"
    eps = np.finfo(got.dtype).eps
    bound = 2.0 * (length + 1) * eps * scale + np.finfo(got.dtype).tiny
    err = np.abs(got.astype(np.float64) - ref)
    bad = ~(err <= bound)  # NaN (an element never written) is bad
    if not bad.any():
        return None
    first = tuple(np.argwhere(bad)[0].tolist())
    return (
        f"{what}: {np.count_nonzero(bad)} of {got.size} elements off "
        f"({np.count_nonzero(np.isnan(got))} NaN); first at {first}: got {got[first]!r}, "
        f"expected {ref[first]!r} (bound {bound[first]:.3g})"
    )


def _run_guarded(kernel, xs: list, refs: list, packs: list = ()) -> str | None:
    """Run on guard-paged arrays, both guard sides; a mismatch or None.
    ``packs`` (``_build``'s): each pack function run first, on guarded
    arrays too, its result an input of the kernel after ``xs``."""
    from .guard import guarded_array, guarded_copy

    n_out = sum(1 for s in kernel.specs if s.written)
    n_in = len(kernel.specs) - n_out
    if n_in != len(xs) + len(packs) or n_out != len(refs) or any(s.written for s in kernel.specs[:n_in]):
        sig = ", ".join(f"{'out ' if s.written else ''}{s.element}{list(s.shape)}" for s in kernel.specs)
        raise _Failed("wrong-result", f"signature ({sig}) is not {len(xs)} inputs then {len(refs)} outputs")
    for side in SIDES:
        args = [guarded_copy(x, side=side, readonly=True) for x in xs]
        for pack, k in packs:
            spec = pack.specs[1]
            fill = np.nan if np.issubdtype(np.dtype(spec.dtype), np.floating) else np.iinfo(np.dtype(spec.dtype)).min
            packed = guarded_array(spec.shape, spec.dtype, fill=fill, side=side)  # unwritten: never read
            pack(args[k], packed)
            args.append(packed)
        outs = [guarded_array(s.shape, s.dtype, fill=np.nan, side=side) for s in kernel.specs[n_in:]]
        kernel(*args, *outs)
        for j, (o, (ref, scale, length)) in enumerate(zip(outs, refs)):
            problem = _compare(np.array(o), ref, scale, length, f"output {j} (guard at the {side})")
            if problem:
                return problem
    return None


def _check_ptx(module, text: str | None = None) -> bool:
    """A GPU-mapped schedule that ran right emulated must also give PTX
    that ptxas assembles (skipped, returning False, where ptxas is not
    installed)."""
    import lt_mlir

    from ..lowering.gpu import nvptx

    if nvptx.ptxas_path() is None:
        return False
    text = str(module) if text is None else text
    path = _shared_path(text, "ptxas")
    if text in _PTX_ASSEMBLED or (path and os.path.exists(path)):  # assembled before, here or by another worker
        return True
    try:
        ptx = lt_mlir.compiler.lower_cuda(module).ptx
        path_ptx = _shared_path(ptx, "ptxas ptx")  # modules that differ may give the same PTX
        complaint = None if path_ptx and os.path.exists(path_ptx) else nvptx.assemble(ptx)
    except Exception as e:  # noqa: BLE001 - the emulated lowering accepted it
        raise _Failed("ptx-exception", _describe_exception(e)) from None
    if complaint:
        raise _Failed("invalid-ptx", complaint)
    _PTX_ASSEMBLED.add(text)
    _shared_store(path_ptx, True)
    _shared_store(path, True)
    return True


_TEXTS: dict = {}  # (program, size) -> its module text, in this worker


def run_one(task: dict, seed: int, programs: tuple, passes: list, notify=None, verbose=None, context=None) -> dict:
    """``_run_one`` with every parallel loop run on threads, however little
    work it does (``LT_PARALLEL_MIN_WORK=0``: the fuzzer's programs are
    small, and the lowering would run most of their parallel loops on one
    thread, leaving the private tiles and atomic updates of shared
    reductions unfuzzed)."""
    old = os.environ.get("LT_PARALLEL_MIN_WORK")
    os.environ["LT_PARALLEL_MIN_WORK"] = "0"
    try:
        return _run_one(task, seed, programs, passes, notify, verbose, context)
    finally:
        if old is None:
            del os.environ["LT_PARALLEL_MIN_WORK"]
        else:
            os.environ["LT_PARALLEL_MIN_WORK"] = old


def _run_one(task: dict, seed: int, programs: tuple, passes: list, notify=None, verbose=None, context=None) -> dict:
    """Run one task and return its state (outcome, steps, loop tree, ...).

    Tasks: ``{"kind": "schedule", "index": i}`` (random steps, from ``seed``
    and ``i``); ``{"kind": "baseline", "program": name, "size": [...]}``
    (untransformed); ``{"kind": "pipeline", "program", "size", "steps":
    [step, ...], "data": [seed, index]}`` (given steps, the inputs of
    schedule ``index``: what minimisation runs).

    ``notify(state)`` is called with the state before compiling, so a crash
    afterwards can still be reported with its pipeline.  ``context``: the
    MLIR context to parse into (default: a fresh one)."""
    import lt_mlir

    from ..dialect.loop_tree import preorder_loops
    from ..errors import LtError, VerifyError
    from ..passes.registry import registry

    say = verbose or (lambda *_: None)
    kind = task["kind"]
    baseline = kind == "baseline"
    if kind == "schedule":
        rng = _schedule_rng(seed, task["index"])
        prog = PROGRAMS[rng.choice(programs)]
        size = rng.choice(prog.sizes)
        data_rng = np.random.default_rng([seed, task["index"]])
    else:
        prog = PROGRAMS[task["program"]]
        size = tuple(task["size"])
        data = task.get("data") or [seed, 1 << 30, list(PROGRAMS).index(prog.name), *size]
        data_rng = np.random.default_rng(data)
    text = _TEXTS.get((prog.name, size))
    if text is None:  # an imported program's text takes an import: made once a worker
        text = _TEXTS[prog.name, size] = prog.make(*size)
    state = {
        "program": prog.name,
        "size": list(size),
        "call": prog.call.format(", ".join(map(str, size))),
        "steps": [],  # [pass, step text, status]
        "pipeline": pipeline_text([]),
        "loop_tree": "",
        "notes": [],
    }
    say(f"program {state['call']}")
    try:
        module = lt_mlir.parse_module(text, context=context)
        if kind == "schedule":
            infos = registry()
            for _ in range(rng.randint(1, MAX_TRANSFORMS)):
                name = rng.choice(passes)
                if name in _NEEDS and not _NEEDS[name](preorder_loops(module.operation)):
                    name = rng.choice(passes)  # nothing for it to act on yet: another draw (they also follow lt-cache)
                values = _choose_options(rng, infos[name], preorder_loops(module.operation))
                module = _apply_step(module, name, _step_text(name, values), state, say)
                if name == "lt-cache" and state["steps"][-1][2] == "applied":
                    # a new cache's layout padded, its loop double-buffered, now and then
                    # (both need a cache: rare at random)
                    if "lt-pad" in passes and rng.random() < 0.8:
                        pad = _choose_options(rng, infos["lt-pad"], preorder_loops(module.operation))
                        pad.update(loop=values["loop"], operand=values["operand"])
                        module = _apply_step(module, "lt-pad", _step_text("lt-pad", pad), state, say)
                    if "lt-double-buffer" in passes and rng.random() < 0.5:
                        step = _step_text("lt-double-buffer", {"loop": values["loop"]})
                        module = _apply_step(module, "lt-double-buffer", step, state, say)
        elif kind == "pipeline":
            for step in task["steps"]:
                module = _apply_step(module, step.split("{", 1)[0].strip(), step, state, say)
        state["pipeline"] = pipeline_text(_applied(state))
        state["loop_tree"] = lt_mlir.loop_tree(module)
        say(state["loop_tree"])
        if notify:
            notify(state)
        xs = prog.inputs(data_rng, size)
        refs = prog.reference(xs, size)
        final = str(module)
        try:
            kernel, packs = _build(module, prog.check_bounds, final)
            state["kernel"] = _HOW[0]
        except VerifyError as e:
            if not prog.check_bounds:
                raise _Failed("compile-error", f"{type(e).__name__}: {e}") from None
            # The static bounds check refused.  In bounds after all?  Run it unchecked, guarded.
            state["notes"].append(f"bounds check: {e}")
            try:
                kernel, packs = _build(module, False, final)
                state["kernel"] = _HOW[0]
            except LtError as e2:
                raise _Failed("compile-error", f"{type(e2).__name__}: {e2}") from None
            except Exception as e2:
                raise _Failed("compile-exception", _describe_exception(e2)) from None
            problem = _run_checked(kernel, xs, refs, packs)
            if problem:
                raise _Failed("wrong-result", f"{problem} (the bounds check had refused: {e})")
            state["outcome"] = "bounds-false-positive"
            return state
        except LtError as e:
            raise _Failed("compile-error", f"{type(e).__name__}: {e}") from None
        except Exception as e:
            raise _Failed("compile-exception", _describe_exception(e)) from None
        problem = _run_checked(kernel, xs, refs, packs)
        if problem:
            raise _Failed("wrong-result", problem)
        if "lt.gpu" in final:
            state["gpu"] = ["emulated"]
            if _check_ptx(module, final):
                state["gpu"].append("ptxas")
        state["outcome"] = "ok"
    except _Failed as f:
        state["outcome"] = "fail"
        state["failure"] = {"kind": ("baseline-" if baseline else "") + f.kind, "detail": f.detail}
        state["pipeline"] = pipeline_text(_applied(state))
    return state


def _apply_step(module, name: str, step: str, state: dict, say):
    """Run one pass; record applied/refused/dirty in ``state``.  A refusal
    that modified the IR is noted and undone (returns the restored module)."""
    import lt_mlir

    from ..errors import LtError, PassError, PipelineError
    from ..passes.registry import run_pipeline

    before = module.operation.clone()  # a copy costs less than printing it
    try:
        run_pipeline(module, pipeline_text([step]))
    except (PassError, PipelineError) as e:
        status = "refused" if _same_ir(before, module.operation) else "dirty"
        state["steps"].append([name, step, status])
        if status == "dirty":
            state["notes"].append(f"{step} refused but left the IR modified (after {pipeline_text(_applied(state))}): {e}")
            module = lt_mlir.parse_module(before.get_asm(enable_debug_info=True), context=module.context)
        say(f"  {status:8} {step}: {e}")
        return module
    except LtError as e:
        state["steps"].append([name, step, "error"])
        raise _Failed("invalid-ir", f"{step}: {type(e).__name__}: {e}") from None
    except Exception as e:
        state["steps"].append([name, step, "error"])
        raise _Failed("pass-exception", f"{step}: {_describe_exception(e)}") from None
    state["steps"].append([name, step, "applied"])
    say(f"  applied  {step}")
    return module


def _same_ir(a, b) -> bool:
    """Whether two operations print alike, locations included (compared as
    bytecode first: writing it costs a tenth of printing)."""
    import io

    def bytecode(op) -> bytes:
        buf = io.BytesIO()
        op.write_bytecode(buf)
        return buf.getvalue()

    if bytecode(a) == bytecode(b):
        return True
    return a.get_asm(enable_debug_info=True) == b.get_asm(enable_debug_info=True)


def _applied(state) -> list[str]:
    """The steps that reproduce ``state``: those applied, and the one that
    failed (an exception or invalid IR) if any."""
    return [s[1] for s in state["steps"] if s[2] in ("applied", "error")]


def _run_checked(kernel, xs, refs, packs=()) -> str | None:
    try:
        return _run_guarded(kernel, xs, refs, packs)
    except _Failed:
        raise
    except Exception as e:
        raise _Failed("run-exception", _describe_exception(e)) from None


# ------------------------------------------------------------- worker process


def _worker_main(args) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The protocol gets its own copy of stdout; fd 1 then goes to stderr so
    # nothing printed by native code can corrupt it.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if args.mutant:
        mutants.install(args.mutant)
    _SHARED["dir"] = args.cache
    passes = fuzz_passes(args.mutant_pass, tuple(args.passes.split(",")) if args.passes else None)
    programs = tuple(args.programs.split(","))

    def send(msg):
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    from ..dialect import lt

    context = lt.new_context()  # one per worker: a fresh context costs more than a small compile
    send({"event": "ready", "passes": passes})
    for line in sys.stdin:
        task = json.loads(line)
        if task.get("kind") == "quit":
            break
        result = run_one(
            task, args.seed, programs, passes, notify=lambda s: send({"event": "pending", "state": s}), context=context
        )
        send({"event": "result", "state": result})


# ------------------------------------------------------------- the parent


@dataclass
class Failure:
    task: dict
    kind: str
    detail: str
    state: dict
    stderr: str = ""

    @property
    def signature(self) -> str:
        """What kind of bug this looks like, for grouping: the kind, the
        program for wrong results, the exception or error line otherwise
        (numbers and locations blanked)."""
        lines = [ln.strip() for ln in self.detail.strip().splitlines() if ln.strip()]
        if self.kind.endswith("wrong-result"):
            nan = "NaN)" in self.detail and "(0 NaN)" not in self.detail
            return f"{self.kind}: {self.state.get('program', '?')}{' (NaN left)' if nan else ''}"
        elif self.kind.endswith("exception"):
            key = lines[-1] if lines else ""
        else:
            key = lines[0] if lines else ""
            key = key.split(": ", 1)[1] if key.startswith("lt-") and ": " in key else key
        key = re.sub(r"-:\d+:\d+: ", "", key)
        key = re.sub(r"\d+", "N", key)
        return f"{self.kind}: {key[:110]}"

    def report(self, seed: int) -> str:
        s = self.state
        kind = self.task["kind"]
        where = {
            "schedule": f"schedule {self.task.get('index')}",
            "baseline": "baseline (untransformed)",
            "pipeline": f"schedule {self.task.get('index')} minimised to the steps below (its own inputs)",
        }[kind]
        lines = [
            f"FAILURE {self.kind}: seed {seed}, {where}",
            f"  program:  {s.get('call', '?')}",
            f"  pipeline: {s.get('pipeline', '?')}",
        ]
        tried = [f"{st[1]} [{st[2]}]" for st in s.get("steps", []) if st[2] not in ("applied", "error")]
        if tried:
            lines.append(f"  (also tried, not applied: {'; '.join(tried)})")
        if s.get("loop_tree"):
            lines.append("  loop tree:")
            lines += ["    " + ln for ln in s["loop_tree"].splitlines()]
        lines.append("  " + "\n  ".join(self.detail.rstrip().splitlines()))
        if self.stderr.strip():
            lines.append("  worker stderr (tail):")
            lines += ["    " + ln for ln in self.stderr.rstrip().splitlines()[-25:]]
        if kind in ("schedule", "pipeline"):
            lines.append(f"  replay: .venv/bin/python -m lt_mlir.testing.fuzz --seed {seed} --replay {self.task['index']}")
        if kind == "pipeline":
            lines.append(f"  or: lt_mlir.testing.fuzz.replay_pipeline({s.get('program')!r}, {tuple(s.get('size', ()))}, "
                         f"{s.get('pipeline')!r}, data={self.task.get('data')})")
        return "\n".join(lines)


@dataclass
class Summary:
    seed: int
    requested: int
    workers: int
    run: int = 0
    baselines: int = 0
    elapsed: float = 0.0
    attempted: Counter = field(default_factory=Counter)
    applied: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    dirty: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    programs: Counter = field(default_factory=Counter)
    gpu: Counter = field(default_factory=Counter)  # GPU-mapped schedules: "emulated", "ptxas"
    kernels: Counter = field(default_factory=Counter)  # how each schedule's kernel was had: compiled, llvm-ir, shared, worker
    notes: list = field(default_factory=list)  # (task index, note), first few of each kind
    failures: list = field(default_factory=list)
    restarts: int = 0
    log: list = field(default_factory=list)  # per schedule: (index, program, size, steps, outcome)
    minimized: dict = field(default_factory=dict)  # signature -> minimised Failure (see minimize)

    @property
    def total_applied(self) -> int:
        return sum(self.applied.values())

    @property
    def total_attempted(self) -> int:
        return sum(self.attempted.values())

    def text(self) -> str:
        lines = [
            f"lt_mlir.testing.fuzz: seed {self.seed}: {self.run} of {self.requested} schedules run "
            f"(+{self.baselines} baselines) on {self.workers} workers in {self.elapsed:.1f} s",
            f"transformations: {self.total_attempted} attempted, {self.total_applied} applied, "
            f"{sum(self.refused.values())} refused, {sum(self.dirty.values())} refused leaving the IR modified",
            f"  {'pass':22} {'attempted':>9} {'applied':>9} {'refused':>9} {'dirty':>6}",
        ]
        for name in sorted(self.attempted):
            lines.append(
                f"  {name:22} {self.attempted[name]:9} {self.applied[name]:9} {self.refused[name]:9} {self.dirty[name]:6}"
            )
        lines.append("programs: " + ", ".join(f"{k} {v}" for k, v in sorted(self.programs.items())))
        lines.append("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())))
        if self.gpu:
            lines.append(
                f"GPU-mapped: {self.gpu['emulated']} ran emulated (cuda-emulated), "
                f"{self.gpu['ptxas']} of them had their PTX assembled by ptxas"
            )
        if self.kernels:
            lines.append(
                f"kernels: {self.kernels['compiled']} optimised and compiled, {self.kernels['llvm-ir']} the object code of "
                f"a module that lowered to the same LLVM IR, {self.kernels['shared'] + self.kernels['worker']} "
                "of the same module (workers share object code)"
            )
        if self.restarts:
            lines.append(f"workers restarted after a crash or timeout: {self.restarts}")
        if self.notes:
            lines.append("notes (first of each kind):")
            for index, note in self.notes:
                lines.append(f"  [{index}] {note}")
        lines.append(f"failures: {len(self.failures)}")
        kinds = Counter(f.kind for f in self.failures)
        if kinds:
            lines.append("  " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        return "\n".join(lines)

    def groups(self) -> dict:
        """Failures by signature; each group's shortest pipeline first."""
        out: dict = {}
        for f in self.failures:
            out.setdefault(f.signature, []).append(f)
        for fs in out.values():
            fs.sort(key=lambda f: (len(_applied(f.state)), f.task.get("index", -1)))
        return out

    def report(self, max_failures: int = 20) -> str:
        """A full report of the simplest failure of each group, the groups, the summary."""
        groups = self.groups()
        parts = [self.minimized.get(sig, fs[0]).report(self.seed) for sig, fs in list(groups.items())[:max_failures]]
        if groups:
            lines = [f"failure groups ({len(groups)}; the simplest (or minimised) of each is shown above):"]
            for sig, fs in groups.items():
                idx = [str(f.task["index"]) for f in fs if f.task["kind"] == "schedule"]
                more = f" schedules {', '.join(idx[:12])}{' ...' if len(idx) > 12 else ''}" if idx else ""
                lines.append(f"  {len(fs):5}x {sig}{more}")
            parts.append("\n".join(lines))
        return "\n\n".join(parts + [self.text()])


class _Worker:
    def __init__(self, args: list[str], env: dict):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "lt_mlir.testing.fuzz", "--worker", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            cwd=REPO,
        )
        self.buffer = b""
        self.task = None
        self.position = -1
        self.state = None
        self.started = 0.0
        self.done = 0
        self.ready = False

    def send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def lines(self) -> tuple[list, bool]:
        """Complete lines read now, and whether the pipe is at EOF."""
        chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        self.buffer += chunk
        out = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            out.append(json.loads(line))
        return out, not chunk

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - n))
            return self.stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.stderr.close()


def _worker_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "2")
    # OpenMP threads sleep at once after a parallel loop instead of spinning
    # for 200 ms on the cores the other workers need.
    env.setdefault("KMP_BLOCKTIME", "0")
    return env


def _execute(
    tasks: list[dict],
    worker_args: list[str],
    workers: int,
    timeout: float,
    recycle: int = 5000,
    progress: Callable[[str], None] | None = None,
    time_limit: float | None = None,
) -> tuple[list, int]:
    """Run ``tasks`` on worker processes; returns ``([(task, state, failure
    or None) per task run, in task order], worker restarts)``.

    A worker that dies or overruns ``timeout`` is reported as a failure of
    its task and replaced; ``time_limit`` stops handing out tasks after that
    many seconds; a worker is replaced after ``recycle`` tasks (the JIT keeps
    native code around).  The workers share what they compile through a
    temporary folder, removed at the end."""
    with tempfile.TemporaryDirectory(prefix="lt-fuzz-") as folder:
        return _execute_in(tasks, [*worker_args, "--cache", folder], workers, timeout, recycle, progress, time_limit)


def _execute_in(tasks, worker_args, workers, timeout, recycle, progress, time_limit) -> tuple[list, int]:
    queue = list(enumerate(tasks))
    queue.reverse()  # pop() from the end
    results: dict = {}
    restarts = 0
    env = _worker_env()
    sel = selectors.DefaultSelector()
    pool: list[_Worker] = []
    start = time.monotonic()
    stop_feeding = False

    def spawn() -> _Worker:
        w = _Worker(worker_args, env)
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        pool.append(w)
        return w

    def retire(w: _Worker) -> None:
        sel.unregister(w.proc.stdout)
        pool.remove(w)
        w.kill()

    def feed(w: _Worker) -> None:
        nonlocal stop_feeding
        if time_limit is not None and time.monotonic() - start > time_limit:
            stop_feeding = True
        w.task = None
        if not queue or stop_feeding:
            return
        if w.done >= recycle:
            retire(w)
            spawn()
            return
        w.position, w.task = queue.pop()
        w.state = None
        w.started = time.monotonic()
        w.send(w.task)

    def finish(w: _Worker, state: dict, failure: Failure | None) -> None:
        results[w.position] = (w.task, state, failure)
        w.task = None
        w.done += 1
        if progress and len(results) % 500 == 0:
            bad = sum(1 for r in results.values() if r[2])
            progress(f"{len(results)} of {len(tasks)} tasks done, {bad} failed, {time.monotonic() - start:.0f} s")

    def died(w: _Worker, kind: str, detail: str) -> None:
        nonlocal restarts
        state = w.state or {
            "program": w.task.get("program", "?"),
            "steps": [],
            "pipeline": "(unknown: it died before reporting)",
            "loop_tree": "",
            "notes": [],
        }
        finish(w, state, Failure(w.task, kind, detail, state, w.stderr_tail()))
        restarts += 1
        retire(w)
        spawn()

    for _ in range(max(1, min(workers, len(tasks)))):
        spawn()
    try:
        while pool:
            now = time.monotonic()
            waits = [w.started + timeout - now for w in pool if w.task is not None]
            events = sel.select(timeout=max(0.05, min(waits)) if waits else 1.0)
            for key, _ in events:
                w = key.data
                if w not in pool:
                    continue
                msgs, eof = w.lines()
                for msg in msgs:
                    if msg["event"] == "ready":
                        w.ready = True
                        feed(w)
                    elif msg["event"] == "pending":
                        w.state = msg["state"]
                    elif msg["event"] == "result":
                        state = msg["state"]
                        failure = None
                        if state.get("outcome") == "fail":
                            failure = Failure(w.task, state["failure"]["kind"], state["failure"]["detail"], state)
                        finish(w, state, failure)
                        feed(w)
                    if w not in pool:
                        break
                if eof and w in pool:
                    rc = w.proc.wait()
                    if w.task is not None:
                        how = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
                        died(w, "crash", f"the worker died ({how}) while running this task")
                    elif not w.ready:
                        raise RuntimeError(f"lt_mlir.testing.fuzz: a worker failed to start:\n{w.stderr_tail()}")
                    else:
                        retire(w)
            now = time.monotonic()
            for w in list(pool):
                if w.task is not None and now - w.started > timeout:
                    died(w, "timeout", f"no result after {timeout:.0f} s; the worker was killed")
                elif w.task is None and w.ready and (not queue or stop_feeding):
                    retire(w)  # nothing left for it
    finally:
        for w in list(pool):
            w.kill()
        sel.close()
    return [results[i] for i in sorted(results)], restarts


def _worker_args(seed: int, programs, passes, mutants: bool, mutant: str | None = None) -> list[str]:
    args = ["--seed", str(seed), "--programs", ",".join(programs)]
    if passes:
        args += ["--passes", ",".join(passes)]
    if mutants:
        args.append("--mutant-pass")
    if mutant:
        args += ["--mutant", mutant]
    return args


def run(
    schedules: int,
    seed: int = DEFAULT_SEED,
    workers: int = 2,
    programs: tuple | list | None = None,
    passes: tuple | list | None = None,
    mutants: bool = False,
    first: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    baselines: bool = True,
    recycle: int = 5000,
    progress: Callable[[str], None] | None = None,
    time_limit: float | None = None,
    mutant: str | None = None,
) -> Summary:
    """Fuzz schedules ``first .. first + schedules - 1`` of ``seed`` on
    ``workers`` worker processes (after one untransformed baseline per
    program and size); returns the summary, failures included.

    ``programs``/``passes`` restrict the choice (default: every non-mutant
    program, every ``lt-*`` pass); ``mutants`` adds ``lt-fuzz-drop-tail``;
    ``mutant``: the workers run with that seeded bug (``mutants.MUTANTS``).
    ``time_limit`` (seconds): stop handing out schedules after that long
    (``Summary.run`` says how many ran)."""
    programs = tuple(programs or DEFAULT_PROGRAMS)
    unknown = [p for p in programs if p not in PROGRAMS]
    if unknown:
        raise ValueError(f"unknown program(s) {unknown}; have {list(PROGRAMS)}")
    tasks: list[dict] = []
    if baselines:
        for name in programs:
            for size in PROGRAMS[name].sizes:
                tasks.append({"kind": "baseline", "program": name, "size": list(size)})
    tasks += [{"kind": "schedule", "index": i} for i in range(first, first + schedules)]
    summary = Summary(seed, schedules, workers)
    start = time.monotonic()
    results, summary.restarts = _execute(
        tasks, _worker_args(seed, programs, passes, mutants, mutant), workers, timeout, recycle, progress, time_limit
    )
    summary.elapsed = time.monotonic() - start
    note_kinds = set()
    for task, state, failure in results:
        outcome = state.get("outcome") or "fail"
        if task["kind"] == "baseline":
            summary.baselines += 1
        else:
            summary.run += 1
            summary.programs[state.get("program", "?")] += 1
            for key in state.get("gpu", ()):
                summary.gpu[key] += 1
            if "kernel" in state:
                summary.kernels[state["kernel"]] += 1
            summary.log.append(
                (task["index"], state.get("program"), tuple(state.get("size", ())),
                 tuple(tuple(st) for st in state.get("steps", [])), failure.kind if failure else outcome)
            )
            for name, _step, status in state.get("steps", []):
                summary.attempted[name] += 1
                if status == "applied":
                    summary.applied[name] += 1
                elif status == "refused":
                    summary.refused[name] += 1
                elif status == "dirty":
                    summary.dirty[name] += 1
        summary.outcomes[("baseline " if task["kind"] == "baseline" else "") + (failure.kind if failure else outcome)] += 1
        for note in state.get("notes", []):
            kind = note.split(":", 1)[0].split("{", 1)[0]
            if kind not in note_kinds:
                note_kinds.add(kind)
                summary.notes.append((task.get("index", "baseline"), note))
            summary.outcomes["note: " + ("dirty refusal" if "refused but left" in note else kind)] += 1
        if failure:
            summary.failures.append(failure)
    return summary


def minimize(failure: Failure, seed: int, workers: int = 2, timeout: float = DEFAULT_TIMEOUT,
             programs=None, passes=None, mutants: bool = False, mutant: str | None = None) -> Failure:
    """A failure with as few transformations as still fail the same way
    (same signature): greedily drop one applied step at a time, on the
    schedule's own inputs, in worker processes (crashes included)."""
    if failure.task["kind"] == "baseline":
        return failure
    state = failure.state
    steps = _applied(state)
    data = [seed, failure.task["index"]] if failure.task["kind"] == "schedule" else failure.task.get("data")
    args = _worker_args(seed, tuple(programs or DEFAULT_PROGRAMS), passes, mutants, mutant)
    best = failure

    def task_for(candidate):
        return {"kind": "pipeline", "program": state["program"], "size": state["size"], "steps": candidate,
                "data": data, "index": failure.task.get("index")}

    changed = True
    while changed and steps:
        changed = False
        candidates = [steps[:i] + steps[i + 1 :] for i in range(len(steps))]
        results, _ = _execute([task_for(c) for c in candidates], args, workers, timeout)
        for (task, _st, f), candidate in zip(results, candidates):
            if f is not None and f.signature == failure.signature:
                # Keep only the steps the pipeline still applies.
                steps = _applied(f.state) if f.kind != "crash" or f.state.get("steps") else candidate
                best = f
                changed = True
                break
    if best is not failure and any(st[2] not in ("applied", "error") for st in best.state.get("steps", [])):
        # Drop the steps the pipeline refused too, if it still fails the same way.
        results, _ = _execute([task_for(_applied(best.state))], args, 1, timeout)
        if results and results[0][2] is not None and results[0][2].signature == failure.signature:
            best = results[0][2]
    return best


# ------------------------------------------------------------- CLI


def _replay(args) -> int:
    if args.mutant:
        mutants.install(args.mutant)
    passes = fuzz_passes(args.mutant_pass, tuple(args.passes.split(",")) if args.passes else None)
    programs = tuple(args.programs.split(","))
    print(f"replaying seed {args.seed}, schedule {args.replay} (a crash kills this process)")
    state = run_one({"kind": "schedule", "index": args.replay}, args.seed, programs, passes, verbose=print)
    print(f"pipeline: {state['pipeline']}")
    for note in state["notes"]:
        print(f"note: {note}")
    if state["outcome"] == "fail":
        print(f"FAILURE {state['failure']['kind']}:\n{state['failure']['detail']}")
        return 1
    print(f"outcome: {state['outcome']}")
    return 0


def replay_pipeline(program: str, size, pipeline: str, data=None, seed: int = DEFAULT_SEED, verbose=print) -> dict:
    """Run ``program`` at ``size`` through ``pipeline`` (one pass at a time,
    as the fuzzer does) and check it, in this process; returns the state
    (``state["outcome"]``, ``state.get("failure")``).  ``data``: the
    ``[seed, index]`` of the schedule whose inputs to use."""
    from ..passes.registry import split_top_level, strip_module_anchor

    if program.startswith("mutant-") or MUTANT_PASS in pipeline:
        register_mutant_pass()
    steps = split_top_level(strip_module_anchor(pipeline), pipeline)
    task = {"kind": "pipeline", "program": program, "size": list(size), "steps": steps, "data": data}
    return run_one(task, seed, (program,), [], verbose=verbose)


def mutation_test(names=None, schedules: int = 2000, seed: int = DEFAULT_SEED, workers: int = 2, chunk: int = 250,
                  timeout: float = DEFAULT_TIMEOUT, progress: Callable[[str], None] | None = None) -> list[dict]:
    """Fuzz with each seeded bug of ``mutants.MUTANTS`` (or ``names``) in
    turn, ``chunk`` schedules at a time, until one fails or ``schedules``
    ran; per mutant: ``caught`` (the index of the first failing schedule,
    +1: how many schedules it took) or None, the failure's kind, schedules
    run."""
    out = []
    for name in names or list(mutants.MUTANTS):
        m = mutants.MUTANTS[name]
        row = {"mutant": name, "layer": m.layer, "what": m.what, "caught": None, "kind": None, "run": 0}
        for first in range(0, schedules, chunk):
            s = run(min(chunk, schedules - first), seed, workers, mutants=m.pass_name is not None,
                    mutant=None if m.pass_name else name, first=first, timeout=timeout, baselines=False)
            row["run"] += s.run
            failing = [f for f in s.failures if f.task.get("kind") == "schedule"]
            if failing:
                f = min(failing, key=lambda f: f.task["index"])
                row["caught"], row["kind"] = f.task["index"] + 1, f.kind
                break
        if progress:
            progress(f"{name}: " + (f"caught after {row['caught']} schedules ({row['kind']})" if row["caught"]
                                    else f"NOT caught in {row['run']} schedules"))
        out.append(row)
    return out


def mutation_table(rows: list[dict], seed: int) -> str:
    """The Markdown table of ``mutation_test``'s rows."""
    lines = [f"Seed {seed}; each mutant fuzzed until the first failure, at most 2,000 schedules.", "",
             "| mutant | layer | the bug | caught after | as |", "|---|---|---|---|---|"]
    for r in rows:
        caught = (f"{r['caught']} schedule{'s' if r['caught'] > 1 else ''}" if r["caught"]
                  else f"not caught in {r['run']}")
        lines.append(f"| {r['mutant']} | {r['layer']} | {r['what']} | {caught} | {r['kind'] or ''} |")
    return "\n".join(lines)


def _mutation_test(args) -> int:
    rows = mutation_test(schedules=args.schedules or 2000, seed=args.seed,
                         workers=args.workers, timeout=args.timeout,
                         progress=lambda m: print(m, file=sys.stderr, flush=True))
    table = mutation_table(rows, args.seed)
    print(table, flush=True)
    _write_markdown(args.markdown, "Seeded bugs the fuzzer must catch", table)
    return 0 if all(r["caught"] for r in rows) else 1


def _write_markdown(path: str | None, title: str, body: str, code: bool = False) -> None:
    """``body`` under ``title``, the command that made it and the host, in ``path``."""
    if not path:
        return
    import platform

    command = "python -m lt_mlir.testing.fuzz " + " ".join(a for a in sys.argv[1:])
    host = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    lines = [f"# {title}", "", f"`{command}`, {time.strftime('%Y-%m-%d')}, on {host}.", ""]
    lines += ["```", body, "```"] if code else [body]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lt_mlir.testing.fuzz", description=__doc__.splitlines()[0])
    p.add_argument("--schedules", type=int, default=None, help="schedules to run (default 1000; with --mutants, 2000 a mutant)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed (default {DEFAULT_SEED})")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--first", type=int, default=0, help="index of the first schedule (default 0)")
    p.add_argument("--programs", default=",".join(DEFAULT_PROGRAMS), help="comma-separated programs")
    p.add_argument("--passes", default="", help="comma-separated passes (default: every lt-* pass)")
    p.add_argument("--mutant-pass", action="store_true", help="add the deliberately wrong pass lt-fuzz-drop-tail")
    p.add_argument("--mutant", default=None, metavar="NAME", help="run with one seeded bug (lt_mlir.testing.mutants)")
    p.add_argument("--mutants", action="store_true",
                   help="fuzz with each seeded bug in turn (up to --schedules each, 2000 by default) and report "
                        "after how many schedules each was caught")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per schedule")
    p.add_argument("--time-limit", type=float, default=None, help="stop handing out schedules after this many seconds")
    p.add_argument("--no-baselines", action="store_true", help="skip the untransformed runs")
    p.add_argument("--max-failures", type=int, default=20, help="failure reports to print in full")
    p.add_argument("--no-minimize", action="store_true", help="do not minimise the failures reported in full")
    p.add_argument("--replay", type=int, default=None, metavar="INDEX", help="run one schedule in this process, verbosely")
    p.add_argument("--markdown", default=None, metavar="PATH",
                   help="also write the summary (or the --mutants table) to PATH as Markdown, with the command and host")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cache", default=None, help=argparse.SUPPRESS)  # a worker's shared folder
    args = p.parse_args(argv)
    if args.mutant and args.mutant not in mutants.MUTANTS:
        raise SystemExit(f"lt_mlir.testing.fuzz: unknown mutant {args.mutant!r} (have {', '.join(mutants.MUTANTS)})")
    if args.worker:
        _worker_main(args)
        return 0
    if args.replay is not None:
        return _replay(args)
    # Killed (SIGTERM): unwind, so that the workers go and the shared folder is removed.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return _run_cli(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_cli(args) -> int:
    if args.mutants:
        return _mutation_test(args)
    summary = run(
        args.schedules or 1000,
        args.seed,
        args.workers,
        programs=tuple(args.programs.split(",")),
        passes=tuple(args.passes.split(",")) if args.passes else None,
        mutants=args.mutant_pass,
        mutant=args.mutant,
        first=args.first,
        timeout=args.timeout,
        baselines=not args.no_baselines,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
        time_limit=args.time_limit,
    )
    if summary.failures and not args.no_minimize:
        groups = list(summary.groups().items())[: args.max_failures]
        print(f"minimising {len(groups)} failure group(s) ...", file=sys.stderr, flush=True)
        for sig, fs in groups:
            summary.minimized[sig] = minimize(
                fs[0], args.seed, args.workers, args.timeout,
                programs=tuple(args.programs.split(",")),
                passes=tuple(args.passes.split(",")) if args.passes else None,
                mutants=args.mutant_pass,
                mutant=args.mutant,
            )
    print(summary.report(args.max_failures), flush=True)
    _write_markdown(args.markdown, "Differential fuzzing: a long run", summary.text(), code=True)
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
