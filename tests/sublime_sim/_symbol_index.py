"""Sublime's symbol index: the symbols of each file under the window's
folders and of each open view, kept until the file or the view changes.

Sublime indexes the project's files in the background and re-indexes a file
when it changes on disk; `Window.symbol_locations` (and the `lookup_*`
functions) answer from that index, and open files from their buffers. Here
a query answers what a parse of every file would, but parses only what
changed since it was last indexed:

- a file on disk is kept with its `stat` (inode, size, modification and
  change times). Timestamps are as coarse as the kernel's clock tick, so a
  file modified within RACY_NS of when it was read might change again with
  the same `stat`: such a file is read again on each query (as git treats a
  "racily clean" entry) and parsed again only if its bytes changed;
- an open view is kept with its buffer's text (a rope, immutable: any edit,
  reload or revert gives the buffer a new one) and its syntax's name;
- a deleted file, or a closed view, is dropped.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass

from . import _symbols
from ._constants import SymbolType

RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class Located:
    symbol: _symbols.FoundSymbol
    row: int
    col: int


@dataclass(frozen=True)
class IndexedText:
    """One text's symbols (definitions and references, in order), with their
    1-based rows and columns, by name."""

    syntax: str
    by_name: dict[str, tuple[Located, ...]]

    def named(self, name: str, type: SymbolType) -> list[Located]:
        found = self.by_name.get(name, ())
        return [item for item in found if type == SymbolType.ANY or item.symbol.type == type]


def index_text(text: str, syntax: str) -> IndexedText:
    by_name: dict[str, list[Located]] = {}
    row, line_start, counted = 1, 0, 0
    for symbol in _symbols.indexed(text, syntax, SymbolType.ANY):
        row += text.count("\n", counted, symbol.begin)
        line_start = text.rfind("\n", 0, symbol.begin) + 1
        counted = symbol.begin
        by_name.setdefault(symbol.name, []).append(Located(symbol, row, symbol.begin - line_start + 1))
    return IndexedText(syntax, {name: tuple(found) for name, found in by_name.items()})


@dataclass(frozen=True)
class _FileEntry:
    signature: tuple[int, int, int, int]
    read_at_ns: int
    digest: bytes
    indexed: IndexedText

    def trusted(self, signature: tuple[int, int, int, int], syntax: str) -> bool:
        """Unchanged for sure: the same `stat`, read long enough after its last change."""
        racy = signature[2] + RACY_NS >= self.read_at_ns
        return signature == self.signature and syntax == self.indexed.syntax and not racy


@dataclass(frozen=True)
class _ViewEntry:
    text: object  # the buffer's rope when indexed (held, so its identity is not reused)
    indexed: IndexedText


class SymbolIndex:
    """The app's index (one per simulated Sublime); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, _FileEntry] = {}
        self._views: dict[int, _ViewEntry] = {}
        self.parses = 0  # texts parsed so far: what the index saved is visible to its tests

    def of_file(self, path: str, syntax: str) -> IndexedText | None:
        """The symbols of the file at `path` as it is on disk now; None when it cannot be read."""
        try:
            info = os.stat(path)
            signature = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            with self._lock:
                entry = self._files.get(path)
            if entry is not None and entry.trusted(signature, syntax):
                return entry.indexed
            read_at = time.time_ns()
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            with self._lock:
                self._files.pop(path, None)
            return None
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if entry is not None and entry.digest == digest and entry.indexed.syntax == syntax:
            indexed = entry.indexed
        else:
            indexed = self._parse(data.decode("utf-8", "replace"), syntax)
        with self._lock:
            self._files[path] = _FileEntry(signature, read_at, digest, indexed)
        return indexed

    def of_view(self, view_id: int, text: object, syntax: str) -> IndexedText:
        """The symbols of an open view whose buffer holds `text` (its rope) in `syntax`."""
        with self._lock:
            entry = self._views.get(view_id)
        if entry is not None and entry.text is text and entry.indexed.syntax == syntax:
            return entry.indexed
        indexed = self._parse(str(text), syntax)
        with self._lock:
            self._views[view_id] = _ViewEntry(text, indexed)
        return indexed

    def forget_views_but(self, open_ids: set[int]) -> None:
        with self._lock:
            for view_id in [view_id for view_id in self._views if view_id not in open_ids]:
                del self._views[view_id]

    def _parse(self, text: str, syntax: str) -> IndexedText:
        with self._lock:
            self.parses += 1
        return index_text(text, syntax)
