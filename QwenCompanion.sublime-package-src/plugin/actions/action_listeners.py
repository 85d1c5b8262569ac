"""A closing window or a quitting Sublime ends the actions it runs."""

from __future__ import annotations

import sublime
import sublime_plugin

from .answer import histories
from .jobs import actions


class ActionsListener(sublime_plugin.EventListener):
    def on_pre_close_window(self, window: sublime.Window) -> None:
        actions.forget_window(window.id())
        histories.pop(window.id(), None)

    def on_exit(self) -> None:
        actions.stop_all()
