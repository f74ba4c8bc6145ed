"""``lt-unannotate{loop=L name=N}``: take annotation ``lt.N`` off loop L
(``parallel``, ``unroll``, ``vectorize``, ``gpu``, ``prefetch``, ``double_buffer`` or ``min_blocks``) — the way back from
``lt-parallel``, ``lt-unroll``, ``lt-vectorize``, ``lt-gpu-map``, ``lt-prefetch``, ``lt-double-buffer`` and ``lt-min-blocks`` (the RL
environment's ``toggle_thread`` turns threads off with it).

The loop then runs sequentially, rolled or scalar, which never changes the
result.  Taking ``parallel`` off takes its ``schedule`` with it.  Refuses: no loop L; an annotation name that is not one of those;
L does not carry it; taking a GPU mapping off a block loop whose thread
loops would stay mapped (the registry's mapping check says why).
"""

from ..dialect import lt
from .common import find_loop, loop_label, refuse
from .registry import Option, register

NAME = "lt-unannotate"
NAMES = ("parallel", "unroll", "vectorize", "gpu", "prefetch", "double_buffer", "min_blocks")


@register(
    NAME,
    Option("loop", int, help="loop to change (L-number)"),
    Option("name", str, help="annotation to take off: parallel, unroll, vectorize, gpu, prefetch, double_buffer or min_blocks"),
)
def unannotate(module_op, loop: int, name: str) -> None:
    """Take an annotation (parallel, unroll, vectorize, gpu, prefetch, double_buffer, min_blocks) off a loop."""
    target = find_loop(module_op, loop, NAME)
    if name not in NAMES:
        raise refuse(NAME, f"option 'name' must be one of {', '.join(NAMES)}, got '{name}'", target)
    if name not in lt.annotations(target):
        raise refuse(NAME, f"L{loop} {loop_label(target)} is not annotated {name}", target)
    del target.attributes[f"lt.{name}"]
    if name == "parallel" and "lt.schedule" in target.attributes:  # how its iterations were dealt: moot now
        del target.attributes["lt.schedule"]
