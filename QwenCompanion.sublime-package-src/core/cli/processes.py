"""The CLIs the package starts (the chat's agent, a quick action's run, the
models question) each run in a process group of their own: the launcher may
start a child node, and ending the group ends both."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

# What `start_process` started and nobody has closed yet: a loop of ours
# closes these (`close_left_on`) before it closes itself.
_open_transports: weakref.WeakSet[asyncio.SubprocessTransport] = weakref.WeakSet()


def own_group_options() -> dict[str, Any]:
    """`create_subprocess_exec` arguments that start the process in a new
    group (POSIX: a session of its own; Windows: a new process group, no console)."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW}
    return {"start_new_session": True}


def own_group_in_session_options() -> dict[str, Any]:
    """`own_group_options` for a short tool (git, a search): on POSIX a
    process group of its own inside our session, ended as a group all the
    same. Not a session of its own: Linux's autogroup scheduler gives each
    session an equal share of a busy CPU, so a tool in a session of its own
    ran at a fifth of the speed of the same tool in ours (measured on a
    loaded 2-core machine)."""
    if sys.platform == "win32":
        return own_group_options()
    return {"process_group": 0}


async def start_process(*argv: str, **options: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec`, remembered until its loop closes:
    a transport collected after its loop closed raises "Event loop is closed"
    in whatever runs then, and its process, never reaped, runs on."""
    process = await asyncio.create_subprocess_exec(*argv, **options)
    transport = getattr(process, "_transport", None)  # asyncio keeps it private
    if transport is not None:
        _open_transports.add(transport)
    return process


def close_left_on(loop: asyncio.AbstractEventLoop) -> None:
    """End (the group of) every process started on `loop` and still held, and
    close its pipes. Run on `loop` just before it closes, with a turn or two
    after so the pipes let go of their files."""
    left = [transport for transport in list(_open_transports)
            if not transport.is_closing() and getattr(transport, "_loop", None) is loop]
    for transport in left:
        pid = transport.get_pid()
        if transport.get_returncode() is None and pid is not None:
            kill_group(pid)
        transport.close()
        _open_transports.discard(transport)


def kill_group(pid: int) -> None:
    """End process `pid` and its group (POSIX) or tree (Windows); never waits."""
    if sys.platform == "win32":
        # taskkill is not waited for: this runs on Sublime's main thread when
        # the package unloads, and taskkill of a tree can take seconds.
        subprocess.Popen(
            ["taskkill", "/T", "/F", "/PID", str(pid)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def terminate_group(pid: int) -> None:
    """Ask process `pid` and its group to end (POSIX: SIGTERM, on which the
    CLI's exit hooks run); never waits. Windows has no such request for a
    group without a console: there the tree is ended as `kill_group` does."""
    if sys.platform == "win32":
        kill_group(pid)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)


async def end_group(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM to the process's group, SIGKILL to whatever of it is left
    after `grace` seconds. While qwen starts it holds a lock on its extension
    store (~/.qwen/extension-store); its exit hooks remove the lock on
    SIGTERM, but after a SIGKILL the lock stays for a minute, and every qwen
    started meanwhile waits for it and fails: "Extension store is busy"."""
    if process.returncode is None:
        terminate_group(process.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), grace)
    kill_group(process.pid)


def end_group_soon(pid: int, loop: asyncio.AbstractEventLoop, grace: float, running: Callable[[], bool]) -> None:
    """`end_group` without waiting (any thread): SIGTERM to the group now,
    SIGKILL on `loop` after `grace` seconds while `running()` still holds."""
    terminate_group(pid)

    def kill_if_running() -> None:
        if running():
            kill_group(pid)

    if not loop.is_closed():
        with contextlib.suppress(RuntimeError):  # closed meanwhile: close_left_on ended what it held
            loop.call_soon_threadsafe(loop.call_later, grace, kill_if_running)


def end_group_waiting(pid: int, grace: float, leader: subprocess.Popen[bytes] | None = None) -> None:
    """`end_group` for a group that need not be our child, on a thread that
    may block: SIGTERM, then SIGKILL to whatever is left once the whole group
    has ended or after `grace` seconds. `leader`, when the group's leader is
    our child, is reaped here: unreaped, it stays in its group as a zombie."""
    if sys.platform == "win32":
        kill_group(pid)  # no gentler request for a group without a console
        return
    terminate_group(pid)
    deadline = time.monotonic() + grace
    while not _group_gone(pid, leader) and time.monotonic() < deadline:
        time.sleep(0.05)
    kill_group(pid)
    if leader is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            leader.wait(grace)


def _group_gone(pid: int, leader: subprocess.Popen[bytes] | None) -> bool:
    if leader is not None:
        leader.poll()  # reaps it once it has exited
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


async def close_and_end(process: asyncio.subprocess.Process, exit_grace: float, term_grace: float) -> None:
    """Close the process's input and give it `exit_grace` seconds to end by
    itself (a CLI reading prompts does), then `end_group`."""
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    if process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), exit_grace)
    await end_group(process, term_grace)
