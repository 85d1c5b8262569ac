"""The full table of ways around the Origin / Host / bearer checks.

Every variant is sent with POST, GET and DELETE, each once with a body that
would act if it were parsed (an openDiff of a secret file, which the backend
records) and once announcing a large Content-Length and sending no body at all:
an answer at all proves the refusal came before the body was awaited. No
refusal carries the token, the file's content, a traceback or a machine path.

tests/unit/test_security.py has representative variants over POST, the check
order and the token's strength; this table is the cross product, with the
"before the body" proof for every row.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.companion.diff_tools import diff_tools
from qwencompanion_src.core.companion.ide_messages import CloseDiffArguments, OpenDiffArguments
from qwencompanion_src.core.companion.protocol import ToolAnswer
from qwencompanion_src.core.companion.server import CompanionServer
from tests.unit.conftest import ContextHolder, initialize_body

from .conftest import assert_nothing_leaks, exchange

TOKEN = secrets.token_hex(32)
OTHER_TOKEN = secrets.token_hex(32)
SECRET = "the secret content of a file nobody asked to show"
METHODS = ("POST", "GET", "DELETE")
ANNOUNCED = 1_000_000  # under the body limit: a server that waited for it would hang here


class RecordingBackend:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        self.calls.append(arguments.filePath)
        return ToolAnswer()

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        self.calls.append(arguments.filePath)
        return ToolAnswer()


def _lookalike(token: str) -> str:
    """The token with its first hex letter swapped for a Cyrillic look-alike."""
    for latin, cyrillic in (("a", "\u0430"), ("c", "\u0441"), ("e", "\u0435")):
        if latin in token:
            return token.replace(latin, cyrillic, 1)
    return "\uff10" + token[1:]  # a fullwidth zero


# (label, Authorization value or None for no header, extra raw header lines, request target)
AUTH_CASES: list[tuple[str, str | None, list[str], str]] = [
    ("missing", None, [], "/mcp"),
    ("empty", "", [], "/mcp"),
    ("scheme only", "Bearer", [], "/mcp"),
    ("scheme and space", "Bearer ", [], "/mcp"),
    ("prefixed", f"Bearer x{TOKEN}", [], "/mcp"),
    ("two spaces", f"Bearer  {TOKEN}", [], "/mcp"),
    ("truncated", f"Bearer {TOKEN[:-1]}", [], "/mcp"),
    ("first char cut", f"Bearer {TOKEN[1:]}", [], "/mcp"),
    ("suffixed", f"Bearer {TOKEN}x", [], "/mcp"),
    ("suffixed digit", f"Bearer {TOKEN}0", [], "/mcp"),
    ("trailing word", f"Bearer {TOKEN} x", [], "/mcp"),
    ("trailing comma", f"Bearer {TOKEN},", [], "/mcp"),
    ("listed twice", f"Bearer {TOKEN}, Bearer {TOKEN}", [], "/mcp"),
    ("scheme lower case", f"bearer {TOKEN}", [], "/mcp"),
    ("scheme upper case", f"BEARER {TOKEN}", [], "/mcp"),
    ("scheme mixed case", f"BeArEr {TOKEN}", [], "/mcp"),
    ("token upper case", f"Bearer {TOKEN.upper()}", [], "/mcp"),
    ("scheme twice", f"Bearer Bearer {TOKEN}", [], "/mcp"),
    ("tab separator", f"Bearer\t{TOKEN}", [], "/mcp"),
    ("colon separator", f"Bearer:{TOKEN}", [], "/mcp"),
    ("no separator", f"Bearer{TOKEN}", [], "/mcp"),
    ("no-break space", f"Bearer\u00a0{TOKEN}", [], "/mcp"),
    ("look-alike letter", f"Bearer {_lookalike(TOKEN)}", [], "/mcp"),
    ("token alone", TOKEN, [], "/mcp"),
    ("Basic", f"Basic {TOKEN}", [], "/mcp"),
    ("Basic base64", "Basic " + base64.b64encode(f":{TOKEN}".encode()).decode(), [], "/mcp"),
    ("Token scheme", f"Token {TOKEN}", [], "/mcp"),
    ("Digest", f"Digest {TOKEN}", [], "/mcp"),
    ("ApiKey", f"ApiKey {TOKEN}", [], "/mcp"),
    ("another server's token", f"Bearer {OTHER_TOKEN}", [], "/mcp"),
    ("all zeros", "Bearer " + "0" * len(TOKEN), [], "/mcp"),
    ("NUL after the token", f"Bearer {TOKEN}\x00", [], "/mcp"),
    ("in a query string", None, [], f"/mcp?token={TOKEN}"),
    ("in an access_token query", None, [], f"/mcp?access_token={TOKEN}"),
    ("in a cookie", None, [f"Cookie: token={TOKEN}"], "/mcp"),
    ("in Proxy-Authorization", None, [f"Proxy-Authorization: Bearer {TOKEN}"], "/mcp"),
    ("in X-Auth-Token", None, [f"X-Auth-Token: {TOKEN}"], "/mcp"),
    ("header name odd case, wrong token", f"Bearer {OTHER_TOKEN}", [], "/mcp"),
]

ORIGINS = [
    "null",
    "file://",
    "http://localhost",
    "http://localhost:{port}",
    "http://127.0.0.1:{port}",
    "https://evil.com",
    "",
    "chrome-extension://abcdefghijklmnop",
    "vscode-webview://panel",
]

HOSTS = [
    "evil.com",
    "evil.com:{port}",
    "127.0.0.1.evil.com",
    "127.0.0.1.evil.com:{port}",
    "127.0.0.1",
    "localhost",
    "127.0.0.1:{other}",
    "[::1]:{port}",
    "127.1:{port}",
    "2130706433:{port}",
    "localhost.:{port}",
    "127.0.0.1:0{port}",
    "127.0.0.1:{port}@evil.com",
    "evil.com@127.0.0.1:{port}",
    "127.0.0.1:{port}, evil.com",
]


@pytest.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[tuple[CompanionServer, RecordingBackend, str, Path]]:
    """A live server with a recording backend, one valid session and a secret file."""
    backend = RecordingBackend()
    server = CompanionServer(token=TOKEN, tools=diff_tools(backend), context=ContextHolder())
    await server.start()
    body = json.dumps(initialize_body()).encode()
    answer = await exchange(server.port, _request("POST", server.port, _good_headers(server.port), body))
    assert answer.status == 200
    session = next(iter(server.sessions)).id
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    yield server, backend, session, secret
    await server.stop()


def _good_headers(port: int) -> list[str]:
    return [f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {TOKEN}"]


def _request(method: str, port: int, lines: list[str], body: bytes = b"", *, target: str = "/mcp", length: int | None = None) -> bytes:
    head = [
        f"{method} {target} HTTP/1.1",
        *lines,
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"Content-Length: {len(body) if length is None else length}",
    ]
    return "\r\n".join(head).encode("utf-8") + b"\r\n\r\n" + body


def _acting_body(session: str, secret: Path) -> bytes:
    """What a parsed body would do: show a secret file (and what a sloppy parser would choke on)."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "openDiff", "arguments": {"filePath": str(secret), "newContent": "x"}},
    }
    return json.dumps(call).encode() + b"\x00\xff{[" * 10


async def _refused_everywhere(
    guarded: tuple[CompanionServer, RecordingBackend, str, Path],
    lines: list[str],
    statuses: set[int],
    reasons: set[str],
    target: str = "/mcp",
) -> None:
    server, backend, session, secret = guarded
    for method in METHODS:
        for body, length in ((_acting_body(session, secret), None), (b"", ANNOUNCED)):
            headers = [*lines, f"Mcp-Session-Id: {session}"]
            answer = await exchange(server.port, _request(method, server.port, headers, body, target=target, length=length))
            assert answer.status in statuses, (method, length, answer.text[:300])
            assert SECRET not in answer.text
            if answer.status == 400:
                # aiohttp's parser quotes the malformed line back to its sender:
                # its own bytes, never anything it did not send.
                assert_nothing_leaks(answer.text)
            else:
                assert_nothing_leaks(answer.text, TOKEN)
                assert server.auth_failures[-1].reason in reasons
    assert backend.calls == []
    assert [s.id for s in server.sessions] == [session]  # no session made, none deleted
    assert not server.sessions.get(session).stream_open
    for failure in server.auth_failures:
        assert_nothing_leaks(repr(failure), TOKEN)


@pytest.mark.parametrize(("label", "value", "extra", "target"), AUTH_CASES, ids=[c[0] for c in AUTH_CASES])
async def test_every_token_variant_is_refused_before_the_body(
    guarded: Any, label: str, value: str | None, extra: list[str], target: str
) -> None:
    server = guarded[0]
    name = "aUtHoRiZaTiOn" if "odd case" in label else "Authorization"
    lines = [f"Host: 127.0.0.1:{server.port}", *extra]
    if value is not None:
        lines.append(f"{name}: {value}")
    # 400: the HTTP parser itself turned the request down (e.g. a NUL in a header).
    await _refused_everywhere(guarded, lines, {400, 401}, {"missing-token", "wrong-token"}, target)


@pytest.mark.parametrize("origin", ORIGINS)
async def test_every_origin_is_refused_even_with_the_token(guarded: Any, origin: str) -> None:
    server = guarded[0]
    for name in ("Origin", "oRIGIN"):
        lines = [*_good_headers(server.port), f"{name}: {origin.format(port=server.port)}"]
        await _refused_everywhere(guarded, lines, {403}, {"origin"})


@pytest.mark.parametrize("host", HOSTS)
async def test_every_foreign_host_is_refused_even_with_the_token(guarded: Any, host: str) -> None:
    server = guarded[0]
    other = server.port + 1 if server.port < 65535 else 1
    lines = [f"Host: {host.format(port=server.port, other=other)}", f"Authorization: Bearer {TOKEN}"]
    await _refused_everywhere(guarded, lines, {400, 403}, {"host"})


async def test_a_request_without_host_is_refused(guarded: Any) -> None:
    server, backend, session, _ = guarded
    for version, status in (("1.0", 403), ("1.1", 400)):  # HTTP/1.1 requires Host: the parser refuses
        for method in METHODS:
            request = _request(method, server.port, [f"Authorization: Bearer {TOKEN}", f"Mcp-Session-Id: {session}"], length=ANNOUNCED)
            answer = await exchange(server.port, request.replace(b"HTTP/1.1", f"HTTP/{version}".encode(), 1))
            assert answer.status == status
            assert_nothing_leaks(answer.text, TOKEN)
    assert backend.calls == [] and len(server.sessions) == 1


async def test_the_right_headers_still_work_after_the_table(guarded: Any) -> None:
    """Control: the same requests with the right headers do reach the backend."""
    server, backend, session, secret = guarded
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "openDiff", "arguments": {"filePath": str(secret), "newContent": "x"}},
    }).encode()
    answer = await exchange(server.port, _request("POST", server.port, [*_good_headers(server.port), f"Mcp-Session-Id: {session}"], body))
    assert answer.status == 200
    assert backend.calls == [str(secret)]
