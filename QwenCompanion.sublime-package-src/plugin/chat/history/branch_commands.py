"""Branch from Here: on a prompt of the transcript (the one at the caret, or
under the mouse in the transcript's context menu), a new chat tab goes on
from the end of that prompt's turn, its conversation shown; the original
chat and its session are left as they are (core/chat/history/branch.py). A worktree
chat's branch is a chat in the same worktree, confined to it like the original."""

from __future__ import annotations

import contextvars
from concurrent.futures import Future
from typing import Any

import sublime

from ....core.chat.history.branch import Branch
from ...background import when_done
from ..command_bases import ActiveChatCommand, ChatViewCommand
from ..window_chats import WindowChat, chat_role
from .history_commands import resume_in_new_chat
from .rewind_commands import prompt_picked


def branch(window: sublime.Window, chat: WindowChat, index: int) -> Future[WindowChat | None]:
    """Branch `chat` after its prompt `index` (0-based): the new chat once it is
    opened (None: the window or the package went away), or the reason it was refused."""
    opened: Future[WindowChat | None] = Future()
    command = contextvars.copy_context()  # the new tab comes forward as part of the user's command

    def made(done: Future[Branch]) -> None:
        error = done.exception()
        if error is not None:
            window.status_message(f"Qwen Code: cannot branch: {error}")
            opened.set_exception(error)
            return
        made_branch = done.result()
        if not window.is_valid():
            opened.set_result(None)
            return
        title = made_branch.title or f"{chat.custom_title or 'Chat'} (branch)"
        # qwen made the branch in the chat's folder: a worktree chat's branch works in the same worktree.
        opened.set_result(resume_in_new_chat(window, made_branch.session_id, title, None, chat.agent, replay=True,
                                             worktree=chat.worktree))

    when_done(chat.core.calls.branch(index), lambda done: command.run(made, done))
    return opened


def _branch_at(window: sublime.Window, chat: WindowChat | None, point: int | None) -> None:
    index = prompt_picked(window, chat, point)
    if chat is not None and index is not None:
        branch(window, chat, index)


class QwenChatBranchCommand(ActiveChatCommand):
    """Qwen Code: Branch Chat from Here — a new chat going on from the turn of
    the prompt at the transcript's caret (or of prompt `turn`, 0-based)."""

    def run(self, turn: int | None = None, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if turn is None or found is None:
            _branch_at(self.window, found, None)
        else:
            branch(self.window, found, turn)


class QwenChatBranchMenuCommand(ChatViewCommand):
    """The transcript's context menu: Branch from Here on the prompt under the mouse."""

    def run(self, edit: sublime.Edit, event: dict[str, Any] | None = None) -> None:
        window = self.view.window()
        if window is None:
            return
        point = self.view.window_to_text((event["x"], event["y"])) if event else None
        _branch_at(window, self.view_chat(), point)  # this transcript's chat, active or not

    def want_event(self) -> bool:
        return True

    def is_visible(self, event: dict[str, Any] | None = None) -> bool:
        return chat_role(self.view) == "transcript"
