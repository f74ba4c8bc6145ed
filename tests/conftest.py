"""Shared pytest configuration.

Under pytest-xdist (``make pytest`` runs ``pytest -n auto --dist loadscope``)
each module's tests go to one worker together, so that a module-scoped
fixture (the fuzzer's 2,000-schedule run, the CUDA cases' emulated runs, the
guarded kernels...) is built once, as in a serial run.  The workers take the
modules in collection order; this puts the fuzzer's first (by far the
longest) and then the other modules with such fixtures, so that the long
ones start at once and the short ones fill the other worker around them.
"""

from __future__ import annotations

import pytest

FIRST = ("test_fuzz.py",)  # the longest module: start it first


def _module_scoped(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        fixturedef.scope == "module"
        for name in item.fixturenames
        for fixturedef in info.name2fixturedefs.get(name, ())
    )


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):
        return  # the controller, or a serial run: collection order
    slow = {item.nodeid.split("::", 1)[0] for item in items if _module_scoped(item)}

    def rank(item):
        module = item.nodeid.split("::", 1)[0]
        if module.rsplit("/", 1)[-1] in FIRST:
            return 0
        return 1 if module in slow else 2

    items.sort(key=rank)  # stable: each module keeps its own order


@pytest.fixture(autouse=True)
def _tuning_database(tmp_path_factory, monkeypatch):
    """Every test's tuning database is a fresh file of its own, never the
    user's cache (lt-tune and Tensor.optimize record their winners)."""
    monkeypatch.setenv("LT_MLIR_TUNING_DB", str(tmp_path_factory.mktemp("tuning") / "tuning.sqlite"))
