"""The chat of every window: its core `Chat`, its views, and the hooks other
features plug into.

Hooks (`plugin/wiring.py` sets and extends them; each is called per window):

- `chats.requests(window) -> AgentRequests`: answers the agent's
  `fs/read_text_file`, `fs/write_text_file`, `session/request_permission`
  and vendor requests. The default reads and writes files on disk inside the
  window's folders, answers permissions "cancelled" and unknown methods
  -32601.
- `chats.renderer(window) -> UpdateRenderer`: renders session updates that
  are not message text, slash commands or modes (tool calls, plans,
  thoughts) into the transcript, by block id (`upsert` updates in place).
- `chats.mcp_servers`: callables `(window) -> dict | None`; the dicts go into
  `mcpServers` of `session/new` and `session/load`.
- `chats.observers`: callables `(event, details)` for "chat_turn_ended" and
  "chat_error" (the headless driver listens here).

The agent starts on the chat's asyncio thread; the main thread only applies
batched edits to the transcript view.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sublime

from ...core.chat.agents import session_key
from ...core.chat.store import SessionStore, project_key
from ...core.chat.streamer import BlockStreamer
from ...core.chat.transcript import Transcript
from ..background import in_background
from ..settings import userprefs
from .agents import agent_command, default_agent

if TYPE_CHECKING:
    from ...core.chat.chat import Chat
    from ...core.chat.chat_thread import ChatThread
    from ...core.chat.render import UpdateRenderer
    from ...core.chat.requests import AgentRequests
    from ...core.chat.transcript import Edit
    from ...core.json_types import JsonObject

log = logging.getLogger(__name__)

CACHE_FOLDER = "QwenCompanion"
Observer = Callable[[str, dict[str, Any]], None]


def window_by_id(window_id: int) -> sublime.Window | None:
    for window in sublime.windows():
        if window.id() == window_id:
            return window
    return None


def default_requests(window: sublime.Window) -> AgentRequests:
    from ...core.chat.requests import DiskRequests

    return DiskRequests(lambda: window.folders() if window.is_valid() else [])


def default_renderer(window: sublime.Window) -> UpdateRenderer:
    from ...core.chat.render import PlainRenderer

    return PlainRenderer()


class WindowChat:
    """One window's chat and the ids of its two views (main-thread state)."""

    def __init__(self, owner: Chats, window: sublime.Window, thread: ChatThread, agent: str | None = None) -> None:
        from ...core.chat.chat import Chat, ChatSetup

        self.agent = agent or default_agent()  # its name in chat_agents, fixed for the chat's life
        self.window_id = window.id()
        self.chat_id = window.id()  # what events and the driver call this chat
        self._owner = owner
        self._window = window
        self.transcript_view: sublime.View | None = None
        self.composer_view: sublime.View | None = None
        self.history_index = 0
        self.attachments: dict[str, JsonObject] = {}  # "@name" in the composer -> its prompt block
        self._pending: list[Edit] = []
        self._pending_lock = threading.Lock()
        self._requests: AgentRequests | None = None
        self._renderer: UpdateRenderer | None = None
        self._hooks_lock = threading.Lock()  # the agent's thread and the main thread both resolve hooks
        store = SessionStore(Path(sublime.cache_path()) / CACHE_FOLDER)
        setup = ChatSetup(
            command=lambda: agent_command(window, self.agent),
            mcp_servers=self._mcp_servers,
            requests=self.requests,
            renderer=self.renderer,
            store=store,
            key=session_key(project_key(window.project_file_name(), window.folders()), self.agent),
        )
        self.chat: Chat = Chat(thread, setup, BlockStreamer(Transcript(), self._sink), self)

    # --- hooks, resolved once per window --------------------------------

    def requests(self) -> AgentRequests:
        with self._hooks_lock:
            if self._requests is None:
                self._requests = self._owner.requests(self._window)
            return self._requests

    def renderer(self) -> UpdateRenderer:
        with self._hooks_lock:
            if self._renderer is None:
                self._renderer = self._owner.renderer(self._window)
            return self._renderer

    def _mcp_servers(self) -> list[JsonObject]:
        servers: list[JsonObject] = []
        for provider in list(self._owner.mcp_servers):
            try:
                server = provider(self._window)
            except Exception:
                log.exception("an MCP server provider failed")
                continue
            if server:
                servers.append(server)
        return servers

    # --- transcript edits -----------------------------------------------

    def _sink(self, edits: list[Edit]) -> None:
        with self._pending_lock:
            first = not self._pending
            self._pending.extend(edits)
        if first:  # one main-thread hop per batch
            sublime.set_timeout(self.apply_pending)

    def apply_pending(self) -> None:
        with self._pending_lock:
            edits, self._pending = self._pending, []
        view = self.transcript_view
        if not edits or view is None or not view.is_valid():
            return
        view.run_command("qwen_chat_apply", {"edits": [[e.offset, e.erase, e.text] for e in edits]})
        view.clear_undo_stack()  # the transcript has no undo history

    def fill(self, view: sublime.View) -> None:
        """Make a new transcript view show the whole transcript (main thread)."""
        with self.chat.streamer.locked(), self._pending_lock:
            text = self.chat.streamer.transcript.text()
            self._pending.clear()
            self.transcript_view = view
        view.run_command("qwen_chat_apply", {"edits": [[0, view.size(), text]]})
        view.clear_undo_stack()

    # --- ChatEvents (chat thread) -----------------------------------------

    def state_changed(self) -> None:
        if not self._owner.closed:  # an agent reaped after quitting has no status left to show
            sublime.set_timeout(lambda: self._owner.refresh_status(self.window_id))

    def turn_ended(self, stop_reason: str) -> None:
        self._owner.tell("chat_turn_ended", {"window": self.window_id, "chat": self.chat_id, "stopReason": stop_reason})

    def error(self, message: str) -> None:
        self._owner.tell("chat_error", {"window": self.window_id, "chat": self.chat_id, "message": message})

    def cancel_timed_out(self) -> None:
        def ask() -> None:
            if sublime.ok_cancel_dialog(
                "Qwen Code: the agent did not stop within a few seconds.\n\n"
                "Restart it? The conversation is reloaded.",
                "Restart Agent",
            ):
                self.chat.restart()

        sublime.set_timeout(ask)


class Chats:
    def __init__(self) -> None:
        self.requests: Callable[[sublime.Window], AgentRequests] = default_requests
        self.renderer: Callable[[sublime.Window], UpdateRenderer] = default_renderer
        self.mcp_servers: list[Callable[[sublime.Window], JsonObject | None]] = []
        self.observers: list[Observer] = []
        self._lock = threading.RLock()
        self._by_window: dict[int, WindowChat] = {}
        self._thread: ChatThread | None = None
        self._closed = False
        self.status_listeners: list[Callable[[int], None]] = []

    def get(self, window: sublime.Window | None) -> WindowChat | None:
        if window is None:
            return None
        with self._lock:
            return self._by_window.get(window.id())

    def ensure(self, window: sublime.Window, agent: str | None = None) -> WindowChat | None:
        """The window's chat, made now if it has none (None once unloading)."""
        from ...core.chat.chat_thread import ChatThread

        with self._lock:
            if self._closed or not window.is_valid():
                return None
            existing = self._by_window.get(window.id())
            if existing is not None:
                return existing
            if self._thread is None or not self._thread.alive:
                self._thread = ChatThread()
                self._thread.start()
            chat = WindowChat(self, window, self._thread, agent)
            self._by_window[window.id()] = chat
            return chat

    @property
    def closed(self) -> bool:
        return self._closed

    def all(self) -> list[WindowChat]:
        with self._lock:
            return list(self._by_window.values())

    def tell(self, event: str, details: dict[str, Any]) -> None:
        if self._closed:
            return
        for observer in list(self.observers):
            try:
                observer(event, details)
            except Exception:
                log.exception("a chat observer failed")

    def refresh_status(self, window_id: int) -> None:
        for listener in list(self.status_listeners):
            listener(window_id)

    def forget_window(self, window_id: int) -> None:
        """The window closed: end its agent (any thread)."""
        with self._lock:
            chat = self._by_window.pop(window_id, None)
        if chat is not None:
            chat.chat.close()

    def stop_all(self) -> None:
        """Unloading or quitting: end every agent now and the chat thread soon
        (main thread: nothing here waits)."""
        with self._lock:
            self._closed = True
            chats = list(self._by_window.values())
            self._by_window.clear()
            thread, self._thread = self._thread, None
        for chat in chats:
            chat.chat.close()
        if thread is not None:
            thread.stop_soon()


_chat_imported = threading.Event()


def preload_chat() -> None:
    """Import the chat's modules now (our start-up thread): the ACP library's
    models take most of a second of CPU to build, which the first Chat would
    otherwise spend on Sublime's main thread."""
    from ...core.chat import chat  # noqa: F401

    _chat_imported.set()


def chat_imported_or_later(then: Callable[[], None]) -> bool:
    """True when the chat's modules are imported. Else (a Chat right after
    start-up, before the start thread imported them) they are imported on a
    thread of ours, `then` runs on the main thread afterwards, and False."""
    if _chat_imported.is_set():
        return True

    def load() -> None:
        preload_chat()
        sublime.set_timeout(then)

    in_background(load, "preload")
    return False


def prestart_enabled() -> bool:
    return userprefs().chat_prestart


def is_chat_view(view: sublime.View) -> bool:
    return bool(view.settings().get("qwen_chat.view"))


chats = Chats()
