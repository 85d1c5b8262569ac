"""The disk side of the one write path: every change the agent causes to
a user's file on disk (its writes, Undo Turn, Rewind) is made here and
nowhere else (a test scans the package for it). The view side (an open
buffer) is plugin/view_writes.py; both are called only after the
caller checked that the file or view still holds what the agent last saw
or wrote.

A path given here is already resolved (no links); between that check and
the write a folder on the way could be swapped for a link to somewhere
else. So on POSIX the folder is opened from the root one name at a time
with `O_NOFOLLOW | O_DIRECTORY` (a link anywhere on the way fails with
ELOOP or ENOTDIR), and the temp file, the rename and a removal are made
relative to that open folder (`dir_fd`): whatever is swapped later, the
write lands in the folder that was checked. Windows has no `dir_fd`: there
the folder is resolved again right before the write and refused when it no
longer resolves to itself (a junction or link swapped in), which narrows the
window to the write itself."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

_WALKS_BY_FOLDER = os.open in os.supports_dir_fd and os.unlink in os.supports_dir_fd
_FOLDER_FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))
_NEW_FILE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
                   | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))


class LeadsElsewhere(OSError):
    """A folder on the way to the file is (now) a link: nothing was written."""


def _open_folder(folder: str, make: bool) -> int:
    """A descriptor of `folder` (absolute, resolved), opened from the root one
    name at a time without following links; missing folders made when `make`."""
    root, *names = Path(folder).parts
    descriptor = os.open(root, _FOLDER_FLAGS)
    try:
        for name in names:
            try:
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=descriptor)
            except FileNotFoundError:
                if not make:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=descriptor)
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=descriptor)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise LeadsElsewhere(error.errno, f"{folder} now leads elsewhere (a link); nothing was written") from None
                raise
            os.close(descriptor)
            descriptor = inner
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _check_resolves_to_itself(folder: str) -> None:
    """Windows: refuse a folder that no longer resolves to itself."""
    if os.path.normcase(os.path.realpath(folder)) != os.path.normcase(os.path.normpath(folder)):
        raise LeadsElsewhere(errno.ELOOP, f"{folder} now leads elsewhere (a link); nothing was written")


def _new_temp(folder: str, name: str, descriptor: int | None) -> tuple[int, str]:
    """A new temp file beside `name`: (its handle, its name, relative to
    `descriptor` when given, else a path in `folder`)."""
    while True:
        temp = f".{name}.{secrets.token_hex(4)}.tmp"
        temp = temp if descriptor is not None else os.path.join(folder, temp)
        try:
            return os.open(temp, _NEW_FILE_FLAGS, 0o666, dir_fd=descriptor), temp
        except FileExistsError:
            continue


def _check_within(path: str, within: str | None) -> None:
    """Refuse a path outside the folder `within` (resolved: no link leads out of it)."""
    if within is None:
        return
    root = os.path.normcase(os.path.realpath(within))
    resolved = os.path.normcase(os.path.realpath(path))
    if resolved == root or os.path.commonpath([resolved, root]) != root:
        raise LeadsElsewhere(errno.EXDEV, f"{path} is not inside {within}; nothing was written")


def replace_bytes(path: str, data: bytes, mode: int | None, within: str | None = None) -> None:
    """`path` holds `data` (permission bits `mode`, or 0666 less the umask as
    an editor makes a file), atomically: a temp file beside it, synced, then
    a rename; missing folders are made. `within`: refused unless it lies in that folder."""
    _check_within(path, within)
    folder, name = os.path.split(path)
    if _WALKS_BY_FOLDER:
        descriptor: int | None = _open_folder(folder, make=True)
    else:
        Path(folder).mkdir(parents=True, exist_ok=True)
        _check_resolves_to_itself(folder)
        descriptor = None
    try:
        handle, temp = _new_temp(folder, name, descriptor)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                if mode is not None:
                    _set_mode(out.fileno(), temp, mode)
                os.fsync(out.fileno())
            if descriptor is None:
                _check_resolves_to_itself(folder)
            os.replace(temp, name if descriptor is not None else path, src_dir_fd=descriptor, dst_dir_fd=descriptor)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=descriptor)
            raise
    finally:
        if descriptor is not None:
            os.close(descriptor)


def _set_mode(handle: int, temp: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(handle, mode)
    else:  # Windows: by name (only the read-only bit means anything there)
        os.chmod(temp, mode)


def remove_file(path: str, within: str | None = None) -> None:
    """Remove the file at `path` (a file the agent made), relative to its
    folder opened without following links. `within`: refused unless it lies in that folder."""
    _check_within(path, within)
    folder, name = os.path.split(path)
    if not _WALKS_BY_FOLDER:
        _check_resolves_to_itself(folder)
        os.unlink(path)
        return
    descriptor = _open_folder(folder, make=False)
    try:
        os.unlink(name, dir_fd=descriptor)
    finally:
        os.close(descriptor)
