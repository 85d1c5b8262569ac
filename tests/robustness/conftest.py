"""Shared pieces of the robustness suite: a live server on loopback in the
test's loop, a raw HTTP exchange that tolerates any answer (or none), and the
checks every hostile request must pass: no 5xx, no secret, source path or
traceback in what comes back, nothing logged at ERROR."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.companion.diff_tools import close_answer, diff_tools
from qwencompanion_src.core.companion.ide_messages import CloseDiffArguments, OpenDiffArguments
from qwencompanion_src.core.companion.protocol import ToolAnswer, text_result
from qwencompanion_src.core.companion.server import CompanionServer, ServerOptions
from tests.unit.conftest import TOKEN, WAIT, ContextHolder, initialize_body, live_factory, raw_request  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
# Loggers whose ERROR records mean an unhandled exception reached the server's edge.
WATCHED_LOGGERS = ("aiohttp", "asyncio", "qwencompanion_src")


class InstantDiffBackend:
    """Answers openDiff / closeDiff at once, as the editor backend does."""

    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        return ToolAnswer()

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        return text_result(close_answer(None))


def make_live_server(options: ServerOptions = ServerOptions()) -> CompanionServer:
    return CompanionServer(
        token=TOKEN, tools=diff_tools(InstantDiffBackend()), context=ContextHolder(), options=options
    )


@pytest.fixture
def live_server(live_factory: Callable[..., Any]) -> Callable[..., Any]:  # noqa: F811  (the fixture imported above)
    """`await start(options)` -> a CompanionServer listening on 127.0.0.1."""

    async def start(options: ServerOptions = ServerOptions()) -> CompanionServer:
        server: CompanionServer = await live_factory(make_live_server(options))
        return server

    return start


@pytest.fixture
def error_log(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """Call it at the end: the ERROR (and worse) records of the server's loggers."""
    caplog.set_level(logging.WARNING)

    def errors() -> list[str]:
        return [
            f"{r.name}: {r.getMessage()}"
            for r in caplog.records
            if r.levelno >= logging.ERROR and r.name.startswith(WATCHED_LOGGERS)
        ]

    return errors


@dataclass
class Answer:
    status: int | None  # None: the server closed the connection without answering
    head: bytes
    body: bytes

    @property
    def text(self) -> str:
        return (self.head + b"\r\n\r\n" + self.body).decode("latin-1")


async def exchange(port: int, data: bytes, *, timeout: float = WAIT) -> Answer:
    """Send `data` on a fresh connection and read one answer, whatever it is."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        raw = b""
        head, body, status = b"", b"", None
        async with asyncio.timeout(timeout):
            while b"\r\n\r\n" not in raw:
                chunk = await reader.read(65536)
                if not chunk:
                    return Answer(None, raw, b"")
                raw += chunk
            head, _, body = raw.partition(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = _content_length(head)
            if length is not None:
                body += await reader.readexactly(max(0, length - len(body)))
        return Answer(status, head, body)
    except (ConnectionError, asyncio.IncompleteReadError):
        return Answer(None, b"", b"")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return None


def assert_nothing_leaks(text: str, token: str | None = None) -> None:
    """No traceback, no path of this machine's source tree, and no piece of `token`."""
    for start in range(len(token or "") - 8):
        assert token is not None and token[start : start + 8] not in text, text[:300]
    assert "Traceback" not in text and 'File "' not in text, text[:300]
    assert str(ROOT) not in text and "site-packages" not in text, text[:300]


def post(port: int, body: bytes, headers: dict[str, str] | None = None, *, session: str | None = None) -> bytes:
    """A raw, authenticated POST /mcp of `body`."""
    all_headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
    }
    if session is not None:
        all_headers["Mcp-Session-Id"] = session
    all_headers.update(headers or {})
    return raw_request("POST", port, all_headers, body)


async def new_session(server: CompanionServer) -> str:
    answer = await exchange(server.port, post(server.port, json.dumps(initialize_body()).encode()))
    assert answer.status == 200, answer.text
    for line in answer.head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"mcp-session-id":
            return value.strip().decode()
    raise AssertionError("no Mcp-Session-Id")


async def ping_ok(server: CompanionServer, session: str) -> None:
    """The server still answers a normal request."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    answer = await exchange(server.port, post(server.port, body, session=session))
    assert answer.status == 200 and b'"result":{}' in answer.body.replace(b" ", b""), answer.text
