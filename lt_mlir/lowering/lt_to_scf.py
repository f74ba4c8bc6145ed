"""``lower-lt-to-scf``: the one place that knows what lt ops mean in loops.

Annotations: ``lt.unroll = F`` emits F body copies per generated iteration
(0: every iteration, with constant iteration numbers); ``lt.vectorize = W``
runs groups of W iterations as vector code (``lowering/vectorize.py``) and
the rest as scalar code; ``lt.parallel`` makes the loop over full
iterations an ``scf.parallel`` (OpenMP later) and its shared reductions
atomic.

* ``lt.loop`` over dim ``d`` with ``size`` S, ``tail`` T and inner extent E
  becomes ``scf.for %i = 0 to S`` over the body, followed (when T > 0) by one
  inlined copy of the body with ``%i = S`` in which the inner levels of ``d``
  cover only T elements.  All sizes are static, so every clipped copy has
  static trip counts: an inner level of size s, tail t and inner extent e that
  may cover only R elements runs ``n = min(s, R // e)`` full iterations and a
  clipped one over ``R - n * e`` elements.  Nothing is padded and nothing is
  guarded: no iteration ever touches an index outside the dim's extent.
* ``lt.dim d`` becomes ``sum(iteration * E)`` over the enclosing levels of d
  (``arith`` on ``index``; canonicalisation folds the constants).
* ``lt.reduce`` becomes load / combine / store on its accumulator.
* ``lt.alloc`` becomes a ``memref.alloca`` (up to 64 KiB) or a
  ``memref.alloc`` freed before every return, hoisted to the function entry
  (its size is static, so one buffer serves every iteration).

This lowering knows nothing of GPUs.  Its machinery is public for the GPU
lowering (``lowering/gpu/lt_to_gpu.py``), which subclasses ``LtToScf``:
``lower_loop`` for mapped loops, ``lower_reduce`` for warp-combined
reductions, ``lower_nested`` to note divergent code.  ``ctx`` maps each dim
name to (offset, elements available); a subclass keeps state of its own
under keys that are not dim names.
"""

from __future__ import annotations

from ..analysis import bounds
from ..analysis.dependence import is_pure_index_op, shared_reductions
from ..analysis.prefetch import gathered_rows, prefetchable_rows
from ..analysis.vector_plan import plan, plan_data_loop
from ..dialect import lt
from ..errors import CompileError, format_location
from ..mlir import arith, ir, memref, scf
from . import vectorize
from .combine import atomic_update, combine
from .layout import apply_padding
from .partials import prepare_parallel_loops
from .profile import is_mark, lower_mark_cpu

STACK_ALLOC_LIMIT = 64 * 1024
IN_ORDER_ATTR = "lt.in_order"  # on an lt.reduce: its accumulator is a loop-carried chain (mark_in_order_chains)
NO_CONTRACT_ATTR = "lt.no_contract"  # on its combining op until apply_fastmath reads it
VECTOR_ATTR = "lt.vectorize"  # on an scf.for (bounds known at run time): vectorize it by W
SCHEDULE_ATTR = "lt.schedule"  # on an scf.parallel: the OpenMP schedule of its loop
_ALLOWED_ANNOTATIONS = {"parallel", "schedule", "unroll", "vectorize"}


def lower_lt_to_scf(module: ir.Module | ir.Operation, check_bounds: bool = True) -> None:
    """Rewrite every lt op in ``module`` into scf/arith/memref, in place.

    First proves every access in bounds (``analysis/bounds.py``) unless
    ``check_bounds`` is False (tests of the guard pages need that)."""
    op = module.operation
    if check_bounds:
        bounds.check_bounds(op)
    with op.context, ir.Location.unknown():
        for f in lt.functions(op):
            if f.regions[0].blocks:
                _drop_double_buffering(f)
                expand_prefetches(f)
                check_annotations(f)
                mark_in_order_chains(f)
                finish_function(f, LtToScf())


def _drop_double_buffering(f) -> None:
    """lt-double-buffer pipelines block-shared copies and lt-min-blocks
    caps a kernel's registers, on the GPU: on the CPU the loops run as they
    are."""
    for name in ("lt.double_buffer", "lt.min_blocks"):
        marked = []
        f.walk(lambda o: (marked.append(o) if o.name == "lt.loop" and name in o.attributes else None, ir.WalkResult.ADVANCE)[1])
        for loop in marked:
            del loop.attributes[name]


def finish_function(f, lowering: "LtToScf") -> None:
    """Hoist ``f``'s scratch buffers to its entry, lower the lt ops left in
    its body with ``lowering``, and allow FMA contraction."""
    entry = f.regions[0].blocks[0]
    prepare_parallel_loops(f)  # per-thread partial results; loops too small to share
    apply_padding(f)  # after the analyses of accesses: they see the logical indices
    hoist_allocs(f, entry)
    lowering.lower_ops(list(entry.operations), {})
    apply_fastmath(f)


_CONTRACTIBLE = ("arith.addf", "arith.subf", "arith.mulf")
_MINMAX = ("arith.maximumf", "arith.minimumf")
# Ops whose result LLVM fast-math flags may change: arith's float ops and
# math's functions (every one takes a ``fastmath`` attribute).
_FLOAT_OPS = _CONTRACTIBLE + _MINMAX + ("arith.divf", "arith.remf", "arith.negf", "arith.maxnumf", "arith.minnumf")
_MATH_WITH_FLAGS = ("math.exp", "math.log", "math.sqrt", "math.absf", "math.tanh", "math.powf", "math.rsqrt", "math.erf")
FASTMATH_FLAGS = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")
FASTMATH_MODES = ("default", "strict", "fast")


def fastmath_flags(mode: str) -> dict:
    """Fast-math flags per op name for a ``fastmath`` mode (see README,
    "Floating point"): ``default`` lets a multiply and an add fuse into an
    FMA (``contract``) and leaves the sign of a zero from ``max``/``min`` of
    equal operands unspecified (``nsz``; NaNs still propagate as in NumPy);
    ``strict`` adds nothing (IEEE 754: one rounding per op, ``maximumf``
    orders -0 below +0); ``fast`` allows every rewrite LLVM knows; a comma
    list of LLVM's flags (``nnan,nsz``) puts those on every float op."""
    mode = (mode or "default").strip()
    if mode == "default":
        return {**{n: ("contract",) for n in _CONTRACTIBLE}, **{n: ("nsz",) for n in _MINMAX}}
    if mode == "strict":
        return {}
    flags = FASTMATH_FLAGS if mode == "fast" else tuple(f.strip() for f in mode.split(",") if f.strip())
    bad = [f for f in flags if f not in FASTMATH_FLAGS]
    if bad or not flags:
        raise CompileError(
            f"error: unknown fastmath mode '{mode}' (one of {', '.join(FASTMATH_MODES)}, "
            f"or a comma list of {', '.join(FASTMATH_FLAGS)})"
        )
    return dict.fromkeys(_FLOAT_OPS + _MATH_WITH_FLAGS, flags)


def set_fastmath(module_op, mode: str | None) -> None:
    """Ask every function of the module for ``mode`` (checked here): the
    ``lt.fastmath`` attribute, which the lowering reads."""
    if mode is None:
        return
    fastmath_flags(mode)
    value = ir.StringAttr.get(mode.strip(), module_op.context)
    for f in lt.functions(module_op):
        f.attributes["lt.fastmath"] = value


def function_fastmath(f) -> str:
    """The ``lt.fastmath`` mode a function asks for (``default`` if none)."""
    if "lt.fastmath" in f.attributes:
        return ir.StringAttr(f.attributes["lt.fastmath"]).value
    return "default"


def apply_fastmath(f) -> None:
    """Put the fast-math flags of the function's ``lt.fastmath`` mode on its
    float ops (by default: FMA contraction, as C compilers do with
    -ffp-contract=on, and ``nsz`` on max/min).  An op that carries flags of
    its own keeps them: per-op choices win.  The combining add of an
    in-order reduction chain (``mark_in_order_chains``) gets no
    ``contract`` unless the mode also allows ``reassoc``.  The combine of a
    vectorized reduction's lanes gets ``reassoc`` in every mode but
    ``strict`` (``vectorize._lanes_reduction``)."""
    mode = function_fastmath(f)
    table = fastmath_flags(mode)
    if "lt.fastmath" in f.attributes:
        del f.attributes["lt.fastmath"]
    ops = []

    def visit(o):
        if vectorize.LANES_ATTR in o.attributes:  # a vectorized reduction's lanes combined (vectorize._lanes_reduction)
            del o.attributes[vectorize.LANES_ATTR]
            if mode != "strict":
                kind = str(o.attributes["kind"]).removeprefix("#vector.kind<").removesuffix(">")
                flags = dict.fromkeys([*table.get(f"arith.{kind}f" if kind in ("add", "mul") else f"arith.{kind}", ()), "reassoc"])
                o.attributes["fastmath"] = ir.Attribute.parse(f"#arith.fastmath<{','.join(flags)}>")
            return ir.WalkResult.ADVANCE
        chained = NO_CONTRACT_ATTR in o.attributes
        if chained:
            del o.attributes[NO_CONTRACT_ATTR]
        if o.name in table:
            ops.append((o, chained))
        return ir.WalkResult.ADVANCE

    f.walk(visit)
    attrs: dict = {}
    for o, chained in ops:
        flags = table[o.name]
        if chained and "reassoc" not in flags:
            flags = tuple(x for x in flags if x != "contract")
            if not flags:
                continue
        if "fastmath" not in o.attributes or str(o.attributes["fastmath"]) == "#arith.fastmath<none>":
            key = ",".join(flags)
            if key not in attrs:
                attrs[key] = ir.Attribute.parse(f"#arith.fastmath<{key}>")
            o.attributes["fastmath"] = attrs[key]


def mark_in_order_chains(f) -> None:
    """Mark (``lt.in_order``) each float ``add`` reduction of a product whose
    innermost enclosing loop runs along the reduction: a plain scalar level
    (not vectorized, not parallel, under no vectorized level) that no index
    of the accumulator reads.  Its iterations form one chain through the
    accumulator, which default float semantics keep in order (no
    reassociation, so LLVM neither vectorizes nor splits it): the chain's
    latency is the loop's time.  Contracting the multiply into the add puts
    the FMA on that chain (4 cycles on Zen 3 and Intel's Golden Cove,
    against 3 and 2 for an add); left apart, the multiply runs off the
    chain, as in loop_tool's C (a statement per node, no contraction across
    them).  The result is the unfused one, as in ``strict`` mode: each
    product rounded, then added in order.  A reduction across parallel
    accumulators (a matmul's n inside k) keeps its FMAs: there they save an
    instruction and lengthen no single chain."""
    found = []
    f.walk(lambda o: (found.append(o) if o.name == "lt.reduce" else None, ir.WalkResult.ADVANCE)[1])
    for r in found:
        if ir.StringAttr(r.attributes["kind"]).value != "add" or "lt.atomic" in r.attributes:
            continue
        value, acc, *indices = list(r.operands)
        if not _is_float_scalar(value.type) or value.owner is None or isinstance(value.owner, ir.Block):
            continue
        if value.owner.operation.name != "arith.mulf":
            continue
        loop = r.parent
        if loop is None or loop.name != "lt.loop":
            continue
        if any(name in lt.annotations(level) for level in [loop, *lt.enclosing_loops(loop)] for name in ("vectorize",)):
            continue
        if "parallel" in lt.annotations(loop):
            continue
        dim = lt.loop_dim(loop)
        if not any(_varies(i, loop, dim) for i in indices):
            r.attributes[IN_ORDER_ATTR] = ir.UnitAttr.get()


def _is_float_scalar(t) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def _inside(op, ancestor) -> bool:
    while op is not None:
        if op == ancestor:
            return True
        op = op.parent
    return False


def _varies(value, loop, dim: str, depth: int = 0) -> bool:
    """Whether an index may differ between iterations of ``loop`` (over
    ``dim``); unsure: True."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        parent = owner.owner
        return parent is not None and _inside(parent.operation if hasattr(parent, "operation") else parent, loop)
    op = owner.operation
    if not _inside(op, loop):
        return False
    if op.name == "lt.dim":
        return ir.StringAttr(op.attributes["dim"]).value == dim
    if op.name == "arith.constant":
        return False
    if depth > 32 or not is_pure_index_op(op):
        return True
    return any(_varies(v, loop, dim, depth + 1) for v in op.operands)


def expand_prefetches(f) -> None:
    """Each ``lt.prefetch = D`` loop (``lt-prefetch``) gets, at the start of
    its body, a ``memref.prefetch`` (read, kept in every cache level) of
    each cache line of each row ``analysis.prefetch.prefetchable_rows``
    finds, ``D`` iterations ahead and clamped into the buffer; the
    annotation goes.  A vectorized loop prefetches nothing."""
    loops = []
    f.walk(lambda o: (loops.append(o) if o.name == "lt.loop" and "lt.prefetch" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    for loop in loops:
        distance = ir.IntegerAttr(loop.attributes["lt.prefetch"]).value
        del loop.attributes["lt.prefetch"]
        if "vectorize" in lt.annotations(loop):
            continue
        rows, gathered = prefetchable_rows(loop), gathered_rows(loop)
        if not rows and not gathered:
            continue
        with ir.InsertionPoint.at_block_begin(lt.loop_body(loop)), loop.location:
            here = ir.Operation.create("lt.dim", results=[ir.IndexType.get()],
                                       attributes={"dim": ir.StringAttr.get(lt.loop_dim(loop))}).result
            _prefetch_gathers(gathered, here, distance)
            for row in rows:
                ahead = arith.AddIOp(here, arith.ConstantOp(ir.IndexType.get(), distance).result).result
                index = arith.MinSIOp(ahead, arith.ConstantOp(ir.IndexType.get(), row.extent - 1).result).result
                for line in row.lines:
                    rest = [arith.ConstantOp(ir.IndexType.get(), k).result for k in line]
                    memref.PrefetchOp(row.buffer, [*row.leading, index, *rest], isWrite=False, localityHint=3, isDataCache=True)
    data = []
    f.walk(lambda o: (data.append(o) if o.name == "scf.for" and "lt.prefetch" in o.attributes else None, ir.WalkResult.ADVANCE)[1])
    for loop in data:
        distance = ir.IntegerAttr(loop.attributes["lt.prefetch"]).value
        del loop.attributes["lt.prefetch"]
        if VECTOR_ATTR not in loop.attributes:
            body = list(loop.regions[0].blocks)[0]
            with ir.InsertionPoint.at_block_begin(body), loop.location:
                _prefetch_gathers(gathered_rows(loop), body.arguments[0], distance)


def _prefetch_gathers(rows: list, q, distance: int) -> None:
    """Before the insertion point, for each of ``rows``
    (``analysis.prefetch.gathered_rows`` of a loop whose variable is
    ``q``): the index ``distance`` iterations ahead, ``I[min(max(q +
    distance, 0), E - 1)]`` through the same casts and clamps, and a
    ``memref.prefetch`` (into L2 and below: a gathered row is read once, a
    few iterations later) of each cache line of its row."""
    index_type = ir.IndexType.get()
    for row in rows:
        ahead = arith.AddIOp(q, arith.ConstantOp(index_type, distance).result).result
        ahead = arith.MaxSIOp(ahead, arith.ConstantOp(index_type, 0).result).result
        ahead = arith.MinSIOp(ahead, arith.ConstantOp(index_type, row.source_extent - 1).result).result
        v = memref.LoadOp(row.source, [ahead]).result
        for name, x in row.chain:
            if name == "arith.index_cast":
                v = arith.IndexCastOp(x, v).result
            else:
                bound = arith.ConstantOp(v.type, x).result
                v = {"arith.maxsi": arith.MaxSIOp, "arith.minsi": arith.MinSIOp, "arith.minui": arith.MinUIOp}[name](v, bound).result
        for line in row.lines:
            rest = [arith.ConstantOp(index_type, k).result for k in line]
            memref.PrefetchOp(row.buffer, [*row.leading, v, *rest], isWrite=False, localityHint=2, isDataCache=True)


def check_annotations(f) -> None:
    """Refuse annotations this lowering does not lower (``lt.gpu``: the GPU
    lowering's)."""
    bad = []

    def visit(o):
        if o.name == "lt.loop":
            for name in lt.annotations(o):
                if name not in _ALLOWED_ANNOTATIONS:
                    bad.append((o, name))
        return ir.WalkResult.ADVANCE

    f.walk(visit)
    if bad:
        o, name = bad[0]
        where = format_location(o.location)
        hint = " (GPU-mapped loops compile for target cuda: lower-lt-to-gpu, lt-opt --emit=ptx)" if name == "gpu" else ""
        raise CompileError(
            f"{where + ': ' if where else ''}error: lower-lt-to-scf does not lower the "
            f"'lt.{name}' annotation{hint}"
        )


def hoist_allocs(f, entry: ir.Block, device: bool = False) -> None:
    """Move every lt.alloc in ``f`` to the start of ``entry`` as a memref
    alloca (small) or alloc (freed before every return).  ``device``: ``f``
    is a gpu.launch and every buffer is a per-thread alloca.  A buffer made
    inside a parallel loop (an ``lt-cache`` tile there) goes to the start of
    the outermost parallel loop's body instead: each iteration, run by
    whichever thread, has its own (a large one is allocated and freed in
    the body)."""
    allocs = []
    f.walk(lambda o: (allocs.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1])
    if not allocs:
        return
    returns = []
    f.walk(lambda o: (returns.append(o) if o.name == "func.return" else None, ir.WalkResult.ADVANCE)[1])
    # Insert before the first op that is not one of the allocs being erased.
    first = next(o.operation for o in entry.operations if not any(o.operation == a for a in allocs))
    for a in allocs:
        t = ir.MemRefType(a.results[0].type)
        nbytes = lt.nbytes(t.shape, t.element_type)
        parallel = [] if device else [loop for loop in lt.enclosing_loops(a) if "parallel" in lt.annotations(loop)]
        if parallel:
            body = lt.loop_body(parallel[-1])
            start = next(o.operation for o in body.operations if o.operation != a)
            with ir.InsertionPoint(start):
                if nbytes <= STACK_ALLOC_LIMIT:
                    buf = memref.AllocaOp(t, [], []).result
                else:
                    buf = memref.AllocOp(t, [], []).result
                    with ir.InsertionPoint(body):
                        memref.DeallocOp(buf)
        else:
            with ir.InsertionPoint(first):
                if nbytes <= STACK_ALLOC_LIMIT or device:
                    buf = memref.AllocaOp(t, [], []).result
                else:
                    buf = memref.AllocOp(t, [], []).result
                    for r in returns:
                        with ir.InsertionPoint(r):
                            memref.DeallocOp(buf)
        a.results[0].replace_all_uses_with(buf)
        a.erase()


def index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def iterations(loop, ctx: dict) -> tuple:
    """(dim, inner extent, offset of the enclosing level or None, full
    iterations, elements of the clipped one) of ``loop`` under ``ctx``."""
    dim, size, tail = lt.loop_dim(loop), lt.loop_size(loop), lt.loop_tail(loop)
    step = lt.inner_extent(loop)
    parent_offset, avail = ctx.get(dim, (None, None))
    if avail is None:
        return dim, step, parent_offset, size, tail
    full = min(size, avail // step)
    return dim, step, parent_offset, full, avail - full * step


def mark_atomic_reduces(loop, private=None) -> None:
    """Reductions in a parallel loop into locations other iterations share
    combine atomically (see dependence.reorder_conflicts for "private");
    ``private(reduce)`` True exempts one (its accumulator is per thread)."""
    for op in shared_reductions(loop):
        if private is None or not private(op):
            op.attributes["lt.atomic"] = ir.UnitAttr.get()


_PLAIN_LEVEL = frozenset(("dim", "size", "tail"))


def _plain_level(loop) -> bool:
    """A level with no annotation or mark of any lowering (parallel, unroll,
    vectorize, GPU mapping ...) whose iteration number nothing reads."""
    if any(name not in _PLAIN_LEVEL for name in loop.attributes):
        return False
    return not list(lt.loop_body(loop).arguments[0].uses)


def coalescible_chain(loop) -> list:
    """The levels ``loop`` heads that one flat loop may run: ``loop`` and
    the levels of its dim nested in it, each the only op of its parent's
    body, down to the dim's innermost level; plain levels only
    (``_plain_level``).  Such a chain walks its elements in ascending order
    with nothing between them, as one loop over its extent does (tails
    included: ``4 r 1`` over ``8`` is elements 0..32).  Returns [] when
    ``loop`` heads no chain of two or more levels."""
    dim = lt.loop_dim(loop)
    chain = [loop]
    while True:
        if not _plain_level(chain[-1]):
            return []
        ops = lt.body_ops(lt.loop_body(chain[-1]))
        if len(ops) == 1 and ops[0].name == "lt.loop" and lt.loop_dim(ops[0]) == dim:
            chain.append(ops[0])
            continue
        # The chain must end at the dim's innermost level (elements, not blocks).
        if len(chain) < 2 or lt.inner_extent(chain[-1]) != 1:
            return []
        return chain


def coalesce_levels(loop, ctx: dict):
    """Lower a split that nothing else came between as the loop it was: a
    chain of levels (``coalescible_chain``) becomes its innermost level,
    resized to the chain's extent under ``ctx`` and put in the chain's
    place; returns the level to lower (``loop`` itself when it heads no
    chain).

    A split alone changes no iteration order, and so should change no code.
    Lowered as nested ``scf.for`` loops it did: LLVM fully unrolls a short
    inner loop before it vectorizes, and then vectorizes the outer one
    across strided accesses (on AVX-512 CPUs, gathers and scatters of a
    matmul's C in every k step: 30x slower) or, with the inner loop a
    reduction's, keeps the accumulators in memory between the unrolled
    copies.  Run flat, the levels vectorize and promote as the unsplit loop
    does.  Annotated levels (unroll, vectorize, parallel, GPU) keep their
    structure: the annotation asked for it."""
    chain = coalescible_chain(loop)
    if not chain:
        return loop
    _, step, _, full, rest = iterations(loop, ctx)
    extent = full * step + rest
    inner = chain[-1]
    inner.move_before(loop)
    inner.attributes["size"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), extent)
    inner.attributes["tail"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
    loop.erase()
    return inner


class LtToScf:
    """Lowers the lt ops of a block, and of the regions nested in it, in
    place; ``ctx``: dim name -> (offset value or None, elements available
    or None)."""

    def lower_ops(self, ops: list, ctx: dict) -> None:
        """Lower ``ops`` (a snapshot of one block's ops) under ``ctx``."""
        for op in ops:
            op = op.operation
            name = op.name
            if name == "lt.loop":
                self.lower_loop(op, ctx)
            elif name == "lt.dim":
                self.lower_dim(op, ctx)
            elif name == "lt.reduce":
                self.lower_reduce(op, ctx)
            elif name == "scf.for" and VECTOR_ATTR in op.attributes:
                self.lower_vector_data_loop(op, ctx)
            elif name == "func.call" and is_mark(op):
                self.lower_profile_mark(op, ctx)
            elif op.regions:
                self.lower_nested(op, ctx)

    def lower_profile_mark(self, op, ctx: dict) -> None:
        """A mark of the GPU profile (``lowering/profile.py``) run on the
        CPU (``cuda-emulated``): the cycle counter, signed, into its slot."""
        lower_mark_cpu(op)

    def lower_vector_data_loop(self, op, ctx: dict) -> None:
        """An ``scf.for`` with bounds known at run time, marked
        ``lt.vectorize = W``: the whole groups of W iterations from its
        lower bound unmasked, then the rest (fewer than W) as the scalar
        loop; see analysis/vector_plan.py.  A reduction into one location
        sums in a vector across the groups, is reduced once after them, and
        the rest adds to it.

        Masking each group's lanes instead (a compare a group and, on AVX2,
        each lane of a gather under its own branch in the last one) took
        PageRank's SpMV 0.48 ms against 0.40 this way (2-core AMD EPYC,
        2026-11-27); no access leaves the loop's bounds either way."""
        problem = plan_data_loop(op)
        if problem is not None:
            raise _located(problem.op or op, f"cannot vectorize: {problem}")
        width = ir.IntegerAttr(op.attributes[VECTOR_ATTR]).value
        lo, hi = list(op.operands)[:2]
        with ir.InsertionPoint(op), op.location:
            count = arith.MaxSIOp(arith.SubIOp(hi, lo).result, index(0)).result  # an empty loop when hi < lo
            whole = arith.MulIOp(arith.DivUIOp(count, index(width)).result, index(width)).result
            split = arith.AddIOp(lo, whole).result
            groups = scf.ForOp(lo, split, index(width))
            with ir.InsertionPoint(groups.body):
                end = scf.YieldOp([])
        rest = op.clone(ip=ir.InsertionPoint(op))
        rest.operands[0] = split
        del rest.attributes[VECTOR_ATTR]
        first = groups.induction_variable
        body = list(op.regions[0].blocks)[0]
        body.arguments[0].replace_all_uses_with(first)
        moved = list(body.operations)[:-1]
        for o in moved:
            o.move_before(end)
        op.erase()
        self.lower_ops(vectorize.vectorize_ops(moved, "", width, None, first, first), ctx)
        self.lower_ops([rest], ctx)

    def lower_nested(self, op, ctx: dict) -> None:
        """An op of the program's own with regions (scf.if, ...)."""
        for region in op.regions:
            for block in region.blocks:
                self.lower_ops(list(block.operations), ctx)

    def lower_dim(self, op, ctx: dict) -> None:
        dim = ir.StringAttr(op.attributes["dim"]).value
        offset = ctx.get(dim, (None, None))[0]
        if offset is None:
            with ir.InsertionPoint(op):
                offset = index(0)
        op.results[0].replace_all_uses_with(offset)
        op.erase()

    def lower_loop(self, loop, ctx: dict) -> None:
        loop = coalesce_levels(loop, ctx)
        dim, step, parent_offset, full, rest = iterations(loop, ctx)
        notes = lt.annotations(loop)
        if notes.get("parallel"):
            mark_atomic_reduces(loop)
        emit = LoopEmitter(self, loop, ctx, parent_offset, step, notes)
        start = 0
        width = notes.get("vectorize", 0)
        if width:
            problem = plan(loop)
            if problem is not None:
                raise _located(problem.op or loop, f"cannot vectorize: {problem}")
            if full >= width:
                start = (full // width) * width
                emit.iterations(0, full // width, width)
        if full > start:
            emit.iterations(start, full, 1)
        if rest > 0:
            # One clipped iteration: the inner levels of `dim` cover `rest` elements.
            emit.body(emit.constant(full), {dim: rest}, loop)
        loop.erase()

    def lower_reduce(self, op, ctx: dict) -> None:
        kind = ir.StringAttr(op.attributes["kind"]).value
        value, acc, *indices = list(op.operands)
        with ir.InsertionPoint(op), op.location:
            if "lt.atomic" in op.attributes:
                atomic_update(kind, value, acc, indices)
            else:
                old = memref.LoadOp(acc, indices).result
                new = combine(kind, old, value)
                if IN_ORDER_ATTR in op.attributes:
                    new.owner.attributes[NO_CONTRACT_ATTR] = ir.UnitAttr.get()
                memref.StoreOp(new, acc, indices)
        op.erase()


class LoopEmitter:
    """Emits iterations of one lt.loop before it: scf loops (parallel or
    not, unrolled or not, vector or scalar) around inlined copies of its
    body, each lowered by ``lowering``."""

    def __init__(self, lowering: LtToScf, loop, ctx, parent_offset, step, notes):
        self.lowering = lowering
        self.loop, self.ctx, self.parent_offset, self.step = loop, ctx, parent_offset, step
        self.dim = lt.loop_dim(loop)
        self.unroll = notes.get("unroll")
        self.parallel = bool(notes.get("parallel"))
        self.schedule = notes.get("schedule")

    def constant(self, value: int):
        with ir.InsertionPoint(self.loop):
            return index(value)

    def iterations(self, first: int, last: int, width: int) -> None:
        """Iterations ``first..last`` (in units of ``width`` when vectorized:
        vector iteration j runs iterations j*width .. j*width + width - 1)."""
        lo, hi = (first // width, last) if width > 1 else (first, last)
        count = hi - lo
        factor = count if self.unroll == 0 else (self.unroll or 1)
        factor = max(1, min(factor, count))
        main = count // factor
        if factor == count and (self.unroll is not None):
            for j in range(lo, hi):  # fully unrolled: constant iteration numbers
                self.body(self.constant(j), {}, self.loop, width)
            return
        if main > 0:
            anchor, iv = self._loop(main)
            with ir.InsertionPoint(anchor):
                base = iv if factor == 1 else arith.MulIOp(iv, index(factor)).result
                if lo:
                    base = arith.AddIOp(base, index(lo)).result
            for u in range(factor):
                with ir.InsertionPoint(anchor):
                    j = base if u == 0 else arith.AddIOp(base, index(u)).result
                self.body(j, {}, anchor, width)
        for j in range(lo + main * factor, hi):  # what the unrolled loop leaves
            self.body(self.constant(j), {}, self.loop, width)

    def _loop(self, trip_count: int):
        """An scf.for (or scf.parallel) over 0..trip_count before the lt.loop;
        returns (the op to insert its body before, the induction variable)."""
        with ir.InsertionPoint(self.loop):
            lb, ub, one = index(0), index(trip_count), index(1)
            if self.parallel:
                par = scf.ParallelOp([], [lb], [ub], [one], [])
                if self.schedule:  # for the OpenMP conversion (lowering/llvm.py)
                    par.attributes[SCHEDULE_ATTR] = ir.StringAttr.get(self.schedule)
                block = par.region.blocks.append(ir.IndexType.get())
                with ir.InsertionPoint(block):
                    terminator = scf.ReduceOp([], 0)
                return terminator, block.arguments[0]
            loop_op = scf.ForOp(lb, ub, one)
            with ir.InsertionPoint(loop_op.body):
                terminator = scf.YieldOp([])
            return terminator, loop_op.induction_variable

    def body(self, j, clip: dict, before, width: int = 1) -> None:
        """Inline a copy of the body for (vector) iteration ``j`` before ``before``."""
        with ir.InsertionPoint(before):
            iteration = j if width == 1 else arith.MulIOp(j, index(width)).result
            offset = _scaled(iteration, self.step, self.parent_offset)
        copy = self.loop.clone(ip=ir.InsertionPoint(before))
        arg = lt.loop_body(copy).arguments[0]
        ops = _inline_body(copy, copy, iteration if width == 1 else None)
        if self.parallel and before == self.loop:
            # An iteration of a parallel loop run outside it (the tail):
            # its buffers (hoist_allocs put them in the body) go to the
            # function's entry, or every run of an enclosing loop would
            # take new stack.
            ops = _entry_allocas(ops, self.loop)
        if width > 1:
            ops = self._outer_dims(ops)
            ops = vectorize.vectorize_ops(ops, self.dim, width, offset, iteration, arg)
            arg.replace_all_uses_with(iteration)
        copy.erase()
        avail = clip.get(self.dim, self.step)
        self.lowering.lower_ops(ops, {**self.ctx, self.dim: (offset, avail)})

    def _outer_dims(self, ops: list) -> list:
        """Lower the ``lt.dim`` ops of ``ops`` (a vector body) over the dims
        around it now rather than after vectorizing (``lower_dim``: the same
        value in every lane), so that the vectorizer sees index arithmetic
        on values from outside (a row's place ``i - i0`` then shows itself
        the same in every block of the row, and its sum is carried across
        them); the rest."""
        rest = []
        for op in ops:
            if op.name == "lt.dim" and ir.StringAttr(op.attributes["dim"]).value in self.ctx.keys() - {self.dim}:
                self.lowering.lower_dim(op, self.ctx)
            else:
                rest.append(op)
        return rest


def _entry_allocas(ops: list, anchor) -> list:
    """Move the ``memref.alloca`` ops of ``ops`` to the start of the entry
    block of the function around ``anchor``; the others, returned."""
    f = anchor
    while f.name != "func.func":
        f = f.parent
    first = f.regions[0].blocks[0].operations[0]
    rest = []
    for op in ops:
        if op.name == "memref.alloca" and not list(op.operands):
            op.move_before(first)
        else:
            rest.append(op)
    return rest


def _located(op, message: str) -> CompileError:
    where = format_location(op.location)
    return CompileError(f"{where + ': ' if where else ''}error: lower-lt-to-scf: {message}")


def _scaled(iv: ir.Value, step: int, base: ir.Value | None) -> ir.Value:
    v = iv if step == 1 else arith.MulIOp(iv, index(step)).result
    return v if base is None else arith.AddIOp(base, v).result


def _inline_body(loop, before, iv) -> list:
    """Move ``loop``'s body before ``before``, its block argument replaced by
    ``iv`` (None: leave the argument's uses for the caller)."""
    body = lt.loop_body(loop)
    if iv is not None:
        body.arguments[0].replace_all_uses_with(iv)
    moved = [o.operation for o in body.operations]
    for o in moved:
        o.move_before(before)
    return moved
