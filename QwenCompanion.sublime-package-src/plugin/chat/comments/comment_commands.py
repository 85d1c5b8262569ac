"""Add Comment…, Edit Comment, Delete Comment, Comments List… and Send
Review: the user's comments on lines of their files, sent to a chat as one
round. A comment is made on the selection, or the caret's line, of a view of
a file inside the window's folders; it belongs to the window's active chat.
Send Review builds the round's prompt on a thread of ours (review_prompt.py)
and queues it as any prompt, the composer's text as its overall message."""

from __future__ import annotations

import html
from concurrent.futures import Future

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.comments.comments import OUTDATED, Comment, CommentRefused
from ....core.chat.comments.review_prompt import MAX_QUOTE_BYTES, MAX_QUOTED_LINES, build_review, quote_of
from ....core.context_rules import ContextOptions
from ....core.files.paths import deepest_root
from ...background import in_background
from ...editor import replace_text, view_text
from ...paths import path_display
from ...settings import userprefs
from ..chats import WindowChat, chats
from ..command_bases import chat_for
from .comment_marks import book, hide, region_key, show

READ_LIMIT = 64 * 1024 * 1024  # of a file read for its quoted lines
# The review text each chat waits to see taken from its queue and answered.
_awaiting: dict[int, str] = {}


def inside_folders(window: sublime.Window, path: str | None) -> bool:
    return path is not None and deepest_root(path, window.folders()) is not None


@threads.on_main
def add_comment(window: sublime.Window, chat: WindowChat, path: str, line: int, end_line: int | None, text: str,
                view: sublime.View | None = None) -> Comment:
    """Record the comment (with its lines' text, when a view shows them) and mark it in every view of its file."""
    if not inside_folders(window, path):
        raise CommentRefused(f"{path} is not inside the window's folders")
    quote = None
    if view is not None and not ContextOptions.from_settings(userprefs().context_values()).excludes(path):
        last = min(end_line or line, line + MAX_QUOTED_LINES - 1)
        region = sublime.Region(view.text_point(line - 1, 0), view.line(view.text_point(last - 1, 0)).end())
        quote = quote_of(view.substr(sublime.Region(region.a, min(region.b, region.a + MAX_QUOTE_BYTES))).split("\n"))
    comment = book.add(chat.chat_id, path, line, end_line, text, quote)
    show(comment)
    return comment


@threads.on_main
def delete_comment(comment_id: int) -> None:
    hide(book.delete(comment_id))


def comment_at(view: sublime.View) -> Comment | None:
    """The comment whose mark holds the caret in `view`."""
    path = view.file_name()
    if path is None or not len(view.sel()):
        return None
    caret = view.sel()[0].b
    for comment in book.of_path(path):
        regions = view.get_regions(region_key(comment))
        if regions and regions[0].begin() <= caret < max(regions[0].end(), regions[0].begin() + 1):
            return comment
    return None


@threads.on_main
def send_review(window: sublime.Window, chat: WindowChat, message: str = "") -> Future[int]:
    """Queue the chat's unsent comments as one prompt, built on a thread of ours; the number sent."""
    done: Future[int] = Future()
    comments = book.to_send(chat.chat_id)
    if not comments:
        done.set_result(0)
        return done
    excluded = ContextOptions.from_settings(userprefs().context_values()).excludes
    relative = path_display(window)

    def build() -> None:
        try:
            round_ = build_review(comments, message, relative, excluded, _read_lines)
            for comment_id in round_.gone:
                book.outdated(comment_id)
            if chat.conversation.send(round_.text, shown=round_.shown):
                book.mark_sent(round_.comment_ids)
                _awaiting[chat.chat_id] = round_.text
                sublime.set_timeout(lambda: [show(c) for c in book.of_chat(chat.chat_id)])
                done.set_result(len(round_.comment_ids))
            else:
                done.set_result(0)  # the queue is full: the transcript says so, the comments stay pending
        except Exception as error:  # the caller hears it
            done.set_exception(error)

    in_background(build, "review")
    return done


@threads.may_block
def _read_lines(path: str, line: int, end_line: int) -> list[str] | None:
    """Lines `line`…`end_line` of the file on disk (None: it is gone)."""
    lines: list[str] = []
    read = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            for number in range(1, end_line + 1):
                text = file.readline(READ_LIMIT - read)
                read += len(text)
                if not text or read >= READ_LIMIT:
                    break
                if number >= line:
                    lines.append(text.rstrip("\r\n")[:MAX_QUOTE_BYTES])
        return lines
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        return []


def review_turn_event(event: str, details: dict[str, object]) -> None:
    """A chat's turn ended: once its review round was taken and answered, its sent comments go."""
    chat_id = details.get("chat")
    if event != "chat_turn_ended" or not isinstance(chat_id, int) or chat_id not in _awaiting:
        return
    chat = chats.by_id(chat_id)
    if chat is not None and any(p.text == _awaiting[chat_id] for p in chat.conversation.queue.prompts()):
        return  # an earlier turn ended; the review still waits its turn
    del _awaiting[chat_id]
    gone = book.clear_sent(chat_id)
    sublime.set_timeout(lambda: [hide(comment) for comment in gone])


class CommentCommand(sublime_plugin.TextCommand):
    """A command on a view of a file inside the window's folders."""

    def is_enabled(self) -> bool:
        window = self.view.window()
        return window is not None and inside_folders(window, self.view.file_name())


class QwenCommentAddCommand(CommentCommand):
    """Qwen Code: Add Comment… — on the selection's lines, or the caret's line."""

    def run(self, edit: sublime.Edit) -> None:
        window, path = self.view.window(), self.view.file_name()
        chat = chat_for(window)
        if window is None or path is None or chat is None or not len(self.view.sel()):
            return
        selected = self.view.sel()[0]
        line = self.view.rowcol(selected.begin())[0] + 1
        end = self.view.rowcol(max(selected.begin(), selected.end() - 1) if not selected.empty() else selected.b)[0] + 1
        view = self.view

        def done(text: str) -> None:
            try:
                add_comment(window, chat, path, line, end, text, view)
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
        comments = book.of_chat(chat.chat_id) if chat is not None else []
        if not comments:
            self.window.status_message("Qwen Code: no review comments")
            return
        relative = path_display(self.window)
        items = [sublime.QuickPanelItem(" ".join(c.text.split())[:200], f"{html.escape(relative(c.path))}, {c.lines()}",
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
        if target is None or not book.to_send(target.chat_id):
            self.window.status_message("Qwen Code: no review comments to send")
            return
        composer = target.composer_view
        message = view_text(composer) if composer is not None and composer.is_valid() else ""
        if message:
            replace_text(composer, "")  # type: ignore[arg-type]
        send_review(self.window, target, message)
        self.window.status_message("Qwen Code: review sent")
