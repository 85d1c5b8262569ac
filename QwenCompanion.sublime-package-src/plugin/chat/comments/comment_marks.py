"""Where review comments show: one region a comment in every view of its
file, with the comment as an annotation (it never shifts the code). The
package's record (`book`, core/chat/comments/comments.py) is the truth;
Sublime moves the regions with the user's edits, and each edit moves the
record after them. A comment whose region is gone (its lines deleted) is
outdated: its mark goes, its record keeps the text and the quote."""

from __future__ import annotations

import html

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.comments.comments import PENDING, SENT, Comment, CommentBook

KEY_PREFIX = "qwen_comment_"
ANNOTATION_CHARS = 120  # of a comment, in its annotation
book = CommentBook()


def region_key(comment: Comment) -> str:
    return f"{KEY_PREFIX}{comment.comment_id}"


def views_of(path: str) -> list[sublime.View]:
    """Every view of the file `path`, in every window."""
    return [view for window in sublime.windows() for view in window.views() if view.file_name() == path]


@threads.on_main
def show(comment: Comment, views: list[sublime.View] | None = None) -> None:
    """The comment's mark, at its lines, in every view of its file (or in `views`)."""
    for view in views if views is not None else views_of(comment.path):
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
    for view in views_of(comment.path):
        view.erase_regions(region_key(comment))


@threads.on_main
def follow_edits(view: sublime.View) -> None:
    """After an edit: each comment of the view's file takes its region's lines, or is outdated."""
    path = view.file_name()
    if path is None:
        return
    for comment in book.of_path(path):
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
        path = view.file_name()
        if path is not None:
            for comment in book.of_path(path):
                show(comment, [view])

    def on_modified(self, view: sublime.View) -> None:
        path = view.file_name()
        if path is not None and book.of_path(path):
            follow_edits(view)

