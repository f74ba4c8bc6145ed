"""The measurement backends of the schedule search (lt_mlir/search/measure.py):
in this process, a pool of worker processes (one of which dies), Ray (one
actor a physical core, a wide one for parallel schedules, one that dies).
A text whose worker dies is a failed candidate, never retried."""

import re
import time

import numpy as np
import pytest

import lt_mlir
from lt_mlir import programs
from lt_mlir.search.measure import LocalMeasurer, PoolMeasurer, Result, make_measurer

START = programs.matmul(16, 16, 32)
SPLIT = lt_mlir.Schedule(START).split(0, 4).text
SWAP = lt_mlir.Schedule(START).swap(1).text
PARALLEL = lt_mlir.Schedule(START).parallel(0).text
BROKEN = START.replace('"lt.loop"() ({', '"lt.loop"() ({ %oops', 1)  # does not parse
OUT_OF_BOUNDS = START.replace('dim = "k", size = 32', 'dim = "k", size = 40')  # fails the bounds check
VICTIM = SPLIT + "\n// lt-search-victim\n"


def _check(results, texts):
    assert [r.text for r in results] == texts
    for r in results:
        assert isinstance(r, Result)
        if r.text in (BROKEN, OUT_OF_BOUNDS):
            assert "error" in r.error, r
            assert r.runtime_s is None and r.speedup is None and r.correct is None
        else:
            assert r.error == "", r
            assert r.correct is True, r
            assert r.runtime_s > 0 and r.baseline_s > 0
            assert r.speedup == pytest.approx(r.baseline_s / r.runtime_s)


def test_local():
    texts = [START, SPLIT, BROKEN, SWAP, OUT_OF_BOUNDS, PARALLEL]
    with make_measurer(START, repeat=20) as m:
        assert isinstance(m, LocalMeasurer)
        results = m.measure(texts)
    _check(results, texts)
    # the start against its own baseline: the same kernel, so the ratio is 1
    # up to timer noise on a microsecond kernel (2.08 and 0.30 seen on a
    # loaded 2-core VM); a baseline of another program would be far off
    assert 1 / 5 <= results[0].speedup <= 5.0
    assert {r.worker for r in results} == {"local"}
    assert "ranges over [0, 39]" in results[4].error, results[4].error


def test_local_bad_start_is_an_error():
    with pytest.raises(lt_mlir.LtError):
        make_measurer(BROKEN)


def test_cuda_without_device_does_not_crash():
    with make_measurer(START, target="cuda", repeat=2) as m:
        (r,) = m.measure([START])
    assert r.error or r.correct is True  # the runtime's error without a GPU; measured with one


def test_pool_two_workers_and_a_worker_that_dies(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_SEARCH_DIE_ON", "lt-search-victim")
    monkeypatch.setenv("LT_SEARCH_DIE_DIR", str(tmp_path))
    m = make_measurer(START, workers=2, repeat=5)
    try:
        assert isinstance(m, PoolMeasurer)
        texts = [START, SPLIT, SWAP, BROKEN, PARALLEL, OUT_OF_BOUNDS, SPLIT, SWAP]
        results = m.measure(texts)
        _check(results, texts)
        assert {r.worker for r in results} == {"pool-0", "pool-1"}
        assert all(r.attempts == 1 for r in results)

        texts = [START, VICTIM, SWAP, PARALLEL, BROKEN]
        results = m.measure(texts)
        _check([r for r in results if r.text != VICTIM], [t for t in texts if t != VICTIM])
        assert all(r.attempts == 1 for r in results)  # never retried
        assert results[1].error == "worker died: exit status 1", results[1]
        assert results[1].correct is None and results[1].speedup is None and results[1].worker.startswith("pool-")
        assert len({w.name for w in m.workers}) == 2  # the dead one was replaced
        (again,) = m.measure([VICTIM])  # asked again, it is measured again (the hook kills once)
        assert again.correct is True and again.attempts == 1
    finally:
        t0 = time.monotonic()
        m.close()
        assert time.monotonic() - t0 < 5.0


def test_pool_a_crash_in_compiled_code_is_named(tmp_path, monkeypatch):
    import lt_mlir.search.measure as measure

    assert measure._exit_reason(-11) == "killed by SIGSEGV (a crash in compiled code?)"
    assert measure._exit_reason(-9) == "killed by SIGKILL"
    monkeypatch.setenv("LT_SEARCH_DIE_ON", "*")  # any text but the start's, once of all
    monkeypatch.setenv("LT_SEARCH_DIE_ONCE", "1")
    monkeypatch.setenv("LT_SEARCH_DIE_DIR", str(tmp_path))
    with make_measurer(START, workers=2, repeat=2) as m:
        results = m.measure([START, SPLIT, SWAP, SPLIT])
    died = [r for r in results if r.error]
    assert len(died) == 1 and died[0].text != START and died[0].error == "worker died: exit status 1", results
    assert all(r.correct is True for r in results if r is not died[0])


def test_ray(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is not installed")
    from lt_mlir.search.measure import RayMeasurer, physical_cores

    monkeypatch.setenv("LT_SEARCH_DIE_ON", "lt-search-victim")
    monkeypatch.setenv("LT_SEARCH_DIE_DIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    cores = physical_cores()
    try:
        m = make_measurer(START, workers="ray", repeat=5)  # starts a local instance of this machine's CPUs
        try:
            assert isinstance(m, RayMeasurer)
            # one actor a physical core, pinned to it; a wide one on them all where there are two or more
            assert [s.cpus for s in m.slots if not s.wide] == cores and m.parallelism == len(cores)
            assert [s.cpus for s in m.slots if s.wide] == ([tuple(sorted(c for core in cores for c in core))] if len(cores) > 1 else [])
            for actor, slot in zip(m.actors, m.slots):
                assert ray.get(actor.affinity.remote()) == (list(slot.cpus), str(len(slot.cpus)))
            texts = [START, SPLIT, VICTIM, BROKEN, SWAP, PARALLEL]
            results = m.measure(texts)
            _check([r for r in results if r.text != VICTIM], [t for t in texts if t != VICTIM])
            assert results[2].error.startswith("worker died: ") and results[2].correct is None, results[2]
            assert all(r.attempts == 1 for r in results)  # never retried
            assert all(re.fullmatch(r"ray-[0-9a-f]{8}@[^/]+/[0-9a-f]{8}:cpu[0-9,-]+", r.worker) for r in results), results
            if len(cores) > 1:  # the parallel schedule on all the cores, the others on one
                wide = [m.names[k] for k, s in enumerate(m.slots) if s.wide]
                assert results[5].worker in wide and not any(r.worker in wide for r in results[:5]), results
            # the dead actor was replaced; the text, asked for again, is measured
            (again,) = m.measure([VICTIM])
            assert again.correct is True and again.error == ""
        finally:
            m.close()
        assert not ray.is_initialized()  # the measurer started Ray, so it stopped it
    finally:
        if ray.is_initialized():
            ray.shutdown()


def test_measurer_runs_on_the_inputs_given():
    """``make_measurer(inputs=)`` (``tune(inputs=)``: a model's weights and
    example input) is what every candidate runs on, in the local measurer's
    evaluator too: a candidate that agrees with the start only on
    non-negative inputs (max(a, 0) against a copy) is correct on them and
    wrong on the seeded random (standard normal) ones."""

    def text(relu: bool) -> str:
        body = ("%z = arith.constant 0.0 : f32\n    %b = arith.maximumf %a, %z : f32" if relu else "%b = arith.addf %a, %a : f32\n    %h = arith.constant 0.5 : f32\n    %c = arith.mulf %b, %h : f32")
        out = "%b" if relu else "%c"
        return f"""
func.func @f(%A: memref<64xf32>, %B: memref<64xf32>) {{
  "lt.loop"() ({{
  ^bb0(%i0: index):
    %i = "lt.dim"() {{dim = "i"}} : () -> index
    %a = memref.load %A[%i] : memref<64xf32>
    {body}
    memref.store {out}, %B[%i] : memref<64xf32>
  }}) {{dim = "i", size = 64 : i64, tail = 0 : i64}} : () -> ()
  return
}}
"""

    positive = (np.abs(np.random.default_rng(1).standard_normal(64)).astype(np.float32),)
    with make_measurer(text(False), inputs=positive) as m:
        assert m.measure([text(True)])[0].correct is True
    with make_measurer(text(False)) as m:
        assert m.measure([text(True)])[0].correct is False
