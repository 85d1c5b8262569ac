"""Shared helpers for the core unit tests: an MCP-over-HTTP driver for the
aiohttp test client, an SSE reader, raw loopback HTTP, and a started Companion
on its own server thread."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from qwencompanion_src.core.companion.companion import Companion
from qwencompanion_src.core.companion.diff_tools import UnavailableDiffBackend, diff_tools
from qwencompanion_src.core.companion.ide_messages import IdeContext, OpenFile, WorkspaceState, empty_context
from qwencompanion_src.core.companion.server import CompanionServer, ServerOptions
from qwencompanion_src.core.loop_thread import LoopThread
from tests.support.processes import grandchildren  # noqa: F401  (a fixture of several modules here)

TOKEN = "0123456789abcdef" * 4  # 256 bits, hex, like Companion's tokens
LATEST = "2025-11-25"
WAIT = 10.0  # upper bound for anything that should happen "soon" (a hang guard, not a timing check)


def context_with(path: str, line: int = 1) -> IdeContext:
    return IdeContext(
        workspaceState=WorkspaceState(
            openFiles=[OpenFile(path=path, timestamp=1000 + line, isActive=True)]
        )
    )


class ContextHolder:
    def __init__(self) -> None:
        self.context: IdeContext = empty_context()

    def __call__(self) -> IdeContext:
        return self.context


def make_server(options: ServerOptions = ServerOptions(), holder: ContextHolder | None = None, **kwargs: Any) -> CompanionServer:
    holder = holder or ContextHolder()
    return CompanionServer(
        token=TOKEN,
        tools=diff_tools(UnavailableDiffBackend()),
        context=holder,
        options=options,
        **kwargs,
    )


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def initialize_body(version: str = LATEST, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "unit-test", "version": "1.0"},
        },
    }


def request_body(method: str, params: dict[str, Any] | None = None, request_id: int = 7) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


# --- SSE --------------------------------------------------------------------


@dataclass
class SseEvent:
    data: dict[str, Any] | None = None
    comment: str | None = None
    event: str | None = None


class SseReader:
    """Reads one SSE response event by event (comments count as events)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def _next(self) -> SseEvent:
        data_lines: list[str] = []
        event = SseEvent()
        while True:
            raw = await self.response.content.readline()
            if not raw:
                raise EOFError("the SSE stream ended")
            line = raw.decode("utf-8").rstrip("\r\n")
            if line == "":
                if data_lines:
                    event.data = json.loads("\n".join(data_lines))
                    return event
                if event.comment is not None:
                    return event
                continue
            if line.startswith(":"):
                event.comment = line[1:].strip()
            elif line.startswith("data:"):
                data_lines.append(line[5:].lstrip())
            elif line.startswith("event:"):
                event.event = line[6:].strip()

    async def next(self, timeout: float = WAIT) -> SseEvent:
        return await asyncio.wait_for(self._next(), timeout)

    async def next_message(self, timeout: float = WAIT) -> dict[str, Any]:
        """The next data event, skipping keep-alive comments."""

        async def skip_comments() -> dict[str, Any]:
            while True:
                event = await self._next()
                if event.data is not None:
                    return event.data

        return await asyncio.wait_for(skip_comments(), timeout)


# --- an MCP driver over any aiohttp client -----------------------------------


@dataclass
class Mcp:
    """Speaks MCP to `/mcp` through an aiohttp client (test client or ClientSession)."""

    client: Any  # aiohttp TestClient or ClientSession with base URL
    token: str = TOKEN
    path: str = "/mcp"
    streams: list[aiohttp.ClientResponse] = field(default_factory=list)

    async def post(
        self,
        body: Any,
        *,
        session: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | io.BytesIO | None = None,
    ) -> aiohttp.ClientResponse:
        all_headers = {**auth(self.token), "Accept": "application/json, text/event-stream"}
        if session is not None:
            all_headers["Mcp-Session-Id"] = session
        all_headers.update(headers or {})
        if raw is not None:
            all_headers.setdefault("Content-Type", "application/json")
            return await self.client.post(self.path, data=raw, headers=all_headers)
        return await self.client.post(self.path, json=body, headers=all_headers)

    async def initialize(self, version: str = LATEST) -> str:
        response = await self.post(initialize_body(version))
        assert response.status == 200, await response.text()
        session = response.headers["Mcp-Session-Id"]
        response = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session)
        assert response.status == 202
        return session

    async def rpc(self, session: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.post(request_body(method, params), session=session)
        assert response.status == 200, await response.text()
        body: dict[str, Any] = await response.json()
        return body

    async def call_tool(self, session: str, name: str, arguments: Any) -> dict[str, Any]:
        body = await self.rpc(session, "tools/call", {"name": name, "arguments": arguments})
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    async def ping_ok(self, session: str) -> None:
        """The server still answers a normal request."""
        body = await self.rpc(session, "ping")
        assert body == {"jsonrpc": "2.0", "id": 7, "result": {}}

    async def open_stream(self, session: str, headers: dict[str, str] | None = None) -> SseReader:
        all_headers = {**auth(self.token), "Accept": "text/event-stream", "Mcp-Session-Id": session}
        all_headers.update(headers or {})
        response = await self.client.get(self.path, headers=all_headers)
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        self.streams.append(response)
        return SseReader(response)

    def close_streams(self) -> None:
        for response in self.streams:
            response.close()
        self.streams.clear()


@pytest.fixture
def holder() -> ContextHolder:
    return ContextHolder()


@pytest.fixture
def server_factory(holder: ContextHolder) -> Callable[..., CompanionServer]:
    def factory(options: ServerOptions = ServerOptions(), **kwargs: Any) -> CompanionServer:
        return make_server(options, holder, **kwargs)

    return factory


@pytest.fixture
async def mcp_factory(aiohttp_client: Any, aiohttp_raw_server: Any) -> AsyncIterator[Callable[..., Any]]:
    """Returns `await make(server)` -> Mcp bound to an aiohttp test server of `server`."""
    made: list[tuple[CompanionServer, Mcp]] = []

    async def make(server: CompanionServer) -> Mcp:
        settings = server.web_settings()
        del settings["handler_cancellation"]  # the test server turns it on itself
        client = await aiohttp_client(await aiohttp_raw_server(server.handle, **settings))
        server.port = client.server.port  # the Host check compares with the server's own port
        mcp = Mcp(client)
        made.append((server, mcp))
        return mcp

    yield make
    for server, mcp in made:
        mcp.close_streams()
        await server.stop()  # ends open SSE handlers so the test server closes at once


@pytest.fixture
async def server(server_factory: Callable[..., CompanionServer]) -> CompanionServer:
    return server_factory()


@pytest.fixture
async def mcp(mcp_factory: Callable[..., Any], server: CompanionServer) -> Mcp:
    result: Mcp = await mcp_factory(server)
    return result


# --- a started server in the test's loop, with raw HTTP ----------------------


@pytest.fixture
async def live_factory() -> AsyncIterator[Callable[..., Any]]:
    started: list[CompanionServer] = []

    async def start(server: CompanionServer) -> CompanionServer:
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


async def raw_http(port: int, request: bytes, *, body_parts: tuple[bytes, ...] = ()) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes over loopback and read one HTTP/1.1 response."""

    async def exchange() -> tuple[int, dict[str, str], bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(request)
            for part in body_parts:
                writer.write(part)
            await writer.drain()
            status_line = await reader.readline()
            status = int(status_line.split()[1])
            headers: dict[str, str] = {}
            while True:
                line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
            else:
                body = await reader.read()
            return status, headers, body
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return await asyncio.wait_for(exchange(), WAIT)


def raw_request(
    method: str, port: int | None, headers: dict[str, str], body: bytes = b"", *, host: str | None = "auto"
) -> bytes:
    lines = [f"{method} /mcp HTTP/1.1"]
    if host == "auto":
        lines.append(f"Host: 127.0.0.1:{port}")
    elif host is not None:
        lines.append(f"Host: {host}")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# --- a started Companion on its own thread ------------------------------------


@pytest.fixture
def server_thread() -> Iterator[LoopThread]:
    thread = LoopThread(name="QwenCompanion unit-test server")
    thread.start()
    yield thread
    thread.stop()


@pytest.fixture
def lock_directory(tmp_path: Path) -> Path:
    return tmp_path / "qwen-home" / "ide"


@pytest.fixture
def companion_factory(
    server_thread: LoopThread, lock_directory: Path, tmp_path: Path
) -> Iterator[Callable[..., Companion]]:
    made: list[Companion] = []

    def make(folders: list[str] | None = None, **kwargs: Any) -> Companion:
        companion = Companion(
            server_thread, folders=folders if folders is not None else [str(tmp_path)], lock_directory=lock_directory, **kwargs
        )
        companion.start()
        made.append(companion)
        return companion

    yield make
    for companion in made:
        companion.stop()


@pytest.fixture
def companion(companion_factory: Callable[..., Companion]) -> Companion:
    return companion_factory()


@pytest.fixture
async def companion_mcp(companion: Companion) -> AsyncIterator[Mcp]:
    """An Mcp driver (aiohttp ClientSession in the test loop) for the started Companion."""
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{companion.port}") as session:
        mcp = Mcp(session, token=companion.token)
        yield mcp
        mcp.close_streams()
