"""What the agent's reads and writes must respect beyond confinement.

- A write lands only on the text the agent last saw: when the user changed
  the file (or its unsaved buffer) since the agent read it, or the buffer
  holds unsaved work the agent never read, the write is refused with a
  reason the agent can act on ("read it again"), and nothing is lost.
- Some files need the user's yes every time: writes into a `.git` folder
  (hooks and config run code on the next git command) or that make a folder
  look like one (HEAD, config, objects/, refs/), writes outside the
  window's folders, and reads of files the user excluded from what is sent
  (`excluded_file_patterns`: keys, `.env`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable

from ...files.agent_files import Refused

REMEMBERED_READS = 10_000  # files whose last read is remembered (a hostile agent may read millions)
GIT_FOLDER = ".git"


def fingerprint(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class SeenTexts:
    """The text the agent last read (or wrote) of each file, by real path, as
    a fingerprint. Any thread."""

    def __init__(self, remembered: int = REMEMBERED_READS) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, bytes] = OrderedDict()
        self._remembered = remembered

    def saw(self, path: str, text: str | None) -> None:
        """The agent got `text` (None: a part of a file too large to remember)."""
        mark = fingerprint(text) if text is not None else None
        with self._lock:
            self._seen.pop(path, None)
            if mark is not None:
                self._seen[path] = mark
                while len(self._seen) > self._remembered:
                    self._seen.popitem(last=False)

    def check(self, path: str, shown: str, current: str | None, unsaved: bool) -> None:
        """`Refused` unless a write over `current` (None: no such file) loses
        nothing the agent has not seen. `shown` names the file for the agent."""
        with self._lock:
            seen = self._seen.get(path)
        if seen is None:
            if unsaved:
                raise Refused(
                    f"{shown} has unsaved changes in the editor that you have not read; nothing was written. "
                    "Read the file again and make your change on its current text."
                )
            return
        if current is None or fingerprint(current) != seen:
            raise Refused(
                f"{shown} changed since you read it (the user edited it); nothing was written. "
                "Read the file again and make your change on its current text."
            )


def _parts(path: str) -> list[str]:
    """`path`'s components as a case-insensitive file system (macOS, Windows)
    tells them apart: `.GIT` is `.git` there, and Windows drops trailing dots
    and spaces (`.git.` is `.git`). Matched this way on every platform: one
    more question on Linux costs less than a missed `.git` elsewhere."""
    return [part.casefold().rstrip(". ") or part for part in path.replace("\\", "/").split("/")]


# What makes git take a folder for a repository's insides (its setup's
# is_git_directory): HEAD with objects/ and refs/; config makes it read code.
_LAYOUT_NAMES = ("HEAD", "config", "objects", "refs", "commondir")
_LAYOUT_BY_CASE = {name.casefold(): name for name in _LAYOUT_NAMES}  # `head` is HEAD on macOS and Windows


def makes_repository_layout(real_path: str) -> str | None:
    """The folder that writing `real_path` would turn into what looks like a
    repository's insides (HEAD plus config, objects/ or refs/), or None.
    Touches the disk: call it off the UI thread."""
    folder, name = os.path.split(real_path)
    while name:
        written = _LAYOUT_BY_CASE.get(name.casefold())
        if written is not None:
            present = {each for each in _LAYOUT_NAMES if os.path.lexists(os.path.join(folder, each))} | {written}
            if "HEAD" in present and present & {"config", "objects", "refs"}:
                return folder
        folder, name = os.path.split(folder)
    return None


def _inside_any(path: str, folders: Iterable[str]) -> bool:
    for folder in folders:
        try:
            if os.path.commonpath([path, folder]) == folder:
                return True
        except ValueError:  # another drive on Windows
            continue
    return False


def write_needs_consent(real_path: str, real_folders: Iterable[str]) -> str | None:
    """Why writing this (resolved) path needs the user's yes, or None."""
    if GIT_FOLDER in _parts(real_path):
        return "it is inside a .git folder, where hooks and config run code on the next git command"
    if makes_repository_layout(real_path) is not None:
        return "it makes its folder look like a git repository's insides (HEAD, config, objects/, refs/), whose config can run code"
    if not _inside_any(real_path, real_folders):
        return "it is outside the window's folders"
    return None
