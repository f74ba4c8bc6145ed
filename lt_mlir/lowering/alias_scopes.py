"""Alias scopes for the memory accesses of lt kernels in the llvm dialect.

Every memref argument of an lt kernel is ``noalias``.  LLVM sees that on the
function's parameters, but not inside an OpenMP-outlined parallel region,
where the pointers arrive through a struct: there it must assume a store to
C may change B, and keeps accumulators in memory.  Tagging each load and
store with the scope of the argument it addresses (``alias_scopes``) and
the scopes of all other arguments (``noalias_scopes``) states the same fact
in a form that survives outlining.
"""

from __future__ import annotations

from ..mlir import ir

_ACCESSES = ("llvm.load", "llvm.store")


def add_alias_scopes(module) -> None:
    op = module.operation
    with op.context:
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
    args = _noalias_args(f)
    if len(args) < 2:
        return
    name = ir.StringAttr(f.attributes["sym_name"]).value
    domain = ir.Attribute.parse(f'#llvm.alias_scope_domain<id = distinct[0]<>, description = "{name}">')
    scopes = {
        i: ir.Attribute.parse(
            f'#llvm.alias_scope<id = distinct[{i + 1}]<>, domain = {domain}, description = "{name} arg{i}">'
        )
        for i in args
    }
    entry = f.regions[0].blocks[0]
    arg_of = {entry.arguments[i]: i for i in args}
    accesses = []
    f.walk(lambda o: (accesses.append(o) if o.name in _ACCESSES else None, ir.WalkResult.ADVANCE)[1])
    for access in accesses:
        address = access.operands[0 if access.name == "llvm.load" else 1]
        i = _base_argument(address, arg_of)
        if i is None:
            continue
        access.attributes["alias_scopes"] = ir.ArrayAttr.get([scopes[i]])
        access.attributes["noalias_scopes"] = ir.ArrayAttr.get([s for j, s in scopes.items() if j != i])


def _base_argument(value, arg_of: dict):
    for _ in range(64):
        if value in arg_of:
            return arg_of[value]
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.operation.name != "llvm.getelementptr":
            return None
        value = owner.operation.operands[0]
    return None


