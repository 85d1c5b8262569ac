"""The chats of every window: each a `ChatCore` with its own views (a tab),
one of them the window's active chat; a window's chats with the same agent
share one agent process (`AgentConnection`), which ends with the window or
its last chat. And the hooks other features plug into.

Hooks (`plugin/wiring.py` sets and extends them; each is called per chat):

- `chats.request_handler(window, chat_id) -> AgentRequestHandler`: answers the agent's
  `fs/read_text_file`, `fs/write_text_file`, `session/request_permission`
  and vendor requests. The default reads and writes files on disk inside the
  window's folders, answers permissions "cancelled" and unknown methods
  -32601.
- `chats.renderer(window, chat_id) -> UpdateRenderer`: renders session updates that
  are not message text, slash commands or modes (tool calls, plans,
  thoughts) into the transcript, by block id (`upsert` updates in place).
- `chats.mcp_server(window) -> dict | None`, given when `chats` is built: the
  window's IDE tools (see `plugin/companion/companions.py`), which go into
  `mcpServers` of `session/new`, `session/load` and `session/resume`, with the
  user's own servers (`agent/user_mcp.py`).
- `chats.observers`: callables `(event, details)` for "chat_turn_ended",
  "chat_steered", "chat_error" and "chat_not_sent" (the headless driver listens here).

The agent starts on the chat's asyncio thread; the main thread only applies
batched edits to the transcript view.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

import sublime

from ...core import threads
from ...core.chat.agent.agents import session_key
from ...core.chat.agent.chat_thread import ChatThread
from ...core.chat.history.store import SessionStore, project_key
from ...core.chat.transcript.streamer import BlockStreamer
from ...core.chat.transcript.transcript import Transcript, queue_edit
from ..background import in_background
from ..companion.companions import ide_tools_server
from ..editor import replace_text, view_text
from ..paths import package_cache
from ..settings import userprefs
from .agent.agents import agent_command, default_agent, serve_command
from .agent.live_writers import held_by_terminal
from .agent.user_mcp import ChatMcpServers
from .history.conversation_index import turn_indexer

if TYPE_CHECKING:
    from ...core.chat.agent.agent_connection import AgentConnection
    from ...core.chat.agent.chat_thread import ChatThread
    from ...core.chat.chat_core import ChatCore
    from ...core.chat.chat_state import ChatState
    from ...core.chat.history.rewind import PromptLog
    from ...core.chat.offers.asides import AsideThread
    from ...core.chat.offers.qwen_calls import Request as QwenRequest
    from ...core.chat.prompts.prompt_queue import PromptQueue, QueuedPrompt
    from ...core.chat.requests.request_handler import AgentRequestHandler
    from ...core.chat.transcript.render import UpdateRenderer
    from ...core.chat.transcript.tool_calls import PinnedPlan
    from ...core.chat.transcript.transcript import Edit
    from ...core.json_types import JsonObject
    from ...core.worktrees.worktrees import Worktree

log = logging.getLogger(__name__)

SERVE_CONNECTION = "qwen serve"  # the window's connection to its folders' daemon, among its agents' ones
DEFAULT_AGENT = "qwen"
Observer = Callable[[str, dict[str, Any]], None]
T = TypeVar("T")
_chat_ids = itertools.count(1)  # a chat's id is unique across windows


def window_by_id(window_id: int) -> sublime.Window | None:
    for window in sublime.windows():
        if window.id() == window_id:
            return window
    return None


def session_store() -> SessionStore:
    """Where each project's last conversation is remembered."""
    return SessionStore(package_cache())


def forget_session(window: sublime.Window, session_id: str) -> None:
    """A deleted conversation is no longer the one the window's chat reloads
    (the store is a file: forgotten off Sublime's threads)."""
    store, key = session_store(), project_key(window.project_file_name(), window.folders())

    @threads.may_block
    def forget() -> None:
        if key is not None and store.get(key) == session_id:
            store.put(key, None)

    in_background(forget, "forget session")


def default_request_handler(window: sublime.Window, chat_id: int) -> AgentRequestHandler:
    from ...core.chat.requests.request_handler import DiskRequestHandler

    return DiskRequestHandler(lambda: agent_folders(window, chat_id))


def agent_folders(window: sublime.Window, chat_id: int) -> list[str]:
    """The folders the chat's agent may read and write in: its worktree alone
    for a worktree chat, else the window's folders."""
    worktree = chats.worktree_of(chat_id)
    if worktree is not None:
        return [worktree.path]
    return window.folders() if window.is_valid() else []


def default_renderer(window: sublime.Window, chat_id: int) -> UpdateRenderer:
    from ...core.chat.transcript.render import PlainRenderer

    return PlainRenderer()


class WindowChat:
    """One chat of a window and the ids of its two views (main-thread state)."""

    def __init__(self, owner: Chats, window: sublime.Window, thread: ChatThread, connection: AgentConnection,
                 *, agent: str = DEFAULT_AGENT, number: int = 1, remembered: bool = True,
                 worktree: Worktree | None = None) -> None:
        from ...core.chat.chat_core import ChatCore, ChatCoreSetup

        self.window_id = window.id()
        self.chat_id = next(_chat_ids)  # what events and the driver call this chat
        self.agent = agent  # its name in chat_agents, fixed for the chat's life
        self.number = number  # its place among the window's chats, for its tab's name
        self.custom_title = ""  # given by Rename Chat
        self.worktree = worktree  # the git worktree its agent works in, fixed for the chat's life
        self._owner = owner
        self._window = window
        self.transcript_view: sublime.View | None = None
        self.composer_view: sublime.View | None = None
        self.history_index = 0
        self.attachments: dict[str, JsonObject] = {}  # "@name" in the composer -> its prompt block
        self._pending: list[Edit] = []
        self._pending_lock = threading.Lock()
        self._status_due = False  # a status refresh is on its way to the main thread
        self._request_handler: AgentRequestHandler | None = None
        self._renderer: UpdateRenderer | None = None
        self._hooks_lock = threading.Lock()  # the agent's thread and the main thread both resolve hooks
        self._forget_views_state()
        self.user_mcp = ChatMcpServers(lambda text: self.note(text))
        store = session_store()
        project = project_key(window.project_file_name(), window.folders())
        if worktree is not None:  # its conversation is the worktree's: reopening the worktree reloads it
            project = project_key(None, [worktree.path])
        setup = ChatCoreSetup(
            command=lambda: agent_command(window, self.agent),
            mcp_servers=self._mcp_servers,
            request_handler=self.request_handler,
            renderer=self.renderer,
            store=store,
            # The window's first chat reloads the folder's last conversation (of its agent); a new chat starts a new one.
            key=session_key(project, self.agent) if remembered else None,
            connection=connection,
            cwd=worktree.path if worktree is not None else None,
            index_turn=turn_indexer(),
            held_elsewhere=held_by_terminal,
        )
        self.core: ChatCore = ChatCore(thread, setup, BlockStreamer(Transcript(), self._sink), self)

    @property
    def title(self) -> str:
        """What its tab and the chat list call it: its name, else its session's title, else its first prompt."""
        if self.custom_title or self.state.session_title:
            return self.custom_title or self.state.session_title
        history = self.history
        first = history[0].strip().splitlines()[0] if history and history[0].strip() else ""
        return first[:60] or f"Chat {self.number}"

    # --- what callers ask of the chat (its core answers) ----------------

    @property
    def state(self) -> ChatState:
        """What the agent said of its session: modes, models, commands, suggestion."""
        return self.core.state

    @property
    def session_id(self) -> str | None:
        return self.core.state.session_id

    @session_id.setter
    def session_id(self, session_id: str | None) -> None:
        """The session the chat loads when it starts (set before it starts)."""
        self.core.state.session_id = session_id

    @property
    def status(self) -> str:
        """stopped | starting | ready | busy | exited"""
        return self.core.state.agent_status

    @property
    def busy(self) -> bool:
        """A turn is running."""
        return self.status == "busy"

    @property
    def history(self) -> list[str]:
        """The prompts sent, for Up in the composer."""
        return self.core.history

    @property
    def connection(self) -> AgentConnection:
        return self.core.connection

    @property
    def queue(self) -> PromptQueue:
        return self.core.queue

    @property
    def prompts(self) -> PromptLog:
        """The session's prompts, for a rewind or a branch."""
        return self.core.prompts

    @property
    def transcript(self) -> Transcript:
        return self.core.streamer.transcript

    @property
    def turn_cancelled(self) -> bool:
        return self.core.turn_cancelled

    def start(self) -> Future[None]:
        return self.core.start()

    def cancel(self) -> None:
        self.core.cancel()

    def close(self) -> None:
        """The chat's one close path: its agent ends, what it held for its views goes."""
        self.core.close()
        self._forget_views_state()

    def _forget_views_state(self) -> None:
        """What the features around the chat hold for it (main thread unless said)."""
        self.pinned_plan: PinnedPlan | None = None  # the plan its composer shows
        self.plan_html: str | None = None  # that plan's HTML
        self.plan_due: tuple[PinnedPlan, str] | None = None  # the latest plan and its HTML, not shown yet (plan_view's lock)
        self.desktop_told = False  # its desktop notification went out and it was not seen since
        self.turn_started: float | None = None  # when its running turn began (monotonic)
        self.editing_prompt: int | None = None  # the index of the prompt Edit and Resend replaces
        self.asides: AsideThread | None = None
        self.aside_view_id: int | None = None  # its aside tab: our record of which views are asides
        self.dismissed_suggestion: str | None = None  # the suggestion the user typed over
        self.reviews_awaited: set[str] = set()  # review texts sent, awaiting their turn's end (any thread)

    def send(self, text: str, context: list[JsonObject] | None = None, *, first: bool = False,
             attached: dict[str, JsonObject] | None = None, shown: str | None = None) -> bool:
        """Queue a prompt (see `ChatCore.send`); False: the queue is full."""
        return self.core.send(text, context, first=first, attached=attached, shown=shown)

    def note(self, text: str) -> None:
        """A line of ours in the transcript."""
        self.core.note(text)

    def show_block(self, block_id: str, text: str) -> None:
        """Put block `block_id` in the transcript now (a question the user answers)."""
        self.upsert(block_id, text)
        self.core.streamer.flush()

    def ask_qwen(self, what: str, call: Callable[[QwenRequest], Awaitable[T]]) -> Future[T]:
        return self.core.calls.ask_qwen(what, call)

    def stderr_lines(self) -> list[str]:
        return self.core.stderr_lines()

    @property
    def pid(self) -> int | None:
        """The agent's process id, once started."""
        return self.core.pid

    def restart(self) -> Future[None]:
        """The agent ended and started again: the conversation is reloaded."""
        return self.core.sessions.restart()

    def requests_shown(self) -> list[tuple[str, str]]:
        """The agent's requests the transcript showed (block, text), for an export."""
        return self.core.requests_shown()

    def upsert(self, block_id: str, text: str) -> None:
        """Block `block_id` of the transcript, made or updated (with the next batch)."""
        self.core.upsert(block_id, text)

    def upsert_soon(self, block_id: str, text: str) -> None:
        self.core.upsert_soon(block_id, text)

    # the queue's prompts the user sends now, steers with or reorders
    def send_now(self, prompt: QueuedPrompt) -> None:
        self.core.send_now(prompt)

    def can_steer(self, prompt: QueuedPrompt) -> bool:
        return self.core.can_steer(prompt)

    def steer(self, prompt: QueuedPrompt) -> None:
        self.core.steer(prompt)

    def queue_changed(self) -> None:
        self.core.queue_changed()

    # the session's mode, model and options, as the user picks them
    def set_mode(self, mode_id: str) -> Future[None]:
        return self.core.option_setter.set_mode(mode_id)

    def set_model(self, model_id: str) -> Future[None]:
        return self.core.option_setter.set_model(model_id)

    def set_option(self, option_id: str, value: str | bool) -> Future[None]:
        return self.core.option_setter.set_option(option_id, value)

    # --- hooks, resolved once per chat ----------------------------------

    def request_handler(self) -> AgentRequestHandler:
        with self._hooks_lock:
            if self._request_handler is None:
                self._request_handler = self._owner.request_handler(self._window, self.chat_id)
            return self._request_handler

    def renderer(self) -> UpdateRenderer:
        with self._hooks_lock:
            if self._renderer is None:
                self._renderer = self._owner.renderer(self._window, self.chat_id)
            return self._renderer

    def _mcp_servers(self) -> list[JsonObject]:
        try:
            server = self._owner.mcp_server(self._window)
        except Exception:
            log.exception("the chat's MCP server entry failed")
            server = None
        connection = self.connection
        return self.user_mcp.entries([server] if server else [], self.agent, connection.initialized)

    # --- transcript edits -----------------------------------------------

    def _sink(self, edits: list[Edit]) -> None:
        with self._pending_lock:
            first = not self._pending
            for edit in edits:
                queue_edit(self._pending, edit)
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

    @threads.on_main
    def fill(self, view: sublime.View) -> None:
        """Make a new transcript view show the whole transcript."""
        with self.core.streamer.locked(), self._pending_lock:
            text = self.transcript.text()
            self._pending.clear()
            self.transcript_view = view
        view.run_command("qwen_chat_apply", {"edits": [[0, view.size(), text]]})
        view.clear_undo_stack()

    # --- ChatCoreEvents -----------------------------------------------

    @threads.on_chat_loop
    def state_changed(self) -> None:
        if self._owner.closed:  # an agent reaped after quitting has no status left to show
            return
        with self._pending_lock:  # one refresh on its way at a time: it shows the state as it is then
            if self._status_due:
                return
            self._status_due = True
        sublime.set_timeout(self._refresh_status)

    @threads.on_main
    def _refresh_status(self) -> None:
        with self._pending_lock:
            self._status_due = False
        self._owner.refresh_status(self.window_id)

    @threads.on_chat_loop
    def turn_ended(self, stop_reason: str) -> None:
        self._owner.tell("chat_turn_ended", {"window": self.window_id, "chat": self.chat_id, "stopReason": stop_reason})

    @threads.on_chat_loop
    def steered(self, text: str, late: bool) -> None:
        self._owner.tell("chat_steered", {"window": self.window_id, "chat": self.chat_id, "text": text, "late": late})

    @threads.on_chat_loop
    def error(self, message: str) -> None:
        self._owner.tell("chat_error", {"window": self.window_id, "chat": self.chat_id, "message": message})

    @threads.on_chat_loop
    def not_sent(self, prompts: list[QueuedPrompt]) -> None:
        texts = [prompt.text for prompt in prompts]
        self._owner.tell("chat_not_sent", {"window": self.window_id, "chat": self.chat_id, "prompts": texts})
        sublime.set_timeout(lambda: self._give_back(prompts))

    @threads.on_main
    def _give_back(self, prompts: list[QueuedPrompt]) -> None:
        """Prompts that were never sent back into the composer, before what
        the user has typed since, with their attachments; the user sends again."""
        for prompt in prompts:
            self.attachments.update(prompt.attached)
        composer = self.composer_view
        typed = view_text(composer) if composer is not None and composer.is_valid() else ""
        given_back = "\n\n".join([*(prompt.text for prompt in prompts), *([typed] if typed.strip() else [])])
        if composer is not None and composer.is_valid():
            replace_text(composer, given_back)
        why = self.state.stopped_why or "the agent could not start"
        where = "back in the composer" if composer is not None and composer.is_valid() else "in the chat's history (Up)"
        window = self._window
        if window is not None and window.is_valid():
            window.status_message(f"Qwen Code: not sent ({why}): your prompt is {where}")

    @threads.on_chat_loop
    def cancel_timed_out(self) -> None:
        def ask() -> None:
            if sublime.ok_cancel_dialog(
                "Qwen Code: the agent did not stop within a few seconds.\n\n"
                "Restart it? The conversation is reloaded.",
                "Restart Agent",
            ):
                self.restart()

        sublime.set_timeout(ask)


class WindowChats:
    """A window's chats in tab order, the active one, and the agent processes
    they share (one per agent name)."""

    def __init__(self) -> None:
        self.chats: list[WindowChat] = []
        self.active: WindowChat | None = None
        self.connections: dict[str, AgentConnection] = {}
        self.numbers = itertools.count(1)


class Chats:
    def __init__(self, mcp_server: Callable[[sublime.Window], JsonObject | None]) -> None:
        self.request_handler: Callable[[sublime.Window, int], AgentRequestHandler] = default_request_handler
        self.renderer: Callable[[sublime.Window, int], UpdateRenderer] = default_renderer
        self.mcp_server = mcp_server
        self.observers: list[Observer] = []
        self._lock = threading.RLock()
        self._by_window: dict[int, WindowChats] = {}
        self._thread: ChatThread | None = None
        self._closed = False
        self.status_listeners: list[Callable[[int], None]] = []
        # Every worktree chat's worktree by chat id, kept after the chat closes: a
        # request handler made late (its chat gone) still confines to the worktree.
        self._worktrees: dict[int, Worktree] = {}

    def get(self, window: sublime.Window | None) -> WindowChat | None:
        """The window's active chat."""
        if window is None:
            return None
        with self._lock:
            held = self._by_window.get(window.id())
            return held.active if held is not None else None

    def serve_connection(self, window: sublime.Window) -> AgentConnection | None:
        """The window's connection to its folders' `qwen serve` daemon, if a chat made one."""
        with self._lock:
            held = self._by_window.get(window.id())
            return held.connections.get(SERVE_CONNECTION) if held is not None else None

    def ensure(self, window: sublime.Window) -> WindowChat | None:
        """The window's active chat, made now if it has none (None once unloading)."""
        with self._lock:
            existing = self.get(window)
            if existing is not None:
                return existing
            return self.new_chat(window)

    def new_chat(self, window: sublime.Window, agent: str | None = None, *, fresh: bool = False,
                 worktree: Worktree | None = None, transport: str | None = None) -> WindowChat | None:
        """A new chat in the window running `agent` (default: the chat_agent
        setting), made its active chat (None once unloading). The window's
        first chat reloads the folder's last conversation unless `fresh`; a
        chat in `worktree` (its session's folder) reloads the worktree's.
        `transport` (default: chat_transport): "serve" runs qwen's chats on the
        folders' daemon; other agents and worktree chats stay on stdio."""
        from ...core.chat.agent.agent_connection import AgentConnection
        from ...core.serve.serve_bridge import ServeConnection

        chosen = agent or default_agent()
        on_serve = (transport or userprefs().chat_transport) == "serve" and chosen == "qwen" and worktree is None
        key = SERVE_CONNECTION if on_serve else chosen
        with self._lock:
            if self._closed or not window.is_valid():
                return None
            if self._thread is None or not self._thread.alive:
                self._thread = ChatThread()
                self._thread.start()
            thread = self._thread
            held = self._by_window.setdefault(window.id(), WindowChats())
            connection = held.connections.get(key)
            if connection is None or not connection.owners():  # one that ended with its last chat is not reused
                connection = held.connections[key] = (
                    ServeConnection(thread, lambda: serve_command(window)) if on_serve
                    else AgentConnection(thread, lambda: agent_command(window, chosen)))
            chat = WindowChat(self, window, thread, connection, agent=chosen, number=next(held.numbers),
                              remembered=worktree is not None or (not held.chats and not fresh), worktree=worktree)
            held.chats.append(chat)
            held.active = chat
            if worktree is not None:
                self._worktrees[chat.chat_id] = worktree
            return chat

    def worktree_of(self, chat_id: int) -> Worktree | None:
        """The worktree chat `chat_id` works in (also once closed), or None."""
        with self._lock:
            return self._worktrees.get(chat_id)

    def of_window(self, window: sublime.Window | None) -> list[WindowChat]:
        """The window's chats in tab order."""
        if window is None:
            return []
        with self._lock:
            held = self._by_window.get(window.id())
            return list(held.chats) if held is not None else []

    def by_id(self, chat_id: int) -> WindowChat | None:
        with self._lock:
            return next((c for held in self._by_window.values() for c in held.chats if c.chat_id == chat_id), None)

    def select(self, chat: WindowChat) -> bool:
        """Make `chat` its window's active chat; True when it was not."""
        with self._lock:
            held = self._by_window.get(chat.window_id)
            if held is None or chat not in held.chats or held.active is chat:
                return False
            held.active = chat
        self.refresh_status(chat.window_id)
        return True

    def close_chat(self, chat: WindowChat) -> WindowChat | None:
        """Close one chat (its agent ends with the window's last chat on it);
        the window's next chat becomes active. Returns the new active chat."""
        with self._lock:
            held = self._by_window.get(chat.window_id)
            if held is None or chat not in held.chats:
                return None
            index = held.chats.index(chat)
            held.chats.remove(chat)
            if held.active is chat:
                held.active = held.chats[min(index, len(held.chats) - 1)] if held.chats else None
            active = held.active
        chat.close()
        self.refresh_status(chat.window_id)
        return active

    @property
    def closed(self) -> bool:
        return self._closed

    def all(self) -> list[WindowChat]:
        with self._lock:
            return [chat for held in self._by_window.values() for chat in held.chats]

    def connections(self) -> list[AgentConnection]:
        with self._lock:
            return [c for held in self._by_window.values() for c in held.connections.values()]

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
        """The window closed: end its agents (any thread)."""
        with self._lock:
            held = self._by_window.pop(window_id, None)
        if held is not None:
            self._end(held)

    @threads.on_main
    def stop_all(self) -> None:
        """Unloading or quitting: end every agent now and the chat thread soon
        (nothing here waits)."""
        with self._lock:
            self._closed = True
            windows = list(self._by_window.values())
            self._by_window.clear()
            thread, self._thread = self._thread, None
        for held in windows:
            self._end(held)
        if thread is not None:
            thread.stop_soon()

    @staticmethod
    def _end(held: WindowChats) -> None:
        for chat in held.chats:
            chat.close()
        for connection in held.connections.values():
            connection.close()  # also one no chat holds any more


_chat_imported = threading.Event()


def preload_chat() -> None:
    """Import the chat's modules now (our start-up thread): the ACP library's
    models take most of a second of CPU to build, which the first Chat would
    otherwise spend on Sublime's main thread. A new chat also imports the
    serve transport, and with it aiohttp, which the companion's start thread
    may not have imported yet."""
    from ...core.chat import chat_core  # noqa: F401
    from ...core.serve import serve_bridge  # noqa: F401

    _chat_imported.set()


def chat_imported_or_later(then: Callable[[], None]) -> bool:
    """True when the chat's modules are imported. Else (a Chat right after
    start-up, before the start thread imported them) they are imported on a
    thread of ours, `then` runs on the main thread afterwards, and False."""
    if _chat_imported.is_set():
        return True
    command = contextvars.copy_context()  # `then` goes on with the user's command, not as our own doing

    def load() -> None:
        preload_chat()
        sublime.set_timeout(lambda: command.run(then))

    in_background(load, "preload")
    return False


def prestart_enabled() -> bool:
    return userprefs().chat_prestart


def chat_role(view: sublime.View) -> str | None:
    """"transcript" or "composer" when `view` is a tab of one of our chats, from
    the package's own record: never from view settings, which a project's
    settings set on every view of its window."""
    for chat in chats.all():
        if chat.transcript_view is not None and chat.transcript_view.id() == view.id():
            return "transcript"
        if chat.composer_view is not None and chat.composer_view.id() == view.id():
            return "composer"
    return None


def is_chat_view(view: sublime.View) -> bool:
    return chat_role(view) is not None


def chat_of_view(view: sublime.View) -> WindowChat | None:
    """The chat whose transcript or composer `view` is (the package's own record)."""
    return next((chat for chat in chats.all() if view.id() in (
        chat.transcript_view.id() if chat.transcript_view is not None else 0,
        chat.composer_view.id() if chat.composer_view is not None else 0)), None)


chats = Chats(mcp_server=ide_tools_server)
