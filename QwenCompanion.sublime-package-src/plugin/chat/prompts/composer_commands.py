"""The composer's keys: Enter sends what it holds (with the editor's context
and the attachments it names), Up and Down step through earlier prompts."""

from __future__ import annotations

import re

import sublime

from ....core.chat.prompts.prompt_queue import QUEUE_FULL
from ...editor import view_text
from ..command_bases import ChatViewCommand
from . import prompt_edits
from .prompt_context import active_context
from .slash_commands import run_local

ATTACHMENT = re.compile(r"@(\S+)")


class QwenChatSendCommand(ChatViewCommand):
    """Enter in the composer: send what it holds (queued while the agent works) to its chat."""

    def run(self, edit: sublime.Edit, text: str | None = None) -> None:
        window = self.view.window() or sublime.active_window()
        chat = self.view_chat()
        if chat is None:
            return
        body = view_text(self.view) if text is None else text
        if not body.strip():
            return
        if chat.queue.full():  # refused before the composer is emptied: the words stay there
            window.status_message(f"Qwen Code: {QUEUE_FULL}")
            return
        if text is None:
            self.view.erase(edit, sublime.Region(0, self.view.size()))
        chat.history_index = len(chat.history) + 1
        local = re.fullmatch(r"\s*/(\w+)\s*", body)
        if local and run_local(chat, local[1]):
            chat.history.append(body)
            return
        blocks = active_context(window) if chat.worktree is None else []  # the main tree's text stays home
        attached = {token: block for token in ATTACHMENT.findall(body)
                    if (block := chat.attachments.pop(token, None)) is not None}
        blocks += attached.values()
        edited = prompt_edits.take(chat)
        if edited is None:
            chat.send(body, blocks, attached=attached)
        else:  # Edit and Resend: the text replaces that prompt and everything after it
            window.run_command("qwen_chat_rewind", {"turn": edited, "text": body})


class QwenChatHistoryCommand(ChatViewCommand):
    """Up/Down in the composer: earlier and later prompts."""

    def run(self, edit: sublime.Edit, step: int = -1) -> None:
        chat = self.view_chat()
        if chat is None or not chat.history:
            return
        history = chat.history
        index = max(0, min(len(history), min(chat.history_index, len(history)) + step))
        chat.history_index = index
        text = history[index] if index < len(history) else ""
        self.view.replace(edit, sublime.Region(0, self.view.size()), text)
        end = self.view.size()
        self.view.sel().clear()
        self.view.sel().add(sublime.Region(end, end))
