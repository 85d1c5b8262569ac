"""Shared test set-up: the package source is importable as `qwencompanion_src`.

The built package is loaded by the simulated host as `QwenCompanion`; the
source gets another name so the two never meet in `sys.modules`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "QwenCompanion.sublime-package-src"
SOURCE_PACKAGE = "qwencompanion_src"
# The in-Sublime suite imports `sublime` and `unittesting` and runs through
# UnitTesting (tests/sim/test_release_install.py runs it in the simulator).
collect_ignore = ["sublime"]
# --order=reverse / shuffle[:SEED] (tests/order.py): `make test` runs the unit and
# simulator tests shuffled, so a test that depends on what ran before fails.
pytest_plugins = ["tests.order"]


def _register_source_package() -> None:
    if SOURCE_PACKAGE in sys.modules:
        return
    spec = importlib.util.spec_from_loader(SOURCE_PACKAGE, loader=None, is_package=True)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__path__ = [str(SOURCE)]
    sys.modules[SOURCE_PACKAGE] = module


_register_source_package()

REAL_PLATFORMS = {"win32", "darwin"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark in item.iter_markers("real_platform"):
            if mark.args not in [(name,) for name in REAL_PLATFORMS]:
                raise pytest.UsageError(f"{item.nodeid}: real_platform takes one of {sorted(REAL_PLATFORMS)}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test marked real_platform(P) must run on P: skipping it there fails it."""
    report = yield
    platforms = {mark.args[0] for mark in item.iter_markers("real_platform")}
    if report.skipped and sys.platform in platforms and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} is marked real_platform({sys.platform!r}) but was skipped on {sys.platform}"
    return report


def _tolerate_asyncio_server_close_race() -> None:
    """CPython's open gh-109564: a connection accepted while an asyncio server
    closes detaches after the server already woke its waiters, and
    `Server._wakeup` then iterates `None` in a transport's `__del__` (an
    unraisable TypeError, which this suite turns into a failure of whatever
    test is running). The test servers open and close thousands of times, so
    the race shows now and then; this applies the proposed fix (PR 126660, a
    `None` check) to the test interpreter only."""
    import asyncio.base_events

    server = asyncio.base_events.Server
    wakeup = server._wakeup

    def wakeup_once(self: asyncio.base_events.Server) -> None:
        if self._waiters is not None:
            wakeup(self)

    server._wakeup = wakeup_once  # type: ignore[method-assign]


_tolerate_asyncio_server_close_race()
