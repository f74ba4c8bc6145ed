"""``lt-expand{loop=L}``: give each scratch buffer allocated in L's body an
axis over L's dim and allocate it before L (array expansion, the inverse of
what ``lt-shrink-buffers`` does).

An ``lt.alloc`` in L's body is a new buffer in each iteration of L: nothing
lives across iterations, but the buffer is one value that every part of the
body uses, so ``lt-distribute`` cannot take L apart, nor ``lt-swap`` move L
inward.  Over the dim ``d`` of L (L's rows: indexed with ``lt.dim d`` at each
access, less ``lt.dim d`` before L where L is the inner level of a split),
the buffer holds every iteration's copy side by side; allocated before L,
it is no value of L's body any more::

    for i' in 4 {                         %t = lt.alloc [i, e]
      %t = lt.alloc [e]          becomes  for i' in 4 {
      for e { %t[e] <- 0 }                  for e { %t[i, e] <- 0 }
      ... %t[e] ...                         ... %t[i, e] ... }
    }

Distinct iterations of L touch distinct rows of the buffer, so results never
change; ``lt-shrink-buffers`` sizes it again (to the rows live at once).
``lt-factor`` makes such scratch buffers (the sum of a factored reduction);
expanding them lets the rows of a FlashAttention schedule run inside its
tile loop (``recipes``).

``values=true`` does the same for values: each value computed in one part
of L's body (the parts ``lt-distribute`` cuts it into: each inner loop
alone, the statements between together) and used in another is stored,
right after it is computed, into a new buffer over L's dim and loaded where
the other parts use it, so that L distributes (FlashAttention's
``p = exp(s - m)``, used by the loop adding ``p * V[j, :]`` and by the row's
sum, becomes a tile of exponentials that a loop of its own computes: a
vector loop)::

    for j' { p = exp(..)                  %p = lt.alloc [j]
             for e { O[e] += p * V[j, e] }    becomes    for j' { p = exp(..) ; %p[j] <- p
             S += p }                                 for e { O[e] += %p[j] * V[j, e] }
                                                      S += %p[j] }

Refuses (located, IR untouched) when a level inside L iterates L's dim
too (L is the outer level of a split: ``lt.dim d`` is then another row in
that level than at L's body -- expand the inner level); when L's body allocates no buffer (``lt-cache``
tiles aside: the copy refills them), or with ``values``, has no value that
crosses its parts (one that is not a scalar: never); when a buffer is already over ``d``;
when a buffer's value is used by anything but loads, stores and
``lt.reduce`` (it escapes); when L is annotated vectorize or gpu (its
iterations share one body: lanes and threads have no row of their own to
index).
"""

from __future__ import annotations

from ..analysis.dependence import PRIVATE_MARKERS
from ..dialect import lt
from ..mlir import arith, ir, memref
from .common import ACCESS_FIRST_INDEX, find_loop, loop_label, new_dim, rebuild_access, refuse
from .distribute import crossing_values
from .registry import Option, register

NAME = "lt-expand"


@register(
    NAME,
    Option("loop", int, help="loop whose body's scratch buffers get an axis over its dim (L-number)"),
    Option("values", bool, False, help="expand the values that cross the body's parts instead (scalar expansion)"),
)
def expand(module_op, loop: int, values: bool = False) -> str:
    """Give each lt.alloc in a loop's body an axis over the loop's dim and allocate it before the loop (array expansion)."""
    target = find_loop(module_op, loop, NAME)
    label = f"L{loop} {loop_label(target)}"
    dim = lt.loop_dim(target)
    for name in ("vectorize", "gpu"):
        if name in lt.annotations(target):
            raise refuse(NAME, f"{label} is annotated {name}: its iterations share one body, with no row of a buffer of their own", target)
    if lt.inner_levels(target):
        raise refuse(NAME, f"{label} holds a level of its own dim '{dim}' inside: lt.dim '{dim}' is one row at its body and "
                     "another in that level (expand the inner level)", target)
    outer = any(lt.loop_dim(level) == dim for level in lt.enclosing_loops(target))
    # L the inner level of a split: rows relative to where L starts (``lt.dim`` before it), L's size of them
    extent = lt.loop_size(target) if outer else lt.inner_loop_extent(target)
    if values:
        return _expand_values(target, label, dim, extent, outer)
    allocs = [op for op in lt.body_ops(lt.loop_body(target))
              if op.name == "lt.alloc" and not any(m in op.attributes for m in PRIVATE_MARKERS)]
    if not allocs:
        raise refuse(NAME, f"{label} allocates no scratch buffer in its body", target)
    for alloc in allocs:
        dims = [ir.StringAttr(d).value for d in ir.ArrayAttr(alloc.attributes["dims"])]
        if dim in dims:
            raise refuse(NAME, f"a buffer allocated in {label} is already over dim '{dim}'", alloc)
        for use in alloc.results[0].uses:
            user = use.owner
            user = user.operation if hasattr(user, "operation") else user
            ok = ((user.name == "memref.load" and use.operand_number == 0) or (user.name == "memref.store" and use.operand_number == 1)
                  or (user.name == "lt.reduce" and use.operand_number == 1))
            if not ok:
                raise refuse(NAME, f"a buffer allocated in {label} is used by '{user.name}' (it escapes): cannot give it rows", user)
    base = _base(target, dim) if outer else None
    for alloc in allocs:
        old = alloc.results[0]
        t = ir.MemRefType(old.type)
        dims = [ir.StringAttr.get(dim)] + list(ir.ArrayAttr(alloc.attributes["dims"]))
        with ir.InsertionPoint(target), alloc.location:
            attrs = {name: alloc.attributes[name] for name in alloc.attributes if name != "dims"}
            attrs["dims"] = ir.ArrayAttr.get(dims)
            new = ir.Operation.create("lt.alloc", results=[ir.MemRefType.get([extent] + list(t.shape), t.element_type)],
                                      attributes=attrs).results[0]
        for use in list(old.uses):
            user = use.owner
            user = user.operation if hasattr(user, "operation") else user
            with ir.InsertionPoint(user), user.location:
                row = _row(dim, base)
            rebuild_access(user, new, [row, *list(user.operands)[ACCESS_FIRST_INDEX[user.name]:]])
        alloc.erase()
    return f"{len(allocs)} buffer(s) of {label} expanded over dim '{dim}' ({extent} rows) and allocated before it"


_SCALARS = (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type, ir.IntegerType)


def _base(target, dim: str) -> ir.Value:
    """``lt.dim dim`` right before ``target``: the row where it starts."""
    with ir.InsertionPoint(target), target.location:
        return new_dim(dim)


def _row(dim: str, base) -> ir.Value:
    """At the insertion point, the row of ``dim`` (relative to ``base``, if any)."""
    row = new_dim(dim)
    return row if base is None else arith.SubIOp(row, base).result


def _expand_values(target, label: str, dim: str, extent: int, outer: bool) -> str:
    """``values=true``: each value that crosses the parts of ``target``'s body
    through a buffer over ``dim``."""
    crossing = crossing_values(target)
    for v, op, _users in crossing:
        if not isinstance(v.type, _SCALARS):
            raise refuse(NAME, f"a value of type {v.type} crosses the parts of {label}: only scalars go through a buffer", op)
    if not crossing:
        raise refuse(NAME, f"no value crosses the parts of {label} (nothing to expand)", target)
    base = _base(target, dim) if outer else None
    for v, _op, users in crossing:
        with ir.InsertionPoint(target), target.location:
            buf = ir.Operation.create("lt.alloc", results=[ir.MemRefType.get([extent], v.type)],
                                      attributes={"dims": ir.ArrayAttr.get([ir.StringAttr.get(dim)])}).results[0]
        definer = v.owner.operation if hasattr(v.owner, "operation") else v.owner
        with ir.InsertionPoint.after(definer), definer.location:
            memref.StoreOp(v, buf, [_row(dim, base)])
        for user in users:
            with ir.InsertionPoint(user), user.location:
                loaded = memref.LoadOp(buf, [_row(dim, base)]).result
            for i, operand in enumerate(user.operands):
                if operand == v:
                    user.operands[i] = loaded
    return f"{len(crossing)} value(s) crossing the parts of {label} stored into buffers over dim '{dim}' ({extent} elements)"
