"""What a chat command finds before it runs, found in one place (as
sublimelsp's `LspTextCommand` finds its session): the window's chat, made on
first use; the window's active chat, or the chat an argument names; the chat
whose tab a text command runs in; the worktree of a worktree chat. A command
that needs a chat that exists is enabled only while there is one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sublime
import sublime_plugin

from .transcript.chat_views import open_chat

if TYPE_CHECKING:
    from ...core.worktrees.worktrees import Worktree
from .window_chats import WindowChat, chat_of_view, chats


def chat_for(window: sublime.Window | None, *, show: bool = False) -> WindowChat | None:
    """The window's active chat, made now if it has none, its tabs shown with `show`."""
    if window is None:
        return None
    chat = chats.ensure(window)
    if chat is None:
        sublime.status_message("Qwen Code: the chat is not available while the package is unloading")
    elif show:
        open_chat(window, chat)
    return chat


def chat_in_window(window: sublime.Window, chat_id: int | None) -> WindowChat | None:
    """Chat `chat_id` if it is one of the window's, else (None) the window's active chat."""
    found = chats.by_id(chat_id) if chat_id is not None else chats.get(window)
    return found if found is not None and found.window_id == window.id() else None


class WindowChatCommand(sublime_plugin.WindowCommand):
    """A command on the window's chat, made on first use: always enabled."""

    def window_chat(self, *, show: bool = False) -> WindowChat | None:
        return chat_for(self.window, show=show)


class ActiveChatCommand(sublime_plugin.WindowCommand):
    """A command on the window's active chat, or on chat `chat` (an id) of this
    window when the command takes that argument: enabled while it exists."""

    def active_chat(self, chat_id: int | None = None) -> WindowChat | None:
        return chat_in_window(self.window, chat_id)

    def is_enabled(self, chat: int | None = None, **_: Any) -> bool:
        return self.active_chat(chat) is not None


class ChatViewCommand(sublime_plugin.TextCommand):
    """A command run in a chat's transcript or composer, on that chat, active or
    not: enabled only there."""

    def view_chat(self) -> WindowChat | None:
        return chat_of_view(self.view)

    def is_enabled(self, **_: Any) -> bool:
        return self.view_chat() is not None


class WorktreeChatCommand(sublime_plugin.WindowCommand):
    """A command on the worktree of the window's active chat, or of chat `chat`
    (an id): enabled while there is one. With `after_close`, chat `chat`'s
    worktree is found also once that chat closed (its changes stay to review)."""

    after_close = True

    def chat_worktree(self, chat_id: int | None = None) -> Worktree | None:
        if chat_id is not None and self.after_close:
            return chats.worktree_of(chat_id)
        found = chat_in_window(self.window, chat_id)
        return found.worktree if found is not None else None

    def is_enabled(self, chat: int | None = None, **_: Any) -> bool:
        return self.chat_worktree(chat) is not None
