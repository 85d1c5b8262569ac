"""One agent process shared by several chats: its lifecycle (start,
initialize, back-off after quick crashes, restart, end) and the routing of
what it sends, by `sessionId`, to the chat whose session it names.

`qwen --acp` serves many ACP sessions on one connection and runs their
prompts at once, so a window's chats share one process. Everything here runs
on the chat's asyncio thread except `attach`, `detach` and `close`, which
any thread may call.

A session update, notification or request that names a session no chat of
this connection holds is hostile or stale: requests are answered with an
error, updates and notifications dropped (logged once per kind).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, Protocol

from acp import RequestError
from acp.schema import (
    InitializeResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

from ... import threads
from ...json_types import JsonObject
from ..requests.request_handler import AgentRequestHandler
from .agents import can_close
from .chat_thread import ChatThread
from .stdio_bridge import StdioBridge
from .transport import AgentCommand, AgentError, AgentGone, AgentTransport, BridgeEvents

log = logging.getLogger(__name__)

# A restart waits this long after the previous start (doubling per quick
# crash, capped): a crashing agent is never restarted in a loop.
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
STABLE_SECONDS = 60.0
# An agent that has not answered `initialize` by then never will: the chat stops and says so.
START_TIMEOUT = 60.0
# Updates for a session whose session/new answer has not come yet (qwen
# announces a new session's commands on a timer): held until it is claimed.
UNCLAIMED_MAX = 64


class SessionOwner(Protocol):
    """What the connection needs from the owner of a session (a `ChatCore`),
    called on the chat's thread."""

    def session_update(self, notification: SessionNotification) -> None: ...

    def ext_notification(self, method: str, params: JsonObject) -> None: ...

    def exited(self, bridge: AgentTransport, returncode: int | None, stderr_tail: list[str], *,
               expected: bool = False) -> None: ...

    def refused(self, message: str) -> None: ...

    def request_handler(self) -> AgentRequestHandler: ...


class UnknownSession(RequestError):
    def __init__(self, session_id: object) -> None:
        super().__init__(-32602, "Invalid params: no chat of this editor holds that session",
                         {"sessionId": str(session_id)[:100]})


class AgentConnection:
    def __init__(self, thread: ChatThread, command: Callable[[], AgentCommand]) -> None:
        self._thread = thread
        self._command = command
        self.bridge: AgentTransport | None = None
        self.initialized: InitializeResponse | None = None
        self.auth_methods: list[str] = []
        self._owners: list[SessionOwner] = []
        self._by_session: dict[str, SessionOwner] = {}
        self._lock = threading.Lock()  # the lists above: the main thread attaches and detaches
        self._ready_lock: asyncio.Lock | None = None
        self._opening = 0
        self._unclaimed: list[SessionNotification] = []
        self._expected_exit = False
        self.failures = 0
        # The agent of the last start that failed: its process may not be
        # reaped yet (`running` still true), and it must not be taken for a
        # running agent; kept as `bridge` for its stderr (Show Agent Log).
        self._failed_start: AgentTransport | None = None
        self._last_start = 0.0
        self._warned: set[str] = set()
        self._router = SessionRequestRouter(self)

    # --- chats (any thread) -------------------------------------------------

    def attach(self, chat: SessionOwner) -> None:
        with self._lock:
            if chat not in self._owners:
                self._owners.append(chat)

    def detach(self, chat: SessionOwner) -> bool:
        """Forget `chat` and its session; the last chat to go ends the process.
        True when it did (any thread; never waits)."""
        with self._lock:
            if chat in self._owners:
                self._owners.remove(chat)
            sessions = [s for s, c in self._by_session.items() if c is chat]
            for session_id in sessions:
                del self._by_session[session_id]
            last = not self._owners
        if last:
            self.close()
        else:
            self._close_sessions(sessions)
        return last

    def _close_sessions(self, session_ids: list[str]) -> None:
        """Have the agent, which lives on for other chats, end a departed
        chat's sessions and any turn still running in them (ACP's
        session/close, only where announced: nothing new for qwen 0.24.4)."""
        bridge = self.bridge
        if not session_ids or bridge is None or not bridge.running or not can_close(bridge.abilities.capabilities):
            return

        async def close_each() -> None:
            for session_id in session_ids:
                try:
                    await bridge.request("session/close", {"sessionId": session_id})
                except AgentError as error:  # nothing of the chat is left to tell
                    log.info("chat: the agent did not close session %.100r: %s", session_id, error)

        self._thread.spawn(close_each(), "closing the sessions")

    def owners(self) -> list[SessionOwner]:
        with self._lock:
            return list(self._owners)

    def owner_of(self, session_id: object) -> SessionOwner | None:
        with self._lock:
            return self._by_session.get(session_id) if isinstance(session_id, str) else None

    def close(self) -> None:
        """End the process now (any thread; never waits)."""
        bridge = self.bridge
        self._expected_exit = True
        if bridge is not None:
            bridge.kill()
            if self._thread.alive:  # quick once killed; lets the loop release the pipes
                self._thread.spawn(bridge.stop(), "releasing the ended agent")

    @property
    def running(self) -> bool:
        return self.bridge is not None and self.bridge.running

    @property
    def agent_name(self) -> str:
        info = self.initialized.agent_info if self.initialized is not None else None
        return f"{info.name} {info.version}" if info is not None else ""

    # --- sessions ---------------------------------------------------------

    @property
    @threads.on_chat_loop
    def accepts_images(self) -> bool:
        capabilities = self.initialized.agent_capabilities if self.initialized is not None else None
        prompts = capabilities.prompt_capabilities if capabilities is not None else None
        return prompts is not None and bool(prompts.image)

    @threads.on_chat_loop
    def claim(self, session_id: str, chat: SessionOwner) -> None:
        """`chat` holds `session_id` from now on; updates that came for it
        before (a new session's first ones) are delivered now."""
        with self._lock:
            holder = self._by_session.get(session_id)
            if holder is not None and holder is not chat:
                raise AgentError("that conversation is open in another chat")
            for old in [s for s, c in self._by_session.items() if c is chat and s != session_id]:
                del self._by_session[old]
            self._by_session[session_id] = chat
            held = [n for n in self._unclaimed if n.session_id == session_id]
            self._unclaimed = [n for n in self._unclaimed if n.session_id != session_id]
        for notification in held:
            chat.session_update(notification)

    @contextlib.contextmanager
    @threads.on_chat_loop
    def opening(self) -> Iterator[None]:
        """While a session/new is answered, updates of unknown sessions are held."""
        self._opening += 1
        try:
            yield
        finally:
            self._opening -= 1
            if not self._opening:
                self._unclaimed.clear()

    # --- lifecycle --------------------------------------------------------

    @threads.on_chat_loop
    async def ready(self, say: Callable[[str], None]) -> AgentTransport:
        """The running agent, started (and initialized) now if it is not;
        `say` tells the user of a back-off wait."""
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if self._thread.closing:  # a start now would outlive the loop that must end it
                raise AgentGone("the chat is closing")
            bridge = self.bridge
            if bridge is not None and bridge.running and not self._expected_exit and bridge is not self._failed_start:
                return bridge
            await self._backoff(say)
            try:
                command = self._command()
            except Exception as error:  # e.g. qwen not on PATH: say so, with the fix
                raise AgentError(str(error)) from error
            events = _BridgeEvents(self)
            bridge = self._new_bridge(command, events)
            events.bridge = self.bridge = bridge
            self._expected_exit = False
            self._thread.bridges[:] = [b for b in self._thread.bridges if b.running] + [bridge]
            self._last_start = time.monotonic()
            try:
                self.initialized = await asyncio.wait_for(bridge.start(), START_TIMEOUT)
            except (OSError, AgentError) as error:  # TimeoutError is an OSError
                self.failures += 1
                self._failed_start = bridge
                bridge.kill()
                why = f"it did not answer within {START_TIMEOUT:g} s" if isinstance(error, TimeoutError) else error
                raise AgentError(f"could not start the agent ({' '.join(bridge.command.argv)}): {why}") from error
            self.auth_methods = [m.id for m in self.initialized.auth_methods or []]
            return bridge

    def _new_bridge(self, command: AgentCommand, events: BridgeEvents) -> AgentTransport:
        """The agent of `command` (a transport may offer another kind)."""
        return StdioBridge(command, lambda: self._router, events)

    @threads.on_chat_loop
    async def _backoff(self, say: Callable[[str], None]) -> None:
        if self.failures == 0:
            return
        delay = min(BACKOFF_FIRST * 2 ** (self.failures - 1), BACKOFF_MAX)
        wait = self._last_start + delay - time.monotonic()
        if wait > 0:
            say(f"Restarting the agent in {wait:.0f} s…")
            await asyncio.sleep(wait)

    @threads.on_chat_loop
    async def stop(self) -> None:
        """End the agent as asked (no chat reports it as an error); the next
        use starts it again."""
        bridge = self.bridge
        self._expected_exit = True
        if bridge is not None:
            await bridge.stop()

    def call(self, method: str, params: JsonObject) -> Future[Any]:
        """Ask the agent `method` (started if need be) from any thread; the answer as it came."""

        async def ask() -> Any:
            bridge = await self.ready(lambda text: log.info("chat: %s", text))
            return await bridge.request(method, params)

        return self._thread.submit(ask())

    @threads.on_chat_loop
    def turn_succeeded(self) -> None:
        self.failures = 0

    # --- from the bridge --------------------------------------------------

    @threads.on_chat_loop
    def session_update(self, notification: SessionNotification) -> None:
        chat = self.owner_of(notification.session_id)
        if chat is not None:
            chat.session_update(notification)
        elif self._opening and len(self._unclaimed) < UNCLAIMED_MAX:
            self._unclaimed.append(notification)
        else:
            self._warn_once("update", "dropped a session/update for a session no chat holds: %.100r",
                            notification.session_id)

    @threads.on_chat_loop
    def ext_notification(self, method: str, params: JsonObject) -> None:
        session_id = params.get("sessionId")
        if session_id is None:  # about the agent, not one session
            for each in self.owners():
                each.ext_notification(method, params)
            return
        chat = self.owner_of(session_id)
        if chat is None:
            self._warn_once(f"notify:{method}", "dropped %s for a session no chat holds: %.100r", method, session_id)
        else:
            chat.ext_notification(method, params)

    @threads.on_chat_loop
    def exited(self, bridge: AgentTransport, returncode: int | None, stderr_tail: list[str]) -> None:
        """Every chat whose session was on `bridge` hears of its exit; one that
        was replaced already (a restart) was ended on purpose."""
        expected = self._expected_exit or bridge is not self.bridge
        if not expected and (time.monotonic() - self._last_start < STABLE_SECONDS or returncode != 0):
            self.failures += 1
        for chat in self.owners():
            chat.exited(bridge, returncode, stderr_tail, expected=expected)

    @threads.on_chat_loop
    def refused(self, message: str) -> None:
        for chat in self.owners():
            chat.refused(message)

    @threads.on_chat_loop
    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)


class _BridgeEvents:
    """One bridge's events (an old bridge's late exit is told apart)."""

    def __init__(self, connection: AgentConnection) -> None:
        self._connection = connection
        self.bridge: AgentTransport | None = None

    def session_update(self, notification: SessionNotification) -> None:
        self._connection.session_update(notification)

    def ext_notification(self, method: str, params: JsonObject) -> None:
        self._connection.ext_notification(method, params)

    def exited(self, returncode: int | None, stderr_tail: list[str]) -> None:
        if self.bridge is not None:
            self._connection.exited(self.bridge, returncode, stderr_tail)

    def refused(self, message: str) -> None:
        self._connection.refused(message)


class SessionRequestRouter:
    """The agent's requests, each routed to the handler of the owner of the session it names."""

    def __init__(self, connection: AgentConnection) -> None:
        self._connection = connection

    def _of(self, session_id: object, method: str) -> AgentRequestHandler:
        chat = self._connection.owner_of(session_id)
        if chat is None:
            log.warning("chat: refused the agent's %s for a session no chat holds: %.100r", method, session_id)
            raise UnknownSession(session_id)
        return chat.request_handler()

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        return await self._of(request.session_id, "fs/read_text_file").read_text_file(request)

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse | None:
        return await self._of(request.session_id, "fs/write_text_file").write_text_file(request)

    async def request_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        return await self._of(request.session_id, "session/request_permission").request_permission(request)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if "sessionId" not in params:
            raise RequestError.method_not_found(method)
        return await self._of(params["sessionId"], method).ext_method(method, params)

    def cancel_pending(self) -> None:
        for chat in self._connection.owners():
            chat.request_handler().cancel_pending()
