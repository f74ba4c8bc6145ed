"""The differential fuzzer (``lt_mlir.testing.fuzz``): 2,000 random schedules of
loop transformations over the reference programs, each compiled and run on
guard-paged arrays against NumPy, must all pass; and the fuzzer must notice
a wrong number, a crash and a wrong pass when there is one.

The long run (20,000+ schedules) is documented in ``lt_mlir/testing/fuzz.py``.
"""

from __future__ import annotations

import pytest

from lt_mlir.testing import fuzz

SEED = 2024
SCHEDULES = 2000
CORE_PASSES = (
    "lt-canonicalize",
    "lt-distribute",
    "lt-merge",
    "lt-parallel",
    "lt-split",
    "lt-swap",
    "lt-unroll",
    "lt-vectorize",
)


@pytest.fixture(scope="module")
def ci_run():
    return fuzz.run(SCHEDULES, seed=SEED, workers=2)


def test_fuzz_schedules_pass(ci_run):
    s = ci_run
    assert s.run == SCHEDULES, s.text()
    assert s.baselines == sum(len(fuzz.PROGRAMS[p].sizes) for p in fuzz.DEFAULT_PROGRAMS)
    if s.failures:
        pytest.fail(f"{len(s.failures)} fuzz failures\n\n{s.report(max_failures=10)}", pytrace=False)


def test_fuzz_applies_transformations(ci_run):
    """Not everything was refused: the schedules really transform programs."""
    s = ci_run
    assert s.total_attempted >= SCHEDULES  # at least one per schedule
    # ReACT's passes apply only where a program holds their pattern (a
    # producer nest, a sum of products under fastmath=fast, an invariant in
    # an inner loop: the k_* and react_type2 programs; a maximum whose
    # exp(x - max) is summed under reassociation: softmax_reassoc and
    # attention; a scratch buffer allocated in a loop's body: lt-expand;
    # a sum multiplied after its loop under fastmath=fast: lt-sink-factor
    # on k_sddmm_fast),
    # and the GPU layout
    # passes only where an earlier step made what they act on (an lt-cache
    # buffer: lt-pad, lt-double-buffer; a kernel: lt-min-blocks), so they
    # are refused most of the time; the share applied is counted over the
    # others, and each of them must still have applied a few times.
    special = ("lt-fuse", "lt-factor", "lt-hoist", "lt-online-softmax", "lt-expand", "lt-sink-factor", "lt-pad", "lt-double-buffer",
               "lt-min-blocks")
    attempted = s.total_attempted - sum(s.attempted[n] for n in special)
    applied = s.total_applied - sum(s.applied[n] for n in special)
    assert applied >= 0.35 * attempted, s.text()
    for name in special:
        assert s.applied[name] >= 3, f"{name} was (almost) never applied\n{s.text()}"
    for name in CORE_PASSES:
        assert s.attempted[name] >= 50, f"{name} was hardly tried\n{s.text()}"
        assert s.applied[name] >= 5, f"{name} was (almost) never applied\n{s.text()}"
    # Every program was fuzzed.
    assert set(s.programs) == set(fuzz.DEFAULT_PROGRAMS), s.text()
    assert min(s.programs.values()) >= SCHEDULES // (3 * len(fuzz.DEFAULT_PROGRAMS))


def test_fuzzer_reports_a_wrong_reference():
    """The program adds; the reference subtracts: every schedule fails with
    ``wrong-result`` and a report naming the seed, program and pipeline."""
    s = fuzz.run(8, seed=SEED, workers=2, programs=["mutant-wrong-reference"], baselines=False)
    assert s.run == 8
    wrong = [f for f in s.failures if f.kind == "wrong-result"]
    # (A schedule another bug stops before running would fail otherwise.)
    assert len(wrong) >= 4 and len(s.failures) == 8, s.report()
    report = wrong[0].report(SEED)
    assert f"seed {SEED}" in report and "programs.pointwise_add(33)" in report
    assert "pipeline: builtin.module(" in report and "elements off" in report
    assert f"--seed {SEED} --replay {wrong[0].task['index']}" in report


def test_fuzzer_survives_crashing_workers():
    """Out-of-bounds reads hit a guard page and kill the worker: the parent
    reports each crash with its schedule and goes on with a fresh worker."""
    s = fuzz.run(16, seed=SEED, workers=2, programs=["mutant-out-of-bounds", "add"], baselines=False)
    assert s.run == 16, s.text()
    crashes = [f for f in s.failures if f.kind == "crash"]
    shifted = [entry for entry in s.log if entry[1] == "mutant-out-of-bounds"]
    assert crashes and len(crashes) >= len(shifted) - 2, s.report()
    assert all("SIGSEGV" in f.detail for f in crashes)
    assert all(f.state["program"] == "mutant-out-of-bounds" for f in crashes)
    assert s.restarts == len(crashes)
    assert any(entry[4] == "ok" for entry in s.log if entry[1] == "add"), s.report()


def test_fuzzer_catches_a_wrong_pass():
    """``lt-fuzz-drop-tail`` loses a loop's tail; after a split creates one
    the outputs come out wrong (NaN where nothing was written)."""
    s = fuzz.run(
        24,
        seed=SEED,
        workers=2,
        programs=["add", "row_sum", "conv1d"],
        passes=["lt-split", fuzz.MUTANT_PASS],
        mutants=True,
        baselines=False,
    )
    assert s.run == 24
    assert s.failures, s.text()
    for f in s.failures:
        assert f.kind == "wrong-result", s.report()
        assert fuzz.MUTANT_PASS in f.state["pipeline"]
    # Schedules without the mutant applied pass.
    clean = [e for e in s.log if not any(st[0] == fuzz.MUTANT_PASS and st[2] == "applied" for st in e[3])]
    assert clean and all(e[4] == "ok" for e in clean), s.report()


def test_fuzzer_is_deterministic():
    """A schedule depends on (seed, index) only, not on the worker count."""
    a = fuzz.run(24, seed=7, workers=2, baselines=False)
    b = fuzz.run(12, seed=7, workers=1, first=12, baselines=False)
    assert [e for e in a.log if e[0] >= 12] == b.log
    c = fuzz.run(24, seed=8, workers=2, baselines=False)
    assert [e[:4] for e in a.log] != [e[:4] for e in c.log]


def test_mutation_test_catches_the_cheapest_seeded_bugs():
    """Two of the seeded bugs of ``lt_mlir.testing.mutants`` (a pass's and
    the lowering's: a tail one element short), each caught as a wrong
    result within the first 25 schedules of seed 1 (the full table,
    ``--mutants``, is in docs/fuzz.md); the same schedules pass without
    them."""
    rows = fuzz.mutation_test(["split-short-tail", "lowered-tail-short"], schedules=25, seed=1, chunk=25)
    for row in rows:
        assert row["caught"] is not None and row["caught"] <= 25, row
        assert row["kind"] == "wrong-result", row
    clean = fuzz.run(max(r["caught"] for r in rows), seed=1, workers=2, baselines=False)
    assert not clean.failures, clean.report()


def test_an_unknown_mutant_is_refused():
    from lt_mlir.testing import mutants

    with pytest.raises(ValueError, match="unknown mutant 'nope'; have drop-tail, split-short-tail"):
        mutants.install("nope")
    with pytest.raises(SystemExit, match=r"^lt_mlir.testing.fuzz: unknown mutant 'nope' \(have drop-tail, "):
        fuzz.main(["--mutant", "nope", "--schedules", "1"])  # one line, exit status 1, before any worker starts


def test_the_workers_share_what_they_compile(ci_run):
    """Every schedule's kernel is accounted for, and most are not compiled
    again: a module compiled before (by either worker) or one that lowers
    to the same LLVM IR reuses that object code."""
    s = ci_run
    assert sum(s.kernels.values()) == s.run, s.text()
    assert s.kernels["shared"] > 0 and s.kernels["llvm-ir"] > 0, s.text()
    assert s.kernels["compiled"] < s.run // 2, s.text()


def test_a_refusal_that_changed_the_ir_is_told_from_one_that_did_not():
    import lt_mlir
    from lt_mlir import programs
    from lt_mlir.passes.registry import run_pipeline

    m = lt_mlir.parse_module(programs.matmul(8, 8, 8))
    before = m.operation.clone()
    assert fuzz._same_ir(before, m.operation)
    run_pipeline(m, "builtin.module(lt-split{loop=0 factor=4})")
    assert not fuzz._same_ir(before, m.operation)
