"""Instrumenting an lt module for a per-loop profile (``lt_mlir/profile.py``).

Every *timed* ``lt.loop`` (``Li`` in the module's pre-order numbering) gets
a read of the cycle counter right before it and right after it, and adds the
difference into element ``i`` of one module-level counter buffer::

    %t0 = func.call @lt_cycles() : () -> i64
    "lt.loop"() ({ ... })
    %t1 = func.call @lt_cycles() : () -> i64
    %d = arith.subi %t1, %t0 : i64
    %c = memref.get_global @lt_profile_counters : memref<Nxi64>
    counters[i] += %d      (load/add/store, or memref.atomic_rmw addi
                            inside a parallel or GPU-mapped loop)

The code goes only *around* loops, never into a vectorized loop's body (a
vectorized loop is innermost: its reads are in its parent's body), so every
lowering sees the program it would see without the profile, plus scalar
code it passes through unchanged.  A concurrent loop (``lt.parallel``,
``lt.gpu``) that holds other timed loops is also timed once per iteration, from
the start to the end of its body, into an extra counter (``bodies``): its
descendants' counters sum over threads, and the ratio of its wall time to
its body time turns them back into shares of the wall time.

A loop is timed when it is entered at most ``max_entries`` times a call of
its function and the loop around it is timed.  Its entries a call are the
product, over the loops around it, of their launches (``size``, plus one
when it has a tail; unrolling changes none): a top-level loop is entered
once.  Each entry costs two counter reads and an add, so a loop deep in a
nest, entered tens of thousands of times a call around a few instructions,
would otherwise time mostly its own timing.  The loops inside an untimed
loop are untimed too; their time is in the own time of the nearest timed
loop around them, and their counters stay zero.

``func.func private @lt_cycles() -> i64`` is a declaration;
``define_cycle_counter`` rewrites the LLVM IR translation produced so that it
reads the processor's cycle counter (``llvm.readcyclecounter``: ``rdtsc``
on x86) inline, and exports the counter buffer so the JIT can find it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..analysis import gpu_mapping
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import CompileError
from ..mlir import AtomicRMWKind, arith, func, ir, memref
from ..passes.common import function_of
from ..passes.double_buffer import ATTR as DOUBLE_BUFFER

CYCLES = "lt_cycles"
COUNTERS = "lt_profile_counters"


@dataclass
class ProfileLayout:
    """What the counter buffer holds after ``instrument_loops``.

    ``counters[i]`` for ``i < loops``: cycles spent in loop ``Li`` (summed
    over calls, and over threads for loops inside a concurrent loop);
    ``counters[bodies[i]]``: cycles spent in the bodies of concurrent loop
    ``Li`` (summed over its iterations and threads).  ``parents[i]``: the
    L-number of the loop around ``Li``, None at the top of a function;
    ``concurrent[i]``: ``Li`` is parallel or GPU-mapped; ``entries[i]``:
    how many times ``Li`` is entered a call of its function; ``timed[i]``:
    ``Li`` is timed (an untimed loop's counter stays zero)."""

    loops: int
    parents: list
    concurrent: list
    bodies: dict
    size: int  # elements of the counter buffer
    entries: list
    timed: list
    max_entries: int | None = None  # the bound the loops were timed under


MAX_ENTRIES = 4096  # default bound on the entries a call of a timed loop


def launches(loop) -> int:
    """How many times one entry of ``loop`` runs its body: ``size``, plus
    one when it has a tail (unrolled or vectorized alike)."""
    return lt.loop_size(loop) + (1 if lt.loop_tail(loop) else 0)


def instrument_loops(module: ir.Module | ir.Operation, max_entries: int = MAX_ENTRIES) -> ProfileLayout:
    """Add cycle-counter reads and counter updates around every loop of
    ``module`` entered at most ``max_entries`` times a call (and inside no
    untimed loop), in place, and the counter buffer and ``@lt_cycles``
    declaration at the end of the module.  Returns the counter layout."""
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise CompileError(f"error: max_entries must be a positive integer (the top-level loops are entered once); got {max_entries!r}")
    op = module.operation
    table = ir.SymbolTable(op)
    for name in (CYCLES, COUNTERS):
        if name in table:
            raise CompileError(f"error: the module already defines @{name}; the profile needs that name for itself")
    loops = preorder_loops(op)
    index = {l: i for i, l in enumerate(loops)}  # operations hash by identity
    parents, concurrent, entries, timed = [], [], [], []
    for i, l in enumerate(loops):  # pre-order: a loop's parent comes first
        outer = lt.enclosing_loops(l)
        p = index[outer[0]] if outer else None
        parents.append(p)
        notes = lt.annotations(l)
        concurrent.append(bool(notes.get("parallel") or notes.get("gpu")))
        entries.append(1 if p is None else entries[p] * launches(loops[p]))
        timed.append(entries[i] <= max_entries and (p is None or timed[p]))
    bodies = {}
    timed_parents = {parents[i] for i in range(len(loops)) if timed[i] and parents[i] is not None}
    for i in range(len(loops)):
        if concurrent[i] and i in timed_parents:  # its bodies scale its timed descendants to wall time
            bodies[i] = len(loops) + len(bodies)
    size = max(1, len(loops) + len(bodies))
    layout = ProfileLayout(len(loops), parents, concurrent, bodies, size, entries, timed, max_entries)

    with op.context, ir.Location.unknown():
        i64 = ir.IntegerType.get_signless(64)
        buffer_type = ir.MemRefType.get([size], i64)
        block = op.regions[0].blocks[0]
        with ir.InsertionPoint(block):
            memref.GlobalOp(
                COUNTERS,
                ir.TypeAttr.get(buffer_type),
                sym_visibility="private",
                initial_value=ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([size], i64), ir.IntegerAttr.get(i64, 0)),
            )
            func.FuncOp(CYCLES, ir.FunctionType.get([], [i64]), visibility="private")
        for i, l in enumerate(loops):
            if not timed[i]:
                continue
            atomic = any(concurrent[index[p]] for p in lt.enclosing_loops(l))
            with l.location:
                with ir.InsertionPoint(l):
                    start = read_cycles(i64)
                with ir.InsertionPoint.after(l):
                    _accumulate(start, i, atomic, buffer_type, i64)
                if i in bodies:
                    body = lt.loop_body(l)
                    with ir.InsertionPoint.at_block_begin(body):
                        body_start = read_cycles(i64)
                    with ir.InsertionPoint(body):
                        _accumulate(body_start, bodies[i], True, buffer_type, i64)
    return layout


def read_cycles(i64) -> ir.Value:
    return func.CallOp([i64], CYCLES, []).result


def _accumulate(start: ir.Value, slot: int, atomic: bool, buffer_type, i64) -> None:
    """``counters[slot] += cycles now - start``, at the insertion point."""
    elapsed = arith.SubIOp(read_cycles(i64), start).result
    counters = memref.GetGlobalOp(buffer_type, COUNTERS).result
    where = arith.ConstantOp(ir.IndexType.get(), slot).result
    if atomic:
        kind = ir.IntegerAttr.get(i64, AtomicRMWKind["addi"].value)
        memref.AtomicRMWOp(kind, elapsed, counters, [where])
    else:
        old = memref.LoadOp(counters, [where]).result
        memref.StoreOp(arith.AddIOp(old, elapsed).result, counters, [where])


_DECLARE = re.compile(rf"^declare\s+(?:[a-z_]+\s+)*i64\s+@{CYCLES}\(\)[^\n]*$", re.MULTILINE)
_COUNTERS_DEF = re.compile(rf"^@{COUNTERS}\s*=\s*(?:private|internal)\s+(?:unnamed_addr\s+)?", re.MULTILINE)


def define_cycle_counter(llvm_ir: str) -> str:
    """The LLVM IR of an instrumented module, with ``@lt_cycles`` defined
    as an always-inline read of ``llvm.readcyclecounter`` (``rdtsc``) and
    the counter buffer given external linkage (the JIT looks it up by
    name).  Refuses IR that is not an instrumented module's."""
    if not _DECLARE.search(llvm_ir):
        raise CompileError(f"error: no 'declare i64 @{CYCLES}()' in the LLVM IR (was the module instrumented?)")
    if not _COUNTERS_DEF.search(llvm_ir) and not re.search(rf"^@{COUNTERS}\s*=\s*(?:dso_local\s+)?global", llvm_ir, re.MULTILINE):
        raise CompileError(f"error: no @{COUNTERS} in the LLVM IR (was the module instrumented?)")
    definition = f"define internal i64 @{CYCLES}() alwaysinline {{\n  %1 = call i64 @llvm.readcyclecounter()\n  ret i64 %1\n}}"
    text = _DECLARE.sub(lambda m: definition, llvm_ir, count=1)
    text = _COUNTERS_DEF.sub(f"@{COUNTERS} = ", text, count=1)
    if not re.search(r"^declare\s+(?:[a-z_]+\s+)*i64\s+@llvm\.readcyclecounter\(\)", text, re.MULTILINE):
        text += "\ndeclare i64 @llvm.readcyclecounter()\n"
    return text


# ------------------------------------------------------------------ GPU
#
# On a GPU a mapped loop is not a loop (each block or thread runs one of its
# iterations), and code between the thread loops of a block runs on thread 0
# alone (``lowering/gpu/lt_to_gpu.py``), so a cycle count cannot flow from
# before a loop to after it in SSA form.  Instead each timed loop gets two
# *marks*, calls of ``@lt_profile_clock`` that carry its counter slot and a
# sign: the first subtracts the clock from the slot, the second adds it, so
# the slot sums the loop's durations whatever code lies between them.  The
# GPU lowering turns a mark into a read of ``%clock64`` and an atomic add by
# thread (0, 0, 0) of each block (``GpuLowering.lower_profile_mark``); the
# CPU lowering (and so ``cuda-emulated``, whose blocks and threads are CPU
# loops) into a read of the cycle counter added by every thread, one after
# another.  Each launch is timed as a whole into a slot of its own, from the
# start of its body to its end (thread 0 of each block; emulated, the loops
# over its blocks): the loops' shares of it split the launch's wall time.

PROFILE_CLOCK = "lt_profile_clock"  # the marks' callee
SLOT_ATTR = "lt_profile_slot"  # on a mark: its counter
SIGN_ATTR = "lt_profile_sign"  # on a mark: -1 before the loop, +1 after it
LAUNCHES_ATTR = "lt_profile_launches"  # on the GPU counter buffer: the slot of the first launch
ENTRY_ATTR = "lt_profile_entry"  # on the GPU counter buffer: the function profiled
COUNT_ATTR = "lt_profile_launch_count"  # on the GPU counter buffer: its launches


@dataclass
class GpuProfileLayout:
    """What the counter buffer holds after ``instrument_gpu_loops``.

    ``counters[i]`` for a timed ``Li``: the cycles spent in ``Li`` by thread
    (0, 0, 0) of each block, summed over blocks and calls (emulated: by
    every thread); ``counters[loops + k]``: the same thread's cycles in
    launch ``k`` (emulated: the launch's).  ``mapped[i]``: ``"block"`` or
    ``"thread"`` for a mapped loop (never timed: its iterations run side by
    side), else None; ``launches[k]``: the L-numbers of the top-level loops
    launch ``k`` runs (one mapped loop, or a one-thread launch's loops);
    ``entries[i]``: how many times one thread enters ``Li`` a call;
    ``timed[i]``: ``Li`` has marks."""

    loops: int
    parents: list
    mapped: list
    entries: list
    timed: list
    launches: list
    size: int
    # why ``Li`` is not timed: "blocks"/"threads" (mapped), "unrolled", "under unrolled L2",
    # "in double-buffered L4", "another function"; None: timed, or entered too often
    why: list
    max_entries: int | None = None


def instrument_gpu_loops(module: ir.Module | ir.Operation, entry, max_entries: int = MAX_ENTRIES) -> GpuProfileLayout:
    """Marks around every loop of function ``entry`` (an lt func op) that is
    not mapped, not unrolled (but at the top), not directly in a
    double-buffered loop, and that one thread enters at most
    ``max_entries`` times a call (inside no untimed loop but mapped ones),
    and the counter buffer at the end of the module, in place.  Returns
    the counter layout; the GPU lowering lowers the marks and times the
    launches."""
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise CompileError(f"error: max_entries must be a positive integer (the top-level loops are entered once); got {max_entries!r}")
    op = module.operation
    table = ir.SymbolTable(op)
    for name in (PROFILE_CLOCK, COUNTERS, CYCLES):
        if name in table:
            raise CompileError(f"error: the module already defines @{name}; the profile needs that name for itself")
    loops = preorder_loops(op)
    index = {l: i for i, l in enumerate(loops)}
    parents, mapped, entries, why = [], [], [], []
    for i, l in enumerate(loops):
        outer = lt.enclosing_loops(l)
        p = index[outer[0]] if outer else None
        parents.append(p)
        kind = lt.annotations(l).get("gpu")
        mapped.append(kind if isinstance(kind, str) else None)
        # a thread runs one iteration of a mapped loop around it
        entries.append(1 if p is None else entries[p] * (1 if mapped[p] else launches(loops[p])))
        why.append(_untimed(l, i, p, loops, parents, mapped, entries, why, entry, max_entries))
    timed = [w == "" for w in why]
    why = [w or None for w in why]
    groups = gpu_mapping.launch_groups(entry)
    launch_loops = [[index[o] for o in group if o.name == "lt.loop"] for group in groups]
    size = len(loops) + len(groups)
    layout = GpuProfileLayout(len(loops), parents, mapped, entries, timed, launch_loops, max(1, size), why, max_entries)
    with op.context, ir.Location.unknown():
        i64 = ir.IntegerType.get_signless(64)
        buffer_type = ir.MemRefType.get([layout.size], i64)
        block = op.regions[0].blocks[0]
        with ir.InsertionPoint(block):
            counters = memref.GlobalOp(  # public: the CUDA runtime and the JIT look it up by name
                COUNTERS,
                ir.TypeAttr.get(buffer_type),
                initial_value=ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([layout.size], i64), ir.IntegerAttr.get(i64, 0)),
            )
            counters.operation.attributes[LAUNCHES_ATTR] = ir.IntegerAttr.get(i64, len(loops))
            counters.operation.attributes[ENTRY_ATTR] = ir.StringAttr.get(ir.StringAttr(entry.attributes["sym_name"]).value)
            counters.operation.attributes[COUNT_ATTR] = ir.IntegerAttr.get(i64, len(groups))
            func.FuncOp(PROFILE_CLOCK, ir.FunctionType.get([], []), visibility="private")
            func.FuncOp(CYCLES, ir.FunctionType.get([], [i64]), visibility="private")
        for i, l in enumerate(loops):
            if not timed[i]:
                continue
            for sign, where in ((-1, ir.InsertionPoint(l)), (1, ir.InsertionPoint.after(l))):
                with l.location, where:
                    mark = func.CallOp([], PROFILE_CLOCK, [])
                mark.operation.attributes[SLOT_ATTR] = ir.IntegerAttr.get(i64, i)
                mark.operation.attributes[SIGN_ATTR] = ir.IntegerAttr.get(i64, sign)
    return layout


def _untimed(l, i, p, loops, parents, mapped, entries, why, entry, max_entries) -> str | None:
    """Why ``Li`` gets no marks (see ``GpuProfileLayout.why``), None when
    it is entered too often, "" when it is timed."""
    if function_of(l) != entry.operation:
        return "another function"
    if mapped[i]:
        return f"{mapped[i]}s"
    # an unrolled loop is copies of its body, not a loop (a top-level one is timed: its launch is its time)
    if p is not None and "unroll" in lt.annotations(l):
        return "unrolled"
    q = p
    while q is not None and mapped[q]:
        q = parents[q]
    if q is not None and why[q] != "":  # the loop around it is not timed
        if why[q] == "unrolled":
            return f"under unrolled L{q}"
        return why[q] if why[q] and why[q].startswith(("under ", "in ")) else None
    # the copies of a double-buffered loop's body are what the lowering
    # pipelines (passes/double_buffer.stages): no marks between them
    if p is not None and DOUBLE_BUFFER in loops[p].attributes:
        return f"in double-buffered L{p}"
    return None if entries[i] > max_entries else ""


def is_mark(op) -> bool:
    return op.name == "func.call" and SLOT_ATTR in op.attributes


def mark_slot(op) -> tuple[int, int]:
    """(counter slot, sign) of a mark."""
    return ir.IntegerAttr(op.attributes[SLOT_ATTR]).value, ir.IntegerAttr(op.attributes[SIGN_ATTR]).value


def add_to_counter(value: ir.Value, slot: int, atomic: bool = True) -> None:
    """``counters[slot] += value`` at the insertion point: an atomic add,
    or (``cuda-emulated``: one CPU thread) a load, add and store."""
    i64 = ir.IntegerType.get_signless(64)
    counters = memref.GetGlobalOp(_counter_type(), COUNTERS).result
    where = arith.ConstantOp(ir.IndexType.get(), slot).result
    if atomic:
        memref.AtomicRMWOp(ir.IntegerAttr.get(i64, AtomicRMWKind["addi"].value), value, counters, [where])
    else:
        memref.StoreOp(arith.AddIOp(memref.LoadOp(counters, [where]).result, value).result, counters, [where])


def _counter_type():
    """The counter buffer's type, from the module around the insertion point."""
    block = ir.InsertionPoint.current.block
    op = block.owner
    while op.name != "builtin.module":
        op = op.parent
    return ir.MemRefType(ir.TypeAttr(ir.SymbolTable(op)[COUNTERS].attributes["type"]).value)


def signed(value: ir.Value, sign: int) -> ir.Value:
    """``value`` or ``0 - value``."""
    if sign > 0:
        return value
    zero = arith.ConstantOp(value.type, 0).result
    return arith.SubIOp(zero, value).result


def lower_mark_cpu(op) -> None:
    """A mark on the CPU (``cuda-emulated``, blocks and threads one after
    another): the cycle counter, signed, into its slot."""
    slot, sign = mark_slot(op)
    with ir.InsertionPoint(op), op.location:
        add_to_counter(signed(read_cycles(ir.IntegerType.get_signless(64)), sign), slot, atomic=False)
    op.erase()


def launch_slot(function) -> tuple[int, int] | None:
    """(the counter slot of its first launch, its launches) when
    ``function`` is the one its module is instrumented for by
    ``instrument_gpu_loops``, else None."""
    module = function.parent
    while module.name != "builtin.module":
        module = module.parent
    table = ir.SymbolTable(module)
    if COUNTERS not in table or LAUNCHES_ATTR not in table[COUNTERS].attributes:
        return None
    attrs = table[COUNTERS].attributes
    if ir.StringAttr(attrs[ENTRY_ATTR]).value != ir.StringAttr(function.attributes["sym_name"]).value:
        return None
    return ir.IntegerAttr(attrs[LAUNCHES_ATTR]).value, ir.IntegerAttr(attrs[COUNT_ATTR]).value
