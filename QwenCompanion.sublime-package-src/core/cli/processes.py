"""The CLIs the package starts (the chat's agent, a quick action's run, the
models question) each run in a process group of their own: the launcher may
start a child node, and ending the group ends both."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Any


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
