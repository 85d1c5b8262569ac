"""Which process a pid names: a pid in a record is trusted only with the
start token recorded beside it, since a pid is reused once its process has
gone; and which process listens on a loopback port, so a token is sent only
to the process it was made for.

- Linux: `<boot id>:<start time>` (the boot id from
  /proc/sys/kernel/random/boot_id, the start in clock ticks since boot from
  /proc/<pid>/stat field 22), the format qwen records for its own processes;
  the listener from the socket's inode in /proc/net/tcp{,6} matched against
  /proc/<pid>/fd of the group's processes.
- macOS: `ps -o lstart=` (the start's wall-clock second; a pid reused after a
  restart starts at another second); the listener from `lsof`.
- Windows: the process's creation time (GetProcessTimes, 100 ns steps); the
  listener is not checked (the standard library has no owner of a socket
  short of the IP Helper API): a live process with the recorded creation
  time holds its own port, so no other process listens there.

Everything here may block briefly (a /proc read, `ps`, `lsof`): never on
Sublime's threads."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

PS_TIMEOUT_SECONDS = 5.0
LISTEN_STATE = "0A"  # TCP_LISTEN in /proc/net/tcp
PLATFORM: str = sys.platform  # a variable: each branch is type-checked on every platform


class CannotTell(OSError):
    """This platform (or this machine) gives no way to check."""


def linux_proc_start(pid: int) -> str | None:
    """The start token qwen records for a process on Linux (None elsewhere or
    unreadable; "" for one that has exited but not been reaped, a zombie)."""
    if not PLATFORM.startswith("linux"):
        return None
    stat = _linux_stat(pid)
    boot_id = _read("/proc/sys/kernel/random/boot_id")
    if stat is None or boot_id is None:
        return None
    if stat[:1] in (["Z"], ["X"]):
        return ""
    return f"{boot_id.strip()}:{stat[19]}" if len(stat) > 19 and stat[19].isdigit() else None


def start_token(pid: int) -> str | None:
    """What tells this process from a later one of the same pid: None when it
    is not running or cannot be read, "" for a zombie."""
    if pid <= 0:
        return None
    if PLATFORM.startswith("linux"):
        return linux_proc_start(pid)
    if PLATFORM == "win32":
        return _windows_creation_time(pid)
    started = _run(["ps", "-o", "lstart=", "-p", str(pid)])
    return f"lstart:{started}" if started else None


def same_process(pid: int, recorded: str) -> bool:
    """`pid` is still the process whose start token was recorded (never for an empty record)."""
    return bool(recorded) and start_token(pid) == recorded


def group_listener(group: int, port: int) -> int | None:
    """The pid of the process of process group `group` (POSIX; on Windows
    the process `group` itself) listening on TCP `port`; None when none of
    them does. CannotTell where that cannot be checked."""
    if PLATFORM.startswith("linux"):
        return _linux_group_listener(group, port)
    if PLATFORM == "win32":
        raise CannotTell("which process listens on a port is not checked on Windows")
    found = _run(["lsof", "-nP", "-a", "-g", str(group), f"-iTCP:{port}", "-sTCP:LISTEN", "-t"])
    if found is None:
        raise CannotTell("lsof did not answer")
    pids = [int(line) for line in found.split() if line.isdigit()]
    return pids[0] if pids else None


def anyone_listens(port: int) -> bool:
    """Whether any process listens on TCP `port` (a daemon in its end has
    closed its socket). CannotTell where that cannot be checked."""
    if PLATFORM.startswith("linux"):
        return bool(_linux_listening_inodes(port))
    if PLATFORM == "win32":
        raise CannotTell("which process listens on a port is not checked on Windows")
    found = _run(["lsof", "-nP", f"-iTCP:{port}", "-sTCP:LISTEN", "-t"])
    if found is None:  # lsof exits 1 when it finds nothing, as when it fails: told apart nowhere, so unknown
        raise CannotTell("lsof did not answer")
    return bool(found.split())


def executable(pid: int) -> str | None:
    """The program file process `pid` runs (None when unknown)."""
    if PLATFORM.startswith("linux"):
        try:
            return os.readlink(f"/proc/{pid}/exe")
        except OSError:
            return None
    if PLATFORM == "win32":
        return _windows_image_name(pid)
    return _run(["ps", "-o", "comm=", "-p", str(pid)]) or None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _linux_stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields from the state on (field 3 is [0]): the
    command name before them may hold spaces and parentheses."""
    stat = _read(f"/proc/{pid}/stat")
    return stat[stat.rfind(")") + 1:].split() if stat else None


def _linux_listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (_read(table) or "").splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN_STATE and fields[1].rsplit(":", 1)[-1] == f"{port:04X}":
                inodes.add(fields[9])
    return inodes


def _linux_group_listener(group: int, port: int) -> int | None:
    inodes = {f"socket:[{inode}]" for inode in _linux_listening_inodes(port)}
    if not inodes:
        return None
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError as error:
        raise CannotTell(f"/proc is unreadable: {error}") from None
    for pid in pids:
        stat = _linux_stat(pid)
        if stat is None or len(stat) < 3 or stat[2] != str(group):
            continue
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if inodes.intersection(links):
            return pid
    return None


def _run(argv: list[str]) -> str | None:
    """A small tool's output, stripped; None when it is missing or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PS_TIMEOUT_SECONDS,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _windows_query(pid: int, query: Callable[[Any, Any], str | None]) -> str | None:
    """`query(kernel32, handle)` on process `pid` opened for limited queries (None: not openable)."""
    import ctypes  # Windows only, and only when a record is checked

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined,unused-ignore]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return None
    try:
        return query(kernel32, handle)
    finally:
        kernel32.CloseHandle(handle)


def _windows_creation_time(pid: int) -> str | None:
    import ctypes
    from ctypes import wintypes

    def created(kernel32: Any, handle: Any) -> str | None:
        times = [wintypes.FILETIME() for _ in range(4)]
        if not kernel32.GetProcessTimes(handle, *(ctypes.byref(t) for t in times)):
            return None
        return f"created:{(times[0].dwHighDateTime << 32) | times[0].dwLowDateTime}"

    return _windows_query(pid, created)


def _windows_image_name(pid: int) -> str | None:
    import ctypes
    from ctypes import wintypes

    def image(kernel32: Any, handle: Any) -> str | None:
        size = wintypes.DWORD(32768)
        buffer = ctypes.create_unicode_buffer(size.value)
        return buffer.value if kernel32.QueryFullProcessImageNameW(handle, 0, buffer, ctypes.byref(size)) else None

    return _windows_query(pid, image)
