"""lt-resize{loop=L delta=D}: CompilerGym's size mode.

Random sequences of +-1 resizes on random levels of pointwise add and
(clipped) matmul programs with split levels (some with a loop of another dim
between two levels of one dim, some annotated): every accepted step must
change exactly L (size + D, same tail) and its parent level (the rest of its
extent as tail), keep every dim's extent, and compute NumPy's numbers.  The
refusals name the loop and say why.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.dialect import lt
from lt_mlir.dialect.loop_tree import preorder_loops
from lt_mlir.errors import PassError


def _levels(schedule) -> list[tuple[str, int, int]]:
    module = schedule.module  # kept alive while its ops are read
    return [(lt.loop_dim(l), lt.loop_size(l), lt.loop_tail(l)) for l in preorder_loops(module.operation)]


def _extents(schedule) -> list[tuple[str, int]]:
    """(dim, extent) of every outermost level of its dim, in pre-order."""
    out = []
    module = schedule.module
    for loop in preorder_loops(module.operation):
        dim = lt.loop_dim(loop)
        if not any(lt.loop_dim(l) == dim for l in lt.enclosing_loops(loop)):
            out.append((dim, lt.inner_loop_extent(loop)))
    return out


def _expected(schedule, loop: int, delta: int) -> list[tuple[str, int, int]]:
    """The levels the rule predicts for lt-resize{loop delta}; None where it
    must refuse (no parent level, a level or parent left empty)."""
    module = schedule.module
    loops = preorder_loops(module.operation)
    target = loops[loop]
    parent = next((l for l in lt.enclosing_loops(target) if lt.loop_dim(l) == lt.loop_dim(target)), None)
    if parent is None or lt.loop_size(target) + delta < 1:
        return None
    chunk = (lt.loop_size(target) + delta) * lt.inner_extent(target) + lt.loop_tail(target)
    whole = lt.inner_loop_extent(parent)
    if chunk > whole:
        return None
    out = _levels(schedule)
    p = next(i for i, l in enumerate(loops) if l == parent)
    out[loop] = (out[loop][0], out[loop][1] + delta, out[loop][2])
    out[p] = (out[p][0], whole // chunk, whole % chunk)
    return out


def _add_case(rng):
    n = rng.choice((37, 64, 100, 1024))
    return programs.pointwise_add(n, blocks=sorted(rng.sample((16, 8, 4, 2, 1), 2), reverse=True)), (n,), "add"


def _matmul_case(rng):
    m, n, k = rng.choice((9, 13, 16)), rng.choice((7, 11, 12)), rng.choice((19, 24, 33))
    text = programs.matmul(
        m, n, k, m_blocks=[rng.choice((2, 3, 4))], n_blocks=[rng.choice((6, 4)), 2], k_blocks=[rng.choice((5, 8))],
        clipped=rng.random() < 0.4,
    )
    return text, (m, n, k), "clipped" if "clipped" in text else "matmul"


def _reference(kind: str, xs):
    a, b = (x.astype(np.float64) for x in xs)
    if kind == "add":
        return a + b
    if kind == "matmul":
        return a @ b
    return np.maximum(a[:, :, None] * b[None, :, :], 0.0).sum(axis=1)


def _inputs(kind: str, size, rng):
    if kind == "add":
        shapes = [size, size]
    else:
        m, n, k = size
        shapes = [(m, k), (k, n)]
    return [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]


def _check(schedule, kind, size, data_rng, where: str) -> None:
    xs = _inputs(kind, size, data_rng)
    got = schedule.compile()(*xs)
    want = _reference(kind, xs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{where}\n{schedule.loop_tree}")


def test_walk_through():
    """CompilerGym's documented example, exactly."""
    s = lt_mlir.Schedule(programs.pointwise_add(1024, blocks=[1, 1]))
    s.apply("lt-resize{loop=1 delta=1}")
    assert _levels(s) == [("i", 512, 0), ("i", 2, 0), ("i", 1, 0)]
    assert s.loop_tree.splitlines()[:2] == ["for i in 512 : L0", " for i' in 2 : L1"]
    s.apply("lt-resize{loop=1 delta=1}")
    assert _levels(s) == [("i", 341, 1), ("i", 3, 0), ("i", 1, 0)]
    assert s.loop_tree.splitlines()[:3] == ["for i in 341 r 1 : L0", " for i' in 3 : L1", "  for i'' in 1 : L2"]
    rng = np.random.default_rng(0)
    _check(s, "add", (1024,), rng, "walk-through")
    s.apply("lt-resize{loop=1 delta=-2}")
    assert _levels(s) == [("i", 1024, 0), ("i", 1, 0), ("i", 1, 0)]


@pytest.mark.parametrize("seed", range(16))
def test_random_resizes(seed):
    rng = random.Random(seed)
    data_rng = np.random.default_rng(seed)
    text, size, kind = (_add_case if seed % 3 == 0 else _matmul_case)(rng)
    s = lt_mlir.Schedule(text)
    if kind != "add" and rng.random() < 0.5:
        s.swap(1)  # m, n, m': `for n` now sits between the two levels of m
    if rng.random() < 0.3:
        s.parallel(0)
    if kind == "add" and rng.random() < 0.5:
        widths = [w for w in (4, 8, 16) if w <= _levels(s)[2][1]]  # lt-vectorize refuses a width over the iterations
        if widths:
            s.vectorize(2, rng.choice(widths))
    extents = _extents(s)
    accepted = 0
    for step in range(7):
        loops = len(_levels(s))
        loop, delta = rng.randrange(loops), rng.choice((1, -1, 1, -1, 2, -2))
        element = f"lt-resize{{loop={loop} delta={delta}}}"
        before = _levels(s)
        want = _expected(s, loop, delta)
        try:
            s.apply(element)
        except PassError as e:
            assert "lt-resize" in str(e)
            assert _levels(s) == before
            continue
        assert want is not None, f"{element} accepted\n{s.loop_tree}"
        assert _levels(s) == want, f"{element}\n{s.loop_tree}"
        assert _extents(s) == extents
        accepted += 1
        _check(s, kind, size, data_rng, f"seed {seed}, {s.pipeline}")
    assert accepted or seed % 3 != 0  # the add cases always find a level to resize


REFUSALS = [
    (programs.pointwise_add(32, blocks=[8]), [], "lt-resize{loop=0 delta=1}",
     r"""L0 "for i in 4" is the outermost level of dim 'i': no iterations to take from"""),
    (programs.pointwise_add(32, blocks=[8]), [], "lt-resize{loop=0 delta=-1}",
     r"""L0 "for i in 4" is the outermost level of dim 'i': no level to give iterations to"""),
    (programs.pointwise_add(32, blocks=[8]), [], "lt-resize{loop=1 delta=0}", r"delta must not be 0"),
    (programs.pointwise_add(32, blocks=[8]), [], "lt-resize{loop=1 delta=-8}",
     r"""delta -8 would leave L1 "for i' in 8" with 0 iterations \(at least 1\)"""),
    (programs.pointwise_add(32, blocks=[8]), [], "lt-resize{loop=7 delta=1}", r"no loop L7 \(the loop tree has L0..L1\)"),
    (programs.pointwise_add(8, blocks=[8]), [], "lt-resize{loop=1 delta=1}",
     r"""L1 "for i' in 8" would cover 9 elements of dim 'i' with 9 iterations, more than the 8 of its """
     r"""parent level L0 "for i in 1\""""),
    # m, n, n' {C = 0}, n' {k}: the parent `for n` holds two levels of n.
    (programs.matmul(8, 8, 8, n_blocks=[4]), ["lt-distribute{loop=2}"], "lt-resize{loop=2 delta=1}",
     r"""the parent level L1 "for n in 2" of L2 "for n' in 4" holds 2 levels of dim 'n' side by side"""),
    # Full unrolling stops at 64 iterations, for L and for its parent.
    (programs.pointwise_add(128, blocks=[64]), ["lt-unroll{loop=1 factor=0}"], "lt-resize{loop=1 delta=1}",
     r"""L1 "for i' in 64" is unrolled completely and would have 65 iterations \(full unrolling stops at 64\)"""),
    (programs.pointwise_add(128, blocks=[2]), ["lt-unroll{loop=0 factor=0}"], "lt-resize{loop=1 delta=-1}",
     r"""L0 "for i in 64" is unrolled completely and would have 128 iterations"""),
    (programs.pointwise_add(2048, blocks=[1024]), ["lt-gpu-map{loop=0 to=block}", "lt-gpu-map{loop=1 to=thread}"],
     "lt-resize{loop=1 delta=1}", r"refused: it would leave L0 GPU-mapped although 1025 threads per block"),
]


@pytest.mark.parametrize("text, before, element, message", REFUSALS)
def test_refusals(text, before, element, message):
    s = lt_mlir.Schedule(text)
    for step in before:
        s.apply(step)
    levels = _levels(s)
    with pytest.raises(PassError, match=message) as info:
        s.apply(element)
    assert "error: lt-resize: " in str(info.value)
    assert _levels(s) == levels


def test_shrunk_tile():
    """lt-shrink-buffers sizes a tile to one iteration of L1 (two levels of i
    under it): resizing those levels is refused (L1 holds two), resizing L1
    keeps its inner extent, the tile's size, and stays correct."""
    text = """func.func @copy(%A: memref<37xf32> {lt.name = "A"}, %B: memref<37xf32> {lt.name = "B"}) {
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<37xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    "lt.loop"() ({
    ^bb0(%i2: index):
      "lt.loop"() ({
      ^bb0(%i1: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i] : memref<37xf32>
        memref.store %a, %T[%i] : memref<37xf32>
      }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %t = memref.load %T[%i] : memref<37xf32>
        memref.store %t, %B[%i] : memref<37xf32>
      }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 5 : i64} : () -> ()
  return
}
"""
    s = lt_mlir.Schedule(text)
    s.shrink_buffers()
    assert "37 -> 2 elements" in s.remarks[-1]  # the tile is one iteration of L1
    with pytest.raises(PassError, match=r"holds 2 levels of dim 'i' side by side"):
        s.apply("lt-resize{loop=2 delta=1}")
    s.apply("lt-resize{loop=1 delta=-1}")
    assert _levels(s) == [("i", 6, 1), ("i", 3, 0), ("i", 2, 0), ("i", 2, 0)]
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, 37).astype(np.float32)
    np.testing.assert_array_equal(s.compile()(a), a)
