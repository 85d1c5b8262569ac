"""The status-bar item of every window: `Qwen ● 2` while two CLIs are connected.

Sublime keeps status items per view, so the text is set on all of a window's
views when the count changes, and on a view when it is activated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ...core import threads
from ...core.companion.status import STATUS_KEY, status_text
from ..settings import userprefs
from .companions import companions

if TYPE_CHECKING:
    from ...core.companion.companion import Companion

_connected: dict[int, int] = {}  # window id -> connected CLIs, written on the server thread


def _text(window: sublime.Window) -> str | None:
    if not userprefs().status_bar:
        return None
    companion = companions.get(window)
    if companion is None or not companion.running:
        return status_text(False, 0)
    return status_text(True, _connected.get(window.id(), 0), lock_missing=companion.lock_error is not None)


def _apply(view: sublime.View, text: str | None) -> None:
    if text is None:
        view.erase_status(STATUS_KEY)
    else:
        view.set_status(STATUS_KEY, text)


@threads.on_main
def refresh(window: sublime.Window) -> None:
    """Set the window's status text on all its views."""
    if not window.is_valid():
        return
    text = _text(window)
    for view in window.views():
        _apply(view, text)


def refresh_all() -> None:
    for window in sublime.windows():
        refresh(window)


def _refresh_window_id(window_id: int) -> None:
    for window in sublime.windows():
        if window.id() == window_id:
            refresh(window)


def sessions_changed(window_id: int, connected: int) -> None:
    _connected[window_id] = connected
    sublime.set_timeout(lambda: _refresh_window_id(window_id))


def server_started(window: sublime.Window, companion: Companion) -> None:
    _connected[window.id()] = 0  # a restarted server starts with nobody
    sublime.set_timeout(lambda: refresh(window))


def remove_all() -> None:
    """Unloading: no window keeps a count that nothing updates any more."""
    for window in sublime.windows():
        for view in window.views():
            view.erase_status(STATUS_KEY)


class QwenStatusListener(sublime_plugin.EventListener):
    def on_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None:
            _apply(view, _text(window))
