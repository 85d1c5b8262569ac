"""Is this the same file, or inside that folder? Compared by identity, not spelling.

The CLI names files by their physical path (Node's `process.cwd()` resolves
symlinks: `/private/var/…` on macOS), while Sublime keeps the spelling a file
or folder was opened with (`/var/…`, a symlinked project, another case).
Every place that matches a file path to a window or view goes through
`path_identity`: symlinks resolved, the path normalised, and the case folded
where the platform's file system ignores it (Windows, macOS), with `/` and
`\\` the same on Windows.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import Literal

PathStyle = Literal["posix", "macos", "windows"]
Resolve = Callable[[str], str]


def path_style(platform: str) -> PathStyle:
    """The style of `sublime.platform()` ("osx", "windows", "linux") or `sys.platform`."""
    if platform in ("windows", "win32"):
        return "windows"
    if platform in ("osx", "darwin"):
        return "macos"
    return "posix"


HOST_STYLE: PathStyle = path_style(sys.platform)


def _resolve(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # a loop of links, an embedded NUL: keep the spelling
        return os.path.abspath(path)


def path_identity(path: str, style: PathStyle = HOST_STYLE, resolve: Resolve = _resolve) -> str:
    """One string per file however it is spelled (resolving touches the disk:
    call it off the UI thread, or for few paths)."""
    resolved = resolve(path)
    if style == "windows":
        return ntpath.normcase(ntpath.normpath(resolved))  # lower case, `\` separators
    normal = posixpath.normpath(resolved)
    if style == "macos":
        # APFS and HFS+ ignore case and Unicode normalisation by default.
        return unicodedata.normalize("NFC", normal).casefold()
    return normal


def _is_inside(identity: str, root_identity: str, style: PathStyle) -> bool:
    separator = "\\" if style == "windows" else "/"
    return identity == root_identity or identity.startswith(root_identity.rstrip(separator) + separator)


def is_within(path: str, root: str, style: PathStyle = HOST_STYLE, resolve: Resolve = _resolve) -> bool:
    """Is `path` the folder `root` or inside it?"""
    return _is_inside(path_identity(path, style, resolve), path_identity(root, style, resolve), style)


def deepest_root(path: str, roots: Sequence[str], style: PathStyle = HOST_STYLE, resolve: Resolve = _resolve) -> int | None:
    """The index of the innermost of `roots` holding `path`, or None."""
    identity = path_identity(path, style, resolve)
    best: tuple[int, int] | None = None
    for index, root in enumerate(roots):
        root_identity = path_identity(root, style, resolve)
        if _is_inside(identity, root_identity, style) and (best is None or len(root_identity) > best[0]):
            best = (len(root_identity), index)
    return best[1] if best is not None else None


def _parts(path: str, style: PathStyle) -> list[str]:
    """`path`'s components, normalised as the platform spells them apart."""
    if style == "windows":
        drive, rest = ntpath.splitdrive(ntpath.normpath(path))
        return [drive, *(part for part in rest.split("\\") if part)]
    return [part for part in posixpath.normpath(path).split("/") if part]


def _same_part(style: PathStyle) -> Callable[[str], str]:
    if style == "windows":
        return lambda part: part.replace("/", "\\").lower()  # drive letters and names ignore case
    if style == "macos":
        return lambda part: unicodedata.normalize("NFC", part).casefold()
    return lambda part: part


def _relative_parts(path: str, root: str, style: PathStyle) -> list[str] | None:
    """The parts of `path` below `root` in `path`'s spelling, or None when outside."""
    fold = _same_part(style)
    inner, outer = _parts(path, style), _parts(root, style)
    if len(inner) < len(outer) or [fold(p) for p in inner[: len(outer)]] != [fold(p) for p in outer]:
        return None
    return inner[len(outer) :]


def display_path(path: str, folders: Sequence[str], style: PathStyle = HOST_STYLE, resolve: Resolve = _resolve) -> str:
    """`path` as a person reads it: relative to the innermost of the window's
    `folders` holding it (after that folder's name when the window has
    several), absolute when none does. Spellings are compared first; only a
    path outside them all is resolved (symlinks, `/private/var` on macOS)."""
    is_absolute = ntpath.isabs if style == "windows" else posixpath.isabs
    if not path or not folders or not is_absolute(path):  # a tab's name ("untitled") is no path
        return path
    best: tuple[int, str, list[str]] | None = None
    for spell in (lambda p: p, resolve):
        for folder in folders:
            below = _relative_parts(spell(path), spell(folder), style)
            depth = len(_parts(spell(folder), style))
            if below is not None and (best is None or depth > best[0]):
                best = (depth, folder, below)
        if best is not None:
            break
    if best is None:
        return path
    _, folder, below = best
    separator = "\\" if style == "windows" else "/"
    if len(folders) > 1:
        below = [*_parts(folder, style)[-1:], *below]
    return separator.join(below) or "."
