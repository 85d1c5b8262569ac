"""What a prompt takes from the editor: the code view the user was in before
the chat (the window's recently active views), and its file, cursor and
selection as prompt blocks (core/chat/prompts/prompt_context.py makes the blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime

from ....core import threads
from ....core.chat.prompts.prompt_context import ActiveFile, active_file_blocks
from ....core.context_rules import ContextOptions, selection_read_end
from ...settings import userprefs
from ..window_chats import is_chat_view

if TYPE_CHECKING:
    from ....core.json_types import JsonObject

# window id -> recently active views, newest last. A chat view is activated
# before it is marked as one, so the editor view is found when it is needed.
_recent_views: dict[int, list[int]] = {}
RECENT_VIEWS = 8


def view_activated(view: sublime.View, window: sublime.Window) -> None:
    """Remember a code view the user activated (not a chat's, not a widget)."""
    if is_chat_view(view) or view.element() is not None:
        return
    recent = _recent_views.setdefault(window.id(), [])
    if view.id() in recent:
        recent.remove(view.id())
    recent.append(view.id())
    del recent[:-RECENT_VIEWS]


def window_closed(window_id: int) -> None:
    _recent_views.pop(window_id, None)


def editor_view(window: sublime.Window) -> sublime.View | None:
    for view_id in reversed(_recent_views.get(window.id(), [])):
        view = sublime.View(view_id)
        host = view.window()
        if view.is_valid() and host is not None and host.id() == window.id() and not is_chat_view(view):
            return view
    active = window.active_view()
    return active if active is not None and not is_chat_view(active) else None


def context_options() -> ContextOptions:
    return ContextOptions.from_settings(userprefs().context_values())


@threads.on_main
def active_context(window: sublime.Window) -> list[JsonObject]:
    """The active file, cursor and selection as prompt blocks (bounded)."""
    view = editor_view(window)
    if view is None or not view.file_name() or not userprefs().chat_send_context:
        return []
    selection = view.sel()
    if len(selection) == 0:
        return []
    region = selection[0]
    row, col = view.rowcol(region.b)
    selected = ""
    lines = (0, 0)
    if not region.empty():
        selected = view.substr(sublime.Region(region.begin(), selection_read_end(region.begin(), region.end())))
        lines = (view.rowcol(region.begin())[0] + 1, view.rowcol(region.end())[0] + 1)
    active = ActiveFile(str(view.file_name()), row + 1, col + 1, selected, lines)
    return active_file_blocks(active, context_options())
