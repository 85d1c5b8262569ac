"""qwen's follow-up suggestion (`qwen/notify/session/prompt-suggestion`) as
dimmed ghost text in the chat's empty composer: one line of at most 500
characters, gone as soon as the user types, never sent unless accepted.
→ (Right) in the empty composer accepts it (fills the composer with it):
Right moves nothing in an empty composer, so it takes no key from
completions, snippets or the caret; the keymap guards it as the Esc bindings
are (no overlay, popup, panel, completion list or snippet field)."""

from __future__ import annotations

import html
from typing import Any

import sublime
import sublime_plugin

from ..command_bases import ChatViewCommand
from ..window_chats import WindowChat, chat_of_view, chat_role, chats, window_by_id

PHANTOM_KEY = "qwen_chat_suggestion"
SUGGESTION_CONTEXT = "qwen_chat.suggestion_shown"
GHOST_HTML = '<body id="qwen-suggestion"><span style="color: color(var(--foreground) alpha(0.45));">{} (→ accepts)</span></body>'


def shown_suggestion(chat: WindowChat) -> str | None:
    """The suggestion the chat's composer shows: while it is empty and the user has not typed over it."""
    composer = chat.composer_view
    suggestion = chat.state.suggestion
    if suggestion is None or composer is None or not composer.is_valid() or composer.size():
        return None
    return None if chat.dismissed_suggestion == suggestion else suggestion


def show(chat: WindowChat) -> None:
    composer = chat.composer_view
    if composer is None or not composer.is_valid():
        return
    composer.erase_phantoms(PHANTOM_KEY)
    text = shown_suggestion(chat)
    if text is not None:
        composer.add_phantom(PHANTOM_KEY, sublime.Region(0), GHOST_HTML.format(html.escape(text)),
                             sublime.PhantomLayout.INLINE)


def show_suggestions(window_id: int) -> None:
    """A chat's state changed: each composer of the window shows its chat's suggestion, or none."""
    for chat in chats.of_window(window_by_id(window_id)):
        show(chat)


class SuggestionListener(sublime_plugin.EventListener):
    def on_modified(self, view: sublime.View) -> None:
        chat = chat_of_view(view) if view.size() else None
        if chat is None or chat_role(view) != "composer" or chat.state.suggestion is None:
            return
        chat.dismissed_suggestion = chat.state.suggestion  # typed over: it goes for good
        view.erase_phantoms(PHANTOM_KEY)

    def on_query_context(self, view: sublime.View, key: str, operator: int, operand: Any, match_all: bool) -> bool | None:
        if key != SUGGESTION_CONTEXT:
            return None
        chat = chat_of_view(view) if chat_role(view) == "composer" else None
        value = chat is not None and shown_suggestion(chat) is not None
        return value == bool(operand) if operator == sublime.QueryOperator.EQUAL else value != bool(operand)


def accept(chat: WindowChat) -> str | None:
    """Put the shown suggestion into the composer (not sent); the text, or None when none is shown."""
    text = shown_suggestion(chat)
    composer = chat.composer_view
    if text is None or composer is None:
        return None
    composer.run_command("insert", {"characters": text})
    return text


class QwenChatAcceptSuggestionCommand(ChatViewCommand):
    """→ in the empty composer: qwen's follow-up suggestion into the composer."""

    def run(self, edit: sublime.Edit) -> None:
        chat = self.view_chat()
        if chat is not None:
            accept(chat)
