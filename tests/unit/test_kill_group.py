"""`kill_group`, the one way the package ends a CLI it started (the chat's
agent, a quick action's run, the models question): the whole process group
on POSIX, the whole tree (`taskkill /T /F`) on Windows. The CLI is the
scripted one with a grandchild that only the group's end ends
(tests/rig/grandchild.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest

from qwencompanion_src.core.cli import processes
from qwencompanion_src.core.cli.processes import kill_group

from ..support.processes import Grandchildren, descendants

FAKE_CLI = Path(__file__).resolve().parents[1] / "rig" / "fake_stream_cli.py"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the process tree")


@pytest.fixture
def cli(tmp_path: Path, grandchildren: Grandchildren) -> Iterator[subprocess.Popen[bytes]]:
    """The scripted CLI in a session (so a group) of its own, as the package
    starts it, its grandchild running; killed at the end if still running."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"grandchild": str(grandchildren.pid_file)}))
    process = subprocess.Popen([sys.executable, str(FAKE_CLI), str(script)], stdin=subprocess.PIPE, start_new_session=True)
    try:
        grandchildren.pids()
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdin is not None:
            process.stdin.close()


def test_the_group_ends_with_its_leader(cli: subprocess.Popen[bytes], grandchildren: Grandchildren) -> None:
    kill_group(cli.pid)
    assert cli.wait(15) == -9
    assert grandchildren.wait_gone() == []


def test_what_a_leader_that_exited_left_behind_is_ended(cli: subprocess.Popen[bytes], grandchildren: Grandchildren) -> None:
    """The agent exits at the end of its input; its grandchild does not."""
    assert cli.stdin is not None
    cli.stdin.close()
    assert cli.wait(15) == 0
    assert grandchildren.running() == grandchildren.pids()
    kill_group(cli.pid)
    assert grandchildren.wait_gone() == []


class Taskkill:
    """Windows' taskkill as documented, started and never waited for (the
    package ends an agent from Sublime's main thread at unload): `/PID n`
    names the process, `/T` adds every process it started (and theirs), `/F`
    ends them forcibly; without `/F` a process with no window is not ended."""

    started: ClassVar[list[list[str]]] = []

    def __init__(self, argv: list[str], **kwargs: object) -> None:
        assert argv[0] == "taskkill"
        Taskkill.started.append(argv)
        pid = int(argv[argv.index("/PID") + 1])
        if "/F" in argv:
            for target in [pid, *descendants(pid)] if "/T" in argv else [pid]:
                os.kill(target, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        raise AssertionError("taskkill was waited for")

    def communicate(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("taskkill was waited for")


def test_on_windows_the_whole_tree_is_ended_by_a_taskkill_never_waited_for(
    cli: subprocess.Popen[bytes], grandchildren: Grandchildren, monkeypatch: pytest.MonkeyPatch
) -> None:
    Taskkill.started = []
    monkeypatch.setattr(processes, "sys", SimpleNamespace(platform="win32"))
    monkeypatch.setattr(
        processes,
        "subprocess",
        SimpleNamespace(Popen=Taskkill, DEVNULL=subprocess.DEVNULL, CREATE_NO_WINDOW=0x08000000),
    )
    kill_group(cli.pid)
    assert Taskkill.started == [["taskkill", "/T", "/F", "/PID", str(cli.pid)]]
    assert cli.wait(15) == -9
    assert grandchildren.wait_gone() == []
