"""What the tests and the differential fuzzer share: guard-paged arrays and
child processes that run kernels on them (``guard.py``), and the fuzzer
(``fuzz.py``: ``python -m lt_mlir.testing.fuzz``).

``python -m lt_mlir.testing JOB.json`` is the child side of the guarded
tests (``guard.run_job``)."""

from .guard import (  # noqa: F401
    CHILD_TIMEOUT,
    PAGE_SIZE,
    ChildRun,
    GuardedBuffer,
    communicate,
    finish_job,
    guarded_array,
    guarded_copy,
    run_job,
    start_child,
    start_job,
)
