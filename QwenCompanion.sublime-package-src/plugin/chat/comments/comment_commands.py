"""Add Comment…, Edit Comment, Delete Comment, Comments List… and Send
Review: the user's comments on lines of their files, sent to a chat as one
round (review_send.py). A comment is made on the selection, or the caret's
line, of a view of a file inside the window's folders, or of a review's
proposal tab; it belongs to the chat whose permission that review is, else
to the window's active chat."""

from __future__ import annotations

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.comments.comments import OUTDATED, Comment, CommentRefused
from ....core.chat.comments.review_prompt import MAX_QUOTE_BYTES, MAX_QUOTED_LINES, quote_of
from ....core.context_rules import ContextOptions
from ....core.files.paths import deepest_root
from ...editor import replace_text, view_text
from ...paths import path_display
from ...quick_panel_items import panel_item
from ...reviews.review_tabs import OpenReview, reviews
from ...settings import userprefs
from ..command_bases import chat_for
from ..requests.editor_request_handler import PromptReview
from ..window_chats import WindowChat, chats
from .comment_marks import adopt_orphans, book, comments_in, hide, proposals, region_key, show
from .review_send import send_review


def inside_folders(window: sublime.Window, path: str | None) -> bool:
    return path is not None and deepest_root(path, window.folders()) is not None


def proposal_of(view: sublime.View) -> OpenReview | None:
    """The open review whose proposal tab `view` is."""
    item = reviews.for_view(view)
    return item if item is not None and item.proposed.id() == view.id() else None


def target_of(window: sublime.Window, view: sublime.View) -> tuple[str, WindowChat | None, OpenReview | None] | None:
    """What a comment in `view` is on: (the file, its chat, the review of a proposal tab); None: nothing."""
    item = proposal_of(view)
    if item is not None:
        owner = item.review.owner
        asker = chats.by_id(owner.chat_id) if isinstance(owner, PromptReview) else None
        return item.review.file_path, asker or chat_for(window), item
    path = view.file_name()
    return (path, chat_for(window), None) if path is not None and inside_folders(window, path) else None


@threads.on_main
def add_comment(window: sublime.Window, chat: WindowChat, path: str, line: int, end_line: int | None, text: str,
                view: sublime.View | None = None, review: OpenReview | None = None) -> Comment:
    """Record the comment (with its lines' text, when a view shows them) and
    mark it in every view of its file (or in the review's proposal tab)."""
    if review is None and not inside_folders(window, path):
        raise CommentRefused(f"{path} is not inside the window's folders")
    quote = None
    if view is not None and not ContextOptions.from_settings(userprefs().context_values()).excludes(path):
        last = min(end_line or line, line + MAX_QUOTED_LINES - 1)
        region = sublime.Region(view.text_point(line - 1, 0), view.line(view.text_point(last - 1, 0)).end())
        quote = quote_of(view.substr(sublime.Region(region.a, min(region.b, region.a + MAX_QUOTE_BYTES))).split("\n"))
    if review is not None:
        proposals[review.review.id] = review
    comment = book.add(chat.chat_id, path, line, end_line, text, quote, review.review.id if review else None)
    show(comment)
    return comment


@threads.on_main
def delete_comment(comment_id: int) -> None:
    hide(book.delete(comment_id))


def comment_at(view: sublime.View) -> Comment | None:
    """The comment whose mark holds the caret in `view`."""
    if not len(view.sel()):
        return None
    caret = view.sel()[0].b
    for comment in comments_in(view):
        regions = view.get_regions(region_key(comment))
        if regions and regions[0].begin() <= caret < max(regions[0].end(), regions[0].begin() + 1):
            return comment
    return None


class CommentCommand(sublime_plugin.TextCommand):
    """A command on a view of a file inside the window's folders, or on a review's proposal tab."""

    def is_enabled(self) -> bool:
        window = self.view.window()
        return window is not None and (proposal_of(self.view) is not None or inside_folders(window, self.view.file_name()))


class QwenCommentAddCommand(CommentCommand):
    """Qwen Code: Add Comment… — on the selection's lines, or the caret's line."""

    def run(self, edit: sublime.Edit) -> None:
        window = self.view.window()
        target = target_of(window, self.view) if window is not None else None
        if window is None or target is None or not len(self.view.sel()):
            return
        path, chat, review = target
        if chat is None:
            return
        selected = self.view.sel()[0]
        line = self.view.rowcol(selected.begin())[0] + 1
        end = self.view.rowcol(max(selected.begin(), selected.end() - 1) if not selected.empty() else selected.b)[0] + 1
        view = self.view

        def done(text: str) -> None:
            try:
                add_comment(window, chat, path, line, end, text, view, review)
            except CommentRefused as refused:
                window.status_message(f"Qwen Code: no comment: {refused}")

        lines = f"line {line}" if line == end else f"lines {line}-{end}"
        window.show_input_panel(f"Comment on {lines}:", "", done, None, None)


class QwenCommentEditCommand(CommentCommand):
    """Qwen Code: Edit Comment — the comment at the caret."""

    def run(self, edit: sublime.Edit) -> None:
        window, comment = self.view.window(), comment_at(self.view)
        if window is None or comment is None:
            sublime.status_message("Qwen Code: no comment at the caret")
            return

        def done(text: str) -> None:
            try:
                show(book.edit(comment.comment_id, text))
            except CommentRefused as refused:
                window.status_message(f"Qwen Code: {refused}")

        window.show_input_panel("Edit comment:", comment.text, done, None, None)


class QwenCommentDeleteCommand(CommentCommand):
    """Qwen Code: Delete Comment — the comment at the caret."""

    def run(self, edit: sublime.Edit) -> None:
        comment = comment_at(self.view)
        if comment is None:
            sublime.status_message("Qwen Code: no comment at the caret")
            return
        delete_comment(comment.comment_id)


class QwenCommentsListCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Comments List… — the active chat's comments; a pick opens one in place."""

    def run(self) -> None:
        chat = chats.get(self.window)
        if chat is not None:
            adopt_orphans(self.window, chat.chat_id)
        comments = book.of_chat(chat.chat_id) if chat is not None else []
        if not comments:
            self.window.status_message("Qwen Code: no review comments")
            return
        relative = path_display(self.window)
        items = [panel_item(" ".join(c.text.split())[:200], f"{relative(c.path)}, {c.lines()}",
                             annotation=c.state) for c in comments]

        def picked(index: int) -> None:
            if index >= 0:
                self._open(comments[index])

        self.window.show_quick_panel(items, picked, placeholder="Review comments: pick one to open it")

    def _open(self, comment: Comment) -> None:
        if comment.state == OUTDATED:
            self.window.status_message(f"Qwen Code: that comment is outdated (its lines are gone): {comment.text[:80]}")
        self.window.open_file(f"{comment.path}:{comment.line}:1", sublime.NewFileFlags.ENCODED_POSITION)


class QwenReviewSendCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Send Review — every pending comment of the chat as one prompt,
    the composer's text as its overall message."""

    def run(self, chat: int | None = None) -> None:
        target = chats.by_id(chat) if chat is not None else chats.get(self.window)
        if target is not None:
            adopt_orphans(self.window, target.chat_id)
        if target is None or not book.to_send(target.chat_id):
            self.window.status_message("Qwen Code: no review comments to send")
            return
        composer = target.composer_view
        message = ""
        if composer is not None and composer.is_valid():
            message = view_text(composer)
            if message:
                replace_text(composer, "")  # the composer's text goes as the review's overall message
        send_review(self.window, target, message)
        self.window.status_message("Qwen Code: review sent")
