"""``lt-min-blocks{loop=L blocks=N}``: annotate kernel root L (a block
loop with no mapped loop around it) ``lt.min_blocks = N``: the kernel asks
the GPU's assembler to fit N of its blocks on a multiprocessor at once
(CUDA's ``__launch_bounds__(threads, N)``, PTX ``.minnctapersm N``), which
caps its registers at 65536 / (N x threads a block); past the cap the
assembler spills to local memory (``ptxas -v`` says how much).

Why: a double-buffered GEMM (``lt-double-buffer``) holds the next
k-slice's addresses beside its register tile; at 173 registers a thread
one block of 256 threads fits an SM, at 128 two do.  Results never change;
on the CPU and ``cuda-emulated`` it changes nothing.

Refuses (located): no loop L; L not mapped to blocks or inside another
mapped loop (not a kernel's root); N below 1.
"""

from __future__ import annotations

from ..analysis import gpu_mapping
from ..dialect import lt
from ..mlir import ir
from . import common
from .registry import Option, register

NAME = "lt-min-blocks"
ATTR = "lt.min_blocks"


@register(
    NAME,
    Option("loop", int, help="the kernel's outermost block loop (L-number)"),
    Option("blocks", int, default=2, help="blocks of the kernel a multiprocessor should hold at once"),
)
def min_blocks(module_op, loop: int, blocks: int = 2) -> str:
    """Ask the assembler to fit BLOCKS blocks of the kernel rooted at L on an SM (registers capped)."""
    target = common.find_loop(module_op, loop, NAME)
    label = f"L{loop} {common.loop_label(target)}"
    if gpu_mapping.mapping(target) != "block" or any(gpu_mapping.mapping(l) for l in lt.enclosing_loops(target)):
        raise common.refuse(NAME, f"{label} is not a kernel's outermost block loop (map it to blocks first: lt-gpu-map)", target)
    if blocks < 1:
        raise common.refuse(NAME, f"blocks must be at least 1, got {blocks}", target)
    target.attributes[ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), blocks)
    return f"{label}: the kernel asks for {blocks} blocks a multiprocessor (registers capped at 65536 / ({blocks} x threads a block))"
