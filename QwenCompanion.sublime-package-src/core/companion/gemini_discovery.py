"""gemini-cli's discovery files: `<OS temp>/gemini/ide/gemini-ide-server-<pid>-<port>.json`.

gemini-cli (packages/core/src/ide/ide-connection-utils.ts) lists that folder,
keeps the files named `gemini-ide-server-<digits>-<digits>.json` that its own
user owns, and picks the one whose `workspacePath` holds its working folder
(`GEMINI_CLI_IDE_SERVER_PORT` breaks ties). The file holds the bearer token, so
it gets the rules of qwen's lock file (see `lockfile`), and more: the folder
lives under the shared temp folder, where another user may have made it first,
so a folder that is a symlink or not ours is refused, never written into.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import lockfile

log = logging.getLogger(__name__)

FILE_NAME = re.compile(r"^gemini-ide-server-(\d+)-(\d+)\.json$")  # the CLI's own pattern


def node_tmpdir(environ: Mapping[str, str] | None = None, platform: str = sys.platform) -> str:
    """Node's `os.tmpdir()`, the folder gemini-cli reads (not Python's
    `tempfile.gettempdir()`, which tries other variables in another order)."""
    env = os.environ if environ is None else environ
    if platform == "win32":
        found = env.get("TEMP") or env.get("TMP") or (env.get("SystemRoot") or env.get("windir", "")) + "\\temp"
        return found[:-1] if len(found) > 1 and found.endswith("\\") and not found.endswith(":\\") else found
    found = env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or "/tmp"
    return found[:-1] if len(found) > 1 and found.endswith("/") else found


def discovery_dir(environ: Mapping[str, str] | None = None, platform: str = sys.platform) -> Path:
    return Path(node_tmpdir(environ, platform)) / "gemini" / "ide"


def discovery_path(directory: Path, *, pid: int, port: int) -> Path:
    return directory / f"gemini-ide-server-{pid}-{port}.json"


def discovery_content(*, port: int, folders: list[str], token: str) -> dict[str, Any]:
    """What the CLI reads: `port`, `workspacePath`, `authToken`, and `ideInfo`
    (its `detectIde` takes the IDE's name from the file before any guess)."""
    return {
        "port": port,
        "workspacePath": lockfile.workspace_path(folders),
        "authToken": token,
        "ideInfo": dict(lockfile.IDE_INFO),
    }


def _make_private_dir(path: Path) -> None:
    """Create `path` 0700 if missing; refuse it if it is a symlink or, on
    POSIX, owned by another user or writable by others."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{path} is not a plain folder (a symlink or a file): refused")
    if sys.platform == "win32":
        return
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user: refused")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(f"{path} is writable by other users: refused")


def ensure_directory(directory: Path) -> None:
    """`<temp>/gemini` and `<temp>/gemini/ide`, each checked by `_make_private_dir`
    (the temp folder itself is the system's and shared by design)."""
    _make_private_dir(directory.parent)
    _make_private_dir(directory)


def publish(directory: Path, *, pid: int, port: int, folders: list[str], token: str) -> str | None:
    """Write this server's discovery file; None, or a sentence saying why not.

    The write is the lock file's (a temporary file renamed into place): a
    symlink already at the name is replaced, never followed."""
    try:
        ensure_directory(directory)
        lockfile.write_private_json(
            discovery_path(directory, pid=pid, port=port),
            discovery_content(port=port, folders=folders, token=token),
        )
    except OSError as error:
        return f"cannot write gemini-cli's discovery file in {directory}: {error.strerror or error}"
    return None


def remove(directory: Path, *, pid: int, port: int) -> None:
    """Delete the discovery file if it is there; never raises (called while shutting down)."""
    path = discovery_path(directory, pid=pid, port=port)
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        log.warning("cannot remove %s: %s", path, error.strerror or error)


def sweep_stale(directory: Path) -> list[Path]:
    """Delete discovery files this package wrote for processes that are gone.

    Only our user's regular files named by the CLI's pattern whose `ideInfo.name`
    is ours are touched (VS Code's share the folder). Never raises."""
    try:
        names = sorted(os.listdir(directory)) if directory.is_dir() and not directory.is_symlink() else []
    except OSError as error:
        log.warning("cannot list %s: %s", directory, error.strerror or error)
        return []
    stale = [
        directory / name
        for name in names
        if (match := FILE_NAME.match(name)) is not None and not lockfile.pid_alive(int(match.group(1)))
    ]
    return lockfile.remove_stale([path for path in stale if _ours(path)], "gemini-cli discovery file")


def _ours(path: Path) -> bool:
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or (sys.platform != "win32" and info.st_uid != os.getuid()):
            return False
        data = lockfile.read_lock(path)
    except (OSError, ValueError):
        return False
    ide_info = data.get("ideInfo")
    return isinstance(ide_info, dict) and ide_info.get("name") == lockfile.IDE_INFO["name"]
