"""Rewind to Here and Edit and Resend, on any earlier prompt of the transcript.

As in Zed's and Claude Code's panels: Rewind to Here drops the prompt and
everything after it (the composer is left alone: nothing is resent); Edit and
Resend puts the prompt's text into the composer, and sending it replaces that
prompt and everything after it. Both act on the prompt at the transcript's
caret (the palette), or under the mouse (the transcript's context menu);
files the agent changed since come back (rewind_files.py). Rewind to Here
asks what goes back: the files and the conversation, the files only (the
conversation stays; the next prompt tells the model which files were put
back) or the conversation only (the files stay as they are)."""

from __future__ import annotations

import re
from concurrent.futures import Future
from typing import Any

import sublime

from ....core import threads
from ....core.chat.history.rewind import RewindOutcome, RewindRefused
from ...editor import replace_text
from ...paths import path_display
from ...quick_panel_items import panel_item
from ..command_bases import ActiveChatCommand, ChatViewCommand
from ..prompts import prompt_edits
from ..transcript.chat_views import open_chat
from ..window_chats import WindowChat, chat_role
from .rewind_files import EditorRestorer

TURN_OF_BLOCK = re.compile(r"t(\d+)\.")
# Rewind to Here's choices, in the order its quick panel lists them.
SCOPE_CHOICES = (
    ("all", "Files and Conversation", "the prompt and what followed leave the chat; the files go back"),
    ("files", "Files Only", "the files go back; the conversation stays, and the next prompt names the files"),
    ("conversation", "Conversation Only", "the prompt and what followed leave the chat; the files stay as they are"),
)


def rewind(window: sublime.Window, chat: WindowChat, index: int, text: str | None,
           agent_may_restore: bool = True, scope: str = "all") -> Future[RewindOutcome]:
    """Rewind `chat` to before its prompt `index` (with `text`: Edit and
    Resend; `scope`: what goes back, rewind.py); the outcome is noted in the
    transcript when it comes. Without `agent_may_restore`, qwen's own history
    restores no file."""
    prompt_edits.take(chat)
    future = chat.core.calls.rewind(index, text, EditorRestorer(window, chat, agent_may_restore), scope)
    display = path_display(window)

    def done(finished: Future[RewindOutcome]) -> None:
        if finished.cancelled():  # the chat's thread stopped
            return
        error = finished.exception()
        if error is not None:
            for_now = isinstance(error, RewindRefused) and error.for_now
            sublime.set_timeout(lambda: _refused(window, chat, index, text, f"Qwen Code: cannot rewind: {error}",
                                                 for_now))
            return
        outcome = finished.result()
        files = ", ".join(display(path) for path in outcome.files_restored) or "none"
        what = {"files": "Files put back to", "conversation": "Conversation rewound to"}.get(scope, "Rewound to")
        lines = [f"{what} before prompt {index + 1}" + ("" if scope == "conversation" else f"; files restored: {files}")]
        lines += [f"not restored: {why}" for why in outcome.not_restored]
        chat.note("\n> ".join(lines))

    future.add_done_callback(done)
    return future


def rewind_asking(window: sublime.Window, chat: WindowChat, index: int, text: str | None, scope: str = "all") -> None:
    """`rewind`, after asking whether qwen's own history may restore files on
    disk when some of the prompts rewound came before Sublime restarted (the
    package has no record of them, and qwen writes over any change since)."""
    if scope != "all":  # qwen's own history restores files only with the conversation
        rewind(window, chat, index, text, False, scope)
        return
    try:
        since = chat.prompts.get(index).changes_turn
    except RewindRefused:
        rewind(window, chat, index, text)  # it says why
        return
    if EditorRestorer(window, chat).covers(since):
        rewind(window, chat, index, text, True)
        return
    # Two real choices and a way out: Cancel (or closing the dialog) changes nothing.
    answer = sublime.yes_no_cancel_dialog(
        "Qwen Code: some of the prompts you rewind came before Sublime restarted, so the editor kept no copy of "
        "the files they changed.\n\nLet qwen restore those files from its own history? It writes them on disk "
        "over any change made since.", "Restore Them Too", "Rewind Without Them", "Rewind")
    if answer == sublime.DialogResult.CANCEL:
        _refused(window, chat, index, text, "Qwen Code: rewind cancelled; nothing changed", True)
        return
    rewind(window, chat, index, text, answer == sublime.DialogResult.YES)


@threads.on_main
def _refused(window: sublime.Window, chat: WindowChat, index: int, text: str | None, message: str,
             for_now: bool) -> None:
    """Say why; an edited prompt goes back into an empty composer
    (no typing is lost), still replacing its prompt when sent if the refusal
    was for now (a turn ran), else as a prompt of its own."""
    window.status_message(message)
    composer = chat.composer_view
    if text is not None and composer is not None and composer.is_valid() and composer.size() == 0:
        replace_text(composer, text)
        if for_now:
            prompt_edits.begin(chat, index)


def prompt_at(chat: WindowChat, point: int) -> int | None:
    """The index of the prompt whose turn holds `point` of the transcript."""
    block = chat.transcript.block_at(point)
    match = TURN_OF_BLOCK.match(block or "")
    return chat.prompts.index_at_turn(int(match[1])) if match else None


def prompt_picked(window: sublime.Window, chat: WindowChat | None, point: int | None) -> int | None:
    """The index of the prompt at `point` of the chat's transcript (None: at
    its caret); None, said in the status bar, when there is none."""
    view = chat.transcript_view if chat is not None else None
    if chat is None or view is None or not view.is_valid():
        window.status_message("Qwen Code: the chat has no transcript")
        return None
    if point is None:
        point = view.sel()[0].b if len(view.sel()) else view.size()
    index = prompt_at(chat, point)
    if index is None:
        window.status_message("Qwen Code: no prompt of yours at the caret (put it on a prompt of the transcript)")
    return index


def _act(window: sublime.Window, chat: WindowChat | None, point: int | None, edit: bool) -> None:
    index = prompt_picked(window, chat, point)
    if chat is None or index is None:
        return
    if edit:
        _edit_in_composer(window, chat, index)
    else:
        _choose_scope(window, chat, index)


def _choose_scope(window: sublime.Window, chat: WindowChat, index: int) -> None:
    """Rewind to Here's three choices (the user's command: its panel is theirs)."""
    def picked(choice: int) -> None:
        if choice >= 0:
            rewind_asking(window, chat, index, None, SCOPE_CHOICES[choice][0])

    items = [panel_item(f"Rewind {name}", details) for _, name, details in SCOPE_CHOICES]
    window.show_quick_panel(items, picked, placeholder=f"Rewind to before prompt {index + 1}: what goes back?")


def _edit_in_composer(window: sublime.Window, chat: WindowChat, index: int) -> None:
    """The prompt's text into the composer, ready to edit and send."""
    composer = open_chat(window, chat)
    prompt_edits.begin(chat, index)
    replace_text(composer, chat.prompts.get(index).text)
    composer.sel().clear()
    composer.sel().add(sublime.Region(composer.size()))
    window.status_message(f"Qwen Code: editing prompt {index + 1}; sending it replaces it and everything after")


class QwenChatRewindCommand(ActiveChatCommand):
    """Qwen Code: Rewind Chat to Here — to before the prompt at the transcript's
    caret (or prompt `turn`, 0-based, with `scope`: "all", "files" or
    "conversation"); with `text`, Edit and Resend at once."""

    def run(self, turn: int | None = None, text: str | None = None, scope: str = "all") -> None:
        chat = self.active_chat()
        if turn is None or chat is None:
            _act(self.window, chat, None, edit=False)
        else:
            rewind_asking(self.window, chat, turn, text, scope)


class QwenChatEditPromptCommand(ActiveChatCommand):
    """Qwen Code: Edit and Resend Prompt — the prompt at the transcript's caret into the composer."""

    def run(self) -> None:
        _act(self.window, self.active_chat(), None, edit=True)


class QwenChatPromptMenuCommand(ChatViewCommand):
    """The transcript's context menu: Edit and Resend / Rewind to Here on the
    prompt under the mouse."""

    def run(self, edit: sublime.Edit, resend: bool = False, event: dict[str, Any] | None = None) -> None:
        window = self.view.window()
        if window is None:
            return
        point = self.view.window_to_text((event["x"], event["y"])) if event else None
        _act(window, self.view_chat(), point, edit=resend)  # this transcript's chat, active or not

    def want_event(self) -> bool:
        return True

    def is_visible(self, resend: bool = False, event: dict[str, Any] | None = None) -> bool:
        return chat_role(self.view) == "transcript"
