"""``lt-fuse{loop=L recompute=false}``: fuse a producer nest into the reads
of the scratch buffer it computes (ReACT's type-3 load-store and type-4
dead-value redundancy: the buffer disappears, and only the elements that
are read are computed).

L must be the outermost loop of a *producer nest* of a scratch buffer T
(an ``lt.alloc`` result): a perfect chain of loops over the dims T is
written at (several levels per dim, tails included; between the levels only
index computations), whose innermost level holds the *per-element
computation*::

    for i { for j { T[i, j] <- 0.0; for k { T[i, j] += A[i, k] * B[k, j] } } }
    for i { for j { T[i, j] <- f(A[i, j]) } }

The computation writes T only at ``[lt.dim d0, lt.dim d1, ...]`` (the
element's index, one distinct dim of the chain per axis, in any order),
first with a plain ``memref.store`` at its top level (the initialisation),
then only with ``lt.reduce``; it writes nothing else but scratch buffers
allocated inside it.

Every ``memref.load T[a, b]`` in the ops after L in L's block (at any
depth: in lt.loops, ``scf.for``, ``scf.if``) is replaced by a copy of the
per-element computation with T's dims bound to ``a, b``: each ``lt.dim``
of one of T's dims becomes the read's index value, T becomes a fresh
rank-0 ``lt.alloc`` placed right before the read (initialised as the
producer initialised T) and the load a load of it.  A computation that
only stores its value into T (no reduction) needs no scratch: the load
becomes the copied value.  Reads of one element in one block (same index
values) share one copy.  Loops of the computation are copied as lt.loops
(fine inside ``scf.for``); one whose dim a loop around the read already
iterates gets a fresh dim name (``k`` -> ``k2``), and copies drop the
``parallel``/``schedule``/``gpu`` annotations (the producer's schedule, not
the consumer's).  Then L is erased, and T's ``lt.alloc``.

Refuses (the IR unchanged) when:

- L is not such a nest: it writes no buffer that outlives it, writes a
  function argument or a buffer that is not an ``lt.alloc``, writes more
  than one buffer, writes T at indices that are not its loops' dims (at a
  dim of a loop around L, at ``j + 1``, or at a tile's start, an ``lt.dim``
  above the innermost level of its dim), its
  loops over T's dims hold other statements, a dim of T has no loop or a
  loop the computation nests again, the loops cover T only in part, the
  computation does not initialise T with a plain store before reducing
  into it, or it uses an iteration number or a non-index value computed
  between the levels; or it passes a buffer to an op other than
  ``memref.load``/``memref.store``/``lt.reduce``;
- T is read inside the nest, read or written before it, written after it,
  used outside the ops that follow L in its block, used by anything but
  ``memref.load`` after it, or not read at all;
- a buffer the computation reads is written (or passed to another op)
  anywhere in the ops after L up to the last one holding a read: the copy
  could read the new values (conservative: a write after the read in the
  same nest also refuses);
- T is read in several places that cannot share one copy of the
  computation (each copy would compute the elements it reads again);
- the computation holds a loop (a reduction) and a read sits in a
  vectorized loop (``lt.vectorize`` on an lt.loop or on an ``scf.for``):
  a vectorized loop must stay innermost;
- a read sits in a loop (lt.loop, or ``scf.for``/``scf.while``) after L
  that its indices do not depend on: fused, each element would be computed
  once per iteration of that loop (ReACT's type-2 redundancy that maximal
  fusion introduces).  The error says how many times; ``recompute=true``
  fuses anyway (TACO-style maximal fusion).  An index depends on a loop
  when it is computed from its ``lt.dim`` (inside it), its induction
  variable, or a load of a buffer written inside it (``indices[p]`` in an
  ``scf.for`` over ``p``);
- a read sits in a loop over a dim outside L that the computation reads
  with ``lt.dim``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.dependence import accesses, inside, is_pure_index_op, repeats
from ..dialect import lt
from ..dialect.loop_tree import value_names
from ..mlir import ir
from .common import find_loop, loop_label, refuse
from .registry import Option, register

NAME = "lt-fuse"

_LOOPS = ("lt.loop", "scf.for", "scf.while", "scf.parallel", "scf.forall", "affine.for")
_ACCESS_OPS = ("memref.load", "memref.store", "lt.reduce")
_PRODUCER_ONLY = ("lt.parallel", "lt.schedule", "lt.gpu")


@register(
    NAME,
    Option("loop", int, help="outermost loop of the nest that computes a scratch buffer (L-number)"),
    Option("recompute", bool, False, help="fuse even where an element would be computed more than once"),
)
def fuse(module_op, loop: int, recompute: bool = False) -> None:
    """Inline a producer nest's per-element computation at every read of its scratch buffer."""
    target = find_loop(module_op, loop, NAME)
    producer = _Producer(target, f"L{loop} {loop_label(target)}")
    producer.analyse()
    groups = _reads(producer, loop, recompute)
    for indices, reads in groups:
        with ir.InsertionPoint(reads[0]), reads[0].location:
            value = producer.inline(indices, reads[0])
        for read in reads:
            read.results[0].replace_all_uses_with(value)
            read.erase()
    _check_unused_outside(target)
    target.erase()
    if not list(producer.buffer.uses):
        producer.buffer.owner.operation.erase()


def _check_unused_outside(loop) -> None:
    """Nothing outside ``loop`` uses a value defined in it any more (erasing
    it would leave dangling uses, which crash the verifier)."""
    for op in _nested([loop]):
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments]
        for v in values:
            for use in v.uses:
                user = use.owner if isinstance(use.owner, ir.Operation) else use.owner.operation
                if not inside(user, loop):
                    raise refuse(NAME, "internal error: a copied operation still uses a value of the producer nest", user)


# ------------------------------------------------------------ the producer


def _owner_op(value):
    owner = value.owner
    return owner.owner if isinstance(owner, ir.Block) else owner.operation


def _dim_name(op) -> str:
    return ir.StringAttr(op.attributes["dim"]).value


def _nested(ops) -> list:
    out = []
    for op in ops:
        op.walk(lambda o: (out.append(o), ir.WalkResult.ADVANCE)[1], ir.WalkOrder.PRE_ORDER)
    return out


def _function(op):
    while op is not None and op.name != "func.func":
        op = op.parent
    return op


@dataclass
class _Producer:
    loop: object
    label: str
    buffer: object = None
    axis_dims: list = field(default_factory=list)  # T's axis -> the dim written there
    chain: list = field(default_factory=list)  # the loops over T's dims, outer to inner
    body: list = field(default_factory=list)  # the per-element computation (top-level ops)
    extras: list = field(default_factory=list)  # index ops between the levels it uses
    mapped: dict = field(default_factory=dict)  # lt.dim op -> T's axis it stands for
    outer_dims: set = field(default_factory=set)  # dims read with lt.dim that loops outside L iterate
    body_dims: set = field(default_factory=set)  # dims of the computation's own loops
    direct: object = None  # the one top-level store of T when there is no reduction
    names: dict = field(default_factory=dict)

    def name(self, value) -> str:
        """The buffer's name in the loop tree (``%0``, ``B``, ``arg1``)."""
        n = self.names.get(value)
        if n is None:
            return "a scratch buffer" if _owner_op(value).name == "lt.alloc" else "a buffer"
        return n

    # -------------------------------------------------------------- checks
    def analyse(self) -> None:
        L = self.loop
        self.names = value_names(_function(L))
        nested = _nested([L])
        local = {op.results[0] for op in nested if op.name == "lt.alloc"}
        for op in nested:
            if op.name not in _ACCESS_OPS and any(isinstance(v.type, ir.MemRefType) for v in op.operands):
                raise refuse(NAME, f"{self.label} passes a buffer to {op.name}; lt-fuse follows only memref.load, memref.store and lt.reduce", op)
        written = []
        for a in accesses(L):
            if a.kind != "read" and a.buffer not in local and a.buffer not in written:
                written.append(a.buffer)
        if not written:
            raise refuse(NAME, f"{self.label} writes no buffer that outlives it: nothing to fuse", L)
        if len(written) > 1:
            names = ", ".join(self.name(b) for b in written)
            raise refuse(NAME, f"{self.label} writes {len(written)} buffers ({names}); a producer nest writes one scratch buffer", L)
        T = self.buffer = written[0]
        if isinstance(T.owner, ir.Block):
            raise refuse(NAME, f"{self.label} writes {self.name(T)}, a function argument; only a scratch buffer (lt.alloc) can be fused away", L)
        if T.owner.operation.name != "lt.alloc":
            raise refuse(NAME, f"{self.label} writes {self.name(T)}, which is not an lt.alloc", L)
        self._axis_dims()
        self._chain()
        self._writes()
        self._free_values()

    def _axis_dims(self) -> None:
        T, L = self.buffer, self.loop
        writes = [a for a in accesses(L) if a.buffer == T and a.kind != "read"]
        reads = [a for a in accesses(L) if a.buffer == T and a.kind == "read"]
        if reads:
            raise refuse(NAME, f"{self.label} reads {self.name(T)} inside the nest (only its own lt.reduce may)", reads[0].op)
        for a in writes:
            dims = []
            for x in a.indices:
                op = _owner_op(x)
                if op.name != "lt.dim" or isinstance(x.owner, ir.Block):
                    raise refuse(NAME, f"{self.label} writes {self.name(T)} at an index that is not one of its loops' dims", a.op)
                if not inside(op, L):
                    raise refuse(
                        NAME,
                        f"{self.label} writes {self.name(T)} at dim '{_dim_name(op)}' of a loop around it; "
                        "L must be the outermost loop of its producer nest",
                        a.op,
                    )
                dims.append(_dim_name(op))
            if len(set(dims)) != len(dims):
                raise refuse(NAME, f"{self.label} writes {self.name(T)} at [{', '.join(dims)}]: one dim indexes two axes", a.op)
            if not self.axis_dims:
                self.axis_dims = dims
            elif dims != self.axis_dims:
                raise refuse(
                    NAME,
                    f"{self.label} writes {self.name(T)} at [{', '.join(self.axis_dims)}] and at [{', '.join(dims)}]",
                    a.op,
                )

    def _chain(self) -> None:
        dims = self.axis_dims
        level = self.loop
        if lt.loop_dim(level) not in dims:
            raise refuse(
                NAME,
                f"{self.label} iterates dim '{lt.loop_dim(level)}', which does not index {self.name(self.buffer)} "
                f"(written at [{', '.join(dims)}]); L must be the outermost loop of its producer nest",
                level,
            )
        while True:
            self.chain.append(level)
            ops = [op for op in lt.body_ops(lt.loop_body(level)) if not is_pure_index_op(op)]
            inner = [op for op in ops if lt.is_loop(op) and lt.loop_dim(op) in dims]
            if not inner:
                break
            others = [op for op in ops if op != inner[0]]
            if others:
                raise refuse(
                    NAME,
                    f"{loop_label(level)} holds statements besides {loop_label(inner[0])}; the loops of a producer nest "
                    f"over {self.name(self.buffer)}'s dims hold only the next level",
                    others[0],
                )
            level = inner[0]
        for axis, d in enumerate(dims):
            if not any(lt.loop_dim(l) == d for l in self.chain):
                raise refuse(
                    NAME,
                    f"no loop of the nest iterates dim '{d}' ({self.name(self.buffer)}'s axis {axis}); "
                    "L must be the outermost loop of its producer nest",
                    self.loop,
                )
        self.body = lt.body_ops(lt.loop_body(self.chain[-1]))
        for op in _nested(self.body):
            if lt.is_loop(op):
                if lt.loop_dim(op) in dims:
                    raise refuse(
                        NAME,
                        f"the per-element computation under {loop_label(self.chain[-1])} iterates dim "
                        f"'{lt.loop_dim(op)}' of {self.name(self.buffer)} again",
                        op,
                    )
                self.body_dims.add(lt.loop_dim(op))
        shape = ir.MemRefType(self.buffer.type).shape
        for axis, d in enumerate(dims):
            outer = next(l for l in self.chain if lt.loop_dim(l) == d)
            covered = lt.inner_loop_extent(outer)
            if covered != shape[axis]:
                raise refuse(
                    NAME,
                    f"the nest covers {covered} of {self.name(self.buffer)}'s {shape[axis]} elements along dim '{d}'; "
                    "it must compute every element",
                    outer,
                )

    def _final(self, dim_op) -> bool:
        """Whether an lt.dim of one of T's dims gives the element's index (it
        lies below the innermost level of its dim, not at a tile's start)."""
        d = _dim_name(dim_op)
        innermost = [l for l in self.chain if lt.loop_dim(l) == d][-1]
        return inside(dim_op, innermost) and dim_op != innermost

    def _writes(self) -> None:
        T = self.buffer
        writes = [a.op for a in accesses(self.loop) if a.buffer == T]
        for w in writes:
            for x in list(w.operands)[2:]:
                if not self._final(_owner_op(x)):
                    raise refuse(
                        NAME,
                        f"{self.label} writes {self.name(T)} at the start of a tile of dim '{_dim_name(_owner_op(x))}' "
                        "(an lt.dim above the innermost level of its dim), not at the element's index",
                        w,
                    )
        first = writes[0]  # pre-order: program order
        if first.name != "memref.store" or first.parent != self.chain[-1]:
            raise refuse(
                NAME,
                f"the per-element computation does not start by storing into {self.name(T)} at its top level "
                "(a plain memref.store initialising the element)",
                first,
            )
        for w in writes[1:]:
            if w.name == "memref.store":
                raise refuse(NAME, f"the per-element computation stores into {self.name(T)} more than once; only lt.reduce may follow the first store", w)
        if len(writes) == 1:
            self.direct = first

    def _free_values(self) -> None:
        """Values the computation takes from between the levels: lt.dims of
        T's dims (the read's indices stand for them) and index arithmetic
        (copied along)."""
        L, body_ops = self.loop, _nested(self.body)
        in_body = set(body_ops)
        order = {op: i for i, op in enumerate(_nested([L]))}
        extras = set()

        def take(value, user):
            owner = value.owner
            op = _owner_op(value)
            if op in in_body or not inside(op, L):
                return
            if isinstance(owner, ir.Block):
                raise refuse(NAME, f"the per-element computation uses the iteration number of {loop_label(op)}", user)
            if op.name == "lt.dim" and _dim_name(op) in self.axis_dims:
                if not self._final(op):
                    raise refuse(
                        NAME,
                        f"the per-element computation uses lt.dim '{_dim_name(op)}' above the innermost level of its dim "
                        "(a tile's start, not the element's index)",
                        user,
                    )
                self.mapped[op] = self.axis_dims.index(_dim_name(op))
                return
            if not is_pure_index_op(op):
                raise refuse(NAME, f"the per-element computation uses a value computed between the levels of {self.label} that is not an index", user)
            if op not in extras:
                extras.add(op)
                for v in op.operands:
                    take(v, op)

        for op in body_ops:
            for v in op.operands:
                take(v, op)
        self.extras = sorted(extras, key=lambda o: order[o])
        for op in self.extras + body_ops:
            if op.name != "lt.dim":
                continue
            d = _dim_name(op)
            if d in self.axis_dims:
                self.mapped[op] = self.axis_dims.index(d)
            elif not any(lt.loop_dim(l) == d for l in lt.enclosing_loops(op) if inside(l, L)):
                self.outer_dims.add(d)

    # -------------------------------------------------------------- inlining
    def inline(self, indices: list, site) -> ir.Value:
        """Copy the computation at the current insertion point for the
        element at ``indices``; returns the element's value."""
        T = self.buffer
        element = ir.MemRefType(T.type).element_type
        mapping = {}
        for op, axis in self.mapped.items():
            mapping[op.results[0]] = indices[axis]
        taken = {l for l in lt.enclosing_loops(site)}
        rename = _fresh_dims(self.body_dims & {lt.loop_dim(l) for l in taken}, site)
        scratch = None
        if self.direct is None:
            scratch = ir.Operation.create(
                "lt.alloc", results=[ir.MemRefType.get([], element)], attributes={"dims": ir.ArrayAttr.get([])}
            ).results[0]
        clones = []
        for op in self.extras + self.body:
            if op in self.mapped:
                continue
            if self.direct is not None and op == self.direct:
                continue
            clone = op.clone()
            for o in _nested([clone]):
                for i, v in enumerate(o.operands):
                    if v in mapping:
                        o.operands[i] = mapping[v]
            for old, new in zip(op.results, clone.results):
                mapping[old] = new
            if self._rewrite(clone, indices, scratch, rename):
                clones.append(clone)  # (an erased clone must not be touched again: its memory is freed)
        if self.direct is not None:
            v = self.direct.operands[0]
            value = mapping.get(v, v)
        else:
            value = ir.Operation.create("memref.load", results=[element], operands=[scratch]).results[0]
        for clone in reversed(clones):  # index computations the copy does not need
            if (clone.name == "lt.dim" or is_pure_index_op(clone)) and not any(list(r.uses) for r in clone.results):
                clone.erase()
        return value

    def _rewrite(self, clone, indices: list, scratch, rename: dict) -> bool:
        """Point the clone's accesses of the producer's buffer at ``scratch``
        and its axis dims at ``indices``; returns whether ``clone`` itself
        is still there (a store into the buffer is replaced)."""
        T = self.buffer
        survived = True
        for o in _nested([clone]):
            if o.name == "lt.dim" and _dim_name(o) in self.axis_dims and o != clone:
                o.results[0].replace_all_uses_with(indices[self.axis_dims.index(_dim_name(o))])
                o.erase()
            elif o.name in ("memref.store", "lt.reduce") and o.operands[1] == T:
                with ir.InsertionPoint(o), o.location:
                    attrs = {n: o.attributes[n] for n in o.attributes}
                    ir.Operation.create(o.name, operands=[o.operands[0], scratch], attributes=attrs)
                survived = survived and o != clone
                o.erase()
            elif lt.is_loop(o):
                for name in _PRODUCER_ONLY:
                    if name in o.attributes:
                        del o.attributes[name]
        if survived:
            for d, fresh in rename.items():
                _rename_dim(clone, d, fresh)
        return survived


def _rename_dim(root, dim: str, fresh: str) -> None:
    """Rename ``dim`` to ``fresh`` in the loops over it inside ``root`` and
    everything they hold."""

    def visit(o):
        if lt.is_loop(o) and lt.loop_dim(o) == dim:
            for x in _nested([o]):
                if x.name in ("lt.loop", "lt.dim") and _dim_name(x) == dim:
                    x.attributes["dim"] = ir.StringAttr.get(fresh)
                elif x.name == "lt.alloc":
                    names = [ir.StringAttr(a).value for a in ir.ArrayAttr(x.attributes["dims"])]
                    x.attributes["dims"] = ir.ArrayAttr.get([ir.StringAttr.get(fresh if n == dim else n) for n in names])
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)


def _fresh_dims(dims: set, site) -> dict:
    if not dims:
        return {}
    used = set()
    for o in _nested([_function(site)]):
        if o.name in ("lt.loop", "lt.dim"):
            used.add(_dim_name(o))
        elif o.name == "lt.alloc":
            used.update(ir.StringAttr(a).value for a in ir.ArrayAttr(o.attributes["dims"]))
    out = {}
    for d in sorted(dims):
        n = 2
        while f"{d}{n}" in used:
            n += 1
        out[d] = f"{d}{n}"
        used.add(out[d])
    return out


# ---------------------------------------------------------------- the reads


def _top_level(op, block):
    """The ancestor of ``op`` (or ``op``) in ``block``, or None."""
    while op is not None and op.name not in ("func.func", "builtin.module"):
        if op.block == block:
            return op
        op = op.parent
    return None


def _reads(producer: _Producer, number: int, recompute: bool) -> list:
    """The reads of T after L, grouped by block and index values, once every
    check passed: [(indices, [read, ...])]."""
    L, T = producer.loop, producer.buffer
    block = L.block
    position = {op: i for i, op in enumerate(lt.body_ops(block))}
    here = position[L]
    name = producer.name(T)
    reads, last = [], here
    for use in T.uses:
        user = use.owner.operation if not isinstance(use.owner, ir.Operation) else use.owner
        if inside(user, L):
            continue
        top = _top_level(user, block)
        if top is None:
            raise refuse(NAME, f"{name} is used outside the ops that follow L{number} in its block", user)
        is_read = user.name == "memref.load" and user.operands[0] == T
        if position[top] < here:
            what = "read" if is_read else "written"
            raise refuse(NAME, f"{name} is {what} before its producer L{number}", user)
        if user.name in ("memref.store", "lt.reduce"):
            raise refuse(NAME, f"{name} is written after its producer L{number}; only the producer may write it", user)
        if not is_read:
            raise refuse(NAME, f"{name} is passed to {user.name}; lt-fuse replaces only plain memref.load reads", user)
        reads.append(user)
        last = max(last, position[top])
    if not reads:
        raise refuse(NAME, f"nothing reads {name} after L{number}: nothing to fuse into", L)
    _check_inputs(producer, number, lt.body_ops(block)[here + 1 : last + 1])
    for read in reads:
        _check_site(producer, number, read, block, recompute)
    groups: dict = {}
    for read in sorted(reads, key=lambda r: _preorder_index(r, block)):
        key = (read.block, tuple(list(read.operands)[1:]))
        groups.setdefault(key, []).append(read)
    if len(groups) > 1 and not recompute:
        # each copy computes every element it reads: two copies (a sum and
        # a division both reading exp(x - m)) compute each element twice
        first = next(iter(groups.values()))[0]
        raise refuse(
            NAME,
            f"{name} is read in {len(groups)} places that cannot share one computation: fused, each element of {name} "
            f"would be computed {len(groups)} times (redundant recomputation); lt-fuse{{loop={number} recompute=true}} accepts that",
            first,
        )
    return [(list(key[1]), group) for key, group in groups.items()]


def _preorder_index(op, block) -> tuple:
    path = []
    while op is not None and op.block != block:
        path.append(_index_in_block(op))
        op = op.parent
    path.append(_index_in_block(op))
    return tuple(reversed(path))


def _index_in_block(op) -> int:
    for i, o in enumerate(op.block.operations):
        if o.operation == op:
            return i
    return -1


def _check_inputs(producer: _Producer, number: int, between: list) -> None:
    """No buffer the computation reads changes between L and the reads."""
    body = producer.body
    local = {op.results[0] for op in _nested(body) if op.name == "lt.alloc"}
    inputs = {a.buffer for op in body for a in accesses(op) if a.kind == "read"} - local - {producer.buffer}
    for op in _nested(between):
        if op.name == "memref.load":
            continue
        for i, v in enumerate(op.operands):
            if v not in inputs:
                continue
            if op.name in ("memref.store", "lt.reduce") and i != 1:
                continue
            raise refuse(
                NAME,
                f"{producer.name(v)}, which the computation of {producer.name(producer.buffer)} reads, is written after L{number} "
                "and before a read; the fused computation would read the new values",
                op,
            )


_LOOP_WORDS = {"scf.for": "an scf.for", "scf.while": "an scf.while", "scf.parallel": "an scf.parallel", "scf.forall": "an scf.forall", "affine.for": "an affine.for"}


def _check_site(producer: _Producer, number: int, read, block, recompute: bool) -> None:
    indices = list(read.operands)[1:]
    loops = []
    op = read
    while op.block != block:
        op = op.parent
        if op.name in _LOOPS:
            loops.append(op)
    vectorized = [l for l in loops if ("vectorize" in lt.annotations(l) if lt.is_loop(l) else "lt.vectorize" in l.attributes)]
    if vectorized and any(op.name in _LOOPS for op in _nested(producer.body)):
        l = vectorized[0]
        raise refuse(
            NAME,
            f"the read of {producer.name(producer.buffer)} sits in {loop_label(l) if lt.is_loop(l) else 'an scf.for'} marked to "
            "vectorize, and the computation holds a loop: a vectorized loop must stay innermost",
            read,
        )
    for l in loops:
        if lt.is_loop(l) and lt.loop_dim(l) in producer.outer_dims:
            raise refuse(
                NAME,
                f"the read of {producer.name(producer.buffer)} sits in {loop_label(l)}, and the computation reads lt.dim "
                f"'{lt.loop_dim(l)}' of a loop around L{number}",
                read,
            )
    independent = [l for l in loops if not any(_depends(v, l, {}) for v in indices)]
    if not independent or recompute:
        return
    times, dynamic = 1, []
    for l in independent:
        if not lt.is_loop(l):
            dynamic.append(_LOOP_WORDS.get(l.name, l.name))
            continue
        if any(lt.is_loop(o) and lt.loop_dim(o) == lt.loop_dim(l) for o in independent if o != l and inside(l, o)):
            continue  # an inner level of a loop already counted
        times *= lt.inner_loop_extent(l)
    heads = " and ".join(loop_label(l) if lt.is_loop(l) else _LOOP_WORDS.get(l.name, l.name) for l in reversed(independent))
    count = ("once" if times == 1 and dynamic else f"{times} times") + "".join(f" per iteration of {d}" for d in dynamic)
    T = producer.name(producer.buffer)
    where = f"{T}[{', '.join(_index_text(v, producer.names) for v in indices)}]"
    raise refuse(
        NAME,
        f"the read of {where} sits in {heads}, whose iterations do not change its indices: fused, each element of {T} would be "
        f"computed {count} (redundant recomputation); lt-fuse{{loop={number} recompute=true}} accepts that",
        read,
    )


_INDEX_BINARY = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}


def _index_text(value, names: dict) -> str:
    """An index as the loop tree prints it (``i``, ``h + 1``, ``index_cast(%3)``)."""
    if value in names:
        return names[value]
    owner = value.owner
    if isinstance(owner, ir.Block):
        return "?"
    op = owner.operation
    if op.name == "lt.dim":
        return _dim_name(op)
    if op.name == "arith.constant":
        return str(ir.IntegerAttr(op.attributes["value"]).value)
    args = [_index_text(v, names) for v in op.operands]
    if op.name in _INDEX_BINARY and len(args) == 2:
        sym = _INDEX_BINARY[op.name]
        return f"{args[0]}{sym}{args[1]}" if sym == "*" else f"{args[0]} {sym} {args[1]}"
    return f"{op.name.split('.', 1)[-1]}({', '.join(args)})"


def _loops_between(op, loop) -> list:
    """The loops around ``op`` that are inside ``loop``."""
    out = []
    parent = op.parent
    while parent is not None and parent != loop:
        if parent.name in _LOOPS:
            out.append(parent)
        parent = parent.parent
    return out


def _depends(value, loop, memo: dict) -> bool:
    """Whether ``value`` may differ between iterations of ``loop``."""
    if value in memo:
        return memo[value]
    memo[value] = False
    owner = value.owner
    if isinstance(owner, ir.Block):
        result = inside(owner.owner, loop)
    else:
        op = owner.operation
        if not inside(op, loop):
            result = False
        elif op.name == "lt.dim":
            result = lt.is_loop(loop) and _dim_name(op) == lt.loop_dim(loop)
        elif len(op.regions):
            result = True
        elif op.name == "memref.load" and repeats(op.operands[0]):
            result = False  # its values repeat from one iteration to the next (a CSR's row of each position)
        elif op.name == "memref.load":
            indices = list(op.operands)[1:]
            result = any(_depends(v, loop, memo) for v in indices)
            if result and any(any(_depends(v, m, {}) for v in indices) for m in _loops_between(op, loop)):
                # a value read from memory at an index that moves with a loop
                # inside ``loop`` (CSR's column index ``indices[p]``) is taken
                # to differ between that loop's iterations only: data may
                # repeat across the outer loop's (a column gathered by many
                # rows is the same element), so fusing there recomputes
                result = False
            if not result:
                buffer = op.operands[0]
                result = any(a.buffer == buffer and a.kind != "read" for a in accesses(loop))
        else:
            result = any(_depends(v, loop, memo) for v in op.operands)
    memo[value] = result
    return result
