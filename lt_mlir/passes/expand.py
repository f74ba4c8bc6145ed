"""``lt-expand{loop=L}``: give each scratch buffer allocated in L's body an
axis over L's dim and allocate it before L (array expansion, the inverse of
what ``lt-shrink-buffers`` does).

An ``lt.alloc`` in L's body is a new buffer in each iteration of L: nothing
lives across iterations, but the buffer is one value that every part of the
body uses, so ``lt-distribute`` cannot take L apart, nor ``lt-swap`` move L
inward.  Over the dim ``d`` of L at its full logical size (the extent of the
outermost level over ``d`` around L), indexed with ``lt.dim d`` at each
access, the buffer holds every iteration's copy side by side; allocated
before L, it is no value of L's body any more::

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

Refuses (located, IR untouched) when L's body allocates no buffer (``lt-cache``
tiles aside: the copy refills them); when a buffer is already over ``d``;
when a buffer's value is used by anything but loads, stores and
``lt.reduce`` (it escapes); when L is annotated vectorize or gpu (its
iterations share one body: lanes and threads have no row of their own to
index).
"""

from __future__ import annotations

from ..analysis.dependence import PRIVATE_MARKERS
from ..dialect import lt
from ..mlir import ir
from .common import ACCESS_FIRST_INDEX, find_loop, loop_label, new_dim, rebuild_access, refuse
from .registry import Option, register

NAME = "lt-expand"


@register(NAME, Option("loop", int, help="loop whose body's scratch buffers get an axis over its dim (L-number)"))
def expand(module_op, loop: int) -> str:
    """Give each lt.alloc in a loop's body an axis over the loop's dim and allocate it before the loop (array expansion)."""
    target = find_loop(module_op, loop, NAME)
    label = f"L{loop} {loop_label(target)}"
    dim = lt.loop_dim(target)
    for name in ("vectorize", "gpu"):
        if name in lt.annotations(target):
            raise refuse(NAME, f"{label} is annotated {name}: its iterations share one body, with no row of a buffer of their own", target)
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
    outermost = target
    for level in lt.enclosing_loops(target):
        if lt.loop_dim(level) == dim:
            outermost = level
    extent = lt.inner_loop_extent(outermost)
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
                row = new_dim(dim)
            rebuild_access(user, new, [row, *list(user.operands)[ACCESS_FIRST_INDEX[user.name]:]])
        alloc.erase()
    return f"{len(allocs)} buffer(s) of {label} expanded over dim '{dim}' ({extent} rows) and allocated before it"
