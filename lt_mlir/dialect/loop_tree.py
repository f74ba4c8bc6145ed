"""The loop tree: loop_tool's picture of a loop nest.

    for m in 4 r 1 : L0
     for m' in 8 : L1
      for n in 48 : L2
       C[m, n] <- 0.0
       for k in 64 : L3 [unroll 4]
        %0 <- read A[m, k]
        %1 <- read B[k, n]
        %2 <- mul(%0, %1)
        C[m, n] += %2

Loops are numbered in pre-order (L0, L1, ...) across the module; passes
address them by that number.  Inner levels of a dim are primed (m, m', m'').  Index arithmetic
and constants are folded into the accesses that use them.
"""

from __future__ import annotations

from ..mlir import CmpFPredicate, CmpIPredicate, ir
from . import lt

_REDUCE_SPELLING = {"add": "+=", "mul": "*=", "max": "max=", "min": "min="}
_OP_SPELLING = {
    "addf": "add",
    "addi": "add",
    "subf": "sub",
    "subi": "sub",
    "mulf": "mul",
    "muli": "mul",
    "divf": "div",
    "divsi": "div",
    "maximumf": "max",
    "maxnumf": "max",
    "maxsi": "max",
    "minimumf": "min",
    "minnumf": "min",
    "minsi": "min",
    "negf": "neg",
}
_PREDICATES = {"arith.cmpi": CmpIPredicate, "arith.cmpf": CmpFPredicate}
_INDEX_BINARY = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}


def preorder_loops(root) -> list:
    """Every lt.loop under ``root`` in pre-order: index i is loop ``Li``."""
    out = []
    top = root.operation

    def visit(op):
        if op.name == "lt.loop" and op != top:
            out.append(op)
        return ir.WalkResult.ADVANCE

    top.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def loop_tree(module_or_text, func: str | None = None) -> str:
    """The loop tree of every function of a module (or of ``func``)."""
    if isinstance(module_or_text, str):
        module_or_text = lt.parse_module(module_or_text)
    funcs = lt.functions(module_or_text.operation)
    parts = []
    number = 0  # loops are numbered across the whole module, as passes address them
    for f in funcs:
        name = ir.StringAttr(f.attributes["sym_name"]).value
        printer = _Printer(f, number)
        text = printer.render()
        number = printer.loop_number
        if func is None or name == func:
            parts.append(text if len(funcs) == 1 or func is not None else f"@{name}:\n{text}")
    return "\n".join(parts)


def value_names(f) -> dict:
    """Value -> the name the loop tree prints for it (``%0``, ``A``)."""
    printer = _Printer(f)
    printer.render()
    return printer.names


class _Printer:
    def __init__(self, f, first_loop_number: int = 0):
        self.f = f
        self.names: dict = {}
        self.counter = 0
        self.loop_number = first_loop_number
        self.lines: list[str] = []
        block = f.regions[0].blocks[0]
        attrs = f.attributes["arg_attrs"] if "arg_attrs" in f.attributes else None
        for i, arg in enumerate(block.arguments):
            name = f"arg{i}"
            if attrs is not None:
                d = ir.DictAttr(ir.ArrayAttr(attrs)[i])
                if "lt.name" in d:
                    name = ir.StringAttr(d["lt.name"]).value
            self.names[arg] = name

    def render(self) -> str:
        self._block(self.f.regions[0].blocks[0], 0, {})
        return "\n".join(self.lines)

    def _block(self, block, depth: int, primes: dict) -> None:
        for op in lt.body_ops(block):
            self._op(op, depth, primes)

    def _op(self, op, depth: int, primes: dict) -> None:
        pad = " " * depth
        name = op.name
        if name == "lt.loop":
            dim = lt.loop_dim(op)
            level = primes.get(dim, 0)
            size, tail = lt.loop_size(op), lt.loop_tail(op)
            text = f"{pad}for {dim}{chr(39) * level} in {size}{f' r {tail}' if tail else ''} : L{self.loop_number}"
            self.loop_number += 1
            notes = [_note(k, v) for k, v in sorted(lt.annotations(op).items())]
            if notes:
                text += " [" + ", ".join(notes) + "]"
            self.lines.append(text)
            body = lt.loop_body(op)
            self.names[body.arguments[0]] = f"L{self.loop_number - 1}.iteration"
            self._block(body, depth + 1, {**primes, dim: level + 1})
            return
        if name in ("func.return", "lt.dim") or _is_index_op(op) or name == "arith.constant":
            return
        if name == "memref.load":
            self.lines.append(f"{pad}{self._define(op)} <- read {self._access(op.operands[0], op.operands[1:])}")
        elif name == "memref.store":
            self.lines.append(f"{pad}{self._access(op.operands[1], op.operands[2:])} <- {self._value(op.operands[0])}")
        elif name == "lt.reduce":
            kind = ir.StringAttr(op.attributes["kind"]).value
            ops = list(op.operands)
            self.lines.append(f"{pad}{self._access(ops[1], ops[2:])} {_REDUCE_SPELLING[kind]} {self._value(ops[0])}")
        elif name == "lt.alloc":
            t = ir.MemRefType(op.results[0].type)
            dims = ", ".join(ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["dims"]))
            n = 1
            for s in t.shape:
                n *= s
            padded = ""
            if "lt.pad" in op.attributes:
                axis, every, by = ir.DenseI64ArrayAttr(op.attributes["lt.pad"])
                padded = f", pad {by} every {every} {ir.StringAttr(ir.ArrayAttr(op.attributes['dims'])[axis]).value}"
            self.lines.append(f"{pad}{self._define(op)} <- alloc {t.element_type}[{dims}] ({n} elements{padded})")
        elif name == "scf.for":
            # a loop with bounds computed at run time (data-dependent: CSR
            # rows), not an lt loop: no L-number, no pass reorders it
            lo, hi, step = (self._index(v) for v in list(op.operands)[:3])
            body = op.regions[0].blocks[0]
            var = f"v{self.counter}"
            self.counter += 1
            self.names[body.arguments[0]] = var
            for k, arg in enumerate(list(body.arguments)[1:]):
                self.names[arg] = f"{var}.carried{k}"
            results = self._define(op) + " <- " if len(op.results) else ""
            by = "" if step == "1" else f" step {step}"
            notes = [f"{name} {op.attributes['lt.' + name].value}" for name in ("vectorize", "prefetch") if "lt." + name in op.attributes]
            note = f" [{', '.join(notes)}]" if notes else ""
            self.lines.append(f"{pad}{results}for {var} in {lo} .. {hi}{by} (bounds known at run time){note}")
            self._block(body, depth + 1, primes)
        else:
            short = name.split(".", 1)[-1]
            short = _OP_SPELLING.get(short, short)
            if name in _PREDICATES:  # cmpf olt, cmpi slt, ...
                short = f"{short} {_PREDICATES[name](ir.IntegerAttr(op.attributes['predicate']).value).name.lower()}"
            args = ", ".join(self._value(v) for v in op.operands)
            lhs = self._define(op) + " <- " if len(op.results) else ""
            self.lines.append(f"{pad}{lhs}{short}({args})")
            for region in op.regions:
                for block in region.blocks:
                    self._block(block, depth + 1, primes)

    def _define(self, op) -> str:
        name = f"%{self.counter}"
        self.counter += 1
        for r in op.results:
            self.names[r] = name
        return name

    def _access(self, memref_value, indices) -> str:
        return f"{self._value(memref_value)}[{', '.join(self._index(i) for i in indices)}]"

    def _value(self, v) -> str:
        if v in self.names:
            return self.names[v]
        owner = v.owner
        if isinstance(owner, (ir.OpView, ir.Operation)):
            op = owner.operation
            if op.name == "arith.constant":
                return _constant(op)
            if op.name == "lt.dim" or _is_index_op(op):
                return self._index(v)
        return "?"

    def _index(self, v) -> str:
        owner = v.owner
        if not isinstance(owner, (ir.OpView, ir.Operation)):
            return self.names.get(v, "i")  # a block argument
        op = owner.operation
        if op.name == "lt.dim":
            return ir.StringAttr(op.attributes["dim"]).value
        if op.name == "arith.constant":
            return _constant(op)
        if op.name in _INDEX_BINARY:
            a, b = (self._index(x) for x in op.operands)
            sym = _INDEX_BINARY[op.name]
            return f"{a}{sym}{b}" if sym == "*" else f"{a} {sym} {b}"
        if v in self.names:
            return self.names[v]
        args = ", ".join(self._index(x) for x in op.operands)
        return f"{op.name.split('.', 1)[-1]}({args})"


def _note(name: str, value) -> str:
    if value is True:
        return name
    if name == "unroll" and value == 0:
        return "unroll full"
    return f"{name} {value}"


def _is_index_op(op) -> bool:
    return (
        op.name.startswith("arith.")
        and len(op.results) == 1
        and isinstance(op.results[0].type, ir.IndexType)
    )


def _constant(op) -> str:
    a = op.attributes["value"]
    if isinstance(a, ir.FloatAttr):
        return repr(a.value)
    if isinstance(a, ir.IntegerAttr):
        return str(a.value)
    return str(a)
