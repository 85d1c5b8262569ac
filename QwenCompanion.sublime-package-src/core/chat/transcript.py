"""The chat transcript as blocks of text with ids, and the edits that keep a
view equal to it. Blocks are appended to or replaced in place (a tool call's
line, a plan), so a turn is never re-rendered as a whole. Thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """Replace `erase` characters at `offset` of the view with `text`."""

    offset: int
    erase: int
    text: str


class Transcript:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: list[str] = []
        self._texts: dict[str, str] = {}
        self._size = 0

    def _offset(self, block_id: str) -> int:
        if self._ids and self._ids[-1] == block_id:  # streaming: the last block grows
            return self._size - len(self._texts[block_id])
        offset = 0
        for other in self._ids:
            if other == block_id:
                return offset
            offset += len(self._texts[other])
        return offset

    def append(self, block_id: str, text: str) -> Edit:
        """Add `text` to the end of the block (a new block goes last)."""
        with self._lock:
            if block_id not in self._texts:
                self._ids.append(block_id)
                self._texts[block_id] = ""
            offset = self._offset(block_id) + len(self._texts[block_id])
            self._texts[block_id] += text
            self._size += len(text)
            return Edit(offset, 0, text)

    def upsert(self, block_id: str, text: str) -> Edit:
        """Set the block's whole text (a new block goes last)."""
        with self._lock:
            if block_id not in self._texts:
                self._ids.append(block_id)
                self._texts[block_id] = ""
            offset = self._offset(block_id)
            old = self._texts[block_id]
            self._texts[block_id] = text
            self._size += len(text) - len(old)
            return Edit(offset, len(old), text)

    def clear(self) -> Edit:
        with self._lock:
            size, self._size = self._size, 0
            self._ids.clear()
            self._texts.clear()
            return Edit(0, size, "")

    def block(self, block_id: str) -> str:
        with self._lock:
            return self._texts.get(block_id, "")

    def text(self) -> str:
        with self._lock:
            return "".join(self._texts[i] for i in self._ids)
