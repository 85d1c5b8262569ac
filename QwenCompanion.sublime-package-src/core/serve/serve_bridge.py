"""The chat's agent on a `qwen serve` daemon: an `AgentTransport`
(core/chat/agent/transport.py) over the daemon's HTTP routes and event
stream (session.py).

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
from urllib.parse import quote, urlencode

from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    RequestPermissionRequest,
    SessionCapabilities,
    SessionListCapabilities,
    SessionNotification,
    SessionResumeCapabilities,
    UserMessageChunk,
)
from pydantic import ValidationError

from .. import threads
from ..chat.agent.agent_connection import AgentConnection
from ..chat.agent.agents import QWEN_AGENT_NAME
from ..chat.agent.mcp_status import MCP_RESTART, MCP_TOOLS, SESSION_RESOURCES
from ..chat.agent.transport import (
    BRIDGE_NOTE,
    PROMPT_ELSEWHERE,
    PROMPT_STEERED,
    AgentAbilities,
    AgentCommand,
    AgentError,
    AgentGone,
    AgentTransport,
    BridgeEvents,
)
from ..chat.history.branch import BRANCH_METHOD, TRANSCRIPT_METHOD
from ..chat.history.conversation_edits import DELETE_METHOD, RENAME_METHOD
from ..chat.history.rewind import REWIND_METHOD, SNAPSHOTS_METHOD, prompt_id_of
from ..chat.requests.request_handler import AgentRequestHandler
from ..chat.transcript.render import chunk_text
from ..json_types import JsonObject
from .client_mcp import CLOSE_SECONDS, ClientMcpChannel
from .daemon import (
    STOP_GRACE_SECONDS,
    Attached,
    DaemonRecord,
    DaemonRefused,
    DaemonStatus,
    attach_or_start,
    daemon_running,
    daemon_status,
    forget_record,
    record_path,
    stop_daemon,
)
from .daemon_session import DaemonSession, ServeError, SessionGone
from .http import Address, HttpError, request_json
from .steer import steer_of
from .watchdog import start_watchdog

log = logging.getLogger(__name__)



# ACP's session requests the daemon has a route for: (route, ACP field, the route's field).
_SESSION_ROUTES: dict[str, tuple[str, str, str]] = {
    "session/set_model": ("/model", "modelId", "modelId"),
    "session/set_mode": ("/approval-mode", "modeId", "mode"),
}
# The daemon's approval modes (0.24.4's APPROVAL_MODES): its session answer lists none, so the chat's mode picker gets these.
DAEMON_MODES = ("plan", "default", "auto-edit", "auto", "yolo")
LIST_PAGE_SIZE = 100
# The most a stop takes: the channels close (together), then the daemon gets
# its grace before SIGKILL; the rest is slack for a busy machine.
END_DAEMON_SECONDS = CLOSE_SECONDS + STOP_GRACE_SECONDS + 10.0
MCP_READY_SECONDS = 120.0  # a prompt waits this long at most for the session's MCP servers to be registered
REASONING_EFFORT = "reasoning_effort"  # the one option `/config-option` takes (0.24.4)


def session_answer(session_id: str) -> JsonObject:
    """A new session's answer as the chat adopts it (ACP's shape): its id and the modes it can set."""
    return {"sessionId": session_id,
            "modes": {"availableModes": [{"id": mode, "name": mode} for mode in DAEMON_MODES]}}


def _config_route(params: JsonObject) -> tuple[str, JsonObject]:
    """ACP's session/set_config_option as the daemon's route for that option:
    its mode and model have routes of their own, `/config-option` takes only
    the reasoning effort."""
    config_id, value = params.get("configId"), params.get("value")
    if config_id == "mode":
        return "/approval-mode", {"mode": value}
    if config_id == "model":
        return "/model", {"modelId": value}
    if config_id == REASONING_EFFORT:
        return "/config-option", {"configId": config_id, "value": value}
    raise NotOnServe(f"the session option {config_id!r}")


def files_changed_since(snapshots: JsonObject, prompt_id: str) -> int:
    """How many file changes the daemon's snapshots count from `prompt_id`'s turn on."""
    listed = snapshots.get("snapshots")
    counted, found = 0, False
    for snapshot in listed if isinstance(listed, list) else []:
        if not isinstance(snapshot, dict):
            continue
        found = found or snapshot.get("promptId") == prompt_id
        stats = snapshot.get("diffStats")
        changed = stats.get("filesChanged") if isinstance(stats, dict) else None
        if found and isinstance(changed, int) and not isinstance(changed, bool) and changed > 0:
            counted += changed
    return counted


def answer_with_state(session_id: str, answer: JsonObject) -> JsonObject:
    """A session's answer as the chat adopts it: the daemon's `state` (ACP's
    modes, models and configOptions: in a load's or resume's answer for a
    session it restored from disk, and in `/context`'s) over the daemon's
    approval modes."""
    state = answer.get("state")
    taken = {key: state[key] for key in ("modes", "models", "configOptions")
             if isinstance(state, dict) and isinstance(state.get(key), (dict, list))}
    return {**session_answer(session_id), **taken}


def session_list_page(body: JsonObject) -> JsonObject:
    """The daemon's page of sessions in session/list's shape (history.py reads and bounds it)."""
    sessions = body.get("sessions")
    listed = [
        {"sessionId": raw.get("sessionId"), "cwd": raw.get("workspaceCwd"), "title": raw.get("displayName"),
         "updatedAt": raw.get("updatedAt")}
        for raw in (sessions if isinstance(sessions, list) else []) if isinstance(raw, dict)
    ]
    following = body.get("nextCursor")
    return {"sessions": listed, **({"nextCursor": following} if isinstance(following, str) else {})}


class NotOnServe(AgentError):
    """What the chat asked has no route on the daemon."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not on the serve transport (set chat_transport to \"stdio\" for it)")


def unrouted(method: str) -> str:
    """What a method with no route on the daemon is, for the user. qwen serve
    0.24.4's HTTP routes hold none of qwen's own session methods (btw, recap,
    status, permissions: those are on its own ACP endpoint only)."""
    if method in ("authenticate", "logout"):
        return f"{method} (sign-in)"
    if method.startswith("qwen/"):
        return f"{method} (one of qwen's own methods)"
    return method


@dataclass(frozen=True)
class ServeCommand(AgentCommand):
    """The daemon's full command line (its flags inside it: through a login
    shell they must be part of the shell's command), its folders, where its
    record lives, and whether it outlives the window."""

    cache_dir: Path = field(default_factory=Path)
    keep_running: bool = True
    idle_minutes: float = 0.0  # the watchdog ends a daemon idle this long (0: never)
    watchdog_script: str = ""  # serve_watchdog.js's text ("": no watchdog)


class ServeBridge:
    """The serve transport: a sibling of the stdio one (`StdioBridge`), both `AgentTransport`s."""

    def __init__(self, command: ServeCommand, requests: Callable[[], AgentRequestHandler],
                 events: BridgeEvents) -> None:
        self.command: AgentCommand = command
        self._serve = command
        self._requests = requests
        self._events = events
        self.abilities = AgentAbilities()
        self.pid: int | None = None
        self.started_at = 0.0
        self.stderr_lines: list[str] = []  # the daemon writes its log to a file of its own
        self.attached: Attached | None = None
        self._sessions: dict[str, DaemonSession] = {}
        self._mcp: dict[str, ClientMcpChannel] = {}  # each session's MCP servers, over the daemon's WebSocket
        self._closing_mcp: asyncio.Task[None] | None = None
        self._live = False
        self._ended = False  # stop() told the chats once

    @property
    def running(self) -> bool:
        """Any thread (a chat's status reads it)."""
        return self._live

    @property
    @threads.on_chat_loop
    def address(self) -> Address | None:
        record = self.attached.record if self.attached is not None else None
        return Address(record.host, record.port, record.token) if record is not None else None

    # --- lifecycle -----------------------------------------------------------

    @threads.on_chat_loop
    async def start(self) -> InitializeResponse:
        command = self._serve
        try:
            self.attached = await asyncio.get_running_loop().run_in_executor(None, lambda: attach_or_start(
                command.cache_dir, command.folders, [], command.env, daemon_argv=command.argv,
                on_started=self._watch))
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
        self.abilities.initialized = InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            # The daemon's agents are qwen: its own methods (rewind) go to the routes `request` maps.
            agent_info=Implementation(name=QWEN_AGENT_NAME, version=version),
            # Earlier sessions: `load_session`, `resume_session` and `list_page` over the daemon's routes.
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=PromptCapabilities(image=True), load_session=True,
                # The session's MCP servers go through client_mcp.py, which relays stdio and HTTP ones.
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities(),
                                                         resume=SessionResumeCapabilities())),
        )
        return self.abilities.initialized

    @threads.may_block
    def _watch(self, record: DaemonRecord) -> None:
        """A daemon we started gets its watchdog (it may outlive Sublime)."""
        command = self._serve
        if command.watchdog_script:
            start_watchdog(record, command.watchdog_script, command.cache_dir, command.idle_minutes, command.env)

    @threads.may_block
    def status(self) -> DaemonStatus:
        """GET /daemon/status (blocks: never on Sublime's threads)."""
        if self.attached is None:
            raise OSError("no daemon attached")
        return daemon_status(self.attached.record)

    @threads.on_chat_loop
    async def stop(self, end_daemon: bool = False) -> None:
        """Stop reading the sessions; end the daemon when asked or when it is not kept running."""
        # Forgotten before this bridge reads as stopped: a prompt sent from
        # then on starts the next daemon, and must not find this one's record
        # while it ends (its port closed, its pid not yet gone).
        ending = self._forget_daemon() if end_daemon or not self._serve.keep_running else None
        self._live = False
        await self._close_sessions()
        if ending is not None:
            await asyncio.get_running_loop().run_in_executor(None, stop_daemon, ending)
        if not self._ended:
            self._ended = True
            self._events.exited(0, [])

    def kill(self) -> None:
        """Any thread, never waits: unless kept running, the daemon's record is
        forgotten now (so a daemon started after this is never the one stopped)
        and the daemon ends on a thread of ours (telling it is ours reads /proc,
        or runs `ps` and `lsof` on macOS); `stop` or `reap` closes the sessions on the loop."""
        ending = None if self._serve.keep_running else self._forget_daemon()
        self._live = False
        if ending is not None:
            threads.start("QwenCompanion serve daemon stop", lambda: stop_daemon(ending))

    def _forget_daemon(self) -> DaemonRecord | None:
        """The folders' daemon record, removed (a small file: any thread); None
        when there is none or it is not the user's private file (left alone)."""
        try:
            return forget_record(record_path(self._serve.cache_dir, self._serve.folders))
        except DaemonRefused as refused:
            log.warning("serve: the daemon was left alone: %s", refused)
            return None

    @threads.on_chat_loop
    async def reap(self) -> None:
        """The daemon ends (and is reaped) in `stop_daemon`; what is ours on
        this loop closes here, before the loop does: a drained chat thread
        reaps without a `stop`."""
        await self._close_sessions()

    @threads.on_chat_loop
    async def _close_sessions(self) -> None:
        """Stop reading the sessions, and take their MCP servers off the daemon."""
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        await self._close_mcp()

    @threads.on_chat_loop
    def release(self) -> None:
        pass  # no pipes: the daemon writes to its own file

    # --- sessions ------------------------------------------------------------

    @threads.on_chat_loop
    async def new_session(
        self, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> tuple[NewSessionResponse, JsonObject]:
        address = self._running_address()
        try:
            # The first chat shares the folder's session with other clients; a further one gets its own.
            session = await DaemonSession.open(address, cwd, _SessionEvents(self), own=bool(self._sessions))
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon did not open a session: {error}") from error
        self._keep(session)
        await self._give_mcp(session.session_id, cwd, mcp_servers)
        if not session.attached:  # one the daemon had is read from its start by `catch_up`
            session.start()
        return NewSessionResponse(session_id=session.session_id), await self._with_state(session)

    @threads.on_chat_loop
    async def _with_state(self, session: DaemonSession) -> JsonObject:
        """The session's answer with its models, modes and options: `POST
        /session` answers none, `GET /session/:id/context` holds them."""
        try:
            context = await session.get("/context")
        except (ServeError, OSError, HttpError, TimeoutError) as error:
            log.info("serve: no models or modes for session %s (%s)", session.session_id, error)
            context = {}
        return answer_with_state(session.session_id, context)

    @threads.on_chat_loop
    def _running_address(self) -> Address:
        address = self.address
        if address is None or not self._live:
            raise AgentGone("the qwen serve daemon is not running")
        return address

    @threads.on_chat_loop
    def _keep(self, session: DaemonSession) -> None:
        previous = self._sessions.pop(session.session_id, None)
        if previous is not None:
            previous.close()
        self._sessions[session.session_id] = session

    @threads.on_chat_loop
    async def _give_mcp(self, session_id: str, cwd: str, mcp_servers: list[JsonObject]) -> None:
        """The session's MCP servers (the package's IDE tools, the user's) to
        the daemon, registered for this session only (client_mcp.py); the
        registration goes on in the background, and a prompt waits for it."""
        previous = self._mcp.pop(session_id, None)
        if previous is not None:
            await previous.close()
        address = self.address
        if not mcp_servers or address is None:
            return

        def say(text: str) -> None:
            self._events.ext_notification(BRIDGE_NOTE, {"sessionId": session_id, "text": text})

        channel = ClientMcpChannel(address, session_id, mcp_servers, cwd, say, self._serve.env)
        self._mcp[session_id] = channel
        channel.start()

    @threads.on_chat_loop
    async def _close_mcp(self) -> None:
        channels, self._mcp = list(self._mcp.values()), {}
        # Together: a hung daemon holds each close for CLOSE_SECONDS, and Stop
        # Serve Daemon's SIGTERM comes after them.
        await asyncio.gather(*(channel.close() for channel in channels))

    @threads.on_chat_loop
    async def _mcp_ready(self, session_id: str) -> None:
        channel = self._mcp.get(session_id)
        if channel is not None and not channel.ready.is_set():
            try:
                await asyncio.wait_for(channel.ready.wait(), MCP_READY_SECONDS)
            except TimeoutError:
                channel.note("The editor's MCP servers were not registered in time: this prompt goes without them.")

    @threads.on_chat_loop
    async def _mcp_request(self, method: str, params: JsonObject) -> JsonObject:
        """MCP Servers… on serve: the daemon's own servers (its settings') and
        the ones the chats registered, which only the chats know the tools
        of. qwen's tools and restart methods name a server, not a session: a
        server the chats registered answers from (or registers again on)
        every session that holds it."""
        try:
            if method == SESSION_RESOURCES:
                return await self._session_servers(self._open_session(params))
            name = str(params.get("serverName") or "")
            holding = [(session_id, channel) for session_id, channel in self._mcp.items() if name in channel.servers]
            if holding and method == MCP_TOOLS:
                return {"tools": [{"name": tool} for tool in holding[0][1].servers[name].tools]}
            if holding:
                for session_id, channel in holding:
                    await self._give_mcp(session_id, channel.cwd, channel.entries)
                return {}
            path = f"/workspace/mcp/{quote(name, safe='')}/" + ("tools" if method == MCP_TOOLS else "restart")
            answer = await request_json(self._running_address(), "GET" if method == MCP_TOOLS else "POST", path)
        except (ServeError, OSError, HttpError, TimeoutError) as error:
            raise AgentError(f"the daemon did not answer {method}: {error}") from error
        if answer.status >= 400 or not isinstance(answer.body, dict):
            raise AgentError(f"the daemon refused {method}: HTTP {answer.status} {answer.body}")
        return answer.body

    @threads.on_chat_loop
    async def _session_servers(self, session: DaemonSession) -> JsonObject:
        """`GET /session/:id/resources`' servers (qwen's `qwen/status/session/resources`
        `mcp` cell), the ones the chat registered in their place."""
        channel = self._mcp.get(session.session_id)
        ours = channel.rows() if channel is not None else []
        resources = await session.get("/resources")
        cell = resources.get("mcp") if isinstance(resources, dict) else None
        listed = cell.get("servers") if isinstance(cell, dict) else None
        names = {row["name"] for row in ours}
        theirs = [server for server in (listed if isinstance(listed, list) else [])
                  if isinstance(server, dict) and server.get("name") not in names]
        return {"mcp": {"servers": theirs + ours}}

    @threads.on_chat_loop
    async def _restore(self, session_id: str, cwd: str, action: str) -> tuple[DaemonSession, JsonObject]:
        """`POST /session/:id/load` or `/resume`: the session and the daemon's answer."""
        address = self._running_address()
        try:
            session, answer = await DaemonSession.restore(address, session_id, cwd, _SessionEvents(self), action)
        except (ServeError, OSError, HttpError, TimeoutError) as error:
            raise AgentError(f"the daemon did not {action} the session: {error}") from error
        self._keep(session)
        return session, answer

    @threads.on_chat_loop
    def replays(self, session_id: str) -> bool:
        """The session was the daemon's before this chat attached (a reload,
        another window): `catch_up` shows what it holds."""
        session = self._sessions.get(session_id)
        return session is not None and not session.started

    @threads.on_chat_loop
    async def catch_up(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.started:
            return
        session.start(replay=True)
        await session.catch_up()

    @threads.on_chat_loop
    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> tuple[LoadSessionResponse, JsonObject]:
        """The session back with its conversation. One the daemon still runs
        (a further chat after a reload, a session of another window) is read
        from the start of its ring by `catch_up`, so a turn still running goes
        on in the same paragraph; one the daemon restored from disk hands its
        conversation over in the answer (`compactedReplay`), replayed here."""
        session, answer = await self._restore(session_id, cwd, "load")
        await self._give_mcp(session_id, cwd, mcp_servers)
        if not session.attached:
            session.replay(answer.get("compactedReplay"))
            session.start()
        raw = answer_with_state(session_id, answer)
        return LoadSessionResponse.model_validate(raw), raw

    @threads.on_chat_loop
    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> JsonObject:
        """The session goes on from the daemon's last event, its conversation not shown again."""
        session, answer = await self._restore(session_id, cwd, "resume")
        await self._give_mcp(session_id, cwd, mcp_servers)
        session.start()
        return answer_with_state(session_id, answer)

    @threads.on_chat_loop
    async def list_page(self, cwd: str, cursor: str | None) -> Any:
        """One page of the folder's saved sessions (`GET /workspace/:cwd/sessions`), in session/list's shape."""
        address = self._running_address()
        query = urlencode({"size": LIST_PAGE_SIZE, **({"cursor": cursor} if cursor else {})})
        try:
            answer = await request_json(address, "GET", f"/workspace/{quote(cwd, safe='')}/sessions?{query}")
        except (OSError, HttpError, TimeoutError) as error:
            raise AgentError(f"the daemon did not list the sessions: {error}") from error
        if answer.status != 200 or not isinstance(answer.body, dict):
            raise AgentError(f"the daemon did not list the sessions: HTTP {answer.status} {answer.body}")
        return session_list_page(answer.body)

    @property
    @threads.on_chat_loop
    def answers_give_branch_points(self) -> bool:
        return False  # a turn's end carries none: the branch asks the transcript

    @threads.on_chat_loop
    async def request(self, method: str, params: JsonObject) -> Any:
        if method in (REWIND_METHOD, SNAPSHOTS_METHOD):
            return await self._rewind(method, params)
        if method in (BRANCH_METHOD, TRANSCRIPT_METHOD):
            return await self._branch(method, params)
        if method in (RENAME_METHOD, DELETE_METHOD):
            return await self._saved_session(method, params)
        if method in (SESSION_RESOURCES, MCP_TOOLS, MCP_RESTART):
            return await self._mcp_request(method, params)
        if method == "session/set_config_option":
            suffix, body = _config_route(params)
        elif method in _SESSION_ROUTES:
            suffix, field_name, daemon_field = _SESSION_ROUTES[method]
            body = {daemon_field: params.get(field_name)}
        else:
            raise NotOnServe(unrouted(method))
        session = self._open_session(params)
        try:
            return await session.post(suffix, body)
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon refused {method}: {error}") from error

    @threads.on_chat_loop
    async def _branch(self, method: str, params: JsonObject) -> JsonObject:
        """qwen's branch over the daemon's routes: its transcript (the same
        events as qwen's `transcript` method) and `POST /branch`, whose answer
        (201 `{sessionId, displayName, forkedFrom}`) is given in qwen's shape."""
        session = self._open_session(params)
        try:
            if method == TRANSCRIPT_METHOD:
                return await session.get("/transcript")
            answer = await session.post("/branch", {"atRecordId": params.get("atRecordId")})
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon refused the branch: {error}") from error
        return {"newSessionId": answer.get("sessionId"), "title": answer.get("displayName")}

    @threads.on_chat_loop
    async def _saved_session(self, method: str, params: JsonObject) -> JsonObject:
        """qwen's renameSession and deleteSession on a saved session (open
        here or not): `PATCH /session/:id/metadata {displayName}` and
        `POST /sessions/delete {sessionIds}`, answered in qwen's `{success}`."""
        address = self._running_address()
        session_id = str(params.get("sessionId") or "")
        try:
            if method == RENAME_METHOD:
                answer = await request_json(address, "PATCH", f"/session/{quote(session_id, safe='')}/metadata",
                                            {"displayName": params.get("title")})
                return {"success": answer.status == 200}
            answer = await request_json(address, "POST", "/sessions/delete", {"sessionIds": [session_id]})
        except (OSError, HttpError, TimeoutError) as error:
            raise AgentError(f"the daemon did not answer {method}: {error}") from error
        removed = answer.body.get("removed") if isinstance(answer.body, dict) else None
        return {"success": answer.status == 200 and isinstance(removed, list) and session_id in removed}

    @threads.on_chat_loop
    def _open_session(self, params: JsonObject) -> DaemonSession:
        session = self._sessions.get(str(params.get("sessionId") or ""))
        if session is None or not self._live:
            raise AgentError("the session is not open on the qwen serve daemon")
        return session

    @threads.on_chat_loop
    async def _rewind(self, method: str, params: JsonObject) -> JsonObject:
        """qwen's rewind over the daemon's routes, the conversation only. The
        daemon's agent wrote its files itself, so the package holds no
        checkpoints of them, and the daemon's own restore (`rewindFiles`, its
        default) puts files back on disk blindly, over what the user changed
        since: it is never asked. The files a rewound turn changed are said as
        not restored."""
        session = self._open_session(params)
        try:
            snapshots = await session.get("/rewind/snapshots")
            if method == SNAPSHOTS_METHOD:
                return snapshots
            index = params.get("targetTurnIndex")
            prompt_id = params.get("promptId") or prompt_id_of(snapshots, index if isinstance(index, int) else -1)
            if not isinstance(prompt_id, str):
                raise AgentError(f"the daemon has no snapshot of prompt {index}")
            answer = await session.post("/rewind", {"promptId": prompt_id, "rewindFiles": False})
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon refused the rewind: {error}") from error
        changed = files_changed_since(snapshots, prompt_id)
        unrestored = f"{changed} file(s) the agent changed on the serve transport (it writes them itself; see git)"
        return {"success": answer.get("rewound") is True, "filesChanged": [],
                "filesFailed": [unrestored] if changed else []}

    @threads.on_chat_loop
    async def prompt(self, session_id: str, blocks: list[JsonObject]) -> PromptResponse:
        self._check_alive()
        session = self._sessions.get(session_id)
        if not self._live:
            raise AgentGone("the qwen serve daemon is gone")
        if session is None:
            raise AgentError("the session is not open on the qwen serve daemon")
        if not session.started:
            session.start()
        await self._mcp_ready(session_id)
        try:
            result = await session.prompt(blocks)
        except SessionGone as gone:
            self._sessions.pop(session_id, None)
            raise AgentError(f"the daemon's session ended: {gone}") from gone
        except (ServeError, OSError, HttpError) as error:
            self._check_alive()
            raise AgentError(f"the prompt failed: {error}") from error
        return PromptResponse.model_validate({"stopReason": result.stop_reason})

    @threads.on_chat_loop
    def _check_alive(self) -> None:
        """A daemon that died (killed, crashed) is reported like an agent that
        exited: the chats say so and the next prompt starts a daemon again."""
        attached = self.attached
        if attached is None or not self._live:
            return
        # A daemon this plugin host started is its child: until reaped it still answers a signal.
        gone = attached.process.poll() is not None if attached.process is not None else not daemon_running(attached.record)
        if gone:
            self._live = False
            for session in self._sessions.values():
                session.close()
            self._sessions.clear()
            self._closing_mcp = asyncio.get_running_loop().create_task(self._close_mcp())
            if not self._ended:
                self._ended = True
                self._events.exited(None, ["the qwen serve daemon is gone"])

    @property
    def sends_notes(self) -> bool:
        return True  # client_mcp.py's notes

    @property
    def offers_steer(self) -> bool:
        return True  # POST /session/:id/mid-turn-message (any thread: the composer asks)

    def can_steer(self, text: str, context: list[JsonObject]) -> bool:
        """Any thread (the composer asks)."""
        return steer_of(text, context) is not None

    @threads.on_chat_loop
    async def steer(self, session_id: str, text: str, context: list[JsonObject]) -> bool:
        session = self._sessions.get(session_id)
        if session is None or not self._live:
            raise AgentError("the session is not open on the qwen serve daemon")
        try:
            return await session.steer(text, context) is not None
        except (ServeError, OSError, HttpError) as error:
            raise AgentError(f"the daemon refused the steer: {error}") from error

    @threads.on_chat_loop
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

    @threads.on_chat_loop
    def session_update(self, params: JsonObject) -> None:
        notification = _notification(params, "a session update")
        if notification is not None:
            self._bridge._events.session_update(notification)

    @threads.on_chat_loop
    async def request_permission(self, params: JsonObject) -> JsonObject:
        request = RequestPermissionRequest.model_validate(params)
        response = await self._bridge._requests().request_permission(request)
        answer: JsonObject = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return answer

    @threads.on_chat_loop
    def prompt_elsewhere(self, params: JsonObject) -> None:
        notification = _notification(params, "another client's prompt")
        if notification is not None and isinstance(notification.update, UserMessageChunk):
            self._bridge._events.ext_notification(
                PROMPT_ELSEWHERE, {"sessionId": notification.session_id, "text": chunk_text(notification.update.content)})

    @threads.on_chat_loop
    def refused(self, message: str) -> None:
        self._bridge._events.refused(message)

    @threads.on_chat_loop
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

    @threads.on_chat_loop
    def _new_bridge(self, command: AgentCommand, events: BridgeEvents) -> AgentTransport:
        if not isinstance(command, ServeCommand):
            raise AgentError("the serve transport needs the daemon's command")
        return ServeBridge(command, lambda: self._router, events)

    def end_daemon(self) -> Future[bool]:
        """Stop Serve Daemon (any thread): the daemon and its agents end whatever
        serve_keep_running says; the chats hear of it as an asked-for stop and
        the next prompt starts a daemon again. True when one was attached."""

        @threads.on_chat_loop
        async def end() -> bool:
            bridge = self.bridge
            if not isinstance(bridge, ServeBridge) or not bridge.running:
                return False
            self._expected_exit = True
            await bridge.stop(end_daemon=True)
            return True

        return self._thread.submit(end())
