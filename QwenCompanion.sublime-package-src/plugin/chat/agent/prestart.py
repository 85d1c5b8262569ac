"""With `chat_prestart`, a window's agent and session start before its first
chat is opened: at start-up and when a window opens."""

from __future__ import annotations

import sublime

from ..window_chats import chats, prestart_enabled


def prestart(window: sublime.Window) -> None:
    """With `chat_prestart`, start the window's agent and session now (our own thread:
    the first chat imports the ACP library)."""
    if prestart_enabled() and window.folders():
        chat = chats.ensure(window)
        if chat is not None:
            chat.start()


def prestart_all() -> None:
    for window in sublime.windows():
        prestart(window)
