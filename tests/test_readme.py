"""The README's code blocks run as written, top to bottom, in one namespace
(a reader's session in a fresh directory), and the outputs the README shows
are what the code before them prints.

A block is checked by its language and an HTML comment on the line before
it: ``python`` blocks run; a plain block marked ``<!-- readme-test: output
-->`` must appear in what the last python block printed (``output avx2``:
only on a host with 8-float vectors, where that output comes from);
``<!-- readme-test: gpu -->`` runs only with a CUDA device; ``<!--
readme-test: skip: why -->`` says why a block is not run; ``sh`` blocks are
commands (``make test`` is CI itself).  Any other block fails the test, so
a new block cannot go unchecked."""

from __future__ import annotations

import contextlib
import io
import linecache
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!-- readme-test: ([\w-]+)(?: ([^:]*?))?(?:: (.*?))? -->")


def readme_blocks() -> list[dict]:
    text = README.read_text()
    blocks = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").splitlines()
        marker = MARKER.fullmatch(before[-1].strip()) if before else None
        blocks.append(
            {
                "lang": m.group(1),
                "code": m.group(2),
                "line": text.count("\n", 0, m.start()) + 1,
                "mark": marker.group(1) if marker else None,
                "arg": (marker.group(2) or "").strip() if marker else "",
            }
        )
    return blocks


def test_every_readme_block_is_checked():
    for b in readme_blocks():
        assert b["lang"] in ("python", "sh") or b["mark"] in ("output", "skip"), (
            f"README.md:{b['line']}: a ```{b['lang']} block the README test does not check: mark it "
            "<!-- readme-test: output --> or <!-- readme-test: skip: why -->"
        )


def test_readme_runs_top_to_bottom(tmp_path, monkeypatch):
    from lt_mlir.lowering.machine import host_vector_width
    from lt_mlir.runtime import cuda

    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    printed = ""
    ran = compared = 0
    for b in readme_blocks():
        where = f"README.md:{b['line']}"
        if b["mark"] == "skip" or b["lang"] == "sh":
            continue
        if b["mark"] == "output":
            if b["arg"] == "avx2" and host_vector_width(4) != 8:
                continue
            assert b["code"] in printed, f"{where}: the README shows\n{b['code']}\nbut the code before it printed\n{printed}"
            compared += 1
            continue
        if b["mark"] == "gpu" and not cuda.available():
            continue
        out = io.StringIO()
        # the block's source is findable (inspect.getsource: appy.jit reads it)
        linecache.cache[where] = (len(b["code"]), None, b["code"].splitlines(True), where)
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(b["code"], where, "exec"), namespace)
            except Exception as e:  # noqa: BLE001
                pytest.fail(f"{where}: {type(e).__name__}: {e}")
        printed = out.getvalue()
        ran += 1
    assert ran >= 5 and compared >= 1
