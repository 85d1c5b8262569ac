"""The package's record of review comments: the truth a view's regions
follow. A comment belongs to one chat, names a file and a line range
(1-based, inclusive), and is pending until Send Review sends it, then sent
until that chat's turn ends (then it is cleared); a comment whose lines were
deleted, or whose file was deleted or renamed, is outdated and keeps its
text and quote. Only the user's commands and the headless driver reach this
book: nothing an agent sends does.

Pure and thread-safe: the main thread moves comments with the user's edits,
Send Review reads them on a thread of ours.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

MAX_COMMENTS = 100  # a review's comments (pending ones of a chat)
MAX_TEXT_BYTES = 16 * 1024  # one comment's text, in UTF-8
PENDING, SENT, OUTDATED = "pending", "sent", "outdated"


class CommentRefused(Exception):
    """A comment that cannot be made (the review is full, an empty text, a bad line)."""


@dataclass(frozen=True)
class Comment:
    comment_id: int
    chat_id: int
    path: str  # absolute
    line: int  # 1-based
    end_line: int  # 1-based, inclusive
    text: str
    state: str = PENDING
    quote: str | None = None  # the lines as they were when commented (None: read when sent)
    sent_in: bool = False  # outdated after it was sent: cleared with its turn too
    review_id: int | None = None  # made in a review's proposal tab: its lines are the proposal's

    def lines(self) -> str:
        return f"line {self.line}" if self.line == self.end_line else f"lines {self.line}-{self.end_line}"


def capped(text: str, limit: int = MAX_TEXT_BYTES) -> str:
    """`text` cut to `limit` bytes of UTF-8, never inside a character."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


class CommentBook:
    """Every comment of the package, by id (ids are never reused)."""

    def __init__(self, max_comments: int = MAX_COMMENTS) -> None:
        self._lock = threading.Lock()
        self._comments: dict[int, Comment] = {}
        self._ids = itertools.count(1)
        self._max = max_comments
        self.version = 0  # changes with every change, for a view to redraw only then

    def add(self, chat_id: int, path: str, line: int, end_line: int | None, text: str,
            quote: str | None = None, review_id: int | None = None) -> Comment:
        end = line if end_line is None else end_line
        if line < 1 or end < line:
            raise CommentRefused(f"no such line range: {line}-{end}")
        if not text.strip():
            raise CommentRefused("a comment needs a text")
        with self._lock:
            if sum(1 for c in self._comments.values() if c.chat_id == chat_id and c.state != SENT) >= self._max:
                raise CommentRefused(f"a review holds at most {self._max} comments: send it or delete some")
            comment = Comment(next(self._ids), chat_id, path, line, end, capped(text), quote=quote, review_id=review_id)
            self._comments[comment.comment_id] = comment
            self.version += 1
            return comment

    def get(self, comment_id: int) -> Comment | None:
        with self._lock:
            return self._comments.get(comment_id)

    def edit(self, comment_id: int, text: str) -> Comment:
        if not text.strip():
            raise CommentRefused("a comment needs a text (Delete Comment removes it)")
        return self._change(comment_id, text=capped(text))

    def delete(self, comment_id: int) -> Comment:
        with self._lock:
            comment = self._comments.pop(comment_id, None)
            if comment is None:
                raise CommentRefused(f"there is no comment {comment_id}")
            self.version += 1
            return comment

    def moved(self, comment_id: int, line: int, end_line: int) -> None:
        """Its lines moved with the user's edits (nothing for an outdated or sent one)."""
        with self._lock:
            comment = self._comments.get(comment_id)
            if comment is not None and comment.state == PENDING and (comment.line, comment.end_line) != (line, end_line):
                self._comments[comment_id] = replace(comment, line=line, end_line=end_line)
                self.version += 1

    def outdated(self, comment_id: int) -> None:
        """Its lines, or its file, are gone: it keeps its text and quote."""
        with self._lock:
            comment = self._comments.get(comment_id)
            if comment is not None and comment.state != OUTDATED:
                self._comments[comment_id] = replace(comment, state=OUTDATED, sent_in=comment.state == SENT)
                self.version += 1

    def of_chat(self, chat_id: int) -> list[Comment]:
        with self._lock:
            return [c for c in self._comments.values() if c.chat_id == chat_id]

    def of_path(self, path: str) -> list[Comment]:
        with self._lock:
            return [c for c in self._comments.values() if c.path == path]

    def pending_in(self, review_id: int | None) -> list[Comment]:
        """Every chat's pending comments on files (`review_id` None) or on that review's proposal tab."""
        with self._lock:
            return [c for c in self._comments.values() if c.state == PENDING and c.review_id == review_id]

    def to_send(self, chat_id: int) -> list[Comment]:
        """The chat's comments not sent yet (pending and outdated), in the order made."""
        return [c for c in self.of_chat(chat_id) if c.state != SENT and not c.sent_in]

    def mark_sent(self, comment_ids: list[int]) -> None:
        with self._lock:
            for comment_id in comment_ids:
                comment = self._comments.get(comment_id)
                if comment is not None:
                    outdated = comment.state == OUTDATED
                    self._comments[comment_id] = replace(comment, state=OUTDATED if outdated else SENT, sent_in=True)
            self.version += 1

    def clear_sent(self, chat_id: int) -> list[Comment]:
        """The chat's turn ended: its sent comments go (returned, for their views)."""
        with self._lock:
            gone = [c for c in self._comments.values() if c.chat_id == chat_id and c.sent_in]
            for comment in gone:
                del self._comments[comment.comment_id]
            if gone:
                self.version += 1
            return gone

    def adopt(self, chat_id: int, orphaned: Callable[[Comment], bool]) -> None:
        """The unsent comments `orphaned` names (their chat closed) become chat `chat_id`'s."""
        with self._lock:
            for comment in list(self._comments.values()):
                if not comment.sent_in and comment.state != SENT and orphaned(comment):
                    self._comments[comment.comment_id] = replace(comment, chat_id=chat_id)
                    self.version += 1

    def _change(self, comment_id: int, **changes: object) -> Comment:
        with self._lock:
            comment = self._comments.get(comment_id)
            if comment is None:
                raise CommentRefused(f"there is no comment {comment_id}")
            comment = replace(comment, **changes)  # type: ignore[arg-type]
            self._comments[comment_id] = comment
            self.version += 1
            return comment
