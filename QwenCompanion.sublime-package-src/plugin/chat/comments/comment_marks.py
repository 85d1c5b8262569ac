"""Where review comments show: one region a comment in every view of its
file, with the comment as an annotation (it never shifts the code). The
package's record (`book`, core/chat/comments/comments.py) is the truth;
Sublime moves the regions with the user's edits, and each edit moves the
record after them. A comment whose region is gone (its lines deleted) is
outdated: its mark goes, its record keeps the text and the quote. A comment
made in a review's proposal tab is on the proposal's lines: it shows there
only, while the review is open."""

from __future__ import annotations

import html
from bisect import bisect_right
from itertools import accumulate

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.comments.comments import PENDING, SENT, Comment, CommentBook
from ...reviews.review_tabs import OpenReview, reviews

KEY_PREFIX = "qwen_comment_"
ANNOTATION_CHARS = 120  # of a comment, in its annotation
# Of a view's text read at once to place many marks (one read, not one call a
# mark); past it each point is asked of Sublime.
INDEX_LIMIT = 1024 * 1024
book = CommentBook()
proposals: dict[int, OpenReview] = {}  # review id -> its tabs, for the comments made in its proposal tab
_seen: dict[tuple[int, int], tuple[int, int]] = {}  # (view id, comment id) -> its region when its lines were last read


def region_key(comment: Comment) -> str:
    return f"{KEY_PREFIX}{comment.comment_id}"


def views_of(path: str) -> list[sublime.View]:
    """Every view of the file `path`, in every window."""
    return [view for window in sublime.windows() for view in window.views() if view.file_name() == path]


def open_proposal(comment: Comment) -> OpenReview | None:
    """The open review whose proposal tab the comment was made in."""
    item = proposals.get(comment.review_id) if comment.review_id is not None else None
    return item if item is not None and item.review.is_open and item.proposed.is_valid() else None


def views_for(comment: Comment) -> list[sublime.View]:
    if comment.review_id is None:
        return views_of(comment.path)
    item = open_proposal(comment)
    return [item.proposed] if item is not None else []


def comments_in(view: sublime.View) -> list[Comment]:
    """The comments marked in `view`: its file's, or its review's when it is a proposal tab."""
    item = reviews.for_view(view)
    if item is not None and item.proposed.id() == view.id():
        return [c for c in book.of_path(item.review.file_path) if c.review_id == item.review.id]
    path = view.file_name()
    return [c for c in book.of_path(path) if c.review_id is None] if path is not None else []


class _Starts:
    """The points where a text's lines start, from its lines' cumulative lengths (looked up, never listed)."""

    def __init__(self, lines: list[str]) -> None:
        self._ends = list(accumulate(map(len, lines)))  # without the newlines

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, row: int) -> int:
        return 0 if row == 0 else self._ends[row - 1] + row


class LineIndex:
    """Rows of points and points of rows in a view's text up to `upto`, from
    one read of it (or, past INDEX_LIMIT, from Sublime point by point)."""

    def __init__(self, view: sublime.View, upto: int) -> None:
        self._view = view
        self._starts: _Starts | None = None
        if min(upto, view.size()) <= INDEX_LIMIT:
            self._starts = _Starts(view.substr(sublime.Region(0, min(upto, view.size()))).split("\n"))

    def row(self, point: int) -> int:
        """0-based."""
        return bisect_right(self._starts, point) - 1 if self._starts is not None else self._view.rowcol(point)[0]

    def lines(self, first: int, last: int) -> sublime.Region:
        """1-based rows `first`…`last`, the last one's newline included."""
        starts = self._starts
        if starts is None or last >= len(starts):
            return sublime.Region(self._view.text_point(first - 1, 0),
                                  self._view.full_line(self._view.text_point(last - 1, 0)).end())
        return sublime.Region(starts[first - 1], starts[last])


@threads.on_main
def show(comment: Comment, views: list[sublime.View] | None = None) -> None:
    """The comment's mark, at its lines, in every view of its file (or in `views`)."""
    for view in views if views is not None else views_for(comment):
        show_in(view, [comment])


@threads.on_main
def show_in(view: sublime.View, comments: list[Comment]) -> None:
    """The comments' marks in `view`, its text read once."""
    index = LineIndex(view, view.size()) if len(comments) > 1 else None
    for comment in comments:
        if comment.state not in (PENDING, SENT):
            view.erase_regions(region_key(comment))
            continue
        region = (index or LineIndex(view, 0)).lines(comment.line, comment.end_line)
        text = " ".join(comment.text.split())
        shown = text if len(text) <= ANNOTATION_CHARS else text[:ANNOTATION_CHARS - 1] + "…"
        label = "sent" if comment.state == SENT else "comment"
        view.add_regions(region_key(comment), [region], "region.bluish", "bookmark",
                         sublime.RegionFlags.DRAW_NO_FILL | sublime.RegionFlags.DRAW_NO_OUTLINE,
                         [f"<b>{label}:</b> {html.escape(shown)}"], "#6699cc")


@threads.on_main
def hide(comment: Comment) -> None:
    for view in views_for(comment):
        view.erase_regions(region_key(comment))
        _seen.pop((view.id(), comment.comment_id), None)


@threads.on_main
def follow_edits(view: sublime.View) -> None:
    """After an edit: each comment of the view's file takes its region's
    lines, or is outdated; the view's text is read once, and only when a
    region moved."""
    moved: list[tuple[Comment, sublime.Region]] = []
    for comment in comments_in(view):
        if comment.state != PENDING:
            continue
        regions = view.get_regions(region_key(comment))
        if not regions:  # not drawn in this view yet
            continue
        region = regions[0]
        if region.empty():
            book.outdated(comment.comment_id)
            hide(comment)
        elif _seen.get((view.id(), comment.comment_id)) != (region.a, region.b):
            _seen[(view.id(), comment.comment_id)] = (region.a, region.b)
            moved.append((comment, region))
    if moved:
        index = LineIndex(view, max(region.end() for _, region in moved))
        for comment, region in moved:
            book.moved(comment.comment_id, index.row(region.begin()) + 1,
                       index.row(max(region.begin(), region.end() - 1)) + 1)


class CommentMarksListener(sublime_plugin.EventListener):
    """Marks in a view as it opens; the record follows each edit."""

    def on_load(self, view: sublime.View) -> None:
        show_in(view, comments_in(view))

    def on_modified(self, view: sublime.View) -> None:
        if view.file_name() is not None or reviews.is_review_view(view):
            follow_edits(view)

