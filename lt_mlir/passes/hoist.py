"""``lt-hoist{loop=L}``: compute an expression that does not change across
L once, before L, into a scratch buffer (ReACT's "loop-invariant
redundancy" of type 2).

ReACT's example, ``A = (B + E) * (C @ D)`` maximally fused, computes
``B[i, j] + E[i, j]`` in every iteration of k although it does not depend
on k::

    for i { for k { for j { A[i,j] += (B[i,j] + E[i,j]) * (C[i,k] * D[k,j]) } } }

With L the loop over k it becomes::

    for i { T = lt.alloc [j]
            for j { T[j] <- B[i,j] + E[i,j] }
            for k { for j { A[i,j] += T[j] * (C[i,k] * D[k,j]) } } }

The expression hoisted is the first (program order) *frontier* op inside
L (at any depth under ``lt.loop``\\ s nested in L): an ``arith``/``math`` op
with one result, other than a constant, whose value is not an index or an
``i1``, that is invariant in L while at least one of its users is not (an
op that is not ``arith``/``math`` arithmetic, a store or a reduce for
instance, counts as a user that is not).  A lone load is never hoisted
(no gain).  *Invariant in L* is ``lt-factor``'s rule (its ``_Invariance``),
except that an ``lt.dim`` inside L is invariant unless it is of L's own
dim: values defined outside L, constants, ``lt.dim``\\ s of other dims,
loads of buffers that nothing inside L writes or reduces into (indices by
the same rule), and ``arith``/``math`` arithmetic on those.  Iteration
numbers (block arguments) of loops inside L are not.

D is the dims of the ``lt.loop``\\ s inside L around the expression whose
``lt.dim`` the expression reads, ordered as those loops, outer to inner.
Right before L a new nest of one level per dim of D (copying the level's
dim, size and tail, no annotations) computes the expression (its ops
cloned, index computations first) and stores it into ``T = lt.alloc``
with ``dims = D``; T's shape is each dim's full logical extent (that of
its outermost level around the expression, also when levels outside L
iterate it: ``lt.dim`` is the full logical index, and ``lt-shrink-buffers``
can shrink T).  Inside L the frontier value is replaced by
``memref.load T[lt.dim d for d in D]`` (the expression's own ``lt.dim``
ops are reused), and the ops of the expression left without uses are
erased.  With D empty, T is rank 0 and the statements go right before L.

Refuses (with the location of the offending op, IR untouched) when L is
annotated parallel or gpu (the new nest would run outside that mapping);
when no expression in L qualifies (the message says whether everything
depends on L's dim or only loads are invariant); when a dim of D is
iterated by several levels inside L around the expression (split there),
or is read by an ``lt.dim`` outside its level inside L; when the frontier
op is under an ``scf.if`` or ``scf.for`` inside L (computed
unconditionally before L, a load could leave the bounds the condition kept
it in).  A GPU mapping broken by the new statements beside L (L directly
in a thread loop's body) is refused by the registry's check, which
restores the module.

Exactness: the hoisted ops compute the same values from the same inputs
(nothing inside L writes what they read, and nothing runs between the new
nest and L), so results are bit-identical.
"""

from __future__ import annotations

from ..analysis.dependence import inside
from ..dialect import lt
from ..mlir import ir, memref
from .common import condition_between, find_loop, loop_label, new_loop, refuse, walk_ops
from .factor import _def_op, _erase_dead, _index_first, _Invariance
from .registry import Option, register

NAME = "lt-hoist"


@register(NAME, Option("loop", int, help="loop the expression is invariant in (L-number)"))
def hoist(module_op, loop: int) -> None:
    """Compute an expression invariant in a loop once before it, into a scratch buffer."""
    target = find_loop(module_op, loop, NAME)
    _Plan(target, loop).rewrite()


class _HoistInvariance(_Invariance):
    """``lt-factor``'s invariance, with ``lt.dim``\\ s of dims iterated
    inside L allowed (they become the scratch buffer's dims)."""

    def _why_not(self, value) -> str | None:
        op = _def_op(value)
        if op is not None and op.name == "lt.dim" and inside(op, self.loop):
            dim = ir.StringAttr(op.attributes["dim"]).value
            return f"dim '{dim}'" if dim == lt.loop_dim(self.loop) else None
        return super()._why_not(value)


def _is_arithmetic(op) -> bool:
    return (op.name.startswith("arith.") or op.name.startswith("math.")) and not op.regions


def _levels_inside(op, loop) -> list:
    """The lt.loops between ``op`` and ``loop`` (exclusive), innermost first."""
    out = []
    for level in lt.enclosing_loops(op):
        if level == loop:
            break
        out.append(level)
    return out


class _Plan:
    """Everything ``rewrite`` needs, checked before anything changes."""

    def __init__(self, loop, number: int):
        self.loop = loop
        label = f"L{number} {loop_label(loop)}"
        mapped = [a for a in ("parallel", "gpu") if a in lt.annotations(loop)]
        if mapped:
            raise refuse(
                NAME,
                f"{label} is annotated {mapped[0]}: the hoisted nest would run before it, outside that mapping "
                "(hoist before annotating)",
                loop,
            )
        inv = self.inv = _HoistInvariance(loop)
        self.frontier = self._find_frontier(label)
        guard = condition_between(self.frontier, loop)
        if guard is not None:
            raise refuse(
                NAME,
                f"the invariant expression is computed under a condition ('{guard.name}') inside {label}: computed "
                "before the loop it would be computed where the program might not (out of bounds)",
                self.frontier,
            )
        self.slice = inv.slice([self.frontier.results[0]])
        around = _levels_inside(self.frontier, loop)
        used = {}  # dim -> the expression's first lt.dim op of it iterated inside L
        for op in self.slice:
            if op.name != "lt.dim":
                continue
            dim = ir.StringAttr(op.attributes["dim"]).value
            mine = [l for l in _levels_inside(op, loop) if lt.loop_dim(l) == dim]
            theirs = [l for l in around if lt.loop_dim(l) == dim]
            if not theirs:
                continue
            if len(theirs) > 1:
                raise refuse(
                    NAME,
                    f"dim '{dim}' is split into {len(theirs)} levels inside {label} around the invariant expression: "
                    "the scratch buffer needs one level per dim (hoist before splitting)",
                    self.frontier,
                )
            if not mine:
                raise refuse(
                    NAME, f"the invariant expression reads dim '{dim}' outside its loop inside {label}", op
                )
            used.setdefault(dim, op)
        self.levels = [l for l in reversed(around) if lt.loop_dim(l) in used]  # outer to inner
        self.dim_ops = [used[lt.loop_dim(l)] for l in self.levels]
        everywhere = lt.enclosing_loops(self.frontier)
        self.shape = []
        for level in self.levels:
            outermost = [l for l in everywhere if lt.loop_dim(l) == lt.loop_dim(level)][-1]
            self.shape.append(lt.inner_loop_extent(outermost))

    def _find_frontier(self, label: str):
        inv, loop = self.inv, self.loop
        ops = [op for op in walk_ops(loop) if op != loop]

        def variant_user(use) -> bool:
            user = use.owner
            user = getattr(user, "operation", user)
            return not (_is_arithmetic(user) and len(user.results) == 1 and inv.why_not(user.results[0]) is None)

        first_why = None
        invariant_loads = []
        for op in ops:
            if op.name == "memref.load" and inv.why_not(op.results[0]) is None:
                invariant_loads.append(op)
            if not _is_arithmetic(op) or op.name == "arith.constant" or len(op.results) != 1:
                continue
            t = op.results[0].type
            if isinstance(t, ir.IndexType) or (isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1):
                continue
            why = inv.why_not(op.results[0])
            if why is not None:
                first_why = first_why or (op, why)
                continue
            if any(variant_user(u) for u in op.results[0].uses):
                return op
        if invariant_loads:
            raise refuse(
                NAME,
                f"only loads are invariant in {label}: a lone load is no gain, and every arithmetic op depends on "
                f"{first_why[1] if first_why else 'nothing hoistable'}",
                invariant_loads[0],
            )
        if first_why is not None:
            raise refuse(
                NAME,
                f"no expression in {label} is invariant: '{first_why[0].name}' depends on {first_why[1]}",
                first_why[0],
            )
        raise refuse(NAME, f"{label} holds no arithmetic to hoist", loop)

    # ---------------------------------------------------------- rewrite

    def rewrite(self) -> None:
        loop, frontier = self.loop, self.frontier
        value = frontier.results[0]
        loc = frontier.location
        with ir.InsertionPoint(loop), loc:
            scratch = ir.Operation.create(
                "lt.alloc",
                results=[ir.MemRefType.get(self.shape, value.type)],
                attributes={"dims": ir.ArrayAttr.get([ir.StringAttr.get(lt.loop_dim(l)) for l in self.levels])},
            ).results[0]
        point = ir.InsertionPoint(loop)
        for level in self.levels:
            with point, level.location:
                _, block = new_loop(lt.loop_dim(level), lt.loop_size(level), lt.loop_tail(level))
            point = ir.InsertionPoint(block)
        mapping: dict = {}
        with point, loc:
            for op in _index_first(self.slice):
                clone = op.clone()
                for i, v in enumerate(clone.operands):
                    if v in mapping:
                        clone.operands[i] = mapping[v]
                for old, new in zip(op.results, clone.results):
                    mapping[old] = new
            memref.StoreOp(mapping[value], scratch, [mapping[d.results[0]] for d in self.dim_ops])
        with ir.InsertionPoint(frontier), loc:
            load = memref.LoadOp(scratch, [d.results[0] for d in self.dim_ops]).result
        value.replace_all_uses_with(load)
        _erase_dead(value, loop)
