"""Seeded bugs for testing the differential fuzzer (``fuzz.py``): each is a
deliberately wrong variant of one piece of the compiler, across the layers
(the dialect's identities, the analyses a pass asks, the passes, the CPU
and GPU lowerings), installed in a fuzzer worker by ``--mutant NAME`` and
never otherwise: installing one patches a function of this process, nothing
in the package reads a flag.

``python -m lt_mlir.testing.fuzz --mutants`` fuzzes with each in turn (a
fixed seed, up to ``--schedules`` schedules, 2,000 by default) and reports
whether the fuzzer caught it and after how many schedules.  A mutant it
does not catch is a hole in the fuzzer (or in its programs): the fuzzer
would miss the same bug made for real.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    layer: str
    what: str
    install: Callable[[], None]
    pass_name: str | None = None  # a mutant that is a pass of its own: the fuzzer adds it to the passes it draws


def _wrap_pass(name: str, after: Callable) -> None:
    """Run ``after(module_op, **options)`` after the registered pass ``name``
    whenever it applies (not when it refuses)."""
    from ..passes.registry import registry

    info = registry()[name]
    run = info.run

    def wrapped(module_op, **options):
        out = run(module_op, **options)
        after(module_op, **options)
        return out

    wrapped.__doc__ = run.__doc__
    info.run = wrapped


MUTANT_PASS = "lt-fuzz-drop-tail"


def register_mutant_pass() -> None:
    """Register ``lt-fuzz-drop-tail{loop=L}``: sets L's tail to 0, losing the
    last elements of its dim (wrong on purpose; refuses loops without a tail)."""
    from ..passes.common import find_loop, refuse, set_extent
    from ..passes.registry import REGISTRY, Option, register, registry

    registry()
    if MUTANT_PASS in REGISTRY:
        return
    from ..dialect import lt

    @register(MUTANT_PASS, Option("loop", int))
    def drop_tail(module_op, loop: int) -> None:
        """Drop a loop's tail (a deliberately wrong pass for testing the fuzzer)."""
        target = find_loop(module_op, loop, MUTANT_PASS)
        if not lt.loop_tail(target):
            raise refuse(MUTANT_PASS, f"L{loop} has no tail", target)
        set_extent(target, lt.loop_size(target), 0)


def _split_short_tail() -> None:
    """lt-split keeps one element too few in the tail it makes."""
    from ..dialect import lt
    from ..passes.common import find_loop, set_extent

    def after(module_op, loop: int, factor: int) -> None:
        target = find_loop(module_op, loop, "lt-split")
        if lt.loop_tail(target) > 0:
            set_extent(target, lt.loop_size(target), lt.loop_tail(target) - 1)

    _wrap_pass("lt-split", after)


def _cache_one_row_short() -> None:
    """lt-cache's copy nest copies one row (one step of its outer level) too few."""
    from ..dialect import lt
    from ..passes.common import find_loop, set_extent

    def after(module_op, loop: int, operand: int) -> None:
        target = find_loop(module_op, loop, "lt-cache")
        copy = next(op for op in lt.body_ops(lt.loop_body(target)) if lt.is_loop(op))
        if lt.loop_size(copy) > 1:
            set_extent(copy, lt.loop_size(copy) - 1, lt.loop_tail(copy))

    _wrap_pass("lt-cache", after)


def _swap_ignores_dependence() -> None:
    """lt-swap interchanges loops whatever their accesses' dependences."""
    from ..passes import swap

    swap._check_interchange = lambda outer, inner: None


def _distribute_ignores_dependence() -> None:
    """lt-distribute (and the swaps that distribute first) cut a loop whatever
    the order of the accesses its parts share."""
    from ..passes import distribute

    distribute.reorder_conflicts = lambda loop, shared: None


def _max_identity_zero() -> None:
    """A max reduction's identity is 0 instead of -inf (what privatised
    partial results, masked vector lanes and GPU combines start from)."""
    from ..dialect import lt

    identity = lt.reduce_identity

    def wrong(kind: str, element_type):
        return 0.0 if kind == "max" and isinstance(identity(kind, element_type), float) else identity(kind, element_type)

    lt.reduce_identity = wrong


def _gpu_guard_off_by_one() -> None:
    """The GPU lowering's guard on a thread or block id lets one id too many
    run (``<=`` for ``<``)."""
    from ..lowering.gpu import lt_to_gpu

    lt_to_gpu._CMPI = {**lt_to_gpu._CMPI, "ult": 7}  # arith.cmpi's ule


def _lowered_tail_short() -> None:
    """The CPU and GPU lowerings run a loop's tail iteration over one element
    fewer than its inner levels cover."""
    from ..lowering import lt_to_scf
    from ..lowering.gpu import lt_to_gpu

    iterations = lt_to_scf.iterations

    def wrong(loop, ctx):
        dim, step, parent_offset, full, rest = iterations(loop, ctx)
        return dim, step, parent_offset, full, rest - 1 if rest > 1 else rest

    lt_to_scf.iterations = wrong
    lt_to_gpu.iterations = wrong


def _merge_ignores_dependence() -> None:
    """lt-merge fuses loops whatever the order of the accesses they share."""
    from ..passes import merge

    merge.reorder_conflicts = lambda loop, shared: None


def _wrap_emitter(change: Callable) -> None:
    """Replace ``LoopEmitter.iterations`` (what lowers a loop's iterations:
    plain, unrolled or in vector groups) by ``change(original, self, first,
    last, width)``."""
    from ..lowering import lt_to_scf

    original = lt_to_scf.LoopEmitter.iterations

    def iterations(self, first: int, last: int, width: int) -> None:
        change(original, self, first, last, width)

    lt_to_scf.LoopEmitter.iterations = iterations


def _unroll_repeats() -> None:
    """A loop unrolled by a factor runs its last iteration twice."""

    def change(original, self, first, last, width):
        original(self, first, last, width)
        if self.unroll and last - first > 1:
            self.body(self.constant(last - 1), {}, self.loop, width)

    _wrap_emitter(change)


def _vector_group_past_tail() -> None:
    """A vectorized loop runs one vector group more than fit: it reads and
    writes up to a vector past the iterations its groups cover."""

    def change(original, self, first, last, width):
        original(self, first, last + 1 if width > 1 else last, width)

    _wrap_emitter(change)


def _carried_accumulator_not_reset() -> None:
    """A reduction carried in a vector across its vector loop (or a loop of
    bounds known at run time) starts from the identity once a function (or
    thread) instead of each time the loop starts: every row's sum holds the
    rows before it."""
    from ..lowering import vectorize
    from ..mlir import arith, ir, vector

    def start_once(self, loop, kind, element, carried):
        with ir.InsertionPoint.after(carried.owner), loop.location:
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            vector.StoreOp(self._identity(kind, element), carried, [zero])

    vectorize._Vectorizer._start_carried = start_once


def _online_softmax_no_rescale() -> None:
    """lt-online-softmax leaves the partial sums as they are when the
    maximum grows (no exp(old - new) rescale): every term summed before
    the last new maximum counts too much."""
    from ..passes import online_softmax

    original = online_softmax._Plan._rewrite_init
    online_softmax._Plan._rewrite_init = staticmethod(lambda clone, buf, make: original(clone, buf, lambda v: v))


def _sink_factor_keeps_product() -> None:
    """lt-sink-factor multiplies each term by the factor and keeps the
    product after the loop too: the result is a^2 times the sum."""
    from ..passes import sink_factor

    sink_factor._drop_product = lambda product, load: None


def _symmetric_skips_diagonal() -> None:
    """lt-symmetric skips a block whose last column only reaches the
    diagonal (``c0 + Bc - 1 > r0``): those diagonal elements are never
    computed, and the mirror copies only below the diagonal."""
    from ..passes import symmetric

    original = symmetric.reaches_diagonal
    symmetric.reaches_diagonal = lambda r0, c0, bc: original(r0, c0, bc - 1)


MUTANTS = {
    m.name: m
    for m in (
        Mutant("drop-tail", "pass", "a pass of its own (lt-fuzz-drop-tail) that sets a loop's tail to 0",
               register_mutant_pass,
               pass_name="lt-fuzz-drop-tail"),
        Mutant("split-short-tail", "pass", "lt-split makes a tail one element short", _split_short_tail),
        Mutant("cache-one-row-short", "pass", "lt-cache copies one row of the tile too few", _cache_one_row_short),
        Mutant("swap-ignores-dependence", "pass", "lt-swap interchanges dependent loops", _swap_ignores_dependence),
        Mutant("distribute-ignores-dependence", "analysis", "distribution ignores reorder conflicts",
               _distribute_ignores_dependence),
        Mutant("max-identity-zero", "dialect", "a max reduction's identity is 0, not -inf", _max_identity_zero),
        Mutant("gpu-guard-off-by-one", "lowering (GPU)", "the guard on a thread/block id is <= for <",
               _gpu_guard_off_by_one),
        Mutant("lowered-tail-short", "lowering", "a tail iteration runs one element short", _lowered_tail_short),
        Mutant("merge-ignores-dependence", "pass", "lt-merge fuses loops whose accesses conflict",
               _merge_ignores_dependence),
        Mutant("unroll-repeats", "lowering", "an unrolled loop runs its last iteration twice", _unroll_repeats),
        Mutant("vector-group-past-tail", "lowering (vector)", "a vectorized loop runs one vector group too many",
               _vector_group_past_tail),
        Mutant("carried-accumulator-not-reset", "lowering (vector)",
               "a vector accumulator carried across a loop starts from the identity once, not at each loop start",
               _carried_accumulator_not_reset),
        Mutant("online-softmax-no-rescale", "pass", "lt-online-softmax does not rescale the partial sums when the maximum grows",
               _online_softmax_no_rescale),
        Mutant("sink-factor-keeps-product", "pass", "lt-sink-factor multiplies the terms and keeps the product after the sum",
               _sink_factor_keeps_product),
        Mutant("symmetric-skips-diagonal", "pass", "lt-symmetric skips the blocks that reach the diagonal only at their last column",
               _symmetric_skips_diagonal),
    )
}


def install(name: str) -> Mutant:
    """Patch this process with mutant ``name``; returns it."""
    if name not in MUTANTS:
        raise ValueError(f"unknown mutant {name!r}; have {', '.join(MUTANTS)}")
    mutant = MUTANTS[name]
    mutant.install()
    return mutant
