"""Documented schedules: the moves that make a common loop nest fast on this
CPU (and, ``gpu_tiled_matmul``, on an NVIDIA GPU), as ``Schedule`` methods
(what a person would do in ``lt-ui``).

``register_tile`` takes loop_tool's default schedule of a contraction —

    for m : L0
     for n : L1          C[m, n] <- init
    for k : L2           (under m)
     for n : L3          C[m, n] += f(A[m, k], B[k, n])

(matmul, the blog's clipped matmul, any ``(a * b).sum(k)`` over ``m, k`` and
``k, n``) — and keeps a tile of ``rows x vectors*W`` of C in vector
registers while k runs, W being this CPU's vector width in elements (8
floats with AVX2, 16 with AVX-512):

    for m in M/rows : L0
     for m' in rows : L1
      for n in N : L2            C <- init
     for n in N/(vectors*W) : L3 (when N is wider than one tile)
      for k in K : L4
       for m' in rows : L5     [unroll full]
        for n' in vectors*W : L6 [unroll full, vectorize W]

Each k step loads ``vectors`` rows of B once and broadcasts ``rows``
elements of A; the ``rows * vectors`` accumulators and those loads must fit
the register file (16 vector registers with AVX2: 3 x 3 leaves room for
B, the broadcast and a temporary; 32 with AVX-512: 4 x 3).
``parallel=True`` runs the tile rows on every core (OpenMP over L0).

Another loop order, or a contraction inside a larger program (programs.matmul's
``m { n { C <- 0; k { C += .. } } }``; covariance's product of the centred
matrix with itself after the nests that compute it), is first brought to
``for i { for k { for j } }``: the loops around the largest reduction into
two dims are distributed until each holds only the next, then interchanged
(``_contraction``); the tile moves are the same from there.

``pack=True`` (the default; when N is wider than one tile) also packs B: C's
initialisation gets a nest of its own, the panels of B (K x vectors*W)
become the outermost loop, and ``lt-cache`` copies each panel into a
contiguous local buffer, which the rows of A then stream past (B's rows are
N floats apart; a panel read in place touches a new page every row and
fights over the same L1 sets):

    for m in M/rows : L0 { for m' in rows : L1 { for n in N : L2  C <- init } }
    for n in N/(vectors*W) : L3          (parallel: one panel a thread)
     %0 <- alloc f32[k, n]              the panel of B
     for k : L4 { for n' : L5  %0[k, n'] <- B[k, n] }
     for m in M/rows : L6
      for k in K : L7
       for m' in rows : L8 [unroll full]
        for n' in vectors*W : L9 [unroll full, vectorize W]
"""

from __future__ import annotations

import math

from .analysis import vector_plan
from .analysis.dependence import accesses, is_pure_index_op, reads_dim
from .dialect import lt
from .dialect.loop_tree import preorder_loops
from .errors import LtError, PassError
from .lowering.machine import host_vector_width
from .mlir import ir
from .schedule import Schedule


def default_rows(width: int) -> int:
    """Rows of the register tile for vectors of ``width`` lanes: 3 with
    16 registers (AVX2, ``width <= 8``), 4 with 32 (AVX-512)."""
    return 3 if width <= 8 else 4


def vector_registers(width: int) -> int:
    """Vector registers of an x86 CPU whose float vectors hold ``width``
    lanes: 16 up to AVX2, 32 with AVX-512."""
    return 16 if width <= 8 else 32


def register_tile_shapes(width: int) -> list[tuple[int, int]]:
    """Register tiles (``rows``, ``vectors``) beside the default ``(default_rows(width), 3)``
    that fill the register file: ``rows * vectors`` accumulators,
    ``vectors`` loads of B and one broadcast of A a k step.  With 16
    registers 4 x 3 and 6 x 2 (12 accumulators, 16 and 15 registers); with
    32, 6 x 4 and 8 x 3 (24; 29 and 28).  Which wins depends on the
    problem's shape and the core; a search tries them all."""
    return [(4, 3), (6, 2)] if vector_registers(width) == 16 else [(6, 4), (8, 3)]


def register_tile(
    schedule: Schedule,
    rows: int | None = None,
    vectors: int = 3,
    width: int | None = None,
    parallel: bool = False,
    pack: bool = True,
    symmetric: bool = True,
    k_block: int | None = None,
) -> Schedule:
    """Apply the register-tile moves (module docstring) to ``schedule``,
    which must hold loop_tool's default schedule of a contraction, or any
    other nest with a contraction in it (``_contraction``); returns it.
    ``width``: lanes a vector (default: this CPU's for the element type);
    ``rows`` (default ``default_rows(width)``) and ``vectors``: the tile of
    C, ``rows x vectors*width`` elements; ``pack``: copy panels of B (module
    docstring; ignored when one tile spans N, or when B is not an argument
    of the function, which ``lt-cache`` copies); ``symmetric``: when
    ``lt-symmetric`` accepts the nest (C shown symmetric: ``d^T d``), compute
    only the tiles that reach the diagonal and mirror them (never with B's
    panels packed, whose copies the nest writes);
    ``k_block``: the reduction in blocks of that many iterations (when it
    is longer), their loop outside the tiles, so that the rows of A and B
    a block reads stay in cache while every tile uses them (instead of
    ``pack``; the row tiles are then the parallel loop, one fork a block).
    ``symmetric`` and ``k_block`` apply to a contraction brought to
    ``i, k, j`` (``_contraction``), not to loop_tool's default matmul
    order, which is tiled as the module docstring shows.  Refuses (``PassError``)
    another loop structure, or a tile wider than the problem."""
    module = schedule.module  # a fresh parse: kept alive while its loops are read
    loops = preorder_loops(module)
    dims = [lt.loop_dim(loop) for loop in loops]
    width = width or host_vector_width(lt.element_bytes(module.operation))
    rows = rows or default_rows(width)
    if rows < 1 or vectors < 1 or width < 1:
        raise PassError("error: register_tile needs rows, vectors and width of at least 1")
    if len(dims) == 4 and dims[1] == dims[3] and len({dims[0], dims[1], dims[2]}) == 3:
        m, n = lt.loop_size(loops[0]), lt.loop_size(loops[1])
        _fits(rows, width, m, n)
        del module, loops
        tile = min(vectors * width, n - n % width)
        schedule.split(0, rows).distribute(1).swap(3)
        _tile_columns(schedule, 3, tile, n, width)
        if pack and tile < n:
            schedule.distribute(0).swap(3).cache(3, 1)
        if parallel:
            schedule.parallel(3 if pack and tile < n else 0)
        return schedule
    del module, loops
    first, m, n, b_arg, batched = _contraction(schedule)
    _fits(rows, width, m, n)
    tile = min(vectors * width, n - n % width)
    schedule.split(first, rows).swap(first + 1)  # i/rows, k, i', j
    _tile_columns(schedule, first + 1, tile, n, width)
    rows_at = first  # the loop over row tiles (the panels' loop once B is packed)
    if k_block and not batched:
        if _k_blocks(schedule, first + (2 if tile < n else 1), first, k_block):
            rows_at = first + 1
    elif pack and tile < n and b_arg is not None and _packs(schedule, first, b_arg):
        schedule.swap(first).cache(first, b_arg)
    if parallel:
        if batched:
            _parallel_outermost(schedule, first)
        else:
            _parallel_with_work(schedule, rows_at)
    if symmetric and tile < n and not batched:
        _symmetric(schedule, rows_at + 1)
    return schedule


def _packs(schedule: Schedule, first: int, b_arg: int) -> bool:
    """Whether ``lt-cache`` takes B's panels (it refuses a B that is read
    at other indices too: ``A^T A``, A both operands)."""
    try:
        schedule.copy().swap(first).cache(first, b_arg)
    except LtError:
        return False
    return True


def _k_blocks(schedule: Schedule, k: int, first: int, block: int) -> bool:
    """The reduction loop ``k`` in blocks of ``block`` iterations, the
    loop over the blocks moved out to ``first`` (around the tiles); False
    (nothing done) when the reduction is no longer than a block."""
    module = schedule.module
    size = lt.loop_size(preorder_loops(module)[k])
    del module
    if size <= block:
        return False
    schedule.split(k, block)
    for at in range(k - 1, first - 1, -1):
        schedule.swap(at)
    return True


def _symmetric(schedule: Schedule, loop: int) -> None:
    """``lt-symmetric`` on the inner of the two tile loops when C is
    symmetric (``A^T A``: covariance); nothing when it is refused."""
    try:
        schedule.symmetric(loop)
    except LtError:
        pass


def _parallel_with_work(schedule: Schedule, loop: int) -> None:
    """Make ``loop`` parallel -- or, when it runs once (a tile as wide as
    the output: 4 channels in tiles of 4), the one loop in its body if that
    loop is over a dim of the output (no two iterations share an element),
    so that the cores have iterations to share."""
    module = schedule.module
    loops = preorder_loops(module)
    outer = loops[loop]
    inner = None
    if lt.loop_size(outer) == 1 and lt.loop_tail(outer) == 0:
        kids = [op for op in lt.body_ops(lt.loop_body(outer)) if lt.is_loop(op)]
        out = set().union(*[_output_dims_of(r) for r in _reductions(outer)])
        if len(kids) == 1 and lt.loop_dim(kids[0]) in out and lt.loop_size(kids[0]) > 1:
            inner = loops.index(kids[0])
    del module, loops, outer
    if inner is not None:
        try:
            schedule.parallel(inner)
            return
        except LtError:
            pass
    schedule.parallel(loop)


def _parallel_outermost(schedule: Schedule, loop: int) -> None:
    """Make the outermost loop around ``loop`` parallel (a batched
    contraction's batch loop: one fork for all its tiles), or ``loop``
    itself when that loop is refused or runs once."""
    module = schedule.module
    loops = preorder_loops(module)
    outer = lt.enclosing_loops(loops[loop])
    at = loops.index(outer[-1]) if outer and lt.loop_size(outer[-1]) > 1 else loop
    del module, loops, outer
    if at != loop:
        try:
            schedule.parallel(at)
            return
        except PassError:
            pass
    schedule.parallel(loop)


class TileTooLarge(PassError):
    """``register_tile`` refused only because its tile is larger than C (a
    smaller tile may apply)."""


def _fits(rows: int, width: int, m: int, n: int) -> None:
    if rows > m or width > n:
        raise TileTooLarge(f"error: a {rows} x {width} tile does not fit C of {m} x {n}")


def _tile_columns(schedule: Schedule, k: int, tile: int, n: int, width: int) -> None:
    """The register tile of a nest ``k { i' { j } }`` whose k loop is at
    ``k`` (under the loop over row tiles): j split by ``tile`` with the
    column tiles outside k (when N is wider than one tile), the tile's
    columns vectorized by ``width`` and unrolled, its rows unrolled."""
    if tile < n:
        schedule.split(k + 2, tile).swap(k + 1).swap(k)  # j/tile, k, i', j'
        schedule.vectorize(k + 3, width).unroll(k + 3).unroll(k + 2)
    else:
        schedule.vectorize(k + 2, width).unroll(k + 2).unroll(k + 1)


def _reductions(module) -> list:
    found = []

    def visit(op):
        if op.name == "lt.reduce":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _plain_dims(values, who: str) -> list[str]:
    """The dims of indices that are plain ``lt.dim`` values, or a refusal."""
    out = []
    for index in values:
        owner = index.owner
        if getattr(owner, "name", None) != "lt.dim":
            raise PassError(f"error: {who} wants the output indexed by plain dims")
        out.append(ir.StringAttr(owner.attributes["dim"]).value)
    return out


def _imperfect(band: list, statements: bool = True):
    """The outermost loop of ``band`` (outermost first) that holds more
    than the next loop of the band (another loop, or with ``statements`` a
    store or a reduction beside it), or None."""
    kinds = ("memref.store", "lt.reduce") if statements else ()
    for outer, inner in zip(band, band[1:]):
        ops = lt.body_ops(lt.loop_body(outer))
        if inner.parent != outer or any(o != inner and (lt.is_loop(o) or o.name in kinds) for o in ops):
            return outer
    return None


def _contraction(schedule: Schedule) -> tuple[int, int, int, int | None, bool]:
    """Make the module's largest contraction ``C[i, j] += f(A[.., i, ..],
    B[.., j])`` a perfect nest ``for i { for k { for j } }`` (an ``lt.reduce``
    under three loops over distinct dims, two of them C's; its loops distributed
    until each holds only the next, then interchanged) and return the
    position of its i loop, the extents of i and j, the argument number
    of B (the operand read at j but not at i) when it is a function
    argument, and whether it is batched (loops over C's batch dims around
    it).  Refuses (``PassError``) a module without such a nest, or one
    whose loops cannot be distributed or interchanged."""
    module = schedule.module
    reduce, band, dims, (i, j) = _largest_contraction(module)
    around = lt.enclosing_loops(band[0])
    batched = bool(around) and lt.loop_dim(around[-1]) in _output_dims_of(reduce)
    del around
    for _ in range(2):  # a band of three loops needs at most two distributions
        outer = _imperfect(band)
        if outer is None:
            break
        at = preorder_loops(module).index(outer)
        del module, reduce, band, outer
        schedule.distribute(at)
        module = schedule.module
        reduce, band, dims, (i, j) = _largest_contraction(module)
    if _imperfect(band) is not None:
        raise PassError("error: register_tile could not make the contraction's loops a perfect nest")
    first = preorder_loops(module).index(band[0])
    (k,) = [d for d in dims if d not in (i, j)]
    m, n = lt.loop_size(band[dims.index(i)]), lt.loop_size(band[dims.index(j)])
    b_arg = _b_argument(band, i, j)
    del module, reduce, band
    _reorder(schedule, dims, [i, k, j], lambda module: _largest_contraction(module)[1])
    return first, m, n, b_arg, batched


def _largest_contraction(module) -> tuple:
    """The ``lt.reduce`` into two dims under one loop over each of them and
    one more (the most iterations, when there are several), its loops
    (outermost first, the batch loops left out), their dims and the
    output's two inner dims; refuses (``PassError``) a module without one.
    A batched contraction (``C[b, i, j] += A[b, i, k] * B[b, k, j]``, the
    heads of an attention block) counts when the loops over its batch dims
    (the output's outer dims) are the outermost ones around it; its B must
    be contiguous in j (read at j in its last index only)."""
    best = None
    for reduce in _reductions(module):
        loops = list(reversed(lt.enclosing_loops(reduce)))
        dims = [lt.loop_dim(loop) for loop in loops]
        try:
            out = _plain_dims(list(reduce.operands)[2:], "register_tile")
        except PassError:
            continue
        batch = len(out) - 2
        if batch < 0 or len(loops) != batch + 3 or len(set(dims)) != len(dims) or not set(out) <= set(dims):
            continue
        if set(dims[:batch]) != set(out[:batch]):
            continue
        band, i, j = loops[batch:], out[-2], out[-1]
        if not _multiplies(band[-1], i, j, contiguous=batch > 0):
            continue  # a row's max or sum (one operand read at both i and j): nothing a tile reuses
        work = math.prod(lt.loop_size(loop) for loop in loops)
        if best is None or work > best[0]:
            best = (work, reduce, band, dims[batch:], (i, j))
    if best is None:
        raise PassError(
            "error: register_tile wants loop_tool's default contraction schedule "
            "(for m { for n: init } for k { for n }) or a nest C[i, j] += f(A, B) under "
            "one loop over each of i, j and k (and outer loops over C's batch dims)"
        )
    return best[1:]


def _index_dims(value) -> set[str]:
    """The dims an index value depends on (``lt.dim`` values through the
    index arithmetic that combines them)."""
    owner = value.owner
    name = getattr(owner, "name", None)
    if name == "lt.dim":
        return {ir.StringAttr(owner.attributes["dim"]).value}
    if name is None or name == "lt.loop":
        return set()
    out: set[str] = set()
    for operand in owner.operands:
        out |= _index_dims(operand)
    return out


def _load_index_dims(inner) -> list[list[set[str]]]:
    """For each load inside the loop ``inner``: the dims each of its indices depends on."""
    found = []

    def visit(op):
        if op.name == "memref.load":
            found.append([_index_dims(v) for v in list(op.operands)[1:]])
        return ir.WalkResult.ADVANCE

    inner.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _multiplies(inner, i: str, j: str, contiguous: bool = False) -> bool:
    """Whether the loop ``inner`` reads one operand that does not change
    with j (A: the same element for a whole row of the tile) and one that
    does not change with i (B): a contraction, whose operands a register
    tile reuses.  ``contiguous``: B must also be read at j in its last
    index only (vectors of j are then loads, not gathers)."""
    a = b = False
    for per_index in _load_index_dims(inner):
        dims = set().union(*per_index)
        a |= i in dims and j not in dims
        if j in dims and i not in dims:
            b |= not contiguous or not any(j in d for d in per_index[:-1])
    return a and b


def _b_argument(band, i: str, j: str) -> int | None:
    """The argument number of the function argument the contraction reads
    at j and not at i (its B), or None (no such read, or a local buffer)."""
    found = []

    def visit(op):
        if op.name == "memref.load":
            try:
                dims = _plain_dims(list(op.operands)[1:], "register_tile")
            except PassError:
                return ir.WalkResult.ADVANCE
            base = op.operands[0]
            if j in dims and i not in dims and isinstance(base, ir.BlockArgument) \
                    and base.owner.owner.operation.name == "func.func":
                found.append(base.arg_number)
        return ir.WalkResult.ADVANCE

    band[-1].walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[0] if len(set(found)) == 1 else None


def _reorder(schedule: Schedule, dims: list[str], target: list[str], band_of) -> None:
    """Interchange the nest of loops over ``dims`` (``band_of(module)``: its
    loops, outermost first) into the order ``target`` by adjacent swaps,
    outermost first.  Each swap's loop is found anew: a swap that moves a
    loop holding a statement (a convolution's ``C <- 0`` beside its
    reduction) out of it distributes the statement into a loop of its own,
    and the band's loops are then no longer consecutive."""
    current = list(dims)
    for i, d in enumerate(target):
        j = current.index(d)
        while j > i:
            module = schedule.module
            at = preorder_loops(module).index(band_of(module)[j - 1])
            del module
            schedule.swap(at)
            current[j - 1], current[j] = current[j], current[j - 1]
            j -= 1


def _reduction_loops(module) -> list:
    """The loops around the module's one ``lt.reduce``, outermost first."""
    (reduce,) = _reductions(module)
    return list(reversed(lt.enclosing_loops(reduce)))


def _reduction_band(module) -> tuple[list, list[str], list[str]]:
    """The loops around the module's one ``lt.reduce`` (outermost first),
    their dims, and the dims of the element it reduces into (the output's
    indices, outermost first); refuses (``PassError``) anything else."""
    found = _reductions(module)
    if len(found) != 1:
        raise PassError(f"error: vector_rows wants a nest with one reduction, not {len(found)}")
    reduce = found[0]
    band = list(reversed(lt.enclosing_loops(reduce)))
    if _imperfect(band, statements=False) is not None:
        raise PassError("error: vector_rows wants the reduction's loops perfectly nested (one loop in each)")
    dims = [lt.loop_dim(loop) for loop in band]
    out = _plain_dims(list(reduce.operands)[2:], "vector_rows")
    if len(set(dims)) != len(dims) or not set(out) <= set(dims):
        raise PassError(f"error: vector_rows wants one loop per dim around the reduction, not loops over {dims}")
    return band, dims, out


def vector_rows(schedule: Schedule, width: int | None = None, parallel: bool = False, max_vectors: int = 8) -> Schedule:
    """Keep a row of the output in vector registers while the reduction
    runs (what a person does to loop_tool's default schedule of a
    convolution, whose output channel it puts innermost): the loops around
    the module's one reduction, a perfect nest, are reordered to the
    output's dims but its innermost, then the reduced dims, then the
    output's innermost (contiguous) dim, which is vectorized by ``width``
    (by default this CPU's widest vector, or a narrower one -- down to 128
    bits -- for a shorter row) and unrolled, its accumulators in registers;
    the reduced loop inside it next to it is unrolled when it runs at most
    8 times.  For conv2d's ``C[o, y, x] += X[c, y + ky, x + kx] * W[o, c,
    ky, kx]`` with loops c, y, ky, x, kx, o: y, o, c, ky, kx, x.
    ``parallel``: the outermost of those loops on every core.  Refuses
    (``PassError``) another structure, or a row wider than ``max_vectors``
    vectors."""
    module = schedule.module  # kept alive while its loops are read
    band, dims, out = _reduction_band(module)
    first = preorder_loops(module).index(band[0])
    inner = out[-1]
    reduced = [d for d in dims if d not in out]
    target = [d for d in dims if d in out and d != inner] + reduced + [inner]
    row = lt.loop_size(band[dims.index(inner)])
    if width is None:  # this CPU's widest vector, halved (to 128 bits) while the row is shorter
        element = lt.element_bytes(module.operation)
        width = host_vector_width(element)
        while row < width and width * element > 16:
            width //= 2
    if row < width or row > max_vectors * width:
        raise PassError(f"error: vector_rows wants the output's innermost dim {inner} of {width} to "
                        f"{max_vectors * width} elements ({max_vectors} vectors of {width}), not {row}")
    inner_reduced = lt.loop_size(band[dims.index(reduced[-1])]) if reduced else 0
    del module, band
    _reorder(schedule, dims, target, _reduction_loops)
    module = schedule.module
    at = [preorder_loops(module).index(loop) for loop in _reduction_loops(module)]
    del module
    schedule.vectorize(at[-1], width).unroll(at[-1])
    if 0 < inner_reduced <= 8:
        schedule.unroll(at[-2])
    if parallel:
        schedule.parallel(first)
    return schedule


def channel_tile(schedule: Schedule, rows: int | None = None, width: int | None = None, parallel: bool = False) -> Schedule:
    """Register-tile the output channels of a convolution as the importer
    writes it (``for o { for y { for x: C <- 0 }; for c { for ky { for kx
    { for x: C[o, y, x] += X[c, y + ky, x + kx] W[o, c, ky, kx] }}}}``):
    the outermost loop, over C's first dim o, is split by ``rows`` and its
    inner part moved down (distributed off C's initialisation, interchanged
    past every loop) until it sits just outside the innermost loop, over
    C's last dim x, which is vectorized by ``width`` and unrolled with it:

        for o in O/rows { for y { for o' { for x: C <- 0 }
                                  for c { for ky { for kx {
                                   for o' in rows [unroll full]
                                    for x [unroll full, vectorize W] }}}}}

    ``rows x ceil(X/W)`` accumulators stay in registers while the
    reduction runs, and each vector of the input, which does not depend on
    o, is loaded once for ``rows`` output channels instead of once each.
    ``rows`` (default: the largest power of two whose accumulators fill at
    most half the register file, as ``register_tile``'s tiles);
    ``parallel``: the loop over channel blocks on every core.  Takes the
    nest with the most iterations among those whose one reduction has an
    output of two or more plain dims, its outermost loop over the output's
    first dim and its innermost over the output's last, each dim looped
    once, an operand read in the innermost loop that does not depend on the
    first dim; refuses (``PassError``) when there is none, or when fewer
    than 2 rows fit."""
    module = schedule.module
    best = None
    for reduce in _reductions(module):
        band = list(reversed(lt.enclosing_loops(reduce)))
        dims = [lt.loop_dim(loop) for loop in band]
        per_index = [_index_dims(v) for v in list(reduce.operands)[2:]]
        if any(len(d) > 1 for d in per_index):
            continue
        out = [next(iter(d)) for d in per_index if d]  # constant indices (a batch of one) left out
        if len(out) < 2 or len(band) < 3 or len(set(dims)) != len(dims) or dims[0] != out[0] or dims[-1] != out[-1]:
            continue
        if not set(out) <= set(dims) or len(_reductions(band[0])) != 1 or _imperfect(band[:2]) is not None:
            continue
        if not any(out[0] not in set().union(*per) for per in _load_index_dims(band[-1])):
            continue
        work = math.prod(lt.loop_size(loop) for loop in band)
        if best is None or work > best[0]:
            best = (work, preorder_loops(module).index(band[0]), lt.loop_size(band[0]), lt.loop_size(band[-1]))
    if best is None:
        raise PassError(
            "error: channel_tile wants a nest C[o, .., x] += f(.., A) with its outermost loop over o, its innermost "
            "over x, each dim looped once and an operand that does not depend on o"
        )
    _, first, channels, row = best
    del module, band, reduce
    element = lt.element_bytes(schedule.module.operation)
    width = width or host_vector_width(element)
    budget = vector_registers(width) // 2  # accumulators: half the register file, as register_tile's tiles
    vectors = -(-row // width)
    tile = row  # columns of the tile: the whole row when rows of it fit, else a part of it
    if rows is None:
        rows = 1
        while rows * 2 <= channels and rows * 2 * vectors <= budget:
            rows *= 2
        if rows < 2 and channels >= 2 and row > width:  # a wide row: 4 (or 2) channels of a part of it
            rows = 4 if channels >= 4 else 2
            vectors = max(1, budget // rows)
            tile = vectors * width
    elif rows * vectors > budget and row > width:
        vectors = max(1, budget // rows)
        tile = vectors * width
    if rows < 2 or rows > channels:
        raise TileTooLarge(f"error: channel_tile: {rows} rows of {vectors} vectors of {width} do not fit (of {channels} channels)")
    schedule.split(first, rows)
    while True:  # move o' down the reduction's loops until it holds only the x loop
        module = schedule.module
        loops = preorder_loops(module)
        chain = list(reversed(lt.enclosing_loops(_reductions(loops[first])[0])))
        o = lt.loop_dim(chain[0])
        k = next(k for k, loop in enumerate(chain) if k > 0 and lt.loop_dim(loop) == o)  # o'
        inner = loops.index(chain[k])
        parts = [op for op in lt.body_ops(lt.loop_body(chain[k])) if lt.is_loop(op) or op.name in ("memref.store", "lt.reduce")]
        done, several = k + 2 == len(chain), len(parts) > 1
        del module, loops, chain, parts
        if done:
            break
        if several:
            schedule.distribute(inner)  # C's initialisation gets an o' loop of its own
        else:
            schedule.swap(inner)
    if tile < row:  # the row in tiles of ``tile`` columns, their loop outside the reduction's loops
        schedule.split(inner + 1, tile)
        while True:
            module = schedule.module
            loops = preorder_loops(module)
            chain = list(reversed(lt.enclosing_loops(_reductions(loops[first])[0])))
            x = lt.loop_dim(chain[-1])
            tiles = next(k for k, loop in enumerate(chain[:-1]) if lt.loop_dim(loop) == x)  # the loop over x's tiles
            parent = chain[tiles - 1]
            up = (lt.loop_dim(parent) == lt.loop_dim(chain[0]) and parent != chain[0]) or lt.loop_dim(parent) not in _output_dims_of(_reductions(chain[-1])[0])
            at = loops.index(parent)
            del module, loops, chain, parent
            if not up:
                break
            schedule.swap(at)  # the tiles' loop one level out (past o', then the reduced dims)
        module = schedule.module
        loops = preorder_loops(module)
        chain = list(reversed(lt.enclosing_loops(_reductions(loops[first])[0])))
        inner = loops.index(chain[-2])  # o', now over the tile's columns
        del module, loops, chain
    schedule.vectorize(inner + 1, width).unroll(inner + 1).unroll(inner)
    if parallel:
        _parallel_with_work(schedule, first)
    return schedule


def _output_dims_of(reduce) -> set[str]:
    """The dims the output index of ``reduce`` (an ``lt.reduce``) uses."""
    return set().union(*[_index_dims(v) for v in list(reduce.operands)[2:]])


def vector_loops(schedule: Schedule, width: int | None = None, parallel: bool = False) -> Schedule:
    """Run every innermost loop whose body reads and writes whole vectors
    along its dim as vector code, each loop over its full length (a
    reduction keeps one vector accumulator for the whole row and reduces it
    once), and with ``parallel`` the outermost loop of each top-level nest
    on every core: what a person does to a row-wise program -- gesummv's
    two dot products a row, a row sum, softmax's passes, an element-wise
    add.  ``width``: lanes a vector (default: this CPU's widest for the
    element type).  A loop shorter than ``width``, one that would gather
    (its dim is not the last of an access) and one whose body cannot be
    vectorized stay scalar; a nest whose outer loop cannot run in parallel
    stays serial.  Refuses (``PassError``) a module with no loop to
    vectorize."""
    module = schedule.module  # kept alive while its loops are read
    width = width or host_vector_width(lt.element_bytes(module.operation))
    loops = preorder_loops(module)
    inner = [i for i, loop in enumerate(loops)
             if lt.loop_size(loop) >= width and vector_plan.plan(loop) is None and not vector_plan.gather_distances(loop)]
    del module, loops
    if not inner:
        raise PassError(f"error: vector_loops found no innermost loop of at least {width} iterations "
                        "that reads and writes whole vectors")
    for i in inner:
        schedule.vectorize(i, width)
    return parallel_nests(schedule) if parallel else schedule


def parallel_nests(schedule: Schedule) -> Schedule:
    """Run the outermost loop of every top-level nest that has no parallel
    loop yet on every core, where ``lt-parallel`` takes it: after a
    contraction's recipe, the nests around it (covariance's centring of X,
    the scaling of its product, C's initialisation) share the cores too.
    A nest whose outer loop carries a reduction (covariance's sum over the
    rows for the mean) stays serial, and the lowering runs a loop with too
    little work for a fork on one thread (``analysis.work``).  Returns
    ``schedule``."""
    module = schedule.module  # kept alive while its loops are read
    loops = preorder_loops(module)
    outer = [i for i, loop in enumerate(loops)
             if not lt.enclosing_loops(loop) and not any("parallel" in lt.annotations(l) for l in [loop, *preorder_loops(loop)])]
    del module, loops
    for i in outer:
        try:
            schedule.parallel(i)
        except PassError:
            continue
    return schedule


def row_tile(schedule: Schedule, rows: int = 4, width: int | None = None, parallel: bool = False, min_blocks: int = 1) -> Schedule:
    """Reduce ``rows`` rows side by side, each row's sum in a vector
    register, against one load of what the rows share: what BLAS's
    matrix-vector kernels do, and what a person does to gesummv (``y = a A
    x + b B x``) once one row at a time is stuck below the memory's
    bandwidth (one row a time reads one stream; several rows keep several
    in flight and load ``x`` once for all of them).  For each top-level
    nest ``for i { .. for j { acc[i] += f(A[i, j], ..) } .. }`` whose row
    reduction ``j`` reads whole vectors along ``j``: ``i`` is split by
    ``rows``; the scratch buffers of the row's body and the values that
    cross its parts are expanded over the ``rows`` rows and the row loop
    distributed (``expand``, ``expand_values``, ``distribute``), so that
    each reduction gets a row loop of its own; then each such loop over
    ``j`` -- a row's sum, or a row's values added into a vector over ``j``
    (``g[j] += A[i, j] * p[i]``: logistic regression's gradient, Sinkhorn's
    ``K.T @ u`` beside ``K @ v``) -- is split by ``width`` (default: this
    CPU's widest vector), its blocks moved outside the row loop, the rows
    unrolled and the block vectorized::

        for i in N/rows : L0 [parallel]
         for i' in rows : L1           acc[i] <- 0
         for j in M/W : L2
          for i' in rows : L3 [unroll full]
           for j' in W : L4 [vectorize W]     acc[i] += A[i, j] * x[j]
         for i' in rows : L5           y[i] <- .. acc[i] ..

    The lowering keeps each row's vector sum in a register across the
    blocks (``lowering/vectorize.py``) and reduces its lanes once a row.
    ``parallel``: the outer row loop of each nest on every core;
    ``min_blocks``: only rows of at least that many blocks.  Refuses
    (``PassError``) a module with no such nest."""
    module = schedule.module  # kept alive while its loops are read
    width = width or host_vector_width(lt.element_bytes(module.operation))
    tops = sum(1 for loop in preorder_loops(module) if not lt.enclosing_loops(loop))
    del module
    tiled = [k for k in reversed(range(tops)) if _row_tile_nest(schedule, k, rows, width, parallel, min_blocks)]
    if not tiled:
        raise PassError(f"error: row_tile found no loop of at least {rows} rows around a row reduction of at least "
                        f"{width} elements that reads whole vectors")
    return schedule


def _row_reduction(loop, width: int) -> bool:
    """Whether ``loop`` is an innermost loop of at least ``width`` iterations
    that vectorizes without gathers and reduces into places its dim does not
    index (a row's sum)."""
    if not _row_stage(loop, width):
        return False
    dim = lt.loop_dim(loop)
    return not any(reads_dim(v.owner.operation, dim) if not isinstance(v.owner, ir.Block) else False
                   for a in accesses(loop) if a.kind.startswith("reduce:") for v in a.indices)


def _row_stage(loop, width: int) -> bool:
    """Whether ``loop`` is an innermost loop of at least ``width`` iterations
    that vectorizes without gathers and reduces (a row's sum, or a row's
    values added into a vector over its dim: ``g[k] += X[i, k] * p[i]``)."""
    if lt.inner_levels(loop) or any(lt.is_loop(op) for op in lt.body_ops(lt.loop_body(loop))):
        return False
    if lt.loop_size(loop) < width or vector_plan.plan(loop) is not None or vector_plan.gather_distances(loop):
        return False
    return any(a.kind.startswith("reduce:") for a in accesses(loop))


def _row_tile_nest(schedule: Schedule, k: int, rows: int, width: int, parallel: bool, min_blocks: int = 1) -> bool:
    """``row_tile`` on the ``k``-th top-level nest; whether it applied (the
    schedule is unchanged where it did not)."""
    module = schedule.module  # kept alive while its loops are read
    loops = preorder_loops(module)
    outer = [loop for loop in loops if not lt.enclosing_loops(loop)][k]
    top, dim = loops.index(outer), lt.loop_dim(outer)
    if (lt.loop_size(outer) < rows or lt.inner_levels(outer)
            or not any(lt.loop_dim(kid) != dim and _row_reduction(kid, width * max(1, min_blocks)) for kid in _inner_loops(outer))):
        return False
    del module, loops, outer
    mark, remarks = len(schedule.steps), len(schedule.remarks)
    try:
        schedule.split(top, rows)
        for move in (lambda: schedule.expand(top + 1), lambda: schedule.expand(top + 1, values=True),
                     lambda: schedule.distribute(top + 1)):
            try:
                move()
            except PassError:
                pass  # no scratch buffer in the row's body, nothing crosses its parts; the row loop holds one part
        module = schedule.module
        loops = preorder_loops(module)
        candidates = [loops.index(row) for row in _inner_loops(loops[top])
                      if _only_loop(row) is not None and _row_stage(_only_loop(row), width)]
        del module, loops
        if not candidates:
            raise PassError("error: row_tile: no row loop holds a row reduction alone")
        for at in reversed(candidates):  # the later first: the earlier keep their numbers
            schedule.split(at + 1, width).swap(at).unroll(at + 1).vectorize(at + 2, width)
    except PassError:
        for _ in range(len(schedule.steps) - mark):
            schedule.undo()
        del schedule.remarks[remarks:]
        return False
    if parallel:
        try:
            schedule.parallel(top)
        except PassError:
            pass
    return True


def _inner_loops(loop) -> list:
    return [op for op in lt.body_ops(lt.loop_body(loop)) if lt.is_loop(op)]


def _only_loop(loop):
    """The one statement of ``loop``'s body when it is a loop (index
    computations aside), else None."""
    ops = [op for op in lt.body_ops(lt.loop_body(loop)) if not is_pure_index_op(op)]
    return ops[0] if len(ops) == 1 and lt.is_loop(ops[0]) else None


# The interchanges that turn m, m', m'', n, n', n'', k, k' (L2..L9 after the
# splits) into m, n, k, m', n', k', m'', n'' (adjacent swaps, outermost
# loop first).
_GPU_TILE_SWAPS = (4, 5, 7, 8, 3, 6, 7, 5, 4)


def gpu_tiled_matmul(
    schedule: Schedule, tile: int = 32, regs: int = 2, k_tile: int = 8, vector: int = 0, k_unroll: int | None = None, group: int = 0,
    pad: int = 0, double_buffer: bool = False, min_blocks: int = 0,
) -> Schedule:
    """The shared-memory GEMM schedule for the GPU, applied to
    ``programs.matmul``'s nest (``for m { for n { C <- 0; for k { C +=
    A[m, k] B[k, n] } } }``); returns ``schedule``.

    A block computes a ``tile x tile`` block of C with ``tile/regs x
    tile/regs`` threads, each a ``regs x regs`` register tile (unrolled).
    For each ``k_tile`` slice of k, the block first copies the slice of A
    (``tile x k_tile``) and of B (``k_tile x tile``) into shared memory
    (``lt-cache`` tiles in the block loop), the copies' loops mapped to the
    same threads (consecutive threads read consecutive elements of a row),
    then every thread reads its operands from shared memory; barriers
    separate the copies from the compute and end each slice::

        for m in M/tile [gpu block]
         for n in N/tile [gpu block]
          for k in K/k_tile                    (every thread, a barrier each)
           %0 <- alloc f32[k, n]               B's slice, shared memory
           for n' in tile/TH { for k' in k_tile [gpu thread] { for n'' in TH [gpu thread] ... } }
           %2 <- alloc f32[m, k]               A's slice, shared memory
           for m' in tile/TH { for m'' in TH [gpu thread] { for k' in k_tile [gpu thread] ... } }
           for m' in TH [gpu thread]
            for n' in TH [gpu thread]
             for k' in k_tile
              for m'' in regs [unroll full]
               for n'' in regs [unroll full]   C[m, n] += A'[m, k] * B'[k, n]

    (``TH = tile/regs``; C's initialisation is mapped by ``lt-gpu-auto``.)
    Each thread keeps its ``regs x regs`` tile of C in registers across
    the k-slices (loaded before the first, stored after the last: the GPU
    lowering's register tiles).

    ``vector`` (4: 128-bit accesses) copies the slices in ``vector``
    neighbouring elements a thread: the block is ``TX x TY x TH`` threads
    (``TX = k_tile/vector``, ``TY = TH/TX``); the compute's n' splits
    into ``TY x TX``, A's copy takes ``TH x TY`` rows of ``TX`` vectors a
    pass and B's copy ``k_tile`` rows of ``TY x TX`` vectors a pass, each
    warp reading whole 64-byte runs::

           for k' in k_tile/TH { for n' in tile/(TH*vector) { for k'' in TH [z] { for n'' in TY [y] { for n3 in TX [x] { vector [unroll] } } } } }
           for m' in tile/(TH*TY) { for m'' in TH [z] { for m3 in TY [y] { for k' in TX [x] { vector [unroll] } } } }
           for m' in TH [z] { for n' in TY [y] { for n'' in TX [x] { for k' in k_tile { regs x regs [unroll] } } } }

    ``k_unroll``: unroll the compute's k' loop by this factor (0:
    completely), so that a thread's shared-memory reads for the next k'
    can issue before the FMAs of this one.

    ``group``: launch the blocks of ``group`` consecutive tiles of m for
    one tile of n after another (``m/group { n { group } }``, three block
    loops), so that blocks running at once share B's slices and A's rows in
    the L2 cache (as Triton's tutorial GEMM orders its programs).

    ``pad``: lay B's slice out with ``pad`` unused floats after every 32 of
    a row (``lt-pad``): with 8 columns a thread the threads of a warp read
    B's slice 32 bytes apart and two of each quarter-warp's 128-bit reads
    fall on the same banks; 4 floats of padding leave no bank conflict.

    ``double_buffer``: copy the next k-slice into a second pair of shared
    tiles (``cp.async``) while the threads compute on this one
    (``lt-double-buffer``); twice the shared memory (at most 48 KiB: with
    ``tile=128`` that is ``k_tile=16``); needs ``K`` a multiple of
    ``k_tile``.  On an H100 (README "On an NVIDIA GPU") it pays on 64 x 64
    tiles (4096^3: 4.14 -> 3.79 ms; 1024^3: 0.091 -> 0.082 ms); on 128 x
    128 tiles it needs ``min_blocks=2`` (173 registers otherwise: one
    block an SM).

    ``min_blocks``: the kernel asks for that many blocks a multiprocessor
    (``lt-min-blocks``: registers capped at 65536 / (blocks x threads)).

    ``vector`` needs ``k_tile`` a multiple of ``TH`` (B's copy then makes
    ``k_tile/TH`` passes over k) and sizes that divide (``vector`` into
    ``k_tile``, ``TX`` into ``TH``, ``TH * vector`` and ``TH * TY`` into
    ``tile``).  Refuses (``PassError``) another loop structure or sizes that
    do not divide: ``tile`` by ``regs``."""
    module = schedule.module
    loops = preorder_loops(module)
    dims = [lt.loop_dim(loop) for loop in loops]
    if len(dims) != 3 or len(set(dims)) != 3:
        raise PassError(f"error: gpu_tiled_matmul wants programs.matmul's nest (for m {{ for n {{ init; for k }} }}), not loops over {dims}")
    if regs < 1 or tile % regs or k_tile < 1:
        raise PassError(f"error: gpu_tiled_matmul: tile ({tile}) must be a multiple of regs ({regs}); k_tile ({k_tile}) at least 1")
    threads = tile // regs
    if max(threads, k_tile) ** 2 > 1024:
        raise PassError(f"error: gpu_tiled_matmul: {max(threads, k_tile)}^2 threads a block (at most 1024)")
    if vector:
        tx = k_tile // vector if vector > 0 else 0
        ty = threads // tx if tx else 0
        if vector < 1 or k_tile % vector or not tx or threads % tx or k_tile % threads or tile % (threads * vector) or tile % (threads * ty):
            raise PassError(
                f"error: gpu_tiled_matmul: vector={vector} wants k_tile ({k_tile}) a multiple of tile/regs ({threads}), "
                f"vector dividing k_tile, k_tile/vector dividing tile/regs, and (tile/regs) * vector and "
                f"(tile/regs) * (tile/regs) / (k_tile/vector) dividing tile ({tile})"
            )
    schedule.distribute(1).distribute(0)
    schedule.split(2, tile).split(3, regs).split(5, tile).split(6, regs).split(8, k_tile)
    for loop in _GPU_TILE_SWAPS:
        schedule.swap(loop)
    o = 0  # how far grouping moved the loops after the block loops
    if group > 1:
        # m's blocks in groups of ``group``: m/group { n { group } }, the group's blocks launched one after another
        schedule.split(2, group).swap(3)
        o = 1
    blocks = (2, 3, 4) if o else (2, 3)
    schedule.cache(4 + o, 0).cache(4 + o, 1)  # A's slice, then B's before it
    if pad:
        schedule.pad(4 + o, pad)  # B's slice: ``pad`` floats after every 32 of a row
    if double_buffer:
        schedule.double_buffer(4 + o)  # the next k-slice's copies (cp.async) during this one's compute
    if vector:
        # B's copy: k_tile/TH { tile/(TH*vector) { TH [z] { TY [y] { TX [x] { vector } } } } }
        schedule.split(5 + o, threads).split(7 + o, threads * vector).split(8 + o, tx * vector).split(9 + o, vector).swap(6 + o)
        schedule.split(11 + o, threads * ty).split(12 + o, ty).split(14 + o, vector)  # A's copy
        schedule.split(17 + o, tx)  # the compute's n'
        # (each chain mapped innermost first: a partly mapped chain fits the block too)
        threads_at, unrolled, k_loop = (9, 8, 7, 14, 13, 12, 18, 17, 16), (10, 15, 20, 21), 19
    else:
        schedule.split(6 + o, threads).swap(5 + o)  # B's copy: n' in tile/TH { k' [thread] { n'' in TH [thread] } }
        schedule.split(8 + o, threads)  # A's copy: m' in tile/TH { m'' in TH [thread] { k' [thread] } }
        threads_at, unrolled, k_loop = (6, 7, 9, 10, 11, 12), (14, 15), 13
    for loop in blocks:
        schedule.gpu_map(loop, "block")
    if min_blocks:
        schedule.min_blocks(2, min_blocks)  # the kernel's registers capped for that many blocks an SM
    for loop in threads_at:
        schedule.gpu_map(loop + o, "thread")
    for loop in unrolled:
        schedule.unroll(loop + o)
    if k_unroll is not None:
        schedule.unroll(k_loop + o, k_unroll)
    return schedule.gpu_auto()


# ------------------------------------------------------------ attention


def _loop_numbers(schedule: Schedule) -> dict:
    return {op: k for k, op in enumerate(preorder_loops(schedule.parsed.operation))}


def _max_reduce(schedule: Schedule):
    found = []
    schedule.parsed.operation.walk(
        lambda o: (found.append(o) if o.name == "lt.reduce" and ir.StringAttr(o.attributes["kind"]).value == "max" else None,
                   ir.WalkResult.ADVANCE)[1])
    if len(found) != 1:
        raise PassError(f"error: flash_attention: the program holds {len(found)} max reductions, not one (the row maximum of the scores)")
    return found[0]


def _outermost_over(op, dim: str, stop):
    """The outermost loop over ``dim`` around ``op`` below ``stop``."""
    out = None
    for level in lt.enclosing_loops(op):
        if stop is not None and level == stop:
            break
        if lt.loop_dim(level) == dim:
            out = level
    return out


def _siblings_before(loop) -> list:
    ops = lt.body_ops(loop.block)
    return ops[:ops.index(loop)]


def flash_attention(schedule: Schedule, tile: int = 32, vectorize: int | None = None, parallel: bool = False, gpu_threads: int = 0,
                    key_unroll: int = 0, shared: bool = False) -> Schedule:
    """FlashAttention's loop on the CPU, from the frontend's attention
    (``programs.attention``: ``S = (Q * K).sum(d) * scale; E = (S -
    S.max_reduce(j)).exp(); O = (E * V).sum(j) / E.sum(j)``), by passes
    only; returns ``schedule``:

    0. where the program normalises before the sum over keys (``P = E /
       E.sum(j); O = (P * V).sum(j)``: softmax, then ``@ V``), the
       division taken out of that sum (``lt-factor``: ``O = (E *
       V).sum(j) / E.sum(j)``);
    1. the score nest ``for d { for j { S += Q K } }`` interchanged
       (``lt-swap``) and merged with S's initialisation and the maximum's
       loop (``lt-merge``, ``rename`` moving M's initialisation above):
       one loop over j computes a score and takes its maximum;
    2. that loop and the loop summing ``E`` and ``E * V`` split into tiles
       of ``tile`` keys (``lt-split``, a tail where ``tile`` does not
       divide), then ``lt-online-softmax`` on the tile loop: a tile's
       scores and their maximum, one rescale of the row's sums, the tile's
       terms;
    3. ``lt-shrink-buffers``: the scores live one tile at a time, the
       row's sums in buffers over e;
    4. the loops over d and e vectorized (``vectorize`` lanes; None: the
       host's width, 0: none) and, with ``parallel``, the query rows
       on every core.

    ``gpu_threads`` (a CUDA target) instead splits the query rows into
    blocks of that many threads, a row a thread (``lt-gpu-map``; the loop
    over heads of ``programs.attention(heads=...)`` on blocks too), and
    vectorizes nothing: each thread keeps its row's maximum, sum and
    output row while it runs over the keys and values, which all threads
    of a block read at the same addresses at the same time.
    ``key_unroll`` (GPU) unrolls the loops over a tile's keys by that
    factor: that many keys' scores (independent chains of FMAs) and rows
    of K and V loaded at once, in flight together.  ``shared=True`` (GPU)
    has the block's rows step through the tiles together instead, each
    tile of K and V copied once into the block's shared memory by all its
    threads (``_gpu_shared_tiles``; the row's state then stays in each
    thread's registers across the tiles); on an H100 at d 64 that is 3.8x
    (16 x 1024) to 4.4x (8 x 4096) the row-a-thread kernel (README).  It
    wants ``gpu_threads`` a multiple of 16, and at d 128 a thread's query
    and output rows pass the registers.

    No n x m matrix is ever stored.  Needs the function's fastmath mode to
    allow reassociation (``programs.attention``'s default is ``fast``)."""
    if tile < 1 or gpu_threads < 0 or key_unroll < 0:
        raise PassError(f"error: flash_attention: tile must be positive, gpu_threads and key_unroll not negative, got {tile}, {gpu_threads}, {key_unroll}")
    if shared and (not gpu_threads or gpu_threads % _TX or gpu_threads > 1024 or gpu_threads // _TX > tile):
        raise PassError(f"error: flash_attention: shared=True wants gpu_threads a multiple of {_TX} up to 1024 and at most "
                        f"{_TX} x tile (the tile's copies take gpu_threads/{_TX} keys a pass), got gpu_threads={gpu_threads}, tile={tile}")
    red = _max_reduce(schedule)
    j = lt.loop_dim(red.parent)
    mx_loop = _outermost_over(red, j, None)
    row = mx_loop.parent if mx_loop.parent is not None and mx_loop.parent.name == "lt.loop" else None
    # 1. scores: j outside d, one loop with the maximum
    for op in _score_nests(schedule, j):
        if lt.loop_dim(op) != j:
            schedule.swap(_loop_numbers(schedule)[op])
            break
    nest = _score_nests(schedule, j)
    if len(nest) == 2:
        schedule.merge(_loop_numbers(schedule)[nest[1]])
    schedule.apply(f"lt-merge{{loop={_loop_numbers(schedule)[_outermost_over(_max_reduce(schedule), j, None)]} rename=true}}")
    # softmax then E @ V (``(E / E.sum(j) * V).sum(j)``): the division by
    # the row's sum taken out of the sum over j first (lt-factor)
    for k in reversed(_consumers(schedule, j)):
        if _divides(preorder_loops(schedule.parsed.operation)[k]):
            try:
                schedule.apply(f"lt-factor{{loop={k}}}")
            except PassError:
                pass
    # 2. tiles, one rescale each
    for k in reversed(_consumers(schedule, j)):
        schedule.split(k, tile)
    f = _loop_numbers(schedule)[_outermost_over(_max_reduce(schedule), j, None)]
    schedule.split(f, tile)
    schedule.online_softmax(f)
    if gpu_threads and row is not None and shared:
        _gpu_shared_tiles(schedule, j, gpu_threads)
        vectorize = 0
    elif gpu_threads and row is not None:
        red = _max_reduce(schedule)
        i = _loop_numbers(schedule)[_outermost_over(red, j, None).parent]
        around = len(lt.enclosing_loops(_outermost_over(red, j, None).parent))  # the heads' loop (batch x heads), if any
        for operand in _row_operands(preorder_loops(schedule.parsed.operation)[i], j):
            schedule.cache(i, operand)  # the query row, once a row (before mapping: a copy a thread)
        schedule.split(i, gpu_threads)
        for k in range(around):
            schedule.gpu_map(k, "block")
        schedule.gpu_map(i, "block").gpu_map(i + 1, "thread")
        vectorize = 0
    else:
        if row is not None and lt.enclosing_loops(row):
            _keys_innermost(schedule, j)
        _exponentials_apart(schedule, j)
        if parallel and row is not None:
            schedule.parallel(0)  # (before lt-shrink-buffers: each thread its own tiles)
    # 3. buffers one tile a time
    schedule.shrink_buffers()
    # 4. vectors, cores
    width = host_vector_width(4) if vectorize is None else vectorize
    if width > 1:
        k = 0
        while k < schedule.loops():
            loop = preorder_loops(schedule.parsed.operation)[k]
            dim = lt.loop_dim(loop)
            inner = not any(lt.is_loop(o) for o in lt.body_ops(lt.loop_body(loop)))
            if inner and dim != (lt.loop_dim(row) if row is not None else None) and lt.loop_size(loop) >= width:
                try:
                    schedule.vectorize(k, width)
                    if lt.loop_size(loop) <= 8 * width:
                        schedule.unroll(k, 0)  # a few vectors: registers (the row's sums, a tile's scores)
                except LtError:
                    pass
            k += 1
    if gpu_threads and row is not None:
        # every loop over d and e unrolled: the query row (copied once a
        # row by lt-cache above) and the row's sums are then registers,
        # not local memory (the tile's scores stay there: its loops and e's
        # together would pass the unroll limit)
        k = 0
        while k < schedule.loops():
            loop = preorder_loops(schedule.parsed.operation)[k]
            if lt.loop_dim(loop) not in (j, lt.loop_dim(row), "h") and not lt.annotations(loop):
                try:
                    schedule.unroll(k, 0)
                except LtError:
                    pass  # too many copies (a wide head): left a loop
            k += 1
        if key_unroll > 1:
            # the loops over a tile's keys (those over j inside another over j, in a thread's work)
            for k, loop in enumerate(preorder_loops(schedule.parsed.operation)):
                enclosing = lt.enclosing_loops(loop)
                if (lt.loop_dim(loop) == j and any(lt.loop_dim(p) == j for p in enclosing)
                        and any(lt.annotations(p).get("gpu") == "thread" for p in enclosing)):
                    schedule.unroll(k, min(key_unroll, lt.loop_size(loop)))
    return schedule


_TX = 16  # threads along x in flash_attention's shared-tile GPU schedule (a warp: two rows of 16)


def _gpu_shared_tiles(schedule: Schedule, j: str, threads: int) -> None:
    """flash_attention's GPU schedule with K and V in block-shared memory
    (``shared=True``): the block's rows step through the tiles of keys
    together.  From ``for i { init; for j { tile }; finish }`` (the rows'
    loop ``i`` around the tile loop ``j``, heads outside):

    1. ``i`` split into blocks of ``threads`` rows and the row loop
       distributed (``lt-distribute``; a scratch buffer of a row first
       expanded over the rows, ``lt-expand``): each statement of a row a
       loop over the block's rows of its own;
    2. the part holding the tile loop interchanged with it (``lt-swap``):
       ``for j { for i' { tile } }``, a block-level sequential loop;
    3. the tile's rows of K and V copied into the block's shared memory
       at its top (``lt-cache``), Q's row once a tile into the thread's own
       registers (``lt-cache`` in the rows' loop);
    4. every loop over the block's rows split ``threads/16 x 16`` and
       mapped to threads (y, x); each copy ``for j' { for d }`` as ``for
       j1 { for d1 { for j2 [y] { for d2 [x] { for d3 [unroll] } } } }``
       (d3 four floats where 4 divides d: 128-bit loads; d2 up to 16):
       the block's threads copy ``threads/16`` keys a pass.

    A row's maximum, sum and output row are then buffers that only the
    thread owning the row touches, in every part: the GPU lowering keeps
    them in that thread's registers across the tiles
    (``register_tiles.keep_owned_in_registers``)."""
    ty = threads // _TX  # (flash_attention checked that _TX divides threads)

    def loops():
        return preorder_loops(schedule.parsed.operation)

    def number(op) -> int:
        return _loop_numbers(schedule)[op]

    red = _max_reduce(schedule)
    row = _outermost_over(red, j, None).parent
    i = lt.loop_dim(row)
    around = len(lt.enclosing_loops(row))
    schedule.split(number(row), threads)
    rows = loops()[around + 1]  # the block's rows: i'
    if any(o.name == "lt.alloc" for o in lt.body_ops(lt.loop_body(rows))):
        schedule.expand(number(rows))  # a row's scratch (lt-factor's sum over e) a row of a buffer over i: distributable
    schedule.distribute(number(loops()[around + 1]))
    tiles = _outermost_over(_max_reduce(schedule), j, None)
    schedule.swap(number(tiles.parent))
    tiles = _outermost_over(_max_reduce(schedule), j, None)
    compute = next(o for o in lt.body_ops(lt.loop_body(tiles)) if lt.is_loop(o))
    keyed = [n for n in _argument_reads(compute) if n not in _row_operands(compute, j)]
    for operand in _row_operands(compute, j):
        schedule.cache(number(compute), operand)  # Q's row: a thread's own copy
    for operand in keyed:
        schedule.cache(number(_outermost_over(_max_reduce(schedule), j, None)), operand)  # the tile of K, of V
    # copies: for j' { for d } -> for j1 { for d1 { for j2 [y] { for d2 [x] { for d3 [unroll] } } } }
    def child(loop):
        return next(o for o in lt.body_ops(lt.loop_body(loop)) if lt.is_loop(o))

    def copies() -> list:
        tiles = _outermost_over(_max_reduce(schedule), j, None)
        return [o for o in lt.body_ops(lt.loop_body(tiles)) if lt.is_loop(o) and lt.loop_dim(o) == j]

    vectors = []
    for c in range(len(copies())):
        copy = copies()[c]
        width = lt.loop_size(child(copy))
        vector = 4 if width % 4 == 0 and not lt.loop_tail(child(copy)) else 1
        k = number(copy)
        if vector > 1:
            schedule.split(k + 1, vector)  # d' { d3 }
        schedule.split(k + 1, min(_TX, width // vector))  # d1 { d2 { d3 } }
        schedule.split(k, ty).swap(k + 1)  # j1 { d1 { j2 { d2 { d3 } } } }
        vectors.append(vector)
    # the rows' loops: i' -> ia [y] { ib [x] }
    k = 0
    while k < len(loops()):
        loop = loops()[k]
        if lt.loop_dim(loop) == i and any(lt.loop_dim(p) == i for p in lt.enclosing_loops(loop)):
            schedule.split(k, _TX)
            k += 1
        k += 1
    # mapped: blocks outside in, then each chain of threads innermost first
    chains, unrolled = [], []
    for copy, vector in zip(copies(), vectors):
        j2 = child(child(copy))
        chains.append((child(j2), j2))
        if vector > 1:
            unrolled.append(number(child(child(j2))))
    chains += [(l, l.parent) for l in loops() if lt.loop_dim(l) == i and sum(lt.loop_dim(p) == i for p in lt.enclosing_loops(l)) == 2]
    numbers = [(number(x), number(y)) for x, y in chains]
    for k in unrolled:  # (neither unrolling nor mapping renumbers the loops)
        schedule.unroll(k, 0)
    for k in range(around + 1):
        schedule.gpu_map(k, "block")
    for x, y in numbers:
        schedule.gpu_map(x, "thread").gpu_map(y, "thread")


def _keys_innermost(schedule: Schedule, j: str) -> None:
    """The scores of a tile as vectors of keys: K copied transposed once a
    head (``lt-cache{order=10}`` in the outermost loop), then the score nest
    ``for j' { S = 0; for d { S += Q K } ... }`` distributed and its
    ``for j' { for d }`` interchanged: keys innermost, read contiguously.
    Left as it is where any step refuses."""
    loops = preorder_loops(schedule.parsed.operation)

    def holds_other(l) -> bool:
        return any(lt.is_loop(o) and lt.loop_dim(o) != j for o in lt.body_ops(lt.loop_body(l)))

    # the first inner level over j holding a loop over another dim: the scores' (the sum's over e comes later)
    score = next((k for k, l in enumerate(loops) if lt.loop_dim(l) == j and holds_other(l)
                  and any(lt.loop_dim(p) == j for p in lt.enclosing_loops(l))), None)
    if score is None:
        return
    inner = next(o for o in lt.body_ops(lt.loop_body(loops[score])) if lt.is_loop(o) and lt.loop_dim(o) != j)
    keyed = [n for n in _argument_reads(inner) if n not in _row_operands(inner, j)]
    if len(keyed) != 1:
        return
    steps = [f"lt-cache{{loop=0 operand={keyed[0]} order=10}}",  # its copy nest: two loops ahead of the score's
             f"lt-distribute{{loop={score + 2}}}",  # S = 0 | for d | the rest
             f"lt-swap{{loop={score + 3}}}"]
    _all_or_none(schedule, steps)


def _all_or_none(schedule: Schedule, steps: list) -> bool:
    """Apply ``steps`` in turn; where one refuses, undo those applied (and
    their remarks).  Whether they all applied."""
    done, remarks = 0, len(schedule.remarks)
    try:
        for step in steps:
            schedule.apply(step)
            done += 1
    except LtError:
        for _ in range(done):
            schedule.undo()
        del schedule.remarks[remarks:]
        return False
    return True


def _exponentials_apart(schedule: Schedule, j: str) -> None:
    """In the ``(E * V).sum(j)`` form a tile's loop computes each
    exponential and adds its row of V: its values go through a tile buffer
    (``lt-expand{values=true}``) and the loop is distributed, so that the
    exponentials are a vector loop of their own.  Left as it is where
    either refuses."""
    loops = preorder_loops(schedule.parsed.operation)
    for k in range(len(loops) - 1, -1, -1):
        l = loops[k]
        if not (lt.loop_dim(l) == j and any(lt.loop_dim(p) == j for p in lt.enclosing_loops(l))
                and any(lt.is_loop(o) and lt.loop_dim(o) != j for o in lt.body_ops(lt.loop_body(l)))):
            continue
        if _all_or_none(schedule, [f"lt-expand{{loop={k} values=true}}", f"lt-distribute{{loop={k}}}"]):
            return


def _argument_number(buffer) -> int | None:
    """The position of ``buffer`` among its function's arguments (None: not an argument)."""
    owner = buffer.owner
    if isinstance(owner, ir.Block) and owner.owner is not None and owner.owner.operation.name == "func.func":
        return ir.BlockArgument(buffer).arg_number
    return None


def _argument_reads(loop) -> list[int]:
    """The function arguments ``loop`` reads, by position."""
    return sorted({_argument_number(a.buffer) for a in accesses(loop) if a.kind == "read"} - {None})


def _consumers(schedule: Schedule, j: str) -> list[int]:
    """The numbers of the loops over j after the maximum's that read it, or
    read what such a loop writes (the loops lt-online-softmax joins)."""
    red = _max_reduce(schedule)
    first = _outermost_over(red, j, None)
    ops = lt.body_ops(first.block)
    read = {red.operands[1]}
    numbers = _loop_numbers(schedule)
    out = []
    for op in ops[ops.index(first) + 1:]:
        if lt.is_loop(op) and lt.loop_dim(op) == j:
            found = accesses(op)
            if any(a.kind == "read" and a.buffer in read for a in found):
                out.append(numbers[op])
                read |= {a.buffer for a in found if a.kind == "write"}
    return out


def _divides(loop) -> bool:
    """Whether ``loop`` sums a quotient (a normalised softmax times V)."""
    for a in accesses(loop):
        if a.kind == "reduce:add":
            stack = [a.op.operands[0]]
            while stack:
                v = stack.pop()
                if isinstance(v.owner, ir.Block):
                    continue
                op = v.owner.operation
                if op.name == "arith.divf":
                    return True
                if op.name == "arith.mulf":
                    stack.extend(op.operands)
    return False


def _score_nests(schedule: Schedule, j: str) -> list:
    """The loops before the maximum's that write the scores it reads (S's
    initialisation, the nest summing Q K)."""
    red = _max_reduce(schedule)
    load = red.operands[0].owner.operation
    while load.name != "memref.load":
        load = next((v.owner.operation for v in load.operands if not isinstance(v.owner, ir.Block) and not isinstance(v.type, ir.IndexType)), None)
        if load is None:
            raise PassError("error: flash_attention: the maximum is not taken of values read from a buffer of scores")
    buf = load.operands[0]
    return [op for op in _siblings_before(_outermost_over(red, j, None)) if lt.is_loop(op)
            and any(a.buffer == buf and a.kind != "read" for a in accesses(op))]


def _row_operands(loop, j: str) -> list[int]:
    """The function arguments ``loop`` reads at no index that depends on
    dim ``j`` (attention's queries), by position."""
    found: dict = {}
    for a in accesses(loop):
        n = _argument_number(a.buffer)
        if a.kind != "read" or n is None:
            continue
        keyed = any(not isinstance(x.owner, ir.Block) and reads_dim(x.owner.operation, j) for x in a.indices)
        found[n] = found.get(n, True) and not keyed
    return [n for n, ok in sorted(found.items()) if ok]

