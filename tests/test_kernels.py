"""Reference programs lowered to native code and checked against NumPy.

Every kernel here runs on guard-paged arrays (``lt_mlir.testing``) for *all*
of its arguments, inputs and outputs, once with the data flush against the
end guard and once flush against the start guard: a loop that runs one
element too far (a wrong tail, a bad split) faults instead of silently
reading its neighbour.  A fault kills the interpreter, so those runs happen
in child processes: the parent writes the inputs to an ``.npz``, two children
(one per core) compile and run batches of kernels and write the outputs
back, and the tests here compare them with references computed
independently in float64 (or exactly, for integers).  Outputs start as NaN
(or a sentinel for integers), so an element a kernel forgot to write fails
too.

Tolerances: a float32 sum of ``L`` terms computed in any order is within
``~L * eps`` of the exact value, relative to the sum of the terms' absolute
values, so results must satisfy ``|got - ref| <= 2 (L + 1) eps sum|terms|``.
Splitting a dim does not change the order of any sum (the levels of a dim
run their elements in order), so split kernels must give exactly the
numbers of the unsplit one.
"""

from __future__ import annotations

import signal
import textwrap
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.testing import PAGE_SIZE, communicate, finish_job, guarded_array, guarded_copy, start_child, start_job

# ----------------------------------------------------------------- programs


def fits(extent: int, blocks) -> bool:
    """Whether ``blocks`` is a valid split of ``extent`` (programs.levels)."""
    try:
        programs.levels(extent, *blocks)
    except ValueError:
        return False
    return True


def shift_program(n_a: int, n_b: int, trips: int, read_off: int = 0, write_off: int = 0) -> str:
    """B[i + write_off] = A[i + read_off] for i < trips, written by hand.

    With offsets that leave the buffers this is a deliberate out-of-bounds
    access (undefined behaviour for ``memref.load``/``store``, in practice
    the neighbouring address), used to show the guard pages catch it."""
    a, b = f"memref<{n_a}xf32>", f"memref<{n_b}xf32>"
    return textwrap.dedent(
        f"""\
        func.func @shift(%A: {a}, %B: {b}) {{
          %ro = arith.constant {read_off} : index
          %wo = arith.constant {write_off} : index
          "lt.loop"() ({{
          ^bb0(%i0: index):
            %i = "lt.dim"() {{dim = "i"}} : () -> index
            %r = arith.addi %i, %ro : index
            %w = arith.addi %i, %wo : index
            %x = memref.load %A[%r] : {a}
            memref.store %x, %B[%w] : {b}
          }}) {{dim = "i", size = {trips} : i64, tail = 0 : i64}} : () -> ()
          return
        }}
        """
    )


# ---------------------------------------------------------------- problems


@dataclass
class Problem:
    """One computation with its inputs, reference and the splits to try.

    ``reference(inputs)`` returns ``[(ref, scale, length), ...]`` per output:
    the exact result (float64, or integers), the sum of the absolute values
    of its terms, and how many terms each element sums."""

    name: str
    make: Callable[..., str]
    inputs: Callable[[np.random.Generator], list]
    reference: Callable[[list], list]
    splits: list = field(default_factory=lambda: [{}])


def _uniform(rng, shape, dtype=np.float32):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _add_problem(n: int, dtype: str = "f32", block_candidates=((8,), (4,), (16, 4))) -> Problem:
    np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[dtype]

    def inputs(rng):
        if dtype == "i32":
            return [rng.integers(-(1 << 20), 1 << 20, size=n, dtype=np.int32) for _ in range(2)]
        return [_uniform(rng, n, np_dtype) for _ in range(2)]

    def reference(xs):
        a, b = xs
        if dtype == "i32":
            return [(a.astype(np.int64) + b, None, 1)]
        return [(a.astype(np.float64) + b, np.abs(a.astype(np.float64)) + np.abs(b), 1)]

    splits = [{}] + [{"blocks": list(bl)} for bl in block_candidates if fits(n, bl)]
    return Problem(
        f"add_{dtype}_n{n}",
        lambda blocks=(): programs.pointwise_add(n, blocks, dtype),
        inputs,
        reference,
        splits,
    )


def _row_sum_problem(m: int, n: int, splits) -> Problem:
    def reference(xs):
        (a,) = xs
        a = a.astype(np.float64)
        return [(a.sum(axis=1), np.abs(a).sum(axis=1), n)]

    splits = [
        s for s in splits if fits(m, s.get("m_blocks", ())) and fits(n, s.get("n_blocks", ()))
    ]
    return Problem(
        f"row_sum_{m}x{n}",
        lambda **kw: programs.row_sum(m, n, **kw),
        lambda rng: [_uniform(rng, (m, n))],
        reference,
        [{}] + splits,
    )


def _matmul_problem(m: int, n: int, k: int, splits, clipped: bool = False) -> Problem:
    def reference(xs):
        a, b = (x.astype(np.float64) for x in xs)
        if clipped:
            # Products in float64 through broadcasting, clipped at 0, summed.
            prod = a[:, :, None] * b[None, :, :]  # [m, k, n]
            clipped_prod = np.maximum(prod, 0.0)
            return [(clipped_prod.sum(axis=1), clipped_prod.sum(axis=1), k)]
        return [(a @ b, np.abs(a) @ np.abs(b), k)]

    return Problem(
        f"{'clipped_' if clipped else ''}matmul_{m}x{n}x{k}",
        lambda **kw: programs.matmul(m, n, k, clipped=clipped, **kw),
        lambda rng: [_uniform(rng, (m, k)), _uniform(rng, (k, n))],
        reference,
        [{}] + splits,
    )


def _conv_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Correlation, by the definition: Y[i] = sum_j X[i + j] * W[j]."""
    n = len(x) - len(w) + 1
    y = np.zeros(n)
    for j in range(len(w)):
        y += x[j : j + n] * w[j]
    return y


def _conv_problem(n: int, w: int, block_candidates) -> Problem:
    def reference(xs):
        x, wt = (v.astype(np.float64) for v in xs)
        return [(_conv_reference(x, wt), _conv_reference(np.abs(x), np.abs(wt)), w)]

    return Problem(
        f"conv1d_{n}x{w}",
        lambda blocks=(): programs.conv1d(n, w, blocks),
        lambda rng: [_uniform(rng, n + w - 1), _uniform(rng, w)],
        reference,
        [{}] + [{"blocks": list(b)} for b in block_candidates if fits(n, b)],
    )


PROBLEMS = [
    *[_add_problem(n) for n in (1, 7, 33, 1024, 1 << 20)],
    _add_problem(33, "f64"),
    _add_problem(1000, "f64", ((64,), (16, 4))),
    _add_problem(33, "i32"),
    _add_problem(1000, "i32", ((64,), (16, 4))),
    _row_sum_problem(1, 1, []),
    _row_sum_problem(
        7,
        33,
        [
            {"m_blocks": [4]},
            {"n_blocks": [8]},
            {"m_blocks": [4], "n_blocks": [16, 4]},
            {"m_blocks": [2], "n_blocks": [32]},
        ],
    ),
    _matmul_problem(
        33,
        48,
        64,
        [
            {"m_blocks": [8], "n_blocks": [32], "k_blocks": [16, 4]},
            {"m_blocks": [16, 4], "n_blocks": [7], "k_blocks": [48]},
            {"m_blocks": [32], "n_blocks": [16, 4], "k_blocks": [5]},
        ],
    ),
    _matmul_problem(256, 256, 256, [{"m_blocks": [64, 8], "n_blocks": [32], "k_blocks": [16]}]),
    _matmul_problem(
        33,
        48,
        64,
        [
            {"m_blocks": [8], "n_blocks": [32], "k_blocks": [16, 4]},
            {"m_blocks": [16, 4], "n_blocks": [48], "k_blocks": [7]},
        ],
        clipped=True,
    ),
    _conv_problem(100, 7, [(16,), (8, 3)]),
    _conv_problem(33, 5, [(8,), (32,)]),
    _conv_problem(1, 1, []),
    Problem(
        "shift_in_bounds",
        lambda: shift_program(8, 7, 7, read_off=1),
        lambda rng: [_uniform(rng, 8)],
        lambda xs: [(xs[0][1:].astype(np.float64), np.abs(xs[0][1:]).astype(np.float64), 1)],
    ),
]


def _split_label(split: dict) -> str:
    if not split:
        return "unsplit"
    return ",".join(f"{k.replace('_blocks', '')}={'x'.join(map(str, v))}" for k, v in split.items())


@dataclass(frozen=True)
class Variant:
    problem: int  # index into PROBLEMS
    split: int  # index into PROBLEMS[problem].splits

    @property
    def id(self) -> str:
        p = PROBLEMS[self.problem]
        return f"{p.name}[{_split_label(p.splits[self.split])}]"

    @property
    def key(self) -> str:
        return f"p{self.problem}s{self.split}"

    def text(self) -> str:
        p = PROBLEMS[self.problem]
        return p.make(**p.splits[self.split])


VARIANTS = [Variant(i, j) for i, p in enumerate(PROBLEMS) for j in range(len(p.splits))]
SIDES = ("end", "start")

# ------------------------------------------------------------ child process

# Batches of kernels run on guard-paged arrays in a child process
# (``python -m lt_mlir.testing job.json``), so a crash names its kernel
# instead of killing pytest.


@pytest.fixture(scope="module")
def guarded_runs(tmp_path_factory):
    """Runs every variant, guarded, in two child processes; returns
    ``(inputs per problem, {variant key: ChildRun})``."""
    tmp = tmp_path_factory.mktemp("guarded")
    all_inputs, named = {}, {}
    for i, p in enumerate(PROBLEMS):
        xs = p.inputs(np.random.default_rng(1000 + i))
        all_inputs[i] = xs
        for j, x in enumerate(xs):
            named[f"p{i}_{j}"] = x
    np.savez(tmp / "inputs.npz", **named)

    # Two balanced batches, one per core: deal the variants out alternately,
    # biggest first.
    def cost(v):
        return sum(x.size for x in all_inputs[v.problem])

    batches = [[], []]
    for n, v in enumerate(sorted(VARIANTS, key=cost, reverse=True)):
        batches[n % 2].append(v)
    procs = []
    for b, batch in enumerate(batches):
        job = {
            "inputs": str(tmp / "inputs.npz"),
            "outputs": str(tmp / f"outputs{b}.npz"),
            "cases": [
                {
                    "key": v.key,
                    "id": v.id,
                    "text": v.text(),
                    "inputs": [f"p{v.problem}_{j}" for j in range(len(all_inputs[v.problem]))],
                }
                for v in batch
            ],
        }
        procs.append((batch, job, start_job(job, str(tmp / f"job{b}.json"))))
    runs = {}
    for batch, job, proc in procs:
        run = finish_job(proc, job)
        for v in batch:
            runs[v.key] = run
    return all_inputs, runs


def _assert_matches(got: np.ndarray, ref, scale, length: int, what: str) -> None:
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    if scale is None:  # integers: exact
        assert np.array_equal(got.astype(np.int64), ref), (
            f"{what}: {np.count_nonzero(got != ref)} elements differ; first at "
            f"{np.argwhere(got != ref)[0].tolist()}"
        )
        return
    eps = np.finfo(got.dtype).eps
    bound = 2.0 * (length + 1) * eps * scale + np.finfo(got.dtype).tiny
    err = np.abs(got.astype(np.float64) - ref)
    bad = ~(err <= bound)  # NaN (an unwritten element) counts as bad
    if bad.any():
        first = tuple(np.argwhere(bad)[0].tolist())
        pytest.fail(
            f"{what}: {np.count_nonzero(bad)} of {got.size} elements off; first at {first}: "
            f"got {got[first]!r}, expected {ref[first]!r} (bound {bound[first]:.3g})"
        )


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
def test_guarded_kernel_matches_numpy(variant, guarded_runs):
    all_inputs, runs = guarded_runs
    run = runs[variant.key]
    if run.returncode != 0:
        pytest.fail(run.describe(), pytrace=False)
    for side in SIDES:
        if f"OK {variant.key} {side}" not in run.stdout.splitlines():
            pytest.fail(f"{variant.id} (guard at {side}) did not run\n{run.describe()}", pytrace=False)
    problem = PROBLEMS[variant.problem]
    refs = problem.reference(all_inputs[variant.problem])
    unsplit = Variant(variant.problem, 0)
    for j, (ref, scale, length) in enumerate(refs):
        got = {side: run.outputs[f"{variant.key}_{side}_{j}"] for side in SIDES}
        for side in SIDES:
            _assert_matches(got[side], ref, scale, length, f"{variant.id} output {j} (guard at {side})")
        np.testing.assert_array_equal(got["end"], got["start"], err_msg="guard side changed the numbers")
        if variant.split:
            base = runs[unsplit.key]
            if base.returncode != 0:
                pytest.fail(f"the unsplit {unsplit.id} did not run: {base.describe()}", pytrace=False)
            np.testing.assert_array_equal(
                got["end"], base.outputs[f"{unsplit.key}_end_{j}"], err_msg=f"{variant.id} differs from unsplit"
            )


def test_every_requested_split_is_present():
    """The split lists are filtered by ``fits``; make sure the filtering did
    not silently drop the interesting cases."""
    ids = {v.id for v in VARIANTS}
    for n in (33, 1024, 1 << 20):
        for label in ("unsplit", "blocks=8", "blocks=4", "blocks=16x4"):
            assert f"add_f32_n{n}[{label}]" in ids
    assert "add_f32_n7[blocks=4]" in ids and "add_f32_n7[blocks=8]" not in ids
    assert "add_f32_n1[unsplit]" in ids and len([i for i in ids if i.startswith("add_f32_n1[")]) == 1
    assert "matmul_33x48x64[m=8,n=32,k=16x4]" in ids
    assert "matmul_256x256x256[m=64x8,n=32,k=16]" in ids
    assert "clipped_matmul_33x48x64[m=8,n=32,k=16x4]" in ids
    assert "row_sum_7x33[m=4,n=16x4]" in ids
    assert "conv1d_100x7[blocks=8x3]" in ids


def test_references_are_independent():
    """The references compute what the programs' docstrings say, and differ
    from the tempting wrong answers (convolution instead of correlation,
    unclipped instead of clipped sums)."""
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=20), rng.normal(size=5)
    ref = _conv_reference(x, w)
    assert np.allclose(ref, [sum(x[i + j] * w[j] for j in range(5)) for i in range(16)])
    assert np.allclose(ref, np.correlate(x, w, mode="valid"))
    assert not np.allclose(ref, np.convolve(x, w, mode="valid"))
    clipped = PROBLEMS[[p.name for p in PROBLEMS].index("clipped_matmul_33x48x64")]
    a, b = clipped.inputs(np.random.default_rng(1))
    (ref, _, _), = clipped.reference([a, b])
    loop = sum(np.maximum(a[:, k : k + 1].astype(np.float64) * b[k].astype(np.float64), 0) for k in range(64))
    assert np.allclose(ref, loop)
    assert not np.allclose(ref, a.astype(np.float64) @ b)


# ------------------------------------------------------- the guard itself

CRASH_CHILD = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
import lt_mlir
from lt_mlir.testing import guarded_array

text, side = sys.argv[1], sys.argv[2]
# By default the compiler proves accesses in bounds and refuses these
# programs (tests/test_api.py); here: what happens at run time when
# nothing stopped them.
kernel = lt_mlir.compile(text, check_bounds=False)
args = [guarded_array(s.shape, s.dtype, fill=1.0, side=side) for s in kernel.specs]
print("CALLING", flush=True)
kernel(*args)
print("RETURNED", flush=True)
"""

OUT_OF_BOUNDS = {
    # name: (program, side whose guard it hits)
    "read_past_end": (shift_program(8, 8, 8, read_off=1), "end"),
    "read_before_start": (shift_program(8, 8, 8, read_off=-1), "start"),
    "write_past_end": (shift_program(8, 8, 8, write_off=1), "end"),
    "write_before_start": (shift_program(8, 8, 8, write_off=-1), "start"),
}


def test_guard_pages_catch_out_of_bounds_accesses():
    """Hand-written kernels that touch one element outside a buffer die with
    SIGSEGV on guarded arrays (the in-bounds shift in the batch above is the
    control: same program shape, 0 exit).  They are compiled with the
    compile-time bounds proof off where the compiler has one."""
    procs = {name: start_child("-c", CRASH_CHILD, text, side) for name, (text, side) in OUT_OF_BOUNDS.items()}
    for name, proc in procs.items():
        out, err = communicate(proc)
        assert "CALLING" in out, f"{name}: the child failed before calling the kernel:\n{err[-3000:]}"
        assert "RETURNED" not in out, f"{name}: the out-of-bounds access went unnoticed"
        assert proc.returncode == -signal.SIGSEGV, f"{name}: exit {proc.returncode}\n{err[-3000:]}"


@pytest.mark.parametrize("side", SIDES)
def test_guarded_array_layout(side):
    a = guarded_array((3, 5), np.float32, fill=np.arange(15).reshape(3, 5), side=side)
    assert a.shape == (3, 5) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
    assert np.array_equal(a, np.arange(15).reshape(3, 5))
    start, end = a.ctypes.data, a.ctypes.data + a.nbytes
    if side == "end":
        assert end % PAGE_SIZE == 0
    else:
        assert start % PAGE_SIZE == 0
    assert start % a.itemsize == 0
    # The mapping outlives the array as long as a view of it does.
    view = a[1:]
    del a
    import gc

    gc.collect()
    assert np.array_equal(view, np.arange(5, 15).reshape(2, 5))

    c = guarded_copy(np.arange(7, dtype=np.int64), side=side, readonly=True)
    assert c.dtype == np.int64 and np.array_equal(c, np.arange(7)) and not c.flags.writeable
    with pytest.raises(ValueError):
        guarded_array(4, np.float32, side="middle")


# ------------------------------------------------------- argument checking


@pytest.fixture(scope="module")
def add8():
    return lt_mlir.compile(programs.pointwise_add(8))


def _g(values, dtype=np.float32, **kw):
    return guarded_copy(np.asarray(values, dtype=dtype), **kw)


def test_argument_error_is_an_lt_error():
    assert issubclass(lt_mlir.ArgumentError, lt_mlir.LtError)


def test_kernel_calling_conventions(add8):
    a, b = _g(np.arange(8)), _g(np.arange(8) * 10, side="start")
    c = add8(a, b)  # outputs allocated and returned
    assert isinstance(c, np.ndarray) and c.shape == (8,) and c.dtype == np.float32
    assert np.array_equal(c, np.arange(8) * 11)
    out = guarded_array(8, np.float32, fill=np.nan)
    assert add8(a, b, out) is None  # written in place
    assert np.array_equal(out, np.arange(8) * 11)
    out2 = guarded_array(8, np.float32, fill=np.nan, side="start")
    add8(a, a, out2)  # two inputs may alias: neither is written
    assert np.array_equal(out2, np.arange(8) * 2)


def _bad_calls():
    f = np.float32
    ok = lambda side="end": _g(np.ones(8), side=side)  # noqa: E731
    out = lambda: guarded_array(8, f, fill=-7.0)  # noqa: E731
    shared = guarded_array(12, f, fill=1.0)
    readonly_out = guarded_array(8, f, fill=-7.0)
    readonly_out.flags.writeable = False
    same = ok()
    return {
        "dtype": ((_g(np.ones(8), np.float64), ok(), out()), r"argument 0\b.*dtype"),
        "dtype_output": ((ok(), ok(), guarded_array(8, np.int32)), r"argument 2\b.*dtype"),
        "shape": ((ok(), _g(np.ones(9)), out()), r"argument 1\b.*shape"),
        "shape_2d": ((ok(), _g(np.ones((2, 4))), out()), r"argument 1\b.*shape"),
        "non_contiguous": ((_g(np.ones(16))[::2], ok(), out()), r"argument 0\b.*contiguous"),
        "non_ndarray": (([1.0] * 8, ok(), out()), r"argument 0\b.*ndarray"),
        "read_only_output": ((ok(), ok(), readonly_out), r"argument 2\b.*read-only"),
        "output_is_input": ((same, ok(), same), r"arguments 2 and 0\b.*overlap"),
        "output_overlaps_input": ((shared[:8], ok(), shared[4:]), r"arguments 2 and 0\b.*overlap"),
    }


def test_bad_arguments_raise_argument_error(add8):
    for name, (args, pattern) in _bad_calls().items():
        outputs_before = [np.array(a) for a in args if isinstance(a, np.ndarray)]
        with pytest.raises(lt_mlir.ArgumentError, match=pattern) as info:
            add8(*args)
        assert isinstance(info.value, lt_mlir.LtError), name
        assert "@add" in str(info.value), name
        # Nothing ran: every array is as it was.
        after = [np.array(a) for a in args if isinstance(a, np.ndarray)]
        for x, y in zip(outputs_before, after):
            np.testing.assert_array_equal(x, y, err_msg=name)


def test_arguments_that_pass_the_quick_checks_run_as_the_full_checks_let_them(add8):
    """A call's addresses come from a quick pass (``Kernel._addresses``):
    read-only inputs (no writable buffer to take the address of), an
    ndarray subclass, an output right after an input in one buffer (byte
    ranges that touch but do not meet) and calls without checks
    (``call_unchecked``) all read and write the right arrays."""
    a, b = _g(np.arange(8)), _g(np.arange(8) * 10, side="start")
    a.flags.writeable = False
    b.flags.writeable = False
    out = guarded_array(8, np.float32, fill=np.nan)
    add8(a, b, out)
    np.testing.assert_array_equal(out, np.arange(8) * 11)
    buf = guarded_array(16, np.float32, fill=np.nan)
    buf[:8] = np.arange(8)
    add8(buf[:8], buf[:8], buf[8:])  # the output right after the input: no overlap
    np.testing.assert_array_equal(buf[8:], np.arange(8) * 2)
    np.testing.assert_array_equal(buf[:8], np.arange(8))

    class Tagged(np.ndarray):
        pass

    tagged = np.arange(8, dtype=np.float32).view(Tagged)
    out = guarded_array(8, np.float32, fill=np.nan)
    add8(tagged, tagged, out)
    np.testing.assert_array_equal(out, np.arange(8) * 2)
    out = guarded_array(8, np.float32, fill=np.nan)
    add8.call_unchecked(a, b, out)
    np.testing.assert_array_equal(out, np.arange(8) * 11)
    with pytest.raises(lt_mlir.ArgumentError, match=r"arguments 2 and 0\b.*overlap"):
        add8(buf[1:9], buf[:8], buf[8:])  # the last element of the first input is the output's first


@pytest.mark.parametrize("count", [0, 1, 4])
def test_wrong_argument_count(add8, count):
    args = [_g(np.ones(8)) for _ in range(count)]
    with pytest.raises(lt_mlir.ArgumentError, match=rf"takes 3 arrays .*got {count}"):
        add8(*args)


def test_a_bound_call_reruns_on_the_same_arrays_after_one_check(add8):
    a, b = _g(np.arange(8)), _g(np.arange(8) * 10, side="start")
    out = guarded_array(8, np.float32, fill=np.nan)
    run = add8.bind(a, b, out)
    assert np.isnan(out).all()  # binding checks, runs nothing
    run()
    assert np.array_equal(out, np.arange(8) * 11)
    a[:] = 1.0  # new contents of the same arrays: the bound call sees them
    run()
    assert np.array_equal(out, 1.0 + np.arange(8) * 10)
    # the checks of a call happen once, when binding
    for name, (args, pattern) in _bad_calls().items():
        with pytest.raises(lt_mlir.ArgumentError, match=pattern):
            add8.bind(*args)
    with pytest.raises(lt_mlir.ArgumentError, match=r"takes 3 arrays; got 2"):
        add8.bind(a, b)


def test_inputs_bound_once_give_fresh_outputs_each_run(add8):
    """``bind_inputs``: the inputs checked once; every run returns a new
    output array of its own (zeroed first by default), reading the inputs'
    current contents."""
    a, b = _g(np.arange(8)), _g(np.arange(8) * 10, side="start")
    run = add8.bind_inputs(a, b)
    first, second = run(), run()
    assert first is not second and not np.shares_memory(first, second)
    assert np.array_equal(first, np.arange(8) * 11) and np.array_equal(second, first)
    a[:] = 2.0
    assert np.array_equal(add8.bind_inputs(a, b, zero_outputs=False)(), 2.0 + np.arange(8) * 10)
    assert np.array_equal(run(), 2.0 + np.arange(8) * 10)
    assert np.array_equal(first, np.arange(8) * 11)  # an earlier result is the caller's, untouched
    with pytest.raises(lt_mlir.ArgumentError, match=r"argument 0\b.*dtype"):
        add8.bind_inputs(_g(np.ones(8), np.float64), b)
    with pytest.raises(lt_mlir.ArgumentError, match=r"argument 1\b.*shape"):
        add8.bind_inputs(a, _g(np.ones(9)))
    with pytest.raises(lt_mlir.ArgumentError, match=r"takes 2 inputs; got 3"):
        add8.bind_inputs(a, b, a)


def test_bind_inputs_writes_a_large_output_again_only_once_the_caller_dropped_it():
    """``zero_outputs=False`` and an output of at least ``REUSE_BYTES``: a
    run writes into an earlier run's array when nothing else holds it (no
    fresh pages to fault in), never into one the caller still holds,
    directly or through a view."""
    from lt_mlir.runtime.kernel import REUSE_BYTES

    n = REUSE_BYTES // 4  # float32: exactly REUSE_BYTES
    kernel = lt_mlir.compile(programs.pointwise_add(n))
    a, b = np.zeros(n, np.float32), np.arange(n, dtype=np.float32)
    run = kernel.bind_inputs(a, b, zero_outputs=False)
    first = run()
    a[:] = 1.0
    second = run()
    assert not np.shares_memory(first, second)
    assert np.array_equal(first, b) and np.array_equal(second, b + 1.0)  # the held one untouched
    address = first.ctypes.data
    del first
    a[:] = 2.0
    third = run()  # the first array, free again, is written again
    assert third.ctypes.data == address and np.array_equal(third, b + 2.0)
    view = third[::2]
    del third
    a[:] = 3.0
    fourth = run()  # the view holds the third: not written
    assert not np.shares_memory(fourth, view)
    assert np.array_equal(view, b[::2] + 2.0) and np.array_equal(fourth, b + 3.0)
    assert np.array_equal(second, b + 1.0)
    # runs from several threads at once: each gets an array of its own
    import threading

    results: list = []
    workers = [threading.Thread(target=lambda: results.extend(run() for _ in range(20))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len({r.ctypes.data for r in results}) == len(results) == 80  # all held: all distinct
    assert all(np.array_equal(r, b + 3.0) for r in results)
    results.clear()
    # below REUSE_BYTES, and with zeroed outputs, no pool: each run's array is the allocator's
    small = lt_mlir.compile(programs.pointwise_add(n // 2)).bind_inputs(a[: n // 2], b[: n // 2], zero_outputs=False)
    for fresh in (small, kernel.bind_inputs(a, b)):
        x = fresh()
        assert np.array_equal(x, (b + 3.0)[: x.shape[0]]) and np.array_equal(fresh(), x) and fresh() is not x


def test_bind_inputs_of_any_entry_point_calls_it_with_fresh_outputs():
    """EntryPoint's ``bind_inputs`` (what the CUDA kernel uses): each run
    is an ordinary call on the inputs and new output arrays, zeroed unless
    told otherwise."""
    from lt_mlir.dtypes import ArgSpec
    from lt_mlir.runtime.specs import EntryPoint

    class Doubler(EntryPoint):
        def __init__(self):
            self._set_specs([ArgSpec(0, (3,), "f32", False), ArgSpec(1, (3,), "f32", True)])
            self.seen = []

        def __call__(self, x, out):
            self.seen.append(out.copy())
            out += 2 * x

    k, x = Doubler(), np.arange(3, dtype=np.float32)
    run = k.bind_inputs(x)
    first, second = run(), run()
    assert first is not second and np.array_equal(first, [0, 2, 4]) and np.array_equal(second, first)
    assert all(np.array_equal(s, np.zeros(3)) for s in k.seen)  # zeroed before each call
    assert k.bind_inputs(x, zero_outputs=False)().shape == (3,)
