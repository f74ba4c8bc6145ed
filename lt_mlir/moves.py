"""Moves as data: one ``Move`` value for every change a person, the
environment or the search makes to a schedule.

    >>> Move("split", 0, 8)            # lt-split{loop=0 factor=8}
    >>> str(Move("split", 0, 8))       # 'split_8@L0' (the search's log, LoopTune's action name)
    >>> Move.parse("swap_down@L2")

A move is (kind, loop, argument).  Each kind is one ``MoveKind`` in
``MOVES``: the pass it runs and how its options are made from the
argument, the refusals that need no pass (said here once, e.g. "L0 is
outermost"), where the selected loop goes after it (loop_tool's cursor:
a swapped loop is followed to its new place), and which arguments a search
tries.  ``Schedule``'s methods (``s.split(0, 8)``), ``lt-ui``'s keys, the
environment's actions and the search's neighbourhood are all made from
this table: a new pass reaches every surface by registering one kind.

Moves act on anything with ``parsed`` (the current module, read only) and
``apply(element)`` (run a pipeline element, raising ``LtError`` when its
pass refuses): a ``Schedule``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .dialect import lt
from .dialect.loop_tree import preorder_loops
from .errors import LtError, PassError
from .targets import get_target

SPLITS = tuple(2**k for k in range(1, 11))  # the split factors a search tries (LoopTune's split_2 .. split_1024)
MAX_UNROLL = 64  # iterations full unrolling takes (the pass's own limit)
MAX_COPIES = 256  # body copies full unrolling may make in one nest: compile time grows with them


@dataclass(frozen=True)
class Move:
    """One move: ``kind`` (a key of ``MOVES``), the loop it acts on
    (``None`` for a move of the whole module), and its argument (``None``:
    the kind's default, which may depend on the target)."""

    kind: str
    loop: int | None = None
    arg: int | str | None = None

    def __str__(self) -> str:
        name = MOVES[self.kind].action_name(self.arg) if self.kind in MOVES else self.kind
        return name if self.loop is None else f"{name}@L{self.loop}"

    @classmethod
    def parse(cls, text: str) -> "Move":
        """The move ``str(move)`` printed (``split_8@L3``, ``gpu_block@L1``,
        ``gpu_auto_256``); an unknown name is an ``LtError``."""
        name, at, loop = text.strip().partition("@L")
        try:
            index = int(loop) if at else None
        except ValueError:
            raise LtError(f"error: bad move '{text}' (expected <action>@L<loop>, e.g. split_8@L3)") from None
        kind, arg = action(name)
        return cls(kind, index, arg)


def never_searched(target) -> tuple:
    """No arguments: a search and the environment never try this kind."""
    return ()


@dataclass(frozen=True)
class MoveKind:
    """How one kind of move is made.

    ``element(move, module, target)`` -> the pipeline element (an lt pass
    and its options), raising ``LtError`` for a refusal that needs no pass;
    ``follow(move, before, after)`` -> the L-number the selected loop has
    after the move (``None``: where it was); ``search_args(target)`` -> the
    arguments a search and the environment try (empty: never tried).
    ``loop``: whether the move acts on one loop (else the whole module)."""

    name: str
    element: Callable
    doc: str
    loop: bool = True
    search_args: Callable = never_searched
    follow: Callable | None = None
    aliases: dict = field(default_factory=dict)  # action name -> argument (gpu_block -> "block")

    def action_name(self, arg) -> str:
        """The move's name with its argument: ``split_8``, ``gpu_block``, ``merge``."""
        for alias, value in self.aliases.items():
            if value == arg:
                return alias
        return self.name if arg is None else f"{self.name}_{arg}"


MOVES: dict[str, MoveKind] = {}
_ALIASES: dict[str, tuple] = {}


def register_move(kind: MoveKind) -> MoveKind:
    """Make ``kind`` a move of every surface (Schedule, lt-ui, env, search)."""
    MOVES[kind.name] = kind
    for alias, arg in kind.aliases.items():
        _ALIASES[alias] = (kind.name, arg)
    return kind


def action(name: str) -> tuple:
    """(kind, argument) of an action name: ``split_8`` -> ("split", 8),
    ``gpu_block`` -> ("gpu_map", "block"), ``merge`` -> ("merge", None)."""
    if name in _ALIASES:
        return _ALIASES[name]
    if name in MOVES:
        return name, None
    kind, _, arg = name.rpartition("_")
    if kind in MOVES:
        return kind, int(arg) if arg.lstrip("-").isdigit() else arg
    raise LtError(f"error: unknown move '{name}' (moves: {', '.join(MOVES)})")


# ------------------------------------------------------------ applying moves


_LOOPS: list = []  # [(module, its loops)]: the last few states asked about, newest last


def _loops(module) -> list:
    """``preorder_loops`` of a schedule's state (never changed once made:
    the last few states' loops are kept -- a search asks about one state
    many times, and a move about the states before and after it)."""
    for held, loops in reversed(_LOOPS):
        if held is module:
            return loops
    loops = preorder_loops(module)
    _LOOPS.append((module, loops))
    del _LOOPS[:-4]
    return loops


def _the_loop(move: Move, module):
    loops = _loops(module)
    if move.loop is None or not 0 <= move.loop < len(loops):
        have = "no loops" if not loops else ("L0" if len(loops) == 1 else f"L0..L{len(loops) - 1}")
        raise LtError(f"error: {move.kind}: no loop L{move.loop} (the loop tree has {have})")
    return loops[move.loop], loops


def element(move: Move, module, target="cpu") -> str:
    """The pipeline element ``move`` runs on ``module`` (its refusals that
    need no pass raise ``LtError`` here)."""
    kind = MOVES.get(move.kind)
    if kind is None:
        raise LtError(f"error: unknown move '{move.kind}' (moves: {', '.join(MOVES)})")
    if kind.loop:
        _the_loop(move, module)
    return kind.element(move, module, get_target(target))


def apply_move(schedule, move: Move, target="cpu", explain: bool = True, verify: bool = True) -> int | None:
    """Make ``move`` on ``schedule`` (in place, one undoable step); returns
    the L-number the selected loop has after it (``None``: unchanged).
    A refusal raises the pass's ``LtError`` and changes nothing
    (``explain=False``: not reworded in the user's terms, for a caller
    that only asks whether the move applies; ``verify=False``: the result
    is not verified, as ``try_move``)."""
    before = schedule.parsed
    schedule.apply(element(move, before, target), explain=explain, verify=verify, move=move)
    kind = MOVES[move.kind]
    if kind.follow is None:
        return move.loop
    return kind.follow(move, before, schedule.parsed)


def try_move(schedule, move: Move, target="cpu"):
    """(the schedule after ``move``, where the selected loop went), or
    ``None`` when it is refused; ``schedule`` is unchanged.  The result is
    not verified (``run_pipeline``'s ``verify=False``): a search tries many
    moves and compiles few, and compiling verifies what it compiles."""
    s = schedule.copy()
    try:
        cursor = apply_move(s, move, target, explain=False, verify=False)
    except LtError:
        return None
    return s, cursor


def search_moves(target="cpu", kinds=None) -> list:
    """(kind, argument) pairs a search tries on each loop, in a fixed order."""
    t = get_target(target)
    out = []
    for kind in MOVES.values():
        if kinds is not None and kind.name not in kinds:
            continue
        if kind.loop:
            out += [(kind.name, arg) for arg in kind.search_args(t)]
    return out


def legal_moves(schedule, target="cpu", loops=None, kinds=None) -> list:
    """[(move, schedule after it, where the selected loop went)] for every
    search move on each loop in ``loops`` (default: all) that its pass
    accepts and that changes the module, in a fixed order."""
    n = len(_loops(schedule.parsed))
    here = schedule.key
    out = []
    for loop in range(n) if loops is None else loops:
        for kind, arg in search_moves(target, kinds):
            tried = try_move(schedule, Move(kind, loop, arg), target)
            if tried is not None and tried[0].key != here:
                out.append((Move(kind, loop, arg), *tried))
    return out


def neighbours(schedule, target="cpu", kinds=None) -> list:
    """[(move, schedule)] for every move that applies to ``schedule``, one
    per distinct result, in a fixed order (what a local search expands)."""
    out, seen = [], {schedule.key}
    for move, s, _ in legal_moves(schedule, target, kinds=kinds):
        if s.key not in seen:
            seen.add(s.key)
            out.append((move, s))
    return out


def random_move(schedule, rng: np.random.Generator, target="cpu", tries: int = 30):
    """A random search move that applies and changes the schedule
    (``tries`` attempts): (move, schedule), or None."""
    n = len(_loops(schedule.parsed))
    candidates = search_moves(target)
    if n == 0 or not candidates:
        return None
    here = schedule.key
    for _ in range(tries):
        kind, arg = candidates[int(rng.integers(len(candidates)))]
        move = Move(kind, int(rng.integers(n)), arg)
        tried = try_move(schedule, move, target)
        if tried is not None and tried[0].key != here:
            return move, tried[0]
    return None


def replay(start, moves: list, target="cpu"):
    """``start`` after ``moves`` in order, or None if one does not apply."""
    s = start
    for move in moves:
        tried = try_move(s, move, target)
        if tried is None:
            return None
        s = tried[0]
    return s


# ------------------------------------------------------------ cursor tracking


def _depth(loop) -> int:
    return sum(1 for o in lt.enclosing_loops(loop) if lt.is_loop(o))


def _find(loops: list, signature: tuple, depth: int, first: int) -> int | None:
    """The first loop from L<first> on at ``depth`` with ``signature``:
    where a swapped loop went (a swap may first give the statements around
    it loops of their own, so its number is not always ``first``)."""
    for i in range(first, len(loops)):
        op = loops[i]
        if (lt.loop_dim(op), lt.loop_size(op), lt.loop_tail(op)) == signature and _depth(op) == depth:
            return i
    return None


def _signature(loop) -> tuple:
    return lt.loop_dim(loop), lt.loop_size(loop), lt.loop_tail(loop)


def _parent_index(loop, loops: list) -> int | None:
    parent = loop.parent
    return next((i for i, other in enumerate(loops) if other == parent), None)


def _follow_swap_down(move, before, after):
    loop, _ = _the_loop(move, before)
    return _find(_loops(after), _signature(loop), _depth(loop) + 1, move.loop)


def _follow_swap_up(move, before, after):
    loop, loops = _the_loop(move, before)
    return _find(_loops(after), _signature(loop), _depth(loop) - 1, _parent_index(loop, loops))


def _follow_merge(move, before, after):
    """The loop it merged into: the preceding sibling (same dim), which
    keeps its number, else its parent level."""
    loop, loops = _the_loop(move, before)
    previous = None
    for op in lt.body_ops(loop.block):
        if op == loop:
            break
        if lt.is_loop(op):
            previous = op
        elif not op.name.startswith("arith.") and op.name != "lt.dim":
            previous = None
    if previous is not None and lt.loop_dim(previous) == lt.loop_dim(loop):
        return next(i for i, other in enumerate(loops) if other == previous)
    return _parent_index(loop, loops)


# ------------------------------------------------------------ the kinds


def _int(kind: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise PassError(f"error: {kind}: option '{name}' takes an integer, got {type(value).__name__} {value!r}")
    return int(value)


def _word(kind: str, name: str, value) -> str:
    if not isinstance(value, str) or not value.replace("-", "").replace("_", "").isalnum():
        raise PassError(f"error: {kind}: option '{name}' takes a word, got {type(value).__name__} {value!r}")
    return value


def _loop_option(move: Move) -> str:
    return f"loop={_int(move.kind, 'loop', move.loop)}"


def _simple(pass_name: str):
    return lambda move, module, target: f"{pass_name}{{{_loop_option(move)}}}"


def _swap_up(move, module, target):
    loop, loops = _the_loop(move, module)
    parent = _parent_index(loop, loops)
    if parent is None:
        raise LtError(f"error: L{move.loop} is outermost: nothing to swap it with above")
    return f"lt-swap{{loop={parent}}}"


def _iterations(loop) -> int:
    """Copies of its body full unrolling makes (vectors on a vectorized loop)."""
    width = lt.annotations(loop).get("vectorize") or 1
    return -(-(lt.loop_size(loop) * lt.inner_extent(loop) + lt.loop_tail(loop)) // (width * lt.inner_extent(loop))) \
        if width > 1 else lt.loop_size(loop) + (1 if lt.loop_tail(loop) else 0)


def _unrolled_copies(loop) -> int:
    """Body copies the fully unrolled loops around and inside ``loop`` make."""
    copies = 1
    for other in lt.enclosing_loops(loop) + preorder_loops(loop):
        if lt.annotations(other).get("unroll") == 0:
            copies *= _iterations(other)
    return copies


def _unroll(move, module, target):
    """Full unrolling is refused where, with the unrolled loops around and
    inside, it would copy the body more than ``MAX_COPIES`` times (the
    pass refuses loops of more than ``MAX_UNROLL`` iterations itself)."""
    factor = 0 if move.arg is None else _int("unroll", "factor", move.arg)
    if factor == 0:
        loop, _ = _the_loop(move, module)
        copies = _iterations(loop) * _unrolled_copies(loop)
        if _iterations(loop) <= MAX_UNROLL and copies > MAX_COPIES:
            raise LtError(f"error: unroll: L{move.loop} with the unrolled loops around and inside it would make {copies} copies "
                          f"of its body (at most {MAX_COPIES}: compile time grows with them)")
    return f"lt-unroll{{{_loop_option(move)} factor={factor}}}"


def _vectorize(move, module, target):
    width = target.vector_width(lt.element_bytes(module.operation)) if move.arg is None else _int("vectorize", "width", move.arg)
    return f"lt-vectorize{{{_loop_option(move)} width={width}}}"


def _parallel(move, module, target):
    schedule = "static" if move.arg is None else _word("parallel", "schedule", move.arg)
    return f"lt-parallel{{{_loop_option(move)}" + ("" if schedule == "static" else f" schedule={schedule}") + "}"


def _gpu_map(move, module, target):
    return f"lt-gpu-map{{{_loop_option(move)} to={_word('gpu_map', 'to', move.arg)}}}"


def _toggle_thread(move, module, target):
    """CompilerGym's toggle_thread: the loop on CPU threads (or GPU blocks,
    threads inside a block loop), or that taken away."""
    loop, _ = _the_loop(move, module)
    notes = lt.annotations(loop)
    key = "gpu" if target.gpu_mapping else "parallel"
    if key in notes:
        return f"lt-unannotate{{{_loop_option(move)} name={key}}}"
    if key == "parallel":
        return f"lt-parallel{{{_loop_option(move)}}}"
    parent = loop.parent
    inside_block = parent is not None and lt.is_loop(parent) and lt.annotations(parent).get("gpu") == "block"
    return f"lt-gpu-map{{{_loop_option(move)} to={'thread' if inside_block else 'block'}}}"


def _with_int(pass_name: str, option: str, default=None):
    def make(move, module, target):
        value = default if move.arg is None else move.arg
        if value is None:
            raise PassError(f"error: {move.kind}: needs its {option} (e.g. {move.kind}_2@L{move.loop})")
        return f"{pass_name}{{{_loop_option(move)} {option}={_int(move.kind, option, value)}}}"

    return make


def _module_pass(pass_name: str, option: str | None = None, default=None):
    def make(move, module, target):
        if option is None:
            return pass_name
        value = default if move.arg is None else move.arg
        return f"{pass_name}{{{option}={_int(move.kind, option, value)}}}"

    return make


def _cpu(target) -> bool:
    return target.cpu_threads


def _gpu(target) -> bool:
    return target.gpu_mapping


# The order is the order of a search's moves and of the environment's
# extended actions (LoopTune's: swap_up, swap_down, split_2 .. split_1024,
# merge, unroll, vectorize, parallel; gpu_block, gpu_thread for GPUs).
for _kind in (
    MoveKind("swap_up", _swap_up, "interchange with the loop around it (the selected loop follows)",
             search_args=lambda t: (None,), follow=_follow_swap_up),
    MoveKind("swap_down", _simple("lt-swap"), "interchange with the one loop inside (the selected loop follows)",
             search_args=lambda t: (None,), follow=_follow_swap_down),
    MoveKind("split", _with_int("lt-split", "factor"), "an outer level and an inner one of FACTOR iterations (a tail, never padding)",
             search_args=lambda t: SPLITS),
    MoveKind("merge", _simple("lt-merge"), "fuse into the loop before it, or into its parent, over the same dim",
             search_args=lambda t: (None,), follow=_follow_merge),
    MoveKind("unroll", _unroll, "FACTOR body copies an iteration (0 or none: completely)", search_args=lambda t: (None,)),
    MoveKind("vectorize", _vectorize, "WIDTH iterations as one vector (none: the target's width)", search_args=lambda t: (None,)),
    MoveKind("parallel", _parallel, "iterations on every CPU core (static, dynamic or guided)",
             search_args=lambda t: (None,) if _cpu(t) else ()),
    MoveKind("gpu_map", _gpu_map, "iterations as CUDA blocks or threads",
             search_args=lambda t: ("block", "thread") if _gpu(t) else (), aliases={"gpu_block": "block", "gpu_thread": "thread"}),
    MoveKind("toggle_thread", _toggle_thread, "CPU threads or GPU blocks/threads on, or off"),
    MoveKind("resize", _with_int("lt-resize", "delta"), "DELTA iterations more (or fewer), from or to the parent level"),
    MoveKind("distribute", _simple("lt-distribute"), "a loop of its own for each part of the body (fission)"),
    MoveKind("fuse", _simple("lt-fuse"), "the producer nest computed where its buffer is read (no redundant recomputation)"),
    MoveKind("factor", _simple("lt-factor"), "a factor invariant in the reduced loop taken out of the sum (needs reassoc)"),
    MoveKind("online_softmax", _simple("lt-online-softmax"), "the max loop and the loops summing exp(x - max) after it as one, sums rescaled as it grows (reassoc)"),
    MoveKind("expand", _simple("lt-expand"), "each scratch buffer allocated in the loop's body given an axis over its dim, allocated before it"),
    MoveKind("expand_values", lambda m, mod, t: f"lt-expand{{{_loop_option(m)} values=true}}",
             "each value one part of the loop's body computes and another uses stored into a scratch buffer over its dim (then it distributes)"),
    MoveKind("hoist", _simple("lt-hoist"), "an expression invariant in the loop computed once before it, into a scratch buffer over the dims it uses"),
    MoveKind("symmetric", _simple("lt-symmetric"), "a symmetric output's blocks below the diagonal skipped, the upper triangle mirrored"),
    MoveKind("cache", _with_int("lt-cache", "operand"), "argument OPERAND's tile copied into a local buffer each iteration"),
    MoveKind("uncache", _simple("lt-uncache"), "remove the cache copy at the start of the body"),
    MoveKind("double_buffer", _simple("lt-double-buffer"), "the next iteration's cache tiles copied (cp.async) while this one computes (GPU)",
             search_args=lambda t: (None,) if _gpu(t) else ()),
    MoveKind("min_blocks", _with_int("lt-min-blocks", "blocks", 2), "the kernel rooted here asks for BLOCKS blocks a multiprocessor (registers capped)",
             search_args=lambda t: (2,) if _gpu(t) else ()),
    MoveKind("pad", _with_int("lt-pad", "by", 4), "the first cache in the body laid out with BY unused elements after every 32 of its last axis (no GPU bank conflicts)",
             search_args=lambda t: (4,) if _gpu(t) else ()),
    MoveKind("unannotate", lambda m, mod, t: f"lt-unannotate{{{_loop_option(m)} name={_word('unannotate', 'name', m.arg)}}}",
             "remove annotation NAME (unroll, vectorize, parallel, gpu)"),
    MoveKind("gpu_auto", _module_pass("lt-gpu-auto", "threads", 256), "every unmapped nest on blocks and THREADS threads", loop=False),
    MoveKind("shrink_buffers", _module_pass("lt-shrink-buffers"), "every scratch buffer sized to its live tile", loop=False),
    MoveKind("canonicalize", _module_pass("lt-canonicalize"), "the simplest equivalent loop tree", loop=False),
):
    register_move(_kind)
