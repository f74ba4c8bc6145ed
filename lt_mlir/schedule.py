"""Scripting the loop passes: a ``Schedule`` over one lt module.

    >>> s = Schedule(programs.matmul(33, 48, 64))
    >>> s.split(0, 8).swap(2).vectorize(4, 8)  # width: host_vector_width()
    >>> print(s.loop_tree)
    >>> kernel = s.compile()

Every method runs the registered pass of the same name through the pipeline
driver (the same code ``lt-opt`` runs), so a schedule is also a pipeline
string (``s.pipeline``).  A refused transformation raises ``PassError`` and
leaves the schedule as it was; ``undo()`` steps back.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys

import numpy as np

from .compiler import compile as compile_module
from .compiler import parse_module
from .dialect import lt
from .dialect.loop_tree import loop_tree, preorder_loops
from .dialect.lt import clone_module, module_key, module_text
from .errors import LtError, PassError
from .mlir import ir
from .moves import Move, apply_move
from .passes.common import loop_label
from .passes.registry import run_pipeline
from .passes.vectorize_data import data_loops


class _State:
    """One state of a schedule: its module (never changed once made), the
    pipeline element that made it, and its text and bytecode key, made
    when first asked."""

    __slots__ = ("module", "step", "move", "_text", "_key")

    # move: the Move that made it, a tuple of them (moves grouped into one step: ``Schedule.group``), or None
    def __init__(self, module: ir.Module, step: str | None, text: str | None = None, move: Move | tuple | None = None):
        self.module, self.step, self.move, self._text, self._key = module, step, move, text, None

    @property
    def moves(self) -> tuple | None:
        """The moves that made this state (several for a grouped step), or
        None when a pipeline element applied directly made it."""
        if self.move is None:
            return None
        return self.move if isinstance(self.move, tuple) else (self.move,)

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = module_key(self.module)
        return self._key

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = module_text(self.module)
        return self._text


_VERIFY_MOVES = contextvars.ContextVar("lt_mlir_verify_moves", default=True)


@contextlib.contextmanager
def unverified_moves():
    """Moves made in this block (on any schedule) skip the verifier after
    each pass, as ``try_move`` does (mlir-opt's ``-verify-each=0``; the
    verifier is most of a move's cost on a large module).  For a recipe's
    many internal moves, as ``Model``'s default schedule makes; the caller
    verifies the result once (``Schedule.verify``), and compiling verifies
    what it compiles."""
    token = _VERIFY_MOVES.set(False)
    try:
        yield
    finally:
        _VERIFY_MOVES.reset(token)


class Schedule:
    """A schedule over one lt module: moves (each a registered pass, the
    same code ``lt-opt`` and ``lt-ui`` run), undo/redo, the loop tree, and
    compilation.  ``module_or_text``: an lt module or its text; ``entry``:
    the function to print and compile (default: the first)."""

    def __init__(self, module_or_text, entry: str | None = None):
        # One MLIR context for the schedule's modules: making a context
        # (loading every dialect) costs far more than parsing a module.
        self._context = lt.new_context()
        if isinstance(module_or_text, str):
            module = parse_module(module_or_text, context=self._context)  # bad input: an error now, with its location
            state = _State(module, None, module_or_text)  # the text as given (moves compare ``key``s, not texts)
        else:
            text = module_or_text.operation.get_asm(enable_debug_info=True)
            state = _State(parse_module(text, context=self._context), None)
        self.entry = entry
        self._states: list[_State] = [state]
        self._undone: list[_State] = []  # what undo() took back, newest last
        self.remarks: list[str] = []

    # ------------------------------------------------------------ state
    @property
    def text(self) -> str:
        """The current IR text (with locations), printed once per state."""
        return self._states[-1].text

    @property
    def key(self) -> bytes:
        """The current module as bytecode: equal exactly when the modules
        are (locations included), and cheap -- how a search tells states
        apart without printing them."""
        return self._states[-1].key

    @property
    def file_text(self) -> str:
        """The current IR as a file to save: printed without the input's
        source locations, so errors about the saved file cite its own lines."""
        return self.parsed.operation.get_asm(assume_verified=True)

    @property
    def parsed(self) -> ir.Module:
        """The current state's module, held by the schedule (parsed once):
        read it, never change it -- ``module`` gives a copy to change."""
        return self._states[-1].module

    @property
    def module(self) -> ir.Module:
        """A copy of the current module (changing it does not change the schedule)."""
        return clone_module(self.parsed)

    @property
    def steps(self) -> list[str]:
        """The pipeline elements applied so far, in order."""
        return [state.step for state in self._states[1:]]

    @property
    def moves(self) -> list[Move] | None:
        """The moves made so far (``lt_mlir.moves.Move``s, what a search
        replays and mutates), or None when a step was a pipeline element
        applied directly (``apply``), not a move."""
        moves: list[Move] = []
        for state in self._states[1:]:
            if state.moves is None:
                return None
            moves += state.moves
        return moves

    @property
    def pipeline(self) -> str:
        """The moves so far as one pipeline string (``lt-opt -p``)."""
        return f"builtin.module({', '.join(self.steps)})"

    @property
    def loop_tree(self) -> str:
        """loop_tool's picture of the current schedule (L-numbers, annotations)."""
        return loop_tree(self.parsed, self.entry)

    def __repr__(self) -> str:
        return self.loop_tree

    def apply(self, element: str, explain: bool = True, verify: bool = True, move: Move | None = None) -> "Schedule":
        """Run one pipeline element (an lt pass with its options, or an
        upstream MLIR pass) on the current IR and record it.  A refusal
        raises ``PassError`` (``PipelineError`` for a malformed element)
        naming the loop and the line of your code that asked, and leaves
        the schedule unchanged (``explain=False``: the pass's error as it
        is, for a caller that only asks whether a move applies;
        ``verify=False``: the result is not verified, see ``run_pipeline``;
        ``move``: the ``Move`` that made ``element``, kept with the state)."""
        module = clone_module(self.parsed)
        try:
            remarks = run_pipeline(module, f"builtin.module({element})", restore=False, verify=verify and _VERIFY_MOVES.get())  # a refused move drops the copy
        except LtError as e:
            if not explain:
                raise
            raise _in_user_terms(e, element, self.parsed) from None
        self.remarks.extend(remarks)
        self._states.append(_State(module, element, move=move))
        self._undone.clear()
        return self

    def verify(self) -> "Schedule":
        """Run the verifier on the current module (an ``LtError`` if it
        fails): after moves made under ``unverified_moves``."""
        try:
            self.parsed.operation.verify()
        except ir.MLIRError as e:
            raise LtError(f"error: the schedule does not verify: {e}") from None
        return self

    def one_step(self, make) -> "Schedule":
        """Run ``make(self)`` -- moves on this schedule, e.g. a recipe -- as
        one step, which one ``undo`` takes back (``steps`` shows its
        pipeline elements as one, ``moves`` each of its moves).  If it
        raises, the schedule is as it was, redo history included, and the
        error propagates."""
        states, undone, remarks = list(self._states), list(self._undone), list(self.remarks)
        try:
            make(self)
        except BaseException:
            self._states, self._undone, self.remarks = states, undone, remarks
            raise
        grouped = self._states[len(states):]
        if len(grouped) > 1:
            parts = [state.moves for state in grouped]
            last = grouped[-1]
            state = _State(last.module, ", ".join(state.step for state in grouped), last._text,
                           move=None if any(p is None for p in parts) else tuple(m for p in parts for m in p))
            state._key = last._key
            self._states[len(states):] = [state]
        return self

    def undo(self) -> "Schedule":
        """Step back one move (as often as moves were made)."""
        if len(self._states) == 1:
            raise LtError("error: nothing to undo")
        self._undone.append(self._states.pop())
        return self

    def redo(self) -> "Schedule":
        """Make again the move undo() took back last (until a new move)."""
        if not self._undone:
            raise LtError("error: nothing to redo")
        self._states.append(self._undone.pop())
        return self

    def mark(self) -> tuple[int, int]:
        """Where the schedule is now, for ``since``."""
        return len(self._states), len(self.remarks)

    def since(self, mark: tuple[int, int]) -> tuple[tuple, tuple]:
        """The steps made since ``mark`` (its states and remarks: states are
        never changed, so they can be shared), for ``extend``."""
        return tuple(self._states[mark[0]:]), tuple(self.remarks[mark[1]:])

    def extend(self, steps: tuple[tuple, tuple]) -> None:
        """Make ``steps`` (``since``'s) again: exact where the schedule is in
        the state they were made from (the caller keys them by it)."""
        states, remarks = steps
        self._states.extend(states)
        self.remarks.extend(remarks)
        self._undone.clear()

    def copy(self) -> "Schedule":
        """An independent schedule in the same state (no redo history).
        States are never changed in place, so the copy shares them."""
        other = Schedule.__new__(Schedule)
        other.entry, other._context = self.entry, self._context
        other._states, other._undone, other.remarks = list(self._states), [], list(self.remarks)
        return other

    # ------------------------------------------------------------ moves
    def play(self, move: Move, target="cpu") -> int | None:
        """Make ``move`` (``lt_mlir.moves``); returns the L-number the
        selected loop has after it (a swapped loop is followed).  A refusal
        raises ``LtError`` located at the caller and changes nothing."""
        try:
            return apply_move(self, move, target)
        except LtError as e:
            message, where = str(e), _caller()
            if where is None or where in message:
                raise
            raise type(e)(f"{where}: {message}") from None

    def _move(self, kind: str, loop: int | None, arg=None) -> "Schedule":
        self.play(Move(kind, None if loop is None else _int("loop", loop), arg))
        return self

    # Loops are numbered L0, L1, ... in pre-order over the whole module, as
    # the loop tree prints them; every move returns the schedule (chainable).

    def split(self, loop: int, factor: int) -> "Schedule":
        """Split loop ``loop`` into an outer loop and an inner one of
        ``factor`` iterations (``for m in 33`` by 8: ``for m in 4 r 1`` over
        ``for m' in 8``; the rest is a tail iteration, never padding).
        Refuses a factor below 1 or above the loop's iterations."""
        return self._move("split", loop, _int("factor", factor))

    def swap(self, loop: int) -> "Schedule":
        """Interchange loop ``loop`` with the one loop inside it (statements
        beside that loop first get loops of their own).  Refuses when there
        is no single inner loop, both iterate the same dim, or the
        interchange would reorder dependent accesses."""
        return self._move("swap_down", loop)

    def resize(self, loop: int, delta: int) -> "Schedule":
        """Grow (``delta`` > 0) or shrink loop ``loop`` by ``delta``
        iterations, taken from or given to its parent level (the rest
        becomes the parent's tail).  Refuses sizes the parent cannot
        cover."""
        return self._move("resize", loop, _int("delta", delta))

    def unannotate(self, loop: int, name: str) -> "Schedule":
        """Remove annotation ``name`` (``"unroll"``, ``"vectorize"``,
        ``"parallel"``, ``"gpu"``) from loop ``loop``."""
        return self._move("unannotate", loop, _word("name", name))

    def merge(self, loop: int) -> "Schedule":
        """Fuse loop ``loop`` into the loop before it over the same dim and
        sizes (``for m {A}; for m {B}`` becomes ``for m {A; B}``; the
        inverse of ``distribute``), or, without one, into its parent over
        the same dim (``for m in 4 : for m' in 8`` becomes ``for m in 32``).
        Refuses loops that differ, different annotations, or a fusion that
        would reorder dependent accesses."""
        return self._move("merge", loop)

    def distribute(self, loop: int) -> "Schedule":
        """Cut loop ``loop``'s body into parts (each inner loop a part, each
        run of other statements one) and give each part a loop of its own
        (loop fission; the inverse of ``merge``).  Refuses when a value
        flows between parts, or two parts access a buffer one of them
        writes at elements other iterations also access."""
        return self._move("distribute", loop)

    def unroll(self, loop: int, factor: int = 0) -> "Schedule":
        """Unroll loop ``loop`` by ``factor`` copies of its body per
        generated iteration (0: completely, at most 64 iterations).  On a
        vectorized loop the unit is one vector: ``unroll(L, 2)`` emits two
        vector bodies per iteration, and full unrolling counts vectors."""
        return self._move("unroll", loop, _int("factor", factor))

    def vectorize(self, loop: int, width: int = 8) -> "Schedule":
        """Run ``width`` iterations of innermost loop ``loop`` as one vector
        operation (``width`` in elements; ``lowering.machine.
        host_vector_width()`` gives this CPU's; iterations ``width`` does
        not divide run as scalars).  Refuses loops that are not innermost
        or whose accesses cannot be vectors."""
        return self._move("vectorize", loop, _int("width", width))

    def vectorize_data(self, loop: int, width: int = 8) -> "Schedule":
        """Run loop ``loop`` of those whose bounds are known at run time (a
        CSR row's stored positions; counted among those loops alone, in the
        order the loop tree prints them) in groups of ``width``, the rest
        scalar (``lt-vectorize-data``).  Refuses loops that carry values, hold
        another loop, or scatter."""
        return self.apply(f"lt-vectorize-data{{loop={_int('loop', loop)} width={_int('width', width)}}}")

    def prefetch_data(self, loop: int, distance: int = 16) -> "Schedule":
        """Prefetch, at each iteration of loop ``loop`` of those whose bounds
        are known at run time (counted as ``vectorize_data`` counts), the
        rows its body reads through an index it loads, ``distance``
        iterations ahead (``lt-prefetch-data``).  Refuses vectorized loops
        and loops that gather no row."""
        return self.apply(f"lt-prefetch-data{{loop={_int('loop', loop)} distance={_int('distance', distance)}}}")

    def data_loops(self) -> int:
        """How many loops of bounds known at run time the module holds."""
        return len(data_loops(self.parsed.operation))

    def parallel(self, loop: int, schedule: str = "static") -> "Schedule":
        """Run loop ``loop``'s iterations on all CPU cores (OpenMP).
        Reductions into elements several iterations share combine
        atomically (a remark says when that is costly).  ``schedule``:
        how iterations are dealt to threads -- ``"static"`` (equal runs),
        ``"dynamic"`` or ``"guided"`` (as threads finish: iterations of
        unequal work).  Refuses nested parallel loops and iterations that
        depend on each other."""
        return self._move("parallel", loop, _word("schedule", schedule))

    def assume_parallel(self, loop: int, schedule: str = "static") -> "Schedule":
        """Mark loop ``loop`` parallel WITHOUT the dependence test: for a
        caller that knows its iterations are independent where the test
        cannot see it (APPy's ``unsafe=True``; the kernel frontend's CSR
        rows, disjoint once ``indptr`` is validated).  Recorded as a step
        of its own (``assume-parallel``), not a pass: no pipeline replays it."""
        loop = _int("loop", loop)
        module = clone_module(self.parsed)
        loops = preorder_loops(module)
        if not 0 <= loop < len(loops):
            raise PassError(f"error: assume-parallel: no loop L{loop} (the module has {len(loops)})")
        with module.context:
            loops[loop].attributes["lt.parallel"] = ir.UnitAttr.get()
            if schedule != "static":
                loops[loop].attributes["lt.schedule"] = ir.StringAttr.get(_word("schedule", schedule))
        self._states.append(_State(module, f"assume-parallel{{loop={loop}}}"))
        self._undone.clear()
        return self

    def gpu_map(self, loop: int, to: str) -> "Schedule":
        """Run loop ``loop``'s iterations as CUDA ``"block"``s or
        ``"thread"``s (tails are predicated).  Refuses mappings that break
        the kernel shape or the hardware limits, and racy loops."""
        return self._move("gpu_map", loop, _word("to", to))

    def gpu_auto(self, threads: int = 256) -> "Schedule":
        """Map every unmapped loop nest to blocks and threads (``threads``
        a block for the innermost mapped loop) and move kernel-local
        scratch buffers into shared memory; the remark names what stays
        on one thread."""
        return self._move("gpu_auto", None, _int("threads", threads))

    def shrink_buffers(self) -> "Schedule":
        """Size every scratch buffer (``lt.alloc``) to the tile live under
        the loops that share its accesses; the remark says what shrank."""
        return self._move("shrink_buffers", None)

    def online_softmax(self, loop: int) -> "Schedule":
        """Fuse loop ``loop``, which takes a maximum M, with the loops after
        it that sum ``exp(x - M)`` (softmax's normaliser, attention's
        ``E @ V``): one loop keeping the maximum so far and rescaling the
        partial sums by ``exp(old - new)`` as it grows; with ``loop`` split
        first, once a tile (FlashAttention).  Needs the function's fastmath
        to allow reassociation."""
        return self._move("online_softmax", loop)

    def expand(self, loop: int, values: bool = False) -> "Schedule":
        """Give each scratch buffer allocated in loop ``loop``'s body an axis
        over the loop's dim and allocate it before the loop (array
        expansion: the loop can then be distributed or moved inward;
        ``shrink_buffers`` sizes the buffer again).  ``values``: instead,
        store each value that one part of the body computes and another
        uses into a new buffer over the loop's dim (scalar expansion), so
        that ``distribute`` can cut the loop apart."""
        return self._move("expand_values" if values else "expand", loop)

    def symmetric(self, loop: int) -> "Schedule":
        """Compute only the blocks of a symmetric output (``A^T A``,
        covariance) that reach the diagonal, ``loop`` being the tile loop
        over one of its dims inside the other's, then mirror the upper
        triangle into the lower one (about half the flops of the full
        product; ``lt-symmetric``).  Refuses an output it cannot show to be
        symmetric (the pass's docstring says how it checks), or a loop with
        nothing to skip."""
        return self._move("symmetric", loop)

    def cache(self, loop: int, operand: int) -> "Schedule":
        """Copy the tile of function argument ``operand`` (0-based) that
        loop ``loop``'s body reads into a contiguous local buffer at the
        start of each of its iterations.  Refuses an argument written in
        the loop or not read there."""
        return self._move("cache", loop, _int("operand", operand))

    def pad(self, loop: int, by: int = 4) -> "Schedule":
        """Lay out the first ``lt-cache`` buffer in loop ``loop``'s body with
        ``by`` unused elements after every 32 of its last axis (GPU shared
        memory read without bank conflicts; results never change).  Other
        axes and strides: ``apply("lt-pad{loop=L operand=i axis=a every=E
        by=P}")``."""
        return self._move("pad", loop, _int("by", by))

    def double_buffer(self, loop: int) -> "Schedule":
        """On the GPU, copy iteration i + 1's ``lt-cache`` tiles of loop
        ``loop`` (a k-slice loop) into a second stage of shared memory
        (``cp.async``) while iteration i computes.  Refuses a loop with a
        tail, one whose body does not start with its cache copies."""
        return self._move("double_buffer", loop)

    def min_blocks(self, loop: int, blocks: int = 2) -> "Schedule":
        """The GPU kernel whose outermost block loop is ``loop`` asks for
        ``blocks`` blocks a multiprocessor (PTX ``.minnctapersm``: its
        registers capped at 65536 / (blocks x threads)).  Refuses a loop
        that is not a kernel's outermost block loop."""
        return self._move("min_blocks", loop, _int("blocks", blocks))

    def uncache(self, loop: int) -> "Schedule":
        """Remove the ``lt-cache`` copy at the start of loop ``loop``'s
        body (reads go to the argument again)."""
        return self._move("uncache", loop)

    def canonicalize(self) -> "Schedule":
        """The simplest equivalent loop tree: levels of one iteration
        disappear, a level holding only a tail-less level of its dim merges
        with it, index arithmetic folds.  Never refuses."""
        return self._move("canonicalize", None)

    # ------------------------------------------------------------ figures
    def loops(self) -> int:
        """How many loops the module has (L0 .. L{loops - 1})."""
        return len(preorder_loops(self.parsed))

    def flops(self) -> int:
        """Floating-point operations one call executes (each arith/math op on
        floats and each floating lt.reduce counts one per element)."""
        total = 0
        for f in lt.functions(self.parsed.operation):
            if f.regions[0].blocks:
                total += _count_block(f.regions[0].blocks[0], {})
        return total

    def scratch_bytes(self) -> int:
        """Bytes of scratch memory (lt.alloc) the kernel uses."""
        allocs = []
        self.parsed.operation.walk(
            lambda o: (allocs.append(o) if o.name == "lt.alloc" else None, ir.WalkResult.ADVANCE)[1]
        )
        total = 0
        for a in allocs:
            t = ir.MemRefType(a.results[0].type)
            total += lt.nbytes(t.shape, t.element_type)
        return total

    def compile(self, target: str = "cpu", **options):
        """Compile the current IR (``target="cuda"``: PTX for an NVIDIA GPU)."""
        return compile_module(self.text, self.entry, target=target, **options)


def _int(name: str, value) -> int:
    """An integer option, checked from Python as ``lt-opt`` checks it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise PassError(_located(f"error: option '{name}' takes an integer, got {type(value).__name__} {value!r}"))
    return int(value)


def _word(name: str, value) -> str:
    if not isinstance(value, str) or not value.replace("-", "").replace("_", "").isalnum():
        raise PassError(_located(f"error: option '{name}' takes a word, got {type(value).__name__} {value!r}"))
    return value


def _located(message: str) -> str:
    where = _caller()
    return f"{where}: {message}" if where else message


_IR_LOCATION = re.compile(r"^(?:-|<stdin>):(\d+):(\d+): ")
_LOOP_OPTION = re.compile(r"\bloop=(\d+)")


def _in_user_terms(error: LtError, element: str, module) -> LtError:
    """``error`` from a move, said in the user's terms: not the line of IR
    text the user never saw, but the loop (``L0 "for m in 33"``) and the
    line of the user's code that made the move."""
    message = _IR_LOCATION.sub("", str(error), count=1)
    found = _LOOP_OPTION.search(element)
    if found:
        index = int(found.group(1))
        loops = preorder_loops(module)
        if index < len(loops) and f"L{index} " not in message:
            label = f"L{index} {loop_label(loops[index])}"
            head, sep, rest = message.partition(": ")
            pass_name, sep2, why = rest.partition(": ")
            if sep and sep2 and pass_name.startswith("lt-"):
                message = f"{head}: {pass_name}: {label}: {why}"
    return type(error)(_located(message))


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _caller() -> str | None:
    """``file:line`` of the first frame outside lt_mlir, when it is the
    user's code (not a library's: the UI, pytest's plugins)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return None
    path = frame.f_code.co_filename
    if "site-packages" in path or path.startswith(("<frozen", sys.base_prefix, sys.prefix)):
        return None
    return f"{path}:{frame.f_lineno}"


def _is_float_type(t) -> bool:
    if isinstance(t, ir.VectorType):
        t = ir.VectorType(t).element_type
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def _op_flops(op) -> int:
    name = op.name
    if name == "lt.reduce":
        return 1 if _is_float_type(op.operands[0].type) else 0
    if (name.startswith("arith.") or name.startswith("math.")) and name != "arith.constant":
        if len(op.results) == 1 and _is_float_type(op.results[0].type):
            return 1
    return 0


def _count_block(block, avail: dict) -> int:
    """Float ops executed by ``block`` with each dim limited to ``avail``."""
    total = 0
    for op in lt.body_ops(block):
        if lt.is_loop(op):
            dim, size, tail = lt.loop_dim(op), lt.loop_size(op), lt.loop_tail(op)
            step = lt.inner_extent(op)
            if dim in avail:
                full, rest = min(size, avail[dim] // step), avail[dim] - min(size, avail[dim] // step) * step
            else:
                full, rest = size, tail
            body = lt.loop_body(op)
            total += full * _count_block(body, {**avail, dim: step})
            if rest:
                total += _count_block(body, {**avail, dim: rest})
        else:
            total += _op_flops(op)
            for region in op.regions:
                for b in region.blocks:
                    total += _count_block(b, avail)
    return total
