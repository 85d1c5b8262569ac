"""The review view's text, made from a review (pure): a header line per
file ("== path"), then each pending hunk: its header ("@@ line 12 …"), its
context lines, removed lines ("-") and added lines ("+"), and the review
comments on its lines; each line's first character gives its scope (the
view's syntax). Which hunk each line of the view belongs to comes with it,
file by file, so one file's part can be made again alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..display_text import display_text
from .hunks import Hunk
from .review import BINARY, LARGE, UNLISTED, HunkReview, ReviewFile

ROW_CHARACTERS = 2000  # a minified file's line is shown cut, the view stays light
COMMENT_CHARACTERS = 300
KEYS_LINE = ("k keep · u undo · Enter open · shift+k keep file · shift+u undo file · a k keep all · a u undo all"
             " · n / p next / previous hunk")
NO_HUNK = -1


@dataclass(frozen=True)
class Comment:
    path: str
    line: int  # 1-based, of the file's text now
    text: str


@dataclass
class ReviewText:
    text: str = ""
    targets: list[tuple[int, int]] = field(default_factory=list)  # per line: (file index, hunk index or NO_HUNK)
    hunk_lines: list[int] = field(default_factory=list)  # the line of each hunk's header, in order

    def target(self, line: int) -> tuple[int, int] | None:
        return self.targets[line] if 0 <= line < len(self.targets) else None


class _Writer:
    def __init__(self) -> None:
        self.out = ReviewText()
        self._parts: list[str] = []

    def line(self, text: str, target: tuple[int, int]) -> None:
        self._parts.append(text + "\n")
        self.out.targets.append(target)

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


def comments_by_line(comments: list[Comment] | tuple[Comment, ...]) -> dict[str, dict[int, list[str]]]:
    """Each path's comments by their line."""
    by_path: dict[str, dict[int, list[str]]] = {}
    for comment in comments:
        by_path.setdefault(comment.path, {}).setdefault(comment.line, []).append(comment.text)
    return by_path


def render_title(title: str, review: HunkReview) -> str:
    """The view's first two lines: what it reviews, how much is pending, the keys."""
    files = len(review.files)
    return (f"Qwen Code review — {display_text(title, 120)}: {files} file{'s' if files != 1 else ''}, "
            f"{review.pending_hunks} hunks pending\n{KEYS_LINE}\n")


def render_file(index: int, review_file: ReviewFile, display: Callable[[str], str],
                comments: dict[int, list[str]]) -> ReviewText:
    """File `index`'s part of the view: a blank line, its header line, its pending hunks
    (character ranges and lines counted from the part's start)."""
    writer = _Writer()
    writer.line("", (index, NO_HUNK))
    summary = _SUMMARIES.get(review_file.kind)
    state = f"{summary} · {review_file.state}" if summary else _counts(review_file)
    writer.line(f"== {display(review_file.path)}  +{review_file.added} −{review_file.removed}  {state}",
                (index, NO_HUNK))
    for number, hunk in enumerate(review_file.hunks):
        writer.out.hunk_lines.append(len(writer.out.targets))
        _hunk(writer, hunk, (index, number), comments)
    return writer.done()


def join(head: str, parts: list[ReviewText]) -> ReviewText:
    """The view's text: `head` (lines of no file), then the files' parts, their ranges and lines made the view's."""
    joined = ReviewText(targets=[(NO_HUNK, NO_HUNK)] * head.count("\n"))
    for part in parts:
        lines = len(joined.targets)
        joined.targets.extend(part.targets)
        joined.hunk_lines.extend(line + lines for line in part.hunk_lines)
    joined.text = head + "".join(part.text for part in parts)
    return joined


def render_parts(review: HunkReview, display: Callable[[str], str],
                 comments: list[Comment] | tuple[Comment, ...] = ()) -> list[ReviewText]:
    by_path = comments_by_line(comments)
    return [render_file(index, each, display, by_path.get(each.path, {})) for index, each in enumerate(review.files)]


def render(title: str, review: HunkReview, display: Callable[[str], str],
           comments: list[Comment] | tuple[Comment, ...] = ()) -> ReviewText:
    """The view's whole text for `review`; `display` shows a path (relative to the window's folders)."""
    return join(render_title(title, review), render_parts(review, display, comments))


def _hunk(writer: _Writer, hunk: Hunk, target: tuple[int, int], comments: dict[int, list[str]]) -> None:
    writer.line(f"@@ line {hunk.first_changed_line + 1}  +{hunk.added} −{hunk.removed}", target)
    line = hunk.new_start  # 0-based line of the text now
    for tag, text in hunk.rows:
        writer.line(tag + text.rstrip("\r\n")[:ROW_CHARACTERS], target)
        if tag != "-":
            line += 1
            for comment in comments.get(line, ()):
                writer.line(f"   ▸ comment: {display_text(comment, COMMENT_CHARACTERS)}", target)
