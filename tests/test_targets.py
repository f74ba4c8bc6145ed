"""The target CPU is an option, not the host: every reference program
compiles for an AVX2 CPU and for an AVX-512 CPU on any x86-64 host, the
instruction choice follows the CPU asked for, and the code runs (on
guard-paged arrays, against float64 NumPy) for whichever of the two this
host supports.

The CPUs are the x86-64 psABI levels: ``x86-64-v3`` (AVX2, FMA, BMI) and
``x86-64-v4`` (AVX-512 F/BW/CD/DQ/VL) without its preference for 256-bit
vectors, so what runs here needs only the features every AVX2 (AVX-512)
machine has.  The lit suite pins concrete CPUs (znver2, znver4) for the
instruction checks (``test/lit/lowering/emit-asm.mlir``).
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from llvmlite import binding as llvm

import lt_mlir
from lt_mlir import programs
from lt_mlir.lowering import machine
from lt_mlir.testing import finish_job, start_job
from lt_mlir.testing.fuzz import DEFAULT_PROGRAMS, PROGRAMS

# name -> (LLVM CPU, features, host features it needs, vector register)
CPUS = {
    "avx2": ("x86-64-v3", "", ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe"), "ymm"),
    "avx512": ("x86-64-v4", "-prefer-256-bit", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"), "zmm"),
}


def vectorized(m: int = 8, n: int = 32, k: int = 33) -> str:
    """The clipped matmul, k outside n and n vectorized 16 wide: zmm code
    with AVX-512, ymm with AVX2."""
    return lt_mlir.Schedule(programs.matmul(m, n, k, clipped=True)).swap(1).vectorize(3, 16).text


def host_supports(name: str) -> bool:
    have = llvm.get_host_cpu_features()
    return all(have.get(f, False) for f in CPUS[name][2])


def cases() -> list[tuple[str, str, list, list]]:
    """(key, text, inputs, references) for every reference program at its
    first size, plus a vectorized schedule."""
    rng = np.random.default_rng(7)
    out = []
    for name in DEFAULT_PROGRAMS:
        p = PROGRAMS[name]
        size = p.sizes[0]
        xs = p.inputs(rng, size)
        out.append((name, p.make(*size), xs, p.reference(xs, size)))
    p = PROGRAMS["clipped_matmul"]
    size = (8, 32, 33)
    xs = p.inputs(rng, size)
    out.append(("clipped_matmul_vectorized", vectorized(*size), xs, p.reference(xs, size)))
    return out


def assembly(text: str, name: str) -> str:
    cpu, features, _, _ = CPUS[name]
    target = machine.cpu_target(cpu, features)
    return machine.emit_assembly(machine.optimize(lt_mlir.lower(text).llvm_ir, target), target)


@pytest.mark.parametrize("name", sorted(CPUS))
def test_instruction_choice_follows_the_cpu_not_the_host(name):
    asm = assembly(vectorized(), name)
    register = CPUS[name][3]
    assert f"%{register}" in asm
    if register == "ymm":
        assert "%zmm" not in asm


@pytest.mark.parametrize("name", sorted(CPUS))
def test_reference_programs_compile_for_both_and_run_where_the_host_can(name, tmp_path):
    cpu, features, _, _ = CPUS[name]
    all_cases = cases()
    for key, text, _, _ in all_cases:  # compiling needs no such CPU
        assert "retq" in assembly(text, name), key
    if not host_supports(name):
        pytest.skip(f"this host lacks {name}: compiled for {cpu}, not run")
    named = {f"{key}_{j}": x for key, _, xs, _ in all_cases for j, x in enumerate(xs)}
    np.savez(tmp_path / "inputs.npz", **named)
    job = {
        "inputs": str(tmp_path / "inputs.npz"),
        "outputs": str(tmp_path / "outputs.npz"),
        "cases": [
            {"key": key, "text": text, "inputs": [f"{key}_{j}" for j in range(len(xs))], "cpu": cpu, "features": features}
            for key, text, xs, _ in all_cases
        ],
    }
    run = finish_job(start_job(job, str(tmp_path / "job.json")), job)
    assert run.returncode == 0, run.describe()
    for key, _, _, refs in all_cases:
        for side in ("end", "start"):
            for j, (ref, scale, length) in enumerate(refs):
                got = run.outputs[f"{key}_{side}_{j}"].astype(np.float64)
                bound = 2.0 * (length + 1) * np.finfo(np.float32).eps * scale + np.finfo(np.float32).tiny
                assert np.all(np.abs(got - ref) <= bound), f"{key} output {j} ({cpu}, guard at the {side})"


def test_host_is_the_default():
    host = machine.cpu_target()
    assert host.host and host.cpu == llvm.get_host_cpu_name()
    assert machine.cpu_target("host") == host


@pytest.mark.parametrize(
    "cpu, features, message",
    [
        ("znver9", None, "error: unknown CPU 'znver9' (lt-opt --mcpu=help lists them)"),
        (None, "avx2", "error: bad CPU feature 'avx2': write +name to enable a feature, -name to disable it"),
        ("znver2", "+avx2,+nope", "error: unknown CPU feature 'nope' (lt-opt --mcpu=help lists them)"),
        ("znver2", "+", "error: bad CPU feature '+'"),
    ],
)
def test_bad_cpu_names_are_clean_errors(cpu, features, message, tmp_path):
    text = programs.pointwise_add(33)
    with pytest.raises(lt_mlir.CompileError) as e:
        lt_mlir.compile(text, cpu=cpu, features=features)
    assert str(e.value).startswith(message)
    with pytest.raises(lt_mlir.CompileError) as e:
        lt_mlir.compile_aot(text, str(tmp_path / "add"), cpu=cpu, features=features)
    assert str(e.value).startswith(message)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_aot_object_for_another_cpu(tmp_path):
    """An object file built for an AVX-512 CPU holds zmm code on any host;
    one for an AVX2 CPU holds ymm code and no zmm."""
    text = vectorized()
    for name, (cpu, features, _, register) in CPUS.items():
        paths = lt_mlir.compile_aot(text, str(tmp_path / name / "mm"), shared=False, cpu=cpu, features=features)
        listing = subprocess.run(["objdump", "-d", paths["object"]], capture_output=True, text=True, check=True).stdout
        assert f"%{register}" in listing, name
        if register == "ymm":
            assert "%zmm" not in listing
