"""Client-MCP over the daemon's WebSocket (core/serve/client_mcp.py) against a
scripted daemon speaking qwen serve 0.24.4's frames (`/capabilities`, `/acp`:
ACP `initialize`, then `mcp_register {server, sessionId}` answered by the
agent's MCP handshake as `mcp_message {id, server, payload}` frames and
`mcp_registered {server, toolCount}` or `mcp_error {code, message}`): the
servers are registered for the session only, their answers reach the agent,
the IDE tools' token never leaves the package, and whatever the daemon sends
of another shape, for another server or too big is refused with a note while
the channel (and the chat) goes on."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from aiohttp import WSMsgType, web

from qwencompanion_src.core.chat.agent.chat_thread import ChatThread
from qwencompanion_src.core.chat.agent.mcp_status import MCP_TOOLS, SESSION_RESOURCES, session_rows, tool_names
from qwencompanion_src.core.chat.agent.transport import BridgeEvents
from qwencompanion_src.core.chat.requests.request_handler import AgentRequestHandler
from qwencompanion_src.core.serve import client_mcp
from qwencompanion_src.core.serve.client_mcp import ClientMcpChannel
from qwencompanion_src.core.serve.daemon import CLIENT_MCP_ENV, serve_env
from qwencompanion_src.core.serve.daemon_session import DaemonSession
from qwencompanion_src.core.serve.http import Address
from qwencompanion_src.core.serve.mcp_relays import RelayError, StdioRelay
from qwencompanion_src.core.serve.serve_bridge import ServeBridge, ServeCommand

DAEMON_TOKEN = "d" * 64
IDE_TOKEN = "ide-tools-secret-0123456789abcdef"
SESSION = "session-1"


class ScriptedDaemon:
    """`/capabilities` and `/acp` as 0.24.4 serves them, with the agent's side scripted."""

    def __init__(self, features: list[str] | None = None, refuse: tuple[str, ...] = (), silent: bool = False) -> None:
        self.features = ["client_mcp_over_ws"] if features is None else features
        self.refuse = refuse
        self.silent = silent  # registrations go unanswered
        self.received: list[str] = []  # every text frame the client sent
        self.answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.socket: web.WebSocketResponse | None = None
        self.connected = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.port = 0
        self._ids = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/capabilities", self.capabilities)
        app.router.add_get("/acp", self.acp)
        app.router.add_get("/session/{id}/resources", self.resources)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def capabilities(self, request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == f"Bearer {DAEMON_TOKEN}"
        return web.json_response({"v": 1, "features": self.features})

    async def resources(self, request: web.Request) -> web.Response:
        """qwen's session resources: a server of the daemon's settings, and ours as the agent sees it."""
        return web.json_response({"mcp": {"servers": [{"name": "own", "status": "ok", "mcpStatus": "connected"},
                                                      {"name": IDE_ENTRY_NAME, "status": "ok"}]}})

    async def acp(self, request: web.Request) -> web.WebSocketResponse:
        if request.headers.get("Authorization") != f"Bearer {DAEMON_TOKEN}":
            raise web.HTTPUnauthorized
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.socket = socket
        self.connected.set()
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            self.received.append(message.data)
            frame = json.loads(message.data)
            if frame.get("method") == "initialize":
                await socket.send_json({"jsonrpc": "2.0", "id": frame["id"], "result": {"protocolVersion": 1}})
            elif frame.get("type") == "mcp_register":
                task = asyncio.create_task(self.register(frame["server"]))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif frame.get("type") == "mcp_message":
                self.answers.put_nowait(frame)
        return socket

    async def ask(self, server: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The agent's MCP message to `server`, and the client's answer frame."""
        self._ids += 1
        frame_id = f"cmcp-{self._ids}"
        assert self.socket is not None
        await self.socket.send_json({"type": "mcp_message", "id": frame_id, "server": server, "payload": payload})
        answer = await asyncio.wait_for(self.answers.get(), 10)
        assert answer["id"] == frame_id
        return answer

    async def register(self, server: str) -> None:
        assert self.socket is not None
        if self.silent:
            return
        if server in self.refuse:
            await self.socket.send_json({"type": "mcp_error", "code": "register_failed", "message": "no \x1b[31mway"})
            return
        await self.ask(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        await self.socket.send_json({"type": "mcp_message", "id": "n-1", "server": server,
                                     "payload": {"jsonrpc": "2.0", "method": "notifications/initialized"}})
        tools = await self.ask(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        count = len(tools["payload"].get("result", {}).get("tools", []))
        await self.socket.send_json({"type": "mcp_registered", "server": server, "toolCount": count})

    async def send_raw(self, data: str | bytes) -> None:
        assert self.socket is not None
        if isinstance(data, bytes):
            await self.socket.send_bytes(data)
        else:
            await self.socket.send_str(data)


class IdeTools:
    """A streamable-HTTP MCP server that wants its bearer token, as the package's IDE tools do."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/ide-tools/mcp", self.mcp)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/ide-tools/mcp"  # type: ignore[union-attr]

    async def mcp(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {IDE_TOKEN}":
            return web.Response(status=401)
        message = await request.json()
        self.calls.append(message)
        if "id" not in message:
            return web.Response(status=202)
        results = {"initialize": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}},
                   "tools/list": {"tools": [{"name": "get_workspace_folders", "inputSchema": {"type": "object"}}]},
                   "tools/call": {"content": [{"type": "text", "text": "folders: /work"}]}}
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "result": results[message["method"]]},
                                 headers={"Mcp-Session-Id": "s-ide"})


IDE_ENTRY_NAME = "sublime-ide-tools"


def ide_entry(url: str) -> dict[str, Any]:
    return {"type": "http", "name": IDE_ENTRY_NAME, "url": url,
            "headers": [{"name": "Authorization", "value": f"Bearer {IDE_TOKEN}"}]}


@pytest.fixture
async def ide_tools() -> AsyncIterator[IdeTools]:
    server = IdeTools()
    await server.start()
    yield server
    assert server.runner is not None
    await server.runner.cleanup()


async def scripted(**options: Any) -> ScriptedDaemon:
    daemon = ScriptedDaemon(**options)
    await daemon.start()
    return daemon


async def opened(daemon: ScriptedDaemon, entries: list[dict[str, Any]], notes: list[str]) -> ClientMcpChannel:
    channel = ClientMcpChannel(Address("127.0.0.1", daemon.port, DAEMON_TOKEN), SESSION, entries, "/tmp", notes.append,
                               dict(os.environ))
    channel.start()
    await asyncio.wait_for(channel.ready.wait(), 20)
    return channel


async def test_the_ide_tools_are_registered_for_the_session_and_answer_without_their_token_leaving(
        ide_tools: IdeTools, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    daemon, notes = await scripted(), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    try:
        registers = [json.loads(f) for f in daemon.received if '"mcp_register"' in f]
        assert registers == [{"type": "mcp_register", "server": IDE_ENTRY_NAME, "sessionId": SESSION}]
        assert channel.rows() == [{"name": IDE_ENTRY_NAME, "status": "connected"}]
        assert channel.servers[IDE_ENTRY_NAME].tools == ["get_workspace_folders"]
        answer = await daemon.ask(IDE_ENTRY_NAME, {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                   "params": {"name": "get_workspace_folders", "arguments": {}}})
        assert answer == {"type": "mcp_message", "id": answer["id"], "payload": {
            "jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "folders: /work"}]}}}
        assert [call.get("method") for call in ide_tools.calls] == [
            "initialize", "notifications/initialized", "tools/list", "tools/call"]
        assert notes == []
    finally:
        await channel.close()
    sent = "\n".join(daemon.received)
    assert IDE_TOKEN not in sent and IDE_TOKEN not in caplog.text and IDE_TOKEN not in repr(channel)
    assert json.loads(daemon.received[-1]) == {"type": "mcp_unregister", "server": IDE_ENTRY_NAME}


async def test_a_message_for_a_server_the_chat_did_not_give_is_refused(ide_tools: IdeTools) -> None:
    daemon, notes = await scripted(), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    try:
        before = len(ide_tools.calls)
        answer = await daemon.ask("someone-else", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                   "params": {"name": "get_workspace_folders"}})
        assert answer["payload"]["error"]["message"] == "no MCP server 'someone-else' here"
        assert answer["payload"]["id"] == 3
        assert len(ide_tools.calls) == before  # never reached the IDE tools
        assert notes == ["The daemon asked for the MCP server “someone-else”, which this chat did not give it; refused."]
    finally:
        await channel.close()


async def test_frames_of_another_shape_are_said_once_and_the_channel_goes_on(ide_tools: IdeTools) -> None:
    daemon, notes = await scripted(), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    try:
        for hostile in ("not json {", "[1, 2]", "not json {",
                        json.dumps({"type": "mcp_message", "server": IDE_ENTRY_NAME, "payload": {}}),
                        json.dumps({"type": "mcp_message", "id": "x", "server": IDE_ENTRY_NAME, "payload": "call"}),
                        json.dumps({"type": "mcp_message", "id": 5, "server": IDE_ENTRY_NAME, "payload": {}}),
                        json.dumps({"type": "mcp_error", "code": "rate_limited", "message": "\u202eslow down"})):
            await daemon.send_raw(hostile)
        await daemon.send_raw(b"\x00binary")
        answer = await daemon.ask(IDE_ENTRY_NAME, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}})
        assert answer["payload"]["result"]["content"][0]["text"] == "folders: /work"
        assert notes == [
            "The daemon sent a client-MCP frame that is not JSON; it was ignored.",
            "The daemon sent a client-MCP frame that is not a JSON object; it was ignored.",
            "The daemon sent an mcp_message frame without a string id; it was ignored.",
            "The daemon sent an mcp_message frame whose payload is not a JSON-RPC object; it was ignored.",
            "The daemon refused a client-MCP frame (rate_limited: slow down).",
            "The daemon sent a binary frame on the client-MCP connection; it was ignored.",
        ]
    finally:
        await channel.close()


async def test_a_frame_past_the_bound_ends_the_channel_with_a_note_not_the_chat(
        ide_tools: IdeTools, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mcp, "MAX_FRAME_BYTES", 4096)
    daemon, notes = await scripted(), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    try:
        await daemon.send_raw(json.dumps({"type": "mcp_message", "id": "big", "server": IDE_ENTRY_NAME,
                                          "payload": {"jsonrpc": "2.0", "method": "x", "params": "a" * 10_000}}))
        for _ in range(200):
            if notes:
                break
            await asyncio.sleep(0.05)
        assert len(notes) == 1 and notes[0].startswith(
            "The editor's MCP servers left this chat's qwen serve session: the connection failed"), notes
        assert "4096" in notes[0]
        assert channel.rows()[0]["status"] == "disconnected"
    finally:
        await channel.close()


async def test_a_daemon_without_client_mcp_is_said_and_nothing_is_connected(ide_tools: IdeTools) -> None:
    daemon, notes = await scripted(features=["health"]), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    await channel.close()
    assert not daemon.connected.is_set()
    assert len(notes) == 1 and CLIENT_MCP_ENV in notes[0] and "The chat goes on without them." in notes[0]
    assert channel.rows()[0]["status"] == "not passed"


async def test_a_refused_registration_is_said_and_the_others_go_on(ide_tools: IdeTools) -> None:
    daemon, notes = await scripted(refuse=("mine",)), []
    mine = {**ide_entry(ide_tools.url), "name": "mine"}
    channel = await opened(daemon, [mine, ide_entry(ide_tools.url), {"name": "bad name!", "command": "x"},
                                    {"type": "sse", "name": "old", "url": "http://x/sse", "headers": []}], notes)
    try:
        rows = {row["name"]: row for row in channel.rows()}
        assert rows["mine"]["status"] == "not passed" and rows["mine"]["error"] == "register_failed: no [31mway"
        assert rows[IDE_ENTRY_NAME]["status"] == "connected"
        assert set(rows) == {"mine", IDE_ENTRY_NAME}
        listed = session_rows({"mcp": {"servers": channel.rows()}})  # as MCP Servers… reads them
        assert (listed[0].name, listed[0].status, listed[0].problem) == ("mine", "not passed", "register_failed: no [31mway")
        assert notes == [
            ("The MCP server “bad name!” is not passed to the chat on qwen serve: "
             "the daemon takes names of letters, digits, “_” and “-” only."),
            "The MCP server “old” (SSE) is not passed to the chat on qwen serve: only stdio and HTTP servers are.",
            "The daemon did not take the MCP server “mine” for this chat (register_failed: no [31mway).",
        ]
    finally:
        await channel.close()


async def test_a_registration_never_answered_is_said_and_the_channel_is_ready(
        ide_tools: IdeTools, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mcp, "STEP_TIMEOUT_SECONDS", 0.5)
    daemon, notes = await scripted(silent=True), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    await channel.close()
    assert len(notes) == 1 and "did not take them (TimeoutError" in notes[0], notes
    assert channel.rows()[0]["status"] == "not passed"


async def test_the_daemon_closing_the_socket_is_said_once_and_close_still_works(ide_tools: IdeTools) -> None:
    daemon, notes = await scripted(), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    assert daemon.socket is not None
    await daemon.socket.close()
    for _ in range(200):
        if notes:
            break
        await asyncio.sleep(0.05)
    await channel.close()
    assert notes == ["The editor's MCP servers left this chat's qwen serve session: it closed the connection."]
    assert channel.rows()[0]["status"] == "disconnected"


async def test_a_serve_chat_whose_thread_drains_closes_its_channel_on_its_own_loop(ide_tools: IdeTools) -> None:
    """A window closed (or the package unloaded) drains the chat's thread:
    each bridge is killed and reaped, with no `stop`. The session's servers
    still leave the daemon, and the channel's socket closes on the chat's
    loop: left to the garbage collector, it is found after that loop closed
    ("Unclosed client session", "Event loop is closed" in whatever runs next)."""
    daemon, notes = await scripted(), []
    thread = ChatThread()
    thread.start()
    bridge = ServeBridge(ServeCommand(argv=["qwen", "serve"], cwd="."),
                         lambda: cast(AgentRequestHandler, None), cast(BridgeEvents, None))

    async def give() -> ClientMcpChannel:
        channel = ClientMcpChannel(Address("127.0.0.1", daemon.port, DAEMON_TOKEN), SESSION,
                                   [ide_entry(ide_tools.url)], "/tmp", notes.append, dict(os.environ))
        bridge._mcp[SESSION] = channel
        thread.bridges.append(bridge)
        channel.start()
        await asyncio.wait_for(channel.ready.wait(), 20)
        return channel

    try:
        channel = await asyncio.wrap_future(thread.submit(give()))
        assert channel.rows() == [{"name": IDE_ENTRY_NAME, "status": "connected"}]
    finally:
        await asyncio.to_thread(thread.stop)
    assert daemon.socket is not None
    for _ in range(100):  # the close frame crosses to the daemon's loop
        if daemon.socket.closed:
            break
        await asyncio.sleep(0.05)
    assert daemon.socket.closed
    assert json.loads(daemon.received[-1]) == {"type": "mcp_unregister", "server": IDE_ENTRY_NAME}
    assert channel._http is not None and channel._http.closed


async def test_a_hung_daemons_channels_close_together_not_one_after_another() -> None:
    """Stop Serve Daemon's SIGTERM comes after the chats' channels close. A
    daemon that hangs (when the user reaches for Stop) holds each close for
    CLOSE_SECONDS: one after another, a window with several chats would wait
    that long for each before the daemon got its signal."""
    closing: list[str] = []
    all_closing = asyncio.Event()

    class HungChannel:
        def __init__(self, session_id: str) -> None:
            self.session_id = session_id

        async def close(self) -> None:
            closing.append(self.session_id)
            if len(closing) == 3:
                all_closing.set()
            await all_closing.wait()  # as a close frame never answered, until the others have begun

    bridge = ServeBridge(ServeCommand(argv=["qwen", "serve"], cwd="."),
                         lambda: cast(AgentRequestHandler, None), cast(BridgeEvents, None))
    bridge._mcp = {name: cast(ClientMcpChannel, HungChannel(name)) for name in ("s1", "s2", "s3")}
    await asyncio.wait_for(bridge.reap(), 10)
    assert sorted(closing) == ["s1", "s2", "s3"]
    assert bridge._mcp == {}


async def test_mcp_servers_on_serve_lists_the_daemons_own_and_the_chats_with_their_tools(ide_tools: IdeTools) -> None:
    """MCP Servers… asks qwen's methods; on serve the bridge answers them: the
    session's servers from the daemon with the chat's in their place, and the
    tools of a server named without a session (qwen's tools method names none)."""
    daemon, notes = await scripted(), []
    channel = await opened(daemon, [ide_entry(ide_tools.url)], notes)
    bridge = ServeBridge(ServeCommand(argv=["qwen", "serve"], cwd="."),
                         lambda: cast(AgentRequestHandler, None), cast(BridgeEvents, None))
    bridge._sessions[SESSION] = DaemonSession(Address("127.0.0.1", daemon.port, DAEMON_TOKEN), SESSION, "c-1",
                                             cast(Any, None))
    bridge._mcp[SESSION] = channel
    bridge._live = True
    try:
        rows = session_rows(await bridge.request(SESSION_RESOURCES, {"sessionId": SESSION}))
        assert [(row.name, row.status) for row in rows] == [("own", "ok · connected"), (IDE_ENTRY_NAME, "connected")]
        assert tool_names(await bridge.request(MCP_TOOLS, {"serverName": IDE_ENTRY_NAME})) == ["get_workspace_folders"]
    finally:
        await channel.close()


async def test_a_daemon_that_does_not_answer_is_said_with_the_servers_it_did_not_get(ide_tools: IdeTools) -> None:
    notes: list[str] = []
    channel = ClientMcpChannel(Address("127.0.0.1", 9, DAEMON_TOKEN), SESSION, [ide_entry(ide_tools.url)], "/tmp",
                               notes.append, dict(os.environ))  # port 9: nothing listens
    channel.start()
    await asyncio.wait_for(channel.ready.wait(), 20)
    await channel.close()
    assert len(notes) == 1 and notes[0].startswith(
        f"The editor's MCP servers ({IDE_ENTRY_NAME}) are not on this chat's qwen serve session"), notes


def test_the_daemon_the_package_starts_takes_client_mcp() -> None:
    env = serve_env({"PATH": "/bin", CLIENT_MCP_ENV: "0"}, DAEMON_TOKEN)
    assert env[CLIENT_MCP_ENV] == "1"


async def test_a_stdio_server_that_cannot_start_or_dies_answers_an_error_with_its_stderr() -> None:
    missing = StdioRelay("/no/such/server", [], os.environ, "/tmp")
    with pytest.raises(RelayError, match="did not start"):
        await missing.request({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    dying = StdioRelay(sys.executable, ["-c", "import sys; sys.stdin.readline(); print('boom', file=sys.stderr)"],
                       {}, "/tmp")
    with pytest.raises(RelayError, match="the server exited: boom"):
        await dying.request({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    await dying.close()


async def test_a_stdio_servers_line_past_the_bound_is_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    from qwencompanion_src.core.serve import mcp_relays

    monkeypatch.setattr(mcp_relays, "MAX_MESSAGE_BYTES", 4096)
    script = "import sys, time; sys.stdin.readline(); print('x' * 100000, flush=True); time.sleep(30)"
    flood = StdioRelay(sys.executable, ["-c", script], os.environ, "/tmp")
    with pytest.raises(RelayError, match="a line of more than 4096 bytes"):
        await flood.request({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    await flood.close()
