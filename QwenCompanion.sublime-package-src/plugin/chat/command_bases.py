"""What a chat command finds before it runs, found in one place (as
sublimelsp's `LspTextCommand` finds its session): the window's chat, made on
first use; the window's active chat, or the chat an argument names; the chat
whose tab a text command runs in. A command that needs a chat that exists is
enabled only while there is one."""

from __future__ import annotations

from typing import Any

import sublime
import sublime_plugin

from .transcript.chat_views import open_chat
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


class WindowChatCommand(sublime_plugin.WindowCommand):
    """A command on the window's chat, made on first use: always enabled."""

    def window_chat(self, *, show: bool = False) -> WindowChat | None:
        return chat_for(self.window, show=show)


class ActiveChatCommand(sublime_plugin.WindowCommand):
    """A command on the window's active chat, or on chat `chat` (an id) of this
    window when the command takes that argument: enabled while it exists."""

    def active_chat(self, chat_id: int | None = None) -> WindowChat | None:
        found = chats.by_id(chat_id) if chat_id is not None else chats.get(self.window)
        return found if found is not None and found.window_id == self.window.id() else None

    def is_enabled(self, chat: int | None = None, **_: Any) -> bool:
        return self.active_chat(chat) is not None


class ChatViewCommand(sublime_plugin.TextCommand):
    """A command run in a chat's transcript or composer, on that chat, active or
    not: enabled only there."""

    def view_chat(self) -> WindowChat | None:
        return chat_of_view(self.view)

    def is_enabled(self, **_: Any) -> bool:
        return self.view_chat() is not None
