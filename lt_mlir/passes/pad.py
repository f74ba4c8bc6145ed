"""``lt-pad{loop=L operand=i axis=a every=E by=P}``: lay out the local copy
that ``lt-cache`` made at the start of loop L's body with P unused elements
after every E elements along axis ``a`` (CUDA's shared-memory padding).

Only the layout changes: the buffer keeps its logical shape and every
access its logical index, so results never change.  The pass marks the
``lt.alloc`` ``lt.pad = [a, E, P]`` (the loop tree prints ``pad P every E
<dim>``); the lowering (``lowering/layout.py``) gives the buffer its padded
physical shape and rewrites each access's index:

* ``a`` the last axis: each row grows from ``n`` to ``n + P * ceil(n / E)``
  elements and the last index ``i`` becomes ``i + P * (i / E)``;
* another axis: the buffer becomes one flat run of elements, the row-major
  offset plus ``P * (i_a / E)`` elements.

Why: a GPU warp reading a block-shared tile reads 32 banks of 4 bytes; in
the shared-memory GEMM (``recipes.gpu_tiled_matmul``) the threads of a warp
read B's slice 8 floats apart (each thread's 8 columns of C), so threads 0
and 4 of each quarter-warp hit the same banks.  4 floats after every 32
move every other group of 4 threads by 16 bytes: the reads have no bank
conflicts (measured on an H100 with Nsight Compute: 268 million shared-load
bank conflicts at 4096^3 without, 16 thousand with).

``operand=-1`` (the default) pads the first cache in L's body (the one made
last), otherwise the one of that argument; ``axis=-1`` (the default) is the
last axis.

Refuses (located): no loop L; no such cache in L's body; an axis, ``every``
or ``by`` out of range (``every`` and ``by`` at least 1); a buffer already
padded (``lt-uncache`` and ``lt-cache`` again to start over); a use of the
buffer other than a load or a store (the layout rewrite covers those).
"""

from __future__ import annotations

from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..mlir import ir
from . import common
from .cache import MARKER, _function_of
from .registry import Option, register

NAME = "lt-pad"
ATTR = "lt.pad"


def cache_alloc(loop, operand: int):
    """The ``lt-cache`` buffer of argument ``operand`` (-1: the first) at
    the start of ``loop``'s body, or None."""
    for op in lt.body_ops(lt.loop_body(loop)):
        if op.name == "lt.alloc" and MARKER in op.attributes:
            if operand < 0 or ir.IntegerAttr(op.attributes[MARKER]).value == operand:
                return op
    return None


def padding(alloc) -> tuple[int, int, int] | None:
    """``(axis, every, by)`` of a padded ``lt.alloc``, else None."""
    if ATTR not in alloc.attributes:
        return None
    a = ir.DenseI64ArrayAttr(alloc.attributes[ATTR])
    return a[0], a[1], a[2]


@register(
    NAME,
    Option("loop", int, help="loop whose lt-cache buffer to pad (L-number)"),
    Option("operand", int, default=-1, help="argument whose cache to pad (-1: the first cache in the body)"),
    Option("axis", int, default=-1, help="axis of the buffer along which to pad (-1: the last)"),
    Option("every", int, default=32, help="elements of the axis between paddings"),
    Option("by", int, default=4, help="unused elements each padding inserts"),
)
def pad(module_op, loop: int, operand: int = -1, axis: int = -1, every: int = 32, by: int = 4) -> str:
    """Pad a cache buffer's layout: BY unused elements after every EVERY along AXIS (no bank conflicts)."""
    target = common.find_loop(module_op, loop, NAME)
    label = f"L{loop} {common.loop_label(target)}"
    alloc = cache_alloc(target, operand)
    if alloc is None:
        which = "cache" if operand < 0 else f"cache of argument {operand}"
        raise common.refuse(NAME, f"{label} has no {which} (made by lt-cache)", target)
    t = ir.MemRefType(alloc.results[0].type)
    dims = [ir.StringAttr(d).value for d in ir.ArrayAttr(alloc.attributes["dims"])]
    if not -t.rank <= axis < t.rank:
        raise common.refuse(NAME, f"axis {axis} is out of range: the buffer has {t.rank} {'axis' if t.rank == 1 else 'axes'} ({', '.join(dims)})", alloc)
    axis %= t.rank
    if every < 1 or by < 1:
        raise common.refuse(NAME, f"every ({every}) and by ({by}) must be at least 1", alloc)
    if padding(alloc) is not None:
        a, e, p = padding(alloc)
        raise common.refuse(NAME, f"the buffer is already padded ({p} every {e} along {dims[a]})", alloc)
    for use in alloc.results[0].uses:
        user = use.owner.operation
        if not ((user.name == "memref.load" and use.operand_number == 0) or (user.name == "memref.store" and use.operand_number == 1)):
            raise common.refuse(NAME, f"'{user.name}' uses the buffer: only loads and stores can be laid out padded", user)
    alloc.attributes[ATTR] = ir.DenseI64ArrayAttr.get([axis, every, by])
    n = 1
    for s in t.shape:
        n *= s
    name = value_names(_function_of(target)).get(alloc.results[0], "the buffer")
    return f"{label}: {name} padded by {by} after every {every} along {dims[axis]} ({physical_strides(list(t.shape), axis, every, by)[1]} elements for {n})"


def physical_strides(shape: list, axis: int, every: int, by: int) -> tuple[list, int]:
    """Element strides of a padded buffer's axes and its total size."""
    strides = [1] * len(shape)
    for j in range(len(shape) - 2, -1, -1):
        inner = strides[j + 1] * shape[j + 1]
        if j + 1 == axis:
            inner += by * -(-shape[j + 1] // every)
        strides[j] = inner
    total = strides[0] * shape[0] + (by * -(-shape[0] // every) if axis == 0 else 0)
    return strides, total
