"""The chat transcript as blocks of text with ids, and the edits that keep a
view equal to it. Blocks are appended to or replaced in place (a tool call's
line, a plan), so a turn is never re-rendered as a whole; finding where a
block starts costs O(log blocks), so 100,000 tool calls stay linear in
total. Thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """Replace `erase` characters at `offset` of the view with `text`."""

    offset: int
    erase: int
    text: str


def queue_edit(pending: list[Edit], edit: Edit) -> None:
    """Add `edit` to edits not yet applied. One that rewrites exactly the text
    the last of them wrote (a block upserted again before the view caught
    up: a plan's next state, a tool call's next status) replaces that text
    instead, so the view applies only the block's newest state."""
    last = pending[-1] if pending else None
    if last is not None and edit.offset == last.offset and edit.erase == len(last.text):
        pending[-1] = Edit(last.offset, last.erase, edit.text)
    else:
        pending.append(edit)


class PrefixSums:
    """Sizes in order, with the sum of the first n in O(log n) after a change
    to any one (a Fenwick tree)."""

    def __init__(self) -> None:
        self._tree = [0]  # 1-based: entry i holds the sizes (i - lowbit(i), i]

    def append(self, size: int) -> None:
        index = len(self._tree)
        self._tree.append(size + self.sum_of_first(index - 1) - self.sum_of_first(index - (index & -index)))

    def add(self, position: int, delta: int) -> None:
        index = position + 1
        while index < len(self._tree):
            self._tree[index] += delta
            index += index & -index

    def sum_of_first(self, count: int) -> int:
        total = 0
        while count > 0:
            total += self._tree[count]
            count -= count & -count
        return total


class Transcript:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: list[str] = []
        # A block's text, or its pieces while it is appended to (appending never
        # copies the block); a string, unlike a list, is not walked by the
        # garbage collector, so 100,000 blocks add no pause.
        self._texts: dict[str, str | list[str]] = {}
        self._lengths: dict[str, int] = {}
        self._positions: dict[str, int] = {}  # block id -> its place in `_ids`
        self._sizes = PrefixSums()
        self._size = 0

    def _place(self, block_id: str) -> int:
        """The block's place, a new empty block going last."""
        position = self._positions.get(block_id)
        if position is None:
            position = self._positions[block_id] = len(self._ids)
            self._ids.append(block_id)
            self._texts[block_id] = ""
            self._lengths[block_id] = 0
            self._sizes.append(0)
        return position

    def _grow(self, block_id: str, position: int, delta: int) -> int:
        """Account for `delta` more characters in the block; its offset."""
        self._lengths[block_id] += delta
        self._sizes.add(position, delta)
        self._size += delta
        return self._sizes.sum_of_first(position)

    def append(self, block_id: str, text: str) -> Edit:
        """Add `text` to the end of the block (a new block goes last)."""
        with self._lock:
            position = self._place(block_id)
            old = self._lengths[block_id]
            pieces = self._texts[block_id]
            if isinstance(pieces, list):
                pieces.append(text)
            else:
                self._texts[block_id] = [pieces, text] if pieces else text
            return Edit(self._grow(block_id, position, len(text)) + old, 0, text)

    def upsert(self, block_id: str, text: str) -> Edit:
        """Set the block's whole text (a new block goes last)."""
        with self._lock:
            position = self._place(block_id)
            old = self._lengths[block_id]
            self._texts[block_id] = text
            return Edit(self._grow(block_id, position, len(text) - old), old, text)

    def clear(self) -> Edit:
        with self._lock:
            size, self._size = self._size, 0
            self._ids.clear()
            self._texts.clear()
            self._lengths.clear()
            self._positions.clear()
            self._sizes = PrefixSums()
            return Edit(0, size, "")

    def truncate(self, block_id: str) -> Edit:
        """Drop the block and every block after it (a rewound conversation)."""
        with self._lock:
            position = self._positions.get(block_id)
            if position is None:
                return Edit(self._size, 0, "")
            offset = self._sizes.sum_of_first(position)
            for dropped in self._ids[position:]:
                del self._texts[dropped], self._lengths[dropped], self._positions[dropped]
            del self._ids[position:]
            self._sizes = PrefixSums()
            for kept in self._ids:
                self._sizes.append(self._lengths[kept])
            erased, self._size = self._size - offset, offset
            return Edit(offset, erased, "")

    def block_at(self, offset: int) -> str | None:
        """The id of the block holding character `offset` (the last block at the end)."""
        with self._lock:
            end = 0
            for block_id in self._ids:
                end += self._lengths[block_id]
                if offset < end:
                    return block_id
            return self._ids[-1] if self._ids else None

    def _joined(self, block_id: str) -> str:
        pieces = self._texts.get(block_id, "")
        if isinstance(pieces, list):
            pieces = self._texts[block_id] = "".join(pieces)
        return pieces

    def block(self, block_id: str) -> str:
        with self._lock:
            return self._joined(block_id)

    def text(self) -> str:
        with self._lock:
            return "".join(self._joined(i) for i in self._ids)

    def blocks(self) -> list[tuple[str, str]]:
        """Every block as (id, text), in order (an export's snapshot)."""
        with self._lock:
            return [(i, self._joined(i)) for i in self._ids]

    def blocks_from(self, block_id: str) -> list[tuple[str, str]]:
        """The block `block_id` and every block after it as (id, text) (one
        turn's, not the whole transcript's); none when there is no such block."""
        with self._lock:
            position = self._positions.get(block_id)
            return [] if position is None else [(i, self._joined(i)) for i in self._ids[position:]]
