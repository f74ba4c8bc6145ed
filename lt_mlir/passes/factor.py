"""``lt-factor{loop=L}``: take a factor that does not change across a
reduction out of it (the distributive law; ReACT's "reduction redundancy"
of type 1, ``c = b * sum(A, axis=1)``).

L is a loop holding an ``lt.reduce`` of kind ``add`` whose value is a
product (``arith.mulf`` / ``arith.muli``, in either operand order or a chain
of them such as ``a * (x * c)``) in which some factors are *invariant in
L*: the same in every iteration of L and of every loop inside L.  The
reduction then sums only the other factors into a fresh rank-0 scratch
buffer, and one reduction after L multiplies the sum by the invariant
factors::

    for k { acc[..] += a * x }     becomes     s = lt.alloc [] ; s[] <- 0
                                               for k { s[] += x }
                                               acc[..] += a * s[]

A quotient ``x / s`` by a float ``s`` invariant in L counts as the product
``x * (1/s)``: the sum after L is divided by ``s`` (``Σ P[j] / s`` becomes
``(Σ P[j]) / s``: softmax's normalisation taken out of ``@ V``).  Where the
accumulator's location moves along a dim that only loops inside L iterate
(``O[i, e]`` under a loop over e inside the loop over j), the scratch has
that dim (``lt.alloc`` over ``[e]``): a nest repeating those levels zeroes
it before L, and another after L reduces each element into the
accumulator::

    for j { q = P[j] / s                 becomes     t = lt.alloc [e] ; for e { t[e] <- 0 }
            for e { O[e] += q * V[j, e] } }          for j { for e { t[e] += P[j] * V[j, e] } }
                                                     for e { O[e] += t[e] / s }

The scratch (``lt.alloc`` with ``dims = []``, or over those dims) and its initialisation are
placed right before L (the zero constant at the start of L's block, so
that constants and index computations precede the statements around
them, as the GPU lowering's thread-0 statements need), the final reduction
right after it, in L's block (cloned index computations first): a
loop around L makes a new scratch in each of its iterations (the lowering
gives each iteration of a parallel loop around L its own).  The invariant
factors are computed again after L (their index computations and loads are
cloned there); what the old product needed and nothing else uses is
erased.  Several invariant factors are multiplied in their order, as are
several variant ones.

A value is invariant in L when it is defined outside L, or is a constant,
an ``lt.dim`` of a dim that no level from the op out to L (inclusive)
iterates, a load whose buffer and indices are invariant from a buffer
nothing inside L writes, or ``arith``/``math`` arithmetic on invariant
values.  Iteration numbers of L and of loops inside it are not.

When L holds several reduces of products the first (program order) that
qualifies is factored.  Refuses (with the location of the offending op, IR
untouched) when no ``lt.reduce`` under L sums a product; when the reduce's
kind is not ``add`` (multiplication does not distribute over ``max``/``min``
unless the factor is non-negative, which the pass cannot know, and a
product of products is a power); when the accumulator's location changes
across L's iterations through L's dim, a dim that loops both around and
inside L iterate, an index that is not a plain ``lt.dim``, or one read
above an inner level of its dim; when no factor is invariant (the message says what
each depends on) or every factor is (nothing would be left to sum); when
an invariant factor is computed under an ``scf.if`` or run-time
``scf.for`` inside L (computed unconditionally after L, a load could leave
the bounds the condition kept it in); when another op inside L reads,
writes or reduces into the accumulator buffer (the partial sum would be
observed or split); when the element type is a float and the function's ``lt.fastmath`` does not allow reassociation
(``fast``, or a flag list with ``reassoc``): ``a * (x1 + x2)`` rounds
differently from ``a*x1 + a*x2``.

Annotations stay where they are and need no refusal of their own: the
scratch is shared by L's iterations exactly as the accumulator was, so a
parallel, vectorized or GPU-mapped L (or loop inside L) reduces into it as
it reduced into the accumulator (per-thread partials or atomics, a vector
reduction, block-shared memory with atomics and barriers), and a loop
around L allocates one scratch per iteration.  Where the new statements
beside L break a GPU mapping rule (L directly in a thread loop's body),
the registry's check refuses the result and restores the module.

A note on exactness beyond rounding: with reassociation allowed the
rewrite assumes what ``fast`` assumes; e.g. ``a * s`` with ``a`` infinite
and an empty sum (a reduce under a condition that never holds) is NaN where
the original left the accumulator alone.  Integer sums (wrapping
arithmetic) are exact.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..analysis.dependence import accesses, inside
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..errors import PassError
from ..mlir import arith, ir, memref
from .common import FLOAT_TYPES, condition_between, find_loop, function_of, loop_label, new_dim, new_loop, refuse, walk_ops
from .registry import Option, register

NAME = "lt-factor"

_NOT_DISTRIBUTIVE = {
    "max": "a * max(x) is max(a * x) only for a >= 0, which the pass cannot know",
    "min": "a * min(x) is min(a * x) only for a >= 0, which the pass cannot know",
    "mul": "the product of a * x over the loop is a power of a times the product of x",
}


@register(NAME, Option("loop", int, help="loop the reduction runs over (L-number)"))
def factor(module_op, loop: int) -> None:
    """Factor a product's loop-invariant factor out of an add reduction (a * sum(x))."""
    target = find_loop(module_op, loop, NAME)
    candidates = [op for op in walk_ops(target) if op.name == "lt.reduce" and _product_op(op.operands[0]) is not None]
    if not candidates:
        raise refuse(NAME, f"L{loop} {loop_label(target)} holds no lt.reduce of a product", target)
    first_error: PassError | None = None
    for reduce in candidates:
        try:
            plan = _Plan(target, loop, reduce)
        except PassError as e:
            first_error = first_error or e
            continue
        plan.rewrite()
        return
    raise first_error


# ----------------------------------------------------------------- analysis


def _def_op(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _is_float(t) -> bool:
    return isinstance(t, FLOAT_TYPES)


def _product_op(value):
    op = _def_op(value)
    if op is not None and op.name in ("arith.mulf", "arith.muli"):
        return op
    return None


def reassociation_allowed(f) -> bool:
    """Whether function ``f``'s ``lt.fastmath`` lets float sums reassociate."""
    if f is None or "lt.fastmath" not in f.attributes:
        return False
    mode = ir.StringAttr(f.attributes["lt.fastmath"]).value.strip()
    return mode == "fast" or "reassoc" in [x.strip() for x in mode.split(",")]


class _Invariance:
    """Which values are the same in every iteration of ``loop`` and of the
    loops inside it (see the module docstring), and why not."""

    def __init__(self, loop):
        self.loop = loop
        self._memo: dict = {}
        self._written = {a.buffer for a in accesses(loop) if a.kind != "read"}

    def why_not(self, value) -> str | None:
        """None when ``value`` is invariant, else what it depends on."""
        if value in self._memo:
            return self._memo[value]
        self._memo[value] = None  # SSA has no cycles; this only stops a revisit
        why = self._why_not(value)
        self._memo[value] = why
        return why

    def _why_not(self, value) -> str | None:
        owner = value.owner
        if isinstance(owner, ir.Block):
            holder = owner.owner
            if holder is not None and inside(holder.operation, self.loop):
                if holder.operation.name == "lt.loop":
                    return f"the iteration number of {loop_label(holder.operation)}"
                return f"a block argument of '{holder.operation.name}'"
            return None
        op = owner.operation
        if not inside(op, self.loop):
            return None
        name = op.name
        if name == "arith.constant":
            return None
        if name == "lt.dim":
            dim = ir.StringAttr(op.attributes["dim"]).value
            for level in lt.enclosing_loops(op):
                if lt.loop_dim(level) == dim:
                    return f"dim '{dim}'"
                if level == self.loop:
                    break
            return None
        if name == "memref.load":
            operands = list(op.operands)
            if operands[0] in self._written:
                return "a buffer written inside the loop"
            return next((w for w in map(self.why_not, operands) if w), None)
        if (name.startswith("arith.") or name.startswith("math.")) and len(op.regions) == 0:
            return next((w for w in map(self.why_not, op.operands) if w), None)
        return f"'{name}'"

    def slice(self, values) -> list:
        """The ops inside the loop that compute the (invariant) ``values``,
        operands first."""
        out: list = []
        seen: set = set()

        def visit(v):
            op = _def_op(v)
            if op is None or not inside(op, self.loop) or op in seen:
                return
            seen.add(op)
            for x in op.operands:
                visit(x)
            out.append(op)

        for v in values:
            visit(v)
        return out


class _Plan:
    """Everything ``rewrite`` needs, checked before anything changes."""

    def __init__(self, loop, number: int, reduce):
        self.loop, self.reduce = loop, reduce
        label = f"L{number} {loop_label(loop)}"
        kind = ir.StringAttr(reduce.attributes["kind"]).value
        operands = list(reduce.operands)
        value, self.acc, self.indices = operands[0], operands[1], operands[2:]
        self.element = value.type
        self.mul = "arith.mulf" if _is_float(self.element) else "arith.muli"
        self._names = None
        if kind != "add":
            raise refuse(
                NAME,
                f"the reduction into {self.name(self.acc) or 'the buffer'} is '{kind}': multiplication does not distribute over {kind} "
                f"({_NOT_DISTRIBUTIVE[kind]})",
                reduce,
            )
        inv = self.inv = _Invariance(loop)
        self.inner: list = []  # (axis, dim): the location's axes that a loop inside L moves along
        for k, v in enumerate([self.acc] + self.indices):
            why = inv.why_not(v)
            if why and k > 0 and _inner_dim(v, loop, reduce) is not None:
                self.inner.append((k - 1, _inner_dim(v, loop, reduce)))
            elif why:
                raise refuse(
                    NAME,
                    f"the location the reduction updates in {self.name(self.acc) or 'the buffer'} changes across the iterations of "
                    f"{label} (it depends on {why}): the reduction is not over this loop",
                    reduce,
                )
        leaves = self._leaves(value)
        self.divisors = [v for v, how in leaves if how == "div"]
        self.fixed = [v for v, how in leaves if how == "mul" and inv.why_not(v) is None]
        self.varying = [v for v, how in leaves if how == "mul" and inv.why_not(v) is not None]
        if len({d for _, d in self.inner}) != len(self.inner):
            raise refuse(NAME, f"the location the reduction updates moves along one dim on two axes inside {label}: "
                         "no scratch over distinct dims fits", reduce)
        self.levels = _levels(reduce, loop, {d for _, d in self.inner})
        if self.inner and self.levels is None:
            raise refuse(NAME, f"the location the reduction updates moves along a dim that the loops inside {label} split around "
                         "its index: no scratch shape fits", reduce)
        if not self.fixed and not self.divisors:
            parts = "; ".join(f"{self._describe(v)} depends on {inv.why_not(v)}" for v, _ in leaves)
            raise refuse(NAME, f"no factor of the product is invariant in {label}: {parts}", reduce)
        if not self.varying:
            raise refuse(NAME, f"every factor of the product is invariant in {label}: nothing is left to sum", reduce)
        for op in inv.slice(self.fixed + self.divisors):
            guard = condition_between(op, loop)
            if guard is not None and op.name not in ("lt.dim", "arith.constant"):
                raise refuse(
                    NAME,
                    f"an invariant factor is computed under a condition ('{guard.name}') inside {label}: computed "
                    "after the loop it would be computed where the program might not (out of bounds)",
                    op,
                )
        for a in accesses(loop):
            if a.buffer != self.acc or a.op == reduce:
                continue
            how = {"read": "read", "write": "written"}.get(a.kind, "reduced into by another lt.reduce")
            raise refuse(
                NAME,
                f"the accumulator {self.name(self.acc) or 'the buffer'} is also {how} inside {label}: the partial sum would be "
                "observed or split",
                a.op,
            )
        f = function_of(loop)
        if _is_float(self.element) and not reassociation_allowed(f):
            mode = ir.StringAttr(f.attributes["lt.fastmath"]).value if f is not None and "lt.fastmath" in f.attributes else "default"
            raise refuse(
                NAME,
                f"factoring reassociates the floating-point sum (a * sum(x) rounds differently from sum(a * x)) and "
                f"the function's fastmath mode '{mode}' does not allow it: use --fastmath=fast, or "
                'lt.fastmath = "fast" (or a flag list with reassoc) on the function',
                reduce,
            )

    def _leaves(self, value) -> list:
        """The factors of the product ``value``, ``(value, "mul" | "div")``:
        mul ops are flattened until a whole invariant subproduct or a
        non-product is reached; a float quotient by an invariant divisor is
        its dividend's factors and the divisor (``x / s`` is ``x * (1/s)``)."""
        op = _def_op(value)
        if op is not None and op.name == self.mul and self.inv.why_not(value) is not None:
            return self._leaves(op.operands[0]) + self._leaves(op.operands[1])
        if (op is not None and op.name == "arith.divf" and self.inv.why_not(value) is not None
                and self.inv.why_not(op.operands[1]) is None):
            return self._leaves(op.operands[0]) + [(op.operands[1], "div")]
        return [(value, "mul")]

    def name(self, value) -> str | None:
        """What the loop tree calls ``value`` (``S``, ``%3``), or None."""
        if self._names is None:
            self._names = value_names(function_of(self.loop))
        return self._names.get(value)

    def _describe(self, value) -> str:
        op = _def_op(value)
        name = self.name(value)
        if op is not None and op.name == "memref.load":
            what = f"read of {self.name(op.operands[0]) or 'a buffer'}"
            return f"{name} ({what})" if name else what
        return name or (f"'{op.name}'" if op is not None else "a block argument")

    # ---------------------------------------------------------- rewrite

    def _multiply(self, values):
        out = values[0]
        for v in values[1:]:
            out = arith.MulFOp(out, v).result if self.mul == "arith.mulf" else arith.MulIOp(out, v).result
        return out

    def rewrite(self) -> None:
        loop, reduce, et = self.loop, self.reduce, self.element
        old_value = reduce.operands[0]
        kind = reduce.attributes["kind"]
        inner = dict(self.inner)  # axis -> dim
        dims = [d for _, d in self.inner]
        shape = [lt.inner_loop_extent(next(l for l in self.levels if lt.loop_dim(l) == d)) for d in dims]
        # Constants and index computations go before the statements around
        # them (the GPU lowering runs a block's statements on thread 0 and
        # leaves such ops where they are).
        with ir.InsertionPoint.at_block_begin(loop.block), loop.location:
            zero = arith.ConstantOp(et, 0.0 if _is_float(et) else 0).result
        with ir.InsertionPoint(loop), loop.location:
            scratch = ir.Operation.create(
                "lt.alloc", results=[ir.MemRefType.get(shape, et)], attributes={"dims": ir.ArrayAttr.get([ir.StringAttr.get(d) for d in dims])}
            ).results[0]
            with self._nest(ir.InsertionPoint(loop)) as at:
                memref.StoreOp(zero, scratch, at)
        with ir.InsertionPoint(reduce), reduce.location:
            partial = self._multiply(self.varying)
            ir.Operation.create("lt.reduce", operands=[partial, scratch, *[self.indices[a] for a, _ in self.inner]], attributes={"kind": kind})
        # After L: the invariant factors and the accumulator's indices,
        # recomputed from what they read outside L.
        mapping: dict = {}
        after = ir.InsertionPoint.after(loop)

        def recompute():
            for op in _index_first(self.inv.slice(self.fixed + self.divisors + [v for a, v in enumerate(self.indices) if a not in inner])):
                clone = op.clone()
                for i, v in enumerate(clone.operands):
                    if v in mapping:
                        clone.operands[i] = mapping[v]
                for old, new in zip(op.results, clone.results):
                    mapping[old] = new
            return self._multiply([mapping.get(v, v) for v in self.fixed]) if self.fixed else None

        with after, reduce.location:
            # the invariant factors once after L; with a nest after L, inside
            # it (per element: nothing but index computations then flows from
            # one statement around L to another, so the loop around can still
            # be distributed)
            fixed = None if self.inner else recompute()
            with self._nest(after) as at:
                if self.inner:
                    fixed = recompute()
                total = memref.LoadOp(scratch, at).result
                product = self._multiply([fixed, total]) if fixed is not None else total
                for d in self.divisors:
                    product = arith.DivFOp(product, mapping.get(d, d)).result
                moved = dict(zip([a for a, _ in self.inner], at))
                indices = [moved[a] if a in moved else mapping.get(v, v) for a, v in enumerate(self.indices)]
                ir.Operation.create("lt.reduce", operands=[product, self.acc, *indices], attributes={"kind": kind})
        reduce.erase()
        _erase_dead(old_value, loop)

    @contextmanager
    def _nest(self, at):
        """Build, at ``at``, the levels of L that the location moves along
        (``self.levels``, annotations dropped) and yield the ``lt.dim`` of
        each inner axis's dim in the innermost body, where the ops built
        inside the ``with`` go (nothing to build for a location fixed
        across L)."""
        point = at
        for level in self.levels:
            with point, self.reduce.location:
                _op, block = new_loop(lt.loop_dim(level), lt.loop_size(level), lt.loop_tail(level))
            point = ir.InsertionPoint(block)
        with point, self.reduce.location:
            yield [new_dim(d) for _, d in self.inner]


def _inner_dim(value, loop, reduce) -> str | None:
    """The dim of ``value`` when it is an ``lt.dim`` of a dim that only
    loops inside ``loop`` around ``reduce`` iterate (not ``loop``'s, none
    around ``loop``), else None."""
    op = _def_op(value)
    if op is None or op.name != "lt.dim":
        return None
    dim = ir.StringAttr(op.attributes["dim"]).value
    if any(lt.loop_dim(l) == dim for l in [loop, *lt.enclosing_loops(loop)]):
        return None
    inside_levels = [l for l in lt.enclosing_loops(reduce) if inside(l, loop) and l != loop and lt.loop_dim(l) == dim]
    return dim if inside_levels else None


def _levels(reduce, loop, dims: set):
    """The loops inside ``loop`` around ``reduce`` over ``dims``, outermost
    first; None where an index of those dims is read outside some of them
    (its ``lt.dim`` sits above an inner level of its dim)."""
    chain = [l for l in lt.enclosing_loops(reduce) if inside(l, loop) and l != loop and lt.loop_dim(l) in dims][::-1]
    for v in list(reduce.operands)[2:]:
        op = _def_op(v)
        if op is not None and op.name == "lt.dim" and ir.StringAttr(op.attributes["dim"]).value in dims:
            seen = [l for l in lt.enclosing_loops(op) if inside(l, loop) and l != loop and lt.loop_dim(l) == ir.StringAttr(op.attributes["dim"]).value]
            if len(seen) != len([l for l in chain if lt.loop_dim(l) == ir.StringAttr(op.attributes["dim"]).value]):
                return None
    return chain


def _index_first(ops: list) -> list:
    """``ops`` (operands first) with the index computations among them
    (``lt.dim``, constants, index arithmetic on those) moved to the front."""
    index: list = []

    def is_index(op) -> bool:
        if op.name in ("lt.dim", "arith.constant"):
            return True
        if not (op.name.startswith("arith.") and len(op.results) == 1 and isinstance(op.results[0].type, ir.IndexType)):
            return False
        return all(_def_op(v) is None or _def_op(v) not in ops or any(_def_op(v) == o for o in index) for v in op.operands)

    for op in ops:
        if is_index(op):
            index.append(op)
    return index + [op for op in ops if not any(op == o for o in index)]


def _erase_dead(value, loop) -> None:
    """Erase the ops inside ``loop`` that computed ``value`` and that
    nothing uses any more (loads, arithmetic, index computations)."""
    op = _def_op(value)
    if op is None or not inside(op, loop) or op == loop:
        return
    if any(list(r.uses) for r in op.results):
        return
    if not (op.name in ("memref.load", "lt.dim") or op.name.startswith("arith.") or op.name.startswith("math.")) or op.regions:
        return
    operands = []
    for v in op.operands:
        if not any(v == w for w in operands):
            operands.append(v)
    op.erase()
    for v in operands:
        _erase_dead(v, loop)
