"""A per-loop profile's figures (``lt_mlir/profile.py`` measures them):
what a loop's time is, and the annotated loop tree.  No MLIR here, so a
machine with only the CUDA runtime (``runtime/cuda.py``) can turn the GPU
profile's counters into an annotated tree (``benchmarks/bench_cuda.py``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np


@dataclass
class LoopTime:
    index: int  # L-number
    inclusive_s: float  # seconds per kernel call spent inside this loop (children included)
    own_s: float  # inclusive minus its timed child loops' inclusive
    share: float  # inclusive_s / total_s
    timed: bool = True  # False: entered too often to time; its time is in ``within``'s own time, its figures are zero
    entries: int = 1  # times the loop is entered a call of its function
    within: int | None = None  # untimed: the L-number of the nearest timed loop around it
    note: str | None = None  # GPU: why it is untimed: "blocks" or "threads" (mapped: its iterations run side by side), "unrolled"


@dataclass
class LoopProfile:
    loops: list[LoopTime]
    total_s: float  # median seconds per call of the instrumented kernel
    plain_s: float  # median seconds per call of the same schedule uninstrumented
    counted_s: float = 0.0  # seconds per call the top-level loops counted, at the cycle counter's own rate
    repeat: int = 0  # timed runs of each kernel

    @property
    def overhead(self) -> float:
        """What the instrumentation costs: instrumented time / plain time - 1."""
        return self.total_s / self.plain_s - 1 if self.plain_s > 0 else 0.0

    def annotate(self, loop_tree_text: str) -> str:
        """``loop_tree_text`` (``lt_mlir.loop_tree`` of the profiled module)
        with a column in front: share of the total and own time on each timed
        loop's line (``ms``, or ``us`` when a call takes under a
        millisecond), where the time of an untimed loop went (``·  in L3
        (36864 entries a call)``) on its line, blank on the others; and a
        last line with the total, the plain time and the overhead."""
        scale, unit = (1e3, "ms") if self.total_s >= 1e-3 else (1e6, "us")
        by_index = {l.index: l for l in self.loops}
        rows = []
        for line in loop_tree_text.splitlines():
            m = _LOOP_LINE.search(line)
            t = by_index.get(int(m.group(1))) if m else None
            rows.append((_column(t, scale, unit) if t else "", line))
        width = max([len(_column(LoopTime(0, 0.0, 0.0, 0.0), scale, unit))] + [len(c) for c, _ in rows])
        lines = [f"{c:<{width}}  {line}" for c, line in rows]
        runs = f" (median of {self.repeat} runs)" if self.repeat else ""
        lines.append(
            f"total {self.total_s * scale:.3f} {unit} per call instrumented, {self.plain_s * scale:.3f} {unit} plain: "
            f"overhead {self.overhead * 100:+.1f}%{runs}"
        )
        return "\n".join(lines)


_LOOP_LINE = re.compile(r": L(\d+)(?: \[[^\]]*\])?$")


def _column(t: LoopTime, scale: float, unit: str) -> str:
    if not t.timed:
        where = f"in L{t.within}" if t.within is not None else "untimed"
        if t.note:
            return f"   ·  {t.note}, {where}"
        return f"   ·  {where} ({t.entries} entries a call)"
    return f"{t.share * 100:5.1f}%  {t.own_s * scale:8.3f} {unit} own"


def loop_times(parents: list, counted: list, seconds: list, entries: list, total_s: float, notes: list | None = None) -> list:
    """A LoopTime a loop: a counted loop's inclusive ``seconds``, its own
    (minus the counted loops whose nearest counted loop around them it is)
    and share; an uncounted one's time is in that nearest counted loop's
    own time (``within``), ``notes[i]`` saying why it is not timed."""
    n = len(parents)

    def around(i):  # the nearest counted loop around Li
        q = parents[i]
        while q is not None and not counted[q]:
            q = parents[q]
        return q

    children = [0.0] * n
    for i in range(n):
        if counted[i] and around(i) is not None:
            children[around(i)] += seconds[i]
    loops = []
    for i in range(n):
        if counted[i]:
            share = seconds[i] / total_s if total_s > 0 else 0.0
            loops.append(LoopTime(i, seconds[i], seconds[i] - children[i], share, True, entries[i]))
        else:
            loops.append(LoopTime(i, 0.0, 0.0, 0.0, False, entries[i], around(i), notes[i] if notes else None))
    return loops


def gpu_loop_profile(layout, cycles: np.ndarray, launch_s: list, total_s: float, plain_s: float,
                 repeat: int) -> LoopProfile:
    """The GPU profile's counter values per call -> times per call: a
    timed loop's share of its launch's counted cycles times the launch's
    wall time (``launch_s``); a kernel's root loop, its launch's wall time.
    ``layout``: a ``lowering.profile.GpuProfileLayout`` or anything with its
    fields (its JSON read back on a machine without MLIR)."""
    n = layout.loops
    launch_of = {r: k for k, roots in enumerate(layout.launches) for r in roots}
    counted = [layout.timed[i] or (layout.parents[i] is None and i in launch_of and bool(layout.mapped[i])) for i in range(n)]
    seconds = [0.0] * n
    for i in range(n):
        k = launch_of.get(_root(layout, i))
        if k is None or not counted[i]:
            continue
        if layout.parents[i] is None and layout.mapped[i]:
            seconds[i] = launch_s[k]
        elif cycles[n + k] > 0:
            seconds[i] = cycles[i] / cycles[n + k] * launch_s[k]
    loops = loop_times(layout.parents, counted, seconds, layout.entries, total_s, layout.why)
    return LoopProfile(loops, total_s, plain_s, 0.0, repeat)


def _root(layout, i: int) -> int:
    while layout.parents[i] is not None:
        i = layout.parents[i]
    return i
