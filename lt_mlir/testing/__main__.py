"""``python -m lt_mlir.testing JOB.json``: run a batch of kernels on
guard-paged arrays in this (child) process (``guard.run_job``)."""

import sys

from .guard import run_job

run_job(sys.argv[1])
