"""Qwen Code: Remember…, Forget… and Open Memory Files: qwen's memory of
the workspace (core/chat/offers/memory.py). A change is said in the status
bar and noted in the active chat's transcript; Open Memory Files lists the
files qwen names and opens the one picked."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import Future

import sublime
import sublime_plugin

from ....core.chat.offers.memory import PATH_NAMES, MemoryChange, forget, memory_paths, remember
from ....core.chat.offers.qwen_calls import Request
from ...background import when_done
from ...quick_panel_items import panel_item
from ..command_bases import ActiveChatCommand
from ..window_chats import WindowChat

VERBS: dict[str, tuple[str, Callable[[Request, str], Awaitable[MemoryChange]]]] = {
    "remember": ("Remember", remember), "forget": ("Forget", forget)}


def change_memory(window: sublime.Window, chat: WindowChat, verb: str, text: str) -> Future[MemoryChange]:
    """Ask qwen to remember or forget `text`; what it did, noted, or why it did not."""
    name, call = VERBS[verb]
    asked = chat.ask_qwen(f"Memory: {name}", lambda request: call(request, text))

    def said(done: Future[MemoryChange]) -> None:
        error = done.exception()
        if error is not None:
            window.status_message(f"Qwen Code: memory not changed: {error}")
            return
        change = done.result()
        touched = f" ({', '.join(change.items[:5])})" if change.items else ""
        window.status_message(f"Qwen Code: {change.summary}")
        chat.note(f"Memory ({name.lower()}): {change.summary}{touched}")

    when_done(asked, said)
    return asked


class TextInputHandler(sublime_plugin.TextInputHandler):
    def __init__(self, placeholder: str) -> None:
        self._placeholder = placeholder

    def name(self) -> str:
        return "text"

    def placeholder(self) -> str:
        return self._placeholder

    def validate(self, text: str, event: sublime_plugin.Event | None = None) -> bool:
        return bool(text.strip())


class QwenChatRememberCommand(ActiveChatCommand):
    """Qwen Code: Remember… — qwen keeps a note in its memory of this workspace."""

    verb, placeholder = "remember", "What qwen should remember (e.g. the tests run with make test)"

    def run(self, text: str, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is not None and text.strip():
            change_memory(self.window, found, self.verb, text)

    def input(self, args: dict[str, sublime_plugin.Value]) -> sublime_plugin.CommandInputHandler | None:
        return None if args.get("text") else TextInputHandler(self.placeholder)


class QwenChatForgetCommand(QwenChatRememberCommand):
    """Qwen Code: Forget… — qwen drops what its memory holds about it."""

    verb, placeholder = "forget", "What qwen should forget"


class QwenChatOpenMemoryCommand(ActiveChatCommand):
    """Qwen Code: Open Memory Files — the memory files qwen names, the one picked opened."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is None:
            return
        window, command = self.window, contextvars.copy_context()  # the pick goes on as the user's command

        def listed(done: Future[list[tuple[str, str]]]) -> None:
            error = done.exception()
            if error is not None:
                window.status_message(f"Qwen Code: {error}")
                return
            paths = done.result()
            items = [panel_item(name, path) for name, path in paths]
            window.show_quick_panel(items, lambda index: _open(window, paths, index),
                                    placeholder="Open a memory file of qwen's")

        when_done(found.ask_qwen("Open Memory Files", memory_paths),
                  lambda done: command.run(listed, done))


def _open(window: sublime.Window, paths: list[tuple[str, str]], index: int) -> None:
    if not 0 <= index < len(paths):
        return
    name, path = paths[index]
    if name == PATH_NAMES["autoMemoryDir"]:  # known by what qwen called it: no look at the disk here
        window.run_command("open_dir", {"dir": path})
    else:
        window.open_file(path)  # a memory file not written yet opens as a new file of that name
