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

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.comments.comments import PENDING, SENT, Comment, CommentBook
from ...reviews.review_tabs import OpenReview, reviews

KEY_PREFIX = "qwen_comment_"
ANNOTATION_CHARS = 120  # of a comment, in its annotation
book = CommentBook()
proposals: dict[int, OpenReview] = {}  # review id -> its tabs, for the comments made in its proposal tab


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


@threads.on_main
def show(comment: Comment, views: list[sublime.View] | None = None) -> None:
    """The comment's mark, at its lines, in every view of its file (or in `views`)."""
    for view in views if views is not None else views_for(comment):
        if comment.state not in (PENDING, SENT):
            view.erase_regions(region_key(comment))
            continue
        begin = view.text_point(comment.line - 1, 0)
        end = view.full_line(view.text_point(comment.end_line - 1, 0)).end()
        text = " ".join(comment.text.split())
        shown = text if len(text) <= ANNOTATION_CHARS else text[:ANNOTATION_CHARS - 1] + "…"
        label = "sent" if comment.state == SENT else "comment"
        view.add_regions(region_key(comment), [sublime.Region(begin, end)], "region.bluish", "bookmark",
                         sublime.RegionFlags.DRAW_NO_FILL | sublime.RegionFlags.DRAW_NO_OUTLINE,
                         [f"<b>{label}:</b> {html.escape(shown)}"], "#6699cc")


@threads.on_main
def hide(comment: Comment) -> None:
    for view in views_for(comment):
        view.erase_regions(region_key(comment))


@threads.on_main
def follow_edits(view: sublime.View) -> None:
    """After an edit: each comment of the view's file takes its region's lines, or is outdated."""
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
            continue
        first = view.rowcol(region.begin())[0] + 1
        last = view.rowcol(max(region.begin(), region.end() - 1))[0] + 1
        book.moved(comment.comment_id, first, last)


class CommentMarksListener(sublime_plugin.EventListener):
    """Marks in a view as it opens; the record follows each edit."""

    def on_load(self, view: sublime.View) -> None:
        for comment in comments_in(view):
            show(comment, [view])

    def on_modified(self, view: sublime.View) -> None:
        if view.file_name() is not None or reviews.is_review_view(view):
            follow_edits(view)

