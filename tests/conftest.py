"""Shared test set-up: the package source is importable as `qwencompanion_src`.

The built package is loaded by the simulated host as `QwenCompanion`; the
source gets another name so the two never meet in `sys.modules`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "QwenCompanion.sublime-package-src"
SOURCE_PACKAGE = "qwencompanion_src"
# The in-Sublime suite imports `sublime` and `unittesting` and runs through
# UnitTesting (tests/sim/test_release_install.py runs it in the simulator).
collect_ignore = ["sublime"]


def _register_source_package() -> None:
    if SOURCE_PACKAGE in sys.modules:
        return
    spec = importlib.util.spec_from_loader(SOURCE_PACKAGE, loader=None, is_package=True)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__path__ = [str(SOURCE)]
    sys.modules[SOURCE_PACKAGE] = module


_register_source_package()


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
