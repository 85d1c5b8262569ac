"""The chat's two views: the read-only transcript and the composer below it,
in a column on the right of the window's layout."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import sublime
import sublime_plugin

from ..log import SETTINGS_FILE
from .chats import WindowChat, chats, window_by_id

if TYPE_CHECKING:
    from sublime_types import WindowLayout

VIEW_SETTING = "qwen_chat.view"  # "transcript" | "composer"
WINDOW_SETTING = "qwen_chat.window"
SYNTAX = "Packages/QwenCompanion/chat/QwenChat.sublime-syntax"
STATUS_KEY = "qwen_chat"
TRANSCRIPT_NAME = "Qwen Chat"
COMPOSER_NAME = "Qwen Chat: message"
# Code on the left; transcript over composer on the right.
CHAT_LAYOUT: WindowLayout = {
    "cols": [0.0, 0.6, 1.0],
    "rows": [0.0, 0.78, 1.0],
    "cells": [[0, 0, 1, 2], [1, 0, 2, 1], [1, 1, 2, 2]],
}


def _new_chat_view(window: sublime.Window, group: int, name: str, role: str) -> sublime.View:
    """A scratch view of the chat's syntax at the end of `group`."""
    view = window.new_file(syntax=SYNTAX)
    window.set_view_index(view, group, window.num_views_in_group(group))
    view.set_scratch(True)
    view.set_name(name)
    _view_settings(view, role, window.id())
    return view


def _view_settings(view: sublime.View, role: str, window_id: int) -> None:
    settings = view.settings()
    settings.update({
        VIEW_SETTING: role,
        WINDOW_SETTING: window_id,
        "word_wrap": True,
        "gutter": False,
        "line_numbers": False,
        "draw_indent_guides": False,
        "scroll_past_end": False,
        "spell_check": False,
        "auto_complete_selector": "text",
        "is_widget": False,
    })


def chat_views(chat: WindowChat) -> tuple[sublime.View | None, sublime.View | None]:
    transcript = chat.transcript_view if chat.transcript_view and chat.transcript_view.is_valid() else None
    composer = chat.composer_view if chat.composer_view and chat.composer_view.is_valid() else None
    return transcript, composer


def open_chat(window: sublime.Window, chat: WindowChat, focus: bool = True) -> sublime.View:
    """Show the chat's views (made again if closed) and focus the composer; with
    `focus` False, the keys stay with the view that has them (a permission
    request must not take the keys the user is typing with)."""
    transcript, composer = chat_views(chat)
    typing_in = window.active_view()
    if transcript is None or composer is None:
        if window.num_groups() == 1:
            window.set_layout(CHAT_LAYOUT)
        transcript_group = 1 if window.num_groups() >= 3 else window.num_groups() - 1
        composer_group = 2 if window.num_groups() >= 3 else transcript_group
        if transcript is None:
            transcript = _new_chat_view(window, transcript_group, TRANSCRIPT_NAME, "transcript")
            transcript.set_read_only(True)
            chat.fill(transcript)
        if composer is None:
            composer = _new_chat_view(window, composer_group, COMPOSER_NAME, "composer")
            chat.composer_view = composer
    window.focus_view(transcript)
    if focus:
        window.focus_view(composer)
    elif typing_in is not None and typing_in.is_valid():
        window.focus_view(typing_in)
    refresh_status(window.id())
    return composer


def status_text(chat: WindowChat) -> str:
    state = chat.chat.state
    if state.agent in ("stopped",) and state.session_id is None:
        return ""
    parts = ["Chat"]
    mode = next((m.name for m in state.modes if m.id == state.mode_id), state.mode_id)
    model = next((m.name for m in state.models if m.id == state.model_id), state.model_id)
    if mode:
        parts.append(mode)
    if model:
        parts.append(model)
    if state.context_used is not None and state.context_size:
        parts.append(f"{min(100, round(100 * state.context_used / state.context_size))}% context")
    if state.agent == "busy":
        parts.append("working…")
    elif state.agent in ("exited", "starting"):
        parts.append(state.agent)
    if state.queued:
        parts.append(f"{state.queued} queued")
    return " · ".join(parts)


def refresh_status(window_id: int) -> None:
    """The chat's mode, model and context use on every view of the window."""
    window = window_by_id(window_id)
    chat = chats.get(window)
    if window is None or chat is None:
        return
    text = status_text(chat) if sublime.load_settings(SETTINGS_FILE).get("status_bar", True) else ""
    for view in window.views():
        if text:
            view.set_status(STATUS_KEY, text)
        else:
            view.erase_status(STATUS_KEY)


chats.status_listeners.append(refresh_status)


def at_end(view: sublime.View) -> bool:
    selection = view.sel()
    return len(selection) == 0 or (len(selection) == 1 and selection[0].empty() and selection[0].b >= view.size())


class QwenChatApplyCommand(sublime_plugin.TextCommand):
    """Applies a batch of transcript edits: [offset, erase, text] each. The
    view follows new text only while its caret is at the end."""

    def run(self, edit: sublime.Edit, edits: list[list[Any]]) -> None:
        view = self.view
        follow = at_end(view)
        view.set_read_only(False)
        try:
            for offset, erase, text in edits:
                region = sublime.Region(int(offset), int(offset) + int(erase))
                if erase:
                    view.replace(edit, region, str(text))
                else:
                    view.insert(edit, int(offset), str(text))
        finally:
            view.set_read_only(True)
        if follow:
            end = view.size()
            view.sel().clear()
            view.sel().add(sublime.Region(end, end))
            view.show(end, False)


def composer_text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def uptime(started_at: float) -> str:
    seconds = int(time.time() - started_at) if started_at else 0
    return f"{seconds // 3600}h {seconds // 60 % 60}m {seconds % 60}s"
