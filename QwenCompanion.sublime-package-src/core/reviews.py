"""Reviews of proposed edits, without the editor: what a review is, who hears
its answer, the open reviews at most one per file, and the file as read for
one (a regular file of bounded size, decoded as Sublime would show it).

Every feature that proposes an edit owns the reviews it opens (`ReviewOwner`):
the CLI's companion (its `openDiff`, which answers with `ide/diffAccepted` /
`ide/diffRejected`), a chat's permission prompt, a quick action's replacement,
a generated test file. The review tabs (plugin/reviews) know nothing else of
them. The registry decides what needs no Sublime: which review a path belongs
to, and the order of decisions. Every method is thread-safe: a server or chat
thread opens and closes reviews while Sublime's main thread accepts them.

Pure: no Sublime, no protocol models.
"""

from __future__ import annotations

import enum
import functools
import itertools
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .files.encodings import DEFAULT_FALLBACK, decode_like_sublime
from .files.line_endings import CRLF, LF, line_ending_of
from .files.paths import path_identity


class ReviewOwner(Protocol):
    @property
    def alive(self) -> bool:
        """Whether anyone still waits for the answer; else the review is orphaned (main thread)."""
        ...

    @property
    def note(self) -> str | None:
        """What Accept does, shown instead of the notes about the file on disk; None keeps those."""
        ...

    def accepted(self, text: str) -> None:
        """The user accepted `text`: the proposal tab's text, newlines as in a buffer (`\\n`)."""

    def rejected(self) -> None:
        """The user rejected the review, or it ended unanswered (closed, replaced by a newer
        proposal for the same file); any thread."""


def path_key(path: str) -> str:
    """One key per file however the CLI spells its path."""
    return path_identity(path)


def buffer_text(text: str) -> str:
    """`text` as a Sublime buffer holds it: CRLF pairs become `\\n`."""
    # Looking for "\r" alone is a memchr: ~20x faster than a replace that finds
    # nothing in a 10 MB LF proposal, which the openDiff answer waits for.
    return text.replace(CRLF, LF) if "\r" in text else text


def first_change(original: str, proposed: str) -> int:
    """Where `proposed` first differs from `original`: the start of that line."""
    index = common_prefix_length(original, proposed)
    if index < len(proposed):
        return proposed.rfind("\n", 0, index) + 1
    # Only lines at the end went away: the last line that is left.
    return proposed.rfind("\n", 0, max(len(proposed) - 1, 0)) + 1


def common_prefix_length(first: str, second: str, block: int = 4096) -> int:
    """Compared block by block: no copy of either text (a 10 MB proposal's lines
    cost more memory than the text itself)."""
    end = min(len(first), len(second))
    for start in range(0, end, block):
        stop = min(start + block, end)
        if first[start:stop] != second[start:stop]:
            return next(i for i in range(start, stop) if first[i] != second[i])
    return end


@dataclass(frozen=True)
class DiskFile:
    """What the file holds on disk when the review opens."""

    exists: bool
    text: str = ""  # decoded, CRLF pairs as `\n`, without a UTF-8 BOM
    line_ending: str | None = None
    stamp: tuple[int, int] | None = field(default=None, compare=False)  # (mtime in ns, size) when read


def stamp_of(info: os.stat_result) -> tuple[int, int]:
    return info.st_mtime_ns, info.st_size


def changed_by_stamp(path: str, before: DiskFile) -> bool | None:
    """Whether the file changed since `before` was read, told by a stat alone
    (no read on the main thread): False when its mtime and size are as they
    were (or it is still missing), True when it appeared, went or changed
    size, None when only the mtime moved (the text must be compared)."""
    try:
        now: tuple[int, int] | None = stamp_of(os.stat(path))
    except (OSError, ValueError):
        now = None
    if not before.exists or now is None:
        return (now is None) == before.exists
    if before.stamp is None:
        return None
    if now == before.stamp:
        return False
    return True if now[1] != before.stamp[1] else None


class UnreadableFile(Exception):
    """The target is not a regular file, is too large or cannot be read: openDiff
    fails with this message."""


# A review shows the file whole in two tabs; past this it is no review but a
# stall (and an agent's /dev/zero or 1 GB file must not grow the editor).
MAX_REVIEW_BYTES = 32 * 1024 * 1024


def read_disk_file(path: str, fallback_encoding: str = DEFAULT_FALLBACK) -> DiskFile:
    """What `path` holds, if it is a regular file of at most MAX_REVIEW_BYTES; a
    FIFO, a device or a directory is refused without being read (a FIFO's
    read would wait for a writer forever)."""
    try:
        data, info = _read_bytes(path, MAX_REVIEW_BYTES)
    except FileNotFoundError:
        return DiskFile(exists=False)
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        # Asked only when reading failed: no extra stat on every openDiff.
        if os.path.isdir(path):
            raise UnreadableFile(f"{path} is a directory, not a file") from None
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise UnreadableFile(f"cannot read {path}: {reason}") from None
    # Shown on the read-only side only: decoded as Sublime would open it.
    text, _ = decode_like_sublime(data, fallback_encoding)
    return DiskFile(exists=True, text=buffer_text(text), line_ending=line_ending_of(text), stamp=stamp_of(info))


def _too_large(path: str, max_bytes: int) -> UnreadableFile:
    return UnreadableFile(f"{path} is larger than {max_bytes // (1024 * 1024)} MiB: too large to review")


def _read_bytes(path: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The whole file, read without a file object's buffering layers (a third
    of the time of `open().read()` on every openDiff). Opened without
    blocking, so a FIFO is seen for what it is before anything waits on it."""
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise UnreadableFile(f"{path} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"{path} is not a regular file (a pipe, socket or device): not read")
        size = info.st_size
        if size > max_bytes:
            raise _too_large(path, max_bytes)
        data = os.read(descriptor, size + 1)
        if len(data) == size:
            return data, info  # one byte more was asked for: this is the end
        # The file grew meanwhile, or reports no size (/proc): read to the end, bounded.
        chunks, total = [data], len(data)
        while chunk := os.read(descriptor, 1 << 20):
            total += len(chunk)
            if total > max_bytes:
                raise _too_large(path, max_bytes)
            chunks.append(chunk)
        return b"".join(chunks), info
    finally:
        os.close(descriptor)


EMPTY_REFUSAL = (
    "Qwen Code cannot take an empty text from a review: it would write its own proposal instead. "
    "To empty the file, reject this change and clear the file yourself."
)


def disk_changed_warning(name: str) -> str:
    return (
        f"{name} changed on disk after Qwen Code proposed this (was it saved meanwhile?). The proposal was made "
        "from the earlier text, so accepting writes it over those changes. Reject it and ask again, or bring the "
        "changes into the proposal here and click Accept again to write it anyway."
    )


# Reviews one asker (a chat, a CLI session) keeps open at once: a burst of
# requests must not become hundreds of tabs. Past it, the chat answers the
# request in its transcript and the CLI's openDiff is refused.
MAX_OPEN_REVIEWS = 4


class ReviewRefused(Exception):
    """An openDiff the editor will not show (the message says why, for the CLI)."""


class ReviewState(enum.Enum):
    OPEN = "open"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CLOSED = "closed"  # by the CLI's closeDiff
    REPLACED = "replaced"  # by a newer openDiff for the same file


@dataclass
class Review:
    id: int
    file_path: str  # exactly as proposed: the CLI matches its answer on this string
    owner: ReviewOwner  # who hears the user's decision
    new_content: str  # the proposal exactly as it came
    disk: DiskFile
    state: ReviewState = ReviewState.OPEN
    proposed: str = field(init=False)  # the proposal as the buffer shows it

    def __post_init__(self) -> None:
        self.proposed = buffer_text(self.new_content)

    @functools.cached_property
    def key(self) -> str:
        # Resolving touches the disk: once, on the thread that opens the review.
        return path_key(self.file_path)

    @property
    def is_open(self) -> bool:
        return self.state is ReviewState.OPEN

    def edited(self, text: str) -> bool:
        return buffer_text(text) != self.proposed

    def refusal(self, text: str) -> str | None:
        """Why accepting `text` would not do what the user sees, if it would not."""
        # The CLI takes an empty accepted text for "unchanged" and writes its proposal.
        return EMPTY_REFUSAL if text == "" and self.new_content != "" else None


class DiffRegistry:
    """The open reviews, at most one per file. The owner of a review hears its
    decision once, outside the lock (an owner may call back into the registry)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: dict[str, Review] = {}
        # The open reviews by the exact spelling of their path: closeDiff names
        # a file as its openDiff did, so it is found without resolving it.
        self._spelled: dict[str, Review] = {}

    def open(
        self, file_path: str, new_content: str, owner: ReviewOwner, disk: DiskFile,
        refusal: Callable[[Review | None, list[Review]], str | None] | None = None,
    ) -> tuple[Review, Review | None]:
        """Start a review; returns it and the review it replaced, whose owner hears
        a rejection. `refusal` (given the review of the same file, if any, and all
        open ones) may say why not, under the lock: then ReviewRefused."""
        review = Review(id=next(self._ids), file_path=file_path, owner=owner, new_content=new_content, disk=disk)
        with self._lock:
            if refusal is not None and (reason := refusal(self._open.get(review.key), list(self._open.values()))):
                raise ReviewRefused(reason)
            replaced = self._open.pop(review.key, None)
            if replaced is not None:
                self._forget_spelling(replaced)
                replaced.state = ReviewState.REPLACED
            self._open[review.key] = review
            self._spelled[file_path] = review
        if replaced is not None:
            replaced.owner.rejected()
        return review, replaced

    def find(self, file_path: str) -> Review | None:
        with self._lock:
            review = self._spelled.get(file_path)
            return review if review is not None else self._open.get(path_key(file_path))

    def open_reviews(self) -> list[Review]:
        with self._lock:
            return list(self._open.values())

    def accept(self, review: Review, text: str) -> bool:
        """The user accepted `text`; False when the review was already decided."""
        if not self._decide(review, ReviewState.ACCEPTED):
            return False
        review.owner.accepted(text)
        return True

    def reject(self, review: Review) -> bool:
        """The user rejected or closed the review; False when it was already decided."""
        if not self._decide(review, ReviewState.REJECTED):
            return False
        review.owner.rejected()
        return True

    def abandon(self, review: Review) -> bool:
        """End the review unanswered, its owner told nothing: nobody waits for
        the answer any more. False when it was already decided."""
        return self._decide(review, ReviewState.REJECTED)

    def close(self, review: Review, *, suppress: bool) -> bool:
        """The CLI closed the review: whether it was still open. Its owner hears
        a rejection unless `suppress`."""
        if not self._decide(review, ReviewState.CLOSED):
            return False
        if not suppress:
            review.owner.rejected()
        return True

    def _decide(self, review: Review, state: ReviewState) -> bool:
        with self._lock:
            if self._open.get(review.key) is not review:
                return False
            del self._open[review.key]
            self._forget_spelling(review)
            review.state = state
            return True

    def _forget_spelling(self, review: Review) -> None:
        # Another review opened since under the same spelling keeps its entry.
        if self._spelled.get(review.file_path) is review:
            del self._spelled[review.file_path]
