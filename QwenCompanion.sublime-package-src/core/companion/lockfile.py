"""Discovery lock files: `<QWEN_HOME or ~/.qwen>/ide/<port>.lock`.

The CLI finds the companion through these files (spec section 2). They hold
the bearer token, so the directory is 0700, the file 0600, and every write is
a temporary file renamed into place: a reader never sees half a file.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

IDE_NAME = "Sublime Text"
IDE_INFO = {"name": "sublimetext", "displayName": "Sublime Text"}


def lock_dir(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    qwen_home = env.get("QWEN_HOME")
    base = Path(qwen_home) if qwen_home else Path(env.get("HOME") or Path.home()) / ".qwen"
    return base / "ide"


def workspace_path(folders: list[str]) -> str:
    """The lock file's `workspacePath`: the window's roots joined with os.pathsep."""
    return os.pathsep.join(folders)


@dataclass(frozen=True)
class LockInfo:
    port: int
    workspace_path: str
    auth_token: str
    ppid: int

    def to_json(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "workspacePath": self.workspace_path,
            "authToken": self.auth_token,
            "ppid": self.ppid,
            "ideName": IDE_NAME,
            "ideInfo": dict(IDE_INFO),
        }


def lock_path(directory: Path, port: int) -> Path:
    return directory / f"{port}.lock"


def write_lock(directory: Path, info: LockInfo) -> Path:
    """Write the lock file atomically with owner-only permissions."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = lock_path(directory, info.port)
    fd, temp_name = tempfile.mkstemp(prefix=f".{info.port}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(info.to_json(), handle)
        os.chmod(temp_name, 0o600)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return target


def publish(directory: Path, *, port: int, folders: list[str], token: str, ppid: int) -> str | None:
    """Write a server's lock file; None, or a sentence saying why it could not be written."""
    info = LockInfo(port=port, workspace_path=workspace_path(folders), auth_token=token, ppid=ppid)
    try:
        write_lock(directory, info)
    except OSError as error:
        return f"cannot write the lock file in {directory}: {error.strerror or error}"
    return None


def remove_lock(directory: Path, port: int) -> None:
    """Delete the lock file if it is there; never raises (called while shutting down)."""
    try:
        lock_path(directory, port).unlink(missing_ok=True)
    except OSError as error:
        log.warning("cannot remove the lock file for port %d in %s: %s", port, directory, error.strerror or error)


def read_lock(path: Path) -> dict[str, Any]:
    """Parse a lock file; raises OSError or ValueError when unreadable or malformed."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("lock file is not a JSON object")
    return data


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def _windows_pid_alive(pid: int) -> bool:
    import ctypes

    process_query_limited_information = 0x1000
    still_active = 259
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined,unused-ignore]
    handle = kernel32.OpenProcess(process_query_limited_information, False, pid)
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


def sweep_stale_locks(directory: Path) -> list[Path]:
    """Delete lock files this package wrote for processes that are gone.

    Only files whose `ideInfo.name` is ours are touched: other editors' lock
    files share the directory.
    """
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for path in directory.glob("*.lock"):
        try:
            data = read_lock(path)
        except (OSError, ValueError):
            continue
        ide_info = data.get("ideInfo")
        if not isinstance(ide_info, dict) or ide_info.get("name") != IDE_INFO["name"]:
            continue
        ppid = data.get("ppid")
        if isinstance(ppid, int) and not pid_alive(ppid):
            path.unlink(missing_ok=True)
            removed.append(path)
    if removed:
        log.info("removed %d stale lock file(s) left by closed Sublime sessions", len(removed))
    return removed
