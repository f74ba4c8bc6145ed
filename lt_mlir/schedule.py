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

from .compiler import compile as compile_module
from .compiler import parse_module
from .dialect import lt
from .dialect.loop_tree import loop_tree, preorder_loops
from .errors import LtError
from .mlir import ir
from .passes.registry import run_pipeline


class Schedule:
    def __init__(self, module_or_text, entry: str | None = None):
        if not isinstance(module_or_text, str):
            module_or_text = module_or_text.operation.get_asm(enable_debug_info=True)
        # One MLIR context for every parse of this schedule: making a context
        # (loading every dialect) costs far more than parsing a module.
        self._context = lt.new_context()
        parse_module(module_or_text, context=self._context)  # reject bad input now, with its location
        self.entry = entry
        self._states: list[tuple[str, str | None]] = [(module_or_text, None)]
        self._undone: list[tuple[str, str | None]] = []  # what undo() took back, newest last
        self.remarks: list[str] = []

    # ------------------------------------------------------------ state
    @property
    def text(self) -> str:
        return self._states[-1][0]

    @property
    def module(self) -> ir.Module:
        """A fresh parse of the current IR (changing it does not change the schedule)."""
        return parse_module(self.text, context=self._context)

    @property
    def steps(self) -> list[str]:
        """The pipeline elements applied so far, in order."""
        return [step for _, step in self._states[1:]]

    @property
    def pipeline(self) -> str:
        return f"builtin.module({', '.join(self.steps)})"

    @property
    def loop_tree(self) -> str:
        return loop_tree(self.module, self.entry)

    def __repr__(self) -> str:
        return self.loop_tree

    def apply(self, element: str) -> "Schedule":
        """Run one pipeline element (lt or upstream pass) on the current IR."""
        module = self.module
        remarks = run_pipeline(module, f"builtin.module({element})")
        self.remarks.extend(remarks)
        self._states.append((module.operation.get_asm(enable_debug_info=True), element))
        self._undone.clear()
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

    def copy(self) -> "Schedule":
        """An independent schedule in the same state (no redo history)."""
        other = Schedule.__new__(Schedule)
        other.entry, other._context = self.entry, self._context
        other._states, other._undone, other.remarks = list(self._states), [], list(self.remarks)
        return other

    # ------------------------------------------------------------ moves
    def split(self, loop: int, factor: int) -> "Schedule":
        return self.apply(f"lt-split{{loop={loop} factor={factor}}}")

    def swap(self, loop: int) -> "Schedule":
        return self.apply(f"lt-swap{{loop={loop}}}")

    def resize(self, loop: int, delta: int) -> "Schedule":
        return self.apply(f"lt-resize{{loop={loop} delta={delta}}}")

    def unannotate(self, loop: int, name: str) -> "Schedule":
        return self.apply(f"lt-unannotate{{loop={loop} name={name}}}")

    def merge(self, loop: int) -> "Schedule":
        return self.apply(f"lt-merge{{loop={loop}}}")

    def distribute(self, loop: int) -> "Schedule":
        return self.apply(f"lt-distribute{{loop={loop}}}")

    def unroll(self, loop: int, factor: int = 0) -> "Schedule":
        return self.apply(f"lt-unroll{{loop={loop} factor={factor}}}")

    def vectorize(self, loop: int, width: int = 8) -> "Schedule":
        return self.apply(f"lt-vectorize{{loop={loop} width={width}}}")

    def parallel(self, loop: int) -> "Schedule":
        return self.apply(f"lt-parallel{{loop={loop}}}")

    def gpu_map(self, loop: int, to: str) -> "Schedule":
        """Run loop ``loop``'s iterations as CUDA ``"block"``s or ``"thread"``s."""
        return self.apply(f"lt-gpu-map{{loop={loop} to={to}}}")

    def gpu_auto(self, threads: int = 256) -> "Schedule":
        """Map every unmapped loop nest to blocks and threads automatically."""
        return self.apply(f"lt-gpu-auto{{threads={threads}}}")

    def shrink_buffers(self) -> "Schedule":
        return self.apply("lt-shrink-buffers")

    def cache(self, loop: int, operand: int) -> "Schedule":
        return self.apply(f"lt-cache{{loop={loop} operand={operand}}}")

    def uncache(self, loop: int) -> "Schedule":
        return self.apply(f"lt-uncache{{loop={loop}}}")

    def canonicalize(self) -> "Schedule":
        return self.apply("lt-canonicalize")

    # ------------------------------------------------------------ figures
    def loops(self) -> int:
        module = self.module
        return len(preorder_loops(module))

    def flops(self) -> int:
        """Floating-point operations one call executes (each arith/math op on
        floats and each floating lt.reduce counts one per element)."""
        module = self.module
        total = 0
        for f in lt.functions(module.operation):
            if f.regions[0].blocks:
                total += _count_block(f.regions[0].blocks[0], {})
        return total

    def scratch_bytes(self) -> int:
        """Bytes of scratch memory (lt.alloc) the kernel uses."""
        allocs = []
        module = self.module  # keep the module alive while its ops are used
        module.operation.walk(
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
