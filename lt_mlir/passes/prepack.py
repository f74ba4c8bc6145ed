"""``lt-prepack{loop=L operand=i}``: make the copy an ``lt-cache`` makes in
each iteration of an outermost loop once, in a function of its own, for an
argument that stays the same from call to call (a model's weights).

L is an outermost loop of function ``@f`` whose body holds a cache made by
``lt-cache`` (an ``lt.alloc`` marked ``lt.cache = i`` filled by the copy
nest that follows it): of argument ``i`` with ``operand=i``, the first one
in L's body with ``operand=-1`` (the default).  Iteration ``t`` of L copies
a tile of argument ``i`` into the local buffer ``B`` and reads ``B``.  The
pass

* adds a function ``@f_pack_<name>(%src, %packed)`` (``<name>`` the
  argument's ``lt.name``; marked ``lt.pack = "f"``) holding a copy of L whose body is only the copy
  nest, writing ``packed[t, ...]`` where L wrote ``B[...]``: ``packed`` has
  one slab of ``B``'s shape per iteration of L (``size``, plus one for a
  tail, whose slab holds what the clipped copy writes);
* gives ``@f`` the argument ``packed`` (``lt.name = "<name>.packed"``),
  placed after its last argument that it only reads (before its outputs),
  and makes L's reads of ``B`` read ``packed[t, ...]``; the copy nest and
  ``B`` go.

``@f(..., packed = @f_pack_<name>(src), ...)`` computes what ``@f`` computed
before, reading the same values; the caller runs the pack function once for
an argument that does not change between calls (``lt_mlir.Model`` does, for
the weights of an imported model's register-tiled contractions, whose
panels ``recipes.register_tile(pack=True)`` copies in each call).

Refuses (located): no loop L; L is inside another loop (its copies would
differ in more than L's iteration); L has no cache (of argument ``i``);
argument ``i`` is written or reduced into anywhere in ``@f`` (a copy made
before the call would be stale); the local buffer is used other than by
its copy nest's stores and loads in L; the copy nest uses a value defined
outside L that is not a constant; L is mapped to the GPU (the pack function
is host code).
"""

from __future__ import annotations

from ..dialect import lt
from ..mlir import arith, ir
from . import common
from .cache import MARKER, _def_op, _function_name, _function_of
from .registry import Option, register

PREPACK = "lt-prepack"
PACK = "lt.pack"  # a pack function's attribute: the function whose argument it fills


def argument_names(f) -> list:
    """The ``lt.name`` of each argument of ``f`` (``arg<k>`` without one)."""
    attrs = f.attributes["arg_attrs"] if "arg_attrs" in f.attributes else None
    n = len(f.regions[0].blocks[0].arguments)
    names = []
    for k in range(n):
        name = None
        if attrs is not None:
            d = ir.DictAttr(ir.ArrayAttr(attrs)[k])
            if "lt.name" in d:
                name = ir.StringAttr(d["lt.name"]).value
        names.append(name or f"arg{k}")
    return names


def _written(f, value) -> ir.Operation | None:
    """The first op of ``f`` that writes ``value`` or uses it other than by
    a load, else None."""
    found = []

    def visit(op):
        for k, v in enumerate(op.operands):
            if v == value and not (op.name == "memref.load" and k == 0):
                found.append(op)
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    f.walk(visit)
    return found[0] if found else None


def _nested(op) -> list:
    out = []
    op.walk(lambda o: (out.append(o), ir.WalkResult.ADVANCE)[1])
    return out


@register(
    PREPACK,
    Option("loop", int, help="outermost loop whose body holds the cache (L-number)"),
    Option("operand", int, default=-1, help="the cached argument (0-based); -1: the first cache in L's body"),
)
def prepack(module_op, loop: int, operand: int = -1) -> str:
    """Move the copy an lt-cache makes in each iteration of an outermost loop into a pack function run once."""
    target = common.find_loop(module_op, loop, PREPACK)
    label = f"L{loop} {common.loop_label(target)}"
    if lt.enclosing_loops(target):
        raise common.refuse(PREPACK, f"{label} is inside another loop; only an outermost loop's cache can be "
                                     "made once before the call", target)
    if "gpu" in lt.annotations(target):
        raise common.refuse(PREPACK, f"{label} is mapped to the GPU; the pack function is host code", target)
    f = _function_of(target)
    body = lt.loop_body(target)
    caches = [o for o in lt.body_ops(body) if o.name == "lt.alloc" and MARKER in o.attributes]
    if operand >= 0:
        caches = [o for o in caches if ir.IntegerAttr(o.attributes[MARKER]).value == operand]
    if not caches:
        which = f"of argument {operand} " if operand >= 0 else ""
        raise common.refuse(PREPACK, f"{label} has no cache {which}(made by lt-cache)", target)
    alloc = caches[0]
    source_index = ir.IntegerAttr(alloc.attributes[MARKER]).value
    args = list(f.regions[0].blocks[0].arguments)
    names = argument_names(f)
    src, src_name = args[source_index], names[source_index]
    writer = _written(f, src)
    if writer is not None:
        raise common.refuse(PREPACK, f"{src_name} is written in @{_function_name(f)}; a copy made before the "
                                     "call would be stale", writer)
    buffer = alloc.results[0]
    ops = lt.body_ops(body)
    copy = next((o for o in ops[ops.index(alloc) + 1:] if o.name == "lt.loop"), None)
    inside_copy = set() if copy is None else {o.operation for o in _nested(copy)}
    stores, loads = [], []
    for use in buffer.uses:
        user = use.owner
        if user.name == "memref.store" and use.operand_number == 1 and user.operation in inside_copy:
            stores.append(user)
        elif user.name == "memref.load" and use.operand_number == 0 and user.operation not in inside_copy:
            loads.append(user)
        else:
            raise common.refuse(PREPACK, f"the cache of {src_name} in {label} is used other than by its copy's "
                                         "stores and the loop's loads", user)
    if copy is None or not stores:
        raise common.refuse(PREPACK, f"the cache of {src_name} in {label} has no copy nest", alloc)

    # What the copy nest needs from L's body (index values at its start) and from outside L.
    needed, order = set(), []

    def need(value):
        op = _def_op(value)
        if op is None:
            owner = value.owner.owner
            if owner is not None and owner.operation == target.operation:
                return  # L's iteration number: the pack loop's own
            if owner is not None and owner.operation in inside_copy:
                return
            raise common.refuse(PREPACK, f"the copy of {src_name} in {label} uses an argument of "
                                         f"@{_function_name(f)} other than {src_name}", copy)
        if op.operation in inside_copy or op.operation in needed:
            return
        if lt.enclosing_loops(op) and lt.enclosing_loops(op)[-1] == target:
            if op.name != "lt.dim" and op.name != "arith.constant" and not _pure_index(op):
                raise common.refuse(PREPACK, f"the copy of {src_name} in {label} uses '{op.name}' computed in L",
                                    op)
        elif op.name != "arith.constant":
            raise common.refuse(PREPACK, f"the copy of {src_name} in {label} uses '{op.name}' computed outside L",
                                op)
        for v in op.operands:
            need(v)
        needed.add(op.operation)
        order.append(op)

    for o in _nested(copy):
        for v in o.operands:
            if v == src or v == buffer:
                continue
            need(v)
    position = {op: k for k, op in enumerate(_nested_pre(f))}
    order.sort(key=lambda op: position[op.operation])

    size, tail = lt.loop_size(target), lt.loop_tail(target)
    slabs = size + (1 if tail else 0)
    local = ir.MemRefType(buffer.type)
    packed_type = ir.MemRefType.get([slabs, *local.shape], local.element_type)
    fname = _function_name(f)
    taken = {_function_name(g) for g in lt.functions(module_op)}
    pack_name = _unique(f"{fname}_pack_{_symbol(src_name)}", taken)
    packed_name = _unique(f"{src_name}.packed", set(names))

    # The pack function: L's loop with only the copy nest, storing into packed[t, ...].
    loc = target.location
    with loc, ir.InsertionPoint(f.block):  # at the module's end
        ftype = ir.FunctionType.get([src.type, packed_type], [])
        pack = ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get(pack_name),
                "function_type": ir.TypeAttr.get(ftype),
                "arg_attrs": ir.ArrayAttr.get([_name_attr(src_name), _name_attr(packed_name)]),
                PACK: ir.StringAttr.get(fname),
            },
            regions=1,
        )
        entry = pack.regions[0].blocks.append(src.type, packed_type)
        dim = lt.loop_dim(target)
        # Without a level over L's dim in the copy, the pack loop has none either: one iteration
        # a slab, the tail's included, and L's dim at its body start is then the iteration
        # number times L's inner extent, written out (lt.dim would count single steps).
        flat = not any(lt.loop_dim(o) == dim for o in _nested(copy) if o.name == "lt.loop")
        with ir.InsertionPoint(entry):
            new_loop, new_body = common.new_loop(dim, slabs if flat else size, 0 if flat else tail,
                                                 common.annotation_attrs(target))
            ir.Operation.create("func.return", results=[], operands=[])
        mapping = {src: entry.arguments[0], body.arguments[0]: new_body.arguments[0]}
        with ir.InsertionPoint(new_body):
            for op in order + [copy]:
                clone = op.clone()
                for o in _nested(clone):
                    for k, v in enumerate(o.operands):
                        if v in mapping:
                            o.operands[k] = mapping[v]
                for old, new in zip(op.results, clone.results):
                    mapping[old] = new
            if flat:
                dims = [o for o in _nested(new_loop) if o.name == "lt.dim" and o.attributes["dim"].value == dim]
                if dims:
                    with ir.InsertionPoint.at_block_begin(new_body):
                        base = arith.MulIOp(new_body.arguments[0], common.index_constant(lt.inner_extent(target)))
                    for o in dims:
                        o.results[0].replace_all_uses_with(base.result)
                        o.erase()
            for store in _stores_into(new_loop, buffer):
                with ir.InsertionPoint(store), store.location:
                    operands = list(store.operands)
                    ir.Operation.create("memref.store", results=[], operands=[operands[0], entry.arguments[1],
                                                                               new_body.arguments[0], *operands[2:]])
                store.erase()

    # @f: the packed argument before the outputs; L's loads read its slab.
    position = _first_output(f, args)
    packed = _insert_argument(f, position, packed_type, _name_attr(packed_name))
    for load in loads:
        with ir.InsertionPoint(load), load.location:
            new = ir.Operation.create("memref.load", results=[local.element_type],
                                      operands=[packed, body.arguments[0], *list(load.operands)[1:]])
        load.results[0].replace_all_uses_with(new.results[0])
        load.erase()
    copy.erase()
    alloc.erase()
    for op in reversed(order):  # index values in L only the copy used
        if lt.enclosing_loops(op) and not any(True for r in op.results for _ in r.uses):
            op.erase()
    extent = " x ".join(str(s) for s in packed_type.shape)
    return (f"{src_name}: the copy of L{loop} {common.loop_label(new_loop)} made once by "
            f"@{pack_name} into {packed_name} ({extent}), an argument of @{fname}")


def pack_functions(module_op) -> list:
    """``(pack function, the function it packs for, source argument's
    name, packed argument's name)`` of each pack function ``lt-prepack``
    made in the module, in module order (names, not ops)."""
    out = []
    for g in lt.functions(module_op):
        if PACK in g.attributes:
            src, packed = argument_names(g)
            out.append((_function_name(g), ir.StringAttr(g.attributes[PACK]).value, src, packed))
    return out


def pack_plan(module_op) -> list:
    """How to call a module ``lt-prepack`` changed: ``(pack function,
    position of its source among the entry's arguments)`` for each pack
    function, in the order they were made (module order).  The entry (the
    module's first function) takes its packed arguments right after its
    other read-only arguments, in that order: with ``args`` the read-only
    arguments it took before, ``for name, k in plan:
    args.append(pack[name](args[k]))`` makes the ones it takes now."""
    funcs = lt.functions(module_op)
    if not funcs:
        return []
    entry = argument_names(funcs[0])
    return [(name, entry.index(source)) for name, of, source, _ in pack_functions(module_op)
            if of == _function_name(funcs[0]) and source in entry]


def _pure_index(op) -> bool:
    from ..analysis.dependence import is_pure_index_op

    return is_pure_index_op(op)


def _nested_pre(op) -> list:
    """``op`` and the ops nested in it, in program order."""
    out = []
    op.walk(lambda o: (out.append(o.operation), ir.WalkResult.ADVANCE)[1], ir.WalkOrder.PRE_ORDER)
    return out


def _stores_into(loop, buffer) -> list:
    return [o for o in _nested(loop) if o.name == "memref.store" and o.operands[1] == buffer]


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def _unique(name: str, taken: set) -> str:
    k, out = 1, name
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    return out


def _name_attr(name: str) -> ir.DictAttr:
    return ir.DictAttr.get({"lt.name": ir.StringAttr.get(name)})


def _first_output(f, args) -> int:
    """Where the outputs start: after the last argument ``f`` only reads."""
    position = len(args)
    while position > 0 and _written(f, args[position - 1]) is not None:
        position -= 1
    return position


def _insert_argument(f, position: int, type_, attr) -> ir.Value:
    """Give ``f`` a new argument at ``position`` (its entry block's
    arguments appended again around it, the old ones' uses moved, the old
    ones erased; its type and ``arg_attrs`` updated); returns it."""
    block = f.regions[0].blocks[0]
    old = list(block.arguments)
    types = [a.type for a in old]
    attrs = list(ir.ArrayAttr(f.attributes["arg_attrs"])) if "arg_attrs" in f.attributes else \
        [ir.DictAttr.get({}) for _ in old]
    new_types = types[:position] + [type_] + types[position:]
    new_attrs = attrs[:position] + [attr] + attrs[position:]
    locs = [a.location if hasattr(a, "location") else f.location for a in old]
    added = []
    for k, t in enumerate(new_types):
        loc = f.location if k == position else locs[k if k < position else k - 1]
        added.append(block.add_argument(t, loc))
    for k, a in enumerate(old):
        a.replace_all_uses_with(added[k if k < position else k + 1])
    for _ in old:
        block.erase_argument(0)
    f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_types, []))
    f.attributes["arg_attrs"] = ir.ArrayAttr.get(new_attrs)
    return block.arguments[position]
