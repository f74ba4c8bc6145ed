"""``lower-lt-to-scf``: the one place that knows what lt ops mean in loops.

* ``lt.loop`` over dim ``d`` with ``size`` S, ``tail`` T and inner extent E
  becomes ``scf.for %i = 0 to S`` over the body, followed (when T > 0) by one
  inlined copy of the body with ``%i = S`` in which the inner levels of ``d``
  cover only T elements.  All sizes are static, so every clipped copy has
  static trip counts: an inner level of size s, tail t and inner extent e that
  may cover only R elements runs ``n = min(s, R // e)`` full iterations and a
  clipped one over ``R - n * e`` elements.  Nothing is padded and nothing is
  guarded: no iteration ever touches an index outside the dim's extent.
* ``lt.dim d`` becomes ``sum(iteration * E)`` over the enclosing levels of d
  (``arith`` on ``index``; canonicalisation folds the constants).
* ``lt.reduce`` becomes load / combine / store on its accumulator.
* ``lt.alloc`` becomes a ``memref.alloca`` (up to 64 KiB) or a
  ``memref.alloc`` freed before every return, hoisted to the function entry
  (its size is static, so one buffer serves every iteration).
"""

from __future__ import annotations

from ..dialect import bounds, lt
from ..errors import CompileError, format_location
from ..mlir import arith, ir, memref, scf

STACK_ALLOC_LIMIT = 64 * 1024
_ALLOWED_ANNOTATIONS: set[str] = set()


def lower_lt_to_scf(module: ir.Module | ir.Operation, check_bounds: bool = True) -> None:
    """Rewrite every lt op in ``module`` into scf/arith/memref, in place.

    First proves every access in bounds (``dialect/bounds.py``) unless
    ``check_bounds`` is False (tests of the guard pages need that)."""
    op = module.operation
    if check_bounds:
        bounds.check_bounds(op)
    with op.context, ir.Location.unknown():
        for f in lt.functions(op):
            _lower_function(f)


def _lower_function(f) -> None:
    if not f.regions[0].blocks:
        return
    entry = f.regions[0].blocks[0]
    _check_annotations(f)
    _hoist_allocs(f, entry)
    _lower_ops(list(entry.operations), {})


def _check_annotations(f) -> None:
    bad = []

    def visit(o):
        if o.name == "lt.loop":
            for name in lt.annotations(o):
                if name not in _ALLOWED_ANNOTATIONS:
                    bad.append((o, name))
        return ir.WalkResult.ADVANCE

    f.walk(visit)
    if bad:
        o, name = bad[0]
        where = format_location(o.location)
        raise CompileError(
            f"{where + ': ' if where else ''}error: lower-lt-to-scf does not lower the "
            f"'lt.{name}' annotation"
        )


def _hoist_allocs(f, entry: ir.Block) -> None:
    allocs = []
    f.walk(lambda o: (allocs.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1])
    if not allocs:
        return
    returns = []
    f.walk(lambda o: (returns.append(o) if o.name == "func.return" else None, ir.WalkResult.ADVANCE)[1])
    first = entry.operations[0]
    for a in allocs:
        t = ir.MemRefType(a.results[0].type)
        nbytes = _nbytes(t)
        with ir.InsertionPoint(first):
            if nbytes <= STACK_ALLOC_LIMIT:
                buf = memref.AllocaOp(t, [], []).result
            else:
                buf = memref.AllocOp(t, [], []).result
                for r in returns:
                    with ir.InsertionPoint(r):
                        memref.DeallocOp(buf)
        a.results[0].replace_all_uses_with(buf)
        a.erase()


def _nbytes(t: ir.MemRefType) -> int:
    n = 1
    for s in t.shape:
        n *= s
    et = t.element_type
    width = et.width if hasattr(et, "width") else 64
    return n * max(1, width // 8)


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _lower_ops(ops: list, ctx: dict) -> None:
    """Lower ``ops`` (a snapshot of one block's ops) under ``ctx``:
    dim name -> (offset value or None, elements available or None)."""
    for op in ops:
        op = op.operation
        name = op.name
        if name == "lt.loop":
            _lower_loop(op, ctx)
        elif name == "lt.dim":
            _lower_dim(op, ctx)
        elif name == "lt.reduce":
            _lower_reduce(op)
        else:
            for region in op.regions:
                for block in region.blocks:
                    _lower_ops(list(block.operations), ctx)


def _lower_dim(op, ctx: dict) -> None:
    dim = ir.StringAttr(op.attributes["dim"]).value
    offset = ctx.get(dim, (None, None))[0]
    if offset is None:
        with ir.InsertionPoint(op):
            offset = _index(0)
    op.results[0].replace_all_uses_with(offset)
    op.erase()


def _lower_loop(loop, ctx: dict) -> None:
    dim, size, tail = lt.loop_dim(loop), lt.loop_size(loop), lt.loop_tail(loop)
    step = lt.inner_extent(loop)
    parent_offset, avail = ctx.get(dim, (None, None))
    if avail is None:
        full, rest = size, tail
    else:
        full = min(size, avail // step)
        rest = avail - full * step
    assert 0 <= rest < step or (full == size and rest <= tail), (dim, size, tail, avail)

    tail_copy = loop.clone(ip=ir.InsertionPoint(loop)) if rest > 0 else None
    if full > 0:
        anchor = tail_copy if tail_copy is not None else loop
        with ir.InsertionPoint(anchor):
            loop_op = scf.ForOp(_index(0), _index(full), _index(1))
        with ir.InsertionPoint(loop_op.body):
            iv = loop_op.induction_variable
            offset = _scaled(iv, step, parent_offset)
            yield_op = scf.YieldOp([])
        inner = _inline_body(loop, yield_op, iv)
        _lower_ops(inner, {**ctx, dim: (offset, step)})
    if tail_copy is not None:
        with ir.InsertionPoint(tail_copy):
            iv = _index(full)
            offset = _scaled(iv, step, parent_offset)
        inner = _inline_body(tail_copy, tail_copy, iv)
        tail_copy.erase()
        _lower_ops(inner, {**ctx, dim: (offset, rest)})
    loop.erase()


def _scaled(iv: ir.Value, step: int, base: ir.Value | None) -> ir.Value:
    v = iv if step == 1 else arith.MulIOp(iv, _index(step)).result
    return v if base is None else arith.AddIOp(base, v).result


def _inline_body(loop, before, iv: ir.Value) -> list:
    """Move ``loop``'s body before ``before``, its block argument replaced by ``iv``."""
    body = lt.loop_body(loop)
    body.arguments[0].replace_all_uses_with(iv)
    moved = [o.operation for o in body.operations]
    for o in moved:
        o.move_before(before)
    return moved


_FLOAT_COMBINE = {"add": arith.AddFOp, "mul": arith.MulFOp, "max": arith.MaximumFOp, "min": arith.MinimumFOp}
_INT_COMBINE = {"add": arith.AddIOp, "mul": arith.MulIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}


def _lower_reduce(op) -> None:
    kind = ir.StringAttr(op.attributes["kind"]).value
    value, acc, *indices = list(op.operands)
    is_float = isinstance(value.type, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))
    combine = (_FLOAT_COMBINE if is_float else _INT_COMBINE)[kind]
    with ir.InsertionPoint(op), op.location:
        old = memref.LoadOp(acc, indices).result
        new = combine(old, value).result
        memref.StoreOp(new, acc, indices)
    op.erase()
