"""Qwen Code: Summarize Conversation (qwen's recap, as a note in the
transcript) and New Chat from Summary (a new chat whose first prompt carries
the recap, attached as `@summary`, as Zed's "New From Summary")."""

from __future__ import annotations

import contextvars
from concurrent.futures import Future

import sublime

from ....core.chat.offers.qwen_calls import recap
from ....core.json_types import JsonObject
from ...background import when_done
from ..command_bases import ActiveChatCommand
from ..transcript.chat_tabs import open_new_chat
from ..window_chats import WindowChat

SUMMARY_TOKEN = "summary"
SUMMARY_NOTE = "Summary: "


def summarize(window: sublime.Window, chat: WindowChat) -> Future[str]:
    """qwen's recap of `chat`'s conversation, noted in its transcript; the
    recap, or why there is none (not qwen, too short a conversation)."""
    asked = chat.ask_qwen("Summarize Conversation", recap)

    def noted(done: Future[str]) -> None:
        error = done.exception()
        if error is not None:
            window.status_message(f"Qwen Code: no summary: {error}")
        else:
            chat.note(SUMMARY_NOTE + done.result())

    when_done(asked, noted)
    return asked


def summary_block(text: str, chat: WindowChat) -> JsonObject:
    """The recap as the prompt's embedded resource."""
    return {"type": "resource", "resource": {"uri": f"summary:chat-{chat.chat_id}", "mimeType": "text/markdown",
                                             "text": f"A summary of an earlier conversation:\n\n{text}"}}


def new_from_summary(window: sublime.Window, chat: WindowChat) -> Future[WindowChat | None]:
    """A new chat (of `chat`'s agent) whose composer holds `@summary `, the
    recap attached to its first prompt; it opens as part of the user's command."""
    command = contextvars.copy_context()
    opened: Future[WindowChat | None] = Future()

    def open_with(done: Future[str]) -> None:
        error = done.exception()
        if error is not None:
            window.status_message(f"Qwen Code: no summary: {error}")
            opened.set_exception(error)
            return
        made = open_new_chat(window, chat.agent) if window.is_valid() else None
        composer = made.composer_view if made is not None else None
        if made is not None and composer is not None:
            made.attachments[SUMMARY_TOKEN] = summary_block(done.result(), chat)
            composer.run_command("insert", {"characters": f"@{SUMMARY_TOKEN} "})
        opened.set_result(made)

    when_done(chat.ask_qwen("New Chat from Summary", recap), lambda done: command.run(open_with, done))
    return opened


class QwenChatSummarizeCommand(ActiveChatCommand):
    """Qwen Code: Summarize Conversation — qwen's recap as a note in the transcript."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is not None:
            summarize(self.window, found)


class QwenChatNewFromSummaryCommand(ActiveChatCommand):
    """Qwen Code: New Chat from Summary — a new chat that starts from the active chat's recap."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is not None:
            new_from_summary(self.window, found)
