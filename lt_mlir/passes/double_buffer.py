"""``lt-double-buffer{loop=L}``: annotate loop L ``lt.double_buffer``: on
the GPU, the copies of iteration i + 1's tiles into block-shared memory
overlap iteration i's compute (software pipelining of a k-slice loop, as
CUTLASS and Triton's ``num_stages=2`` do).

L's body must start with the copy nests of its ``lt-cache`` buffers (each
writes one of them and reads none) followed by what reads them.  The GPU
lowering, for L a block-level sequential loop (in a kernel, inside its
block loops, around thread loops), gives each of those buffers two stages
and runs::

    copy tiles of iteration 0 into stage 0
    for i in 0 .. n - 1
      if i + 1 < n: copy tiles of iteration i + 1 into stage (i + 1) % 2   (cp.async)
      wait for this thread's copies of iteration i; barrier
      the rest of the body, reading stage i % 2
      barrier

On CUDA each copied element is a ``cp.async`` (``nvgpu.device_async_copy``
to ``cp.async.ca.shared.global``): the loads of the next tiles are in
flight while the threads compute, with no registers held for them.  The
shared memory doubles (the block's total must stay within 48 KiB).  The
emulated GPU (``cuda-emulated``) runs the same pipeline with plain copies;
the CPU lowering ignores the annotation, and so does the GPU lowering
where L is not a block-level sequential loop (a loop of a one-thread
kernel, or inside a thread loop: its tiles are a thread's own).  Results
never change.

Refuses (located): no loop L; L mapped, parallel, vectorized, unrolled or
already double-buffered; L with a tail iteration (the last slice's clipped
copy would have to be issued inside the full iterations: make the slices
divide the dim) or a single iteration (nothing to overlap); no
``lt-cache`` buffer in L's body; a statement before the last copy nest that
is not a copy nest, or a statement after them that writes a cache buffer.
"""

from __future__ import annotations

from ..analysis.dependence import accesses, is_pure_index_op
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..errors import format_location
from ..mlir import ir
from . import common
from .cache import MARKER, _function_of
from .registry import Option, register

NAME = "lt-double-buffer"
ATTR = "lt.double_buffer"


def stages(loop):
    """``(copies, buffers)`` of a double-bufferable loop body: the copy
    nests at its start and the ``lt-cache`` buffers they fill; or a reason
    string."""
    body = lt.loop_body(loop)
    buffers = [op.results[0] for op in lt.body_ops(body) if op.name == "lt.alloc" and MARKER in op.attributes]
    if not buffers:
        return "its body has no lt-cache buffer to fill ahead"
    statements = [op for op in lt.body_ops(body) if not is_pure_index_op(op) and op.name not in ("lt.alloc", "lt.dim")]
    copies = []
    for op in statements:
        touched = accesses(op)
        writes = {a.buffer for a in touched if a.kind != "read"}
        reads = {a.buffer for a in touched if a.kind == "read"}
        if not writes or not writes <= set(buffers) or reads & set(buffers):
            break
        copies.append(op)
    if not copies:
        return "its body does not start with the copy nest of an lt-cache buffer"
    for op in statements[len(copies):]:
        if any(a.kind != "read" and a.buffer in buffers for a in accesses(op)):
            return f"a statement after the copies writes a cache buffer (at {format_location(op.location)})"
    return copies, buffers


@register(NAME, Option("loop", int, help="loop whose next iteration's tile copies overlap this iteration (L-number)"))
def double_buffer(module_op, loop: int) -> str:
    """Copy the next iteration's cache tiles while this one computes (two buffers; cp.async on the GPU)."""
    target = common.find_loop(module_op, loop, NAME)
    label = f"L{loop} {common.loop_label(target)}"
    notes = lt.annotations(target)
    for kind in ("gpu", "parallel", "vectorize", "unroll", "double_buffer"):
        if kind in notes:
            raise common.refuse(NAME, f"{label} is annotated '{kind}': double buffering pipelines a sequential loop", target)
    if lt.loop_tail(target):
        raise common.refuse(NAME, f"{label} has a tail iteration: make its iterations divide the dim (the last slice's copy cannot be clipped ahead)", target)
    if lt.loop_size(target) < 2:
        raise common.refuse(NAME, f"{label} runs once: nothing to overlap", target)
    found = stages(target)
    if isinstance(found, str):
        raise common.refuse(NAME, f"{label}: {found}", target)
    _, buffers = found
    target.attributes[ATTR] = ir.UnitAttr.get()
    names = value_names(_function_of(target))
    what = ", ".join(names.get(b, "a buffer") for b in buffers)
    return f"{label}: the copies into {what} for iteration i + 1 overlap iteration i (two stages each)"
