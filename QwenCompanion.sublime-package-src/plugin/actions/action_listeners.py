"""A closing window or a quitting Sublime ends the actions it runs."""

from __future__ import annotations

import sublime
import sublime_plugin

from .answer import is_answer_view, recent_answers
from .jobs import actions

# The keymap's context for the answer view's keys (Esc, [ and ]): answered from
# the package's record, not `setting.qwen_actions.answer`, which a project can set.
ANSWER_CONTEXT = "qwen_actions.answer"


class ActionsListener(sublime_plugin.EventListener):
    def on_query_context(
        self, view: sublime.View, key: str, operator: sublime.QueryOperator, operand: sublime.Value, match_all: bool
    ) -> bool | None:
        if key != ANSWER_CONTEXT:
            return None
        if operator == sublime.QueryOperator.EQUAL:
            return is_answer_view(view) == operand
        return is_answer_view(view) != operand if operator == sublime.QueryOperator.NOT_EQUAL else None

    def on_pre_close_window(self, window: sublime.Window) -> None:
        actions.forget_window(window.id())
        recent_answers.pop(window.id(), None)

    def on_exit(self) -> None:
        actions.stop_all()
