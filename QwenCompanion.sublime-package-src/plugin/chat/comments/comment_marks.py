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
from ....core.files.paths import deepest_root
from ...reviews.review_tabs import OpenReview, reviews
from ..window_chats import chats

KEY_PREFIX = "qwen_comment_"
ANNOTATION_CHARS = 120  # of a comment, in its annotation
# Of a view's text read at once to place many marks (one read, not one call a
# mark); past it each point is asked of Sublime.
INDEX_LIMIT = 1024 * 1024
book = CommentBook()
proposals: dict[int, OpenReview] = {}  # review id -> its tabs, for the comments made in its proposal tab


def adopt_orphans(window: sublime.Window, chat_id: int) -> None:
    """Comments of a chat closed since, on files of this window's folders, become chat `chat_id`'s."""
    folders = window.folders()
    book.adopt(chat_id, lambda c: chats.by_id(c.chat_id) is None and deepest_root(c.path, folders) is not None)


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
    """The comments' marks in `view`, its text read once; from then on its
    buffer's edits move them."""
    if comments:
        follow_edits(view.buffer())
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


@threads.on_main
def follow_change(view: sublime.View, first_row: int, last_row: int, rows_added: int) -> None:
    """One change of rows `first_row`…`last_row` (0-based, as they were) that
    added `rows_added` rows (negative: removed some): the comments below it
    move by as many rows, unread; those on its rows are read from their regions."""
    touched: list[Comment] = []
    for comment in comments_in(view):
        if comment.state != PENDING:
            continue
        if comment.line - 1 > last_row:
            if rows_added:
                book.moved(comment.comment_id, comment.line + rows_added, comment.end_line + rows_added)
        elif comment.end_line - 1 >= first_row:
            touched.append(comment)
    follow_regions(view, touched)


@threads.on_main
def follow_regions(view: sublime.View, comments: list[Comment]) -> None:
    """Each of `comments` takes its region's lines, or is outdated (its
    region is gone); the view's text is read once for them all."""
    placed: list[tuple[Comment, sublime.Region]] = []
    for comment in comments:
        regions = view.get_regions(region_key(comment))
        if not regions or comment.state != PENDING:  # not drawn in this view, or no longer moving
            continue
        if regions[0].empty():
            book.outdated(comment.comment_id)
            hide(comment)
        else:
            placed.append((comment, regions[0]))
    if placed:
        index = LineIndex(view, max(region.end() for _, region in placed))
        for comment, region in placed:
            book.moved(comment.comment_id, index.row(region.begin()) + 1,
                       index.row(max(region.begin(), region.end() - 1)) + 1)


class CommentEditsListener(sublime_plugin.TextChangeListener):
    """The record follows each of the user's edits: a single change moves
    the comments below it by arithmetic, and reads only those it touches.
    Only a buffer with comments has one: a listener on every buffer would
    call into Python on each keystroke in every file and on each line a chat
    adds to its transcript."""

    @classmethod
    def is_applicable(cls, buffer: sublime.Buffer) -> bool:
        # Asked as a buffer is made and when it takes a file (open, Save As).
        return any(comments_in(view) for view in buffer.views())

    def attach(self, buffer: sublime.Buffer) -> None:
        super().attach(buffer)
        following[buffer.buffer_id] = self

    def detach(self) -> None:
        if self.buffer is not None and following.get(self.buffer.buffer_id) is self:
            del following[self.buffer.buffer_id]
        super().detach()

    def on_text_changed(self, changes: list[sublime.TextChange]) -> None:
        view = self.buffer.primary_view() if self.buffer is not None else None
        if view is None or not changes:
            return
        if len(changes) > 1:
            follow_regions(view, comments_in(view))
            return
        change = changes[0]
        follow_change(view, change.a.row, change.b.row, change.str.count("\n") - (change.b.row - change.a.row))


following: dict[int, CommentEditsListener] = {}  # buffer id -> its listener, while attached


def follow_edits(buffer: sublime.Buffer) -> None:
    """A listener on `buffer`, unless Sublime or an earlier mark gave it one."""
    if buffer.buffer_id not in following:
        CommentEditsListener().attach(buffer)


class CommentMarksListener(sublime_plugin.EventListener):
    """Marks in a view as it opens."""

    def on_load(self, view: sublime.View) -> None:
        show_in(view, comments_in(view))
