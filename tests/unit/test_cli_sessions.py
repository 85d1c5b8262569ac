"""Sessions: idle expiry, the cap, and the per-session notification queue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from qwencompanion_src.core.companion import protocol
from qwencompanion_src.core.companion.cli_sessions import MAX_PENDING, CliSession, SessionRegistry, TooManySessions
from qwencompanion_src.core.companion.ide_messages import CONTEXT_UPDATE, DIFF_ACCEPTED, DIFF_REJECTED
from qwencompanion_src.core.companion.server import CompanionServer, ServerOptions

from .conftest import WAIT, Mcp, initialize_body, request_body


def _context(n: int) -> dict[str, Any]:
    return protocol.notification(CONTEXT_UPDATE, {"workspaceState": {"openFiles": [{"path": f"/f{n}", "timestamp": n}]}})


def _accepted(n: int) -> dict[str, Any]:
    return protocol.notification(DIFF_ACCEPTED, {"filePath": f"/f{n}", "content": str(n)})


# --- SessionRegistry, with a fake clock -----------------------------------------------


def test_expire_idle_removes_only_quiet_sessions_without_a_stream() -> None:
    changes: list[None] = []
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=10, on_change=lambda: changes.append(None))
    quiet = registry.create("2025-11-25", "a")
    streaming = registry.create("2025-11-25", "b")
    recent = registry.create("2025-11-25", "c")
    registry.set_stream_open(streaming, True)
    quiet.last_seen = streaming.last_seen = 1000.0
    recent.last_seen = 1050.0
    changes.clear()

    assert registry.expire_idle(now=1059.0) == []
    expired = registry.expire_idle(now=1060.0)
    assert expired == [quiet]
    assert quiet.closed and quiet.wakeup.is_set()
    assert registry.get(quiet.id) is None
    assert registry.get(streaming.id) is streaming
    assert registry.get(recent.id) is recent
    assert changes, "on_change fires for an expiry"
    assert registry.expire_idle(now=1109.0) == []
    assert registry.expire_idle(now=1110.0) == [recent]
    assert registry.expire_idle(now=10**9) == []
    assert list(registry) == [streaming]


def test_a_session_whose_stream_closed_starts_its_idle_clock_then() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=10)
    session = registry.create("2025-11-25", "a")
    registry.set_stream_open(session, True)
    session.last_seen = 0.0
    assert registry.expire_idle(now=1000.0) == []
    registry.set_stream_open(session, False)  # touches
    assert registry.expire_idle() == []
    # It had a stream: a CLI that does not reopen it within the grace is gone.
    assert registry.expire_idle(now=session.last_seen + 4) == []
    assert registry.expire_idle(now=session.last_seen + 5) == [session]


def test_a_session_that_never_opened_a_stream_gets_the_full_idle_timeout() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=10)
    session = registry.create("2025-11-25", "a")
    session.last_seen = 0.0
    assert registry.expire_idle(now=59.0) == []
    assert registry.expire_idle(now=60.0) == [session]


def test_touch_keeps_a_session_alive() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=10)
    session = registry.create("2025-11-25", "a")
    session.last_seen = 0.0
    session.touch()
    assert registry.expire_idle(now=session.last_seen + 59) == []


def test_the_cap_evicts_the_longest_idle_session_without_a_stream() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=3)
    oldest_but_streaming = registry.create("2025-11-25", "a")
    middle = registry.create("2025-11-25", "b")
    newest = registry.create("2025-11-25", "c")
    registry.set_stream_open(oldest_but_streaming, True)
    oldest_but_streaming.last_seen, middle.last_seen, newest.last_seen = 1.0, 2.0, 3.0

    fourth = registry.create("2025-11-25", "d")
    assert len(registry) == 3
    assert registry.get(middle.id) is None and middle.closed
    assert {s.id for s in registry} == {oldest_but_streaming.id, newest.id, fourth.id}


def test_too_many_sessions_when_every_session_has_a_stream() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=2)
    for name in ("a", "b"):
        registry.set_stream_open(registry.create("2025-11-25", name), True)
    with pytest.raises(TooManySessions):
        registry.create("2025-11-25", "c")
    assert len(registry) == 2


def test_connected_count_and_close_all() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=5)
    sessions = [registry.create("2025-11-25", str(n)) for n in range(3)]
    registry.set_stream_open(sessions[0], True)
    registry.set_stream_open(sessions[2], True)
    assert registry.connected_count() == 2
    registry.close_all()
    assert len(registry) == 0 and registry.connected_count() == 0
    assert all(s.closed for s in sessions)


def test_session_ids_are_unguessable_and_unique() -> None:
    registry = SessionRegistry(idle_timeout=60, dropped_grace=5, max_sessions=1000)
    ids = {registry.create("2025-11-25", "x").id for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) >= 32 for i in ids)


# --- CliSession.enqueue ----------------------------------------------------------------


def test_enqueue_keeps_only_the_newest_context() -> None:
    session = CliSession(id="s", protocol_version="2025-11-25", client_name="t")
    session.enqueue(_context(1))
    session.enqueue(_accepted(1))
    session.enqueue(_context(2))
    session.enqueue(_context(3))
    assert list(session.pending) == [_accepted(1), _context(3)]
    assert session.wakeup.is_set()


def test_enqueue_never_coalesces_diff_notifications() -> None:
    session = CliSession(id="s", protocol_version="2025-11-25", client_name="t")
    rejected = protocol.notification(DIFF_REJECTED, {"filePath": "/a"})
    for message in (_accepted(1), rejected, _accepted(2), rejected):
        session.enqueue(message)
    assert list(session.pending) == [_accepted(1), rejected, _accepted(2), rejected]


def test_the_queue_is_bounded_and_drops_the_oldest() -> None:
    session = CliSession(id="s", protocol_version="2025-11-25", client_name="t")
    for n in range(MAX_PENDING + 50):
        session.enqueue(_accepted(n))
    assert len(session.pending) == MAX_PENDING
    assert session.pending[0] == _accepted(50)
    assert session.pending[-1] == _accepted(MAX_PENDING + 49)


# --- over HTTP --------------------------------------------------------------------------


async def test_idle_sessions_without_a_stream_expire_on_a_started_server(
    live_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]
) -> None:
    import aiohttp

    server = await live_factory(server_factory(ServerOptions(idle_timeout_seconds=0.2, keepalive_seconds=0.05)))
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{server.port}") as client:
        mcp = Mcp(client)
        streaming = await mcp.initialize()
        stream = await mcp.open_stream(streaming)
        await stream.next_message()
        quiet = await mcp.initialize()

        async def gone() -> None:
            while server.sessions.get(quiet) is not None:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(gone(), WAIT)
        # The session with an open stream outlived it.
        assert server.sessions.get(streaming) is not None
        response = await mcp.post(request_body("ping"), session=quiet)
        assert response.status == 404
        await mcp.ping_ok(streaming)
        mcp.close_streams()


async def test_the_cap_evicts_the_oldest_idle_session_over_http(
    mcp_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]
) -> None:
    server = server_factory(ServerOptions(max_sessions=3))
    mcp = await mcp_factory(server)
    first, second, third = [await mcp.initialize() for _ in range(3)]
    server.sessions.get(first).last_seen = 10.0  # type: ignore[union-attr]
    server.sessions.get(second).last_seen = 5.0  # type: ignore[union-attr]
    server.sessions.get(third).last_seen = 20.0  # type: ignore[union-attr]
    fourth = await mcp.initialize()
    assert (await mcp.post(request_body("ping"), session=second)).status == 404
    for alive in (first, third, fourth):
        await mcp.ping_ok(alive)


async def test_too_many_streaming_sessions_is_503(
    mcp_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]
) -> None:
    server = server_factory(ServerOptions(max_sessions=2))
    mcp = await mcp_factory(server)
    sessions = [await mcp.initialize() for _ in range(2)]
    for session in sessions:
        stream = await mcp.open_stream(session)
        await stream.next_message()
    response = await mcp.post(initialize_body())
    assert response.status == 503
    assert "Mcp-Session-Id" not in response.headers
    body = await response.json()
    assert body["id"] == 1 and body["error"]["code"] == protocol.INTERNAL_ERROR
    assert "2 sessions" in body["error"]["message"]
    for session in sessions:
        await mcp.ping_ok(session)


async def test_every_request_touches_its_session(mcp: Mcp, server: CompanionServer) -> None:
    session_id = await mcp.initialize()
    session = server.sessions.get(session_id)
    assert session is not None
    session.last_seen = 0.0
    await mcp.ping_ok(session_id)
    assert session.last_seen > 0.0
    session.last_seen = 0.0
    response = await mcp.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}, session=session_id)
    assert response.status == 202
    assert session.last_seen > 0.0
