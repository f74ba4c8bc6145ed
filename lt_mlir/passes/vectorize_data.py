"""``lt-vectorize-data{loop=K width=W}``: run a loop whose bounds are known
only at run time (a CSR row's stored positions, ``range(indptr[i],
indptr[i + 1])``) W iterations at a time.

Such a loop is an ``scf.for`` inside the lt loops, not an ``lt.loop``: it has
no L-number, and ``K`` counts these loops alone, in the order the loop tree
prints them (``for v3 in lo .. hi (bounds known at run time)`` is loop 0
when it is the first).  The pass sets ``lt.vectorize = W`` on it;
``lower-lt-to-scf`` runs its whole groups of W from its lower bound as vector
code, unmasked, then the rest (fewer than W iterations: a row's last, partial
group) as the scalar loop.  A reduction into one location accumulates in a
vector across the groups and is reduced once after them, like a vectorized
``lt.loop``'s (``lowering/vectorize.py``), and the rest adds to it; that
reassociates it, as vectorizing any reduction does.

Refuses: no such loop K; W < 2; a loop that carries values, of a step other
than 1, or holding another loop; a body that writes memory not contiguous
along the loop (a scatter through an index from the data) or a buffer it
also accesses at other elements (``analysis/vector_plan.plan_data_loop``).
"""

from __future__ import annotations

from ..analysis.vector_plan import plan_data_loop
from ..mlir import ir
from .common import refuse
from .registry import Option, register

NAME = "lt-vectorize-data"


def data_loops(module_op) -> list:
    """The ``scf.for`` loops of the module (bounds known at run time), in
    the order the loop tree prints them."""
    loops: list = []
    module_op.walk(lambda o: (loops.append(o) if o.name == "scf.for" else None, ir.WalkResult.ADVANCE)[1])
    return loops


def find_data_loop(module_op, loop: int, pass_name: str):
    """Loop ``loop`` among the module's loops of bounds known at run time
    (``data_loops``), or a refusal naming the ones there are."""
    loops = data_loops(module_op)
    if not 0 <= loop < len(loops):
        have = "none" if not loops else f"0..{len(loops) - 1}"
        raise refuse(pass_name, f"no loop {loop} of bounds known at run time (the module has {have})")
    return loops[loop]


@register(
    NAME,
    Option("loop", int, help="the loop of bounds known at run time to vectorize, counted among those loops"),
    Option("width", int, 8, "lanes per vector"),
)
def vectorize_data(module_op, loop: int, width: int = 8) -> None:
    """Vectorize a loop whose bounds are known at run time, in groups of `width` and a scalar rest."""
    target = find_data_loop(module_op, loop, NAME)
    if width < 2:
        raise refuse(NAME, f"width must be at least 2, got {width}", target)
    problem = plan_data_loop(target)
    if problem is not None:
        raise refuse(NAME, f"cannot vectorize loop {loop} of bounds known at run time: {problem}", problem.op or target)
    target.attributes["lt.vectorize"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), width)
