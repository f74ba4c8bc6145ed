"""Register tiles across block-level sequential loops.

A thread loop nest inside a block-level sequential loop (the k-slice loop of
a shared-memory GEMM, ``recipes.gpu_tiled_matmul``) that reduces into
elements each thread owns::

    for k in K/k_tile                  (every thread; copies, barriers)
      ...
      for m' in TH [gpu thread]
        for n' in TH [gpu thread]
          for k' in k_tile
            for m'' in R [unroll full]
              for n'' in R [unroll full]   C[m, n] += A'[m, k] * B'[k, n]

would load and store its tile of C once a slice.  ``keep_tiles_in_registers``
gives each thread its tile as a buffer of its own (``lt.thread_private``;
indexed by the unrolled loops only, so LLVM keeps it in registers), loaded
from C before the outermost such loop and stored back after it, in thread
loops cloned from the nest's (the same threads own the same elements)::

    acc <- alloc f32[R, R] (a thread's own)
    for m' in TH [gpu thread] { for n' in TH [gpu thread] { for m'' .. { for n'' .. { acc[m'', n''] = C[m, n] }}}}
    for k in K/k_tile
      ...  acc[m'', n''] += A'[m, k] * B'[k, n]
    for m' in TH [gpu thread] { ... C[m, n] = acc[m'', n''] }

Each element sees the same operations in the same order: the result is
exactly the original's.  The new thread loops are parts of the block loop
like any other (``lt_to_gpu._separate_parts`` puts barriers between parts
that touch the same buffers).  Emulated (``cuda-emulated``: a part's threads
run one after another) the buffer also has the thread loops' dimensions, so
each emulated thread keeps its own tile.

Applies only where it is exact and stays in registers: the reduction's
index reads the dims of every thread loop of the nest and otherwise only
fully unrolled loops' (at most ``MAX_ELEMENTS`` a thread), none of the
sequential loops' it is hoisted out of, and nothing else in those loops
touches the accumulator."""

from __future__ import annotations

from ...analysis import gpu_mapping
from ...analysis.dependence import accesses_of, defined_inside, index_slice, reads_dim
from ...dialect import lt
from ...mlir import ir, memref
from ...passes.common import clone_mapped, new_loop, rebuild_access

MAX_ELEMENTS = 256  # elements of a thread's tile (4-byte ones: 1 KiB of registers)


def keep_tiles_in_registers(f, emulate: bool = False) -> int:
    """Apply the transformation (module docs) to every reduction of ``f``
    it fits; returns how many."""
    reduces = []
    f.walk(lambda o: (reduces.append(o) if o.name == "lt.reduce" else None, ir.WalkResult.ADVANCE)[1])
    done = 0
    for r in reduces:
        plan = _plan(r)
        if plan is not None:
            _apply(r, *plan, emulate)
            done += 1
    return done


def _extent(loop) -> int:
    return lt.loop_size(loop) + (1 if lt.loop_tail(loop) else 0)


def _fully_unrolled(loop) -> bool:
    notes = lt.annotations(loop)
    return "unroll" in notes and not isinstance(notes["unroll"], bool) and (notes["unroll"] == 0 or notes["unroll"] >= _extent(loop))


def _defining(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _plan(r):
    """(skeleton loops outermost first, the loop to hoist around) or None."""
    if "lt.atomic" in r.attributes or "lt.block_combine" in r.attributes:
        return None
    acc, indices = r.operands[1], list(r.operands)[2:]
    sources = [_defining(i) for i in indices]
    if any(s is None for s in sources):
        return None

    def reads(dim: str) -> bool:
        return any(reads_dim(s, dim) for s in sources)

    chain, seq = [], None
    for loop in lt.enclosing_loops(r):  # innermost first
        kind = gpu_mapping.mapping(loop)
        if kind == "block":
            return None
        if kind is None and gpu_mapping.block_sequential(loop):
            seq = loop
            break
        chain.append(loop)
    if seq is None or not chain or gpu_mapping.mapping(chain[-1]) != "thread":
        return None
    skeleton = []
    for loop in chain:
        notes = lt.annotations(loop)
        if "vectorize" in notes or "parallel" in notes:
            return None
        if reads(lt.loop_dim(loop)):
            if gpu_mapping.mapping(loop) != "thread" and not _fully_unrolled(loop):
                return None
            skeleton.append(loop)
        elif gpu_mapping.mapping(loop) == "thread":
            return None  # threads sharing an element: a combine, not a register tile
    elements = 1
    for loop in skeleton:
        if gpu_mapping.mapping(loop) != "thread":
            elements *= _extent(loop)
    if elements > MAX_ELEMENTS:
        return None
    hoist, loop = None, seq
    while loop is not None and loop.name == "lt.loop" and not gpu_mapping.mapping(loop):
        if reads(lt.loop_dim(loop)) or set(lt.annotations(loop)) - gpu_mapping.PIPELINING or defined_inside(acc, loop):
            break
        if any(a != r for a in accesses_of(loop, acc)):
            break
        hoist, loop = loop, loop.parent
    if hoist is None:
        return None
    skeleton_args = frozenset(lt.loop_body(l).arguments[0] for l in skeleton)
    if any(index_slice(i, hoist, skeleton_args) is None for i in indices):
        return None
    return list(reversed(skeleton)), hoist


def _apply(r, skeleton: list, hoist, emulate: bool) -> None:
    acc, value, indices = r.operands[1], r.operands[0], list(r.operands)[2:]
    kind = r.attributes["kind"]
    element = ir.MemRefType(acc.type).element_type
    # the loops whose iterations index the thread's tile
    own = skeleton if emulate else [l for l in skeleton if gpu_mapping.mapping(l) != "thread"]
    attrs = {
        "dims": ir.ArrayAttr.get([ir.StringAttr.get(lt.loop_dim(l)) for l in own]),
        "lt.thread_private": ir.UnitAttr.get(),
    }
    with ir.InsertionPoint(hoist), r.location:
        tile = ir.Operation.create("lt.alloc", results=[ir.MemRefType.get([_extent(l) for l in own], element)], attributes=attrs).results[0]
    slices = [index_slice(i, hoist, frozenset(lt.loop_body(l).arguments[0] for l in skeleton)) for i in indices]

    def nest(point, body) -> None:
        """The skeleton's loops at insertion point ``point``; ``body(element
        index, tile index)`` fills the innermost."""
        mapping = {}
        for loop in skeleton:
            attributes = {name: loop.attributes[name] for name in loop.attributes if name not in ("dim", "size", "tail")}
            with point, r.location:
                _, block = new_loop(lt.loop_dim(loop), lt.loop_size(loop), lt.loop_tail(loop), attributes)
            mapping[lt.loop_body(loop).arguments[0]] = block.arguments[0]
            point = ir.InsertionPoint(block)
        with point, r.location:
            for ops in slices:
                for op in ops:
                    if op.results and op.results[0] in mapping:
                        continue  # computed for an earlier index
                    clone_mapped(op, mapping)
            body([mapping.get(i, i) for i in indices], [mapping[lt.loop_body(l).arguments[0]] for l in own])

    nest(ir.InsertionPoint(hoist), lambda ei, ti: memref.StoreOp(memref.LoadOp(acc, ei).result, tile, ti))
    nest(ir.InsertionPoint.after(hoist), lambda ei, ti: memref.StoreOp(memref.LoadOp(tile, ti).result, acc, ei))
    with ir.InsertionPoint(r), r.location:
        ir.Operation.create("lt.reduce", operands=[value, tile, *[lt.loop_body(l).arguments[0] for l in own]], attributes={"kind": kind})
    r.erase()


# ------------------------------------------------------------ owned buffers


def keep_owned_in_registers(f) -> int:
    """Block-level buffers each of whose elements one thread owns become
    that thread's own (``lt.thread_private``: registers where the indices
    left are constants after unrolling); returns how many.

    An ``lt.alloc`` in a block loop is block-shared memory.  Where every
    access to it sits in a thread chain of one shape (the same dims, sizes
    and tails: the same threads) and indexes it, along some of its axes, by
    an ``lt.dim`` of the chain's dims plus values from outside the chain
    (the same in every access), and along the others by nothing a thread
    loop moves, each thread touches only its own elements, in every part
    of the block: the thread axes can go.  That is FlashAttention's row
    state (``recipes.flash_attention(shared=True)``): a row's maximum, sum
    and output row, kept across the block-level loop over tiles of keys,
    each read and written only by the thread of its row::

        %o <- alloc f32[i, e]                       %o <- alloc f32[e] (a thread's own)
        for i' [thread] { for e { %o[i - i, e] <- 0 } }        ... { %o[e] <- 0 }
        for j {                              becomes  for j {
          copies of K, V (every thread)                 ...
          for i' [thread] { ... %o[i - i, e] += .. }       ... %o[e] += ..
        }                                              }
        for i' [thread] { O[i, e] <- %o[i - i, e] }    ... O[i, e] <- %o[e]

    Left alone (shared memory, always correct): a buffer read by a thread
    other than its writer, touched outside thread chains, in chains of
    different shapes, indexed by anything but such sums, or by a thread
    loop together with another loop on one axis, or marked by a pass
    (``lt.cache``, ``lt.pad``, double buffering)."""
    allocs = []
    f.walk(lambda o: (allocs.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1])
    done = 0
    for alloc in allocs:
        plan = gpu_mapping.owned_plan(alloc) if gpu_mapping.buffer_space(alloc) == "block" else None
        if plan is not None:
            _make_own(alloc, plan)
            done += 1
    return done


def _make_own(alloc, plan) -> None:
    thread_axes, uses = plan
    t = ir.MemRefType(alloc.results[0].type)
    dims = list(ir.ArrayAttr(alloc.attributes["dims"]))
    own = [k for k in range(len(t.shape)) if k not in thread_axes]
    with ir.InsertionPoint(alloc), alloc.location:
        new = ir.Operation.create(
            "lt.alloc", results=[ir.MemRefType.get([t.shape[k] for k in own], t.element_type)],
            attributes={"dims": ir.ArrayAttr.get([dims[k] for k in own]), "lt.thread_private": ir.UnitAttr.get()},
        ).results[0]
    for op, indices in uses:
        rebuild_access(op, new, [indices[k] for k in own])
    alloc.erase()
