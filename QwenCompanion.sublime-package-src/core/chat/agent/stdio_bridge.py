"""One `qwen --acp` process and its JSON-RPC connection: the stdio
transport (`StdioBridge`, an `AgentTransport` of transport.py).

Everything here runs on the chat's asyncio thread. The connection is the ACP
SDK's own (`acp.connect_to_agent`): what the agent asks and tells goes to the
editor's `acp.Client` (acp_client.py) over the lines of acp_lines.py, which
bound what the agent sends and hand notifications over as they are read. The
process runs in a process group of its own so that ending it also ends the
CLI's child (cli-entry.js re-executes node), and `kill()` works from any
thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent
from acp.client import ClientSideConnection
from acp.schema import (
    BooleanConfigOptionCapabilities,
    ClientCapabilities,
    ClientSessionCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SessionConfigOptionsCapabilities,
)

from ... import threads
from ...cli.processes import end_group_soon, kill_group, own_group_options, start_process
from ...json_types import JsonObject
from ...version import VERSION
from ..requests.request_handler import AgentRequestHandler
from .acp_client import EditorClient
from .acp_lines import MAX_MESSAGE_BYTES, AgentLines
from .agents import can_list, prompt_for, servers_for, takes_more_folders
from .remote_paths import PathRefused, RemotePaths
from .transport import AgentAbilities, AgentCommand, AgentError, AgentGone, BridgeEvents

log = logging.getLogger(__name__)
T = TypeVar("T")

# The pipe's buffer: a longer line is read in pieces of this size.
STREAM_LIMIT = 1024 * 1024
STDERR_LINE_CHARS = 2000  # what is kept of one line of the agent's stderr
STOP_GRACE_SECONDS = 2.0
STDERR_TAIL_LINES = 40
DETAILS_MAX_CHARS = 300  # of the reason an agent gives with an error
# The slow requests a user may give up on; the agent is told with ACP's `$/cancel_request`.
GIVEN_UP = frozenset({"session/load", "session/list", "session/resume"})
CANCEL_REQUEST = "$/cancel_request"
CLIENT_INFO = Implementation(name="QwenCompanion", title="Qwen Companion for Sublime Text", version=VERSION)


def error_details(error: Exception) -> str:
    """What an agent's error adds to its message ("Internal error"): qwen's
    `data.details`, the reason (a missing key, a folder refused), bounded."""
    data = getattr(error, "data", None)
    details = data.get("details") if isinstance(data, dict) else None
    return f" ({' '.join(details.split())[:DETAILS_MAX_CHARS]})" if isinstance(details, str) and details.strip() else ""


class StdioBridge:
    def __init__(
        self,
        command: AgentCommand,
        requests: Callable[[], AgentRequestHandler],
        events: BridgeEvents,
    ) -> None:
        self.command = command
        self._requests = requests
        self._events = events
        self._process: asyncio.subprocess.Process | None = None
        self._connection: ClientSideConnection | None = None
        self._lines: AgentLines | None = None
        self._stderr_tail: list[str] = []
        self._warned: set[str] = set()
        self._waiter: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self.pid: int | None = None
        self._group_ended = False
        self._killed = False  # asked to end: a spawn still in flight ends the moment it has a pid
        self._loop: asyncio.AbstractEventLoop | None = None  # the chat loop it was started on
        self.started_at = 0.0
        self.abilities = AgentAbilities()
        self.stderr_lines: list[str] = []  # bounded; for Show Agent Log

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    # --- lifecycle -------------------------------------------------------

    @threads.on_chat_loop
    async def start(self) -> InitializeResponse:
        env = {**os.environ, **self.command.env} if self.command.env else None
        self._loop = asyncio.get_running_loop()
        self._process = await start_process(
            *self.command.argv,
            cwd=self.command.cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=STREAM_LIMIT,
            **own_group_options(),
        )
        self.pid = self._process.pid
        if self._killed:  # killed while it was being spawned (its chat closed, the package unloaded)
            self.kill()
            raise AgentGone("the agent was stopped while it started")
        self.started_at = time.time()
        assert self._process.stdin is not None and self._process.stdout is not None
        client = EditorClient(self._requests, self._events, self._warn_once)
        remote = RemotePaths(self.command.remote_paths) if self.command.remote_paths is not None else None
        lines = self._lines = AgentLines(self._process.stdout, self._process.stdin, self._events, self._oversized, self._warn_once,
                           remote)
        self._connection = connect_to_agent(client, lines)
        self._stderr_task = asyncio.create_task(self._read_stderr())
        self._waiter = asyncio.create_task(self._wait_exit())
        log.info("agent started: pid %d in %s", self.pid, self.command.cwd)
        self.abilities.initialized = await self._ask("initialize", lambda connection: connection.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                # Forms and links (elicitation/create), asked in the chat (plugin/chat/requests/forms.py).
                elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities(),
                                                    url=ElicitationUrlCapabilities()),
                # Session Options sets switches too (session_options.py): agents may offer them.
                session=ClientSessionCapabilities(config_options=SessionConfigOptionsCapabilities(
                    boolean=BooleanConfigOptionCapabilities())),
            ),
            client_info=CLIENT_INFO,
        ))
        return self.abilities.initialized

    @threads.on_chat_loop
    async def stop(self) -> None:
        """Close stdin (the agent exits 0), then end the group if it lingers."""
        process = self._process
        if process is None:
            return
        if process.returncode is None and process.stdin is not None:
            process.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), STOP_GRACE_SECONDS)
        self.kill()
        if self._connection is not None:
            await self._connection.close()

    @threads.on_chat_loop
    async def reap(self) -> None:
        """Wait (briefly) for a killed agent's exit, so its process is reaped
        here and not left, still "running", to the garbage collector."""
        process = self._process
        if process is not None and process.returncode is None:
            try:  # its SIGTERM's grace, then as long again after the SIGKILL
                await asyncio.wait_for(process.wait(), 2 * STOP_GRACE_SECONDS)
            except TimeoutError:
                log.warning("agent pid %s did not exit after it was killed", self.pid)

    @threads.on_chat_loop
    def release(self) -> None:
        """Close the pipes to a process that is gone, so the
        loop can close without leaving transports behind."""
        process = self._process
        transport = getattr(process, "_transport", None) if process is not None else None
        if transport is not None:
            transport.close()

    def kill(self) -> None:
        """End the agent's whole process group now (any thread; idempotent),
        or, while it is being spawned, as soon as it has a pid: SIGTERM, so
        its exit hooks run (processes.end_group says why they matter), and
        SIGKILL to what is left of it after STOP_GRACE_SECONDS."""
        self._killed = True
        pid, loop = self.pid, self._loop
        if pid is None or loop is None or self._group_ended:
            return
        end_group_soon(pid, loop, STOP_GRACE_SECONDS, lambda: not self._group_ended)

    # --- requests to the agent -------------------------------------------

    @threads.on_chat_loop
    async def request(self, method: str, params: JsonObject) -> Any:
        """`method` with `params` as given; the answer as it came. Sent with the
        SDK's `ext_method` (acp_lines.py takes its "_" off on the wire): qwen's
        own methods are not among the SDK's typed calls, and the answers here
        are read as they came (a session list is bounded before it is
        validated; a session's modes and models are qwen's own fields)."""
        return await self._ask(method, lambda connection: connection.ext_method(method, params))

    @threads.on_chat_loop
    async def _ask(self, method: str, call: Callable[[ClientSideConnection], Awaitable[T]]) -> T:
        if self._connection is None or not self.running:
            raise AgentGone("the agent is not running")
        try:
            return await call(self._connection)
        except asyncio.CancelledError:
            if method in GIVEN_UP:
                await self._cancel_request()
            raise
        except (RequestError, PathRefused) as error:
            raise AgentError(f"{method}: {error}{error_details(error)}") from error
        except ConnectionError as error:
            raise AgentGone(f"{method}: the agent closed the connection") from error
        finally:  # answered (or given up): its id is never named again
            self._forget_request()

    def _forget_request(self) -> Any:
        """The id of the request this task has out, forgotten (None: none)."""
        task = asyncio.current_task()
        return self._lines.request_ids.pop(task, None) if self._lines is not None and task is not None else None

    async def _cancel_request(self) -> None:
        """Tell the agent the request this task had out is given up: ACP's
        `$/cancel_request` (a draft no capability announces; an agent may
        ignore it and answer anyway, an answer no one waits for any more)."""
        request_id = self._forget_request()
        if request_id is None or self._connection is None or not self.running:
            return
        try:
            await self._connection.ext_notification(CANCEL_REQUEST, {"requestId": request_id})
        except (ConnectionError, RequestError) as error:
            log.info("could not tell the agent a request was given up: %s", error)

    @threads.on_chat_loop
    def replays(self, session_id: str) -> bool:
        """`catch_up` would show what the session holds (a session shared with
        other clients that this chat attached to): never over stdio."""
        return False

    @threads.on_chat_loop
    async def catch_up(self, session_id: str) -> None:
        """Hand the attached session's earlier events over as a replay."""

    @property
    @threads.on_chat_loop
    def answers_give_branch_points(self) -> bool:
        """A prompt's answer carries qwen's branch point (`branch.py`)."""
        return True

    @threads.on_chat_loop
    def _servers_for(self, mcp_servers: list[JsonObject]) -> list[JsonObject]:
        """The MCP servers handed to the agent: none for an agent elsewhere,
        which cannot reach this machine's loopback server or run its command."""
        return [] if self.command.remote_paths is not None else servers_for(mcp_servers, self.abilities.capabilities)

    @threads.on_chat_loop
    def _roots(self, cwd: str, folders: list[str]) -> JsonObject:
        """`cwd`, and `folders` as `additionalDirectories` where the agent takes
        them (nothing new for one that does not, such as qwen 0.24.4; none for
        an agent elsewhere, whose names for them this side cannot give)."""
        others = [folder for folder in dict.fromkeys(folders) if folder != cwd]
        if not others or self.command.remote_paths is not None or not takes_more_folders(self.abilities.capabilities):
            return {"cwd": cwd}
        return {"cwd": cwd, "additionalDirectories": others}

    @threads.on_chat_loop
    async def new_session(
        self, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> tuple[NewSessionResponse, JsonObject]:
        mcp_servers = self._servers_for(mcp_servers)
        raw = await self.request("session/new", {**self._roots(cwd, folders), "mcpServers": mcp_servers})
        return NewSessionResponse.model_validate(raw), raw

    @threads.on_chat_loop
    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> tuple[LoadSessionResponse, JsonObject]:
        if not self.abilities.can_load:
            raise AgentError(f"{self.command.agent} cannot load earlier sessions")
        mcp_servers = self._servers_for(mcp_servers)
        raw = await self.request("session/load", {"sessionId": session_id, **self._roots(cwd, folders),
                                                   "mcpServers": mcp_servers})
        raw = raw if isinstance(raw, dict) else {}
        return LoadSessionResponse.model_validate(raw), raw

    @threads.on_chat_loop
    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> JsonObject:
        """session/resume: the session goes on without replaying its messages."""
        if not self.abilities.can_resume:
            raise AgentError(f"{self.command.agent} cannot resume earlier sessions")
        mcp_servers = self._servers_for(mcp_servers)
        raw = await self.request("session/resume", {"sessionId": session_id, **self._roots(cwd, folders),
                                                     "mcpServers": mcp_servers})
        return raw if isinstance(raw, dict) else {}

    @threads.on_chat_loop
    async def list_page(self, cwd: str, cursor: str | None) -> Any:
        """One page of session/list as the agent sent it (history.py bounds it)."""
        if not can_list(self.abilities.capabilities):
            raise AgentError(f"{self.command.agent} cannot list its sessions")
        return await self.request("session/list", {"cwd": cwd, **({"cursor": cursor} if cursor else {})})

    @threads.on_chat_loop
    async def prompt(self, session_id: str, blocks: list[JsonObject]) -> PromptResponse:
        return PromptResponse.model_validate(
            await self.request("session/prompt", {"sessionId": session_id, "prompt": prompt_for(blocks, self.abilities.capabilities)})
        )

    @property
    def sends_notes(self) -> bool:
        """Whether `BRIDGE_NOTE` comes from the package (an agent's notification of that name is not shown)."""
        return False

    @property
    def offers_steer(self) -> bool:
        """Whether words can be added to a running turn (ACP over stdio has no
        way to: qwen 0.24.4's `/btw` answers a side question the turn never sees)."""
        return False

    def can_steer(self, text: str, context: list[JsonObject]) -> bool:
        """Whether a prompt of `text` with `context` attached can be added to a running turn."""
        return False

    @threads.on_chat_loop
    async def steer(self, session_id: str, text: str, context: list[JsonObject]) -> bool:
        """Add `text` (and `context`) to the running turn; False when no turn runs to take it."""
        raise AgentError("this agent offers no way to add to a running turn")

    @threads.on_chat_loop
    async def cancel(self, session_id: str) -> None:
        if self._connection is not None and self.running:
            await self._connection.cancel(session_id=session_id)

    # --- from the agent ----------------------------------------------------

    @threads.on_chat_loop
    def _oversized(self, size: int) -> None:
        self._events.refused(
            f"The agent sent a message of {size:,} bytes, more than the {MAX_MESSAGE_BYTES:,} the editor takes; "
            "it was dropped. If the agent waits for an answer to it, cancel the turn."
        )

    @threads.on_chat_loop
    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    @threads.on_chat_loop
    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        stream = self._process.stderr
        while True:
            try:
                line = await stream.readline()
            except (asyncio.LimitOverrunError, ValueError):
                await stream.read(STREAM_LIMIT)
                continue
            if not line:
                return
            text = line[: STDERR_LINE_CHARS * 4].decode("utf-8", "replace").rstrip()[:STDERR_LINE_CHARS]
            self.stderr_lines.append(text)
            del self.stderr_lines[:-500]
            self._stderr_tail.append(text)
            del self._stderr_tail[:-STDERR_TAIL_LINES]
            log.debug("agent: %s", text)

    @threads.on_chat_loop
    async def _wait_exit(self) -> None:
        assert self._process is not None
        returncode = await self._process.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stderr_task, 1.0)
        kill_group(self._process.pid)  # children the CLI left behind
        self._group_ended = True  # its pid may be reused from here on
        log.info("agent pid %d exited with %s", self._process.pid, returncode)
        try:
            if self._connection is not None:
                await self._connection.close()  # fails what still waits for an answer
        except ConnectionError:
            pass  # the pipe is gone already: nothing is left to fail
        finally:
            self._events.exited(returncode, list(self._stderr_tail))

