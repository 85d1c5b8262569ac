"""Files the agent reads and writes: where it may (confinement), and how a
write keeps the file's bytes as the user had them (line endings, BOM, no
final newline) and never leaves a half-written file (temp file + rename)."""

from __future__ import annotations

import codecs
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class Refused(Exception):
    """A path the agent may not touch; the message says why (the agent sees it)."""


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
    bom: bool = False


def shape_of(data: bytes) -> FileShape:
    bom = data.startswith(codecs.BOM_UTF8)
    crlf, lf = data.count(b"\r\n"), data.count(b"\n")
    if crlf and crlf * 2 >= lf:  # mostly CRLF
        return FileShape("\r\n", bom)
    if not lf and b"\r" in data:
        return FileShape("\r", bom)
    return FileShape("\n", bom)


def decode(data: bytes) -> str:
    """File bytes as the agent sees them: UTF-8 (BOM dropped), newlines as "\\n"."""
    text = data.decode("utf-8-sig", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def encode(text: str, shape: FileShape) -> bytes:
    """The agent's text stored with the file's own newlines and BOM; a text
    without a final newline gets none."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if shape.newline != "\n":
        text = text.replace("\n", shape.newline)
    data = text.encode("utf-8")
    return codecs.BOM_UTF8 + data if shape.bom else data


def read_text(path: str) -> str:
    """A file's text, or `FileNotFoundError`/`IsADirectoryError`/`OSError`."""
    return decode(Path(path).read_bytes())


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` keeping the existing file's shape (a new file
    gets "\\n"), atomically: a temp file beside it, then a rename. Missing
    folders are made; the file's permissions are kept."""
    target = Path(path)
    try:
        shape = shape_of(target.read_bytes())
        mode: int | None = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        shape, mode = FileShape(), None
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(encode(text, shape))
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
