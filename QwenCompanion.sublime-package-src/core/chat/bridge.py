"""One `qwen --acp` process and its JSON-RPC connection (the "bridge").

Everything here runs on the chat's asyncio thread. Messages in and out are
validated with the ACP SDK's models; a malformed or unknown message is logged
once per kind and never stops the connection. The process runs in a process
group of its own so that ending it also ends the CLI's child (cli-entry.js
re-executes node), and `kill()` works from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from acp import PROTOCOL_VERSION, RequestError
from acp._transport import NdjsonTransport
from acp.connection import Connection
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ReadTextFileRequest,
    RequestPermissionRequest,
    SessionNotification,
    WriteTextFileRequest,
)
from pydantic import BaseModel, ValidationError

from .. import threads
from ..json_types import JsonObject
from ..processes import kill_group, own_group_options
from ..version import VERSION
from .agents import MAX_LISTED_SESSIONS, TITLE_MAX_CHARS, can_list, can_load, prompt_for, servers_for, speaks_qwen
from .requests import AgentRequests

log = logging.getLogger(__name__)
traffic_log = logging.getLogger(__name__ + ".traffic")

# The pipe's buffer: a longer line is read in pieces of this size.
STREAM_LIMIT = 1024 * 1024
# The longest message taken from the agent (a file it writes, a long
# replay); a longer line is skipped piece by piece, never held whole.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
STDERR_LINE_CHARS = 2000  # what is kept of one line of the agent's stderr
STOP_GRACE_SECONDS = 2.0
STDERR_TAIL_LINES = 40
CLIENT_INFO = Implementation(name="QwenCompanion", title="Qwen Companion for Sublime Text", version=VERSION)


class BridgeEvents(Protocol):
    """What the bridge reports; called on the chat's asyncio thread."""

    def session_update(self, notification: SessionNotification) -> None: ...

    def ext_notification(self, method: str, params: JsonObject) -> None: ...

    def exited(self, returncode: int | None, stderr_tail: list[str]) -> None: ...

    def refused(self, message: str) -> None:
        """Something the agent sent was dropped (too large): tell the user."""


@dataclass(frozen=True)
class AgentCommand:
    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    agent: str = "qwen"  # its name in the chat_agents setting


class AgentError(Exception):
    """A request the agent answered with an error, or could not answer."""


class AgentGone(AgentError):
    """The agent exited (or closed stdout) before answering."""


def redact(message: Any) -> Any:
    """`message` with text, file contents and secrets replaced by their size,
    for the traffic log."""
    if isinstance(message, dict):
        out: dict[str, Any] = {}
        for key, value in message.items():
            if key in ("text", "content", "oldText", "newText", "data", "blob") and isinstance(value, str):
                out[key] = f"<{len(value)} chars>"
            elif key.lower() in ("token", "apikey", "api_key", "authorization", "env", "headers"):
                out[key] = "<hidden>"
            else:
                out[key] = redact(value)
        return out
    if isinstance(message, list):
        return [redact(item) for item in message]
    return message


class QuietNdjsonTransport(NdjsonTransport):
    """The SDK's line framing, but a line that is not JSON is logged once
    (not with a traceback each time) and skipped."""

    def __init__(self, reader: asyncio.StreamReader, sender: Any, on_oversized: Callable[[int], None]) -> None:
        super().__init__(reader, sender)
        self._reader_of_lines = reader
        self._on_oversized = on_oversized
        self._warned = False

    async def _read_line(self) -> bytes:
        """The next line, or b"" at the end; a line longer than
        MAX_MESSAGE_BYTES is read to its end and dropped (reported once per line)."""
        reader = self._reader_of_lines
        pieces: list[bytes] = []
        held = 0
        while True:
            try:
                piece = await reader.readuntil(b"\n")
                ended = True
            except asyncio.LimitOverrunError as error:
                piece = await reader.readexactly(error.consumed)
                ended = False
            except asyncio.IncompleteReadError as error:
                piece = error.partial
                ended = True
            held += len(piece)
            if held <= MAX_MESSAGE_BYTES:
                pieces.append(piece)
            elif pieces:
                pieces.clear()  # too long: what was kept goes, the rest is skipped as it comes
            if ended:
                if held > MAX_MESSAGE_BYTES:
                    self._on_oversized(held)
                    if piece.endswith(b"\n"):
                        held = 0
                        continue
                    return b""
                return b"".join(pieces)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict):
                return message
            if not self._warned:
                self._warned = True
                log.warning("skipped a line from the agent that is not a JSON-RPC message: %.200r "
                            "(further ones are skipped silently)", line)


class StreamingConnection(Connection):
    """The SDK's connection, with `session/update` notifications handled as
    they are read instead of as one task each (a streamed answer is
    thousands of them, and they must be applied in order anyway), and lines
    that are not JSON logged once."""

    def __init__(
        self,
        on_update: Callable[[JsonObject], None],
        handler: Any,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        on_oversized: Callable[[int], None],
    ) -> None:
        self._on_update = on_update
        super().__init__(handler, writer, reader)
        # The receive loop has not run yet: it reads through this one.
        sender = cast(NdjsonTransport, self._transport)._sender
        self._transport = QuietNdjsonTransport(reader, sender, on_oversized)

    async def _receive_loop(self) -> None:
        """The SDK's loop (with no stream observers), but each message is let go
        once handled: the last one read is not held until the next arrives (a
        19 MB session list kept while the agent is idle)."""
        try:
            while (message := await self._transport.receive()) is not None:
                self._process_message(message)
                del message
        except asyncio.CancelledError:
            return
        except TimeoutError:
            raise RequestError.internal_error({"details": "Agent timeout"}) from None
        self._disconnect()

    def _process_message(self, message: dict[str, Any]) -> None:
        if message.get("method") == "session/update" and "id" not in message:
            params = message.get("params")
            try:
                self._on_update(params if isinstance(params, dict) else {})
            except Exception:
                log.exception("handling a session/update failed")
            return
        super()._process_message(message)


def bounded_session_list(raw: Any) -> Any:
    """A session/list answer cut to its first MAX_LISTED_SESSIONS sessions, each
    title to TITLE_MAX_CHARS (the rest is left for the model to check)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("sessions"), list):
        return raw
    sessions = [
        {**entry, "title": entry["title"][:TITLE_MAX_CHARS]} if isinstance(entry, dict) and isinstance(entry.get("title"), str) else entry
        for entry in raw["sessions"][:MAX_LISTED_SESSIONS]
    ]
    return {**raw, "sessions": sessions}


def dump(model: BaseModel) -> JsonObject:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class AgentBridge:
    def __init__(
        self,
        command: AgentCommand,
        requests: Callable[[], AgentRequests],
        events: BridgeEvents,
    ) -> None:
        self.command = command
        self._requests = requests
        self._events = events
        self._process: asyncio.subprocess.Process | None = None
        self._connection: Connection | None = None
        self._stderr_tail: list[str] = []
        self._warned: set[str] = set()
        self._waiter: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self.pid: int | None = None
        self._group_ended = False
        self.started_at = 0.0
        self.initialized: InitializeResponse | None = None
        self.stderr_lines: list[str] = []  # bounded; for Show Agent Log

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    # --- lifecycle -------------------------------------------------------

    async def start(self) -> InitializeResponse:
        env = {**os.environ, **self.command.env} if self.command.env else None
        self._process = await asyncio.create_subprocess_exec(
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
        self.started_at = time.time()
        assert self._process.stdin is not None and self._process.stdout is not None
        # No SDK stream observer: it deep-copies every message, even unlogged.
        self._connection = StreamingConnection(
            self._session_update, self._handle, self._process.stdin, self._process.stdout, self._oversized
        )
        self._stderr_task = asyncio.create_task(self._read_stderr())
        self._waiter = asyncio.create_task(self._wait_exit())
        log.info("agent started: pid %d in %s", self.pid, self.command.cwd)
        request = InitializeRequest(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
            ),
            client_info=CLIENT_INFO,
        )
        self.initialized = InitializeResponse.model_validate(await self.request("initialize", dump(request)))
        return self.initialized

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

    async def reap(self) -> None:
        """Wait (briefly) for a killed agent's exit, so its process is reaped
        here and not left, still "running", to the garbage collector."""
        process = self._process
        if process is not None and process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE_SECONDS)
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
        """End the agent's whole process group now (any thread; idempotent)."""
        pid = self.pid
        if pid is None or self._group_ended:
            return
        kill_group(pid)

    # --- requests to the agent -------------------------------------------

    async def request(self, method: str, params: JsonObject) -> Any:
        if self._connection is None or not self.running:
            raise AgentGone("the agent is not running")
        self._trace("->", {"method": method, "params": params})
        try:
            result = await self._connection.send_request(method, params)
            self._trace("<-", {"result of": method, "result": result})
            return result
        except RequestError as error:
            raise AgentError(f"{method}: {error}") from error
        except ConnectionError as error:
            raise AgentGone(f"{method}: the agent closed the connection") from error

    async def notify(self, method: str, params: JsonObject) -> None:
        if self._connection is not None and self.running:
            self._trace("->", {"method": method, "params": params})
            await self._connection.send_notification(method, params)

    @property
    def capabilities(self) -> AgentCapabilities | None:
        return self.initialized.agent_capabilities if self.initialized is not None else None

    @property
    def can_load(self) -> bool:
        return can_load(self.capabilities)

    @property
    def speaks_qwen(self) -> bool:
        """qwen's own methods may be sent (see `agents.speaks_qwen`)."""
        return speaks_qwen(self.initialized.agent_info if self.initialized is not None else None)

    async def new_session(self, cwd: str, mcp_servers: list[JsonObject]) -> tuple[NewSessionResponse, JsonObject]:
        mcp_servers = servers_for(mcp_servers, self.capabilities)
        raw = await self.request("session/new", {"cwd": cwd, "mcpServers": mcp_servers})
        return NewSessionResponse.model_validate(raw), raw

    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject]
    ) -> tuple[LoadSessionResponse, JsonObject]:
        if not self.can_load:
            raise AgentError(f"{self.command.agent} cannot load earlier sessions")
        mcp_servers = servers_for(mcp_servers, self.capabilities)
        raw = await self.request("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": mcp_servers})
        raw = raw if isinstance(raw, dict) else {}
        return LoadSessionResponse.model_validate(raw), raw

    async def list_sessions(self, cwd: str) -> ListSessionsResponse:
        if not can_list(self.capabilities):
            raise AgentError(f"{self.command.agent} cannot list its sessions")
        return ListSessionsResponse.model_validate(bounded_session_list(await self.request("session/list", {"cwd": cwd})))

    async def prompt(self, session_id: str, blocks: list[JsonObject]) -> PromptResponse:
        return PromptResponse.model_validate(
            await self.request("session/prompt", {"sessionId": session_id, "prompt": prompt_for(blocks, self.capabilities)})
        )

    async def cancel(self, session_id: str) -> None:
        await self.notify("session/cancel", {"sessionId": session_id})

    # --- messages from the agent ------------------------------------------

    async def _handle(self, method: str, params: Any, is_notification: bool) -> Any:
        payload = params if isinstance(params, dict) else {}
        self._trace("<-", {"method": method, "params": payload})
        if is_notification:
            self._events.ext_notification(method, payload)
            return None
        requests = self._requests()
        if method == "fs/read_text_file":
            return await requests.read_text_file(ReadTextFileRequest.model_validate(payload))
        if method == "fs/write_text_file":
            return await requests.write_text_file(WriteTextFileRequest.model_validate(payload))
        if method == "session/request_permission":
            return await requests.request_permission(RequestPermissionRequest.model_validate(payload))
        try:
            return await requests.ext_method(method, payload)
        except RequestError as error:
            if error.code == -32601:
                self._warn_once(f"method:{method}", "the agent asked for %s, which this editor does not offer", method)
            raise

    def _session_update(self, payload: JsonObject) -> None:
        self._trace("<-", {"method": "session/update", "params": payload})
        try:
            notification = SessionNotification.model_validate(payload)
        except ValidationError as error:
            update = payload.get("update")
            kind = str(update.get("sessionUpdate", "?")) if isinstance(update, dict) else "?"
            self._warn_once(f"update:{kind}", "ignored a malformed session/update (%s): %s", kind, error)
            return
        self._events.session_update(notification)

    def _oversized(self, size: int) -> None:
        self._events.refused(
            f"The agent sent a message of {size:,} bytes, more than the {MAX_MESSAGE_BYTES:,} the editor takes; "
            "it was dropped. If the agent waits for an answer to it, cancel the turn."
        )

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    @staticmethod
    def _trace(arrow: str, message: JsonObject) -> None:
        """The ACP traffic at DEBUG, text and file contents left out."""
        if traffic_log.isEnabledFor(logging.DEBUG):
            traffic_log.debug("%s %s", arrow, json.dumps(redact(message))[:2000])

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

