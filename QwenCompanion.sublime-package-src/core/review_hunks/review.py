"""A review of a set of changed files: each file's pending hunks, and what
was kept or undone of it. Pure: the caller reads the texts (on a thread of
its own) and writes what an undo gives through the write path.

A file's hunks are always the diff of two texts: `base`, what it is
compared with (its text before, with every kept hunk taken in), and
`expected`, the text the changes were made to (with every undone hunk
reversed). Keeping or undoing a hunk changes one of them and the hunks are
made again, so the others' line numbers stay true. A binary file, or one of
more than `LARGE_FILE_BYTES`, shows a summary line and is kept or undone
whole. A review holds at most `MAX_HUNKS` hunks; the files past that are
listed with their summary only.

Each hunk first shown keeps its number in its file (`entries`), kept,
undone or pending, so a caller naming hunk 2 means the same hunk after
hunk 1 was kept."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate

from .hunks import Hunk, Stale, diff_hunks, keep_hunk, undo_hunk

PENDING, KEPT, UNDONE = "pending", "kept", "undone"
TEXT, BINARY, LARGE, UNLISTED = "text", "binary", "large", "unlisted"
LARGE_FILE_BYTES = 8 * 1024 * 1024
MAX_HUNKS = 10_000


@dataclass(frozen=True)
class ChangedFile:
    """One file of a set of changes, as its source read it."""

    path: str
    before: str | None  # its text before the changes; None: there was no such file
    now: str | None  # its text now; None: it was removed
    binary: bool = False  # either side is not text: kept or undone whole
    size: int = 0  # bytes of its larger side


@dataclass
class HunkEntry:
    """One hunk as numbered when first shown: its state and where it stands in the file now."""

    state: str
    start: int  # 0-based line of its first changed line in the text now
    added: int
    removed: int


def _entry(hunk: Hunk) -> HunkEntry:
    return HunkEntry(PENDING, hunk.first_changed_line, hunk.added, hunk.removed)


@dataclass
class ReviewFile:
    path: str
    kind: str
    base: str
    expected: str
    existed: bool  # the file was there before the changes (its undo removes it otherwise)
    source: tuple[str, str] = ("", "")  # (before, now) as the source gave them
    hunks: list[Hunk] = field(default_factory=list)  # pending
    entries: list[HunkEntry] = field(default_factory=list)  # every hunk shown, by its stable number
    kept: int = 0
    undone: int = 0
    state: str = PENDING  # of the whole file, for the kinds kept or undone whole
    added: int = 0
    removed: int = 0

    @property
    def whole_only(self) -> bool:
        return self.kind != TEXT

    @property
    def pending(self) -> bool:
        return bool(self.hunks) if not self.whole_only else self.state == PENDING

    def rediff(self, limit: int | None) -> None:
        if self.whole_only:
            return
        self.hunks = diff_hunks(self.base, self.expected, limit=limit)
        self._number()

    def _number(self) -> None:
        """The pending entries follow the hunks made again (in order, one for
        one); a diff that grouped them otherwise numbers its hunks anew after the settled ones."""
        pending = [entry for entry in self.entries if entry.state == PENDING]
        if len(pending) != len(self.hunks):
            self.entries = [entry for entry in self.entries if entry.state != PENDING]
            pending = [_entry(hunk) for hunk in self.hunks]
            self.entries += pending
        for entry, hunk in zip(pending, self.hunks, strict=True):
            entry.start, entry.added, entry.removed = hunk.first_changed_line, hunk.added, hunk.removed

    def pending_index(self, number: int) -> int | None:
        """The position among the pending hunks of hunk `number`; None when it is settled."""
        if not 0 <= number < len(self.entries) or self.entries[number].state != PENDING:
            return None
        return sum(1 for entry in self.entries[:number] if entry.state == PENDING)

    def _settle(self, positions: list[int], state: str) -> None:
        """The pending hunks at those positions are `state` now; an undo moves the lines below it."""
        pending = [entry for entry in self.entries if entry.state == PENDING]
        settled = [pending[index] for index in positions]
        for entry in settled:
            entry.state = state
        if state != UNDONE:
            return
        moves = sorted((entry.start, entry.removed - entry.added) for entry in settled)
        starts = [start for start, _ in moves]
        shifts = [0, *accumulate(shift for _, shift in moves)]
        for entry in self.entries:
            if entry.state != PENDING:
                entry.start += shifts[bisect_left(starts, entry.start)]

    def _settled_hunk(self, index: int, old_moved: int, new_moved: int) -> None:
        """Hunk `index` leaves the pending ones; those below it move by as many
        lines as it changed. Hunks never share a line (changes closer than
        twice the context are one hunk), so nothing is diffed again: a Keep
        or an Undo costs no diff of a large file on the main thread."""
        self.hunks = self.hunks[:index] + [
            replace(hunk, old_start=hunk.old_start + old_moved, new_start=hunk.new_start + new_moved)
            for hunk in self.hunks[index + 1 :]]
        self._number()

    def keep(self, index: int) -> None:
        hunk = self.hunks[index]
        self.base = keep_hunk(self.base, hunk)
        self.kept += 1
        self._settle([index], KEPT)
        self._settled_hunk(index, len(hunk.new_lines) - len(hunk.old_lines), 0)

    def undo_text(self, index: int, actual: str) -> str:
        """What the file holds once hunk `index` alone is reversed in `actual`
        (its text now); `Stale` when the user changed its lines since."""
        return undo_hunk(actual, self.expected, self.hunks[index])

    def undone_hunk(self, index: int) -> None:
        """The write of `undo_text` landed."""
        hunk = self.hunks[index]
        self.expected = undo_hunk(self.expected, self.expected, hunk)
        self.undone += 1
        self._settle([index], UNDONE)
        self._settled_hunk(index, 0, len(hunk.old_lines) - len(hunk.new_lines))

    def undo_all_text(self, actual: str) -> str:
        """`actual` with every pending hunk reversed (the lowest first, so the
        others' lines stay where they were); `Stale` when any changed since."""
        text, expected = actual, self.expected
        for hunk in reversed(self.hunks):
            text = undo_hunk(text, expected, hunk)
            expected = undo_hunk(expected, expected, hunk)
        return text

    def keep_all(self) -> None:
        if self.whole_only:
            self.state = KEPT
            return
        self.kept += len(self.hunks)
        self._settle(list(range(len(self.hunks))), KEPT)
        self.base = self.expected
        self.hunks = []

    def undone_all(self) -> None:
        if self.whole_only:
            self.state = UNDONE
            return
        self.undone += len(self.hunks)
        self._settle(list(range(len(self.hunks))), UNDONE)
        self.expected = self.base
        self.hunks = []


def _counts(hunks: list[Hunk]) -> tuple[int, int]:
    return sum(h.added for h in hunks), sum(h.removed for h in hunks)


class HunkReview:
    """The files of one set of changes, in the order given."""

    def __init__(self, changes: Sequence[ChangedFile] = (), max_hunks: int = MAX_HUNKS) -> None:
        self.files: list[ReviewFile] = []
        self.unlisted_hunks = False
        if changes:
            made = HunkReview().refreshed(list(changes), max_hunks)
            self.files, self.unlisted_hunks = made.files, made.unlisted_hunks

    def file(self, path: str) -> ReviewFile | None:
        return next((each for each in self.files if each.path == path), None)

    @property
    def pending_hunks(self) -> int:
        return sum(len(each.hunks) for each in self.files)

    def refreshed(self, changes: Sequence[ChangedFile], max_hunks: int = MAX_HUNKS) -> HunkReview:
        """The review of `changes` (the source changed its files again, e.g. a
        running turn wrote more): a file the source gives as before is the
        same file (what was kept or undone of it stays, nothing is diffed
        again); a file whose text now changed keeps what was kept of it."""
        fresh = HunkReview([], max_hunks)
        room = max_hunks
        for change in changes:
            earlier = self.file(change.path)
            review_file = _review_file(change)
            if earlier is not None and earlier.source == review_file.source and earlier.kind == review_file.kind:
                review_file = earlier
            elif review_file.kind == TEXT:
                if earlier is not None and earlier.kind == TEXT and earlier.source[0] == review_file.source[0]:
                    review_file.base, review_file.kept, review_file.undone = earlier.base, earlier.kept, earlier.undone
                    review_file.entries = [entry for entry in earlier.entries if entry.state != PENDING]
                review_file.rediff(room + 1 if room > 0 else 1)
                review_file.added, review_file.removed = _counts(review_file.hunks)
            if len(review_file.hunks) > room:
                fresh.unlisted_hunks = True
                review_file.kind, review_file.hunks, review_file.entries = UNLISTED, [], []
            room -= len(review_file.hunks)
            fresh.files.append(review_file)
        return fresh


def _review_file(change: ChangedFile) -> ReviewFile:
    before, now = change.before or "", change.now or ""
    kind = BINARY if change.binary else LARGE if change.size > LARGE_FILE_BYTES else TEXT
    if kind != TEXT:
        before = now = ""  # not held: kept or undone whole, by its source
    return ReviewFile(change.path, kind, before, now, existed=change.before is not None, source=(before, now))


__all__ = ["BINARY", "KEPT", "LARGE", "PENDING", "TEXT", "UNDONE", "UNLISTED", "ChangedFile", "HunkEntry", "HunkReview",
           "ReviewFile", "Stale"]
