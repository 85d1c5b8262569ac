"""Discovery lock files: `<qwen's home>/ide/<port>.lock`.

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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cli.qwen_home import qwen_home

log = logging.getLogger(__name__)

IDE_NAME = "Sublime Text"
IDE_INFO = {"name": "sublimetext", "displayName": "Sublime Text"}


def lock_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`<qwen's home>/ide`, the folder the CLI reads (see `core.cli.qwen_home`)."""
    return Path(qwen_home(environ)) / "ide"


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
    target = lock_path(directory, info.port)
    write_private_json(target, info.to_json())
    return target


def write_private_json(target: Path, data: Any) -> None:
    """Write `data` to `target` atomically, readable by its owner only (it holds a token)."""
    write_private_text(target, json.dumps(data))


def write_private_text(target: Path, text: str) -> None:
    """Write `text` to `target` atomically, readable by its owner only."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp_name, 0o600)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


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
    import ctypes  # here: ~2 ms to load, never paid at plugin load (and only Windows needs it)

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
    files share the directory. Never raises: a file that cannot be read or
    deleted (another user's, a locked one on Windows) is logged and left,
    and must not stop this Sublime's servers from starting.
    """
    try:
        candidates = sorted(directory.glob("*.lock")) if directory.is_dir() else []
    except OSError as error:
        log.warning("cannot list the lock files in %s: %s", directory, error.strerror or error)
        return []
    return remove_stale([path for path in candidates if _ours_and_dead(path)], "lock file")


def _ours_and_dead(path: Path) -> bool:
    try:
        data = read_lock(path)
    except (OSError, ValueError):
        return False
    ide_info = data.get("ideInfo")
    if not isinstance(ide_info, dict) or ide_info.get("name") != IDE_INFO["name"]:
        return False
    ppid = data.get("ppid")
    return isinstance(ppid, int) and not pid_alive(ppid)


def remove_stale(paths: list[Path], what: str) -> list[Path]:
    """Delete files closed Sublime sessions left (`what` names them in the
    log); the ones deleted. Never raises: one that cannot be deleted is logged."""
    removed: list[Path] = []
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            log.warning("cannot remove the stale %s %s: %s", what, path, error.strerror or error)
            continue
        removed.append(path)
    if removed:
        log.info("removed %d stale %s(s) left by closed Sublime sessions", len(removed), what)
    return removed


def sweep_remote_locks(directory: Path) -> list[Path]:
    """Delete the remote endpoints' connect files (see `remote`) an earlier run
    left (a crash: each holds a token of a server that is gone). Called before
    this run's servers start, so every one there is stale. Never raises."""
    try:
        found = sorted([*directory.glob("*.connect"), *directory.glob("*.lock")]) if directory.is_dir() else []
    except OSError as error:
        log.warning("cannot list the remote lock files in %s: %s", directory, error.strerror or error)
        return []
    return remove_stale(found, "remote lock file")
