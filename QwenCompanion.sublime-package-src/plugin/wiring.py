"""Every hook the package's features add to another's list of listeners, in
one list: `register_all` (from plugin_loaded) makes each registration once,
however often it runs, and `unregister_all` (from plugin_unloaded) undoes them
all. No module registers anything when it is imported. A hook with one
implementation is given to its owner when the owner is built instead (a
companion's diff backend and code knowledge: `Companions.ensure_window`; the
chats' MCP server entry: `plugin/chat/window_chats.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import threads
from . import placement, settings
from .actions.answer import is_answer_view
from .chat.comments.review_send import review_turn_event
from .chat.history.turn_review import chat_event as turn_review_event
from .chat.offers.asides import is_aside_view
from .chat.offers.status_panel import is_status_panel
from .chat.offers.suggestions import show_suggestions
from .chat.requests.editor_request_handler import editor_request_handler
from .chat.transcript.agent_work import turn_ended, work_renderer
from .chat.transcript.chat_views import refresh_status as refresh_chat_status
from .chat.transcript.notify import track_turn
from .chat.window_chats import chats, default_renderer, default_request_handler, is_chat_view
from .companion import status
from .companion.companions import companions
from .companion.context_listener import tracker
from .companion.review_hooks import check_orphans_soon
from .log import apply_level
from .reviews.review_tabs import reviews


def _hooks() -> list[tuple[list[Any], Callable[..., Any]]]:
    """(the list a feature calls, the callable another feature adds to it), in
    the order they run."""
    return [
        (companions.started_listeners, status.server_started),
        (companions.started_listeners, tracker.companion_started),
        (companions.sessions_listeners, check_orphans_soon),
        (companions.sessions_listeners, status.sessions_changed),
        (chats.status_listeners, track_turn),
        (chats.status_listeners, refresh_chat_status),
        (chats.status_listeners, show_suggestions),
        (chats.observers, turn_ended),
        (chats.observers, turn_review_event),
        (chats.observers, review_turn_event),
        (settings.change_listeners, apply_level),
        (settings.change_listeners, status.refresh_all),
        (settings.change_listeners, tracker.settings_changed),
        (placement.package_view_recognisers, is_chat_view),
        (placement.package_view_recognisers, is_answer_view),
        (placement.package_view_recognisers, reviews.is_review_view),
        (placement.package_view_recognisers, is_aside_view),
        (placement.package_view_recognisers, is_status_panel),
    ]


@threads.on_main
def register_all() -> None:
    """Loading: the settings are read and followed, and every hook is in place."""
    settings.watch()
    # The chat answers the agent's requests in the editor and renders its work there. Set
    # here, not given when `chats` is built: their modules look chats up in that registry.
    chats.request_handler = editor_request_handler
    chats.renderer = work_renderer
    for hooks, hook in _hooks():
        if hook not in hooks:
            hooks.append(hook)


def unregister_all() -> None:
    """Unloading: nothing of this load is called any more."""
    for hooks, hook in _hooks():
        while hook in hooks:
            hooks.remove(hook)
    chats.request_handler = default_request_handler
    chats.renderer = default_renderer
    settings.unwatch()
