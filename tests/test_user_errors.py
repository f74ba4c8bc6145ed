"""Errors a user meets reading wrong or late: an unknown op is reported where
it is written; a kernel checks its inputs before allocating its outputs;
saved files carry no stale locations."""

from __future__ import annotations

import numpy as np
import pytest

from lt_mlir import compile, programs
from lt_mlir.errors import ArgumentError, ParseError
from lt_mlir.schedule import Schedule


def _misspelt(text: str, line_of: str) -> tuple[str, int]:
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if line_of in ln)
    lines[i] = lines[i].replace('"lt.loop"', '"lt.lop"', 1)
    return "\n".join(lines), i + 1


def test_unknown_op_is_reported_on_its_own_line():
    text, line = _misspelt(programs.matmul(4, 4, 4), '"lt.loop"')
    with pytest.raises(ParseError) as e:
        Schedule(text)
    # the misspelt loop's line, not the lt.dim inside it that lost its loop
    assert f"-:{line}:" in str(e.value)
    assert "unknown op 'lt.lop'" in str(e.value)


def test_kernel_checks_input_shapes_before_allocating_outputs():
    big = compile(programs.matmul(10**6, 10**6, 10**6))  # 4 TB of output if allocated first
    a, b = np.zeros((33, 64), np.float32), np.zeros((64, 48), np.float32)
    with pytest.raises(ArgumentError, match=r"argument 0: expected shape \(1000000, 1000000\), got \(33, 64\)"):
        big(a, b)


def test_saved_text_has_no_input_locations_and_errors_cite_the_saved_file(tmp_path):
    s = Schedule(programs.matmul(8, 8, 8))
    s.split(0, 2)
    saved = s.file_text
    assert "loc(" not in saved and "#loc" not in saved
    again = Schedule(saved)
    assert again.text.count("lt.loop") == s.text.count("lt.loop")
    # a verifier error in the saved file cites the saved file's own line
    # (with the input's locations kept it would cite the input's line)
    path = tmp_path / "saved.mlir"
    lines = saved.splitlines()
    i = next(n for n, ln in enumerate(lines) if "size = 4 : i64" in ln)
    lines[i] = lines[i].replace("size = 4 : i64", "size = -4 : i64")
    path.write_text("\n".join(lines))
    op_line = next(n for n, ln in enumerate(lines) if '"lt.loop"' in ln) + 1  # the outer loop starts here
    from lt_mlir.dialect.lt import parse_module

    with pytest.raises(ParseError, match=rf"{path}:{op_line}:\d+: error: 'lt.loop' size must be positive"):
        parse_module(path.read_text(), str(path))


def test_readme_lt_ui_reference_takes_the_tensors_inputs():
    """The README's ``lt.ui(c, ..., reference=...)`` line: its reference is a
    function of the program's inputs (0.0 is a constant, not an input) and
    equals the program."""
    import pathlib
    import re

    import lt_mlir as lt

    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    m = re.search(r'lt\.ui\(c, "tuned\.mlir", reference=(lambda .*)\)\s*$', readme, re.M)
    assert m, "the README's lt.ui example is gone"
    reference = eval(m.group(1), {"np": np})  # noqa: S307 - the README's own line
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 7)).astype(np.float32)
    B = rng.standard_normal((7, 3)).astype(np.float32)
    s = lt.SymbolGenerator()
    c = (lt.Tensor(A).to(s.m, s.k) * lt.Tensor(B).to(s.k, s.n)).max(0.0).sum(s.k)
    expected = np.array([[sum(max(A[i, k] * B[k, j], 0.0) for k in range(7)) for j in range(3)] for i in range(5)])
    np.testing.assert_allclose(reference(A, B), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-5, atol=1e-5)
