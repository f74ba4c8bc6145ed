"""Compiles share one MLIR context a thread (``lt.shared_context``), renewed
after a number of uses; kernels from every context keep working."""

from __future__ import annotations

import threading

import numpy as np

import lt_mlir
from lt_mlir import programs
from lt_mlir.dialect import lt


def test_context_is_shared_then_renewed():
    lt._SHARED.__dict__.pop("entry", None)  # start from a fresh context (earlier tests on this thread used some of its uses)
    first = lt.shared_context()
    assert lt.shared_context() is first
    seen = {id(first)}
    for _ in range(lt._SHARED_USES + 1):
        seen.add(id(lt.shared_context()))
    assert len(seen) >= 2  # renewed after _SHARED_USES uses


def test_kernels_from_old_contexts_still_run():
    kernels = []
    for n in range(lt._SHARED_USES + 8):  # spans a renewal
        kernels.append((n + 1, lt_mlir.compile(programs.pointwise_add(n + 1))))
    for n, k in kernels:
        a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        np.testing.assert_array_equal(k(a, b), a + 1)


def test_each_thread_has_its_own_context():
    contexts, errors = {}, []

    def work(i):
        try:
            contexts[i] = lt.shared_context()
            k = lt_mlir.compile(programs.pointwise_add(16 + i))
            a = np.arange(16 + i, dtype=np.float32)
            np.testing.assert_array_equal(k(a, a), 2 * a)
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)

    for i in range(2):  # one after the other: the point is each thread's own context
        t = threading.Thread(target=work, args=(i,))
        t.start()
        t.join()
    assert not errors, errors
    assert contexts[0] is not contexts[1]
