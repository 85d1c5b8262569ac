"""Qwen Code: Session Status — one output panel showing what qwen says of
the active chat's session (context use broken down, tokens, requests, tool
calls, time, running tasks and subagents, its commands, the model and
provider: core/chat/offers/session_status.py), asked again every few seconds
while the panel is shown. The status bar's context meter names this command
(a status bar holds no link)."""

from __future__ import annotations

import time
from concurrent.futures import Future

import sublime

from ....core.chat.offers.session_status import SessionStatus, read_status, status_text
from ...background import when_done
from ...editor import replace_text
from ..command_bases import ActiveChatCommand
from ..window_chats import WindowChat, chats, window_by_id

PANEL = "qwen_session_status"
REFRESH_MS = 3000
_refreshing: dict[int, int] = {}  # window id -> the chat its panel's refresh loop follows


def read(chat: WindowChat) -> Future[SessionStatus]:
    """The chat's session status, as qwen says it now."""
    return chat.ask_qwen(
        "Session Status", lambda request: read_status(request, chat.state.model_name() or ""))


def is_status_panel(view: sublime.View) -> bool:
    window = view.window()
    panel = window.find_output_panel(PANEL) if window is not None else None
    return panel is not None and panel.id() == view.id()


def _shown(window: sublime.Window) -> bool:
    return window.is_valid() and window.active_panel() == f"output.{PANEL}"


def _fill(window: sublime.Window, text: str) -> None:
    panel = window.find_output_panel(PANEL)
    if panel is not None:
        panel.set_read_only(False)
        replace_text(panel, text)
        panel.set_read_only(True)


def _refresh(window_id: int, chat_id: int) -> None:
    """Ask again while the panel is shown and still follows this chat; then stop."""
    window, chat = window_by_id(window_id), chats.by_id(chat_id)
    if _refreshing.get(window_id) != chat_id:
        return  # the panel follows another chat now: its own loop runs
    if window is None or chat is None or not _shown(window):
        del _refreshing[window_id]
        return

    def show(done: Future[SessionStatus]) -> None:
        error = done.exception()
        if _refreshing.get(window_id) != chat_id:
            return
        updated = time.strftime("%H:%M:%S")
        _fill(window, f"Session Status: {error}\n" if error is not None else status_text(done.result(), updated))
        if error is None:
            sublime.set_timeout(lambda: _refresh(window_id, chat_id), REFRESH_MS)
        else:
            _refreshing.pop(window_id, None)

    when_done(read(chat), show)


class QwenChatSessionStatusCommand(ActiveChatCommand):
    """Qwen Code: Session Status — the active chat's session as qwen reports it, kept up to date while shown."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is None:
            return
        window = self.window
        panel = window.find_output_panel(PANEL) or window.create_output_panel(PANEL)
        panel.settings().set("word_wrap", False)
        panel.set_read_only(True)
        if not panel.size():
            _fill(window, "Session Status: asking qwen…\n")
        window.run_command("show_panel", {"panel": f"output.{PANEL}"})
        following = _refreshing.get(window.id())
        _refreshing[window.id()] = found.chat_id
        if following != found.chat_id:  # else the loop running now goes on
            _refresh(window.id(), found.chat_id)
