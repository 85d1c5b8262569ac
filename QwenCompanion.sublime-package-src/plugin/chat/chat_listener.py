"""The chat's part of Sublime's events: the keymap's context for which tab of
a chat a view is, the composer's completions, the code view the user was in,
and a window's agents started with it and ended with it."""

from __future__ import annotations

import re
from typing import Any

import sublime
import sublime_plugin

from ..background import in_background
from .agent.prestart import prestart
from .agent.serve_daemon import forget_stop_links
from .prompts.mentions import mention_completions
from .prompts.prompt_context import view_activated, window_closed
from .prompts.slash_commands import slash_completions
from .transcript.chat_views import refresh_status, transcript_closed
from .transcript.plan_view import redraw_pinned_plan
from .window_chats import chat_of_view, chat_role, chats

# The keymap's context for "which tab of a chat is this" ("transcript", "composer", null):
# answered from the package's record, not `setting.qwen_chat.view`, which a project can set.
CHAT_VIEW_CONTEXT = "qwen_chat.view"


class ChatListener(sublime_plugin.EventListener):
    def on_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is None:
            return
        view_activated(view, window)
        if chats.get(window) is not None:
            refresh_status(window.id())

    def on_modified(self, view: sublime.View) -> None:
        if chat_role(view) == "composer":
            chat = chat_of_view(view)
            if chat is not None:
                redraw_pinned_plan(chat)  # under the draft's new end (see plan_view.py)

    def on_query_context(self, view: sublime.View, key: str, operator: int, operand: Any, match_all: bool) -> bool | None:
        if key == CHAT_VIEW_CONTEXT:  # the keys of the chat's tabs, known from our own record
            role = chat_role(view)
            if operator == sublime.QueryOperator.EQUAL:
                return bool(role == operand)
            return bool(role != operand) if operator == sublime.QueryOperator.NOT_EQUAL else None
        if key not in ("qwen_chat.caret_on_first_line", "qwen_chat.caret_on_last_line"):
            return None
        if chat_role(view) != "composer":
            return False
        selection = view.sel()
        if len(selection) != 1:
            return False
        row = view.rowcol(selection[0].b)[0]
        last_row = view.rowcol(view.size())[0]
        value = row == 0 if key.endswith("first_line") else row == last_row
        return value == bool(operand) if operator == sublime.QueryOperator.EQUAL else value != bool(operand)

    def on_query_completions(
        self, view: sublime.View, prefix: str, locations: list[int]
    ) -> sublime.CompletionList | None:
        if chat_role(view) != "composer" or not locations:
            return None
        # Only our slash commands: no words of the buffer, no .sublime-completions.
        only_ours = sublime.AutoCompleteFlags.INHIBIT_WORD_COMPLETIONS | sublime.AutoCompleteFlags.INHIBIT_EXPLICIT_COMPLETIONS
        mentions = mention_completions(view, locations[0])
        if mentions is not None:
            return sublime.CompletionList(mentions, only_ours)
        line = view.substr(sublime.Region(view.line(locations[0]).begin(), locations[0]))
        if not re.fullmatch(r"/\w*", line):
            return sublime.CompletionList([], only_ours)
        # The composer typed in, whichever chat is active.
        return sublime.CompletionList(slash_completions(chat_of_view(view)), only_ours)

    def on_close(self, view: sublime.View) -> None:
        transcript_closed(view.id())
        forget_stop_links(view.id())  # a Diagnose report's Stop links

    def on_new_window(self, window: sublime.Window) -> None:
        in_background(lambda: prestart(window), "prestart")

    def on_pre_close_window(self, window: sublime.Window) -> None:
        window_id = window.id()
        window_closed(window_id)
        sublime.set_timeout_async(lambda: chats.forget_window(window_id))

    def on_exit(self) -> None:
        chats.stop_all()
