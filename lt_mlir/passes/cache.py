"""``lt-cache{loop=L operand=i}`` and ``lt-uncache{loop=L operand=i}``:
copy the tile of an input that a loop body reads into local memory
(loop_tool's ``copy_input``), and take such a copy out again.

``lt-cache``
------------
In each iteration of loop L, before anything else in its body, a copy nest
copies the part of function argument ``operand`` that L's body reads into a
new ``lt.alloc`` (marked ``lt.cache = <operand>``), and every read of the
argument inside L reads the local buffer instead.  Each index of a read is
split into

* *tiled* terms: ``lt.dim d`` where a level over ``d`` inside L encloses the
  ``lt.dim`` (the index moves while L's body runs), and
* *uniform* terms: values that do not change while one iteration of L's body
  runs: values defined outside L, L's iteration number, ``lt.dim d`` with no
  level over ``d`` inside L around it, constants, and index arithmetic on
  those,

and the index must be a sum (``arith.addi``) of such terms, minus uniform
ones (``arith.subi``), with each tiled dim at most once.  An axis with no tiled term is dropped from the local
buffer (only that position is copied).  An axis whose tiled terms are dims
``d1 .. dk`` covers ``E(d1) + .. + E(dk) - (k - 1)`` elements (one dim: a
tile of it; ``i + j``: a convolution window), where ``E(d)`` is

* the inner extent of the innermost level over ``d`` among L and its
  ancestors, when there is one: the tile is the chunk of ``d`` that one
  iteration covers and starts at ``lt.dim d`` taken at the start of L's
  body, or
* otherwise the extent of the levels over ``d`` inside L (the tile starts
  at 0).

``order`` (digits, a permutation of the local buffer's axes: ``10`` for a
2-D tile) lays the local buffer's axes out in that order instead: the tile
transposed, so that a loop over the source's first axis, innermost, reads
it contiguously (FlashAttention's scores read K's tile as K^T).  Refused
when the digits are no permutation of the tile's axes.

The copy nest has one ``lt.loop`` per tiled dim (the source's axis order), each covering
``E(d)`` with no tail.  Under a level over ``d`` it is one more inner level
of it, with the same extent as its siblings (what the verifier requires), so
lt's tail semantics clip the copy in tail iterations exactly like the loops
that read: under ``for m in 4 r 1`` over ``for m' in 8`` the copy takes 8
rows in each of the four full iterations and 1 row in the tail iteration.  A window axis copies each element once per
``(d1, .., dk)`` combination that reaches it (redundant but exact).  Reads
then index the local buffer with ``min(max(index - base, 0), extent - 1)``
(``common.relative_index``: the clamp is the identity; it is
there only while the interval bounds check cannot see the range of
``index - base`` itself) or, when the tile starts at 0, with the index
itself.

Refuses (with the location of the offending op): no loop L; ``operand`` is
not an argument of L's function or not a memref; L or an enclosing loop is
annotated ``lt.gpu`` or ``lt.vectorize`` (iterations running at the same
time would share the local buffer; under ``lt.parallel`` each iteration of
the parallel loop gets its own, see ``lower-lt-to-scf``); the argument is written or
reduced into inside L, or used there other than by loads; it is not read
inside L; an index of a read is not a sum of tiled and uniform terms
(e.g. ``2 * k``, an inner loop's iteration number) or names a tiled dim
twice; two reads disagree on an axis (different tiled dims or uniform
terms) or use one tiled dim on two axes; a window's reads cover different
ranges of one of its dims; the copy level of a dim could not cover the same
extent as the levels that read (not expected of verified IR).

``lt-uncache``
--------------
Removes a cache made by ``lt-cache`` at the start of loop L's body: reads of
the local buffer read the cached buffer again with their original indices
(on an axis that was dropped, the equal value recomputed at the start of L's
body), and the copy nest, the buffer and the index values only the cache
used go.
With ``operand=-1`` (default) it removes the first cache in L's body (the
one made last), otherwise the one of that argument.  Refuses when L has no
such cache or when another pass changed the cache so that the original
reads cannot be recovered (the buffer is written outside the copy nest, a
read's index is no longer ``relative_index`` of the cache's base).
"""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack

from ..analysis import dependence
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..mlir import arith, ir, memref
from . import common
from .common import match_relative_index, new_dim, relative_index, relative_index_ops
from .registry import Option, register
from .shrink_buffers import CONCURRENT

# Under these the local buffer would be shared by iterations running at the
# same time.  Not under lt.parallel: the lowering allocates a buffer made
# inside a parallel loop in that loop's body, one for each iteration.
SHARED_UNDER = tuple(k for k in CONCURRENT if k != "parallel")

CACHE = "lt-cache"
UNCACHE = "lt-uncache"
MARKER = "lt.cache"


# ----------------------------------------------------------- small helpers


def _function_of(op):
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent


def _inside(op, loop) -> bool:
    """``op`` is nested (at any depth) in ``loop``'s body."""
    return loop in lt.enclosing_loops(op)


def _def_op(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _function_name(f) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


class _Analysis:
    """Classifies index values relative to loop L (see the module docstring)."""

    def __init__(self, loop):
        self.loop = loop
        self._uniform: dict = {}

    def levels_inside(self, op, dim: str) -> list:
        """Levels over ``dim`` strictly inside L that enclose ``op``, innermost first."""
        out = []
        for l in lt.enclosing_loops(op):
            if l == self.loop:
                break
            if lt.loop_dim(l) == dim:
                out.append(l)
        return out

    def defined_outside(self, value) -> bool:
        op = _def_op(value)
        if op is None:
            parent = value.owner.owner  # the op owning the block
            if parent is None:
                return True
            parent = parent.operation
            return parent == self.loop or not _inside(parent, self.loop)
        return not _inside(op, self.loop)

    def uniform(self, value) -> bool:
        if value in self._uniform:
            return self._uniform[value]
        self._uniform[value] = False  # cycles cannot happen in SSA, but be safe
        if self.defined_outside(value):
            result = True
        else:
            op = _def_op(value)
            if op is None:
                result = False  # an inner loop's iteration number
            elif op.name == "lt.dim":
                result = not self.levels_inside(op, ir.StringAttr(op.attributes["dim"]).value)
            elif op.name == "arith.constant":
                result = True
            elif dependence.is_pure_index_op(op):
                result = all(self.uniform(v) for v in op.operands)
            else:
                result = False
        self._uniform[value] = result
        return result

    def decompose(self, value):
        """``(uniform terms as (sign, value), tiled lt.dim values)`` or None:
        ``value`` = sum(sign * term) + sum(tiled)."""
        if self.uniform(value):
            return [(1, value)], []
        op = _def_op(value)
        if op is not None and op.name == "lt.dim":
            return [], [value]
        if op is not None and op.name == "arith.addi":
            parts = [self.decompose(v) for v in op.operands]
            if None in parts:
                return None
            return parts[0][0] + parts[1][0], parts[0][1] + parts[1][1]
        if op is not None and op.name == "arith.subi" and self.uniform(op.operands[1]):
            left = self.decompose(op.operands[0])
            if left is None:
                return None
            return left[0] + [(-1, op.operands[1])], left[1]
        return None

    def key(self, value):
        """A structural key: equal keys mean equal values at L's body start."""
        if self.defined_outside(value):
            return ("value", value)
        op = _def_op(value)
        if op.name == "lt.dim":
            return ("dim", ir.StringAttr(op.attributes["dim"]).value)
        if op.name == "arith.constant":
            return ("const", str(op.attributes["value"]))
        attrs = tuple(sorted(f"{n}={op.attributes[n]}" for n in op.attributes))  # iterating yields names
        return (op.name, attrs, tuple(self.key(v) for v in op.operands))


def _dim_name(value) -> str:
    return ir.StringAttr(_def_op(value).attributes["dim"]).value


# ------------------------------------------------------------------ cache


@register(
    CACHE,
    Option("loop", int, help="loop whose body reads the tile (L-number)"),
    Option("operand", int, help="function argument to cache (0-based)"),
    Option("order", str, "", help="the local buffer's axes as digits, a permutation of the tile's (10: the tile transposed); default: as they are"),
)
def cache(module_op, loop: int, operand: int, order: str = "") -> str:
    """Copy the tile of an input that a loop's body reads into a local buffer at the start of the body."""
    target = common.find_loop(module_op, loop, CACHE)
    f = _function_of(target)
    args = list(f.regions[0].blocks[0].arguments)
    if not 0 <= operand < len(args):
        raise common.refuse(
            CACHE, f"operand {operand} is not an argument of @{_function_name(f)} (it has {len(args)})", target
        )
    buf = args[operand]
    if not isinstance(buf.type, ir.MemRefType):
        raise common.refuse(CACHE, f"argument {operand} of @{_function_name(f)} is not a memref", target)
    name = value_names(f).get(buf, f"argument {operand}")
    for level in [target] + lt.enclosing_loops(target):
        running = [k for k in SHARED_UNDER if k in lt.annotations(level)]
        if running:
            which = f"L{loop}" if level == target else f"the enclosing {common.loop_label(level)}"
            raise common.refuse(
                CACHE,
                f"{which} is annotated '{running[0]}': its iterations run at the same time and would "
                f"share the local buffer",
                target,
            )

    reads = []
    for user in _walk_ops(target):  # program order, so an error names the first offender
        for i, v in enumerate(user.operands):
            if v != buf:
                continue
            if user.name == "memref.load" and i == 0:
                reads.append(user)
            else:
                how = {"memref.store": "written", "lt.reduce": "reduced into"}.get(user.name, f"used by '{user.name}'")
                raise common.refuse(CACHE, f"{name} is {how} inside L{loop}; only inputs read there can be cached", user)
    if not reads:
        raise common.refuse(CACHE, f"{name} is not read inside L{loop} {common.loop_label(target)}", target)

    an = _Analysis(target)
    rank = ir.MemRefType(buf.type).rank
    # Per operand axis: ((sorted tiled dim names, uniform terms' keys), the
    # first read's uniform terms); every read must agree on the first part.
    axes: list = [None] * rank
    per_read = []  # (read, per axis (uniform terms, tiled lt.dim values))
    for r in reads:
        terms = []
        for axis, index in enumerate(list(r.operands)[1:]):
            parts = an.decompose(index)
            if parts is None:
                raise common.refuse(
                    CACHE,
                    f"index {axis} of a read of {name} is not a sum of lt.dim values and values fixed "
                    f"during one iteration of L{loop}; cannot rebase it",
                    r,
                )
            uniform, tiled = parts
            dims = [_dim_name(v) for v in tiled]
            if len(set(dims)) != len(dims):
                raise common.refuse(CACHE, f"index {axis} of a read of {name} uses dim '{dims[0]}' twice", r)
            signature = (tuple(sorted(dims)), Counter((sign, an.key(v)) for sign, v in uniform))
            if axes[axis] is None:
                axes[axis] = (signature, uniform)
            elif axes[axis][0] != signature:
                raise common.refuse(
                    CACHE, f"reads of {name} inside L{loop} use different indices on axis {axis}", r
                )
            terms.append((uniform, tiled))
        per_read.append((r, terms))
    dim_axis: dict = {}
    for axis, ((dims, _), _) in enumerate(axes):
        for d in dims:
            if d in dim_axis:
                raise common.refuse(CACHE, f"reads of {name} use dim '{d}' on axes {dim_axis[d]} and {axis}", reads[0])
            dim_axis[d] = axis

    # The extent of each tiled dim, and whether its tile has a base.
    enclosing = [target] + lt.enclosing_loops(target)
    extent: dict = {}
    has_base: dict = {}
    for d, axis in dim_axis.items():
        level = next((l for l in enclosing if lt.loop_dim(l) == d), None)
        covered = []
        for r, terms in per_read:
            for v in terms[axis][1]:
                if _dim_name(v) == d:
                    outermost = an.levels_inside(_def_op(v), d)[-1]
                    covered.append((r, lt.inner_loop_extent(outermost)))
        if level is not None:
            extent[d], has_base[d] = lt.inner_extent(level), True
            for r, e in covered:
                if e != extent[d]:
                    raise common.refuse(
                        CACHE,
                        f"the copy level of dim '{d}' would cover {extent[d]} elements but a read's levels "
                        f"cover {e}",
                        r,
                    )
        else:
            extent[d], has_base[d] = max(e for _, e in covered), False
            if len(axes[axis][0][0]) > 1 and any(e != extent[d] for _, e in covered):
                raise common.refuse(
                    CACHE, f"reads of the window of {name} on axis {axis} cover different ranges of dim '{d}'", reads[0]
                )

    # Local buffer: the axes with tiled terms (in ``order``'s order).
    source_axes = [a for a in range(rank) if axes[a][0][0]]
    local_axes = source_axes
    if order.strip():
        perm = [int(x) for x in order.strip()] if order.strip().isdigit() else None
        if perm is None or sorted(perm) != list(range(len(source_axes))):
            raise common.refuse(CACHE, f"order '{order}' is not a permutation of the tile's {len(source_axes)} axes "
                                f"(digits 0..{len(source_axes) - 1}, e.g. 10 for a transposed 2-D tile)", target)
        local_axes = [source_axes[p] for p in perm]
    local_shape = [sum(extent[d] for d in axes[a][0][0]) - (len(axes[a][0][0]) - 1) for a in local_axes]
    local_dims = ["+".join(axes[a][0][0]) for a in local_axes]
    element = ir.MemRefType(buf.type).element_type
    i64 = ir.IntegerType.get_signless(64)

    body = lt.loop_body(target)
    with ir.InsertionPoint.at_block_begin(body), target.location:
        alloc = ir.Operation.create(
            "lt.alloc",
            results=[ir.MemRefType.get(local_shape, element)],
            attributes={
                "dims": ir.ArrayAttr.get([ir.StringAttr.get(d) for d in local_dims]),
                MARKER: ir.IntegerAttr.get(i64, operand),
            },
        )
        local = alloc.results[0]
        bases = {d: new_dim(d) for d in dim_axis if has_base[d]}
        materialized: dict = {}
        uniform_value = {}  # operand axis -> value at L's body start, or None
        for a in range(rank):
            terms = [(sign, _materialize(v, an, materialized)) for sign, v in axes[a][1]]
            uniform_value[a] = _signed_sum(terms)
        axis_base = {}
        for a in local_axes:
            parts = ([uniform_value[a]] if uniform_value[a] is not None else []) + [
                bases[d] for d in axes[a][0][0] if d in bases
            ]
            axis_base[a] = _sum(parts)
        # The copy nest: one level per tiled dim, outer to inner in the source's axis order.
        nest_order = [d for a in source_axes for d in axes[a][0][0]]
        with ExitStack() as nest:
            outer = None
            for d in nest_order:
                loop_op, inner_block = common.new_loop(d, extent[d], 0)
                if outer is None:
                    outer = loop_op
                nest.enter_context(ir.InsertionPoint(inner_block))
            here = {d: new_dim(d) for d in nest_order}
            src = []
            for a in range(rank):
                parts = ([uniform_value[a]] if uniform_value[a] is not None else []) + [here[d] for d in axes[a][0][0]]
                src.append(_sum(parts))
            value = memref.LoadOp(buf, src).result
            dst = []
            for j, a in enumerate(local_axes):
                dst.append(relative_index(src[a], axis_base[a], local_shape[j]) if axis_base[a] is not None else src[a])
            copy = memref.StoreOp(value, local, dst).operation
    last = outer if outer is not None else copy  # the last op of the cache's prologue

    # Rewrite the reads.
    rebased: dict = {}
    for r, _terms in per_read:
        old = list(r.operands)[1:]
        new = []
        for j, a in enumerate(local_axes):
            index = old[a]
            if axis_base[a] is None:
                new.append(index)
                continue
            key = (a, index)
            if key not in rebased:
                d_op = _def_op(index)
                where = d_op if d_op is not None and _inside(d_op, target) else last
                with ir.InsertionPoint.after(where), r.location:
                    rebased[key] = relative_index(index, axis_base[a], local_shape[j])
            new.append(rebased[key])
        with ir.InsertionPoint(r), r.location:
            load = memref.LoadOp(local, new)
        r.results[0].replace_all_uses_with(load.result)
        r.erase()

    n = total = 1
    for size in local_shape:
        n *= size
    for size in ir.MemRefType(buf.type).shape:
        total *= size
    tile = f"tile {'x'.join(map(str, local_shape))} over [{', '.join(local_dims)}]" if local_shape else "one element"
    return (
        f"{name}: {tile} ({n} of {total} elements) copied into a local buffer at the start of "
        f"each iteration of L{loop} {common.loop_label(target)}"
    )


def _sum(values: list):
    return _signed_sum([(1, v) for v in values])


def _signed_sum(terms: list):
    """sum(sign * value) built at the current insertion point; None when empty."""
    if not terms:
        return None
    terms = sorted(terms, key=lambda t: -t[0])  # positive terms first
    sign, total = terms[0]
    if sign < 0:
        total = arith.SubIOp(common.index_constant(0), total).result
    for sign, v in terms[1:]:
        total = (arith.AddIOp if sign > 0 else arith.SubIOp)(total, v).result
    return total


def _materialize(value, an: _Analysis, memo: dict):
    """``value`` (uniform in L) as a value available at L's body start,
    recomputed there when it is defined inside L.  Builds at the current
    insertion point."""
    if an.defined_outside(value):
        return value
    if value in memo:
        return memo[value]
    op = _def_op(value)
    if op.name == "lt.dim":
        result = new_dim(ir.StringAttr(op.attributes["dim"]).value)
    else:
        operands = [_materialize(v, an, memo) for v in op.operands]
        clone = op.clone()
        for i, v in enumerate(operands):
            clone.operands[i] = v
        result = clone.results[0]
    memo[value] = result
    return result


# ---------------------------------------------------------------- uncache


@register(
    UNCACHE,
    Option("loop", int, help="loop whose cache to remove (L-number)"),
    Option("operand", int, default=-1, help="argument whose cache to remove (-1: the first cache in the body)"),
)
def uncache(module_op, loop: int, operand: int = -1) -> str:
    """Remove a cache made by lt-cache at the start of a loop's body; reads use the original buffer again."""
    target = common.find_loop(module_op, loop, UNCACHE)
    body = lt.loop_body(target)
    alloc = None
    for op in lt.body_ops(body):
        if op.name == "lt.alloc" and MARKER in op.attributes:
            if operand < 0 or ir.IntegerAttr(op.attributes[MARKER]).value == operand:
                alloc = op
                break
    if alloc is None:
        which = "cache" if operand < 0 else f"cache of argument {operand}"
        raise common.refuse(UNCACHE, f"L{loop} {common.loop_label(target)} has no {which} (made by lt-cache)", target)
    local = alloc.results[0]

    def changed(why: str, op=None):
        return common.refuse(UNCACHE, f"the cache in L{loop} was changed since lt-cache made it ({why})", op or alloc)

    stores, reads = [], []
    for use in local.uses:
        user = use.owner.operation
        if user.name == "memref.store" and use.operand_number == 1:
            stores.append(user)
        elif user.name == "memref.load" and use.operand_number == 0:
            reads.append(user)
        else:
            raise changed(f"'{user.name}' uses the buffer", user)
    if len(stores) != 1:
        raise changed(f"{len(stores)} stores into the buffer, expected the copy's one")
    store = stores[0]
    copy_load = _def_op(store.operands[0])
    if copy_load is None or copy_load.name != "memref.load":
        raise changed("the copy does not store a load", store)
    source = copy_load.operands[0]
    src = list(copy_load.operands)[1:]
    dst = list(store.operands)[2:]
    # The copy nest: the op in L's body that holds the copy store.
    top = store
    while top.parent is not None and top.parent != target:
        top = top.parent.operation
    if top.parent is None:
        raise changed("the copy is no longer inside the loop", store)
    nest_ops = {op for op in _walk_ops(top)}
    # Local axis j -> (operand axis, base or None).
    mapping = {}
    for j, index in enumerate(dst):
        hits, base = [a for a, s in enumerate(src) if _equivalent(s, index)], None
        matched = match_relative_index(index)
        if not hits and matched is not None:
            hits, base = [a for a, s in enumerate(src) if _equivalent(s, matched[0])], matched[1]
        if len(hits) != 1:
            raise changed(f"local axis {j} of the copy does not name one axis of the source", store)
        mapping[j] = (hits[0], base)
    fixed = {a: s for a, s in enumerate(src) if a not in {m[0] for m in mapping.values()}}
    for a, s in fixed.items():
        d = _def_op(s)
        if d is not None and d in nest_ops:
            raise changed(f"index {a} of the copy depends on the copy nest", copy_load)

    # lt-cache put the alloc, then the index values the copy and the reads
    # use, then the copy nest: the prologue lies between the alloc and the nest.
    prologue, started = [], False
    for op in lt.body_ops(body):
        if op == top:
            break
        if started:
            prologue.append(op)
        started = started or op == alloc
    rewrites = []  # validate every read before changing anything
    for r in reads:
        local_index = list(r.operands)[1:]
        orig = dict(fixed)
        for j, (a, base) in mapping.items():
            if base is None:
                orig[a] = local_index[j]
                continue
            matched = match_relative_index(local_index[j])
            if matched is None or matched[1] != base:
                raise changed(f"index {j} of a read is not relative to the cache's base", r)
            orig[a] = matched[0]
        rewrites.append((r, [orig[a] for a in range(len(src))]))
    # Ops the cache made that may die with it: the prologue and the reads'
    # relative indices (not the original indices inside them).
    candidates = list(prologue)
    for r, indices in rewrites:
        for v in list(r.operands)[1:]:
            for op in relative_index_ops(v):
                if op not in candidates:
                    candidates.append(op)
        with ir.InsertionPoint(r), r.location:
            load = memref.LoadOp(source, indices)
        r.results[0].replace_all_uses_with(load.result)
        r.erase()
    direct = top == store  # no copy loops: the copy's load sits in the prologue
    top.erase()
    if direct:
        candidates.remove(copy_load)
        copy_load.erase()
    alloc.erase()
    _erase_dead(candidates)
    return f"removed the cache of {_source_name(source, target)} from L{loop}"


def _equivalent(a, b) -> bool:
    """``a`` and ``b`` are the same value: the same SSA value, ``lt.dim`` of
    one dim under the same levels of it, equal constants, or one pure index
    op on equivalent operands (another pass, e.g. an lt-uncache inside the
    copy nest, may have rebuilt an index)."""
    if a == b:
        return True
    x, y = _def_op(a), _def_op(b)
    if x is None or y is None or x.name != y.name or not dependence.is_pure_index_op(x):
        return False
    if x.name == "lt.dim":
        d = _dim_name(a)
        if d != _dim_name(b):
            return False
        levels = lambda op: [l for l in lt.enclosing_loops(op) if lt.loop_dim(l) == d]  # noqa: E731
        return levels(x) == levels(y)
    if x.name == "arith.constant":
        return x.attributes["value"] == y.attributes["value"]
    same_attrs = sorted(f"{n}={x.attributes[n]}" for n in x.attributes) == sorted(
        f"{n}={y.attributes[n]}" for n in y.attributes
    )
    xs, ys = list(x.operands), list(y.operands)
    return same_attrs and len(xs) == len(ys) and all(_equivalent(p, q) for p, q in zip(xs, ys))


def _walk_ops(root) -> list:
    out = []
    root.walk(lambda o: (out.append(o.operation), ir.WalkResult.ADVANCE)[1])
    return out


def _erase_dead(candidates: list) -> None:
    """Erase the pure index ops among ``candidates`` that nothing uses, until
    none is left to erase.  Every op is erased from this list only, so none
    is touched after it is gone."""
    candidates = [op for op in candidates if dependence.is_pure_index_op(op)]
    changed = True
    while changed:
        changed = False
        for op in list(candidates):
            if not any(list(r.uses) for r in op.results):
                candidates.remove(op)
                op.erase()
                changed = True


def _source_name(source, loop) -> str:
    f = _function_of(loop)
    return value_names(f).get(source, "the source buffer")
