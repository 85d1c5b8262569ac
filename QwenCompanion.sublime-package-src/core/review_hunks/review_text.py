"""The review view's text, made from a review (pure): a header line per
file, then each pending hunk: its header ("@@ line 12 …"), its context
lines, removed lines ("-") and added lines ("+"), and the review comments on
its lines. Which hunk each line of the view belongs to, and where the
removed and added lines are (for their scopes), come with it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..display_text import display_text
from .hunks import Hunk
from .review import BINARY, LARGE, UNLISTED, Review, ReviewFile

ROW_CHARACTERS = 2000  # a minified file's line is shown cut, the view stays light
COMMENT_CHARACTERS = 300
KEYS_LINE = "k keep · u undo · Enter open · shift+k keep file · shift+u undo file · n / p next / previous hunk"
NO_HUNK = -1


@dataclass(frozen=True)
class Comment:
    path: str
    line: int  # 1-based, of the file's text now
    text: str


@dataclass
class ReviewText:
    text: str = ""
    inserted: list[tuple[int, int]] = field(default_factory=list)  # character ranges of "+" lines
    deleted: list[tuple[int, int]] = field(default_factory=list)
    headers: list[tuple[int, int]] = field(default_factory=list)  # the files' header lines
    targets: list[tuple[int, int]] = field(default_factory=list)  # per line: (file index, hunk index or NO_HUNK)
    hunk_lines: list[int] = field(default_factory=list)  # the line of each hunk's header, in order

    def target(self, line: int) -> tuple[int, int] | None:
        return self.targets[line] if 0 <= line < len(self.targets) else None


class _Writer:
    def __init__(self) -> None:
        self.out = ReviewText()
        self._parts: list[str] = []
        self._size = 0

    def line(self, text: str, target: tuple[int, int], kind: str = "") -> None:
        start = self._size
        self._parts.append(text + "\n")
        self._size += len(text) + 1
        self.out.targets.append(target)
        span = (start, start + len(text))
        if kind == "+":
            self.out.inserted.append(span)
        elif kind == "-":
            self.out.deleted.append(span)
        elif kind == "file":
            self.out.headers.append(span)

    def done(self) -> ReviewText:
        self.out.text = "".join(self._parts)
        return self.out


def _counts(review_file: ReviewFile) -> str:
    settled = [f"{n} {what}" for n, what in ((review_file.kept, "kept"), (review_file.undone, "undone")) if n]
    pending = len(review_file.hunks)
    parts = [f"{pending} hunk{'s' if pending != 1 else ''} pending", *settled]
    return " · ".join(parts)


_SUMMARIES = {
    BINARY: "binary file changed",
    LARGE: "file over 8 MB changed: not shown; open it",
    UNLISTED: "hunks not listed (the review holds 10,000 at most); open the file",
}


def render(title: str, review: Review, display: Callable[[str], str],
           comments: list[Comment] | tuple[Comment, ...] = ()) -> ReviewText:
    """The view's text for `review`; `display` shows a path (relative to the window's folders)."""
    writer = _Writer()
    files = len(review.files)
    writer.line(f"Qwen Code review — {display_text(title, 120)}: {files} file{'s' if files != 1 else ''}, "
                f"{review.pending_hunks} hunks pending", (NO_HUNK, NO_HUNK))
    writer.line(KEYS_LINE, (NO_HUNK, NO_HUNK))
    by_path: dict[str, dict[int, list[str]]] = {}
    for comment in comments:
        by_path.setdefault(comment.path, {}).setdefault(comment.line, []).append(comment.text)
    for index, review_file in enumerate(review.files):
        writer.line("", (index, NO_HUNK))
        summary = _SUMMARIES.get(review_file.kind)
        state = summary + (f" · {review_file.state}" if summary else "") if summary else _counts(review_file)
        writer.line(f"== {display(review_file.path)}  +{review_file.added} −{review_file.removed}  {state}",
                    (index, NO_HUNK), "file")
        for number, hunk in enumerate(review_file.hunks):
            writer.out.hunk_lines.append(len(writer.out.targets))
            _hunk(writer, hunk, (index, number), by_path.get(review_file.path, {}))
    return writer.done()


def _hunk(writer: _Writer, hunk: Hunk, target: tuple[int, int], comments: dict[int, list[str]]) -> None:
    writer.line(f"@@ line {hunk.first_changed_line + 1}  +{hunk.added} −{hunk.removed}", target)
    line = hunk.new_start  # 0-based line of the text now
    for tag, text in hunk.rows:
        writer.line(tag + text.rstrip("\r\n")[:ROW_CHARACTERS], target, tag)
        if tag != "-":
            line += 1
            for comment in comments.get(line, ()):
                writer.line(f"   ▸ comment: {display_text(comment, COMMENT_CHARACTERS)}", target)
