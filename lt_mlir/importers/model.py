"""``Model``: an imported model as a callable, with its module, loop tree,
``Schedule`` and ``optimize()``.

The imported module (``linalg.import_linalg``: one nest per op, every value
in a buffer) gets the kernel frontend's redundancy-aware schedule
(``kernel.fusion.schedule``): producers fused into the nests that read them
where that computes each element once (``lt-fuse``: an element-wise chain
into the op that reads it), nests over the same rows merged, scratch
buffers shrunk, outer loops parallel and inner loops vectorized where the
passes accept it.  A contraction (a reduction into two or more dims: a
matmul, a convolution) keeps its own nest and output buffer, its epilogue
(a ``Linear``'s bias and ReLU) in the next nest: fused into the epilogue it
would accumulate one element at a time in a scalar, which no register
tile (``recipes.register_tile``, the search's seeds) can take.  On the
CPU the default schedule register-tiles each such contraction (the widest
tile of ``recipes.register_tile_shapes`` that fits, B's panels packed, one
panel a thread).  That is ``model.start``;
``lt.set_default_schedule("tuned")`` gives a model the schedule the
tuning database holds for it, and ``model.optimize()`` searches
(``lt_mlir.search``) and records its winner there.

A call takes NumPy arrays or torch CPU tensors (the model's inputs, in
order), checks their shapes and dtypes, binds the weights and returns
NumPy arrays, or torch tensors when given torch tensors.
"""

from __future__ import annotations

import numpy as np

from .. import frontend, recipes, tuning
from ..compiler import compile as compile_module
from ..compiler import compile_functions
from ..dialect import lt
from ..dialect.loop_tree import preorder_loops
from ..errors import ArgumentError, PassError
from ..kernel import fusion
from ..mlir import ir
from ..passes import prepack
from ..passes.cache import MARKER as CACHE_MARKER
from ..schedule import Schedule, unverified_moves
from ..targets import CompileOptions, get_target
from .linalg import Imported


def fused_schedule(imported: Imported, fuse: bool = True) -> Schedule:
    """The imported module with its producers fused and its nests merged
    (the module docstring), as a new start: no moves made yet."""
    nodes = {op: object() for op in imported.owners}  # fusion tells nests apart by node identity
    owners = [nodes[op] for op in imported.owners]
    kept = {id(nodes[op]) for op in (*imported.contractions, *imported.layouts) if op in nodes}
    s = Schedule(imported.text)
    if fuse:
        fusion.fuse(s, owners, kept, recompute=False)
        # a cast read by several nests (torch-mlir's f64 copy of a layer norm's input) is cheaper
        # recomputed at each read than stored and loaded again: those fuse recomputing
        loops = preorder_loops(s.parsed)
        costly = {id(o) for k, o in zip(fusion.top_loops(s), owners) if not _cheap(loops[k])}
        del loops
        fusion.fuse(s, owners, kept | costly, recompute=True)
        progress = True
        while progress:  # merge neighbouring nests over the same rows, contractions apart
            progress = False
            tops = fusion.top_loops(s)
            for k in range(len(tops) - 1, 0, -1):
                if id(owners[k]) in kept or id(owners[k - 1]) in kept:
                    continue
                if fusion.applies(s, f"lt-merge{{loop={tops[k]}}}"):
                    del owners[k]
                    progress = True
                    break
        _merge_inner(s, [id(o) in kept for o in owners])
    return Schedule(s.text)


_CASTS = {"arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.extsi",
          "arith.extui", "arith.trunci", "arith.bitcast"}
_PLUMBING = {"lt.loop", "lt.dim", "memref.load", "memref.store", "arith.constant", "arith.index_cast", "arith.addi",
             "arith.subi", "arith.muli", "arith.minsi", "arith.maxsi"}


def _cheap(nest) -> bool:
    """Whether an outermost nest only copies an input, converted: loads and
    casts, no arithmetic (what is cheaper to recompute at each read than to
    store and load; a bias add recomputed where a loop around the read
    does not change it would be done again in each of its iterations)."""
    ops: list = []

    def visit(op):
        ops.append(op.name)
        return ir.WalkResult.ADVANCE

    nest.operation.walk(visit)
    return all(name in _PLUMBING or name in _CASTS for name in ops)


def default_schedule(fused: Schedule, parallel: bool = True, width: int = 1, gpu: bool = False, shrink: bool = True) -> Schedule:
    """``fused`` with the default schedule's moves (recorded, so a search
    can start from them): each contraction into two dims register-tiled
    (with ``width`` lanes; ``_tile_contractions``), outer loops parallel where every iteration
    writes its own rows, scratch buffers shrunk (after lt-parallel: one
    tile a thread), inner loops vectorized; on a GPU target ``lt-gpu-auto``."""
    s = fused.copy()
    if gpu:
        _moves(s, [s.gpu_auto])
        return s
    with unverified_moves():  # dozens of moves on a large module: verified once, at the end
        if width > 1:
            s = _tile_contractions(s, width, parallel)
            s = _tile_channels(s, width, parallel)
        if parallel:
            for k in fusion.top_loops(s):
                if fusion.rows_private(s, k):
                    _moves(s, [lambda k=k: s.parallel(k)])
        if shrink:
            _moves(s, [s.shrink_buffers])
        if width > 1:
            for k in fusion.innermost_loops(s):
                _moves(s, [lambda k=k: s.vectorize(k, width)])
    return s.verify()


def _tile_contractions(s: Schedule, width: int, parallel: bool) -> Schedule:
    """``s`` with each contraction into two dims register-tiled
    (``recipes.register_tile``, B's panels packed, the panels on every core
    with ``parallel``): the widest tile of ``recipes.register_tile_shapes``
    that fits, else the default one, else narrower ones; a contraction no
    tile fits keeps its nest."""
    rows = recipes.default_rows(width)
    shapes = recipes.register_tile_shapes(width) + [(rows, 3), (rows, 2), (rows, 1), (2, 1), (1, 1)]
    for _ in range(16):  # each pass tiles the largest contraction not yet tiled
        for r, v in shapes:
            t = s.copy()
            try:
                recipes.register_tile(t, rows=r, vectors=v, width=width, parallel=parallel, pack=True)
            except recipes.TileTooLarge:
                continue  # a smaller tile may fit
            except PassError:
                return s  # no contraction left that a register tile takes
            s = t
            break
        else:
            return s
    return s


def _tile_channels(s: Schedule, width: int, parallel: bool) -> Schedule:
    """``s`` with the output channels of each convolution register-tiled
    (``recipes.channel_tile``, the largest nest first, until none is left
    that a tile fits)."""
    for _ in range(16):
        t = s.copy()
        try:
            recipes.channel_tile(t, width=width, parallel=parallel)
        except PassError:
            return s
        s = t
    return s


def _moves(s: Schedule, moves) -> None:
    for move in moves:
        try:
            move()
        except PassError:
            pass


def prepacked(schedule: Schedule, constant: set) -> Schedule:
    """``schedule`` with the copies that caches of the arguments in
    ``constant`` (their indices: a model's weights) make in each call moved
    into pack functions, run once (``lt-prepack``): a register-tiled
    contraction's packed panels of B."""
    s = schedule.copy()
    with unverified_moves():
        loops = preorder_loops(s.parsed)
        wanted = []  # (L-number, argument) of each cache of a constant in an outermost loop
        for k in fusion.top_loops(s):
            for op in lt.body_ops(lt.loop_body(loops[k])):
                if op.name == "lt.alloc" and CACHE_MARKER in op.attributes:
                    operand = ir.IntegerAttr(op.attributes[CACHE_MARKER]).value
                    if operand in constant:
                        wanted.append((k, operand))
        del loops
        for k, operand in reversed(wanted):  # the loops before L keep their numbers
            try:
                s.apply(f"lt-prepack{{loop={k} operand={operand}}}", explain=False)
            except PassError:
                pass
    return s.verify()


PREFETCH_BYTES = 12288  # how far ahead a packed panel is prefetched: 48 rows of 256 bytes


def prefetched(s: Schedule, arguments: set) -> Schedule:
    """``s`` with each loop that reads a row of one of the entry's
    ``arguments`` (positions: the packed weights ``prepacked`` made) along
    its dim prefetching it ``PREFETCH_BYTES`` ahead (``lt-prefetch``): a
    packed panel comes from memory while the tiles before it compute,
    not when the first tile reads it (an MLP 1024-4096-1024 at batch 64:
    6.3–6.9 → 4.9–5.8 ms on a 2-core Xeon)."""
    from ..analysis.prefetch import prefetchable_rows

    s = s.copy()
    entry = lt.functions(s.parsed)[0]
    args = list(entry.regions[0].blocks[0].arguments)
    wanted = {args[k] for k in arguments}
    moves = []
    for k, loop in enumerate(preorder_loops(s.parsed)):
        rows = [r for r in prefetchable_rows(loop) if r.buffer in wanted]
        if rows:
            moves.append((k, max(1, PREFETCH_BYTES // max(r.row_bytes for r in rows))))
    del entry, args, wanted
    with unverified_moves():
        for k, distance in moves:
            try:
                s.apply(f"lt-prefetch{{loop={k} distance={distance}}}", explain=False)
            except PassError:
                pass
    return s.verify()


def _merge_inner(s: Schedule, kept: list) -> None:
    """Merge sibling loops inside the nests that are not contractions
    (``kept[k]`` for outermost nest k): a softmax's max, exp, sum and divide
    over one row in one row loop, its temporaries then a row each."""
    progress = True
    while progress:
        progress = False
        loops = preorder_loops(s.parsed)
        tops = fusion.top_loops(s)
        for k in range(len(loops) - 1, -1, -1):
            outer = lt.enclosing_loops(loops[k])
            if not outer or kept[tops.index(loops.index(outer[-1]))]:
                continue
            if fusion.applies(s, f"lt-merge{{loop={k}}}"):
                progress = True
                break


class _Spec:
    """An input as ``random_inputs`` reads it."""

    def __init__(self, argument):
        self.shape, self.dtype, self.written = tuple(argument.shape), argument.dtype, False


class Model:
    """An imported model: ``model(*inputs)`` runs it."""

    def __init__(self, imported: Imported, name: str = "model", target: str | None = None, fuse: bool = True,
                 parallel: bool = True, vectorize: bool = True, example: list | None = None,
                 cpu: str | None = None, features: str | None = None):
        self.imported = imported
        self.name = name
        self.example = example  # NumPy arrays of the inputs (from_torch's example inputs)
        self.target = get_target(target or frontend.default_hardware()).name
        width = 1
        if vectorize and self.target == "cpu":
            sizes = [a.dtype.itemsize for a in imported.outputs] or [4]
            # the vector register of the CPU the schedule is for (``cpu``/``features``: an LLVM
            # CPU name and features, as lt-opt's --mcpu/--mattr; None: this host's)
            options = CompileOptions(cpu=cpu, features=features) if cpu or features else None
            width = get_target("cpu").vector_width(min(sizes), options)
        # what the search starts from (and the tuning database knows the model by): fused, but
        # neither parallel nor vectorized, so that the recipes' register tiles apply to its contractions
        self.tuning_start = fused_schedule(imported, fuse)
        # the default schedule: moves from there (the search's first seed)
        self.start = default_schedule(self.tuning_start, parallel=parallel, width=width,
                                      gpu=get_target(self.target).gpu_mapping, shrink=fuse)
        self.schedule = self.start.copy()
        if frontend.default_schedule() == "tuned":
            self.tuned()
        self._kernel = None
        self._key = None
        self._constants: list = []  # the kernel's arguments after the inputs, before the outputs

    # ------------------------------------------------------------ what it is
    @property
    def module(self) -> str:
        """The lt module of the current schedule (without locations)."""
        return self.schedule.file_text

    @property
    def loop_tree(self) -> str:
        return self.schedule.loop_tree

    @property
    def arguments(self) -> list:
        return self.imported.arguments

    @property
    def inputs(self) -> list:
        return self.imported.inputs

    @property
    def weights(self) -> list:
        return self.imported.weights

    @property
    def outputs(self) -> list:
        return self.imported.outputs

    def __repr__(self) -> str:
        sig = ", ".join(f"{a.name}: {a.element}{list(a.shape)}" for a in self.inputs)
        return f"<lt_mlir.Model {self.name}({sig}), {len(self.weights)} weights, {self.schedule.loops()} loops>"

    # ------------------------------------------------------------ running
    @property
    def constants(self) -> list:
        """What the compiled kernel takes between the inputs and the
        outputs: the weights, or, where the schedule packs some of them
        (register tiles of a contraction, common with AVX2's 8 lanes), the
        weights followed by their packed panels.  ``model.compile()(*inputs,
        *model.constants, *outputs)`` runs it as ``model(*inputs)`` does."""
        self.compile()
        return list(self._constants)

    def compile(self):
        """The compiled kernel of the current schedule (cached until the
        schedule changes): its arguments are the inputs, ``constants`` and
        the outputs.  On a native target the weights' packed copies
        (``prepacked``) are made here, once, not in each call."""
        key = self.schedule.key
        if self._kernel is None or key != self._key:
            weights = [w.data for w in self.weights]
            if get_target(self.target).native:
                first = len(self.inputs)
                s = prepacked(self.schedule, set(range(first, first + len(weights))))
                plan = prepack.pack_plan(s.parsed)
                if plan and get_target(self.target).cpu_threads:
                    s = prefetched(s, set(range(first + len(weights), first + len(weights) + len(plan))))
                kernels = compile_functions(s.module, target=self.target)
                args = [None] * first + weights  # the inputs' places: no pack reads them
                for name, k in plan:
                    args.append(kernels[name](args[k]))
                self._kernel = kernels[lt.functions(s.parsed)[0].attributes["sym_name"].value]
                self._constants = args[first:]
            else:
                self._kernel = compile_module(self.schedule.module, target=self.target)
                self._constants = weights
            self._key = key
        return self._kernel

    def example_inputs(self) -> list:
        """The example inputs the model was imported with, else seeded random ones (standard normal floats)."""
        if self.example is not None:
            return list(self.example)
        from ..runtime.specs import random_inputs

        return random_inputs([_Spec(a) for a in self.inputs])

    @property
    def tuning_variant(self) -> str:
        """What the model's tuning-database entries hold for besides the
        program (``tuning.program_hash``'s ``variant``): its default
        schedule's moves, which ``optimize()`` starts from.  A schedule tuned
        against another default (an older lt_mlir's) is not looked up: the
        new default may be the faster of the two."""
        return f"default schedule: {self.start.pipeline}"

    def tuned(self) -> bool:
        """Give the model the schedule the tuning database holds for it
        (``optimize()`` or ``make tune`` put it there, tuned from the
        current default schedule); False when there is none."""
        entry = tuning.lookup(self.tuning_start.text, self.target, self.tuning_variant)
        if entry is None:
            return False
        self.schedule = Schedule(entry.schedule)
        return True

    def bind(self, *inputs):
        """A call on these inputs (NumPy arrays, checked now) that returns
        fresh outputs each time, without the checks of a call: for a
        caller that runs the same inputs many times (a benchmark)."""
        arrays = [x if x.flags.c_contiguous else x.copy(order="C") for x in map(np.asarray, inputs)]
        # every output element is written by a nest (the importer stores each one), so no zeroing
        kernel = self.compile()
        return kernel.bind_inputs(*arrays, *self._constants, zero_outputs=False)

    def __call__(self, *inputs):
        specs = self.inputs
        if len(inputs) != len(specs):
            raise ArgumentError(f"{self.name} takes {len(specs)} input(s) "
                                f"({', '.join(a.name for a in specs)}); got {len(inputs)}")
        torch_out = False
        arrays = []
        for a, x in zip(specs, inputs):
            if type(x).__module__.startswith("torch"):
                if getattr(x, "device", None) is not None and str(x.device) != "cpu":
                    raise ArgumentError(f"{self.name} input '{a.name}': a tensor on {x.device}; lt_mlir models run on CPU tensors")
                if str(x.dtype).replace("torch.", "") != str(a.dtype):
                    raise ArgumentError(f"{self.name} input '{a.name}': expected dtype {a.dtype}, got {x.dtype}")
                torch_out = True
                x = x.detach().numpy()
            x = np.asarray(x)
            if not x.flags.c_contiguous:
                x = x.copy(order="C")  # (np.ascontiguousarray would make a rank-0 array rank 1)
            if x.shape != tuple(a.shape):
                raise ArgumentError(f"{self.name} input '{a.name}': expected shape {tuple(a.shape)}, got {x.shape}")
            if x.dtype != a.dtype:
                raise ArgumentError(f"{self.name} input '{a.name}': expected dtype {a.dtype}, got {x.dtype}")
            arrays.append(x)
        kernel = self.compile()
        # every output element is written by a nest (the importer stores each one): no zeroing,
        # and a large output comes from the allocator's free memory, not fresh zeroed pages
        outs = tuple(np.empty(spec.shape, spec.dtype) for spec in kernel.outputs)
        kernel(*arrays, *self._constants, *outs)
        if torch_out:
            import torch

            outs = tuple(torch.from_numpy(o) for o in outs)
        return outs[0] if len(outs) == 1 else outs

    # ------------------------------------------------------------ tuning
    def optimize(self, budget: int = 300, seconds: float | None = None, strategy: str = "evolution", workers=1, **options):
        """Search schedules of the model (``lt_mlir.search``, from the
        default schedule), keep the best and record it in the tuning
        database; returns the ``TuneResult``."""
        from ..search.cli import remember, tune

        options.setdefault("target", self.target)
        options.setdefault("seeds", [self.start])
        # the model's weights and an example input: values in the range the model sees (with random
        # weights an attention block's scores reach thousands, and its softmax tells apart schedules
        # that differ by rounding only)
        options.setdefault("inputs", tuple(self.example_inputs()) + tuple(w.data for w in self.weights))
        result = tune(self.tuning_start, strategy, budget, seconds, workers, **options)
        remember(result, strategy, self.tuning_variant)
        self.schedule = result.schedule.copy()
        return result
