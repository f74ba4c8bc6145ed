"""The kernel frontend's schedules, built from the registered lt passes.

The unfused module (``lower.py``: one nest per NumPy operation, every value
in a buffer) goes through one of three strategies:

* ``"none"``: as NumPy runs it (the ablation's floor);
* ``"maximal"`` (TACO's strategy, the ablation ReACT compares with): every
  temporary is fused into the statements that read it, recomputed where a
  read sits in loops its indices do not use (``lt-fuse{recompute=true}``),
  and a factor its sum's result is multiplied by goes into each term
  (``lt-sink-factor``, where the fastmath mode allows: SDDMM's sampled
  value inside the dot product, as TACO's one loop nest for the whole
  expression computes it -- type 1 redundancy);
* ``"redundancy-aware"`` (the default, ReACT's): temporaries are fused
  only where that computes each element once (``lt-fuse``: type 3
  load-store and type 4 dead-value redundancy removed, type 2 never
  introduced); factors invariant in a reduction are taken out of it where
  the fastmath mode allows reassociation (``lt-factor``, type 1); the
  remaining nests that iterate the same rows are merged (``lt-merge``; an
  element-wise op on a CSR's values that reads its rows' values is a row
  nest then, ``lower.row_chains``: sparse softmax one row loop) and
  their temporaries shrunk to the rows live at once
  (``lt-shrink-buffers``): the partial fusion of SpMM-MM; a dense row nest
  whose loops over a row reduce (a row's dot product, a row added into a
  vector: Sinkhorn's rotated iteration) over at least ``ROW_BLOCKS`` blocks
  of two vectors runs ``ROWS`` rows side by side
  (``recipes.row_tile``): K's rows read once for the ``ROWS`` rows' blocks
  of ``v``, and ``ROWS`` times the independent sums.

Then, for every strategy, the outermost loops run in parallel where the
dependence test of ``lt-parallel`` allows it (the row loops of CSR nests,
whose stored positions are disjoint row by row once ``indptr`` is
validated, without it), and innermost loops are vectorized where
``lt-vectorize`` accepts them.
"""

from __future__ import annotations

from ..analysis import dependence
from ..analysis.prefetch import gathered_rows
from ..analysis.work import partial_tiles, reduction_groups
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import PassError
from ..mlir import ir
from ..recipes import row_tile
from ..schedule import Schedule
from .lower import row_chains

STRATEGIES = ("redundancy-aware", "maximal", "none")


def top_loops(s: Schedule) -> list[int]:
    """Pre-order indices of the function's outermost loops."""
    return [k for k, loop in enumerate(preorder_loops(s.parsed)) if not lt.enclosing_loops(loop)]


def applies(s: Schedule, step: str) -> bool:
    """Apply pipeline element ``step`` if it takes; whether it did."""
    try:
        s.apply(step, explain=False)
        return True
    except PassError:
        return False


def fuse(s: Schedule, owners: list, keep: set, recompute: bool) -> set:
    """Fuse the nests of ``owners`` (the node of each outermost loop, in
    order) into their readers, except nodes in ``keep``; returns the ids of
    the nodes fused.  ``owners`` is updated."""
    fused: set = set()
    progress = True
    while progress:
        progress = False
        tops = top_loops(s)
        for k in range(len(tops) - 1, -1, -1):
            node = owners[k]
            if id(node) in keep or id(node) in fused:
                continue
            first = next(j for j, o in enumerate(owners) if o is node)
            if first != k:
                continue  # a node with several outer nests (an init, then the sum) fuses as a whole or not at all
            step = f"lt-fuse{{loop={tops[k]}{' recompute=true' if recompute else ''}}}"
            if applies(s, step):
                fused.add(id(node))
                owners[:] = [o for o in owners if o is not node]
                progress = True
                break
    return fused


def row_nests(text: str, owners: list, keep: set, todo: list) -> tuple:
    """``lower.row_chains`` of the nodes that ``lt-fuse`` (redundancy-aware,
    tried on ``text``: the unfused module, whose outermost loops belong to
    ``owners``) leaves nests of their own: what ``Lowering(by_rows=...)``
    writes as row nests for ``merge_rows``."""
    return row_chains(todo, fuse(Schedule(text), list(owners), keep, recompute=False))


def merge_rows(s: Schedule) -> None:
    """Merge each outermost loop into the one before it where legal; then
    into an earlier one over another dim of the same extent
    (``lt-merge{rename=true}``: ``X @ w`` then ``X.T @ r`` read X once);
    then the loops that only store constants (a sum's zeros), which the
    first round leaves alone: merged into the row loop, the zeros of
    ``X.T @ r``'s sum would keep the rename from taking that nest in
    (they may move above it, not into it -- Sinkhorn's rotated iteration)."""
    for rename, inits in (("", False), (" rename=true", True), ("", True)):
        progress = True
        while progress:
            progress = False
            tops = top_loops(s)
            loops = preorder_loops(s.parsed)
            for k in range(len(tops) - 1, 0, -1):
                if not inits and _only_stores_constants(loops[tops[k]]):
                    continue
                if applies(s, f"lt-merge{{loop={tops[k]}{rename}}}"):
                    progress = True
                    break


def _only_stores_constants(loop) -> bool:
    """Whether ``loop``'s body does nothing but store constants (an
    initialisation nest)."""
    ok = [True]

    def visit(op):
        if op == loop or op.name in ("lt.loop", "lt.dim", "arith.constant") or dependence.is_pure_index_op(op):
            return ir.WalkResult.ADVANCE
        if op.name == "memref.store" and getattr(op.operands[0].owner, "name", "") == "arith.constant":
            return ir.WalkResult.ADVANCE
        ok[0] = False
        return ir.WalkResult.INTERRUPT

    loop.walk(visit)
    return ok[0]


def factor(s: Schedule) -> None:
    """``lt-factor`` on every loop that takes it."""
    progress = True
    while progress:
        progress = False
        for k in range(s.loops()):
            if applies(s, f"lt-factor{{loop={k}}}"):
                progress = True
                break


def sink_factors(s: Schedule) -> None:
    """``lt-sink-factor`` on every loop that takes it: a product of a sum's
    result multiplied into each of its terms (TACO's maximal fusion: SDDMM's
    sampled value inside the dot product, type-1 redundancy)."""
    for k in range(s.loops()):  # (renumbers nothing)
        applies(s, f"lt-sink-factor{{loop={k}}}")


def parallelize(s: Schedule, sparse_rows: bool) -> None:
    """Each outermost loop in parallel when every iteration writes only its
    own rows (``_rows_private``: no reduction combined across threads):
    checked by ``lt-parallel``, or, where that cannot see it (CSR
    positions from ``indptr``), assumed."""
    for k in top_loops(s):
        if _rows_private(s, k):
            if not applies(s, f"lt-parallel{{loop={k}}}") and sparse_rows:
                s.assume_parallel(k, schedule="guided")
        elif _rows_private(s, k, shared_reductions=True):
            # iterations that only reduce into shared elements (X.T @ r):
            # lt-parallel gives each thread a private tile, combined once --
            # but where no tile can hold them (an index from the data: dense
            # @ CSR's scatter), every update would be atomic: left serial
            loop = preorder_loops(s.parsed)[k]
            if partial_tiles(loop, reduction_groups(loop)) is not None:
                applies(s, f"lt-parallel{{loop={k}}}")


def tile_rows(s: Schedule, width: int) -> None:
    """Register tiles across the rows of a merged row nest whose last stage
    is a dense contraction of a row's values (SpMM-MM's ``T[i, :] @ C``):
    ``for i { ...; for k { for j { out[i, j] += T[i, k] * C[k, j] } } }``
    becomes ``for i in n/R { for i' in R { ... }; for k { for i' in R
    [unroll] { for j ... } } }`` (``lt-split``, ``lt-distribute``,
    ``lt-swap``, ``lt-unroll``): each row of C loaded once feeds R rows, and
    R times as many independent accumulators hide the FMA latency that one
    row's ``j`` vectors leave exposed.  R keeps the accumulators (R rows of
    ``j / width`` vectors) to half the vector registers (32 with 64-byte
    vectors, else 16) and at most 4.  Where a row's j leaves no room for 2
    rows (AVX2's 8-lane j of 64: 8 vectors), 6 rows take j in column tiles
    of as many vectors as fit with 4 registers left (2 of 8 lanes: the
    6 x 2 tile of AVX2 GEMM kernels), their loop outside k, as
    ``recipes.register_tile`` tiles a GEMM: a row of C was loaded for each
    FMA, now once for 6 rows (SpMM-MM 4096² 1% H=J=64 on a 2-core AMD EPYC:
    1.13-1.35 ms against 1.52-1.60 with 4 rows, one process; 6 rows
    1.00-1.08 ms against 4 rows' 1.07-1.24, block medians of 7 rounds,
    three times).  The steps are tried on a copy: a pass that refuses
    leaves the schedule as it was."""
    for top in reversed(top_loops(s)):  # from the last: tiling a loop shifts the numbers of those after it
        steps = _row_tile_steps(s, top, width)
        if steps:
            for step in steps:
                s.apply(step, explain=False)


def _row_tile_steps(s: Schedule, top: int, width: int) -> list:
    """The pipeline steps that row-tile outermost loop ``top`` (checked on
    a copy of ``s``), or []."""
    loops = preorder_loops(s.parsed)
    stage = _dense_stage(loops[top])
    if stage is None:
        return []
    j, element_bytes = stage
    vectors = -(-lt.inner_loop_extent(j) // width)
    registers = 32 if width * element_bytes >= 64 else 16
    rows = min(4, (registers // 2) // vectors)
    block = 0  # j's vectors a column tile, when a row's j does not leave room for 2 rows
    if rows < 2:
        # the classic AVX2 GEMM micro-kernel's 6 x 2: 12 accumulators, the rest for C's vectors and the broadcast
        rows = 6
        block = max(d for d in range(1, vectors + 1) if vectors % d == 0 and rows * d <= registers - 4)
    if lt.inner_loop_extent(loops[top]) < 2 * rows:
        return []
    trial = s.copy()
    steps = [f"lt-split{{loop={top} factor={rows}}}", f"lt-distribute{{loop={top + 1}}}"]
    if not all(applies(trial, step) for step in steps):
        return []
    loops = preorder_loops(trial.parsed)
    outer = loops[top]
    for index in range(top + 1, len(loops)):
        part = loops[index]
        if part.parent != outer or lt.loop_dim(part) != lt.loop_dim(outer) or _dense_stage(part, whole=True) is None:
            continue
        tail = [f"lt-swap{{loop={index}}}", f"lt-unroll{{loop={index + 1} factor=0}}"]
        if block:
            # k, i', j -> j / tile, k, i', j' (as recipes.register_tile's column tiles): the
            # accumulators of rows x block vectors stay in registers across k, each
            # row of C's tile loaded once for the rows
            tail = [f"lt-swap{{loop={index}}}", f"lt-split{{loop={index + 2} factor={block * width}}}",
                    f"lt-swap{{loop={index + 1}}}", f"lt-swap{{loop={index}}}",
                    f"lt-vectorize{{loop={index + 3} width={width}}}", f"lt-unroll{{loop={index + 3} factor=0}}",
                    f"lt-unroll{{loop={index + 2} factor=0}}"]
        return steps + tail if all(applies(trial, step) for step in tail) else []
    return []


def _dense_stage(loop, whole: bool = False):
    """(j loop, accumulator element bytes) when ``loop``'s last statement
    is ``for k { for j { acc[i, ..., j] += ... } }`` (k and j other dims
    than ``loop``'s, j the only statement of k's body and innermost, the
    accumulator indexed first by ``loop``'s dim and last by j's); with
    ``whole``, the k loop must be ``loop``'s only loop."""
    dim = lt.loop_dim(loop)
    ops = [o for o in lt.body_ops(lt.loop_body(loop)) if not dependence.is_pure_index_op(o)]
    loops = [o for o in ops if lt.is_loop(o)]
    if not loops or ops[-1] != loops[-1] or (whole and len(ops) != 1):
        return None
    k = loops[-1]
    k_ops = [o for o in lt.body_ops(lt.loop_body(k)) if not dependence.is_pure_index_op(o)]
    if lt.loop_dim(k) == dim or len(k_ops) != 1 or not lt.is_loop(k_ops[0]):
        return None
    j = k_ops[0]
    if lt.loop_dim(j) in (dim, lt.loop_dim(k)) or _has_inner_loop(j):
        return None
    reduces = [o for o in lt.body_ops(lt.loop_body(j)) if o.name == "lt.reduce"]
    if len(reduces) != 1:
        return None
    _value, acc, *indices = list(reduces[0].operands)
    if len(indices) < 2 or _dim_of(indices[0]) != dim or _dim_of(indices[-1]) != lt.loop_dim(j):
        return None
    element = ir.MemRefType(acc.type).element_type
    return j, 8 if isinstance(element, ir.F64Type) else 4


def vectorize(s: Schedule, width: int) -> None:
    """``lt-vectorize`` on every innermost loop that takes it, and every
    innermost loop of bounds known at run time (a CSR row's stored
    positions: PageRank's gathering dot product) marked to run in masked
    groups of ``width`` where its body allows (``lt-vectorize-data``)."""
    for k in innermost_loops(s, unvectorized=True):  # (row_tile's blocks are vectorized already)
        applies(s, f"lt-vectorize{{loop={k} width={width}}}")
    for k in range(s.data_loops()):
        applies(s, f"lt-vectorize-data{{loop={k} width={width}}}")
    for k in _dot_loops(s):
        applies(s, f"lt-unroll{{loop={k} factor={DOT_COPIES}}}")


DOT_COPIES = 8  # vector accumulators of a vectorized dot product (unrolled copies)


def _dot_loops(s: Schedule) -> list:
    """The L-number of each vectorized innermost loop that sums into one
    location (a dot product: ``lt.reduce`` at indices that do not vary with
    it) over at least two groups of ``DOT_COPIES`` vectors.  Unrolled, each
    copy accumulates in a vector of its own (``lowering/vectorize.py``):
    ``DOT_COPIES`` chains of additions instead of one, which a row's dot
    product waits on when other work sits between the rows (Sinkhorn's
    rotated iteration: 1.63 -> 1.13 ms a pass over its 2048 x 2048 K)."""
    out = []
    for k, loop in enumerate(preorder_loops(s.parsed)):
        notes = lt.annotations(loop)
        width = notes.get("vectorize")
        if not width or "unroll" in notes or _has_inner_loop(loop):
            continue
        if lt.loop_size(loop) // width < 2 * DOT_COPIES:
            continue
        dim = lt.loop_dim(loop)
        reduces = [o for o in lt.body_ops(lt.loop_body(loop)) if o.name == "lt.reduce"]
        if reduces and all(all(_dim_of(v) != dim for v in list(o.operands)[2:]) for o in reduces):
            out.append(k)
    return out


def innermost_loops(s: Schedule, unvectorized: bool = False) -> list[int]:
    """Pre-order indices of the loops with no loop inside (``unvectorized``:
    and no vectorize annotation)."""
    return [k for k, loop in enumerate(preorder_loops(s.parsed))
            if not _has_inner_loop(loop) and not (unvectorized and "vectorize" in lt.annotations(loop))]


def rows_private(s: Schedule, k: int) -> bool:
    """Whether every write of outermost loop ``k`` goes to its own rows (what ``parallelize`` asks first)."""
    return _rows_private(s, k)


def _has_inner_loop(loop) -> bool:
    found = []

    def visit(op):
        if op.name == "lt.loop" and op != loop:
            found.append(op)
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    return bool(found)


def _dim_of(value) -> str | None:
    """The dim of an ``lt.dim`` result, else None."""
    op = value.owner
    if isinstance(op, ir.Block) or op.name != "lt.dim":
        return None
    return ir.StringAttr(op.attributes["dim"]).value


def _rows_private(s: Schedule, k: int, shared_reductions: bool = False) -> bool:
    """Whether every write in outermost loop ``k`` goes to a location only
    its own row writes: a scratch buffer allocated inside it, an element
    whose first index is the loop's dim, or (CSR values) a position that is
    the induction variable of an ``scf.for`` inside it (the lowering writes
    those loops over ``indptr[i]..indptr[i+1]`` only)."""
    loop = preorder_loops(s.parsed)[k]
    dim = lt.loop_dim(loop)
    positions: list = []
    local: list = []
    written: list = []
    accesses: list = []  # (buffer, first index) of every load, store and reduce

    def visit(op):
        if op.name == "scf.for":
            positions.append(op.regions[0].blocks[0].arguments[0])
        elif op.name == "lt.alloc":
            local.append(op.results[0])
        elif op.name in ("memref.store", "lt.reduce", "memref.load"):
            at = 0 if op.name == "memref.load" else 1
            buf, idx = op.operands[at], list(op.operands)[at + 1:]
            if op.name == "lt.reduce" and shared_reductions:
                return ir.WalkResult.ADVANCE  # lt-parallel's private tiles (it checks the rest)
            if op.name != "memref.load":
                written.append(buf)
            accesses.append((buf, idx[0] if idx else None))
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    groups: list = []  # (buffer, first indices of its accesses)
    for buf, first in accesses:
        if any(buf == v for v in local) or not any(buf == w for w in written):
            continue
        if first is None:
            return False
        if any(first == p for p in positions):
            continue
        group = next((g for b, g in groups if b == buf), None)
        if group is None:
            groups.append((buf, group := []))
        group.append(first)
    # the first index the loop's dim, or the dim plus an offset fixed in the loop (``0 * 256 + i``
    # of a reshaped output), one and the same in every access of the buffer
    return all(dependence.same_shift(firsts, dim, loop) for _, firsts in groups)


ROWS = 4  # rows side by side in a dense row nest (recipes.row_tile)
# ... when its row reduction runs at least this many blocks of two vectors: Sinkhorn's
# 2048-long f64 rows (256 blocks) ran 1.2-1.37x faster, logistic regression's 256-long
# f32 rows (16 blocks) no faster or slower (2-core AMD EPYC, one process each)
ROW_BLOCKS = 64


def schedule(text: str, owners: list, keep: set, strategy: str, *, parallel: bool, width: int, sparse: bool) -> tuple:
    """(Schedule, ids of the nodes fused) for ``strategy``."""
    s = Schedule(text)
    fused: set = set()
    if strategy == "maximal":
        fused = fuse(s, owners, keep, recompute=True)
        sink_factors(s)
    elif strategy == "redundancy-aware":
        fused = fuse(s, owners, keep, recompute=False)
        factor(s)
        merge_rows(s)
        if width > 1:
            tile_rows(s, width)
            try:
                row_tile(s, rows=ROWS, width=2 * width, min_blocks=ROW_BLOCKS)
            except PassError:
                pass  # no dense row nest
    if parallel:
        parallelize(s, sparse)
    if strategy == "redundancy-aware":
        applies(s, "lt-shrink-buffers")  # after lt-parallel: a parallel loop's scratch is one tile per thread
    if width > 1:
        vectorize(s, width)
    prefetch_gathers(s)
    return s, fused


PREFETCH_DISTANCE = 16  # stored positions ahead


def prefetch_gathers(s: Schedule) -> None:
    """``lt-prefetch-data`` on every scalar loop of bounds known at run time
    that reads rows through the indices it loads: a CSR row's loop in SpMM
    (``A @ B``: B's row for each stored value, 256 bytes at 64 float32
    columns) asks for the row ``PREFETCH_DISTANCE`` positions ahead, which
    the out-of-order core cannot see coming that far (the loop's body is
    dozens of instructions a position): SpMM-MM 4096^2 1% x 64 columns,
    its kernel 1.03-1.08 ms without, 0.87-0.94 at 16 (0.89-0.93 at 8,
    0.95-1.01 at 32; 2-core AMD EPYC, one process).  The vectorized loops
    (a gathered element a lane: SpMV) take none."""
    for k in range(s.data_loops()):
        applies(s, f"lt-prefetch-data{{loop={k} distance={PREFETCH_DISTANCE}}}")
    module = s.parsed  # held while its loops are read
    gathering = [k for k, loop in enumerate(preorder_loops(module)) if "vectorize" not in lt.annotations(loop) and gathered_rows(loop)]
    for k in gathering:
        applies(s, f"lt-prefetch{{loop={k} distance={PREFETCH_DISTANCE}}}")
