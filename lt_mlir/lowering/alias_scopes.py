"""Alias scopes for the memory accesses of lt kernels in the llvm dialect.

Every memref argument of an lt kernel is ``noalias``.  LLVM sees that on the
function's parameters, but not inside an OpenMP-outlined parallel region,
where the pointers arrive through a struct: there it must assume a store to
C may change B, and keeps accumulators in memory.  Tagging each load and
store with the scope of the argument it addresses (``alias_scopes``) and
the scopes of all other arguments (``noalias_scopes``) states the same fact
in a form that survives outlining.  A scratch buffer (``lt.alloc``, an
``llvm.alloca`` after lowering, or a ``malloc`` call when it is too large
for the stack) is a fresh allocation, so it aliases no argument and no
other buffer: it gets a scope of its own too (else a cached tile of B read
in a parallel region keeps C's accumulators in memory, and a convolution
reading one scratch buffer into another stores its accumulators at every
step).
"""

from __future__ import annotations

from ..mlir import ir

_ACCESSES = ("llvm.load", "llvm.store")


def add_alias_scopes(module) -> None:
    op = module.operation
    with op.context:
        _prefetches_as_calls(op)
        for f in _llvm_functions(op):
            _scope_function(f)


def _llvm_functions(module_op) -> list:
    ops = [o.operation for o in module_op.regions[0].blocks[0].operations]
    return [o for o in ops if o.name == "llvm.func" and o.regions[0].blocks]


def _noalias_args(f) -> list[int]:
    if "arg_attrs" not in f.attributes:
        return []
    out = []
    for i, d in enumerate(ir.ArrayAttr(f.attributes["arg_attrs"])):
        if "llvm.noalias" in ir.DictAttr(d):
            out.append(i)
    return out


def _scope_function(f) -> None:
    entry = f.regions[0].blocks[0]
    base_of = {entry.arguments[i]: f"arg{i}" for i in _noalias_args(f)}
    allocas = []
    f.walk(lambda o: (allocas.append(o) if _allocates(o) else None, ir.WalkResult.ADVANCE)[1])
    for k, a in enumerate(allocas):
        base_of[a.result] = f"buffer{k}"
    if len(base_of) < 2:
        return
    name = ir.StringAttr(f.attributes["sym_name"]).value
    # One parse for all scopes: `distinct[0]` names one domain only within
    # a single parse (parsed per scope, each scope got a domain of its own).
    domain = f'#llvm.alias_scope_domain<id = distinct[0]<>, description = "{name}">'
    bases = list(dict.fromkeys(base_of.values()))
    parsed = ir.ArrayAttr(ir.Attribute.parse("[" + ", ".join(
        f'#llvm.alias_scope<id = distinct[{n + 1}]<>, domain = {domain}, description = "{name} {base}">'
        for n, base in enumerate(bases)
    ) + "]"))
    scopes = {base: parsed[n] for n, base in enumerate(bases)}
    accesses = []
    f.walk(lambda o: (accesses.append(o) if o.name in _ACCESSES or _is_prefetch(o) else None, ir.WalkResult.ADVANCE)[1])
    for access in accesses:
        address = access.operands[1 if access.name == "llvm.store" else 0]
        base = _base(address, base_of)
        if base is None:
            continue
        access.attributes["alias_scopes"] = ir.ArrayAttr.get([scopes[base]])
        access.attributes["noalias_scopes"] = ir.ArrayAttr.get([s for b, s in scopes.items() if b != base])


_PREFETCH = "llvm.intr.prefetch"
_PREFETCH_CALLEE = "llvm.prefetch.p0"


def _prefetches_as_calls(module_op) -> None:
    """Each ``llvm.intr.prefetch`` as a call of the intrinsic, which carries
    alias scopes (the intrinsic op does not): without them LLVM must assume
    a prefetch in a loop may read an accumulator, and stores the
    accumulators at every step instead of once after the loop."""
    prefetches = []
    module_op.walk(lambda o: (prefetches.append(o) if o.name == _PREFETCH else None, ir.WalkResult.ADVANCE)[1])
    if not prefetches:
        return
    i32 = ir.IntegerType.get_signless(32)
    ftype = ir.TypeAttr.get(ir.Type.parse(f"!llvm.func<void ({prefetches[0].operands[0].type}, i32, i32, i32)>"))
    block = module_op.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(block), prefetches[0].location:
        ir.Operation.create("llvm.func", attributes={
            "sym_name": ir.StringAttr.get(_PREFETCH_CALLEE), "function_type": ftype,
            "linkage": ir.Attribute.parse("#llvm.linkage<external>"),
        }, regions=1)
    for op in prefetches:
        with ir.InsertionPoint(op), op.location:
            flags = [ir.Operation.create("llvm.mlir.constant", results=[i32], attributes={
                "value": ir.IntegerAttr.get(i32, ir.IntegerAttr(op.attributes[k]).value)}).result for k in ("rw", "hint", "cache")]
            ir.Operation.create("llvm.call", results=[], operands=[op.operands[0], *flags], attributes={
                "callee": ir.FlatSymbolRefAttr.get(_PREFETCH_CALLEE),
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([4, 0]),
                "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
                "var_callee_type": ftype,
            })
        op.erase()


def _is_prefetch(op) -> bool:
    return op.name == "llvm.call" and "callee" in op.attributes and \
        ir.FlatSymbolRefAttr(op.attributes["callee"]).value == _PREFETCH_CALLEE


_ALLOCATORS = ("malloc", "aligned_alloc", "calloc")


def _allocates(op) -> bool:
    """An ``llvm.alloca``, or a call of the C allocator (a scratch buffer
    too large for the stack: ``memref.alloc`` lowers to ``malloc``)."""
    if op.name == "llvm.alloca":
        return True
    if op.name != "llvm.call" or "callee" not in op.attributes:
        return False
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value in _ALLOCATORS


def _base(value, base_of: dict):
    """The argument or buffer ``value`` points into (through GEPs), or None."""
    for _ in range(64):
        if value in base_of:
            return base_of[value]
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.operation.name != "llvm.getelementptr":
            return None
        value = owner.operation.operands[0]
    return None


