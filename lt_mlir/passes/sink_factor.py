"""``lt-sink-factor{loop=L}``: the inverse of ``lt-factor`` -- multiply
each term of a sum by the factor its result is multiplied by afterwards
(the distributive law read the other way).

L is a loop that sums into a scalar scratch: the scratch (an ``lt.alloc``
of rank 0) is set to zero right before L, every access to it inside L is an
``lt.reduce`` of kind ``add``, and right after L, in L's block, one load of
it feeds one product with a factor computed before L (invariant in L)::

    s[] <- 0                                s[] <- 0
    for k { s[] += x }         becomes      for k { s[] += a * x }
    y = a * s[]                             y = s[]

That is how maximal fusion (TACO's code, the ablation ReACT compares with)
computes SDDMM, ``A ⊙ (B Cᵀ)``: the sampled value multiplied into every
term of the dot product instead of once after it -- ReACT's "reduction
redundancy" of type 1, which ``lt-factor`` removes.  The kernel frontend's
``fusion="maximal"`` applies it so that its ablation has TACO's form; it
costs a multiply a term, never a wrong result beyond rounding.

Refuses (located, IR untouched) when L's body reduces into no scalar
scratch that is zeroed right before L and read once right after it by a
product; when the product is not in L's block (in a later loop, its factor may
change there); when the reduction is not ``add`` (a * max(x) is max(a * x) only
for a >= 0); when the scratch is read or written anywhere else (inside L
or after the product), or is not a fresh ``lt.alloc``; when the other
factor is computed after L from anything but arithmetic, ``lt.dim`` and
loads of buffers nothing from L on writes (such a factor -- ``lt-factor``
computes its factors again after L -- is computed again before L); when the
element type is a float and the function's ``lt.fastmath`` does not allow
reassociation (``a * (x1 + x2)`` rounds differently from ``a*x1 + a*x2``).
"""

from __future__ import annotations

from ..analysis.dependence import accesses, inside
from ..dialect import lt
from ..mlir import ir
from .common import FLOAT_TYPES, clone_mapped, find_loop, function_of, loop_label, refuse
from .factor import reassociation_allowed
from .registry import Option, register

NAME = "lt-sink-factor"


@register(NAME, Option("loop", int, help="loop whose sum's result is multiplied by an invariant factor afterwards (L-number)"))
def sink_factor(module_op, loop: int) -> str:
    """Multiply the terms of a sum by the factor its result is multiplied by after the loop (a * sum(x) -> sum(a * x))."""
    target = find_loop(module_op, loop, NAME)
    label = f"L{loop} {loop_label(target)}"
    problems = []
    for buffer in _scalar_sums(target):
        plan = _plan(target, label, buffer)
        if isinstance(plan, str):
            problems.append(plan)
            continue
        reduces, load, product, factor, recompute = plan
        mapping = {}
        for op in recompute:  # the factor's computation after L, again before it
            with ir.InsertionPoint(target), op.location:
                clone_mapped(op, mapping)
        factor = mapping.get(factor, factor)
        for r in reduces:
            with ir.InsertionPoint(r), r.location:
                term = product.clone()
                term.operands[0], term.operands[1] = factor, r.operands[0]
            r.operands[0] = term.results[0]
        _drop_product(product, load)
        for op in reversed(recompute):  # the old computation, where nothing else uses it
            if all(not list(r.uses) for r in op.results):
                op.erase()
        return f"the factor after {label} multiplies each term of its sum instead"
    if problems:
        raise refuse(NAME, problems[0], target)
    raise refuse(NAME, f"{label} sums into no scalar scratch buffer (an lt.alloc of rank 0)", target)


def _drop_product(product, load) -> None:
    """The product after the loop goes: its uses take the sum itself."""
    product.results[0].replace_all_uses_with(load.results[0])
    product.erase()


def sinkable(loop) -> bool:
    """Whether the pass applies to ``loop`` (the fuzzer's steering)."""
    return any(not isinstance(_plan(loop, loop_label(loop), b), str) for b in _scalar_sums(loop))


def _scalar_sums(target) -> list:
    """The rank-0 lt.alloc buffers some lt.reduce inside ``target`` reduces into, in program order."""
    found: list = []

    def visit(op):
        if op.name == "lt.reduce":
            buf = op.operands[1]
            owner = buf.owner
            if (not isinstance(owner, ir.Block) and owner.operation.name == "lt.alloc"
                    and not ir.MemRefType(buf.type).shape and not any(buf == b for b in found)):
                found.append(buf)
        return ir.WalkResult.ADVANCE

    target.walk(visit)
    return found


def _plan(target, label: str, buffer):
    """(reduces inside L, the load after L, the product, the factor, the
    ops after L that compute the factor) or a message."""
    ops = lt.body_ops(target.block)
    at = ops.index(target)
    reduces, before, after = [], [], []
    for use in buffer.uses:
        user = use.owner
        user = user.operation if hasattr(user, "operation") else user
        if inside(user, target):
            if user.name != "lt.reduce" or use.operand_number != 1:
                return f"the scratch {label} sums into is also {'read' if user.name == 'memref.load' else 'written'} inside it"
            kind = ir.StringAttr(user.attributes["kind"]).value
            if kind != "add":
                return f"the reduction in {label} is '{kind}', not 'add': a * {kind}(x) is not {kind}(a * x) in general"
            reduces.append(user)
        elif user.block == target.block and ops.index(user) < at:
            before.append(user)
        elif user.block == target.block and ops.index(user) > at:
            after.append(user)
        elif user.name != "lt.alloc":
            return f"the scratch {label} sums into is used outside its block"
    if len(before) != 1 or before[0].name != "memref.store" or not _is_zero(before[0].operands[0]):
        return f"the scratch {label} sums into is not set to zero once before it"
    if len(after) != 1 or after[0].name != "memref.load":
        return f"the scratch {label} sums into is not read exactly once after it"
    load = after[0]
    uses = list(load.results[0].uses)
    if len(uses) != 1:
        return f"the sum of {label} is used {len(uses)} times after it, not once by a product"
    product = uses[0].owner
    product = product.operation if hasattr(product, "operation") else product
    if product.name not in ("arith.mulf", "arith.muli"):
        return f"the sum of {label} feeds '{product.name}', not a product"
    if product.block != target.block:
        return f"the product that takes the sum of {label} is not in its block (inside a later loop or condition)"
    a, b = product.operands
    factor = b if a == load.results[0] else a
    recompute = _after(factor, target, ops, at)
    if recompute is None:
        return (f"the factor the sum of {label} is multiplied by is computed after it from what may change "
                "(not only arithmetic, lt.dim and loads of buffers nothing from the loop on writes)")
    element = ir.MemRefType(buffer.type).element_type
    if isinstance(element, FLOAT_TYPES) and not reassociation_allowed(function_of(target)):
        return (f"multiplying each term reassociates the floating-point sum of {label} (a * sum(x) rounds differently "
                "from sum(a * x)) and the function's fastmath mode does not allow it: use --fastmath=fast, or "
                'lt.fastmath = "fast" (or a flag list with reassoc) on the function')
    return reduces, load, product, factor, recompute


def _after(factor, target, ops: list, at: int):
    """The ops after ``target`` in its block that compute ``factor`` (in
    order; [] if it is defined before), when each is arithmetic, an
    ``lt.dim`` or a load of a buffer that nothing from ``target`` to the
    load writes, on values defined before ``target``; else None."""
    out: list = []

    def visit(v) -> bool:
        owner = v.owner
        if isinstance(owner, ir.Block):
            return True
        d = owner.operation
        if d.block != target.block or ops.index(d) < at:
            return True
        if any(d == o for o in out):
            return True
        if d.name == "memref.load":
            if _written_between(d.operands[0], ops[at:ops.index(d)]):
                return False
        elif not (d.name.startswith(("arith.", "math.")) or d.name == "lt.dim") or d.regions:
            return False
        if not all(visit(x) for x in d.operands):
            return False
        out.append(d)
        return True

    return out if visit(factor) else None


def _written_between(buffer, ops: list) -> bool:
    return any(a.buffer == buffer and a.kind != "read" for op in ops for a in accesses(op))


def _is_zero(value) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return False
    attr = owner.operation.attributes["value"]
    try:
        return float(ir.FloatAttr(attr).value) == 0.0
    except ValueError:
        return int(ir.IntegerAttr(attr).value) == 0

