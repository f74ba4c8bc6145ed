"""``lower-lt-to-gpu``: lt functions become ``gpu.launch`` ops.

``lower_lt_to_gpu(module)`` first checks the mapping
(``analysis/gpu_mapping.py``: one copy of the rules), then splits each
function body into launches, in program order:

* each kernel (a mapped loop at the top of the function, with the mapped
  loops nested in it) becomes one ``gpu.launch`` whose grid and block sizes
  are the mapped loops' launch counts (innermost mapped loop = ``x``;
  thread loops side by side share the block, sized for the largest); in
  the innermost block loop, parts side by side are separated by
  ``gpu.barrier`` and statements between thread loops run on thread 0;
* each run of other top-level statements becomes a ``gpu.launch`` of one
  thread (correct, and as slow as that sounds; ``lt-gpu-auto`` maps what it
  can);
* constants, index arithmetic and ``lt.alloc`` stay at the top: a top-level
  ``lt.alloc`` is device memory the launches share (a *scratch* buffer of
  the compiled program), an ``lt.alloc`` inside a launch is per-thread
  (``memref.alloca``, local memory).

A mapped loop with ``F`` full iterations and a clipped one (``R`` elements)
becomes, with ``id`` its block or thread id::

    scf.if id < F  { body(id) }            (no test when F = the launch extent)
    scf.if id == F { body(F) clipped to R } (only when R > 0)

so the tail, and every iteration a clipped enclosing level does not reach,
is predicated off; no thread ever touches an index outside its dim.
Reductions into elements that several mapped iterations share are marked
atomic (``memref.atomic_rmw`` / ``memref.generic_atomic_rmw``).  Before
that, such a reduction inside sequential loops of the thread is
*privatised*: it accumulates into a per-thread scalar initialised to the
identity, which is combined into the shared element once, after the
outermost sequential loop whose iterations all hit the same element
(loop_tool's per-thread partial sums; exact up to the order of the
combination, like every reordering of a reduction).

The code inside a launch is lowered by ``GpuLowering``, the CPU lowering
(``lowering/lt_to_scf.py``) with three things changed: a mapped loop
becomes a predicated body on its block or thread id, a reduction that a
whole converged warp makes to one element combines across the warp first,
and code under the program's own branches is noted as divergent.
``emulate=True`` is the ``cuda-emulated`` target: the same lowering with
blocks and threads as sequential loops (CPU code).
"""

from __future__ import annotations

from ...analysis import bounds, gpu_mapping
from ...analysis.dependence import accesses, accesses_of, defined_inside, index_slice, inside, is_pure_index_op, reads_dim, reorder_conflicts, shared_reductions
from ...dialect import lt
from ...dialect.loop_tree import preorder_loops
from ...errors import CompileError, format_location
from ...mlir import arith, gpu, ir, memref, nvgpu, scf
from ...passes.common import clone_mapped, match_relative_index, rebuild_access
from ...passes.double_buffer import stages
from ...passes.pad import padding
from ..combine import atomic_update, combine
from ..layout import access_indices, apply_padding
from ..lt_to_scf import LoopEmitter, LtToScf, finish_function, hoist_allocs, iterations, mark_atomic_reduces
from ..lt_to_scf import index as index_constant
from ..profile import add_to_counter, is_mark, launch_slot, mark_slot, read_cycles, signed
from .register_tiles import keep_owned_in_registers, keep_tiles_in_registers

# ctx keys of this lowering (not dim names)
IDS = "@gpu"  # the launch's hardware ids
LAUNCH = "@launch"  # the gpu.launch being lowered
THREADS = "@threads"  # threads per block (0 when emulated)
EXTENTS = "@extents"  # key in ctx[IDS]: {"block": grid extents, "thread": block extents}
DIVERGENT = "@divergent"  # inside a thread-level guard or a branch
MIN_BLOCKS = "lt.min_blocks"  # on a kernel's root loop, then its gpu.launch (nvptx.outline: nvvm.minctasm)
STAGED_AT = "@staged_at"  # where the first double-buffered loop is (its error's location)
ASYNC = "@async"  # cp.async available (sm_80 and later): else the stages are filled by plain copies
STAGED = "@staged"  # shared global name -> (its get_global, the two-stage value): lt-double-buffer
WARP = 32


def lower_lt_to_gpu(module: ir.Module | ir.Operation, check_bounds: bool = True, emulate: bool = False, async_copies: bool = True) -> None:
    """Rewrite every lt function of ``module`` into ``gpu.launch`` ops (with
    ``emulate``: sequential loops over blocks and threads), in place."""
    op = module.operation
    if check_bounds:
        bounds.check_bounds(op)
    with op.context, ir.Location.unknown():
        prefetching = []  # lt-prefetch's CPU cache hints: nothing to do on a GPU
        op.walk(lambda o: (prefetching.append(o) if o.name == "lt.loop" and "lt.prefetch" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
        for loop in prefetching:
            del loop.attributes["lt.prefetch"]
        check(op)
        for f in lt.functions(op):
            if f.regions[0].blocks:
                _lower_function(f, emulate, async_copies)


def _lower_function(f, emulate: bool, async_copies: bool = True) -> None:
    if not emulate:  # (emulated, the block's buffer serves its threads one after another as it is)
        keep_owned_in_registers(f)
    keep_tiles_in_registers(f, emulate)
    profiled = launch_slot(f)  # instrumented for the GPU profile (lowering/profile.py): (the first launch's slot, launches)
    launches = form_launches(f, emulate)
    if profiled is not None and len(launches) != profiled[1]:
        raise CompileError(f"error: the GPU profile counted {profiled[1]} launches of @{ir.StringAttr(f.attributes['sym_name']).value}, "
                           f"the lowering made {len(launches)}")
    for k, (launch, ids, body) in enumerate(launches):
        if profiled is not None:
            _time_launch(launch, body, ids, profiled[0] + k, emulate)
        privatise_launch(launch)
        _only_block_sequential(launch)
        _mark_vector_copies(launch)
        apply_padding(launch)  # after the analyses of accesses: they see the logical indices
        if not emulate:  # emulated threads run one by one: function-level buffers do
            place_shared_buffers(launch, body)
            hoist_allocs(launch, body, device=True)
        extents = ids[EXTENTS]["thread"]
        threads = 0 if emulate else extents[0] * extents[1] * extents[2]
        ctx = {IDS: ids, LAUNCH: launch, THREADS: threads, STAGED: {}, STAGED_AT: [], ASYNC: async_copies}
        GpuLowering().lower_ops(list(body.operations), ctx)
        _drop_unstaged(ctx)
        if ctx[STAGED] and not emulate:  # the stages (and any clipped copy's single ones) within static shared memory
            used = _shared_bytes(launch)
            if used > gpu_mapping.SHARED_BYTES:
                where = ctx[STAGED_AT][0]
                raise CompileError(f"{where}: two stages of the tiles take {used} bytes of shared memory, "
                                   f"over the {gpu_mapping.SHARED_BYTES} a block may declare: smaller tiles")
    finish_function(f, GpuLowering())  # what stays on the host


class GpuLowering(LtToScf):
    """``LtToScf`` inside a launch (see the module docs)."""

    def lower_loop(self, loop, ctx: dict) -> None:
        if "lt.gpu_axis" in loop.attributes:
            self.lower_mapped_loop(loop, ctx)
        elif DOUBLE_BUFFER in loop.attributes and IDS in ctx and self.lower_double_buffered(loop, ctx):
            return
        elif _VECTOR_LOOP in loop.attributes and self.lower_vector_copy(loop, ctx):
            return
        else:
            super().lower_loop(loop, ctx)

    def lower_profile_mark(self, op, ctx: dict) -> None:
        """A profile mark (``lowering/profile.py``) in a launch on a GPU:
        thread (0, 0, 0) of the block adds the signed ``%clock64`` into
        the mark's slot (emulated: the CPU's mark)."""
        if not ctx.get(THREADS):
            super().lower_profile_mark(op, ctx)
            return
        slot, sign = mark_slot(op)
        thread_ids = [ctx[IDS][("thread", a)] for a in gpu_mapping.AXES]
        end = _when_all_zero(op, thread_ids)
        with ir.InsertionPoint(end), op.location:
            add_to_counter(signed(_clock64(), sign), slot)
        op.erase()

    def lower_double_buffered(self, loop, ctx: dict) -> bool:
        """A block-level sequential loop marked by ``lt-double-buffer``
        (``passes/double_buffer.py`` documents the pipeline): its copies of
        iteration i + 1 into a second stage of each buffer they fill, issued
        before iteration i's compute (``cp.async`` on CUDA).  False when it
        runs a clipped iteration (a parent level's tail): then as usual."""
        dim, step, parent_offset, full, rest = iterations(loop, ctx)
        if rest or full < 2:
            return False
        emulated = not ctx.get(THREADS)
        where = f"{format_location(loop.location)}: error: lower-lt-to-gpu: lt.double_buffer"
        ctx[STAGED_AT].append(where)
        ops = lt.body_ops(lt.loop_body(loop))
        fills = [op for op in ops if _PART in op.attributes and ir.StringAttr(op.attributes[_PART]).value == "fill"]
        buffers = []
        for op in fills:
            for a in accesses(op):
                if a.kind != "read" and a.buffer not in buffers:
                    buffers.append(a.buffer)
        last = ops.index(fills[-1])
        first_rest = next((i for i, o in enumerate(ops) if i > last and _statement(o)), len(ops))
        for k, op in enumerate(ops):  # which clone keeps what (marks survive cloning)
            if _PART in op.attributes:
                continue
            if op.name == "gpu.barrier" and (k < first_rest or k == len(ops) - 1):
                op.attributes[_PART] = ir.StringAttr.get("drop")
            elif _statement(op) or op.name == "gpu.barrier":
                op.attributes[_PART] = ir.StringAttr.get("rest")
        with ir.InsertionPoint.at_block_begin(lt.loop_body(loop)), loop.location:
            stage = arith.RemUIOp(lt.loop_body(loop).arguments[0], index_constant(2)).result
        for b in buffers:
            _give_stages(b, stage, loop.operation, ctx, where)
        copies = _keep(loop, "fill")
        rest_ops = _keep(loop, "rest")
        copying = not emulated and ctx.get(ASYNC, True)  # cp.async (else plain copies, done when issued)
        if copying:
            _async_copies(copies)
        fill = LoopEmitter(self, copies, ctx, parent_offset, step, {})
        compute = LoopEmitter(self, rest_ops, ctx, parent_offset, step, {})
        fill.body(fill.constant(0), {}, loop)  # the prologue: iteration 0's tiles
        with ir.InsertionPoint(loop), loop.location:
            if copying:
                nvgpu.DeviceAsyncCreateGroupOp([])
            main = scf.ForOp(index_constant(0), index_constant(full), index_constant(1))
            with ir.InsertionPoint(main.body):
                end = scf.YieldOp([])
            i = main.induction_variable
            with ir.InsertionPoint(end):
                following = arith.AddIOp(i, index_constant(1)).result
                ahead = scf.IfOp(arith.CmpIOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _CMPI["ult"]), following, index_constant(full)).result)
                with ir.InsertionPoint(ahead.then_block):
                    issue = scf.YieldOp([])
        fill.body(following, {}, issue)
        with ir.InsertionPoint(end), loop.location:
            if copying:  # this thread's copies of iteration i are done (those of i + 1 may still fly)
                group = nvgpu.DeviceAsyncCreateGroupOp([]).result
                nvgpu.DeviceAsyncWaitOp(group, numGroups=1)
            if not emulated:  # then everyone's
                gpu.BarrierOp()
        compute.body(i, {}, end)
        if not emulated:  # every thread done with stage i % 2 before iteration i + 1 refills it
            with ir.InsertionPoint(end), loop.location:
                gpu.BarrierOp()
        copies.erase()
        rest_ops.erase()
        loop.erase()
        return True

    def lower_nested(self, op, ctx: dict) -> None:
        # Code under a branch of the program's own (scf.if, ...) may run on
        # part of a warp: no warp-wide shuffles in there.
        super().lower_nested(op, {**ctx, DIVERGENT: True} if IDS in ctx else ctx)

    def lower_vector_copy(self, loop, ctx: dict) -> bool:
        """An unrolled loop of N elements whose one asynchronous copy
        (``_async_copies``) moves N neighbours: one copy of N elements (16
        bytes) when no tail clips the loop here and both addresses are
        provably N-aligned; False (element by element) otherwise."""
        n = ir.IntegerAttr(loop.attributes[_VECTOR_LOOP]).value
        dim, step, parent_offset, full, rest = iterations(loop, ctx)
        if full != lt.loop_size(loop) or rest or n & (n - 1):
            return False
        copy = next(o for o in lt.body_ops(lt.loop_body(loop)) if o.name == "nvgpu.device_async_copy")
        copy.attributes["dstElements"] = ir.IntegerAttr.get(ir.IndexType.get(), n)
        copy.attributes[_FIRST] = ir.UnitAttr.get()  # finds iteration 0's copy among what body() emits
        block = loop.operation.block
        emit = LoopEmitter(self, loop, ctx, parent_offset, step, {})
        emit.body(emit.constant(0), {}, loop)
        emitted = []
        for op in list(block.operations):
            op.walk(lambda o: (emitted.append(o) if _FIRST in o.attributes else None, ir.WalkResult.ADVANCE)[1])
        emitted = [o for o in emitted if not inside(o, loop.operation)]
        for o in (copy, *emitted):
            del o.attributes[_FIRST]
        copy.attributes["dstElements"] = ir.IntegerAttr.get(ir.IndexType.get(), 1)
        if len(emitted) == 1 and _aligned_copy(emitted[0], n):
            emitted[0].attributes["bypassL1"] = ir.UnitAttr.get()  # cp.async.cg: 16 bytes straight to shared memory
            loop.erase()
            return True
        for o in emitted:  # not provably aligned: element by element after all
            o.attributes["dstElements"] = ir.IntegerAttr.get(ir.IndexType.get(), 1)
        emit.iterations(1, lt.loop_size(loop), 1)
        loop.erase()
        return True

    def lower_reduce(self, op, ctx: dict) -> None:
        if "lt.block_combine" in op.attributes and IDS in ctx and ctx.get(THREADS):
            self.lower_block_combine(op, ctx)
            return
        if "lt.atomic" in op.attributes and IDS in ctx and warp_combine(op, ctx):
            with ir.InsertionPoint(op), op.location:
                _combine_then_update(op, ctx)
            op.erase()
        else:
            super().lower_reduce(op, ctx)

    def lower_block_combine(self, op, ctx: dict) -> None:
        """Every thread of the block reaches ``op`` with its own partial
        result (``privatise_across_sequential``): whole warps combine with
        shuffles, then the block through shared slots, and thread 0 updates
        the accumulator; without whole warps every thread updates it
        atomically."""
        value = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            if ctx[THREADS] % WARP == 0 and not ctx.get(DIVERGENT) and getattr(value.type, "width", 0) in (32, 64):
                _combine_then_update(op, ctx)
            else:
                value, acc, *indices = list(op.operands)
                atomic_update(ir.StringAttr(op.attributes["kind"]).value, value, acc, indices)
        op.erase()

    def lower_mapped_loop(self, loop, ctx: dict) -> None:
        """Lower one mapped lt.loop under ``ctx`` (see the module docs)."""
        dim, step, parent_offset, full, rest = iterations(loop, ctx)
        kind = ir.StringAttr(loop.attributes["lt.gpu"]).value
        axis = ir.StringAttr(loop.attributes["lt.gpu_axis"]).value
        if (kind, axis) not in ctx[IDS]:  # emulated: a thread chain starts here
            ctx = _emulate_threads(loop, ctx)
        if "lt.gpu_chain" in loop.attributes:
            ctx = _only_chain_threads(loop, ctx)
        iv = ctx[IDS][(kind, axis)]
        launch = ctx[LAUNCH]
        mark_atomic_reduces(loop, private=lambda op: thread_private(op.operands[1], launch))
        emit = LoopEmitter(self, loop, ctx, parent_offset, step, {})
        # Code under a guard on a thread id runs on part of a warp only.
        guarded = LoopEmitter(self, loop, {**ctx, DIVERGENT: True} if kind == "thread" else ctx, parent_offset, step, {})
        # Every id below the launch extent runs a full iteration: no test.  (The
        # extent can exceed this loop's count: thread loops side by side share
        # the block, sized for the largest.)
        extent = ctx[IDS][EXTENTS][kind][gpu_mapping.AXES.index(axis)]
        if full > 0:
            if full == extent:
                emit.body(iv, {}, loop)
            else:
                guarded.body(iv, {}, _guard(loop, "ult", iv, emit.constant(full)))
        if rest > 0:
            guarded.body(emit.constant(full), {dim: rest}, _guard(loop, "eq", iv, emit.constant(full)))
        loop.erase()


DOUBLE_BUFFER = "lt.double_buffer"


_PART = "lt.pipeline_part"


def _keep(loop, part: str):
    """A copy of ``loop`` before it whose body keeps the statements marked
    ``part`` (and the unmarked index arithmetic)."""
    copy = loop.clone(ip=ir.InsertionPoint(loop))
    for op in reversed(lt.body_ops(lt.loop_body(copy))):
        if _PART in op.attributes:
            if ir.StringAttr(op.attributes[_PART]).value != part:
                op.erase()
            else:
                del op.attributes[_PART]
    return copy


def _statement(op) -> bool:
    return not is_pure_index_op(op) and op.name not in ("lt.dim", "lt.alloc", "gpu.barrier")


def _give_stages(buffer, stage, loop, ctx: dict, where: str) -> None:
    """Give ``buffer`` (a block-shared global, or emulated an lt.alloc in
    ``loop``'s body) a leading axis of 2 stages in ``loop``: its loads and
    stores there index the doubled buffer with ``stage``.  One doubled
    global a shared one (the full and clipped copies of a block loop each
    hold a copy of ``loop``); the single one goes when nothing reads it
    (``_drop_unstaged``)."""
    t = ir.MemRefType(buffer.type)
    doubled = ir.MemRefType.get([2, *t.shape], t.element_type, memory_space=t.memory_space)
    owner = buffer.owner
    owner = owner if isinstance(owner, ir.Block) else owner.operation
    if isinstance(owner, ir.Block) or owner.name not in ("memref.get_global", "lt.alloc"):
        raise CompileError(f"{where}: a buffer its copies fill is not a tile of block-shared memory")
    if owner.name == "memref.get_global":
        staged = ctx[STAGED]
        name = ir.FlatSymbolRefAttr(owner.attributes["name"]).value
        if name not in staged:
            with ir.InsertionPoint(owner), owner.location:
                staged[name] = (owner, shared_global(ctx[LAUNCH], doubled))
        new = staged[name][1]
    else:
        dims = [ir.StringAttr(d).value for d in ir.ArrayAttr(owner.attributes["dims"])]
        attrs = {name: owner.attributes[name] for name in owner.attributes if name != "dims"}
        attrs["dims"] = ir.ArrayAttr.get([ir.StringAttr.get(d) for d in ["stage" + "'" * sum(d.startswith("stage") for d in dims), *dims]])
        with ir.InsertionPoint(loop), owner.location:
            new = ir.Operation.create("lt.alloc", results=[doubled], attributes=attrs).results[0]
    for use in list(buffer.uses):
        op = use.owner.operation
        if not inside(op, loop):
            continue  # another copy of the loop (a block loop's clipped iteration)
        if op.name not in ("memref.load", "memref.store"):
            raise CompileError(f"{where}: '{op.name}' uses a buffer its copies fill ({format_location(op.location)})")
        rebuild_access(op, new, [stage, *access_indices(op)])
    if owner.name == "lt.alloc":
        owner.erase()


def _drop_unstaged(ctx: dict) -> None:
    """The single-stage shared globals that double buffering replaced
    everywhere: their get_global and the global itself."""
    for name, (get, _) in ctx[STAGED].items():
        if not list(get.results[0].uses):
            module = get
            while module.name != "builtin.module":
                module = module.parent
            get.erase()
            table = ir.SymbolTable(module)
            if name in table:
                table[name].erase()


def _shared_bytes(launch) -> int:
    """Bytes of the distinct block-shared globals ``launch`` reads."""
    sizes = {}

    def visit(o):
        if o.name == "memref.get_global":
            t = ir.MemRefType(o.results[0].type)
            if t.memory_space is not None:
                sizes[ir.FlatSymbolRefAttr(o.attributes["name"]).value] = lt.nbytes(t.shape, t.element_type)
        return ir.WalkResult.ADVANCE

    launch.walk(visit)
    return sum(sizes.values())


_VECTOR_COPY = "lt.vector_copy"  # on a copy's store: its unrolled loop moves N neighbours (_mark_vector_copies)
_VECTOR_LOOP = "lt.async_vector"  # on that loop once its copy is asynchronous
_FIRST = "lt.first_copy"  # GpuLowering.lower_vector_copy's mark, while it emits


def _only_block_sequential(launch) -> None:
    """lt-double-buffer pipelines a block-level sequential loop whose body
    starts with the copies of its lt-cache tiles (``passes.double_buffer.
    stages``: marked "fill" here, before the tiles become shared globals);
    elsewhere (a one-thread kernel's loop, a loop inside a thread loop: its
    tiles are a thread's own) the loop runs as it is, as on the CPU."""
    marked = []
    launch.walk(lambda o: (marked.append(o) if o.name == "lt.loop" and DOUBLE_BUFFER in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    for loop in marked:
        found = stages(loop) if gpu_mapping.block_sequential(loop) else "not block-level sequential"
        if isinstance(found, str):  # (or a later move broke the copies-first structure lt-double-buffer checked)
            del loop.attributes[DOUBLE_BUFFER]
            continue
        for op in found[0]:  # the lt-cache copies: what the next iteration fills ahead
            op.attributes[_PART] = ir.StringAttr.get("fill")


def _mark_vector_copies(root) -> None:
    """Mark the copies of lt-double-buffer loops in ``root`` that an
    unrolled loop of N neighbours makes (N * element bytes = 16): the
    source's last index is that loop's dim, the tile's last index the
    same dim relative to the tile's start, and no padding splits a group
    of N.  Runs on the logical indices, before lt-pad's layout."""
    stores = []

    def visit(o):
        if o.name == "memref.store" and any(DOUBLE_BUFFER in l.attributes for l in lt.enclosing_loops(o)):
            stores.append(o)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    for store in stores:
        value, dst, *dst_idx = list(store.operands)
        loop = store.parent
        load = value.owner
        if isinstance(load, ir.Block) or load.name != "memref.load" or loop.name != "lt.loop" or not dst_idx:
            continue
        t = ir.MemRefType(dst.type)
        n = lt.loop_size(loop)
        notes = lt.annotations(loop)
        if notes.get("unroll") != 0 or lt.loop_tail(loop) or n * lt.nbytes([1], t.element_type) != 16:
            continue
        statements = [o for o in lt.body_ops(lt.loop_body(loop)) if not is_pure_index_op(o) and o.name != "lt.dim"]
        if len(statements) != 2 or statements[0] != load or statements[1] != store:
            continue  # the loop copies this one element and does nothing else
        dim = lt.loop_dim(loop)

        def is_dim(v) -> bool:
            owner = v.owner
            return not isinstance(owner, ir.Block) and owner.name == "lt.dim" and ir.StringAttr(owner.attributes["dim"]).value == dim

        src_idx = list(load.operands)[1:]
        relative = match_relative_index(dst_idx[-1])
        if not src_idx or not is_dim(src_idx[-1]) or not (is_dim(dst_idx[-1]) or (relative and is_dim(relative[0]))):
            continue
        owner = dst.owner
        if not isinstance(owner, ir.Block) and owner.name == "lt.alloc" and padding(owner) is not None:
            axis, every, _ = padding(owner)
            if axis == t.rank - 1 and every % n:
                continue
        store.attributes[_VECTOR_COPY] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n)


def _async_copies(loop) -> None:
    """Each ``S[...] <- load G[...]`` in ``loop`` (G device memory, S
    block-shared) becomes ``nvgpu.device_async_copy`` of one element
    (``cp.async.ca.shared.global``, 4 bytes for f32); an unrolled loop
    that ``_mark_vector_copies`` marked copies its N neighbours at once
    where it can (``GpuLowering.lower_vector_copy``)."""
    stores = []
    loop.walk(lambda o: (stores.append(o) if o.name == "memref.store" else None, ir.WalkResult.ADVANCE)[1])
    for store in stores:
        value, dst, *dst_idx = list(store.operands)
        load = value.owner
        if isinstance(load, ir.Block) or load.name != "memref.load" or ir.MemRefType(dst.type).memory_space is None:
            continue
        src, *src_idx = list(load.operands)
        if ir.MemRefType(src.type).memory_space is not None or len(list(value.uses)) != 1:
            continue
        if lt.nbytes([1], value.type) not in (4, 8):  # cp.async moves 4, 8 or 16 bytes: narrower elements copy as they are
            continue
        with ir.InsertionPoint(store), store.location:
            nvgpu.DeviceAsyncCopyOp(dst, dst_idx, src, src_idx, ir.IntegerAttr.get(ir.IndexType.get(), 1),
                                    results=[ir.Type.parse("!nvgpu.device.async.token")])
        if _VECTOR_COPY in store.attributes and store.parent.name == "lt.loop":
            store.parent.attributes[_VECTOR_LOOP] = store.attributes[_VECTOR_COPY]
        store.erase()
        load.erase()


def _aligned_copy(copy, n: int) -> bool:
    """Whether both addresses of ``copy`` (an nvgpu.device_async_copy of
    ``n`` elements) are multiples of ``n`` elements: every index's stride
    is, or the index is (trailing zeros of its arithmetic)."""
    operands = list(copy.operands)
    dst = operands[0]
    dst_rank = ir.MemRefType(dst.type).rank
    dst_idx = operands[1 : 1 + dst_rank]
    src = operands[1 + dst_rank]
    src_idx = operands[2 + dst_rank : 2 + dst_rank + ir.MemRefType(src.type).rank]
    need = n.bit_length() - 1
    for memref_value, idx in ((dst, dst_idx), (src, src_idx)):
        shape = list(ir.MemRefType(memref_value.type).shape)
        stride = 1
        for size, i in reversed(list(zip(shape, idx))):
            if stride % n and _trailing_zeros(i) < need:
                return False
            stride *= size
    return True


def _trailing_zeros(v, depth: int = 0) -> int:
    """Low bits known to be zero in index value ``v`` (0 when unknown)."""
    owner = v.owner
    if depth > 64 or isinstance(owner, ir.Block):
        return 0
    op = owner.operation
    name = op.name
    if name == "arith.constant":
        c = ir.IntegerAttr(op.attributes["value"]).value
        return 64 if c == 0 else (c & -c).bit_length() - 1
    args = list(op.operands)
    if name == "arith.muli":
        return min(64, _trailing_zeros(args[0], depth + 1) + _trailing_zeros(args[1], depth + 1))
    if name in ("arith.addi", "arith.subi", "arith.ori", "arith.xori", "arith.minsi", "arith.maxsi", "arith.minui", "arith.maxui"):
        return min(_trailing_zeros(a, depth + 1) for a in args)
    if name == "arith.andi":
        return max(_trailing_zeros(a, depth + 1) for a in args)
    if name == "arith.shli" and args[1].owner is not None and not isinstance(args[1].owner, ir.Block) and args[1].owner.operation.name == "arith.constant":
        return min(64, _trailing_zeros(args[0], depth + 1) + ir.IntegerAttr(args[1].owner.operation.attributes["value"]).value)
    if name == "arith.select":
        return min(_trailing_zeros(args[1], depth + 1), _trailing_zeros(args[2], depth + 1))
    if name in ("arith.index_cast", "arith.index_castui"):
        return _trailing_zeros(args[0], depth + 1)
    return 0


def check(module_op) -> None:
    """Raise a located CompileError if the module's GPU mapping is illegal
    or it asks for CPU threads (``lt.parallel``)."""
    for loop in preorder_loops(module_op):
        if "parallel" in lt.annotations(loop):
            where = format_location(loop.location)
            raise CompileError(
                f"{where + ': ' if where else ''}error: lower-lt-to-gpu: lt.parallel runs a loop on CPU threads; "
                "for a GPU map it with lt-gpu-map (or compile for the cpu target)"
            )
    problem = gpu_mapping.check_mapping(module_op)
    if problem is not None:
        loop, why = problem
        where = format_location(loop.location)
        raise CompileError(f"{where + ': ' if where else ''}error: lower-lt-to-gpu: illegal GPU mapping: {why}")


def _clock64() -> ir.Value:
    """The SM's cycle counter (PTX ``%clock64``)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.Operation.create("nvvm.read.ptx.sreg.clock64", results=[i64]).result


def _time_launch(launch, body, ids, slot: int, emulate: bool) -> None:
    """Time a launch into counter ``slot`` of the GPU profile: on a GPU,
    thread (0, 0, 0) of each block from the start of the launch's body to
    its end; emulated, the loops over its blocks."""
    i64 = ir.IntegerType.get_signless(64)
    if emulate:
        with ir.InsertionPoint(launch), launch.location:
            start = read_cycles(i64)
        with ir.InsertionPoint.after(launch), launch.location:
            add_to_counter(arith.SubIOp(read_cycles(i64), start).result, slot, atomic=False)
        return
    ops = list(body.operations)
    with ir.InsertionPoint(ops[0]), launch.location:
        start = _clock64()
    end = _when_all_zero(ops[-1], [ids[("thread", a)] for a in gpu_mapping.AXES])
    with ir.InsertionPoint(end), launch.location:
        add_to_counter(arith.SubIOp(_clock64(), start).result, slot)


def form_launches(f, emulate: bool = False) -> list:
    """Wrap the statements of ``f`` in gpu.launch ops; returns
    [(launch op, {("block"|"thread", axis): id value}, body block)] in
    program order.

    ``emulate``: instead of a gpu.launch, ``scf.for`` loops run the blocks
    one after another on the CPU, and each thread chain's threads one after
    another where the chain starts (``lower_mapped_loop``), which is what a
    barrier between side-by-side thread loops means.  That is the
    ``cuda-emulated`` target: the GPU lowering, predication, privatisation
    and atomics checked on any machine; races are ruled out statically by
    the mapping rules, not by this."""
    entry = f.regions[0].blocks[0]
    # Constants and index arithmetic stay on the host, all before the first
    # launch (in their order: each depends only on earlier ones), so every
    # launch sees them.
    pure = [o for o in lt.body_ops(entry) if is_pure_index_op(o)]
    first = lt.body_ops(entry)[0]
    for op in pure:
        if op != first:
            op.move_before(first)
    launches = []
    for group in gpu_mapping.launch_groups(f):
        root = group[0] if lt.is_loop(group[0]) and gpu_mapping.mapping(group[0]) else None
        launches.append(_launch(group, root, emulate))
    for launch, _, body in launches:
        _check_contained(launch, body)
    return launches


def _launch(ops: list, root, emulate: bool = False):
    """A gpu.launch before ops[0] holding ``ops``, the kernel rooted at
    ``root`` (None: a launch of one thread)."""
    grid, block = gpu_mapping.launch_size(root) if root is not None else ([1, 1, 1], [1, 1, 1])
    if root is not None:
        for loop, (_, axis) in gpu_mapping.hardware_axes(root).items():
            loop.attributes["lt.gpu_axis"] = ir.StringAttr.get(axis)
        # Each thread chain's first loop records the axes the chain uses
        # (read while lowering, when the chain's loops are already rewritten).
        for chain in gpu_mapping.kernel_chains(root)[1]:
            axes = "".join(sorted(ir.StringAttr(l.attributes["lt.gpu_axis"]).value for l in chain))
            chain[0].attributes["lt.gpu_chain"] = ir.StringAttr.get(axes)
    if emulate:
        return _emulated_launch(ops, grid, block)
    with ir.InsertionPoint(ops[0]), ops[0].location:
        launch = gpu.LaunchOp(tuple(grid), tuple(block))
    if root is not None and MIN_BLOCKS in root.attributes:  # lt-min-blocks: the kernel's .minnctapersm
        launch.operation.attributes[MIN_BLOCKS] = root.attributes[MIN_BLOCKS]
    with ir.InsertionPoint(ops[0]), ops[0].location:
        body = launch.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            terminator = gpu.TerminatorOp()
    for op in ops:
        op.move_before(terminator)
    args = list(body.arguments)
    ids = {("block", a): args[i] for i, a in enumerate(gpu_mapping.AXES)}
    ids.update({("thread", a): args[3 + i] for i, a in enumerate(gpu_mapping.AXES)})
    ids[EXTENTS] = {"block": grid, "thread": block}
    if root is not None:
        blocks, _ = gpu_mapping.kernel_chains(root)
        if blocks:
            _separate_parts(blocks[-1], [ids[("thread", a)] for a in gpu_mapping.AXES])
    return launch.operation, ids, body


SHARED_SPACE = 3  # NVPTX's address space of block-shared memory


def place_shared_buffers(launch, body) -> None:
    """Each ``lt.alloc`` of the launch whose nearest mapped loop is a block
    loop becomes block-shared memory: a ``memref.global`` in address space
    3 (one symbol a buffer; outlining copies it into the kernel's module,
    NVPTX declares it ``.shared``), read with ``memref.get_global`` at the
    start of the launch.  Its size is checked by the mapping rules
    (``gpu_mapping.SHARED_BYTES``)."""
    allocs = []
    launch.walk(lambda o: (allocs.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1])
    allocs = [a for a in allocs if gpu_mapping.buffer_space(a) == "block"]
    first = lt.body_ops(body)[0] if allocs else None
    for a in allocs:
        t = ir.MemRefType(a.results[0].type)
        with ir.InsertionPoint(first), a.location:
            value = shared_global(launch, ir.MemRefType.get(t.shape, t.element_type, memory_space=_shared_space()))
        a.results[0].replace_all_uses_with(value)
        a.erase()


def _separate_parts(block_loop, thread_ids) -> None:
    """Side-by-side parts of the innermost block loop's body (or of a
    block-level sequential loop's): each thread loop is a part, each
    block-level sequential loop a part split the same way inside, each run
    of other statements a part that thread 0 runs; a gpu.barrier between
    consecutive parts."""
    body = lt.loop_body(block_loop)
    statements = [o for o in lt.body_ops(body) if not is_pure_index_op(o) and o.name != "lt.alloc"]
    if not gpu_mapping.thread_roots(block_loop):
        return
    parts, run = [], []
    for op in statements:
        if lt.is_loop(op) and gpu_mapping.mapping(op) == "thread":
            kind = "threads"
        elif lt.is_loop(op) and gpu_mapping.block_sequential(op):
            kind = "sequential"
        else:
            run.append(op)
            continue
        if run:
            parts += _split_starts(run)
            run = []
        parts.append((kind, [op]))
    if run:
        parts += _split_starts(run)
    since_barrier: list = []  # the (reads, writes) of the parts since the last barrier
    for i, (kind, ops) in enumerate(parts):
        touched = _buffers_touched(ops)
        if i and any(_parts_conflict(touched, earlier) for earlier in since_barrier):
            # before the profile's start marks of this part's loop (already under
            # thread 0's scf.if): a wait for the other threads is not the loop's time
            anchor = parts[i - 1][1][0].parent if parts[i - 1][0] == "starts" else ops[0]
            with ir.InsertionPoint(anchor), ops[0].location:
                gpu.BarrierOp()
            since_barrier = []
        since_barrier.append(touched)
        if kind in ("single", "starts"):
            _on_thread_zero(ops, thread_ids)
        elif kind == "sequential":
            # A block-level sequential loop: its body is split the same way,
            # and a barrier ends each iteration when the next one may touch
            # what other threads of this one still use.
            _separate_parts(ops[0], thread_ids)
            if _iterations_interact(ops[0]):
                with ir.InsertionPoint(lt.loop_body(ops[0])), ops[0].location:
                    gpu.BarrierOp()


def _split_starts(run: list) -> list:
    """A run of statements as parts: the profile's start marks at its end
    (``lowering/profile.py``: they start the next part's loop) a part of
    their own."""
    k = len(run)
    while k and is_mark(run[k - 1]) and mark_slot(run[k - 1])[1] < 0:
        k -= 1
    return [(kind, ops) for kind, ops in (("single", run[:k]), ("starts", run[k:])) if ops]


def _buffers_touched(ops: list) -> tuple[set, set]:
    """(buffers read, buffers written or reduced into) by ``ops``, leaving
    out each thread's own buffers (registers: no other thread sees them)."""
    reads, writes = set(), set()
    for op in ops:
        for a in accesses(op):
            owner = a.buffer.owner
            if not isinstance(owner, ir.Block) and owner.operation.name == "lt.alloc":
                if gpu_mapping.buffer_space(owner.operation) == "thread":
                    continue
            (reads if a.kind == "read" else writes).add(a.buffer)
    return reads, writes


def _parts_conflict(later: tuple, earlier: tuple) -> bool:
    """Whether a part that touches ``later`` (reads, writes) must wait for
    every thread to finish a part before it that touched ``earlier``: one
    writes a buffer the other reads or writes.  Parts that touch disjoint
    buffers (the copies of A's and B's slices into their shared tiles) run
    on without a barrier between them."""
    (r2, w2), (r1, w1) = later, earlier
    return bool(w1 & (r2 | w2) or w2 & r1)


def _iterations_interact(seq) -> bool:
    """Whether iteration i + 1 of block-level sequential loop ``seq`` may
    touch memory iteration i's threads use: some buffer written in it is
    accessed at elements other iterations also access (not counting
    reductions of one kind, ``reorder_conflicts``), or it stores to a
    block-shared buffer allocated in the loop (one buffer for every
    iteration: the next iteration may overwrite what other threads still
    read).  Reading shared memory, reducing into it atomically, or storing
    to a shared buffer made outside the loop at elements only one iteration
    touches (``reorder_conflicts`` says which) needs no barrier."""
    if reorder_conflicts(seq) is not None:
        return True
    for a in accesses(seq):
        owner = a.buffer.owner
        if a.kind == "write" and not isinstance(owner, ir.Block) and owner.operation.name == "lt.alloc":
            if gpu_mapping.buffer_space(owner.operation) == "block" and inside(owner.operation, seq):
                return True
    return False


def _on_thread_zero(ops: list, thread_ids) -> None:
    """Move ``ops`` under ``scf.if`` (thread ids all 0).  What they compute
    does not leave them: the mapping rules (gpu_mapping.side_by_side_problem)
    refuse a block loop where it would).  Index arithmetic that sits
    between them (pure: it reads only values from outside the block or
    other such arithmetic) moves before the ``scf.if`` first, so what the
    guarded ops use still dominates them."""
    block_ops = lt.body_ops(ops[0].block)
    first = next(k for k, o in enumerate(block_ops) if o == ops[0])
    last = next(k for k, o in enumerate(block_ops) if o == ops[-1])
    for o in block_ops[first:last + 1]:
        if not any(o == x for x in ops) and is_pure_index_op(o):
            o.move_before(ops[0])
    end = _when_all_zero(ops[0], thread_ids)
    for op in ops:
        op.move_before(end)


def _when_all_zero(before, values):
    """An ``scf.if`` before ``before`` taken when every one of ``values`` is
    0; returns the op to insert the guarded code before."""
    with ir.InsertionPoint(before), before.location:
        zero = arith.ConstantOp(ir.IndexType.get(), 0).result
        eq = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _CMPI["eq"])
        cond = None
        for v in values:
            c = arith.CmpIOp(eq, v, zero).result
            cond = c if cond is None else arith.AndIOp(cond, c).result
        branch = scf.IfOp(cond)
        with ir.InsertionPoint(branch.then_block):
            return scf.YieldOp([])


def _emulated_launch(ops: list, grid: list, block: list):
    """Loops over z, y, x of the grid around ``ops`` (threads: see
    ``lower_mapped_loop``)."""
    ids = {EXTENTS: {"block": grid, "thread": block}}
    anchor = ops[0]
    outer = None
    for axis in ("z", "y", "x"):
        loop = _for(anchor, ops[0].location, grid[gpu_mapping.AXES.index(axis)])
        anchor = loop.body.operations[0]
        outer = outer or loop.operation
        ids[("block", axis)] = loop.induction_variable
    for op in ops:
        op.move_before(anchor)
    return outer, ids, anchor.operation.block


def _for(before, location, trip_count: int):
    """An empty ``scf.for`` over 0..trip_count before ``before``."""
    index = ir.IndexType.get()
    with ir.InsertionPoint(before), location:
        zero = arith.ConstantOp(index, 0).result
        one = arith.ConstantOp(index, 1).result
        loop = scf.ForOp(zero, arith.ConstantOp(index, trip_count).result, one)
        with ir.InsertionPoint(loop.body):
            scf.YieldOp([])
    return loop


def _emulate_threads(loop, ctx: dict) -> dict:
    """Emulation: loops over the block's threads (z, y, x) around ``loop``,
    the first loop of a thread chain; returns ``ctx`` with their ids."""
    dims = ctx[IDS][EXTENTS]["thread"]
    ids = dict(ctx[IDS])
    anchor = loop
    for axis in ("z", "y", "x"):
        inner = _for(anchor, loop.location, dims[gpu_mapping.AXES.index(axis)])
        anchor = inner.body.operations[0]
        ids[("thread", axis)] = inner.induction_variable
    loop.move_before(anchor)
    return {**ctx, IDS: ids}




def thread_private(buffer, launch) -> bool:
    """Whether ``buffer`` is a thread's own: made inside the launch, and not
    block-shared memory (``place_shared_buffers``)."""
    owner = buffer.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "memref.get_global":
        return False
    return defined_inside(buffer, launch)


def _check_contained(launch, body) -> None:
    """Values computed in one launch cannot reach code outside it."""
    for op in lt.body_ops(body):
        for r in op.results:
            for use in r.uses:
                if not inside(use.owner, launch):
                    where = format_location(op.location)
                    raise CompileError(
                        f"{where + ': ' if where else ''}error: lower-lt-to-gpu: a value computed at the top "
                        "of the function is used by another kernel; compute it inside the loop that uses it"
                    )


def _only_chain_threads(root, ctx: dict) -> dict:
    """A thread chain that uses fewer axes than the block has (thread loops
    side by side, sized for the largest) runs on the threads whose ids on
    the other axes are 0: ``scf.if`` around ``root``; returns the ctx to
    lower it in (divergent: part of a warp may be off)."""
    used = set(ir.StringAttr(root.attributes["lt.gpu_chain"]).value)
    extents = ctx[IDS][EXTENTS]["thread"]
    idle = [a for i, a in enumerate(gpu_mapping.AXES) if a not in used and extents[i] > 1]
    if not idle:
        return ctx
    root.move_before(_when_all_zero(root, [ctx[IDS][("thread", a)] for a in idle]))
    return {**ctx, DIVERGENT: True}


def _guard(loop, predicate: str, iv, bound):
    """An ``scf.if iv <predicate> bound`` before ``loop``; returns the op to
    insert the guarded code before."""
    with ir.InsertionPoint(loop), loop.location:
        pred = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _CMPI[predicate])
        cond = arith.CmpIOp(pred, iv, bound).result
        branch = scf.IfOp(cond)
        with ir.InsertionPoint(branch.then_block):
            return scf.YieldOp([])


_CMPI = {"eq": 0, "ult": 6}


# ------------------------------------------------------------ privatisation


def privatise_launch(launch) -> None:
    """``privatise_across_sequential``, then ``privatise`` every mapped loop
    of a launch, outermost first."""
    loops = []
    launch.walk(lambda o: (loops.append(o) if o.name == "lt.loop" and "lt.gpu_axis" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    for loop in loops:
        if ir.StringAttr(loop.attributes["lt.gpu"]).value == "thread" and mapped_parent_kind(loop) is None:
            privatise_across_sequential(loop)
    for loop in loops:
        privatise(loop)
    for loop in loops:
        if ir.StringAttr(loop.attributes["lt.gpu"]).value == "thread" and mapped_parent_kind(loop) != "thread":
            chain = [loop]
            while (child := gpu_mapping.mapped_child(chain[-1])) is not None:
                chain.append(child)
            _mark_warp_uniform(chain)


def mapped_parent_kind(loop) -> str | None:
    parent = loop.parent
    return gpu_mapping.mapping(parent) if parent is not None and parent.name == "lt.loop" else None


def _mark_warp_uniform(thread_loops) -> None:
    """Mark ``lt.warp_uniform`` the 32-bit reductions in a thread chain whose
    element does not depend on the thread: every thread of a warp updates
    the same element, so the warp can combine its values with shuffles and
    update it once (``lower_reduce``)."""
    dims = {lt.loop_dim(l) for l in thread_loops}
    found = []
    thread_loops[-1].walk(lambda o: (found.append(o) if o.name == "lt.reduce" else None, ir.WalkResult.ADVANCE)[1])
    for op in found:
        element = op.operands[0].type
        if not (isinstance(element, (ir.F32Type,)) or (isinstance(element, ir.IntegerType) and ir.IntegerType(element).width == 32)):
            continue
        uniform = True
        for index in list(op.operands)[2:]:
            src = _defining(index)
            if src is None:
                uniform = not any(_inside_block_arg(index, l) and index == lt.loop_body(l).arguments[0] for l in thread_loops) and uniform
                uniform = uniform and not _inside_block_arg(index, thread_loops[-1])
            elif any(reads_dim(src, d) for d in dims) or index_slice(index, thread_loops[0]) is None:
                uniform = False
        if uniform:
            op.attributes["lt.warp_uniform"] = ir.UnitAttr.get()


def warp_combine(op, ctx: dict) -> bool:
    """Whether atomic reduction ``op`` may be combined across the warp here:
    uniform element, all 32 lanes present and converged (no thread guard)."""
    return (
        "lt.warp_uniform" in op.attributes
        and bool(ctx.get(THREADS))
        and ctx[THREADS] % WARP == 0
        and not ctx.get(DIVERGENT)
    )


def combine_across_warp(kind: str, value):
    """Butterfly shuffles: every lane ends with the warp's combined value;
    returns (value, lane == 0)."""
    i32 = ir.IntegerType.get_signless(32)
    width = arith.ConstantOp(i32, WARP).result
    offset = WARP // 2
    while offset:
        shuffled = gpu.ShuffleOp(value, arith.ConstantOp(i32, offset).result, width, gpu.ShuffleMode.XOR)
        value = combine(kind, value, shuffled.results[0])
        offset //= 2
    lane = gpu.LaneIdOp().result
    zero = arith.ConstantOp(ir.IndexType.get(), 0).result
    first = arith.CmpIOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _CMPI["eq"]), lane, zero).result
    return value, first


def _combine_then_update(op, ctx: dict) -> None:
    """Reduction ``op`` reached by every lane of whole warps: combine across
    the warp, then (more than one warp) across the block, and one thread
    updates the accumulator atomically.  At the insertion point."""
    kind = ir.StringAttr(op.attributes["kind"]).value
    value, acc, *indices = list(op.operands)
    value, first = combine_across_warp(kind, value)
    if ctx[THREADS] > WARP:
        value, first = combine_across_block(kind, value, first, op, ctx)
    branch = scf.IfOp(first)
    with ir.InsertionPoint(branch.then_block):
        atomic_update(kind, value, acc, indices)
        scf.YieldOp([])


def combine_across_block(kind: str, value, lane_zero, anchor, ctx: dict):
    """After ``combine_across_warp``: lane 0 of each warp writes its warp's
    value to a shared array (a slot a warp), a barrier, and warp 0 combines
    the slots with shuffles again (lanes past the last warp read the
    identity); returns (value, whether this is thread 0).  A second barrier
    lets the slots be written again (the reduction may sit in a loop).  Only
    where every thread of the block reaches this point (``warp_combine``:
    no thread guard, whole warps): the combination is deterministic and
    the accumulator gets one update a block instead of one a warp."""
    index = ir.IndexType.get()
    extents = ctx[IDS][EXTENTS]["thread"]
    warps = ctx[THREADS] // WARP
    linear = ctx[IDS][("thread", "x")]
    stride = extents[0]
    for axis, extent in (("y", extents[1]), ("z", extents[2])):
        if extent > 1:
            term = arith.MulIOp(ctx[IDS][("thread", axis)], arith.ConstantOp(index, stride).result).result
            linear = arith.AddIOp(linear, term).result
        stride *= extent
    element = value.type
    slots = shared_global(anchor, ir.MemRefType.get([warps], element, memory_space=_shared_space()))
    warp = arith.DivUIOp(linear, arith.ConstantOp(index, WARP).result).result
    lane = gpu.LaneIdOp().result
    write = scf.IfOp(lane_zero)
    with ir.InsertionPoint(write.then_block):
        memref.StoreOp(value, slots, [warp])
        scf.YieldOp([])
    gpu.BarrierOp()
    identity = lt.reduce_identity(kind, element)
    ident = arith.ConstantOp(element, int(identity) if isinstance(element, ir.IntegerType) else float(identity)).result
    ult = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _CMPI["ult"])
    present = arith.CmpIOp(ult, lane, arith.ConstantOp(index, warps).result).result
    read = scf.IfOp(present, [element], has_else=True)
    with ir.InsertionPoint(read.then_block):
        scf.YieldOp([memref.LoadOp(slots, [lane]).result])
    with ir.InsertionPoint(read.else_block):
        scf.YieldOp([ident])
    # Every warp combines (no divergence around the shuffles); warp 0's is the block's.
    total, _ = combine_across_warp(kind, read.results[0])
    gpu.BarrierOp()
    zero = arith.ConstantOp(index, 0).result
    first = arith.CmpIOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _CMPI["eq"]), linear, zero).result
    return total, first


def _shared_space():
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), SHARED_SPACE)


def shared_global(anchor, memref_type) -> ir.Value:
    """A new block-shared ``memref.global`` of ``memref_type`` (address
    space 3) in the module around ``anchor``, read with ``memref.get_global``
    at the insertion point."""
    module = anchor
    while module.name != "builtin.module":
        module = module.parent
    table = ir.SymbolTable(module)
    n = 0
    while f"lt_shared_{n}" in table:
        n += 1
    name = f"lt_shared_{n}"
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
        # 16-byte aligned: 128-bit shared accesses (ld.shared.v4, 16-byte cp.async) need it
        g = memref.GlobalOp(name, ir.TypeAttr.get(memref_type), sym_visibility="private", alignment=16)
    table.insert(g.operation)
    return memref.GetGlobalOp(memref_type, name).result


def privatise_across_sequential(root) -> None:
    """Thread loop ``root`` sits in block-level sequential loops (the
    outermost S0, every thread runs them): a reduction in it into one
    element for the whole block (softmax's row maximum, read thread-strided
    as ``for n { for n' [thread] }``) accumulates in a register a thread
    across all of S0's iterations, and the block combines the registers
    once after S0 (warp shuffles, a shared slot a warp, one update;
    ``lower_reduce``), instead of once an iteration.  Emulated, the threads
    of a block run one after another: one register for them all sums the
    same values."""
    outer = root.parent
    seq = []
    while outer is not None and outer.name == "lt.loop" and not gpu_mapping.mapping(outer):
        seq.append(outer)
        outer = outer.parent
    if not seq:
        return
    s0 = seq[-1]
    for reduce in shared_reductions(root):
        acc = reduce.operands[1]
        # every loop from the reduction out to S0: its element must not move with any
        around = lt.enclosing_loops(reduce)
        dims = {lt.loop_dim(l) for l in around[: around.index(s0) + 1]}
        uniform = True
        for index in list(reduce.operands)[2:]:
            src = _defining(index)
            if src is None or any(reads_dim(src, d) for d in dims) or index_slice(index, s0) is None:
                uniform = False
        if uniform and [o for o in accesses_of(s0, acc) if o != reduce] == []:
            _privatise(reduce, s0, block=True)


def privatise(mapped) -> None:
    """Give each shared reduction in ``mapped`` that sits in sequential loops
    a per-thread accumulator (see the module docs)."""
    for reduce in shared_reductions(mapped):
        outer = _privatisable_loop(reduce, mapped)
        if outer is not None:
            _privatise(reduce, outer)


def _defining(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _inside_block_arg(v, stop) -> bool:
    """Whether block argument ``v`` belongs to ``stop`` or an op inside it."""
    return defined_inside(v, stop)


def _privatisable_loop(reduce, mapped):
    """The outermost sequential lt.loop inside ``mapped`` around ``reduce``
    whose iterations all update the same accumulator element, or None."""
    acc = reduce.operands[1]
    indices = list(reduce.operands)[2:]
    best = None
    for loop in lt.enclosing_loops(reduce):  # innermost first
        if loop == mapped:
            break
        if lt.annotations(loop) or gpu_mapping.block_sequential(loop):
            # (a block-level sequential loop runs on every thread: code on
            # thread 0 inside it keeps its accumulator, see _separate_parts)
            break
        # Every dim of the loops from here to the reduce must stay out of the index.
        dims = {lt.loop_dim(l) for l in lt.enclosing_loops(reduce)[: lt.enclosing_loops(reduce).index(loop) + 1]}
        ok = True
        for i in indices:
            op = _defining(i)
            if op is None:
                if _inside_block_arg(i, loop):
                    ok = False
                continue
            if any(reads_dim(op, d) for d in dims) or index_slice(i, loop) is None:
                ok = False
        others = [o for o in accesses_of(loop, acc) if o != reduce]
        if not ok or others:
            break
        best = loop
    return best


def _privatise(reduce, outer, block: bool = False) -> None:
    """The scalar is each thread's own (``lt.thread_private``).  ``block``:
    ``outer`` is a block-level loop (all threads) and the combine after it
    is the block's (``lt.block_combine``)."""
    kind = ir.StringAttr(reduce.attributes["kind"]).value
    value, acc, *indices = list(reduce.operands)
    element = ir.MemRefType(acc.type).element_type
    scalar = ir.MemRefType.get([], element)
    # each thread's own accumulator (a register), wherever it sits (a
    # thread-0 part of a block loop too: not block-shared memory)
    attrs = {"dims": ir.ArrayAttr.get([]), "lt.thread_private": ir.UnitAttr.get()}
    with ir.InsertionPoint(outer), reduce.location:
        private = ir.Operation.create("lt.alloc", results=[scalar], attributes=attrs).results[0]
        identity = lt.reduce_identity(kind, element)
        if isinstance(element, ir.IntegerType):
            init = arith.ConstantOp(element, int(identity)).result
        else:
            init = arith.ConstantOp(element, float(identity)).result
        memref.StoreOp(init, private, [])
    # the final combine, after the loop, with the index recomputed there
    mapping = {}
    with ir.InsertionPoint.after(outer), reduce.location:
        new_indices = []
        for i in indices:
            for op in index_slice(i, outer) or []:
                clone_mapped(op, mapping)
            new_indices.append(mapping.get(i, i))
        partial = memref.LoadOp(private, []).result
        combine_attrs = {"kind": ir.StringAttr.get(kind)}
        if block:
            combine_attrs["lt.block_combine"] = ir.UnitAttr.get()
        ir.Operation.create("lt.reduce", operands=[partial, acc, *new_indices], attributes=combine_attrs)
    with ir.InsertionPoint(reduce), reduce.location:
        ir.Operation.create("lt.reduce", operands=[value, private], attributes={"kind": ir.StringAttr.get(kind)})
    reduce.erase()
