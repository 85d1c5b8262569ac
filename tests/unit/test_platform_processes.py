"""Starting and ending qwen's processes on each platform. On Windows a new
process group (no POSIX session), `taskkill /T` of the tree, and liveness
through the process handle: never `os.kill`, which on Windows terminates the
process. Faked here; CI runs these on Windows and macOS too, where the real
kill must end the process and the child it started."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.actions import process
from qwencompanion_src.core.cli import processes
from qwencompanion_src.core.companion import lockfile

WAIT = 10.0  # a hang guard
CREATE_NEW_PROCESS_GROUP = 0x00000200
CREATE_NO_WINDOW = 0x08000000
# Starts a child that inherits its stdout, prints nothing more, and sleeps:
# the pipe ends only when both are gone.
PARENT_OF_A_SLEEPER = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
    "print('started', flush=True); time.sleep(60)"
)

pytestmark = [pytest.mark.real_platform("win32"), pytest.mark.real_platform("darwin")]


def forbidden(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a POSIX-only call on the Windows path")


@pytest.fixture
def on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(subprocess, "CREATE_NEW_PROCESS_GROUP", CREATE_NEW_PROCESS_GROUP, raising=False)
    monkeypatch.setattr(subprocess, "CREATE_NO_WINDOW", CREATE_NO_WINDOW, raising=False)
    for name in ("killpg", "kill", "setsid", "getpgid"):
        monkeypatch.setattr(processes.os, name, forbidden, raising=False)


async def test_ending_the_group_ends_qwen_and_the_child_it_started(tmp_path: Path) -> None:
    started = await process.spawn([sys.executable, "-c", PARENT_OF_A_SLEEPER], str(tmp_path), {})
    assert started.stdout is not None
    assert (await asyncio.wait_for(started.stdout.readline(), WAIT)).strip() == b"started"
    processes.kill_group(started.pid)
    await asyncio.wait_for(started.wait(), WAIT)
    # End of file once neither the process nor its child holds the pipe.
    assert await asyncio.wait_for(started.stdout.read(), WAIT) == b""


async def test_on_windows_qwen_starts_in_a_new_process_group_without_a_session(
    on_windows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    async def record(*argv: str, **kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr(process.asyncio, "create_subprocess_exec", record)
    await process.spawn(["qwen"], ".", {})
    assert seen["creationflags"] == CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW
    assert "start_new_session" not in seen and "preexec_fn" not in seen


def test_on_windows_the_group_is_ended_with_taskkill_of_the_tree(
    on_windows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[list[str], dict[str, Any]]] = []
    monkeypatch.setattr(processes.subprocess, "Popen", lambda argv, **kwargs: calls.append((argv, kwargs)))
    processes.kill_group(4321)
    assert [(argv, kwargs["creationflags"]) for argv, kwargs in calls] == [
        (["taskkill", "/T", "/F", "/PID", "4321"], CREATE_NO_WINDOW)
    ]


def test_on_windows_liveness_asks_the_process_handle_and_never_signals(
    on_windows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lockfile.os, "kill", forbidden)
    monkeypatch.setattr(lockfile, "_windows_pid_alive", lambda pid: pid == 42)
    assert lockfile.pid_alive(42)
    assert not lockfile.pid_alive(43)
    assert not lockfile.pid_alive(0)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and sessions")
def test_a_short_tool_runs_in_a_group_of_its_own_inside_our_session() -> None:
    """git and the search tools: ended as a group, scheduled with the editor
    (a session of their own is an autogroup of their own on Linux)."""
    import os
    import time

    from qwencompanion_src.core.git import run_capped

    ids = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    _, output, _ = run_capped([sys.executable, "-c", ids], cwd=None, limit=1000, timeout=WAIT)
    pid, group, session = (int(number) for number in output.split())
    assert (group, session) == (pid, os.getsid(0))
    started = time.monotonic()
    with pytest.raises(TimeoutError):  # the tool and the child holding its pipe are both ended
        run_capped([sys.executable, "-c", PARENT_OF_A_SLEEPER], cwd=None, limit=1000, timeout=1.0)
    assert time.monotonic() - started < 30


def test_every_asyncio_process_is_started_where_its_loop_can_close_it() -> None:
    # One started elsewhere is unknown to `close_left_on`: if its owner lets
    # go of it, it runs on past its loop (and raises when collected).
    package = Path(processes.__file__).parents[2]
    starters = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                      if "_vendor" not in path.parts and "asyncio.create_subprocess_" in path.read_text("utf-8"))
    assert starters == [str(Path("core", "cli", "processes.py"))]
