"""Every hook the package's features plug into another's, in one list:
`register_all` (from plugin_loaded) makes each registration once, however
often it runs, and `unregister_all` (from plugin_unloaded) undoes them all.
No module registers anything when it is imported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import threads
from . import placement, settings
from .actions.answer import is_answer_view
from .chat.agent_requests import editor_requests
from .chat.agent_work import turn_ended, work_renderer
from .chat.chat_views import refresh_status as refresh_chat_status
from .chat.chats import chats, default_renderer, default_requests, is_chat_view
from .chat.notify import track_turn
from .chat.turn_review import chat_event as turn_review_event
from .companion import status
from .companion.companions import companions
from .companion.context_listener import tracker
from .companion.review_hooks import check_orphans_soon, install_backend
from .ide_tools.hooks import chat_server, install_code_knowledge
from .log import apply_level
from .reviews.review_tabs import reviews


def _hooks() -> list[tuple[list[Any], Callable[..., Any]]]:
    """(the list a feature calls, the callable another feature adds to it), in
    the order they run: a started server gets its diff backend first."""
    return [
        (companions.started_listeners, install_backend),
        (companions.started_listeners, status.server_started),
        (companions.started_listeners, tracker.companion_started),
        (companions.started_listeners, install_code_knowledge),
        (companions.sessions_listeners, check_orphans_soon),
        (companions.sessions_listeners, status.sessions_changed),
        (chats.status_listeners, track_turn),
        (chats.status_listeners, refresh_chat_status),
        (chats.observers, turn_ended),
        (chats.observers, turn_review_event),
        (chats.mcp_servers, chat_server),
        (settings.change_listeners, apply_level),
        (settings.change_listeners, status.refresh_all),
        (settings.change_listeners, tracker.settings_changed),
        (placement.package_view_recognisers, is_chat_view),
        (placement.package_view_recognisers, is_answer_view),
        (placement.package_view_recognisers, reviews.is_review_view),
    ]


@threads.on_main
def register_all() -> None:
    """Loading: the settings are read and followed, and every hook is in place."""
    settings.watch()
    # The chat answers the agent's requests in the editor and renders its work there.
    chats.requests = editor_requests
    chats.renderer = work_renderer
    for hooks, hook in _hooks():
        if hook not in hooks:
            hooks.append(hook)


def unregister_all() -> None:
    """Unloading: nothing of this load is called any more."""
    for hooks, hook in _hooks():
        while hook in hooks:
            hooks.remove(hook)
    chats.requests = default_requests
    chats.renderer = default_renderer
    settings.unwatch()
