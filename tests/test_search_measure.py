"""The measurement backends of the schedule search (lt_mlir/search/measure.py):
in this process, a pool of worker processes (one of which dies), Ray."""

import time

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
    # up to timer noise on a microsecond kernel (2.08 seen on a loaded
    # 2-core VM); a baseline of another program would be far off
    assert 1 / 3 <= results[0].speedup <= 3.0
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
        _check(results, texts)
        assert [r.attempts for r in results] == [1, 2, 1, 1, 1]
        assert results[1].correct is True and results[1].worker.startswith("pool-")
        assert len({w.name for w in m.workers}) == 2  # the dead one was replaced
    finally:
        t0 = time.monotonic()
        m.close()
        assert time.monotonic() - t0 < 5.0


def test_pool_gives_up_after_the_retries(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_SEARCH_DIE_ON", "lt-search-victim")
    monkeypatch.setenv("LT_SEARCH_DIE_DIR", str(tmp_path))
    import lt_mlir.search.measure as measure

    monkeypatch.setattr(measure, "MAX_RETRIES", 0)  # read in this process: one try only
    with make_measurer(START, workers=2, repeat=2) as m:
        results = m.measure([VICTIM, SWAP])
    assert results[0].error == "worker died" and results[0].attempts == 1
    assert results[1].correct is True


def test_ray(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is not installed")
    monkeypatch.setenv("LT_SEARCH_DIE_ON", "lt-search-victim")
    monkeypatch.setenv("LT_SEARCH_DIE_DIR", str(tmp_path))
    assert not ray.is_initialized()
    try:
        m = make_measurer(START, workers="ray", repeat=5)  # starts a local instance (num_cpus = os.cpu_count())
        try:
            texts = [START, SPLIT, VICTIM, BROKEN, SWAP, PARALLEL]
            results = m.measure(texts)
            _check(results, texts)
            assert results[2].attempts == 2 and results[2].correct is True
            assert all(r.attempts == 1 for i, r in enumerate(results) if i != 2)
            assert all(r.worker.startswith("ray-") for r in results)
        finally:
            m.close()
        assert not ray.is_initialized()  # the measurer started Ray, so it stopped it
    finally:
        if ray.is_initialized():
            ray.shutdown()
