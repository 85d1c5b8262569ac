"""Qwen Code: Restart Server and Qwen Code: Show Log."""

from __future__ import annotations

import logging

import sublime
import sublime_plugin

from ...core import threads
from .. import log as package_log
from ..background import in_background
from .companions import companions

log = logging.getLogger(__name__)


@threads.may_block
def _restart(window: sublime.Window) -> None:
    """Stop the window's server and start a new one (it waits for both)."""
    companions.forget_window(window.id())
    companion = companions.ensure_window(window)
    if companion is None and not companions.running:
        # Nothing runs at all (e.g. a library was missing at start-up): start everything.
        companions.start()
        companion = companions.get(window)
    if companion is not None and companion.running:
        message = (f"Qwen Code: server restarted on port {companion.port}; "
                   "in qwen sessions that were connected, run /ide enable")
    else:
        message = "Qwen Code: the server did not start; see Qwen Code: Show Log"
    log.info("%s", message.removeprefix("Qwen Code: "))
    sublime.set_timeout(lambda: window.status_message(message))


class QwenRestartServerCommand(sublime_plugin.WindowCommand):
    def run(self) -> None:
        window = self.window
        in_background(lambda: _restart(window), "restart")


class QwenShowLogCommand(sublime_plugin.WindowCommand):
    def run(self) -> None:
        package_log.show_panel(self.window)
