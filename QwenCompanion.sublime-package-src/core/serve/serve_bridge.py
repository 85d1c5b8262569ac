"""The chat's agent on a `qwen serve` daemon: the part of `AgentBridge`'s
surface a `Conversation` uses (start, new session, prompt, cancel, stop),
over the daemon's HTTP routes and event stream (session.py).

Session updates go to the same `BridgeEvents` as stdio's (so into the same
renderer), and permission questions to the same request handler (the chat's
review or quick panel). What the daemon offers no route for answers
`NotOnServe`. Everything here runs on the chat's asyncio thread except
`kill`, which any thread may call; the daemon's start and stop block and run
in the loop's executor, never on Sublime's threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    RequestPermissionRequest,
    SessionNotification,
    UserMessageChunk,
)
from pydantic import ValidationError

from ..chat.agent_connection import AgentConnection
from ..chat.bridge import (
    PROMPT_ELSEWHERE,
    PROMPT_STEERED,
    AgentBridge,
    AgentCommand,
    AgentError,
    AgentGone,
    BridgeEvents,
)
from ..chat.render import chunk_text
from ..chat.request_handler import AgentRequestHandler
from ..json_types import JsonObject
from .daemon import (
    Attached,
    DaemonRefused,
    DaemonStatus,
    attach_or_start,
    daemon_status,
    is_users_process,
    stop_recorded,
)
from .http import Address, HttpError
from .session import ServeError, ServeSession, SessionGone

log = logging.getLogger(__name__)

SERVE_AGENT_NAME = "qwen serve"


# ACP's session requests the daemon has a route for: (route, ACP field, the route's field).
_SESSION_ROUTES: dict[str, tuple[str, str, str]] = {
    "session/set_model": ("/model", "modelId", "modelId"),
    "session/set_mode": ("/approval-mode", "modeId", "mode"),
}
# The daemon's approval modes (0.24.4's APPROVAL_MODES): its session answer lists none, so the chat's mode picker gets these.
DAEMON_MODES = ("plan", "default", "auto-edit", "auto", "yolo")


def session_answer(session_id: str) -> JsonObject:
    """A new session's answer as the chat adopts it (ACP's shape): its id and the modes it can set."""
    return {"sessionId": session_id,
            "modes": {"availableModes": [{"id": mode, "name": mode} for mode in DAEMON_MODES]}}


class NotOnServe(AgentError):
    """What the chat asked has no route on the daemon."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not on the serve transport (set chat_transport to \"stdio\" for it)")


@dataclass(frozen=True)
class ServeCommand(AgentCommand):
    """The daemon's full command line (its flags inside it: through a login
    shell they must be part of the shell's command), its folders, where its
    record lives, and whether it outlives the window."""

    folders: tuple[str, ...] = ()
    cache_dir: Path = field(default_factory=Path)
    keep_running: bool = True


class ServeBridge(AgentBridge):
    def __init__(self, command: ServeCommand, requests: Callable[[], AgentRequestHandler],
                 events: BridgeEvents) -> None:
        super().__init__(command, requests, events)
        self._serve = command
        self.attached: Attached | None = None
        self._sessions: dict[str, ServeSession] = {}
        self._live = False
        self._ended = False  # stop() told the chats once

    @property
    def running(self) -> bool:
        return self._live

    @property
    def address(self) -> Address | None:
        record = self.attached.record if self.attached is not None else None
        return Address(record.host, record.port, record.token) if record is not None else None

    # --- lifecycle -----------------------------------------------------------

    async def start(self) -> InitializeResponse:
        command = self._serve
        try:
            self.attached = await asyncio.get_running_loop().run_in_executor(None, lambda: attach_or_start(
                command.cache_dir, command.folders, [], command.env, daemon_argv=command.argv))
        except DaemonRefused as refused:
            raise AgentError(f"the qwen serve daemon was not used: {refused}") from refused
        if self.attached.note:
            log.info("serve: started a daemon (%s)", self.attached.note)
        self.pid = self.attached.record.pid
        self.started_at = time.time()
        self._live = True
        version = ""
        try:
            version = (await asyncio.get_running_loop().run_in_executor(None, self.status)).version
        except (OSError, HttpError) as error:
            log.info("serve: no daemon status (%s)", error)
        self.initialized = InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_info=Implementation(name=SERVE_AGENT_NAME, version=version),
            agent_capabilities=AgentCapabilities(prompt_capabilities=PromptCapabilities(image=True)),
        )
        return self.initialized

    def status(self) -> DaemonStatus:
        """GET /daemon/status (blocks: never on Sublime's threads)."""
        if self.attached is None:
            raise OSError("no daemon attached")
        return daemon_status(self.attached.record)

    async def stop(self, end_daemon: bool = False) -> None:
        """Stop reading the sessions; end the daemon when asked or when it is not kept running."""
        self._live = False
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        if end_daemon or not self._serve.keep_running:
            await asyncio.get_running_loop().run_in_executor(None, self._end_daemon)
        if not self._ended:
            self._ended = True
            self._events.exited(0, [])

    def kill(self) -> None:
        """Any thread, never waits long: the daemon ends now unless kept running
        (signals only); `stop` closes the sessions on the loop."""
        self._live = False
        if not self._serve.keep_running:
            self._end_daemon()

    def _end_daemon(self) -> None:
        try:
            stop_recorded(self._serve.cache_dir, self._serve.folders)
        except DaemonRefused as refused:
            log.warning("serve: the daemon was left alone: %s", refused)

    async def reap(self) -> None:
        pass  # the daemon is not our child once recorded: stop_recorded ended it

    def release(self) -> None:
        pass  # no pipes: the daemon writes to its own file

    # --- sessions ------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: list[JsonObject]) -> tuple[NewSessionResponse, JsonObject]:
        address = self.address
        if address is None or not self._live:
            raise AgentGone("the qwen serve daemon is not running")
        try:
            # The first chat shares the folder's session with other clients; a further one gets its own.
            session = await ServeSession.open(address, cwd, _SessionEvents(self), own=bool(self._sessions))
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon did not open a session: {error}") from error
        previous = self._sessions.pop(session.session_id, None)
        if previous is not None:
            previous.close()
        self._sessions[session.session_id] = session
        if not session.attached:  # one the daemon had is read from its start by `catch_up`
            session.start()
        return NewSessionResponse(session_id=session.session_id), session_answer(session.session_id)

    def replays(self, session_id: str) -> bool:
        """The session was the daemon's before this chat attached (a reload,
        another window): `catch_up` shows what it holds."""
        session = self._sessions.get(session_id)
        return session is not None and not session.started

    async def catch_up(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.started:
            return
        session.start(replay=True)
        await session.catch_up()

    async def load_session(self, session_id: str, cwd: str, mcp_servers: list[JsonObject]) -> Any:
        raise NotOnServe("loading an earlier session")

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: list[JsonObject]) -> JsonObject:
        raise NotOnServe("resuming an earlier session")

    async def list_page(self, cwd: str, cursor: str | None) -> Any:
        raise NotOnServe("the list of earlier sessions")

    async def request(self, method: str, params: JsonObject) -> Any:
        route = _SESSION_ROUTES.get(method)
        if route is None:
            raise NotOnServe(f"{method} (rewind and sign-in)")
        suffix, field_name, daemon_field = route
        session_id = str(params.get("sessionId") or "")
        session = self._sessions.get(session_id)
        if session is None or not self._live:
            raise AgentError("the session is not open on the qwen serve daemon")
        try:
            return await session.post(suffix, {daemon_field: params.get(field_name)})
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon refused {method}: {error}") from error

    async def prompt(self, session_id: str, blocks: list[JsonObject]) -> PromptResponse:
        self._check_alive()
        session = self._sessions.get(session_id)
        if not self._live:
            raise AgentGone("the qwen serve daemon is gone")
        if session is None:
            raise AgentError("the session is not open on the qwen serve daemon")
        if not session.started:
            session.start()
        try:
            result = await session.prompt(blocks)
        except SessionGone as gone:
            self._sessions.pop(session_id, None)
            raise AgentError(f"the daemon's session ended: {gone}") from gone
        except (ServeError, OSError, HttpError) as error:
            self._check_alive()
            raise AgentError(f"the prompt failed: {error}") from error
        return PromptResponse.model_validate({"stopReason": result.stop_reason})

    def _check_alive(self) -> None:
        """A daemon that died (killed, crashed) is reported like an agent that
        exited: the chats say so and the next prompt starts a daemon again."""
        attached = self.attached
        if attached is None or not self._live:
            return
        # A daemon this plugin host started is its child: until reaped it still answers a signal.
        gone = attached.process.poll() is not None if attached.process is not None else not is_users_process(attached.record.pid)
        if gone:
            self._live = False
            for session in self._sessions.values():
                session.close()
            self._sessions.clear()
            if not self._ended:
                self._ended = True
                self._events.exited(None, ["the qwen serve daemon is gone"])

    @property
    def offers_steer(self) -> bool:
        return True  # POST /session/:id/mid-turn-message

    async def steer(self, session_id: str, text: str) -> bool:
        session = self._sessions.get(session_id)
        if session is None or not self._live:
            raise AgentError("the session is not open on the qwen serve daemon")
        try:
            return await session.steer(text) is not None
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon refused the steer: {error}") from error

    async def cancel(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        try:
            await session.cancel()
        except (ServeError, OSError, HttpError) as error:
            log.warning("serve: cancel was not taken: %s", error)


class _SessionEvents:
    """One session's events, handed to the chat as the stdio agent's are."""

    def __init__(self, bridge: ServeBridge) -> None:
        self._bridge = bridge

    def session_update(self, params: JsonObject) -> None:
        notification = _notification(params, "a session update")
        if notification is not None:
            self._bridge._events.session_update(notification)

    async def request_permission(self, params: JsonObject) -> JsonObject:
        request = RequestPermissionRequest.model_validate(params)
        response = await self._bridge._requests().request_permission(request)
        answer: JsonObject = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return answer

    def prompt_elsewhere(self, params: JsonObject) -> None:
        notification = _notification(params, "another client's prompt")
        if notification is not None and isinstance(notification.update, UserMessageChunk):
            self._bridge._events.ext_notification(
                PROMPT_ELSEWHERE, {"sessionId": notification.session_id, "text": chunk_text(notification.update.content)})

    def refused(self, message: str) -> None:
        self._bridge._events.refused(message)

    def steered(self, params: JsonObject) -> None:
        self._bridge._events.ext_notification(PROMPT_STEERED, params)


def _notification(params: JsonObject, what: str) -> SessionNotification | None:
    try:
        return SessionNotification.model_validate(params)
    except ValidationError:
        log.info("serve: dropped %s of an unknown shape", what)
        return None


class ServeConnection(AgentConnection):
    """A window's chats on its folders' daemon: the connection's routing and
    lifecycle, with a `ServeBridge` for the agent process."""

    def _new_bridge(self, command: AgentCommand, events: BridgeEvents) -> AgentBridge:
        if not isinstance(command, ServeCommand):
            raise AgentError("the serve transport needs the daemon's command")
        return ServeBridge(command, lambda: self._router, events)

    def end_daemon(self) -> Future[bool]:
        """Stop Serve Daemon (any thread): the daemon and its agents end whatever
        serve_keep_running says; the chats hear of it as an asked-for stop and
        the next prompt starts a daemon again. True when one was attached."""

        async def end() -> bool:
            bridge = self.bridge
            if not isinstance(bridge, ServeBridge) or not bridge.running:
                return False
            self._expected_exit = True
            await bridge.stop(end_daemon=True)
            return True

        return self._thread.submit(end())
