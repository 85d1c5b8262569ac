"""Ending an agent's process tree never waits (it runs on Sublime's main thread
when the package unloads): on Windows taskkill is started, not waited for."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from qwencompanion_src.core.chat import bridge


class StartedOnly:
    started: list[list[str]] = []

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        StartedOnly.started.append(argv)

    def wait(self, timeout: float | None = None) -> int:
        raise AssertionError("taskkill was waited for")

    def communicate(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("taskkill was waited for")


def test_windows_taskkill_is_started_and_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", StartedOnly)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("subprocess.run waits for taskkill"))
    bridge.kill_group(4242, windows=True)
    assert StartedOnly.started == [["taskkill", "/T", "/F", "/PID", "4242"]]
