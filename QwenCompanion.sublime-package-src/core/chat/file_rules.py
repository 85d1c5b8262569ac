"""What the agent's reads and writes must respect beyond confinement.

- A write lands only on the text the agent last saw: when the user changed
  the file (or its unsaved buffer) since the agent read it, or the buffer
  holds unsaved work the agent never read, the write is refused with a
  reason the agent can act on ("read it again"), and nothing is lost.
- Some files need the user's yes every time: writes into a `.git` folder
  (hooks and config run code on the next git command), writes outside the
  window's folders, and reads of files the user excluded from what is sent
  (`excluded_file_patterns`: keys, `.env`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable

from .agent_files import Refused

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
    return [part.lower() for part in path.replace("\\", "/").split("/")]


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
    if not _inside_any(real_path, real_folders):
        return "it is outside the window's folders"
    return None
