"""What the schedule search's cost model reads: a fixed-length description of
an lt module that means the same for every program (pure analysis: nothing
is compiled or run).

Every memory access (``memref.load``, ``memref.store``, ``lt.reduce``)
counts with its execution count (``features``' weight: the product of the
trip counts ``size + (1 if tail)`` of its loops), and the features are
averages over the accesses with those weights, or totals over them, so a
program's size and shape do not decide the length of the vector.

Runtime loops.  A completely unrolled loop (``unroll`` full, or a loop of
at most ``TINY_TRIPS`` iterations with no loop inside, which LLVM unrolls)
is no loop in the machine code: its iterations are copies of the body in
the loop around it.  The loops an access runs in are its enclosing loops
that are not unrolled (a vectorized loop runs ``elements / width`` vector
iterations, and its leftover elements one at a time); "innermost" below
means the innermost of those.  LLVM may vectorize an innermost loop by
itself when each access in it moves by less than a cache line an
iteration and no reduction of one element runs across it (``autovec``),
and the copies of an unrolled body whose accesses are contiguous
(``slp_share``).

``cost_features(module, levels)`` returns ``COST_FEATURES`` (global) then
``levels`` rows of ``LEVEL_FEATURES``, row j describing the j-th runtime
loop around each access counted from the innermost (j = 0), averaged over
the accesses that have one:

* trip counts (log2), tails;
* the stride of the access with respect to that loop, in classes: 0 (the
  element is reused across its iterations), 1 (contiguous), under a cache
  line, a line or more, unknown (a clamp, an indirection);
* its annotations: vector lanes (the elements a vector iteration covers,
  leftovers counted), body copies (the unrolled loops inside it down to
  the next runtime loop, times its own partial unroll), parallel;
* its footprint: the bytes (whole 64-byte lines) one complete run of the
  loop touches, all buffers, log2 of the ratio to the L1 size
  (``L1_BYTES``), and whether it fits L1 and L2 (``L2_BYTES``).

Global features: the problem (log2 accesses, arithmetic ops and
transcendental ops a call, element bytes, bytes of all buffers), the loop
structure (loops, runtime depth, innermost bodies, tails, scratch
buffers), vector code (share of accesses under ``vectorize``, its width,
gathers: vector accesses of another stride than 0 or 1, horizontal
reductions, loops LLVM may vectorize itself), unrolling (body copies,
unrolled body size), parallelism (share of the work under ``parallel``,
parallel iterations, fork/joins a call, work a fork/join and a thread),
reduction chains (an ``lt.reduce`` of one element across the innermost
loop: a chain of dependent operations, and how many independent
accumulators the unrolled body keeps), and the estimated cache misses at
L1 and L2 a call (a reuse-distance model: an access's lines come in once
per run of the outermost loop around it whose footprint fits the cache,
and again for every iteration of the loops outside that one).

The ``est_*`` features are a rough cost model of their own, in cycles per
access: the compute (an access a cycle, over its vector lanes: the width
of an explicit vector loop for strides 0 and 1, 32 bytes' worth in a loop
LLVM may vectorize; a gather costs two), reduction chains (4 cycles a
link, over the independent accumulators), cache misses (4 cycles an L1
miss, 12 an L2 one), loop overhead (a cycle an iteration) and fork/joins
(3000 cycles each), compute and chains under a parallel loop shared by its
threads.  They give the model the interactions its trees would have to
find from few samples.

Footprints count distinct cache lines per buffer: for each access, its
strides sorted from the smallest, a stride within the contiguous run so
far extends the run (``X[i + j]``: one run of n + w - 1 elements), a
larger one repeats it; accesses of one buffer share their lines (the
largest of them counts).
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..dialect import lt
from ..mlir import ir
from .features import _Analysis

L1_BYTES = 32 * 1024
L2_BYTES = 512 * 1024
LINE_BYTES = 64
TINY_TRIPS = 4  # a loop of this few iterations and no loop inside is unrolled by LLVM

COST_FEATURES: list[str] = [
    "log_accesses",  # log2 weighted accesses a call
    "log_arith",  # log2 weighted arithmetic ops a call
    "transcendental",  # share of arithmetic ops that are exp/log/div/sqrt/...
    "element_bytes",
    "log_buffer_bytes",  # log2 bytes of every buffer (arguments and scratch)
    "loops",
    "runtime_depth",  # weighted mean runtime loops around an access
    "innermost_bodies",  # runtime loops with no runtime loop inside
    "top_nests",  # loops directly in a function
    "tail_share",  # share of accesses under a loop with a tail
    "scratch_buffers",
    "scratch_share",  # share of accesses to scratch buffers
    "vector_share",  # share of accesses under a vectorized loop
    "vector_width",  # weighted mean log2 width (0 outside vector loops)
    "vector_lanes",  # weighted mean log2 elements a vector iteration covers (leftovers run one at a time)
    "vector_trips",  # weighted mean log2 vector iterations a run of the vector loop
    "vector_contiguous",  # share of accesses that are vector loads/stores of stride 1
    "vector_broadcast",  # ... of stride 0
    "gathers",  # ... of another or an unknown stride (gathers, scatters)
    "vector_tail",  # share of accesses under a vectorized loop with a tail
    "vector_reduce",  # share of accesses that reduce across a vector loop (horizontal)
    "autovec_share",  # share of accesses in an innermost loop LLVM may vectorize
    "autovec_trips",  # weighted mean log2 trips of those loops
    "slp_share",  # share of accesses whose copies in the innermost loop's unrolled body are contiguous
    "log_copies",  # weighted mean log2 body copies of unrolling
    "log_max_copies",
    "log_unrolled_size",  # log2 (1 + accesses in the unrolled code, all bodies)
    "unroll_share",  # share of accesses under a completely unrolled loop
    "parallel_share",  # share of accesses under a parallel loop
    "log_parallel_trips",  # weighted mean log2 iterations of the parallel loop
    "log_forks",  # log2 (1 + parallel regions entered a call)
    "log_work_per_fork",  # log2 accesses a parallel region
    "log_work_per_thread",  # log2 accesses a thread (the region over min(trips, cores))
    "thread_balance",  # iterations over (cores x ceil(iterations / cores)): 1 when all are busy
    "nested_parallel",  # share of accesses under two parallel loops
    "reduce_chain",  # share of accesses that are reduces of one element across the innermost loop
    "log_accumulators",  # weighted mean log2 independent accumulators of those chains
    "inner_contiguous",  # share of accesses of stride 0 or 1 w.r.t. the innermost loop
    "inner_large_stride",  # share of a line or more w.r.t. the innermost loop
    "inner_unknown",  # share of unknown stride
    "log_inner_trips",  # weighted mean log2 innermost trip count
    "no_loop_share",  # share of accesses outside every runtime loop
    "l1_miss_rate",  # estimated L1 misses (lines) a call over accesses
    "l2_miss_rate",
    "log_l1_misses",
    "log_l2_misses",
    "log_inner_footprint",  # weighted mean log2 bytes of the innermost loop's run
    # a rough estimate of the cycles a call, per access (log2 (1 + x)), and its parts
    "est_compute",  # an access a cycle, over the vector lanes it gets; gathers twice that
    "est_chain",  # reduction chains: 4 cycles a link, over the independent accumulators
    "est_memory",  # 4 cycles an L1 miss, 12 an L2 miss
    "est_loops",  # a cycle an iteration of each runtime loop
    "est_forks",  # 3000 cycles a parallel region
    "est_total",  # their sum, the compute and the chains shared by the threads of a parallel loop
]

LEVEL_FEATURES: list[str] = [
    "present",  # share of accesses with a runtime loop at this level
    "log_trips",
    "tail",
    "stride_zero",
    "stride_unit",
    "stride_short",  # 2 .. under a cache line (elements)
    "stride_long",  # a line or more
    "stride_unknown",
    "log_vector",  # log2 elements a vector iteration covers
    "log_copies",  # log2 body copies: the unrolled loops inside, down to the next runtime loop
    "parallel",
    "footprint_l1",  # log2 (its run's bytes / L1_BYTES)
    "fits_l1",
    "fits_l2",
]

_TRANSCENDENTAL = ("math.", "arith.divf", "arith.remf", "arith.divsi", "arith.divui", "arith.remsi", "arith.remui")

__all__ = ["COST_FEATURES", "L1_BYTES", "L2_BYTES", "LEVEL_FEATURES", "cost_features", "feature_names"]


def feature_names(levels: int) -> list[str]:
    """The names of ``cost_features(module, levels)``'s entries, in order."""
    return list(COST_FEATURES) + [f"L{j}_{name}" for j in range(levels) for name in LEVEL_FEATURES]


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else 0.0


def _is_scratch(buffer) -> bool:
    return not isinstance(buffer.owner, ir.Block) and buffer.owner.operation.name == "lt.alloc"


def _element_bytes(buffer) -> int:
    t = buffer.type
    if isinstance(t, ir.MemRefType):
        return max(1, lt.nbytes([1], ir.MemRefType(t).element_type))
    return 4


def _buffer_bytes(buffer) -> int:
    t = buffer.type
    if isinstance(t, ir.MemRefType):
        t = ir.MemRefType(t)
        if t.has_static_shape:
            return lt.nbytes(t.shape, t.element_type)
    return 0


def _lines(strides: list, trips: list, element: int) -> int:
    """Cache lines one access touches over loops of ``trips`` iterations
    with these ``strides`` (elements): contiguous runs, repeated."""
    run, repeats = element, 1
    for s, n in sorted(zip(strides, trips), key=lambda p: p[0]):
        if n <= 1 or s == 0:
            continue
        step = s * element
        if step <= run:
            run += step * (n - 1)
        else:
            repeats *= n
    return repeats * max(1, -(-run // LINE_BYTES))


def _stride_class(stride: int | None, element: int) -> int:
    """0: zero, 1: unit, 2: under a line, 3: a line or more, 4: unknown."""
    if stride is None:
        return 4
    s = abs(stride)
    if s == 0:
        return 0
    if s == 1:
        return 1
    return 2 if s * element < LINE_BYTES else 3


class _Costs:
    """The per-loop and per-access facts the features are made of."""

    def __init__(self, module):
        a = self.analysis = _Analysis(module)
        self.notes = [lt.annotations(op) for op in a.loops]
        self.vector = [int(notes.get("vectorize") or 0) for notes in self.notes]
        self.parallel = [bool(notes.get("parallel")) for notes in self.notes]
        self.tails = [lt.loop_tail(op) for op in a.loops]
        self.unrolled = [notes.get("unroll") == 0 for notes in self.notes]  # completely: no loop at run time
        self.copies = []  # body copies the loop's own unrolling makes
        self.runtime_trips = []  # iterations it runs as a loop (vector iterations for a vectorized one)
        self.lanes = []  # elements an iteration covers on average: full vectors, then scalar leftovers
        for i, notes in enumerate(self.notes):
            width = self.vector[i]
            vector_trips, lanes = a.trips[i], 1.0
            if width > 1:
                elements = lt.loop_size(a.loops[i]) + (1 if self.tails[i] else 0)  # iterations of this level
                full, rest = divmod(elements, width)
                vector_trips = max(1, full + rest)
                lanes = elements / vector_trips
            self.lanes.append(lanes)
            u = notes.get("unroll")
            self.copies.append(1 if u is None else vector_trips if u == 0 else max(1, min(int(u), vector_trips)))
            self.runtime_trips.append(vector_trips)
        # a loop of at most TINY_TRIPS iterations with no runtime loop inside: LLVM unrolls it
        runtime_inside = [False] * len(a.loops)
        for i in reversed(range(len(a.loops))):  # pre-order reversed: a loop's children before it
            if not self.unrolled[i] and not runtime_inside[i] and self.runtime_trips[i] <= TINY_TRIPS:
                self.unrolled[i] = True
                self.copies[i] = self.runtime_trips[i]
            p = a.parent[i]
            if p is not None and (runtime_inside[i] or not self.unrolled[i]):
                runtime_inside[p] = True
        self.elements = [_element_bytes(x.buffer) for x in a.accesses]
        self.scratch = [_is_scratch(x.buffer) for x in a.accesses]
        self.strides = [[x.strides.get(i) if x.strides else None for i in x.loops] for x in a.accesses]
        # runtime loops around each access, innermost first, as positions in x.loops
        self.runtime = [[d for d, i in enumerate(x.loops) if not self.unrolled[i]] for x in a.accesses]
        self.footprint = self._footprints()
        self.autovec = self._autovec()

    def _footprints(self) -> list:
        """Bytes (whole lines) one complete run of each loop touches."""
        a = self.analysis
        per_loop: list[dict] = [dict() for _ in a.loops]
        for k, x in enumerate(a.accesses):
            for depth, i in enumerate(x.loops):
                held = per_loop[i]
                held[x.buffer] = max(held.get(x.buffer, 0), self._access_lines(k, depth + 1))
        return [LINE_BYTES * sum(held.values()) for held in per_loop]

    def _access_lines(self, k: int, depth: int) -> int:
        """Lines access ``k`` touches over its innermost ``depth`` loops."""
        a = self.analysis
        x = a.accesses[k]
        inner = x.loops[:depth]
        trips = [a.trips[j] for j in inner]
        if not x.strides:  # unknown: as if each iteration touched a line of its own
            return int(np.prod(trips)) if trips else 1
        return _lines([abs(x.strides.get(j, 0)) for j in inner], trips, self.elements[k])

    def _autovec(self) -> set:
        """Innermost runtime loops (not vectorized) LLVM may vectorize: every
        access inside moves by less than a cache line an iteration, no reduction
        of one element runs across it, and it runs at least 4 times."""
        a = self.analysis
        inside: dict = {}  # innermost runtime loop -> its accesses' (stride class, is reduce)
        for k, x in enumerate(a.accesses):
            rt = self.runtime[k]
            if not rt:
                continue
            i = x.loops[rt[0]]
            inside.setdefault(i, []).append((_stride_class(self.strides[k][rt[0]], self.elements[k]), x.kind.startswith("reduce")))
        out = set()
        for i, facts in inside.items():
            if self.vector[i] > 1 or self.runtime_trips[i] < 4:
                continue
            if all(cls in (0, 1, 2) and not (reduce and cls == 0) for cls, reduce in facts):
                out.add(i)
        return out

    def misses(self, cache: int) -> float:
        """Estimated lines brought into a cache of ``cache`` bytes a call."""
        a = self.analysis
        total = 0.0
        for k, x in enumerate(a.accesses):
            fit = 0  # loops around the access (from the innermost) whose runs fit
            for depth, i in enumerate(x.loops):
                if self.footprint[i] > cache:
                    break
                fit = depth + 1
            outer = 1
            for i in x.loops[fit:]:
                outer *= a.trips[i]
            total += self._access_lines(k, fit) * outer
        return total


def _arithmetic(module, analysis) -> tuple[float, float]:
    """(weighted arithmetic ops, weighted transcendental ones) a call."""
    counts = [0.0, 0.0]

    def visit(op):
        name = op.name
        if (name.startswith("arith.") or name.startswith("math.")) and name != "arith.constant" and op.results \
                and not isinstance(op.results[0].type, ir.IndexType):
            weight = 1
            for loop in lt.enclosing_loops(op):
                weight *= analysis.trips[analysis.index[loop]]
            counts[0] += weight
            if name.startswith(_TRANSCENDENTAL):
                counts[1] += weight
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return counts[0], counts[1]


def cost_features(module, levels: int = 6, cores: int | None = None) -> np.ndarray:
    """float64 ``[len(COST_FEATURES) + levels * len(LEVEL_FEATURES)]`` for an
    lt module (module docstring; ``feature_names(levels)`` names them).
    ``cores``: the threads a parallel loop gets (default: this machine's)."""
    cores = max(1, cores or os.cpu_count() or 1)
    c = _Costs(module)
    a = c.analysis
    g = dict.fromkeys(COST_FEATURES, 0.0)
    rows = np.zeros((levels, len(LEVEL_FEATURES)))
    col = {name: i for i, name in enumerate(LEVEL_FEATURES)}
    total = float(sum(x.weight for x in a.accesses))
    arith, transcendental = _arithmetic(module, a)
    buffers = {x.buffer for x in a.accesses}
    g["log_accesses"] = _log2(total)
    g["log_arith"] = _log2(arith)
    g["transcendental"] = transcendental / arith if arith else 0.0
    g["element_bytes"] = float(lt.element_bytes(module.operation))
    g["log_buffer_bytes"] = _log2(sum(_buffer_bytes(b) for b in buffers))
    g["loops"] = float(len(a.loops))
    g["innermost_bodies"] = float(len({x.loops[rt[0]] for x, rt in zip(a.accesses, c.runtime) if rt}))
    g["top_nests"] = float(sum(1 for p in a.parent if p is None))
    g["scratch_buffers"] = float(sum(1 for b in buffers if _is_scratch(b)))
    if not total:
        return np.concatenate([np.array([g[k] for k in COST_FEATURES]), rows.ravel()])

    forks = 0.0  # parallel regions entered a call (outermost parallel loops only)
    entries: dict = {}  # outermost parallel loop -> times it is entered a call
    for i, op in enumerate(a.loops):
        if c.parallel[i] and not any(c.parallel[a.index[o]] for o in lt.enclosing_loops(op)):
            entries[i] = 1
            for o in lt.enclosing_loops(op):
                entries[i] *= a.trips[a.index[o]]
            forks += entries[i]
    g["log_forks"] = _log2(1 + forks)
    region: dict = dict.fromkeys(entries, 0.0)  # outermost parallel loop -> accesses a region (one entry)
    for x in a.accesses:
        outer = next((i for i in reversed(x.loops) if c.parallel[i]), None)
        if outer is not None:
            region[outer] += x.weight / entries[outer]

    unrolled_size = 0.0
    max_copies = 1
    est = dict.fromkeys(("compute", "chain", "memory", "loops", "forks"), 0.0)
    threaded = 0.0  # compute and chains, each access's share over its threads
    for k, x in enumerate(a.accesses):
        w = x.weight / total
        loops, strides, rt = x.loops, c.strides[k], c.runtime[k]
        e = c.elements[k]
        reduce = x.kind.startswith("reduce")
        g["runtime_depth"] += w * len(rt)
        if any(c.tails[i] for i in loops):
            g["tail_share"] += w
        if c.scratch[k]:
            g["scratch_share"] += w
        copies = 1
        for i in loops:
            copies *= c.copies[i]
        max_copies = max(max_copies, copies)
        g["log_copies"] += w * _log2(copies)
        if any(c.unrolled[i] for i in loops):
            g["unroll_share"] += w
        unrolled_size += copies
        vector_at = next((d for d, i in enumerate(loops) if c.vector[i] > 1), None)
        if vector_at is not None:
            i = loops[vector_at]
            g["vector_share"] += w
            g["vector_width"] += w * _log2(c.vector[i])
            g["vector_lanes"] += w * _log2(c.lanes[i])
            g["vector_trips"] += w * _log2(c.runtime_trips[i])
            cls = _stride_class(strides[vector_at], e)
            if cls == 1:
                g["vector_contiguous"] += w
            elif cls == 0:
                g["vector_broadcast"] += w
                if reduce:
                    g["vector_reduce"] += w
            else:
                g["gathers"] += w
            if c.tails[i]:
                g["vector_tail"] += w
        parallel = [d for d, i in enumerate(loops) if c.parallel[i]]
        if parallel:
            outer = loops[parallel[-1]]
            g["parallel_share"] += w
            trips = a.trips[outer]
            g["log_parallel_trips"] += w * _log2(trips)
            g["log_work_per_fork"] += w * _log2(region[outer])
            g["log_work_per_thread"] += w * _log2(region[outer] / min(trips, cores))
            g["thread_balance"] += w * trips / (cores * -(-trips // cores))
            if len(parallel) > 1:
                g["nested_parallel"] += w
        # the estimate: lanes the access gets, its chain
        lanes, gather = 1, 1.0
        if vector_at is not None:
            if _stride_class(strides[vector_at], e) in (0, 1):
                lanes = c.lanes[loops[vector_at]]
            else:
                gather = 2.0
        elif rt and loops[rt[0]] in c.autovec:
            lanes = max(1, 32 // e)
        compute = x.weight * gather / lanes
        chain = 0.0
        if reduce and rt and _stride_class(strides[rt[0]], e) == 0:
            accumulators = 1
            for d in range(rt[0]):
                if strides[d] != 0:
                    accumulators *= c.copies[loops[d]]
            chain = 4.0 * x.weight / lanes / accumulators
        est["compute"] += compute
        est["chain"] += chain
        threads = min(a.trips[loops[parallel[-1]]], cores) if parallel else 1
        threaded += (compute + chain) / threads
        if not rt:
            g["no_loop_share"] += w
        else:
            inner = loops[rt[0]]
            cls = _stride_class(strides[rt[0]], e)
            if reduce and cls == 0:
                g["reduce_chain"] += w
                # accumulators: copies of the unrolled loops inside along which the element moves
                accumulators = 1
                for d in range(rt[0]):
                    if strides[d] != 0:
                        accumulators *= c.copies[loops[d]]
                g["log_accumulators"] += w * _log2(accumulators)
            if cls in (0, 1):
                g["inner_contiguous"] += w
            elif cls == 3:
                g["inner_large_stride"] += w
            elif cls == 4:
                g["inner_unknown"] += w
            g["log_inner_trips"] += w * _log2(c.runtime_trips[inner])
            g["log_inner_footprint"] += w * _log2(c.footprint[inner])
            if inner in c.autovec:
                g["autovec_share"] += w
                g["autovec_trips"] += w * _log2(c.runtime_trips[inner])
            if any(abs(strides[d] or 0) == 1 and c.copies[loops[d]] > 1 for d in range(rt[0])):
                g["slp_share"] += w
        below = 0  # position in ``loops`` just inside the level's loop
        for j, d in enumerate(rt[:levels]):
            i = loops[d]
            row = rows[j]
            body = c.copies[i] if not c.unrolled[i] else 1
            for inner_d in range(below, d):
                body *= c.copies[loops[inner_d]]
            below = d + 1
            row[col["present"]] += w
            row[col["log_trips"]] += w * _log2(c.runtime_trips[i])
            row[col["tail"]] += w * (c.tails[i] > 0)
            row[col["stride_zero"] + _stride_class(strides[d], e)] += w
            row[col["log_vector"]] += w * _log2(c.lanes[i])
            row[col["log_copies"]] += w * _log2(body)
            row[col["parallel"]] += w * c.parallel[i]
            fp = c.footprint[i]
            row[col["footprint_l1"]] += w * _log2(fp / L1_BYTES)
            row[col["fits_l1"]] += w * (fp <= L1_BYTES)
            row[col["fits_l2"]] += w * (fp <= L2_BYTES)
    g["log_max_copies"] = _log2(max_copies)
    g["log_unrolled_size"] = _log2(1 + unrolled_size)
    l1, l2 = c.misses(L1_BYTES), c.misses(L2_BYTES)
    g["l1_miss_rate"] = l1 / total
    g["l2_miss_rate"] = l2 / total
    g["log_l1_misses"] = _log2(l1)
    g["log_l2_misses"] = _log2(l2)
    est["memory"] = 4.0 * l1 + 12.0 * l2
    for i, op in enumerate(a.loops):
        if not c.unrolled[i]:
            runs = 1
            for o in lt.enclosing_loops(op):
                runs *= a.trips[a.index[o]]
            est["loops"] += runs * c.runtime_trips[i]
    est["forks"] = 3000.0 * forks
    for name, value in est.items():
        g[f"est_{name}"] = math.log2(1 + value / total)
    g["est_total"] = math.log2(1 + (threaded + est["memory"] + est["loops"] + est["forks"]) / total)
    return np.concatenate([np.array([g[k] for k in COST_FEATURES]), rows.ravel()])
