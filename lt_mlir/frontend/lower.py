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
from contextlib import ExitStack
from dataclasses import dataclass

from ..builder import Block, Builder, LoopOp, Value, memref
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


# ------------------------------------------------------------------ structure
class _Body:
    """A block of the module being built (``block``, lt_mlir.builder), with
    what the emitter knows of it: the loop it is the body of, and the values
    computed in it (``cache``, by what they compute)."""

    __slots__ = ("block", "parent", "loop", "cache")

    def __init__(self, block: Block, parent, loop):
        self.block = block
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
    """An ``lt.loop`` of the default schedule: its dim (a Symbol), its op,
    its body and the ``lt.dim`` value at its top."""

    __slots__ = ("dim", "op", "body", "dimval")

    def __init__(self, dim, op: LoopOp, parent: _Body, dimval: Value):
        self.dim, self.op, self.dimval = dim, op, dimval
        self.body = _Body(op.body, parent, self)


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
    """Builds the function with lt_mlir.builder: constants first (in the
    order they are needed), then the scratch buffers' ``lt.alloc``s, then
    the loop nests."""

    def __init__(self, sizes: dict, dtype: str):
        self.sizes = sizes
        self.dtype = dtype
        self.b = Builder(float_format="hex")
        self.func = None
        self.root: _Body | None = None  # the function's body (``start``)
        self.loops: dict = {}  # LoopOp -> _Loop
        self.consts: dict = {}
        self.n_consts = 0  # constants at the top of the function, then allocs
        self.n_allocs = 0
        self.dim_names: dict = {}
        self.used_names: set = set()
        self.ssa: dict = {}  # node -> (body, value)
        self.enclosing: dict = {}  # node -> set of loops around its statement
        self.buffer: dict = {}  # node -> Value of its memory
        self.buf_dims: dict = {}
        self.materialized: list = []
        self.pending: dict = {}  # node -> (body, value, op) of a store made only if the node gets memory

    def start(self, name: str, args: list, attributes: dict) -> list:
        """The function, with ``args`` (``(name, type, lt_name)``); its arguments."""
        self.func = self.b.func(name, args, attributes)
        self.root = _Body(self.func.body, None, None)
        return self.func.arguments

    # ------------------------------------------------------------ names
    def fresh(self, prefix: str = "v") -> str:
        return self.b.fresh(prefix)

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
        return memref([self.size(d) for d in dims], self.dtype)

    # ------------------------------------------------------------ constants
    def _const(self, key, value, type_: str, name: str) -> Value:
        if key not in self.consts:
            with self.b.at(self.root.block, self.n_consts):
                self.consts[key] = self.b.constant(value, type_, name=name)
            self.n_consts += 1
        return self.consts[key]

    def const_index(self, value: int) -> Value:
        key = ("index", value)
        if key in self.consts:
            return self.consts[key]
        return self._const(key, value, "index", f"%c{value}" if value >= 0 else f"%cm{-value}")

    def const_float(self, value: float) -> Value:
        key = ("float", self.b.float_literal(value, self.dtype))  # by bit pattern: 0.0 and -0.0 differ
        if key in self.consts:
            return self.consts[key]
        return self._const(key, value, self.dtype, self.fresh("cst"))

    def new_buffer(self, node) -> Value:
        """Scratch memory for ``node`` over its dims: an ``lt.alloc`` after
        the constants; a store of the node's value where it was computed."""
        dims = tuple(node._dims)
        with self.b.at(self.root.block, self.n_consts + self.n_allocs):
            buf = self.b.alloc([self.dim_name(d) for d in dims], self.memref_type(dims), name=self.fresh("buf"))
        self.n_allocs += 1
        self.buffer[node] = buf
        self.buf_dims[node] = dims
        self.materialized.append(node)
        pending = self.pending.pop(node, None)
        if pending is not None:
            body, value, op = pending
            with self.b.after(op) if op is not None else self.b.at(body.block, 0):
                self.store(body, node, value)
        return buf

    # ------------------------------------------------------------ indices
    def dim_value(self, body: _Body, sym) -> Value:
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

    def _line(self, body: _Body, key, make) -> Value:
        """The value ``key`` names, from ``body`` or a body around it, else
        ``make(name)`` at the end of ``body``."""
        found = body.lookup(key)
        if found is not None:
            return found
        name = self.fresh()
        with self.b.at_end(body.block):
            value = make(name)
        body.cache[key] = value
        return value

    def index(self, body: _Body, e: Aff) -> Value:
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
                v = self._line(body, ("muli", v, abs(c)), lambda n, v=v, k=abs(c): self.b.binary("muli", v, self.const_index(k), name=n))
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

    def _bin(self, body, op: str, a: Value, b: Value) -> Value:
        return self._line(body, (op, a, b), lambda n: self.b.binary(op, a, b, name=n))

    def atom(self, body: _Body, a) -> Value:
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
    def read(self, body: _Body, node, env: dict) -> Value:
        """The value of ``node`` at ``env``: 0 where a view pads."""
        value, guards = self._read(body, node, env)
        conds = self.in_range(body, guards)
        if not conds:
            return value
        cond = conds[0]
        for c in conds[1:]:
            cond = self._line(body, ("andi", cond, c), lambda x, a=cond, b=c: self.b.binary("andi", a, b, name=x))
        zero = self.const_float(0.0)
        return self._line(body, ("select", cond, value, zero), lambda n: self.b.select(cond, value, zero, name=n))

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
            cond = self._line(body, ("cmpi", "slt", jv, na), lambda n: self.b.cmp("slt", jv, self.const_index(na), name=n))
            value = self._line(body, ("select", cond, va, vb), lambda n: self.b.select(cond, va, vb, name=n))
            return value, []
        # a computed node
        ssa = self.ssa.get(node)
        if ssa is not None and all(env[d].identity_of(d) for d in node._dims):
            where, value = ssa
            if any(b is where for b in body.chain()):
                return value, []
        if node not in self.buffer:
            self.new_buffer(node)
        return self.load(body, self.buffer[node], self.buf_dims[node], env), []

    def load(self, body: _Body, buffer: Value, buf_dims, env: dict) -> Value:
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
        return self._line(body, ("load", buffer, *idx), lambda n: self.b.load(buffer, idx, name=n))

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
                conds.append(self._line(body, ("cmpi", "sge", v, lo), lambda x, v=v, lo=lo: self.b.cmp("sge", v, self.const_index(lo), name=x)))
            if rhi >= hi:
                conds.append(self._line(body, ("cmpi", "slt", v, hi), lambda x, v=v, hi=hi: self.b.cmp("slt", v, self.const_index(hi), name=x)))
        return conds

    # ------------------------------------------------------------ loops
    def new_loop(self, parent: _Body, dim) -> _Loop:
        """A loop over ``dim`` at the insertion point, in ``parent``."""
        name = self.dim_name(dim)
        op = self.b.loop(name, self.size(dim), 0, index=self.fresh("i"))
        with op:
            dimval = self.b.dim(name, name=self.fresh("d"))
        loop = self.loops[op] = _Loop(dim, op, parent, dimval)
        return loop

    def open_loops(self, body: _Body, dims) -> _Body:
        for d in dims:
            with self.b.at_end(body.block):
                body = self.new_loop(body, d).body
        return body

    def legal(self, plan: list, loop: _Loop) -> bool:
        d = loop.dim
        for producer, env in plan:
            if loop in self.enclosing.get(producer, ()):
                if d not in producer._dims or not env[d].identity_of(d):
                    return False
        return True

    def store(self, body: _Body, node, value: Value) -> None:
        """Store ``value`` into ``node``'s memory at the insertion point, in ``body``."""
        idx = [self.dim_value(body, d) for d in self.buf_dims[node]]
        self.b.store(value, self.buffer[node], idx)

    def emit(self, node) -> None:
        reduce = node._op == "reduce"
        order = list(node._inputs[0]._dims) if reduce else list(node._dims)
        identity = {d: Aff.dim(d) for d in order}
        plan = []
        for x in node._inputs:
            self.plan(x, identity, plan)
        bodies = [self.root]
        for d in order:
            ops = bodies[-1].block.ops
            last = self.loops.get(ops[-1]) if ops else None
            if last is not None and last.dim is d and self.legal(plan, last):
                bodies.append(last.body)
            else:
                break
        depth = len(bodies) - 1
        body = bodies[-1]
        if reduce:
            rdims = node._attrs["rdims"]
            j = next(i for i, d in enumerate(order) if d in rdims)
            if node not in self.buffer:
                self.new_buffer(node)
            if depth > j:
                with self.b.before(bodies[j].block.ops[-1]):  # the loop the node's reduction shares
                    self._init(bodies[j], node, order[j:], rdims)
            else:
                body = self.open_loops(body, order[depth:j])
                with self.b.at_end(body.block):
                    self._init(body, node, order[j:], rdims)
                depth = j
        body = self.open_loops(body, order[depth:])
        self.enclosing[node] = {b.loop for b in body.chain() if b.loop is not None}
        if reduce:
            value = self.read(body, node._inputs[0], identity)
            idx = [self.dim_value(body, d) for d in self.buf_dims[node]]
            with self.b.at_end(body.block):
                self.b.reduce(node._attrs["kind"], value, self.buffer[node], idx)
            return
        values = [self.read(body, x, {d: Aff.dim(d) for d in x._dims}) for x in node._inputs]
        fn = node._attrs["fn"]
        with self.b.at_end(body.block):
            if fn == "copy":
                value = values[0]
            else:
                name = self.fresh()
                if fn == "reciprocal":
                    value = self.b.binary("divf", self.const_float(1.0), values[0], name=name)
                elif fn in _UNARY:
                    value = self.b.unary(_UNARY[fn], values[0], name=name)
                else:
                    value = self.b.binary(_BINARY[fn], values[0], values[1], name=name)
            self.ssa[node] = (body, value)
            if node in self.buffer:
                self.store(body, node, value)
            else:  # stored only if a later reader needs it in memory (new_buffer)
                self.pending[node] = (body, value, body.block.ops[-1] if body.block.ops else None)

    def _init(self, body: _Body, node, dims, rdims) -> None:
        """At the insertion point, in ``body``: the nest over ``dims`` less
        ``rdims`` that stores the identity of ``node``'s reduction."""
        ident = self.const_float(_IDENTITY[node._attrs["kind"]])
        inner = body
        with ExitStack() as nest:
            for d in dims:
                if d not in rdims:
                    inner = self.new_loop(inner, d).body
                    nest.enter_context(self.b.at_end(inner.block))
            self.store(inner, node, ident)


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
    out_dims = tuple(root._dims)
    shapes = [leaf._dims for leaf in leaves] + [out_dims]
    args = [(f"a{i}", em.memref_type(dims), _arg_name(i)) for i, dims in enumerate(shapes)]
    values = em.start(name, args, {"lt.fastmath": fastmath} if fastmath != "default" else {})
    for leaf, value in zip(leaves, values):
        em.buffer[leaf] = value
    em.buffer[out] = values[-1]
    em.buf_dims[out] = out_dims
    for node in nodes:
        if is_compute(node) or isinstance(node, _Copy):
            em.emit(node)
    if em.materialized:
        # lower-lt-to-scf hoists allocs before the function's first op, which
        # must not be an lt.alloc itself (it is erased): start with a constant.
        em.const_index(0)
    shape = tuple(sizes[d] for d in out_dims)
    return Lowered(em.b.text(), leaves, shape, dtype)
