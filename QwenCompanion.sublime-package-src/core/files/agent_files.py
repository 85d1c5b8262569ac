"""Files the agent reads and writes: where it may (confinement), only
regular files of a bounded size, and how a write keeps the file's bytes as
the user had them (encoding, line endings, BOM, no final newline) and never
leaves a half-written file (temp file + rename)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

from .encodings import DEFAULT_FALLBACK, decode_like_sublime, encode_like_sublime
from .line_endings import LF, lf_line_breaks, line_ending_of
from .text_positions import slice_lines
from .user_files import replace_bytes

# The largest file read or rewritten whole for the agent: what it is sent
# stays far below the plugin host's memory budget (a file's text costs up
# to four times its bytes once decoded).
MAX_FILE_BYTES = 16 * 1024 * 1024


class Refused(Exception):
    """A path the agent may not touch; the message says why (the agent sees it)."""


class TooLarge(Refused):
    """A file larger than what is read or rewritten whole."""


def real(path: str) -> str:
    """`path` with `..`, `.` and symlinks resolved (also for files not yet made)."""
    return os.path.realpath(os.path.abspath(path))


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # other drive on Windows
        return False


def check_path(path: str) -> None:
    """Refuse a path no file system takes (os.path raises ValueError on a NUL)."""
    if "\0" in path:
        raise Refused(f"{path!r}: a path cannot contain a NUL character")


def confine(path: str, folders: Iterable[str], allowed: Iterable[str] = ()) -> str:
    """The real path of `path` if it lies in one of the window's `folders` or is
    one of the `allowed` paths (open in the window);
    else `Refused`. Symlinks are followed first, so a link inside a folder to
    a file outside it is refused."""
    check_path(path)
    if not os.path.isabs(path):
        raise Refused(f"{path}: not an absolute path")
    resolved = real(path)
    if any(resolved == real(other) for other in allowed):
        return resolved
    if any(_inside(resolved, real(folder)) for folder in folders):
        return resolved
    raise Refused(f"{path}: outside the window's folders (open it in the editor first)")


@dataclass(frozen=True)
class FileShape:
    """How a text file is stored: what a write keeps."""

    newline: str = "\n"
    encoding: str = "UTF-8"  # Sublime's name (see core/files/encodings.py), its BOM included


@dataclass(frozen=True)
class FileText:
    """A file as the agent sees it (newlines as "\\n", no BOM) and how it is stored."""

    text: str
    shape: FileShape


def _check_regular(path: str, status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise Refused(f"{path}: not a regular file (a folder, FIFO, device or socket); it is neither read nor written")


def open_regular(path: str) -> BinaryIO:
    """The file opened for reading, if it is a regular file; else `Refused`.
    Opened without blocking, then checked on the descriptor: a FIFO never
    holds a thread, and nothing can be swapped in between."""
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    if not nonblocking:  # Windows: no FIFOs to hang on, but devices (NUL, CON)
        _check_regular(path, os.stat(path))
    flags = os.O_RDONLY | nonblocking | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    try:
        _check_regular(path, os.fstat(descriptor))
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def _too_large(path: str, size: int, limit: int) -> TooLarge:
    return TooLarge(
        f"{path} holds {size:,} bytes, more than the {limit:,} the editor reads or rewrites whole; "
        "read it in parts with line and limit"
    )


def decode(data: bytes, fallback_encoding: str = DEFAULT_FALLBACK) -> FileText:
    """File bytes as Sublime would open them; newlines as "\\n" for the agent."""
    text, encoding = decode_like_sublime(data, fallback_encoding)
    return FileText(lf_line_breaks(text), FileShape(line_ending_of(text) or LF, encoding))


def encode(text: str, shape: FileShape) -> bytes:
    """The agent's text stored with the file's own newlines and encoding (BOM
    included); a text without a final newline gets none. `Refused` when a
    character has no place in the file's encoding (nothing is written)."""
    text = lf_line_breaks(text)
    if shape.newline != "\n":
        text = text.replace("\n", shape.newline)
    try:
        return encode_like_sublime(text, shape.encoding)
    except UnicodeEncodeError as error:
        char = error.object[error.start]
        raise Refused(
            f"the file is stored as {shape.encoding}, which has no {char!r} (U+{ord(char):04X}); "
            "nothing was written"
        ) from None


def read_bytes(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, if it holds at most `limit`; else `Refused`
    (or `FileNotFoundError`/`OSError`)."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise _too_large(path, size, limit)
        # read(n) allocates n bytes first: ask for the size found (1 MB: 0.7 ms
        # less than asking for the limit), then for what a growing file added.
        data = handle.read(size + 1)
        if len(data) > size:
            data += handle.read(limit + 1 - len(data))  # a file growing meanwhile is cut here
    if len(data) > limit:
        raise _too_large(path, len(data), limit)
    return data


def read_file(path: str, fallback_encoding: str = DEFAULT_FALLBACK, limit: int = MAX_FILE_BYTES) -> FileText:
    """A regular file's text, if it holds at most `limit` bytes; else
    `Refused` (or `FileNotFoundError`/`OSError`)."""
    return decode(read_bytes(path, limit), fallback_encoding)


def read_text(path: str, fallback_encoding: str = DEFAULT_FALLBACK) -> str:
    """A file's text, or `Refused`/`FileNotFoundError`/`OSError`."""
    return read_file(path, fallback_encoding).text


def read_lines(path: str, line: int | None, limit: int | None, fallback_encoding: str = DEFAULT_FALLBACK,
               most: int = MAX_FILE_BYTES) -> str:
    """`limit` lines from 1-based `line` of a file of any size, read line by
    line: only what is sent is kept. `Refused` when that is more than `most`
    bytes. Lines are split at b"\\n" (UTF-16 files are read whole)."""
    first = max(line or 1, 1)
    wanted: list[bytes] = []
    kept = 0
    with open_regular(path) as handle:
        for number, raw in enumerate(handle, 1):
            if number < first:
                continue
            if limit is not None and number >= first + max(limit, 0):
                break
            kept += len(raw)
            if kept > most:
                raise Refused(f"lines {first}… of {path} hold more than {most:,} bytes; ask for fewer lines")
            wanted.append(raw)
    return decode(b"".join(wanted), fallback_encoding).text


def read_part(path: str, line: int | None, limit: int | None,
              fallback_encoding: str = DEFAULT_FALLBACK) -> tuple[str, str | None]:
    """(`limit` lines from `line`, the file's whole text or None when the file
    is too large to hold): a file of any size can be read in parts."""
    # Imported here: `request_handler` loads ACP and pydantic, which must wait for the
    # start thread's dependency check, while the editor imports this at load.
    try:
        text = read_file(path, fallback_encoding).text
    except TooLarge:
        if line is None and limit is None:
            raise
        return read_lines(path, line, limit, fallback_encoding), None
    return slice_lines(text, line, limit), text


def file_shape(path: str, fallback_encoding: str = DEFAULT_FALLBACK) -> tuple[FileShape, int | None]:
    """The existing file's shape and permission bits, or a new file's (None)."""
    try:
        with open_regular(path) as handle:
            status = os.fstat(handle.fileno())
            if status.st_size > MAX_FILE_BYTES:
                raise _too_large(path, status.st_size, MAX_FILE_BYTES)
            shape = decode(handle.read(), fallback_encoding).shape
        return shape, status.st_mode & 0o7777
    except FileNotFoundError:
        return FileShape(), None


def write_text(path: str, text: str, fallback_encoding: str = DEFAULT_FALLBACK) -> None:
    """Write `text` to `path` keeping the existing file's shape (newlines,
    encoding, BOM; a new file gets UTF-8 and "\\n"), atomically: a temp file
    beside it, then a rename. Missing folders are made; the file's
    permissions are kept (a new file's follow the umask). Written through the
    write path's disk side (core/files/user_files.py)."""
    shape, mode = file_shape(path, fallback_encoding)
    replace_bytes(path, encode(text, shape), mode)
