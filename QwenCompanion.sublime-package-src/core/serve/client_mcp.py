"""The chat's MCP servers for a session on `qwen serve`: client-MCP over the
daemon's `/acp` WebSocket (qwen 0.24.4; docs/serve.md, "The editor's MCP
servers on serve", has what was probed).

One channel per chat session, on the chat's loop: it opens `ws://…/acp`
with the daemon's bearer token, sends ACP's `initialize` (the daemon takes
no client-MCP frame before it), then registers each server for this session
only (`{"type": "mcp_register", "server", "sessionId"}`), one at a time,
since the daemon's `mcp_error` answer names no server. The daemon's agent
then talks to the server through `{"type": "mcp_message", "id", "server",
"payload"}` frames, which a relay (mcp_relays.py) answers: `{"type":
"mcp_message", "id", "payload"}`. Closing the socket makes the daemon drop
the session's registrations; `close` unregisters first anyway.

What the daemon sends is data: frames are bounded (MAX_FRAME_BYTES), a
frame of another shape or for a server this channel did not register is
refused with a note (once per kind) and the chat goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import aiohttp

from ..display_text import display_text
from ..json_types import JsonObject
from .daemon import CLIENT_MCP_ENV
from .http import Address, HttpError, request_json
from .mcp_relays import MAX_MESSAGE_BYTES, McpRelay, RelayError, error_response, relay_for

log = logging.getLogger(__name__)

FEATURE = "client_mcp_over_ws"  # in GET /capabilities' `features` when it does
ACP_PATH = "/acp"
MAX_FRAME_BYTES = MAX_MESSAGE_BYTES + 64 * 1024
MAX_SERVERS = 10  # the daemon's MAX_SERVERS_PER_CONNECTION
MAX_IN_FLIGHT = 32
MAX_TOOLS = 1000
NOTE_CHARS = 300
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,256}")  # the daemon's isValidServerName (less the JS property names)
STEP_TIMEOUT_SECONDS = 60.0  # the socket's opening, `initialize`, and each registration
CLOSE_SECONDS = 5.0  # a daemon that never answers the close frame
INITIALIZE_ID = "qwencompanion-client-mcp"
REFUSED = -32000

type Say = Callable[[str], None]


@dataclass(frozen=True)
class McpMessage:
    """A daemon's `mcp_message` frame: its correlation id, server and JSON-RPC payload."""

    frame_id: str
    server: str
    payload: JsonObject


def message_of(frame: JsonObject) -> McpMessage | str:
    """The frame as an `McpMessage`, or why it is not one (a sentence)."""
    frame_id, server, payload = frame.get("id"), frame.get("server"), frame.get("payload")
    if not (isinstance(frame_id, str) and 0 < len(frame_id) <= 256):
        return "an mcp_message frame without a string id"
    if not (isinstance(server, str) and server):
        return "an mcp_message frame without a server name"
    if not isinstance(payload, dict):
        return "an mcp_message frame whose payload is not a JSON-RPC object"
    return McpMessage(frame_id, server, payload)


def answer_frame(message: McpMessage, payload: JsonObject) -> JsonObject:
    return {"type": "mcp_message", "id": message.frame_id, "payload": payload}


def tool_names(answer: JsonObject) -> list[str]:
    """The tools a `tools/list` answer names (bounded)."""
    result = answer.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    return [tool["name"][:200] for tool in (tools if isinstance(tools, list) else [])[:MAX_TOOLS]
            if isinstance(tool, dict) and isinstance(tool.get("name"), str)]


@dataclass
class ServerState:
    """What the chat knows of one server it handed the daemon."""

    status: str = "registering"
    tools: list[str] = field(default_factory=list)
    problem: str = ""


class ClientMcpChannel:
    """The chat session's servers on the daemon, for as long as the session is the chat's."""

    def __init__(self, address: Address, session_id: str, entries: list[JsonObject], cwd: str, say: Say,
                 base_env: Mapping[str, str]) -> None:
        self._address = address
        self._session_id = session_id
        self.entries, self.cwd = entries, cwd  # what a restart registers again (headers: never shown)
        self._say = say
        self._said: set[str] = set()
        self._relays: dict[str, McpRelay] = {}
        self.servers: dict[str, ServerState] = {}
        self._acks: asyncio.Queue[JsonObject] = asyncio.Queue()
        self._initialized: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._http: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._closing = False
        self._registering = False  # an answer to mcp_register is awaited: acks go to `_acks`
        self.ready = asyncio.Event()  # set once every server was registered or refused
        self.base_env = base_env

    def _take_entries(self, entries: list[JsonObject], cwd: str) -> None:
        for entry in entries:
            name = str(entry.get("name", ""))
            if not SERVER_NAME.fullmatch(name):
                self.note(f"The MCP server “{display_text(name, 100)}” is not passed to the chat on qwen serve: "
                          "the daemon takes names of letters, digits, “_” and “-” only.")
                continue
            if len(self._relays) == MAX_SERVERS:
                self.note(f"The MCP server “{name}” is not passed to the chat on qwen serve: "
                          f"the daemon takes {MAX_SERVERS} servers from a client.")
                continue
            relay = relay_for(entry, cwd, self.base_env)
            if relay is None:
                self.note(f"The MCP server “{name}” (SSE) is not passed to the chat on qwen serve: "
                          "only stdio and HTTP servers are.")
                continue
            self._relays[name] = relay
            self.servers[name] = ServerState()

    def __repr__(self) -> str:  # the entries' headers (a token) stay out of logs and tracebacks
        return f"ClientMcpChannel({self._session_id!r}, {list(self.servers)})"

    def note(self, text: str) -> None:
        """A line in the chat, once per text (the daemon's words bounded and cleaned)."""
        shown = display_text(text, NOTE_CHARS * 2)
        if shown not in self._said:
            self._said.add(shown)
            self._say(shown)

    # --- opening ---------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        task = asyncio.create_task(self._open())
        self._keep(task)
        return task

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _open(self) -> None:
        try:
            # Asked first: by its answer the chat holds the new session, so the notes below reach it.
            offered = await self._offered()
            self._take_entries(self.entries, self.cwd)
            if self._relays and not offered:
                self._fail_all(f"this daemon was started without {CLIENT_MCP_ENV} (an earlier start): "
                               "Qwen Code: Stop Serve Daemon, and the next chat starts one that takes them")
            elif self._relays:
                await self._connect()
                for name in list(self._relays):
                    await self._register(name)
        except (aiohttp.ClientError, HttpError, OSError, TimeoutError) as error:
            if not self.servers:  # the daemon did not answer /capabilities
                self._take_entries(self.entries, self.cwd)
            self._fail_all(f"the daemon's WebSocket did not take them ({type(error).__name__}: {error})")
        finally:
            self.ready.set()

    async def _offered(self) -> bool:
        answer = await request_json(self._address, "GET", "/capabilities", timeout=STEP_TIMEOUT_SECONDS)
        features = answer.body.get("features") if isinstance(answer.body, dict) else None
        return answer.status == 200 and isinstance(features, list) and FEATURE in features

    def _fail_all(self, why: str) -> None:
        for state in self.servers.values():
            if state.status == "registering":
                state.status, state.problem = "not passed", why
        names = ", ".join(self.servers)
        self.note(f"The editor's MCP servers ({names}) are not on this chat's qwen serve session: {why}. "
                  "The chat goes on without them.")

    async def _connect(self) -> None:
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=STEP_TIMEOUT_SECONDS))
        url = f"ws://{self._address.host}:{self._address.port}{ACP_PATH}"
        self._socket = await self._http.ws_connect(
            url, headers={"Authorization": f"Bearer {self._address.token}"}, max_msg_size=MAX_FRAME_BYTES,
            autoping=True)
        self._keep(asyncio.create_task(self._read(self._socket)))
        await self._send({"jsonrpc": "2.0", "id": INITIALIZE_ID, "method": "initialize",
                          "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        answer = await asyncio.wait_for(asyncio.shield(self._initialized), STEP_TIMEOUT_SECONDS)
        if "result" not in answer:
            raise HttpError(f"the daemon refused initialize: {json.dumps(answer.get('error'))[:NOTE_CHARS]}")

    async def _register(self, name: str) -> None:
        self._registering = True
        try:
            await self._send({"type": "mcp_register", "server": name, "sessionId": self._session_id})
            ack = await asyncio.wait_for(self._acks.get(), STEP_TIMEOUT_SECONDS)
        finally:
            self._registering = False
        state = self.servers[name]
        if ack.get("type") == "mcp_registered":
            state.status = "connected"
            return
        code, why = ack.get("code"), ack.get("message")
        state.status, state.problem = "not passed", display_text(f"{code}: {why}", NOTE_CHARS)
        self.note(f"The daemon did not take the MCP server “{name}” for this chat ({state.problem}).")

    async def _send(self, frame: JsonObject) -> None:
        socket = self._socket
        if socket is None or socket.closed:
            raise RelayError("the daemon's WebSocket is closed")
        await socket.send_str(json.dumps(frame))

    # --- frames from the daemon ------------------------------------------------

    async def _read(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        why = "it closed the connection"
        async for message in socket:
            if message.type == aiohttp.WSMsgType.TEXT:
                self.take(message.data)
            elif message.type == aiohttp.WSMsgType.ERROR:
                why = f"the connection failed ({type(message.data).__name__}: {message.data})"
                break
            else:
                self.note("The daemon sent a binary frame on the client-MCP connection; it was ignored.")
        if not self._closing:
            for state in self.servers.values():
                state.status = "disconnected"
            self.note(f"The editor's MCP servers left this chat's qwen serve session: {why}.")
            if not self._initialized.done():
                self._initialized.set_exception(HttpError(why))
            if self._registering:
                self._acks.put_nowait({"type": "mcp_error", "code": "closed", "message": why})

    def take(self, text: str) -> None:
        """One frame from the daemon (never raises: a wrong one is said and dropped)."""
        try:
            frame = json.loads(text)
        except ValueError:
            self.note("The daemon sent a client-MCP frame that is not JSON; it was ignored.")
            return
        if not isinstance(frame, dict):
            self.note("The daemon sent a client-MCP frame that is not a JSON object; it was ignored.")
            return
        kind = frame.get("type")
        if kind == "mcp_message":
            self._message(frame)
        elif kind in ("mcp_registered", "mcp_error"):
            self._ack(frame)
        elif frame.get("id") == INITIALIZE_ID and not self._initialized.done():
            self._initialized.set_result(frame)
        elif "error" in frame and frame.get("id") is None:  # a daemon without client-MCP: its JSON-RPC refusal
            self._ack({"type": "mcp_error", "code": "refused", "message": json.dumps(frame.get("error"))})
        # anything else (the ACP connection's own notifications) is not ours

    def _ack(self, frame: JsonObject) -> None:
        if self._registering:
            self._acks.put_nowait(frame)
        elif frame.get("type") == "mcp_error":  # not about a registration: a refused answer (rate_limited…)
            self.note(f"The daemon refused a client-MCP frame ({frame.get('code')}: {frame.get('message')}).")

    def _message(self, frame: JsonObject) -> None:
        message = message_of(frame)
        if isinstance(message, str):
            self.note(f"The daemon sent {message}; it was ignored.")
            return
        relay = self._relays.get(message.server)
        if relay is None:
            self.note(f"The daemon asked for the MCP server “{display_text(message.server, 100)}”, "
                      "which this chat did not give it; refused.")
            self._answer_later(message, None)
            return
        self._answer_later(message, relay)

    def _answer_later(self, message: McpMessage, relay: McpRelay | None) -> None:
        self._keep(asyncio.create_task(self._answer(message, relay)))

    async def _answer(self, message: McpMessage, relay: McpRelay | None) -> None:
        payload = message.payload
        is_request = "method" in payload and payload.get("id") is not None
        async with self._in_flight:
            try:
                if relay is None:
                    answer = error_response(payload.get("id"), REFUSED, f"no MCP server {message.server!r} here")
                elif not is_request:
                    if "method" in payload:
                        await relay.notify(payload)
                    return
                else:
                    answer = await relay.request(payload)
            except RelayError as error:
                answer = error_response(payload.get("id"), REFUSED, str(error)[:NOTE_CHARS])
                self.note(f"The MCP server “{message.server}” did not answer the agent: {error}")
            if not is_request:
                return
            if payload.get("method") == "tools/list" and message.server in self.servers:
                self.servers[message.server].tools = tool_names(answer)
            with contextlib.suppress(RelayError, ConnectionError):
                await self._send(answer_frame(message, {**answer, "id": payload.get("id")}))

    # --- closing ---------------------------------------------------------------

    async def close(self) -> None:
        """Unregister (best effort), close the socket and the relays."""
        self._closing = True
        socket = self._socket
        if socket is not None and not socket.closed:
            for name, state in self.servers.items():
                if state.status == "connected":
                    with contextlib.suppress(RelayError, ConnectionError):
                        await self._send({"type": "mcp_unregister", "server": name})
            with contextlib.suppress(Exception):
                await asyncio.wait_for(socket.close(), CLOSE_SECONDS)
        for task in list(self._tasks):
            task.cancel()
        for relay in self._relays.values():
            with contextlib.suppress(Exception):
                await relay.close()
        if self._http is not None:
            await self._http.close()

    def rows(self) -> list[JsonObject]:
        """The servers in the shape of qwen's session resources (`mcp.servers`), as MCP Servers… reads them."""
        return [{"name": name, "status": state.status, **({"error": state.problem} if state.problem else {})}
                for name, state in self.servers.items()]

