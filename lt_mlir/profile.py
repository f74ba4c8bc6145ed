"""A per-loop profile from an instrumented build.

    >>> from lt_mlir.profile import profile_loops
    >>> p = profile_loops(schedule.text, repeat=50)   # the tuned clipped matmul of the README
    >>> print(p.annotate(schedule.loop_tree))
    100.0%     0.243 us own              for m in 8 r 1 : L0
      0.2%     0.516 us own               for m' in 4 : L1
      0.1%     0.389 us own                for n in 48 : L2
                                            C[m, n] <- 0.0
     99.8%   563.577 us own               for k in 4096 : L3
       ·  in L3 (36864 entries a call)     for m' in 4 : L4 [unroll full]
       ·  in L3 (147456 entries a call)     for n in 48 : L5 [unroll full, vectorize 16]
                                             %0 <- read A[m, k]
                                             ...
    total 564.725 us per call instrumented, 571.317 us plain: overhead -1.2% (median of 50 runs)

The share is of the whole call, children included; the own time excludes
the timed child loops.  L4 and L5 are entered too often to time (more than
``max_entries``, 4096, times a call).  Timed (``max_entries=10**9``), their
ten counter reads per iteration of k, around a few vector instructions each,
make the instrumented call 4x to 7x the plain one and most of what the
profile measures.  Here their time is in L3's own time, and the overhead is
within the noise.  (The plain time of this kernel itself varies up to 2x
from process to process: see the comment in ``profile_loops``.)

``lowering/profile.py`` puts a read of the cycle counter (``rdtsc``) before
and after every loop entered at most ``max_entries`` times a call (and inside
no untimed loop) and adds the difference into a counter per loop.  The
instrumented kernel and the plain one are timed in turns on the same
inputs; the counters, read after the timed runs, split the instrumented
kernel's time among the loops: a loop's *inclusive* time is its share of the
cycles the top-level loops counted times the measured time of a call, its
*own* time that minus its timed child loops' inclusive times.  Loops under a
parallel loop count cycles on every thread; the parallel loop's wall time
over its bodies' summed time scales them back to wall time, so the own
times of the timed loops add up to the total.  The instrumentation costs
two counter reads and an add per entry of a timed loop (an atomic add inside
a parallel loop); the bound on the entries keeps small inner loops run many
times from weighing most.  ``LoopProfile.overhead`` states what it cost.

Both kernels are timed as ``lt-opt --run`` times them (a call
through ``Kernel``, argument checks included: some microseconds, which the
profile spreads over the top-level loops with the rest of a call).

On a GPU mapping (``target="cuda"`` or ``"cuda-emulated"``) the loops are
timed by thread (0, 0, 0) of each block with ``%clock64`` (emulated: by
every thread with the cycle counter), the launches by CUDA events between
them; a timed loop's share of its launch's counted cycles splits the
launch's wall time (``lowering/profile.py``, "GPU"; README, "The per-loop
profile on the GPU").  Mapped and unrolled loops are not timed.
"""

from __future__ import annotations

import ctypes
import functools
import time
from dataclasses import dataclass, field

import numpy as np

from . import compiler
from .errors import ArgumentError, CompileError, LtError, with_filename
from .lowering import machine
from .lowering.profile import COUNTERS, MAX_ENTRIES, GpuProfileLayout, ProfileLayout, define_cycle_counter, instrument_gpu_loops, instrument_loops
from .mlir import ir
from .runtime import native
from .runtime.kernel import Kernel
from .runtime.loop_profile import LoopProfile, LoopTime, gpu_loop_profile, loop_times
from .runtime.specs import random_inputs
from .runtime.timing import interleaved_medians
from .targets import CompileOptions, get_target

__all__ = ["InstrumentedKernel", "LoopProfile", "LoopTime", "compile_instrumented", "compile_instrumented_gpu", "cycles_per_second",
           "profile_loops", "save_instrumented_gpu"]


@dataclass
class InstrumentedKernel:
    """An instrumented build: the kernel, its counter layout, and the JIT
    module that owns the code and the counters."""

    kernel: Kernel
    layout: ProfileLayout | GpuProfileLayout  # (both have the buffer's size)
    jit: native.JitModule = field(repr=False)

    def counters(self) -> np.ndarray:
        """The counter buffer, in place (int64 cycles; see ``ProfileLayout``)."""
        address = self.jit.engine.get_global_value_address(COUNTERS)
        if not address:
            raise CompileError(f"error: no @{COUNTERS} in the compiled module")
        return np.ctypeslib.as_array((ctypes.c_int64 * self.layout.size).from_address(address))

    def zero(self) -> None:
        self.counters()[:] = 0


def _copy(module_or_text, filename: str) -> ir.Module:
    if isinstance(module_or_text, str):
        return compiler.parse_module(module_or_text, filename)
    op = module_or_text.operation
    return compiler.parse_module(op.get_asm(enable_debug_info=True), filename, op.context)


def _jit(lowered: compiler.Lowered, llvm_ir: str) -> tuple[Kernel, native.JitModule]:
    mod = machine.optimize(llvm_ir)
    jit = native.JitModule(mod, lowered.openmp)
    return Kernel(lowered.name, lowered.specs, jit.address(lowered.name), jit, str(mod)), jit


def compile_instrumented(
    module_or_text, entry: str | None = None, filename: str = "-", max_entries: int = MAX_ENTRIES
) -> InstrumentedKernel:
    """Compile an lt module (or its text) for this CPU with every loop
    entered at most ``max_entries`` times a call timed
    (``lowering/profile.py``)."""
    module = _copy(module_or_text, filename)
    try:
        layout = instrument_loops(module, max_entries)
    except LtError as e:
        raise with_filename(e, filename) from None
    lowered = compiler.lower(module, entry, filename, vector_math=True)  # as compile's: the same math calls
    kernel, jit = _jit(lowered, define_cycle_counter(lowered.llvm_ir))
    return InstrumentedKernel(kernel, layout, jit)


@functools.cache
def cycles_per_second() -> float:
    """The rate of the cycle counter the profile reads (``rdtsc`` counts at
    a constant rate on current x86 CPUs), measured against the wall clock."""
    lowered_ir = (
        "define i64 @lt_read_cycles() {\n  %1 = call i64 @llvm.readcyclecounter()\n  ret i64 %1\n}\n"
        "declare i64 @llvm.readcyclecounter()\n"
    )
    jit = native.JitModule(machine.optimize(lowered_ir))
    read = ctypes.CFUNCTYPE(ctypes.c_uint64)(jit.address("lt_read_cycles"))
    c0, t0 = read(), time.perf_counter()
    time.sleep(0.02)
    c1, t1 = read(), time.perf_counter()
    del jit
    return (c1 - c0) / (t1 - t0)


def _arrays(specs, inputs, seed: int = 0) -> list:
    """One array per argument: ``inputs`` for the read-only ones (random
    when None, as ``lt-opt --run`` makes them), zeros for the written ones."""
    read_only = [s for s in specs if not s.written]
    if inputs is None:
        inputs = random_inputs(read_only, seed)
    inputs = list(inputs)
    if len(inputs) != len(read_only):
        raise ArgumentError(f"the profile takes {len(read_only)} input arrays (the read-only arguments); got {len(inputs)}")
    given = iter(inputs)
    return [np.zeros(s.shape, s.dtype) if s.written else next(given) for s in specs]


def profile_loops(
    module_or_text,
    entry: str | None = None,
    inputs=None,
    repeat: int = 20,
    target="cpu",
    max_entries: int = MAX_ENTRIES,
) -> LoopProfile:
    """Time the entry of an lt module (or its text) loop by loop on this CPU:
    an instrumented build and the plain one run in turns, ``repeat`` timed
    runs each after a warm-up, on ``inputs`` (the read-only arguments in
    order; random when None).  Loops are numbered as in the loop tree.  A
    loop entered more than ``max_entries`` times a call (or inside such a
    loop) is not timed: it is listed with ``timed=False``, its time in the
    own time of the nearest timed loop around it."""
    t = get_target(target)
    repeat = max(1, int(repeat))
    if t.gpu_mapping:
        return _profile_gpu(module_or_text, entry, inputs, repeat, t, max_entries)
    if not t.native:
        raise CompileError(f"error: the per-loop profile runs on the CPU or a GPU mapping; target '{t.name}' is neither")
    plain = compiler.compile(module_or_text, entry)
    inst = compile_instrumented(module_or_text, entry, max_entries=max_entries)
    arrays = _arrays(plain.specs, inputs)
    inst_arrays = [a.copy() if s.written else a for s, a in zip(plain.specs, arrays)]
    # Called as lt-opt --run calls kernels, argument checks included.  (The
    # same native code called through a bare ctypes pointer with *args timed
    # up to 2x apart on this project's machine: the tuned matmul spills its
    # tile to a stack the caller's path leaves at another offset.)
    def run_plain():
        plain(*arrays)

    def run_inst():
        inst.kernel(*inst_arrays)

    run_plain(), run_inst()  # warm-up (OpenMP threads, caches)
    inst.zero()
    medians = interleaved_medians({"plain": run_plain, "instrumented": run_inst}, repeat, warmup=0)
    cycles = inst.counters().astype(np.float64) / repeat
    return _profile(inst.layout, cycles, medians["instrumented"], medians["plain"], repeat)


def _profile(layout: ProfileLayout, cycles: np.ndarray, total_s: float, plain_s: float, repeat: int) -> LoopProfile:
    """Counter values per call -> times per call (see the module's docstring)."""
    n, timed = layout.loops, layout.timed

    def ratio(p: int) -> float:  # wall cycles of concurrent loop Lp per cycle of its bodies
        body = cycles[layout.bodies[p]] if p in layout.bodies else 0.0
        return cycles[p] / body if body > 0 else 1.0

    wall = []
    for i in range(n):
        scale, p = 1.0, layout.parents[i]
        while p is not None:
            if layout.concurrent[p]:
                scale *= ratio(p)
            p = layout.parents[p]
        wall.append(cycles[i] * scale)
    top = sum(wall[i] for i in range(n) if layout.parents[i] is None)
    seconds = [w / top * total_s if top > 0 else 0.0 for w in wall]
    loops = loop_times(layout.parents, timed, seconds, layout.entries, total_s)
    return LoopProfile(loops, total_s, plain_s, top / cycles_per_second(), repeat)




# ------------------------------------------------------------------ GPU


def compile_instrumented_gpu(module_or_text, entry: str | None = None, target="cuda", filename: str = "-",
                             max_entries: int = MAX_ENTRIES, arch: str | None = None):
    """(kernel, GpuProfileLayout, JIT module or None): the schedule built for
    ``target`` (``cuda`` or ``cuda-emulated``) with its launches and the
    loops a thread enters at most ``max_entries`` times a call timed
    (``lowering/profile.py``).  The counters are the global
    ``lt_profile_counters``: read with ``CudaKernel.global_array`` on a GPU,
    through the JIT emulated.  ``arch``: the GPU architecture (cuda)."""
    from .dialect.entry import find_function

    t = get_target(target)
    module = _copy(module_or_text, filename)
    try:
        layout = instrument_gpu_loops(module, find_function(module.operation, entry), max_entries)
    except LtError as e:
        raise with_filename(e, filename) from None
    if t.native:
        lowered = t.lower(module, entry, filename=filename, vector_math=True)
        kernel, jit = _jit(lowered, define_cycle_counter(lowered.llvm_ir))
        return kernel, layout, jit
    return t.compile(module, entry, CompileOptions(arch=arch), filename=filename), layout, None


def save_instrumented_gpu(module_or_text, prefix: str, arch: str | None = None, entry: str | None = None) -> GpuProfileLayout:
    """The instrumented CUDA build of a schedule as files a GPU machine
    without MLIR can profile from: ``<prefix>.profiled.ptx/.json`` (as
    ``runtime.cuda.load`` reads them) and ``<prefix>.layout.json`` (the
    counter layout and the loop tree to annotate,
    ``runtime.loop_profile.gpu_loop_profile``).  Returns the layout."""
    import dataclasses
    import json

    from .dialect.loop_tree import loop_tree
    from .runtime import cuda

    kernel, layout, _ = compile_instrumented_gpu(module_or_text, entry, target="cuda", arch=arch)
    cuda.save(f"{prefix}.profiled", kernel.meta, kernel.ptx)
    with open(f"{prefix}.layout.json", "w") as fh:
        json.dump({**dataclasses.asdict(layout), "loop_tree": loop_tree(module_or_text, entry)}, fh)
    return layout


def _profile_gpu(module_or_text, entry, inputs, repeat: int, t, max_entries: int) -> LoopProfile:
    """``profile_loops`` for a GPU mapping: on ``cuda`` the launches timed by
    CUDA events and split by thread 0's %clock64 counts in each block;
    ``cuda-emulated``, everything by the CPU's cycle counter."""
    if not t.native:
        from .runtime import cuda

        problem = cuda.device_problem()  # before compiling twice for nothing
        if problem is not None:
            raise CompileError(f"error: the profile on target '{t.name}' runs on a CUDA device, and this process has none "
                               f"({problem}); target cuda-emulated profiles the GPU lowering on the CPU")
    plain = t.compile(module_or_text, entry)
    inst, layout, jit = compile_instrumented_gpu(module_or_text, entry, t, max_entries=max_entries)
    arrays = _arrays(plain.specs, inputs)
    inst_arrays = [a.copy() if s.written else a for s, a in zip(plain.specs, arrays)]
    if t.native:
        counted = InstrumentedKernel(inst, layout, jit)  # (its counters: the JIT's global, as on the CPU)
        plain(*arrays), inst(*inst_arrays)  # warm-up
        counted.zero()
        medians = interleaved_medians({"plain": lambda: plain(*arrays), "instrumented": lambda: inst(*inst_arrays)}, repeat, warmup=0)
        cycles = counted.counters().astype(np.float64) / repeat
        total = cycles[layout.loops:].sum()
        launch_s = [c / total * medians["instrumented"] if total > 0 else 0.0 for c in cycles[layout.loops:]]
        return gpu_loop_profile(layout, cycles, launch_s, medians["instrumented"], medians["plain"], repeat)
    with plain, inst:
        plain_s = float(np.median(plain.time(*arrays, repeat=repeat)))
        inst(*inst_arrays)  # loads the module
        inst.zero_global(COUNTERS)
        runs = inst.time_launches(*inst_arrays, warmup=0, repeat=repeat)
        cycles = inst.global_array(COUNTERS, np.int64).astype(np.float64)[: layout.size] / repeat
    launch_s = [float(np.median([r[k] for r in runs])) for k in range(len(runs[0]))]
    total_s = float(np.median([sum(r) for r in runs]))
    return gpu_loop_profile(layout, cycles, launch_s, total_s, plain_s, repeat)
