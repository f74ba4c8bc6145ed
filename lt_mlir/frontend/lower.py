"""A tensor DAG as one ``lt`` module, with loop_tool's default schedule.

The function takes the graph's input tensors (leaves, in the order a
depth-first walk from the output meets them) and then the output, as
memrefs named ``A``, ``B``, ... (``lt.name``).  Nodes are emitted in
topological order; each compute node (pointwise, reduction) gets the loops
of its dims in order — a reduction loops over its input's dims — and

* **shared prefixes are coalesced**: a node enters the last loop of the
  current body when it iterates the same dim and every value it reads that
  is produced inside that loop is read at exactly that loop's index (not
  shifted by a view, not reduced over that dim);
* a value read in the body (or a body nested in the one) that computed it,
  at the same indices, is used directly; any other read goes through
  memory: the producer stores into scratch (``lt.alloc`` over its dims, at
  full size; ``lt-shrink-buffers`` can shrink it later) and the reader loads;
* a reduction's accumulator is initialised by an explicit store of the
  identity, in a nest over its remaining output dims placed just before its
  outermost reduction loop (``lt.reduce`` never initialises);
* views (``to`` with constraints, ``X[s.No + s.K]``, ``transpose``, ``pad``)
  and concatenation emit no loops: their readers compute the source index
  with ``arith`` on ``lt.dim`` values.  An index that may leave its source
  (padding, concatenation) is clamped into range with ``arith.maxsi`` /
  ``arith.minsi`` and the loaded value replaced by 0 with ``arith.select``
  outside, so every access is provably in bounds.

The output of a transpose of a computed node is written by that node
directly, in the transposed layout.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from .errors import FrontendError

_UNARY = {
    "neg": "arith.negf",
    "exp": "math.exp",
    "log": "math.log",
    "sqrt": "math.sqrt",
    "abs": "math.absf",
}
_BINARY = {
    "add": "arith.addf",
    "sub": "arith.subf",
    "mul": "arith.mulf",
    "div": "arith.divf",
    "max": "arith.maximumf",
    "min": "arith.minimumf",
}
_IDENTITY = {"add": 0.0, "mul": 1.0, "max": float("-inf"), "min": float("inf")}


# ------------------------------------------------------------------ indices
class Clamp:
    """``min(max(inner, lo), hi)`` as an atom of an index expression."""

    __slots__ = ("inner", "lo", "hi", "_key")

    def __init__(self, inner: "Aff", lo: int, hi: int):
        self.inner, self.lo, self.hi = inner, lo, hi
        self._key = ("clamp", inner.key(), lo, hi)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, Clamp) and other._key == self._key


class Digit:
    """``(inner // stride) % radix`` (no modulo when ``radix`` is 0): a
    digit of a flattened index (``Tensor.flatten``) as an atom."""

    __slots__ = ("inner", "stride", "radix", "_key")

    def __init__(self, inner: "Aff", stride: int, radix: int):
        self.inner, self.stride, self.radix = inner, stride, radix
        self._key = ("digit", inner.key(), stride, radix)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, Digit) and other._key == self._key


def _atom_key(a):
    return a._key if isinstance(a, (Clamp, Digit)) else ("dim", a.id)


class Aff:
    """``const + sum(coef * atom)`` over loop dims (Symbols) and clamps."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const: int = 0):
        self.terms = {a: c for a, c in (terms or {}).items() if c != 0}
        self.const = const

    @staticmethod
    def dim(sym) -> "Aff":
        return Aff({sym: 1})

    def key(self):
        return (tuple(sorted((_atom_key(a), c) for a, c in self.terms.items())), self.const)

    def plus(self, other: "Aff", scale: int = 1) -> "Aff":
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + scale * c
        return Aff(terms, self.const + scale * other.const)

    def identity_of(self, sym) -> bool:
        return self.const == 0 and len(self.terms) == 1 and self.terms.get(sym) == 1


def substitute(expr, env: dict) -> Aff:
    """A frontend ``Expr`` over view dims, with each dim replaced by ``env[dim]``."""
    out = Aff({}, expr.const)
    for (kind, sym), c in expr.terms.items():
        digit = kind.startswith("digit:")
        if kind != "idx" and not digit:
            raise FrontendError(f"index expression {expr} uses a size term")
        if sym not in env:
            raise FrontendError(f"index expression {expr} uses '{sym.name}', which is not a dim of the view")
        if digit:
            _, stride, radix = kind.split(":")
            out = out.plus(Aff({Digit(env[sym], int(stride), int(radix)): 1}), c)
        else:
            out = out.plus(env[sym], c)
    return out


def _float_hex(value: float, dtype: str) -> str:
    if dtype == "f64":
        return "0x" + struct.pack(">d", value).hex().upper()
    return "0x" + struct.pack(">f", value).hex().upper()


# ------------------------------------------------------------------ structure
class _Body:
    __slots__ = ("items", "parent", "loop", "cache")

    def __init__(self, parent, loop):
        self.items: list = []
        self.parent = parent
        self.loop = loop
        self.cache: dict = {}

    def chain(self):
        b = self
        while b is not None:
            yield b
            b = b.parent

    def lookup(self, key):
        for b in self.chain():
            if key in b.cache:
                return b.cache[key]
        return None


class _Loop:
    __slots__ = ("dim", "size", "body", "iv", "dimval", "name")

    def __init__(self, dim, size: int, name: str, parent: _Body, iv: str, dimval: str):
        self.dim, self.size, self.name = dim, size, name
        self.body = _Body(parent, self)
        self.iv, self.dimval = iv, dimval
        self.body.items.append(f'{dimval} = "lt.dim"() {{dim = "{name}"}} : () -> index')


@dataclass
class _Store:
    node: object
    value: str
    body: _Body


class _Copy:
    """The output node of a graph whose result is a view or an input."""

    _op = "unary"

    def __init__(self, source):
        self._inputs = (source,)
        self._dims = tuple(source._dims)
        self._attrs = {"fn": "copy"}


@dataclass
class Lowered:
    text: str
    leaves: list  # input tensors, in argument order
    out_shape: tuple
    dtype: str


def is_compute(node) -> bool:
    return node._op in ("unary", "binary", "reduce")


def _permutation_source(node):
    """Follow views that only reorder dims (``transpose``) down to their source."""
    while node._op == "view":
        src = node._inputs[0]
        maps = node._attrs["maps"]
        if len(maps) != len(node._dims) or sorted(id(d) for d in src._dims) != sorted(id(d) for d in node._dims):
            return None
        if any(m.single_symbol() is not d for m, d in zip(maps, src._dims)):
            return None
        node = src
    return node


def topological(root) -> list:
    out, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            out.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for x in reversed(node._inputs):
            if id(x) not in seen:
                stack.append((x, False))
    return out


def _arg_name(i: int) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[i] if i < 26 else f"T{i}"


class _Emitter:
    def __init__(self, sizes: dict, dtype: str):
        self.sizes = sizes
        self.dtype = dtype
        self.root = _Body(None, None)
        self.counter = 0
        self.consts: dict = {}
        self.const_lines: list = []
        self.dim_names: dict = {}
        self.used_names: set = set()
        self.ssa: dict = {}  # node -> (body, value)
        self.enclosing: dict = {}  # node -> set of loops around its statement
        self.buffer: dict = {}  # node -> SSA name of its memory
        self.buf_dims: dict = {}
        self.materialized: list = []

    # ------------------------------------------------------------ names
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def dim_name(self, sym) -> str:
        name = self.dim_names.get(sym)
        if name is None:
            base = re.sub(r"[^A-Za-z0-9_]", "_", sym.name) or "d"
            name, k = base, 0
            while name in self.used_names:
                k += 1
                name = f"{base}_{k}"
            self.used_names.add(name)
            self.dim_names[sym] = name
        return name

    def size(self, sym) -> int:
        return self.sizes[sym]

    def memref_type(self, dims) -> str:
        shape = "x".join(str(self.size(d)) for d in dims)
        return f"memref<{shape}x{self.dtype}>" if dims else f"memref<{self.dtype}>"

    # ------------------------------------------------------------ constants
    def const_index(self, value: int) -> str:
        key = ("index", value)
        if key not in self.consts:
            name = f"%c{value}" if value >= 0 else f"%cm{-value}"
            self.consts[key] = name
            self.const_lines.append(f"{name} = arith.constant {value} : index")
        return self.consts[key]

    def const_float(self, value: float) -> str:
        text = _float_hex(value, self.dtype)
        key = ("float", text)
        if key not in self.consts:
            name = self.fresh("cst")
            self.consts[key] = name
            self.const_lines.append(f"{name} = arith.constant {text} : {self.dtype}")
        return self.consts[key]

    # ------------------------------------------------------------ indices
    def dim_value(self, body: _Body, sym) -> str:
        for b in body.chain():
            if b.loop is not None and b.loop.dim is sym:
                return b.loop.dimval
        raise FrontendError(f"internal error: no loop over '{sym.name}' encloses its use")

    def range(self, e) -> tuple:
        if isinstance(e, Clamp):
            lo, hi = self.range(e.inner)
            return (min(max(lo, e.lo), e.hi), min(max(hi, e.lo), e.hi))
        if isinstance(e, Digit):
            lo, hi = self.range(e.inner)
            if e.radix:
                return (0, e.radix - 1)
            return (lo // e.stride, hi // e.stride)
        if not isinstance(e, Aff):  # a Symbol
            return (0, self.size(e) - 1)
        lo = hi = e.const
        for a, c in e.terms.items():
            alo, ahi = self.range(a)
            lo += c * alo if c > 0 else c * ahi
            hi += c * ahi if c > 0 else c * alo
        return (lo, hi)

    def _line(self, body: _Body, key, text_fn) -> str:
        found = body.lookup(key)
        if found is not None:
            return found
        name = self.fresh()
        body.items.append(text_fn(name))
        body.cache[key] = name
        return name

    def index(self, body: _Body, e: Aff) -> str:
        if not e.terms:
            return self.const_index(e.const)
        if e.const == 0 and len(e.terms) == 1:
            (a, c), = e.terms.items()
            if c == 1:
                return self.atom(body, a)
        key = ("index", e.key())
        found = body.lookup(key)
        if found is not None:
            return found
        terms = sorted(e.terms.items(), key=lambda ac: ac[1] < 0)
        acc = None
        for a, c in terms:
            v = self.atom(body, a)
            if abs(c) != 1:
                v = self._line(body, ("muli", v, abs(c)), lambda n, v=v, k=abs(c): f"{n} = arith.muli {v}, {self.const_index(k)} : index")
            if acc is None:
                acc = v if c > 0 else self._bin(body, "subi", self.const_index(0), v)
            else:
                acc = self._bin(body, "addi" if c > 0 else "subi", acc, v)
        if e.const > 0:
            acc = self._bin(body, "addi", acc, self.const_index(e.const))
        elif e.const < 0:
            acc = self._bin(body, "subi", acc, self.const_index(-e.const))
        body.cache[key] = acc
        return acc

    def _bin(self, body, op: str, a: str, b: str) -> str:
        return self._line(body, (op, a, b), lambda n: f"{n} = arith.{op} {a}, {b} : index")

    def atom(self, body: _Body, a) -> str:
        if isinstance(a, Digit):
            v = self.index(body, a.inner)
            if a.stride > 1:
                v = self._bin(body, "divui", v, self.const_index(a.stride))
            if a.radix:
                v = self._bin(body, "remui", v, self.const_index(a.radix))
            return v
        if not isinstance(a, Clamp):
            return self.dim_value(body, a)
        lo, hi = self.range(a.inner)
        v = self.index(body, a.inner)
        if lo < a.lo:
            v = self._bin(body, "maxsi", v, self.const_index(a.lo))
        if hi > a.hi:
            v = self._bin(body, "minsi", v, self.const_index(a.hi))
        return v

    # ------------------------------------------------------------ views
    def view_source(self, node, env: dict):
        """(source, its env, guards) for reading view ``node`` at ``env``.

        Source indices are passed on unclamped; a guard ``(index, extent)``
        names one that may leave its source (padding): the read yields 0
        there.  Only the final load clamps (``load``)."""
        src = node._inputs[0]
        out, guards = {}, []
        for d, m in zip(src._dims, node._attrs["maps"]):
            e = substitute(m, env)
            lo, hi = self.range(e)
            n = self.size(d)
            if lo < 0 or hi > n - 1:
                guards.append((e, n))
            out[d] = e
        return src, out, guards

    def concat_sources(self, node, env: dict):
        a, b = node._inputs
        k = node._attrs["axis"]
        j = env[node._dims[k]]
        na = self.size(a._dims[k])
        env_a = {d: env[nd] for d, nd in zip(a._dims, node._dims)}
        env_b = {d: env[nd] for d, nd in zip(b._dims, node._dims)}
        env_b[b._dims[k]] = j.plus(Aff({}, -na))
        return (a, env_a), (b, env_b), j, na

    def plan(self, node, env: dict, out: list) -> list:
        """The compute nodes a read of ``node`` at ``env`` reads, with their envs."""
        if is_compute(node):
            out.append((node, env))
        elif node._op == "view":
            src, src_env, _ = self.view_source(node, env)
            self.plan(src, src_env, out)
        elif node._op == "concat":
            (a, ea), (b, eb), _, _ = self.concat_sources(node, env)
            self.plan(a, ea, out)
            self.plan(b, eb, out)
        return out

    # ------------------------------------------------------------ reads
    def read(self, body: _Body, node, env: dict) -> str:
        """The value of ``node`` at ``env``: 0 where a view pads."""
        value, guards = self._read(body, node, env)
        conds = self.in_range(body, guards)
        if not conds:
            return value
        cond = conds[0]
        for c in conds[1:]:
            cond = self._line(body, ("andi", cond, c), lambda x, a=cond, b=c: f"{x} = arith.andi {a}, {b} : i1")
        zero = self.const_float(0.0)
        return self._line(
            body, ("select", cond, value, zero), lambda n: f"{n} = arith.select {cond}, {value}, {zero} : {self.dtype}"
        )

    def _read(self, body: _Body, node, env: dict):
        """(value, guards): the value is ``node``'s where every guard holds."""
        if node._op == "leaf":
            if node._weak:  # a Python number: a constant the compiler sees
                return self.const_float(float(node._data)), []
            return self.load(body, self.buffer[node], node._dims, env), []
        if node._op == "view":
            src, src_env, guards = self.view_source(node, env)
            value, inner = self._read(body, src, src_env)
            return value, inner + guards
        if node._op == "concat":
            (a, ea), (b, eb), j, na = self.concat_sources(node, env)
            va, vb = self.read(body, a, ea), self.read(body, b, eb)
            jv = self.index(body, j)
            cond = self._line(body, ("cmpi", "slt", jv, na), lambda n: f"{n} = arith.cmpi slt, {jv}, {self.const_index(na)} : index")
            value = self._line(body, ("select", cond, va, vb), lambda n: f"{n} = arith.select {cond}, {va}, {vb} : {self.dtype}")
            return value, []
        # a computed node
        ssa = self.ssa.get(node)
        if ssa is not None and all(env[d].identity_of(d) for d in node._dims):
            where, value = ssa
            if any(b is where for b in body.chain()):
                return value, []
        if node not in self.buffer:
            self.buffer[node] = self.fresh("buf")
            self.buf_dims[node] = tuple(node._dims)
            self.materialized.append(node)
        return self.load(body, self.buffer[node], self.buf_dims[node], env), []

    def load(self, body: _Body, buffer: str, buf_dims, env: dict) -> str:
        """Load ``buffer`` at ``env``, each index clamped into its axis (a
        guard elsewhere discards the value where the clamp changed it)."""
        idx = []
        for d in buf_dims:
            e = env[d]
            lo, hi = self.range(e)
            n = self.size(d)
            if lo < 0 or hi > n - 1:
                e = Aff({Clamp(e, 0, n - 1): 1})
            idx.append(self.index(body, e))
        t = self.memref_type(buf_dims)
        return self._line(body, ("load", buffer, *idx), lambda n: f"{n} = memref.load {buffer}[{', '.join(idx)}] : {t}")

    def in_range(self, body: _Body, guards) -> list:
        """i1 values that hold where every guard ``(e, n)`` has ``0 <= e < n``.

        Guards over the same terms (nested pads: ``x - 1``, ``x - 2``) are
        one interval on those terms: ``lo <= terms < hi``."""
        bounds: dict = {}
        for e, n in guards:
            key = e.key()[0]
            terms = Aff(e.terms)
            lo, hi = bounds.get(key, (None, None, terms))[:2]
            lo = -e.const if lo is None else max(lo, -e.const)
            hi = n - e.const if hi is None else min(hi, n - e.const)
            bounds[key] = (lo, hi, terms)
        conds = []
        for lo, hi, terms in bounds.values():
            rlo, rhi = self.range(terms)
            v = self.index(body, terms)
            if rlo < lo:
                conds.append(self._line(body, ("cmpi", "sge", v, lo), lambda x, v=v, lo=lo: f"{x} = arith.cmpi sge, {v}, {self.const_index(lo)} : index"))
            if rhi >= hi:
                conds.append(self._line(body, ("cmpi", "slt", v, hi), lambda x, v=v, hi=hi: f"{x} = arith.cmpi slt, {v}, {self.const_index(hi)} : index"))
        return conds

    # ------------------------------------------------------------ loops
    def new_loop(self, parent: _Body, dim) -> _Loop:
        name = self.dim_name(dim)
        return _Loop(dim, self.size(dim), name, parent, self.fresh("i"), self.fresh("d"))

    def open_loops(self, body: _Body, dims) -> _Body:
        for d in dims:
            loop = self.new_loop(body, d)
            body.items.append(loop)
            body = loop.body
        return body

    def legal(self, plan: list, loop: _Loop) -> bool:
        d = loop.dim
        for producer, env in plan:
            if loop in self.enclosing.get(producer, ()):
                if d not in producer._dims or not env[d].identity_of(d):
                    return False
        return True

    def store_line(self, body: _Body, node, value: str) -> str:
        idx = [self.dim_value(body, d) for d in self.buf_dims[node]]
        t = self.memref_type(self.buf_dims[node])
        return f"memref.store {value}, {self.buffer[node]}[{', '.join(idx)}] : {t}"

    def emit(self, node) -> None:
        reduce = node._op == "reduce"
        order = list(node._inputs[0]._dims) if reduce else list(node._dims)
        identity = {d: Aff.dim(d) for d in order}
        plan = []
        for x in node._inputs:
            self.plan(x, identity, plan)
        bodies = [self.root]
        for d in order:
            items = bodies[-1].items
            last = items[-1] if items else None
            if isinstance(last, _Loop) and last.dim is d and self.legal(plan, last):
                bodies.append(last.body)
            else:
                break
        depth = len(bodies) - 1
        body = bodies[-1]
        if reduce:
            rdims = node._attrs["rdims"]
            j = next(i for i, d in enumerate(order) if d in rdims)
            if node not in self.buffer:
                self.buffer[node] = self.fresh("buf")
                self.buf_dims[node] = tuple(node._dims)
                self.materialized.append(node)
            if depth > j:
                self._init(bodies[j], len(bodies[j].items) - 1, node, order[j:], rdims)
            else:
                body = self.open_loops(body, order[depth:j])
                self._init(body, len(body.items), node, order[j:], rdims)
                depth = j
        body = self.open_loops(body, order[depth:])
        self.enclosing[node] = {b.loop for b in body.chain() if b.loop is not None}
        if reduce:
            value = self.read(body, node._inputs[0], identity)
            kind = node._attrs["kind"]
            idx = [self.dim_value(body, d) for d in self.buf_dims[node]]
            t = self.memref_type(self.buf_dims[node])
            types = ", ".join([self.dtype, t] + ["index"] * len(idx))
            operands = ", ".join([value, self.buffer[node]] + idx)
            body.items.append(f'"lt.reduce"({operands}) {{kind = "{kind}"}} : ({types}) -> ()')
            return
        values = [self.read(body, x, {d: Aff.dim(d) for d in x._dims}) for x in node._inputs]
        fn = node._attrs["fn"]
        if fn == "copy":
            value = values[0]
        else:
            value = self.fresh()
            if fn == "reciprocal":
                text = f"{value} = arith.divf {self.const_float(1.0)}, {values[0]} : {self.dtype}"
            elif fn in _UNARY:
                text = f"{value} = {_UNARY[fn]} {values[0]} : {self.dtype}"
            else:
                text = f"{value} = {_BINARY[fn]} {values[0]}, {values[1]} : {self.dtype}"
            body.items.append(text)
        self.ssa[node] = (body, value)
        body.items.append(_Store(node, value, body))

    def _init(self, body: _Body, position: int, node, dims, rdims) -> None:
        ident = self.const_float(_IDENTITY[node._attrs["kind"]])
        loops = [d for d in dims if d not in rdims]
        holder = _Body(body, None)  # collects the nest, then moves into body
        inner = holder
        for d in loops:
            loop = self.new_loop(inner, d)
            inner.items.append(loop)
            inner = loop.body
        # The outermost init loop's parent is `body` itself.
        if holder.items and isinstance(holder.items[0], _Loop):
            holder.items[0].body.parent = body
        inner.items.append(self.store_line(inner if loops else body, node, ident))
        body.items[position:position] = holder.items

    # ------------------------------------------------------------ text
    def render(self, body: _Body, depth: int, out: list) -> None:
        pad = "  " * depth
        for item in body.items:
            if isinstance(item, str):
                out.append(pad + item)
            elif isinstance(item, _Store):
                if item.node in self.buffer:
                    out.append(pad + self.store_line(item.body, item.node, item.value))
            else:
                out.append(pad + '"lt.loop"() ({')
                out.append(pad + f"^bb0({item.iv}: index):")
                self.render(item.body, depth + 1, out)
                attrs = f'{{dim = "{item.name}", size = {item.size} : i64, tail = 0 : i64}}'
                out.append(pad + f"}}) {attrs} : () -> ()")


def lower(root, sizes: dict, dtype: str, name: str = "graph", fastmath: str = "default") -> Lowered:
    """The lt module computing ``root`` (all of its dims' sizes in ``sizes``);
    a ``fastmath`` mode other than ``default`` becomes the function's
    ``lt.fastmath`` attribute."""
    em = _Emitter(sizes, dtype)
    out = root
    source = _permutation_source(root)
    if source is not None and is_compute(source):
        out = source
    elif not is_compute(root):
        out = _Copy(root)
    nodes = topological(out)
    for node in nodes:  # name dims in the order the graph meets them
        for d in (*node._dims, *(node._inputs[0]._dims if node._op == "reduce" else ())):
            em.dim_name(d)
    leaves = [n for n in nodes if n._op == "leaf" and not n._weak]
    args = []
    for i, leaf in enumerate(leaves):
        em.buffer[leaf] = f"%a{i}"
        args.append(f'%a{i}: {em.memref_type(leaf._dims)} {{lt.name = "{_arg_name(i)}"}}')
    out_dims = tuple(root._dims)
    em.buffer[out] = f"%a{len(leaves)}"
    em.buf_dims[out] = out_dims
    args.append(f'%a{len(leaves)}: {em.memref_type(out_dims)} {{lt.name = "{_arg_name(len(leaves))}"}}')
    for node in nodes:
        if is_compute(node) or isinstance(node, _Copy):
            em.emit(node)
    body: list = []
    em.render(em.root, 1, body)
    allocs = []
    if any(node is not out for node in em.materialized):
        # lower-lt-to-scf hoists allocs before the function's first op, which
        # must not be an lt.alloc itself (it is erased): start with a constant.
        em.const_index(0)
    for node in em.materialized:
        if node is out:
            continue
        names = ", ".join(f'"{em.dim_name(d)}"' for d in em.buf_dims[node])
        allocs.append(f'  {em.buffer[node]} = "lt.alloc"() {{dims = [{names}]}} : () -> {em.memref_type(em.buf_dims[node])}')
    attrs = f' attributes {{lt.fastmath = "{fastmath}"}}' if fastmath != "default" else ""
    lines = [f"func.func @{name}({', '.join(args)}){attrs} {{"]
    lines += ["  " + c for c in em.const_lines]
    lines += allocs
    lines += body
    lines += ["  return", "}", ""]
    shape = tuple(sizes[d] for d in out_dims)
    return Lowered("\n".join(lines), leaves, shape, dtype)
