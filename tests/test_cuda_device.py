"""The GPU cases of tests/cuda_cases.py on a real device, against NumPy.

Skipped without a CUDA device.  Needs only NumPy, cuda-python and
lt_mlir.runtime.cuda when the cases were compiled elsewhere::

    python tests/cuda_cases.py build .gpu-artifacts          # with torch-mlir
    LT_CUDA_ARTIFACTS=.gpu-artifacts pytest -m gpu tests/test_cuda_device.py
    LT_CUDA_ARTIFACTS=.gpu-artifacts python tests/test_cuda_device.py   # no pytest

Without ``LT_CUDA_ARTIFACTS`` the cases are compiled here (torch-mlir).
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE)]  # cuda_cases; lt_mlir when run as a script

from cuda_cases import BY_NAME, CASES, PROFILED, check  # noqa: E402

from lt_mlir.runtime import cuda  # noqa: E402


def kernel_for(case):
    artifacts = os.environ.get("LT_CUDA_ARTIFACTS")
    if artifacts:
        return cuda.load(os.path.join(artifacts, f"{case.name}.json"))
    import lt_mlir

    return lt_mlir.compile(case.text(), target="cuda")


def run_case(case) -> None:
    kernel = kernel_for(case)
    check(case, kernel(*case.arrays()))
    check(case, kernel(*case.arrays()))  # again: buffers reused, outputs re-initialised by the program


def run_torch_tensors() -> None:
    import torch

    case = BY_NAME["add_1003_tail"]
    kernel = kernel_for(case)
    a, b = (torch.from_numpy(x).cuda() for x in case.arrays())
    check(case, kernel(a, b).cpu().numpy())
    out = torch.full((1003,), float("nan"), device="cuda")
    kernel(a, b, out)
    check(case, out.cpu().numpy())
    # a tensor on the CPU is refused with a clear error
    try:
        kernel(a.cpu(), b)
    except Exception as e:  # noqa: BLE001
        assert "ArgumentError" in type(e).__name__, e
    else:
        raise AssertionError("a CPU tensor was accepted")


try:
    import pytest
except ImportError:  # run as a script on a machine without pytest
    pytest = None

if pytest is not None:
    pytestmark = pytest.mark.gpu

    @pytest.fixture(autouse=True)
    def _need_gpu():
        if not cuda.available():
            pytest.skip("no CUDA device")

    @pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
    def test_case_on_gpu_matches_numpy(case):
        run_case(case)

    @pytest.mark.parametrize("name", PROFILED)
    def test_profiled_build_on_gpu(name):
        print(run_profiled(name))

    def test_torch_tensors_on_gpu():
        pytest.importorskip("torch")
        run_torch_tensors()


def run_profiled(name: str) -> str:
    """The GPU profile's instrumented build of case ``name`` (lowering/
    profile.py) on the device: the same results as the plain build, every
    launch counted, the timed loops too, no loop counting more than its launch;
    returns a line with the plain and instrumented times (the overhead)."""
    import json

    import numpy as np

    case = BY_NAME[name]
    artifacts = os.environ.get("LT_CUDA_ARTIFACTS")
    if artifacts:
        inst = cuda.load(os.path.join(artifacts, f"{name}.profiled.json"))
        with open(os.path.join(artifacts, f"{name}.layout.json")) as fh:
            layout = json.load(fh)
    else:
        import dataclasses

        from lt_mlir.profile import compile_instrumented_gpu

        kernel, lay, _ = compile_instrumented_gpu(case.text(), target="cuda")
        inst, layout = kernel, dataclasses.asdict(lay)
    plain = kernel_for(case)
    check(case, inst(*case.arrays()))
    inst.zero_global("lt_profile_counters")
    repeat = 20
    runs = inst.time_launches(*case.arrays(), warmup=0, repeat=repeat)
    counters = inst.global_array("lt_profile_counters", np.int64)[: layout["size"]]
    n = layout["loops"]
    assert (counters[n:] > 0).all(), f"{name}: a launch was not counted: {counters[n:]}"
    launch_of = {}
    for k, roots in enumerate(layout["launches"]):
        for r in roots:
            launch_of[r] = k
    for i in range(n):
        if not layout["timed"][i]:
            assert counters[i] == 0, f"{name}: L{i} is untimed but counted {counters[i]}"
            continue
        root = i
        while layout["parents"][root] is not None:
            root = layout["parents"][root]
        # (0 where only threads other than thread 0 run the loop: a thread loop's tail)
        assert 0 <= counters[i] <= counters[n + launch_of[root]], f"{name}: L{i} counted {counters[i]}, its launch {counters[n + launch_of[root]]}"
    timed = [i for i in range(n) if layout["timed"][i]]
    assert not timed or counters[timed].max() > 0, f"{name}: no timed loop counted anything"
    plain_s = float(np.median(plain.time(*case.arrays(), repeat=repeat)))
    inst_s = float(np.median([sum(r) for r in runs]))
    return f"{name}: plain {plain_s * 1e6:.1f} us, instrumented {inst_s * 1e6:.1f} us ({inst_s / plain_s - 1:+.1%})"


if __name__ == "__main__":
    # --small: only the cases CI also runs emulated (quick enough under
    # compute-sanitizer, see tools/gpu-check)
    small = "--small" in sys.argv[1:]
    if not cuda.available():
        sys.exit("no CUDA device")
    failed = 0
    cases = [c for c in CASES if c.emulate or not small]
    for case in cases:
        try:
            run_case(case)
            print(f"PASS {case.name}", flush=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL {case.name}: {type(e).__name__}: {e}", flush=True)
    try:
        run_torch_tensors()
        print("PASS torch_tensors")
    except ImportError:
        print("SKIP torch_tensors (no torch)")
    except Exception as e:  # noqa: BLE001
        failed += 1
        print(f"FAIL torch_tensors: {type(e).__name__}: {e}")
    for name in PROFILED:
        try:
            print(f"PASS profiled {run_profiled(name)}", flush=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL profiled {name}: {type(e).__name__}: {e}", flush=True)
    print(f"{len(cases) + 1 + len(PROFILED) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
