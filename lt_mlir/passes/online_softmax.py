"""``lt-online-softmax{loop=L}``: fuse a maximum's loop with the loops after
it that sum ``exp(x - max)``, rescaling the partial sums when the maximum
grows (the online softmax of Milakov & Gimelshein, FlashAttention's
running max and sum).

L is a loop holding an ``lt.reduce`` of kind ``max`` into a location M that
does not change across L.  The *consumers* are the loops after L in its
block (as many in a row as qualify: the group ends before the first that
does not), over L's dim with L's size, tail, inner extent and annotations, that
read M or a scratch buffer of terms an earlier consumer stores; only statements that L does not touch lie between (initialisations:
they move above L).  Each consumer reads M only as ``x - M`` under
``math.exp``, where ``x`` is the very value L took the maximum of (a load of
the element L stored it to, or the same expression over buffers nothing in
the group writes), and uses ``E = exp(x - M)`` *linearly*: through
products, quotients by values free of E, sums and differences of such
terms, stores into a scratch buffer that only the group reads, and
``lt.reduce add`` into accumulators A (any location that does not change
across L, e.g. ``O[i, e]`` under a loop over ``e``).  Then, with ``m`` the
maximum before an iteration of L and ``m'`` after it, every term a consumer
adds in that iteration is ``exp(x - m')`` times what it adds in the
original, so multiplying each A by ``exp(m - m')`` first keeps every partial
sum relative to the current maximum::

    for j { M max= x[j] }            becomes     for j { m = M ; M max= x[j] ; m' = M
    for j { S += exp(x[j] - M)                            c = exp(m - safe(m'))
            for e { O[e] += exp(x[j] - M) * V[j, e] } }   S = S * c ; for e { O[e] = O[e] * c }
                                                          S += exp(x[j] - safe(m'))
                                                          for e { O[e] += exp(x[j] - safe(m')) * V[j, e] } }

With L split first (``lt-split``, the consumers split alike), L is the
outer level: one rescale per tile of ``x``, FlashAttention's schedule.

Exactness: each A must hold 0 when the group starts -- the last statement
before the group (or between its loops) that touches A stores the constant
0 into exactly the locations the consumers accumulate into (an
initialisation nest over the same dims, as long) -- since its starting
value would be rescaled too.  ``safe(m')`` is 0 where ``m'`` is -inf (every ``x`` so far is
-inf: their terms are ``exp(-inf) = 0`` instead of ``exp(NaN)``); after L,
each A is NaN where the final M is -inf, as ``exp(-inf - -inf)`` made it in
the original.  The rewrite computes ``exp(x - m')·exp(m' - M)`` for
``exp(x - M)`` and sums in another order: floats need the function's
``lt.fastmath`` to allow reassociation (``fast``, or a flag list with
``reassoc``), as ``lt-factor``.  M keeps its meaning (the maximum) for what
follows the group.

Refuses (located, IR untouched) when L holds no ``max`` reduction whose
location is fixed across L (and across the loops inside it) and that a
following loop reads; when the maximum is taken under a condition (a term
could exceed it); when L is annotated parallel, vectorize or gpu (its
iterations would share the running maximum: apply the pass first); when no loop
after L qualifies (the message says why the first does not): another
shape, other annotations, M read otherwise than as the subtrahend of
``exp(x - M)``, ``x`` not the value L took the maximum of, E used
non-linearly (``exp(E)``, ``E + 1``, ``max= E``), stored to a buffer read
after the group or to a function argument, a term accumulated at a location
that changes across L, an accumulator not set to zero just before the
group, read or written besides its one reduction, a condition or run-time
loop around a term; when the fused loop would reorder accesses
(``dependence.reorder_conflicts``, M and the accumulators aside); when the
function's fastmath mode does not allow reassociation.
"""

from __future__ import annotations

import math

from ..analysis.dependence import accesses, defined_inside, fixed_in, index_slice, inside, is_pure_index_op, reorder_conflicts
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import PassError
from ..mlir import CmpFPredicate, arith, ir, memref
from ..mlir import math as mmath
from .common import FLOAT_TYPES, condition_between, find_loop, function_of, loop_label, refuse, walk_ops
from .factor import reassociation_allowed
from .registry import Option, register

NAME = "lt-online-softmax"

# E-linear ops: the degree of the result from the operands' (see _Consumer)
_LINEAR = {"arith.mulf", "arith.divf", "arith.negf", "arith.addf", "arith.subf"}


@register(NAME, Option("loop", int, help="the loop of the maximum (L-number): the level at which the sums of exp(x - max) join it"))
def online_softmax(module_op, loop: int) -> None:
    """Fuse a max reduction's loop with the loops summing exp(x - max) after it (running max, rescaled sums)."""
    target = find_loop(module_op, loop, NAME)
    label = f"L{loop} {loop_label(target)}"
    maxes = [a for a in accesses(target) if a.kind == "reduce:max"]
    if not maxes:
        raise refuse(NAME, f"{label} holds no lt.reduce of kind max", target)
    numbers = {op: k for k, op in enumerate(preorder_loops(module_op))}
    first_error: PassError | None = None
    for a in maxes:
        try:
            plan = _Plan(target, label, a.op, numbers)
        except PassError as e:
            first_error = first_error or e
            continue
        plan.rewrite()
        return
    raise first_error


# ----------------------------------------------------------------- helpers


def _def_op(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _float_value(op):
    if op is None or op.name != "arith.constant":
        return None
    a = op.attributes["value"]
    return a.value if isinstance(a, ir.FloatAttr) else None


def _dim_extent(root, dim: str) -> int | None:
    """Elements of ``dim`` the outermost level over it inside ``root`` covers
    (None: no loop over it there)."""
    for op in walk_ops(root):
        if op.name == "lt.loop" and lt.loop_dim(op) == dim:
            return lt.inner_loop_extent(op)
    return None


def _dim_name(value) -> str | None:
    op = _def_op(value)
    if op is not None and op.name == "lt.dim":
        return ir.StringAttr(op.attributes["dim"]).value
    return None


def _same(a, b, frozen, levels) -> bool:
    """Whether ``a`` and ``b`` compute the same thing at the same point of
    the (fused) iteration: the same value, ``lt.dim`` of one dim under the
    same levels over it (``levels(op)``), or one pure op (same name and
    attributes) on operands that are the same; loads only from buffers
    ``frozen`` holds (nothing in the group writes them)."""
    if a == b:
        return True
    oa, ob = _def_op(a), _def_op(b)
    if oa is None or ob is None or oa.name != ob.name or len(oa.operands) != len(ob.operands) or oa.regions or ob.regions:
        return False
    if oa.name == "lt.dim":
        return _dim_name(a) == _dim_name(b) and levels(oa) == levels(ob)
    if oa.name == "memref.load" and not any(oa.operands[0] == f for f in frozen):
        return False
    if not (oa.name.startswith("arith.") or oa.name.startswith("math.") or oa.name == "memref.load"):
        return False
    if {k: str(oa.attributes[k]) for k in oa.attributes} != {k: str(ob.attributes[k]) for k in ob.attributes}:
        return False
    return all(_same(x, y, frozen, levels) for x, y in zip(oa.operands, ob.operands))


def inside_loop(value, loop) -> bool:
    """Whether ``value`` is computed inside ``loop``."""
    op = _def_op(value)
    return op is not None and inside(op, loop)


def _apart_from(value, loop, dim: str) -> bool:
    """Whether index ``value`` is the same in every iteration of ``loop``
    over ``dim``'s levels: defined outside ``loop``, a constant, ``lt.dim``
    of another dim, or index arithmetic on those."""
    op = _def_op(value)
    if op is None:
        return not inside(value.owner.owner.operation, loop)
    if not inside(op, loop) or op.name == "arith.constant":
        return True
    if op.name == "lt.dim":
        return _dim_name(value) != dim
    return is_pure_index_op(op) and all(_apart_from(v, loop, dim) for v in op.operands)


def _exact(op):
    """``op`` with fast-math flags of its own, without ``nnan``/``ninf``
    (``apply_fastmath`` keeps an op's own flags): the maximum starts at -inf
    and these ops see it, whatever the function's mode assumes of its data."""
    op.operation.attributes["fastmath"] = ir.Attribute.parse("#arith.fastmath<contract>")
    return op


# ---------------------------------------------------------------- analysis


class _Consumer:
    """One loop after L: which of its values are E-linear (degree 1: a
    constant times ``exp(x - M)``), its reads of M, its accumulators and the
    scratch buffers it stores terms in.  Raises a refusal when it does not
    qualify."""

    def __init__(self, plan: "_Plan", loop, ebufs: set):
        self.plan, self.loop = plan, loop
        self.mx_loads: list = []
        self.reduces: list = []  # lt.reduce add ops of terms
        self.degree: dict = {}  # value -> 0 | 1 | "m" (a read of M) | "shift" (x - M)
        self.stored: set = set()  # buffers this loop stores terms to
        ebufs = set(ebufs)
        for op in walk_ops(loop):
            if op == loop:
                continue
            self._visit(op, ebufs)
        for v, d in self.degree.items():
            if d in ("m", "shift"):
                for use in v.uses:
                    user = use.owner
                    user = user.operation if hasattr(user, "operation") else user
                    ok = (d == "m" and user.name == "arith.subf" and use.operand_number == 1
                          and self.degree.get(user.results[0]) == "shift") or (d == "shift" and user.name == "math.exp")
                    if not ok:
                        what = "a read of M" if d == "m" else "x - M"
                        raise refuse(NAME, f"{what} in {plan.name(loop)} is used by '{user.name}': only exp(x - M) can be rescaled", user)

    def _deg(self, v) -> object:
        op = _def_op(v)
        if op is None or not inside(op, self.loop):
            return 0
        return self.degree.get(v, 0)

    def _visit(self, op, ebufs: set) -> None:
        plan, name = self.plan, op.name
        if name == "lt.loop" or is_pure_index_op(op):
            return
        if op.regions:
            if any(plan.mx_buffer == a.buffer or a.kind == "reduce:add" for a in accesses(op)):
                raise refuse(NAME, f"'{name}' in {self.plan.name(self.loop)} holds terms under a condition or a run-time loop", op)
            return
        degs = [self._deg(v) for v in op.operands]
        if name == "memref.load":
            buf = op.operands[0]
            if buf == plan.mx_buffer:
                if not all(plan.same_index(a, b) for a, b in zip(list(op.operands)[1:], plan.mx_indices)):
                    raise refuse(NAME, f"{self.plan.name(self.loop)} reads M at another location than {plan.label}'s maximum", op)
                self.degree[op.results[0]] = "m"
                self.mx_loads.append(op)
            elif any(buf == b for b in ebufs):
                self.degree[op.results[0]] = 1
            return
        if name == "memref.store":
            buf = op.operands[1]
            if buf == plan.mx_buffer:
                raise refuse(NAME, f"{self.plan.name(self.loop)} writes M", op)
            if degs[0] == 1:
                holder = _def_op(buf)
                if holder is None or holder.name != "lt.alloc":
                    raise refuse(NAME, f"a term exp(x - M) is stored to a function argument in {self.plan.name(self.loop)}: "
                                 "its partial values would stay there", op)
                ebufs.add(buf)
                self.stored.add(buf)
            elif degs[0] != 0:
                raise refuse(NAME, f"M or x - M is stored in {self.plan.name(self.loop)}", op)
            elif any(buf == b for b in ebufs):
                raise refuse(NAME, f"{self.plan.name(self.loop)} stores other values than terms to a buffer of terms", op)
            return
        if name == "lt.reduce":
            kind = ir.StringAttr(op.attributes["kind"]).value
            buf = op.operands[1]
            if buf == plan.mx_buffer:
                raise refuse(NAME, f"{self.plan.name(self.loop)} reduces into M", op)
            if degs[0] == 1:
                if kind != "add":
                    raise refuse(NAME, f"a term exp(x - M) is reduced by '{kind}' in {self.plan.name(self.loop)}: only sums rescale", op)
                guard = condition_between(op, self.loop)
                if guard is not None:
                    raise refuse(NAME, f"a term is summed under '{guard.name}' in {self.plan.name(self.loop)}", op)
                self.reduces.append(op)
            elif degs[0] != 0:
                raise refuse(NAME, f"M or x - M is reduced in {self.plan.name(self.loop)}", op)
            return
        result = op.results[0] if len(op.results) == 1 else None
        if name == "arith.subf" and degs[1] == "m":
            if degs[0] != 0 or not plan.is_maxed(op.operands[0]):
                raise refuse(NAME, f"x - M in {self.plan.name(self.loop)}: x is not the value {plan.label} takes the maximum of "
                             "(exp(x - M) <= 1 holds only for those)", op)
            self.degree[result] = "shift"
            return
        if name == "math.exp" and degs[0] == "shift":
            self.degree[result] = 1
            return
        if all(d == 0 for d in degs):
            return
        if any(d in ("m", "shift") for d in degs):
            return  # checked with the uses above
        ok = name in _LINEAR and result is not None and (
            (name == "arith.mulf" and sum(degs) == 1)
            or (name == "arith.divf" and degs[1] == 0)
            or name == "arith.negf"
            or (name in ("arith.addf", "arith.subf") and degs[0] == degs[1]))
        if not ok:
            raise refuse(NAME, f"exp(x - M) is used non-linearly by '{name}' in {self.plan.name(self.loop)}: "
                         "a rescaled term would not rescale the result", op)
        self.degree[result] = 1


class _Plan:
    """Everything ``rewrite`` needs, checked before anything changes."""

    def __init__(self, loop, label: str, reduce, numbers: dict):
        self.loop, self.label, self.reduce, self.numbers = loop, label, reduce, numbers
        operands = list(reduce.operands)
        self.maxed, self.mx_buffer, self.mx_indices = operands[0], operands[1], operands[2:]
        self.element = self.maxed.type
        self.dim = lt.loop_dim(loop)
        if not isinstance(self.element, FLOAT_TYPES):
            raise refuse(NAME, f"the maximum in {label} is not of floats (exp needs them)", reduce)
        for v in self.mx_indices:
            # one location for all of L: its index reads no dim that L or a loop inside it iterates
            if not fixed_in(v, loop) or (inside_loop(v, loop) and index_slice(v, loop) is None):
                raise refuse(NAME, f"the location of the maximum changes across the iterations of {label} or of a loop inside it",
                             reduce)
        guard = condition_between(reduce, loop)
        if guard is not None:
            raise refuse(NAME, f"the maximum is taken under '{guard.name}' in {label}: a term could then exceed it", reduce)
        for name in ("parallel", "vectorize", "gpu"):
            if name in lt.annotations(loop):
                raise refuse(NAME, f"{label} is annotated {name}: its iterations would share the running maximum and sums "
                             "(apply the pass before annotating)", loop)
        for a in accesses(loop):
            if a.buffer == self.mx_buffer and a.op != reduce:
                raise refuse(NAME, f"{label} accesses M besides its maximum", a.op)
        self._find_group()
        f = function_of(loop)
        if not reassociation_allowed(f):
            mode = ir.StringAttr(f.attributes["lt.fastmath"]).value if f is not None and "lt.fastmath" in f.attributes else "default"
            raise refuse(
                NAME,
                f"the online softmax computes exp(x - m) * exp(m - M) for exp(x - M) and sums in another order, and the "
                f"function's fastmath mode '{mode}' does not allow reassociation: use --fastmath=fast, or "
                'lt.fastmath = "fast" (or a flag list with reassoc) on the function',
                loop,
            )

    def name(self, loop) -> str:
        """How the loop tree names ``loop``: ``L2 "for n in 8"``."""
        return f"L{self.numbers[loop]} {loop_label(loop)}" if loop in self.numbers else loop_label(loop)

    # -- which values are the maximum's operand, which locations are M's
    def same_index(self, a, b) -> bool:
        return _same(a, b, (), self.levels)

    def levels(self, dim_op) -> list:
        """The levels over ``dim_op``'s dim around it, from the group's loop
        that holds it (L or a consumer; none for an op outside them) inward:
        two ``lt.dim`` of one dim are the same element only under the same
        levels."""
        dim = ir.StringAttr(dim_op.attributes["dim"]).value
        chain = []
        for level in lt.enclosing_loops(dim_op):
            if lt.loop_dim(level) == dim:
                chain.append((lt.loop_size(level), lt.loop_tail(level)))
            if level.block == self.loop.block:
                return chain[::-1]
        return []

    def is_maxed(self, x) -> bool:
        """``x`` (in a consumer) is the value L took the maximum of, at the same element."""
        if _same(x, self.maxed, self.frozen, self.levels):
            return True
        op = _def_op(x)
        if op is None or op.name != "memref.load":
            return False
        buf, idx = op.operands[0], list(op.operands)[1:]
        stores = [a for a in self.group_writes if a.buffer == buf]
        return (len(stores) == 1 and stores[0].kind == "write" and inside(stores[0].op, self.loop)
                and condition_between(stores[0].op, self.loop) is None and stores[0].op.operands[0] == self.maxed
                and all(self.same_index(p, q) for p, q in zip(idx, stores[0].indices)))

    def _find_group(self) -> None:
        loop, label = self.loop, self.label
        block_ops = lt.body_ops(loop.block)
        after = block_ops[block_ops.index(loop) + 1:]
        candidates = []  # ("loop", a loop that reads M or a buffer a loop reading M writes) or ("other", an op between)
        written_by_readers: set = set()
        for op in after:
            found = accesses(op)
            reads_m = any(a.buffer == self.mx_buffer for a in found)
            if lt.is_loop(op) and lt.loop_dim(op) == self.dim and (reads_m or any(a.buffer in written_by_readers for a in found)):
                candidates.append(("loop", op))
                written_by_readers |= {a.buffer for a in found if a.kind == "write"}
            elif reads_m:
                break
            else:
                candidates.append(("other", op))
        if not any(kind == "loop" for kind, _ in candidates):
            raise refuse(NAME, f"no loop after {label} in its block reads the maximum M", self.reduce)
        # everything the group may write, for is_maxed: first the loops that
        # could join (narrowed below)
        self.consumers: list = []
        self.between: list = []
        ebufs: set = set()
        pending: list = []
        snapshots: list = []  # (ops between kept, buffers of terms) before each consumer joined
        first_error = None
        for kind, op in candidates:
            if kind == "other":
                pending.append(op)
                continue
            group = [loop] + [c.loop for c in self.consumers] + [op]
            self.group_writes = [a for r in group for a in accesses(r) if a.kind != "read"]
            written = {a.buffer for a in self.group_writes}
            self.frozen = [a.buffer for r in group for a in accesses(r) if a.buffer not in written]
            try:
                self._check_shape(op)
                for p in pending:
                    self._check_movable(p, [loop] + [c.loop for c in self.consumers])
                c = _Consumer(self, op, ebufs)
                consumers, between = self.consumers + [c], self.between + pending
                self._check_group(consumers, between, ebufs | c.stored, final=False)
            except PassError as e:  # the group ends before this loop
                first_error = e
                break
            snapshots.append((len(self.between), set(ebufs)))
            self.consumers, self.between = consumers, between
            pending = []
            ebufs |= c.stored
        if not self.consumers:
            raise first_error
        # a buffer of terms read after the group: the group ends before the loop that stores it
        while True:
            try:
                self.accumulators = self._check_group(self.consumers, self.between, ebufs, final=True)
                break
            except PassError:
                if len(self.consumers) == 1:
                    raise
                self.consumers.pop()
                kept, ebufs = snapshots.pop()
                self.between = self.between[:kept]
        if not self.accumulators:
            raise refuse(NAME, f"no loop after {label} sums exp(x - M) (nothing to rescale)", self.consumers[0].loop)
        self.loops = [loop] + [c.loop for c in self.consumers]
        self.group_writes = [a for r in self.loops for a in accesses(r) if a.kind != "read"]
        self.ebufs = ebufs

    def _check_shape(self, op) -> None:
        loop = self.loop
        if (lt.loop_size(op), lt.loop_tail(op), lt.inner_extent(op)) != (lt.loop_size(loop), lt.loop_tail(loop), lt.inner_extent(loop)):
            raise refuse(NAME, f"{self.name(op)} reads the maximum but covers dim '{self.dim}' differently from {self.label}", op)
        if lt.annotations(op) != lt.annotations(loop):
            raise refuse(NAME, f"{self.name(op)} and {self.label} carry different annotations", op)
        if list(lt.loop_body(op).arguments[0].uses):
            raise refuse(NAME, f"the iteration number of {self.name(op)} is used", op)

    def _check_movable(self, op, earlier: list) -> None:
        """``op`` (between the group's loops) can move above them."""
        if is_pure_index_op(op):
            return
        theirs = [a for r in earlier for a in accesses(r)]
        mine = accesses(op)
        for a in mine:
            for b in theirs:
                if a.buffer == b.buffer and (a.kind != "read" or b.kind != "read"):
                    raise refuse(NAME, "a statement between the loops shares a buffer with them and one of them writes it: "
                                 "it cannot move above them", op)
        for r in earlier:
            if any(defined_inside(v, r) and not defined_inside(v, op) for o in walk_ops(op) for v in o.operands):
                raise refuse(NAME, "a statement between the loops uses a value of one of them", op)

    def _check_group(self, consumers: list, between: list, ebufs: set, final: bool) -> list:
        """The accumulators ``(buffer, reduce, zero initialisation)`` of the
        group of L and ``consumers``, or a refusal; ``final``: also check
        that no statement after the group reads a buffer of terms (a loop
        that may still join could)."""
        label = self.label
        loops = [self.loop] + [c.loop for c in consumers]
        accs: dict = {}
        for c in consumers:
            for r in c.reduces:
                accs.setdefault(r.operands[1], []).append(r)
        group_accesses = [a for r in loops for a in accesses(r)]
        accumulators = []
        for buf, reduces in accs.items():
            if len(reduces) > 1:
                raise refuse(NAME, "two reductions sum terms into one accumulator", reduces[1])
            red = reduces[0]
            for a in group_accesses:
                if a.buffer == buf and a.op != red:
                    raise refuse(NAME, "an accumulator of terms is also accessed elsewhere in the group: the partial sum would be "
                                 "observed", a.op)
            consumer = next(c.loop for c in consumers if inside(red, c.loop))
            for v in list(red.operands)[2:]:
                if not _apart_from(v, consumer, self.dim):
                    raise refuse(NAME, f"the location a term is summed into changes across the iterations of {label}", red)
            accumulators.append((buf, red, self._zero_init(buf, red, consumers, between)))
        # the buffers of terms: scratch nothing outside the group touches
        f = function_of(self.loop)
        for buf in ebufs if final else ():
            for a in accesses(f):
                if a.buffer == buf and not any(inside(a.op, r) for r in loops):
                    raise refuse(NAME, "a buffer of terms exp(x - M) is accessed after the group: its values are relative to "
                                 "partial maxima", a.op)
        why = reorder_conflicts(self.loop, loops, ignore=(self.mx_buffer,))
        if why:
            raise refuse(NAME, f"cannot fuse: {why}", consumers[-1].loop)
        return accumulators

    def _zero_init(self, buf, red, consumers: list, between: list):
        """The statement setting ``buf`` to zero right before the group."""
        block_ops = lt.body_ops(self.loop.block)
        before = block_ops[:block_ops.index(self.loop)] + between  # (the ops between move above L)
        for op in reversed(before):
            touched = [a for a in accesses(op) if a.buffer == buf] if not is_pure_index_op(op) else []
            if not touched:
                continue
            return self._check_init(op, buf, red, consumers)
        raise refuse(NAME, "an accumulator of terms is not set to zero before the group: its starting value would be rescaled", red)

    def _check_init(self, op, buf, red, consumers: list):
        bad = refuse(NAME, "an accumulator of terms is not set to zero right before the group (the statement before it "
                     "touches it otherwise): its starting value would be rescaled", red)
        stores = []
        for o in walk_ops(op):
            if o.name == "lt.loop" or is_pure_index_op(o):
                continue
            if o.name != "memref.store" or o.operands[1] != buf or _float_value(_def_op(o.operands[0])) != 0.0:
                raise bad
            stores.append(o)
        if len(stores) != 1:
            raise bad
        store = stores[0]
        consumer = next(c.loop for c in consumers if inside(red, c.loop))
        for z, r in zip(list(store.operands)[2:], list(red.operands)[2:]):
            if z == r and not inside_loop(z, op) and not inside_loop(z, consumer):
                continue  # one value from outside both
            dim = _dim_name(z)
            if dim is None or dim != _dim_name(r):
                raise refuse(NAME, "cannot tell that the zero initialisation of an accumulator covers exactly what the group "
                             "sums into it (its indices and the sum's differ)", red)
            mine = _dim_extent(op, dim) if lt.is_loop(op) else None
            theirs = _dim_extent(consumer, dim)
            if mine != theirs:
                raise refuse(NAME, f"the zero initialisation of an accumulator covers dim '{dim}' otherwise than the sum: "
                             "each location it sets must be summed into", red)
        return op

    # ---------------------------------------------------------- rewrite

    def rewrite(self) -> None:
        loop, et = self.loop, self.element
        body = lt.loop_body(loop)
        with ir.InsertionPoint.at_block_begin(loop.block), loop.location:
            zero = arith.ConstantOp(et, 0.0).result
            ninf = arith.ConstantOp(et, -math.inf).result
        for op in self.between:
            op.move_before(loop)
        # m: the maximum before this iteration
        with ir.InsertionPoint.at_block_begin(body), loop.location:
            indices = self._indices()
            old = memref.LoadOp(self.mx_buffer, indices).result
        # after L's own statements: m', safe(m'), c = exp(m - safe(m')), each A *= c
        end = ir.InsertionPoint(body)
        with end, loop.location:
            new = memref.LoadOp(self.mx_buffer, indices).result
            low = _exact(arith.CmpFOp(CmpFPredicate.OEQ, new, ninf)).result
            safe = arith.SelectOp(low, zero, new).result
            scale = _exact(mmath.ExpOp(_exact(arith.SubFOp(old, safe)).result)).result
        for buf, _red, init in self.accumulators:
            with end, loop.location:
                self._rewrite_init(init.clone(), buf, lambda v: arith.MulFOp(v, scale).result)
        arg = body.arguments[0]
        for c in self.consumers:
            for load in c.mx_loads:
                load.results[0].replace_all_uses_with(safe)
                load.erase()
            lt.loop_body(c.loop).arguments[0].replace_all_uses_with(arg)
            for op in lt.body_ops(lt.loop_body(c.loop)):
                op.detach_from_parent()
                body.append(op)
            c.loop.erase()
        # after L: A is NaN where the final maximum is -inf (the original's
        # exp(-inf - -inf)); each statement reads the maximum itself, so that
        # no value but index computations flows between them (lt-distribute
        # can then take the rows' loop apart: rows inside the tile loop)
        ops = lt.body_ops(loop.block)
        follower = ops[ops.index(loop) + 1] if ops.index(loop) + 1 < len(ops) else None
        here = ir.InsertionPoint(follower) if follower is not None else ir.InsertionPoint(loop.block)
        with here, loop.location:
            indices = self._indices()

        def fix(v):
            final = memref.LoadOp(self.mx_buffer, indices).result
            empty = _exact(arith.CmpFOp(CmpFPredicate.OEQ, final, ninf)).result
            nan = _exact(arith.SubFOp(final, final)).result  # -inf - -inf (no NaN constant: llvmlite's parser reads none)
            return arith.SelectOp(empty, nan, v).result

        for buf, _red, init in self.accumulators:
            with here, loop.location:
                self._rewrite_init(init.clone(), buf, fix)

    def _indices(self):
        """M's indices at the current insertion point: its index ops from
        inside L cloned there."""
        mapping: dict = {}
        out = []
        for v in self.mx_indices:
            ops = index_slice(v, self.loop)
            for op in ops:
                if op.results[0] in mapping:
                    continue
                clone = op.clone()
                for i, x in enumerate(clone.operands):
                    if x in mapping:
                        clone.operands[i] = mapping[x]
                mapping[op.results[0]] = clone.results[0]
            out.append(mapping.get(v, v))
        return out

    @staticmethod
    def _rewrite_init(clone, buf, make) -> None:
        """Turn the zero store of an initialisation's clone into A = make(A)."""
        for store in [o for o in walk_ops(clone) if o.name == "memref.store"]:
            idx = list(store.operands)[2:]
            with ir.InsertionPoint(store), store.location:
                value = memref.LoadOp(buf, idx).result
                memref.StoreOp(make(value), buf, idx)
            store.erase()
