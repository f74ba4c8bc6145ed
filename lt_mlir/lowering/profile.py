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

from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import CompileError
from ..mlir import AtomicRMWKind, arith, func, ir, memref

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
                    start = _read_cycles(i64)
                with ir.InsertionPoint.after(l):
                    _accumulate(start, i, atomic, buffer_type, i64)
                if i in bodies:
                    body = lt.loop_body(l)
                    with ir.InsertionPoint.at_block_begin(body):
                        body_start = _read_cycles(i64)
                    with ir.InsertionPoint(body):
                        _accumulate(body_start, bodies[i], True, buffer_type, i64)
    return layout


def _read_cycles(i64) -> ir.Value:
    return func.CallOp([i64], CYCLES, []).result


def _accumulate(start: ir.Value, slot: int, atomic: bool, buffer_type, i64) -> None:
    """``counters[slot] += cycles now - start``, at the insertion point."""
    elapsed = arith.SubIOp(_read_cycles(i64), start).result
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
    if not _COUNTERS_DEF.search(llvm_ir):
        raise CompileError(f"error: no private @{COUNTERS} in the LLVM IR (was the module instrumented?)")
    definition = f"define internal i64 @{CYCLES}() alwaysinline {{\n  %1 = call i64 @llvm.readcyclecounter()\n  ret i64 %1\n}}"
    text = _DECLARE.sub(lambda m: definition, llvm_ir, count=1)
    text = _COUNTERS_DEF.sub(f"@{COUNTERS} = ", text, count=1)
    if not re.search(r"^declare\s+(?:[a-z_]+\s+)*i64\s+@llvm\.readcyclecounter\(\)", text, re.MULTILINE):
        text += "\ndeclare i64 @llvm.readcyclecounter()\n"
    return text
