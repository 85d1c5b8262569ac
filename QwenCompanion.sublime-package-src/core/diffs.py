"""Reviews of the edits the CLI proposes (`openDiff` / `closeDiff`), without the editor.

The registry decides what needs no Sublime: which review a path belongs to,
which CLI session hears about the user's decision, what `closeDiff` answers,
and the exact text to send on accept. Every method is thread-safe: the server
thread opens and closes reviews while Sublime's main thread accepts them.

Line endings: Sublime keeps buffers with `\\n` only, so a review remembers the
style the file should keep (CRLF when the file on disk or the proposal uses
it) and the accepted text is converted back to it. The real CLI also writes
CRLF for a CRLF file when given `\\n`, but sending the file's own style makes
the round trip byte-exact without relying on that.
"""

from __future__ import annotations

import enum
import itertools
import json
import os
import threading
from dataclasses import dataclass
from typing import Generic, TypeVar

from .ide_messages import DIFF_ACCEPTED, DIFF_REJECTED, DiffAccepted, DiffRejected, Outgoing

LF = "\n"
CRLF = "\r\n"

OwnerT = TypeVar("OwnerT")


def path_key(path: str) -> str:
    """One key per file however the CLI spells its path."""
    return os.path.normcase(os.path.normpath(path))


def line_ending_of(text: str) -> str | None:
    """CRLF or LF, whichever most line breaks of `text` use; None without any."""
    crlf = text.count(CRLF)
    lf = text.count(LF) - crlf
    if crlf == 0 and lf == 0:
        return None
    return CRLF if crlf > lf else LF


def buffer_text(text: str) -> str:
    """`text` as a Sublime buffer holds it: CRLF pairs become `\\n`."""
    return text.replace(CRLF, LF)


@dataclass(frozen=True)
class DiskFile:
    """What the file holds on disk when the review opens."""

    exists: bool
    text: str = ""  # decoded, CRLF pairs as `\n`, without a UTF-8 BOM
    line_ending: str | None = None


class UnreadableFile(Exception):
    """The target is a directory or cannot be read: openDiff fails with this message."""


def read_disk_file(path: str) -> DiskFile:
    if os.path.isdir(path):
        raise UnreadableFile(f"{path} is a directory, not a file")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return DiskFile(exists=False)
    except OSError as error:
        raise UnreadableFile(f"cannot read {path}: {error.strerror or error}") from None
    # Shown on the read-only side only, so undecodable bytes may be replaced.
    text = data.decode("utf-8-sig", errors="replace")
    return DiskFile(exists=True, text=buffer_text(text), line_ending=line_ending_of(text))


def choose_line_ending(new_content: str, disk: DiskFile) -> str:
    """CRLF when the file on disk or the proposal uses it, else LF."""
    if CRLF in (line_ending_of(new_content), disk.line_ending):
        return CRLF
    return LF


class ReviewState(enum.Enum):
    OPEN = "open"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CLOSED = "closed"  # by the CLI's closeDiff
    REPLACED = "replaced"  # by a newer openDiff for the same file


@dataclass
class Review(Generic[OwnerT]):
    id: int
    file_path: str  # exactly as the CLI sent it: the CLI matches its answer on this string
    session_id: str
    owner: OwnerT  # what delivers notifications to `session_id` (the window's companion)
    proposed: str  # the proposal as the buffer shows it (`\n` line breaks)
    line_ending: str
    disk: DiskFile
    state: ReviewState = ReviewState.OPEN

    @property
    def key(self) -> str:
        return path_key(self.file_path)

    @property
    def is_open(self) -> bool:
        return self.state is ReviewState.OPEN

    def file_text(self, text: str) -> str:
        """The buffer text `text` as the file should hold it: the review's line endings,
        the final newline exactly as present or absent in `text`."""
        return buffer_text(text).replace(LF, self.line_ending)

    def edited(self, text: str) -> bool:
        return buffer_text(text) != self.proposed


@dataclass(frozen=True)
class Notice(Generic[OwnerT]):
    """A notification for the session that opened a review."""

    method: str
    params: Outgoing
    session_id: str
    owner: OwnerT


def close_answer(content: str | None) -> str:
    """closeDiff's text block: the CLI reads `JSON.parse(text).content`."""
    return json.dumps({"content": content}, ensure_ascii=False)


class DiffRegistry(Generic[OwnerT]):
    """The open reviews, at most one per file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: dict[str, Review[OwnerT]] = {}

    def open(
        self, file_path: str, new_content: str, session_id: str, owner: OwnerT, disk: DiskFile
    ) -> tuple[Review[OwnerT], Review[OwnerT] | None, Notice[OwnerT] | None]:
        """Start a review; returns it, the review it replaced and that one's rejection."""
        review = Review(
            id=next(self._ids),
            file_path=file_path,
            session_id=session_id,
            owner=owner,
            proposed=buffer_text(new_content),
            line_ending=choose_line_ending(new_content, disk),
            disk=disk,
        )
        with self._lock:
            replaced = self._open.pop(review.key, None)
            self._open[review.key] = review
            notice = self._finish(replaced, ReviewState.REPLACED) if replaced else None
        return review, replaced, notice

    def find(self, file_path: str) -> Review[OwnerT] | None:
        with self._lock:
            return self._open.get(path_key(file_path))

    def open_reviews(self) -> list[Review[OwnerT]]:
        with self._lock:
            return list(self._open.values())

    def accept(self, review: Review[OwnerT], text: str) -> Notice[OwnerT] | None:
        """The user accepted `text`; None when the review was already decided."""
        with self._lock:
            if not self._take(review):
                return None
            review.state = ReviewState.ACCEPTED
            params = DiffAccepted(filePath=review.file_path, content=review.file_text(text))
            return Notice(DIFF_ACCEPTED, params, review.session_id, review.owner)

    def reject(self, review: Review[OwnerT]) -> Notice[OwnerT] | None:
        """The user rejected or closed the review; None when it was already decided."""
        with self._lock:
            if not self._take(review):
                return None
            return self._finish(review, ReviewState.REJECTED)

    def close(self, review: Review[OwnerT], *, suppress: bool) -> tuple[bool, Notice[OwnerT] | None]:
        """The CLI closed the review: (whether it was still open, the rejection to send)."""
        with self._lock:
            if not self._take(review):
                return False, None
            if suppress:
                review.state = ReviewState.CLOSED
                return True, None
            return True, self._finish(review, ReviewState.CLOSED)

    def _take(self, review: Review[OwnerT]) -> bool:
        if self._open.get(review.key) is not review:
            return False
        del self._open[review.key]
        return True

    @staticmethod
    def _finish(review: Review[OwnerT], state: ReviewState) -> Notice[OwnerT]:
        review.state = state
        return Notice(DIFF_REJECTED, DiffRejected(filePath=review.file_path), review.session_id, review.owner)
