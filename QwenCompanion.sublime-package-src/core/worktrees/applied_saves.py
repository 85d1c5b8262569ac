"""What a save made of Apply to My Files' writes into open buffers.

Apply puts its merge into a clean open view and saves it; Sublime's save
runs the on_pre_save listeners first (Default's `trim_trailing_white_space_on_save`
and `ensure_newline_at_eof_on_save`, format-on-save packages), so the file
holds their rewrite of what was sent. Merged again with the worktree's
version, that rewrite would read as the user's change (conflict markers).
A record says: these saved bytes are the applied result of that worktree
version. While the file still holds those bytes and the worktree that
version, Apply changes nothing and the worktree's state is applied.

The records hold digests only, for the Sublime session; any thread."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SavedResults:
    """One worktree's records: path -> (digest of the worktree's version, digest of the saved file)."""

    by_path: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def stands_for(self, path: str, theirs: bytes | None, ours: bytes | None) -> bool:
        """Whether the user's `ours` is what a save made of applying the worktree's `theirs`."""
        recorded = self.by_path.get(path)
        return (recorded is not None and theirs is not None and ours is not None
                and recorded == (_digest(theirs), _digest(ours)))


NONE_SAVED = SavedResults()


class AppliedSaves:
    """The records, by worktree folder."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_worktree: dict[str, dict[str, tuple[str, str]]] = {}

    def record(self, worktree: str, path: str, theirs: bytes, saved: bytes) -> None:
        with self._lock:
            self._by_worktree.setdefault(worktree, {})[path] = (_digest(theirs), _digest(saved))

    def of(self, worktree: str) -> SavedResults:
        with self._lock:
            return SavedResults(dict(self._by_worktree.get(worktree, {})))
