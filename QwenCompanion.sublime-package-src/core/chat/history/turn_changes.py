"""What each turn of a chat changed in the user's files, and the way back.

Before the first write of a turn to a file (through the editor), its bytes
are kept as they were: its checkpoint (CRLF, BOM and encoding kept, since
they are the bytes; the open buffer's text too when the write went into a
buffer). A turn then lists its files with lines added/removed and a state:
`changed`, `kept` (the user accepted it), `reverted` (back to its
checkpoint) or `outside` (changed by a command, not through the editor: its
before-text is unknown and it is never overwritten). Undo puts a file's
checkpoint bytes back, but only over the text the agent left: a file changed
since is refused, never silently overwritten.

Memory is bounded: checkpoints of all turns share `CHECKPOINT_BUDGET` bytes;
the oldest turns go first, and a file past the budget is listed without a
checkpoint (it cannot be undone). Any thread.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from ... import threads
from ...files.agent_files import MAX_FILE_BYTES, Refused, decode, read_bytes, real
from ...files.encodings import DEFAULT_FALLBACK
from ...files.user_files import remove_file, replace_bytes
from ..requests.file_rules import fingerprint

CHANGED, KEPT, REVERTED, OUTSIDE = "changed", "kept", "reverted", "outside"
CHECKPOINT_BUDGET = 256 * 1024 * 1024  # bytes of checkpoints (and the agent's texts) kept per chat
FILES_PER_TURN = 1000  # a hostile agent may write millions of files; the list stays readable


@dataclass(frozen=True)
class Before:
    """A file as it was before the turn's first write to it."""

    data: bytes | None  # its bytes on disk; None: there was no such file
    mode: int | None = None  # its permission bits
    buffer_text: str | None = None  # the open buffer's text the write replaced (unsaved edits included)
    fallback_encoding: str = DEFAULT_FALLBACK

    def text(self) -> str:
        """The text the user saw (newlines as "\\n")."""
        if self.buffer_text is not None:
            return self.buffer_text
        return decode(self.data, self.fallback_encoding).text if self.data is not None else ""

    def size(self) -> int:
        return len(self.data or b"") + 2 * len(self.buffer_text or "")

    def saved(self) -> bool:
        """Whether the file on disk held the text the user saw (no unsaved edits)."""
        if self.buffer_text is None:
            return True
        return self.data is not None and decode(self.data, self.fallback_encoding).text == self.buffer_text


@dataclass
class FileChange:
    path: str  # real path
    before: Before | None  # None: not kept (changed outside the editor, or past the budget)
    after: str | None = None  # the text the agent's last write left ("\n" newlines)
    state: str = CHANGED
    written: bool = False  # a write landed (a checkpoint alone, of a write refused, lists nothing)
    _counts: tuple[int, int] | None = field(default=None, repr=False)

    def counts(self) -> tuple[int, int]:
        """(lines added, lines removed) by the agent; (0, 0) when unknown."""
        if self._counts is None:
            before, after = self.before, self.after
            self._counts = line_counts(before.text(), after) if before and after is not None else (0, 0)
        return self._counts

    @property
    def listed(self) -> bool:
        return self.written or self.state == OUTSIDE

    def size(self) -> int:
        return (self.before.size() if self.before else 0) + 2 * len(self.after or "")


@dataclass(frozen=True)
class FileSummary:
    path: str
    added: int
    removed: int
    state: str


def line_counts(before: str, after: str) -> tuple[int, int]:
    """(added, removed) lines from `before` to `after`: the common head and tail
    are cut first, so a small edit of a large file costs little."""
    old, new = before.splitlines(), after.splitlines()
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old, new = old[head : len(old) - tail], new[head : len(new) - tail]
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def first_changed_line(before: str, after: str) -> int:
    """The 0-based line of `after` where it first differs from `before`."""
    line = 0
    for old, new in zip(before.splitlines(keepends=True), after.splitlines(keepends=True), strict=False):
        if old != new:
            break
        line += 1
    return line


@threads.may_block
def checkpoint_of(path: str, fallback_encoding: str = DEFAULT_FALLBACK, buffer_text: str | None = None) -> Before:
    """The file's bytes now: `Refused` past the size
    the editor rewrites, so the write it precedes is refused too."""
    try:
        data = read_bytes(path, MAX_FILE_BYTES)
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return Before(None, None, buffer_text, fallback_encoding)
    return Before(data, mode, buffer_text, fallback_encoding)


class TurnChanges:
    """One chat's turns and the files each changed."""

    def __init__(self, budget: int = CHECKPOINT_BUDGET, files_per_turn: int = FILES_PER_TURN) -> None:
        self._lock = threading.Lock()
        self._turns: OrderedDict[int, dict[str, FileChange]] = OrderedDict()
        self._current = 1
        self._used = 0  # bytes held by every turn's checkpoints and agent texts (FileChange.size)
        self._read: dict[str, tuple[bytes, str]] = {}  # the running turn's reads: path -> (fingerprint, fallback)
        self._budget = budget
        self._files_per_turn = files_per_turn

    @property
    def current(self) -> int:
        with self._lock:
            return self._current

    def needs_checkpoint(self, path: str) -> bool:
        """Whether a write of `path` is the running turn's first."""
        with self._lock:
            return path not in self._turns.get(self._current, {})

    def checkpoint(self, path: str, before: Before) -> None:
        """Keep `before` for `path` unless the running turn already has one
        (the first write's checkpoint is the one that counts)."""
        with self._lock:
            files = self._turns.setdefault(self._current, {})
            if path in files:
                return
            if len(files) >= self._files_per_turn:
                raise Refused(f"this turn already changed {self._files_per_turn:,} files; nothing more is written")
            self._trim(room=before.size())
            kept = before if self._used + before.size() <= self._budget else None
            files[path] = FileChange(path, kept)
            self._used += kept.size() if kept is not None else 0

    def wrote(self, path: str, text: str) -> None:
        """The agent's write of `path` landed; `text` is what it now holds."""
        with self._lock:
            change = self._turns.get(self._current, {}).get(path)
            if change is None:
                return  # no checkpoint: the write did not pass through checkpoint()
            self._used -= change.size()
            change.after = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
            change.written = True
            self._used += change.size()
            change._counts = None
            change.state = CHANGED
            self._trim()
            if self._used > self._budget:
                self._forget(change)  # past the budget even so: listed, not undoable

    def saw(self, path: str, text: str, fallback_encoding: str = DEFAULT_FALLBACK) -> None:
        """The agent read `text` of `path`, as the file holds it on disk (its
        first read of the turn counts: a change by a command after it shows)."""
        with self._lock:
            if path not in self._read and len(self._read) < self._files_per_turn:
                self._read[path] = (fingerprint(text), fallback_encoding)

    def changed_outside(self, path: str, turn: int | None = None) -> None:
        """A command changed `path` (not through the editor) in `turn` (default: the running one)."""
        with self._lock:
            files = self._turns.setdefault(self._current if turn is None else turn, {})
            if path not in files and len(files) < self._files_per_turn:
                files[path] = FileChange(path, None, state=OUTSIDE)

    def end_turn(self) -> tuple[int, dict[str, tuple[bytes, str]]]:
        """The running turn ended; the next begins. (Its number, the files the
        agent read and did not write through the editor: what a command may
        have changed, see `changed_on_disk`.)"""
        with self._lock:
            ended, read, self._read = self._current, self._read, {}
            self._current += 1
            written = self._turns.get(ended, {})
            return ended, {path: mark for path, mark in read.items() if path not in written}

    def has_changes(self, turn: int) -> bool:
        with self._lock:
            return any(c.listed for c in self._turns.get(turn, {}).values())

    def last_changed_turn(self) -> int | None:
        with self._lock:
            finished = [turn for turn, files in self._turns.items()
                        if turn != self._current and any(c.listed for c in files.values())]
            return finished[-1] if finished else None

    def files(self, turn: int) -> list[FileSummary]:
        """The turn's files, in the order they were first changed."""
        with self._lock:
            changes = [c for c in self._turns.get(turn, {}).values() if c.listed]
        return [FileSummary(c.path, *c.counts(), c.state) for c in changes]

    def change(self, turn: int, path: str) -> FileChange | None:
        with self._lock:
            return self._turns.get(turn, {}).get(path)

    def pending(self, path: str) -> FileChange | None:
        """The change of `path` by the newest finished turn that changed it, if
        neither kept nor undone and still undoable: what its view diffs against."""
        with self._lock:
            for turn in reversed(self._turns):
                change = self._turns[turn].get(path)
                if turn != self._current and change is not None and change.listed:
                    return change if change.state == CHANGED and change.before is not None else None
            return None

    def paths(self, turn: int) -> list[str]:
        with self._lock:
            return [path for path, c in self._turns.get(turn, {}).items() if c.listed]

    def mark(self, turn: int, path: str, state: str) -> None:
        with self._lock:
            change = self._turns.get(turn, {}).get(path)
            if change is not None and change.state != OUTSIDE:
                change.state = state

    def _forget(self, change: FileChange) -> None:
        """The change's texts go (its counts are kept): it is no longer undoable."""
        change.counts()
        self._used -= change.size()
        change.before, change.after = None, None

    def _trim(self, room: int = 0) -> None:
        """Drop the oldest finished turns' checkpoints while over the budget
        (with `room` bytes more to keep)."""
        for turn in list(self._turns):
            if self._used + room <= self._budget or turn == self._current:
                return
            for change in self._turns[turn].values():
                self._forget(change)


def changed_on_disk(path: str, mark: tuple[bytes, str]) -> bool:
    """Whether the file no longer holds the text the agent read (`mark`: its
    fingerprint and the fallback encoding it was read with); a file gone is changed."""
    seen, fallback_encoding = mark
    try:
        return fingerprint(decode(read_bytes(path), fallback_encoding).text) != seen
    except FileNotFoundError:
        return True
    except (Refused, OSError):
        return False  # unreadable now (too large, not a regular file): nothing is claimed


@threads.may_block
def restore_on_disk(change: FileChange) -> None:
    """Put the checkpoint's bytes back in the file.
    `Refused`, writing nothing, unless the file still holds what the agent
    wrote: a change by the user or a command since is never overwritten."""
    before = change.before
    if before is None or change.state == OUTSIDE:
        raise Refused(f"{change.path}: its text before the turn was not kept; nothing was changed")
    if real(change.path) != change.path:
        raise Refused(f"{change.path} now leads elsewhere (a link); nothing was changed")
    if not _holds(change.path, change.after, before.fallback_encoding):
        raise Refused(f"{change.path} changed since the agent wrote it; nothing was overwritten")
    if before.data is None:
        remove_file(change.path)  # the agent made it
    else:
        replace_bytes(change.path, before.data, before.mode)


@threads.may_block
def still_as_written(change: FileChange) -> bool:
    """Whether the file on disk still holds what the agent last wrote."""
    before = change.before
    return before is not None and _holds(change.path, change.after, before.fallback_encoding)


def _holds(path: str, text: str | None, fallback_encoding: str) -> bool:
    """Whether the file holds `text` (None: whether it is absent)."""
    try:
        current = decode(read_bytes(path), fallback_encoding).text
    except FileNotFoundError:
        return text is None
    return current == text  # both texts are at hand: no need to hash them (4 ms per 1 MB file saved)
