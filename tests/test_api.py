"""Error paths of the Python API and lt-opt: project exceptions with
locations, one-line diagnostics, exit code 1, never a traceback."""

import subprocess
import sys

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.analysis.bounds import check_bounds
from lt_mlir.passes.registry import parse_pipeline, run_pipeline

OOB = """
func.func @oob(%X: memref<10xf32>, %Y: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %c3 = arith.constant 3 : index
    %j = arith.addi %i, %c3 : index
    %x = memref.load %X[%j] : memref<10xf32>
    memref.store %x, %Y[%i] : memref<8xf32>
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_parse_error_is_located():
    with pytest.raises(lt_mlir.ParseError, match=r"^prog.mlir:1:\d+: error: "):
        lt_mlir.parse_module("func.func @f( {", "prog.mlir")


def test_verifier_error_is_located():
    bad = programs.pointwise_add(8).replace("size = 8 : i64", "size = -1 : i64")
    with pytest.raises(lt_mlir.ParseError, match=r"^k.mlir:\d+:\d+: error: 'lt.loop' size must be positive, got -1$"):
        lt_mlir.parse_module(bad, "k.mlir")


def test_out_of_bounds_program_is_refused_before_codegen():
    with pytest.raises(lt_mlir.VerifyError, match=r"^oob.mlir:8:\d+: error: 'memref.load' index 0 ranges over \[3, 10\]"):
        lt_mlir.compile(OOB, filename="oob.mlir")


@pytest.mark.parametrize(
    "src",
    [
        programs.pointwise_add(33, [8]),
        programs.row_sum(7, 33, [4], [16, 4]),
        programs.matmul(33, 48, 64, [8], [32], [16, 4], clipped=True),
        programs.conv1d(100, 7, [8, 3]),
    ],
)
def test_reference_programs_are_proven_in_bounds(src):
    check_bounds(lt_mlir.parse_module(src))  # raises if any access could leave its memref


def test_unlowered_annotation_is_a_compile_error():
    src = programs.pointwise_add(16).replace("tail = 0 : i64}", 'tail = 0 : i64, lt.gpu = "block"}')
    with pytest.raises(lt_mlir.CompileError, match="does not lower the 'lt.gpu' annotation"):
        lt_mlir.compile(src)


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("builtin.module(nope)", "'nope' does not refer to a registered pass"),
        ("lower-lt-to-scf{nope=1}", "lower-lt-to-scf: unknown option 'nope' (options: check-bounds)"),
        ("lower-lt-to-scf{check-bounds=maybe}", "option 'check-bounds' expects bool, got 'maybe'"),
        ("lower-lt-to-scf{check-bounds}", "malformed option 'check-bounds' (expected key=value)"),
        ("func.func(cse", "unclosed ')'"),
    ],
)
def test_bad_pipelines(pipeline, message):
    with pytest.raises(lt_mlir.PipelineError) as info:
        parse_pipeline(pipeline)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_pipeline_mixes_lt_and_upstream_passes():
    module = lt_mlir.parse_module(programs.pointwise_add(33, [8]))
    run_pipeline(module, "builtin.module(lower-lt-to-scf, canonicalize, func.func(cse))")
    text = str(module)
    assert "lt." not in text.replace("lt.name", "") and "scf.for" in text


def test_loop_tree_numbers_loops_in_preorder():
    tree = lt_mlir.loop_tree(programs.matmul(33, 48, 64, m_blocks=[8], k_blocks=[16]))
    heads = [line.strip() for line in tree.splitlines() if line.strip().startswith("for ")]
    assert heads == [
        "for m in 4 r 1 : L0",
        "for m' in 8 : L1",
        "for n in 48 : L2",
        "for k in 4 : L3",
        "for k' in 16 : L4",
    ]


def test_compile_accepts_a_module_and_leaves_it_unchanged():
    module = lt_mlir.parse_module(programs.pointwise_add(9, [4]))
    before = str(module)
    kernel = lt_mlir.compile(module)
    assert str(module) == before
    a, b = np.arange(9, dtype=np.float32), np.ones(9, np.float32)
    assert np.array_equal(kernel(a, b), a + b)


def test_unknown_entry_names_the_candidates():
    with pytest.raises(lt_mlir.CompileError, match=r"no function @nope in the module \(it has @add\)"):
        lt_mlir.compile(programs.pointwise_add(4), entry="nope")


def _lt_opt(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "lt_mlir.tools.lt_opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["-"], "func.func @f( {", "<stdin>:1:"),
        (["-", "-p", "builtin.module(nope)"], programs.pointwise_add(4), "'nope' does not refer"),
        (["-", "--emit=pdf"], "", "invalid choice: 'pdf'"),
        (["-", "--run"], OOB, "<stdin>:8:"),
        (["/nonexistent/x.mlir"], "", "cannot read '/nonexistent/x.mlir'"),
        (["-", "--run", "--emit=asm"], programs.pointwise_add(4), "--emit=asm prints a module; --run prints timings: use one"),
        (["-", "--run", "--repeat", "0"], programs.pointwise_add(4), "--repeat must be at least 1, got 0"),
        (["-", "--profile", "--repeat=-5"], programs.pointwise_add(4), "--repeat must be at least 1, got -5"),
        (["-"], "import lt_mlir as lt\nprint(lt)\n", "<stdin>: error: this is Python source, not an MLIR module"),
    ],
)
def test_lt_opt_errors_are_one_line_exit_1(args, stdin, message):
    result = _lt_opt(*args, stdin=stdin)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_lt_opt_run_reports_time_and_checksum():
    result = _lt_opt("-", "--run", "--repeat", "2", stdin=programs.pointwise_add(33, [8]))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("@add: ") and "ms (median of 2 runs" in lines[0]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(33).astype(np.float32)
    b = rng.standard_normal(33).astype(np.float32)
    expected = float((a + b).sum(dtype=np.float64))
    assert lines[1].strip().startswith("arg2 f32[33] checksum ")
    assert float(lines[1].split()[-1]) == pytest.approx(expected, rel=1e-5)


def test_lt_opt_binary_input_is_a_plain_error(tmp_path):
    path = tmp_path / "kernel.o"
    path.write_bytes(bytes(range(256)))
    result = subprocess.run([sys.executable, "-m", "lt_mlir.tools.lt_opt", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "internal error" not in result.stderr
    assert result.stderr.strip() == f"{path}: error: not a text file (byte 128 is not UTF-8); lt-opt reads MLIR modules (.mlir)"


def test_lt_opt_pass_options_may_be_separated_by_commas():
    """MLIR separates options with spaces; lt-opt also takes commas (no lt
    option is a list): the same loop tree either way."""
    spaced = _lt_opt("-", "-p", "builtin.module(lt-split{loop=0 factor=4})", "--emit=loop-tree", stdin=programs.pointwise_add(32))
    commas = _lt_opt("-", "-p", "builtin.module(lt-split{loop=0,factor=4})", "--emit=loop-tree", stdin=programs.pointwise_add(32))
    assert spaced.returncode == commas.returncode == 0, commas.stderr
    assert commas.stdout == spaced.stdout and "for i in 8 : L0" in commas.stdout


def test_lt_opt_ptx_of_an_unmapped_module_says_it_runs_on_one_thread():
    result = _lt_opt("-", "--emit=launch-plan", stdin=programs.pointwise_add(32))
    assert result.returncode == 0, result.stderr
    assert "remark: no loop is mapped to the GPU: every statement runs on one GPU thread" in result.stderr
    assert '"block": [1, 1, 1]' in result.stdout


def test_lt_opt_slow_run_shows_progress_and_stops_on_ctrl_c(monkeypatch, capsys):
    """A --run expected to take long says so and counts its runs; Ctrl-C
    stops at once and the runs measured so far are reported."""
    from lt_mlir.tools import lt_opt

    monkeypatch.setattr(lt_opt, "PROGRESS_AFTER", 0.0)
    calls = []

    def fn():
        calls.append(1)
        if len(calls) == 4:  # warm-up + 2 timed runs, then Ctrl-C
            raise KeyboardInterrupt

    times = lt_opt._timed_runs(fn, 20, "f")
    assert len(times) == 2
    err = capsys.readouterr().err
    assert "lt-opt: timing @f: 20 runs of about" in err and "Ctrl-C stops and reports what was measured" in err
    assert "run 2 of 20" in err and "interrupted after 2 of 20 timed runs" in err
    monkeypatch.setattr(lt_opt, "PROGRESS_AFTER", 2.0)  # a quick run says nothing
    assert len(lt_opt._timed_runs(lambda: None, 3, "g")) == 3 and capsys.readouterr().err == ""


def test_public_api_documents_itself():
    """Every public function, class, method and property of ``lt_mlir``
    says what it does (``help(s.split)`` shows more than a signature)."""
    import inspect

    missing = []
    for name in lt_mlir.__all__:
        obj = getattr(lt_mlir, name)
        if callable(obj) and not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and obj.__module__.startswith("lt_mlir"):
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                if (callable(value) or isinstance(value, property)) and not (value.__doc__ or "").strip():
                    missing.append(f"{name}.{member}")
    assert missing == []


MONOTONE = """
func.func @copy(%x: memref<5xi32> {lt.monotone, lt.name = "x"}, %y: memref<5xi32> {lt.name = "y"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %v = memref.load %x[%i] : memref<5xi32>
    memref.store %v, %y[%i] : memref<5xi32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}
"""


def test_an_lt_monotone_argument_is_checked_and_drawn_sorted():
    """``lt.monotone`` is the caller's promise that an index array never
    decreases (what the dependence test rests a CSR row's positions on):
    the checked call refuses an array that breaks it, naming where, and
    the inputs ``lt-opt --run`` draws for it are sorted."""
    from lt_mlir.errors import ArgumentError
    from lt_mlir.runtime.specs import random_inputs

    k = lt_mlir.compile(MONOTONE)
    assert [s.monotone for s in k.specs] == [True, False]
    x = np.array([0, 2, 2, 7, 9], np.int32)
    np.testing.assert_array_equal(k(x), x)
    with pytest.raises(ArgumentError, match=r"argument 0: marked lt.monotone, but its values decrease at element 3 \(7 then 3\)"):
        k(np.array([0, 2, 7, 3, 9], np.int32))
    for seed in range(3):
        drawn = random_inputs(k.specs, seed)[0]
        assert (np.diff(drawn) >= 0).all() and drawn.min() < drawn.max()
