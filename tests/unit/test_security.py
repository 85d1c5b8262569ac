"""Spec section 3: Origin -> Host -> Authorization, checked on every request
before its body is read; refusals never echo or record the token."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from qwencompanion_src.core.companion.server import CompanionServer

from .conftest import TOKEN, Mcp, initialize_body, raw_http, raw_request, request_body

BAD_AUTHORIZATIONS = [
    "",
    "Bearer",
    "Bearer ",
    f"Bearer  {TOKEN}",
    f"Bearer\t{TOKEN}",
    f"bearer {TOKEN}",
    f"BEARER {TOKEN}",
    f"Basic {TOKEN}",
    f"Bearer{TOKEN}",
    TOKEN,
    f"Bearer {TOKEN[:-1]}",
    f"Bearer {TOKEN}0",
    f"Bearer x{TOKEN}",
    f"Bearer {TOKEN[1:]}",
    f"Bearer {TOKEN.upper()}",
    "Bearer " + "f" * len(TOKEN),
    f"Bearer {TOKEN}, Bearer {TOKEN}",
]


def _no_token_in(text: str) -> None:
    # Not the token, nor any telling piece of it.
    for start in range(len(TOKEN) - 8):
        assert TOKEN[start : start + 8] not in text, text


def _recorded(server: CompanionServer) -> str:
    return repr(list(server.auth_failures))


@pytest.fixture
async def session(mcp: Mcp) -> str:
    return await mcp.initialize()


async def _post(mcp: Mcp, headers: dict[str, str], session: str | None = None) -> Any:
    all_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        all_headers["Mcp-Session-Id"] = session
    all_headers.update(headers)
    return await mcp.client.post("/mcp", data=json.dumps(request_body("ping")), headers=all_headers)


# --- Origin --------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://127.0.0.1", "http://localhost:1234", "null", "", "file://"]
)
async def test_any_origin_header_is_403_even_with_the_right_token(
    mcp: Mcp, server: CompanionServer, session: str, origin: str
) -> None:
    response = await _post(mcp, {"Origin": origin, "Authorization": f"Bearer {TOKEN}"}, session)
    assert response.status == 403
    text = await response.text()
    _no_token_in(text)
    assert server.auth_failures[-1].reason == "origin"
    await mcp.ping_ok(session)


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
async def test_origin_is_refused_on_every_method(mcp: Mcp, server: CompanionServer, session: str, method: str) -> None:
    headers = {
        "Origin": "https://evil.example",
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session,
    }
    response = await mcp.client.request(method, "/mcp", headers=headers)
    assert response.status == 403
    assert server.sessions.get(session) is not None  # DELETE did nothing
    await mcp.ping_ok(session)


# --- Host ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "127.0.0.1",
        "localhost",
        "127.0.0.1:{other}",
        "localhost:{other}",
        "127.0.0.2:{port}",
        "[::1]:{port}",
        "0.0.0.0:{port}",
        "127.0.0.1:{port}.evil.example",
        "localhost.evil.example:{port}",
        "",
    ],
)
async def test_a_foreign_host_is_403(mcp: Mcp, server: CompanionServer, session: str, host: str) -> None:
    value = host.format(port=server.port, other=server.port + 1 if server.port < 65535 else 1)
    response = await _post(mcp, {"Host": value, "Authorization": f"Bearer {TOKEN}"}, session)
    assert response.status == 403
    _no_token_in(await response.text())
    assert server.auth_failures[-1].reason == "host"
    await mcp.ping_ok(session)


@pytest.mark.parametrize("value", [f"Bearer {TOKEN} ", f"  Bearer {TOKEN}"])
async def test_surrounding_whitespace_is_not_part_of_a_header_value(mcp: Mcp, session: str, value: str) -> None:
    # HTTP strips optional whitespace around field values, so these are exact.
    response = await _post(mcp, {"Authorization": value}, session)
    assert response.status == 200


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "LOCALHOST:{port}"])
async def test_loopback_hosts_with_our_port_are_accepted(mcp: Mcp, server: CompanionServer, session: str, host: str) -> None:
    response = await _post(mcp, {"Host": host.format(port=server.port), "Authorization": f"Bearer {TOKEN}"}, session)
    assert response.status == 200
    assert (await response.json())["result"] == {}


# --- Authorization ---------------------------------------------------------------


async def test_a_missing_authorization_is_401(mcp: Mcp, server: CompanionServer, session: str) -> None:
    response = await _post(mcp, {}, session)
    assert response.status == 401
    _no_token_in(await response.text())
    assert server.auth_failures[-1].reason == "missing-token"
    await mcp.ping_ok(session)


@pytest.mark.parametrize("value", BAD_AUTHORIZATIONS)
async def test_a_wrong_authorization_is_401_and_never_recorded_or_echoed(
    mcp: Mcp, server: CompanionServer, session: str, value: str
) -> None:
    response = await _post(mcp, {"Authorization": value}, session)
    assert response.status == 401
    _no_token_in(await response.text())
    _no_token_in(str(dict(response.headers)))
    failure = server.auth_failures[-1]
    assert failure.reason == "wrong-token"
    _no_token_in(_recorded(server))
    await mcp.ping_ok(session)


async def test_auth_failures_are_not_logged_with_the_token(
    mcp: Mcp, session: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    for value in BAD_AUTHORIZATIONS:
        await _post(mcp, {"Authorization": value}, session)
    assert "refused a request" in caplog.text
    _no_token_in(caplog.text)


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_need_the_token_too(mcp: Mcp, server: CompanionServer, session: str, method: str) -> None:
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    response = await mcp.client.request(method, "/mcp", headers=headers)
    assert response.status == 401
    response = await mcp.client.request(method, "/mcp", headers={**headers, "Authorization": "Bearer nope"})
    assert response.status == 401
    assert server.sessions.get(session) is not None
    assert not server.sessions.get(session).stream_open  # type: ignore[union-attr]


async def test_initialize_needs_the_token(mcp: Mcp, server: CompanionServer) -> None:
    response = await mcp.client.post("/mcp", json=initialize_body())
    assert response.status == 401
    assert "Mcp-Session-Id" not in response.headers
    assert len(server.sessions) == 0


async def test_auth_failures_are_bounded(mcp: Mcp, server: CompanionServer, session: str) -> None:
    for _ in range(50):
        await _post(mcp, {}, session)
    assert 0 < len(server.auth_failures) <= 20


# --- order ---------------------------------------------------------------------------


async def test_checks_run_origin_then_host_then_authorization(mcp: Mcp, server: CompanionServer, session: str) -> None:
    response = await _post(mcp, {"Origin": "https://evil.example", "Host": "evil.example"})
    assert response.status == 403
    assert server.auth_failures[-1].reason == "origin"
    response = await _post(mcp, {"Host": "evil.example"})
    assert response.status == 403
    assert server.auth_failures[-1].reason == "host"
    response = await _post(mcp, {"Host": "evil.example", "Authorization": "Bearer wrong"})
    assert server.auth_failures[-1].reason == "host"
    response = await _post(mcp, {"Authorization": "Bearer wrong"})
    assert response.status == 401
    assert server.auth_failures[-1].reason == "wrong-token"
    reasons = [f.reason for f in server.auth_failures]
    assert reasons == ["origin", "host", "host", "wrong-token"]
    details = [f.detail for f in server.auth_failures]
    assert "evil.example" in details[1] and "Bearer" in details[3]
    for failure in server.auth_failures:
        assert failure.at > 0 and failure.detail


# --- raw: missing Host, and refusals before the body is read --------------------------


@pytest.fixture
async def live(live_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]) -> CompanionServer:
    server: CompanionServer = await live_factory(server_factory())
    return server


@pytest.mark.parametrize("version", ["1.0", "1.1"])
async def test_a_missing_host_is_refused(live: CompanionServer, version: str) -> None:
    body = json.dumps(initialize_body()).encode()
    request = raw_request(
        "POST", live.port, {"Authorization": f"Bearer {TOKEN}", "Content-Length": str(len(body))}, body, host=None
    ).replace(b"HTTP/1.1", f"HTTP/{version}".encode(), 1)
    status, _, answer = await raw_http(live.port, request)
    # HTTP/1.0 reaches our check (403); aiohttp's parser already rejects an
    # HTTP/1.1 request without Host as malformed (400).
    assert status == (403 if version == "1.0" else 400)
    _no_token_in(answer.decode("latin-1"))
    assert len(live.sessions) == 0
    if version == "1.0":
        assert live.auth_failures[-1].reason == "host"
    await _live_still_answers(live)


async def _live_still_answers(live: CompanionServer) -> None:
    body = json.dumps(initialize_body()).encode()
    status, headers, _ = await raw_http(
        live.port, raw_request("POST", live.port, {"Authorization": f"Bearer {TOKEN}", "Content-Length": str(len(body))}, body)
    )
    assert status == 200 and headers["mcp-session-id"]


@pytest.mark.parametrize(
    ("headers", "status", "reason"),
    [
        ({"Origin": "null", "Authorization": f"Bearer {TOKEN}"}, 403, "origin"),
        ({"Host": "evil.example", "Authorization": f"Bearer {TOKEN}"}, 403, "host"),
        ({}, 401, "missing-token"),
        ({"Authorization": "Bearer wrong"}, 401, "wrong-token"),
    ],
)
async def test_refusals_come_before_the_body_is_read(
    live: CompanionServer, headers: dict[str, str], status: int, reason: str
) -> None:
    host = headers.pop("Host", "auto")
    # Announce a large body and send none of it: an answer proves the body was never awaited.
    request = raw_request(
        "POST", live.port, {"Content-Type": "application/json", "Content-Length": "1000000", **headers}, host=host
    )
    got, _, answer = await raw_http(live.port, request)
    assert got == status
    assert live.auth_failures[-1].reason == reason
    _no_token_in(answer.decode("latin-1"))
    await _live_still_answers(live)


async def test_an_authenticated_request_with_a_partial_body_is_not_refused_early(live: CompanionServer) -> None:
    """Control for the test above: with valid credentials the server does wait for the body."""
    import asyncio

    reader, writer = await asyncio.open_connection("127.0.0.1", live.port)
    body = json.dumps(initialize_body()).encode()
    writer.write(
        raw_request("POST", live.port, {"Authorization": f"Bearer {TOKEN}", "Content-Length": str(len(body))})
        + body[:10]
    )
    await writer.drain()
    writer.write(body[10:])
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    assert b" 200 " in status_line
    writer.close()
    await writer.wait_closed()
    assert len(live.sessions) == 1


# --- the token ------------------------------------------------------------------------


def test_companion_tokens_have_at_least_128_bits_and_differ(companion_factory: Callable[..., Any]) -> None:
    first = companion_factory()
    second = companion_factory()
    for companion in (first, second):
        token = companion.token
        assert token.isascii() and token.isalnum()
        int(token, 16)  # hex
        assert len(token) * 4 >= 128
    assert first.token != second.token
