"""The GET stream: context on open, later contexts, fan-out, keep-alive."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from qwencompanion_src.core.companion.companion import Companion
from qwencompanion_src.core.companion.ide_messages import (
    CONTEXT_UPDATE,
    DIFF_ACCEPTED,
    DiffAccepted,
    IdeContext,
    empty_context,
)
from qwencompanion_src.core.companion.server import CompanionServer, ServerOptions

from .conftest import ContextHolder, Mcp, auth, context_with, initialize_body


def _context_of(message: dict[str, Any]) -> dict[str, Any]:
    assert message["jsonrpc"] == "2.0"
    assert message["method"] == CONTEXT_UPDATE
    assert "id" not in message
    params: dict[str, Any] = message["params"]
    return params


# --- CompanionServer on the aiohttp test client ---------------------------------


async def test_the_current_context_arrives_as_soon_as_the_stream_opens(
    mcp: Mcp, holder: ContextHolder, tmp_path: Any
) -> None:
    holder.context = context_with(str(tmp_path / "a.py"), line=3)
    session = await mcp.initialize()
    stream = await mcp.open_stream(session)
    assert stream.response.headers["Mcp-Session-Id"] == session
    event = await stream.next()
    assert event.event == "message"
    assert event.data is not None
    assert _context_of(event.data) == holder.context.params()


async def test_an_empty_context_is_still_pushed_on_open(mcp: Mcp) -> None:
    session = await mcp.initialize()
    stream = await mcp.open_stream(session)
    assert _context_of(await stream.next_message()) == {"workspaceState": {"openFiles": []}}


async def test_notify_reaches_every_session(mcp: Mcp, server: CompanionServer, tmp_path: Any) -> None:
    first, second = await mcp.initialize(), await mcp.initialize()
    streams = [await mcp.open_stream(first), await mcp.open_stream(second)]
    for stream in streams:
        await stream.next_message()
    context = context_with(str(tmp_path / "b.py"))
    assert server.notify(CONTEXT_UPDATE, context) == 2
    for stream in streams:
        assert _context_of(await stream.next_message()) == context.params()


async def test_notify_to_one_session_reaches_only_that_one(mcp: Mcp, server: CompanionServer, tmp_path: Any) -> None:
    first, second = await mcp.initialize(), await mcp.initialize()
    one, two = await mcp.open_stream(first), await mcp.open_stream(second)
    await one.next_message()
    await two.next_message()
    accepted = DiffAccepted(filePath=str(tmp_path / "c.py"), content="x\n")
    assert server.notify(DIFF_ACCEPTED, accepted, session_id=second) == 1
    assert server.notify(DIFF_ACCEPTED, accepted, session_id="0" * 32) == 0
    message = await two.next_message()
    assert message == {"jsonrpc": "2.0", "method": DIFF_ACCEPTED, "params": accepted.params()}
    # The first session got nothing but what comes next.
    later = context_with(str(tmp_path / "d.py"))
    server.notify(CONTEXT_UPDATE, later)
    assert _context_of(await one.next_message()) == later.params()


async def test_notifications_queued_before_the_stream_opens_are_delivered(
    mcp: Mcp, server: CompanionServer, tmp_path: Any
) -> None:
    session = await mcp.initialize()
    accepted = DiffAccepted(filePath=str(tmp_path / "e.py"), content="y")
    server.notify(DIFF_ACCEPTED, accepted)
    stream = await mcp.open_stream(session)
    methods = [(await stream.next_message())["method"] for _ in range(2)]
    assert methods == [DIFF_ACCEPTED, CONTEXT_UPDATE]


async def test_keep_alive_comments_arrive_when_idle(
    mcp_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]
) -> None:
    mcp = await mcp_factory(server_factory(ServerOptions(keepalive_seconds=0.05)))
    session = await mcp.initialize()
    stream = await mcp.open_stream(session)
    first = await stream.next()
    assert first.data is not None
    comments = []
    while len(comments) < 3:
        event = await stream.next()
        assert event.data is None, "nothing but keep-alives was due"
        comments.append(event.comment)
    assert all(c == "keep-alive" for c in comments)
    await mcp.ping_ok(session)


async def test_a_stream_can_be_reopened_after_it_drops(mcp: Mcp, server: CompanionServer) -> None:
    session = await mcp.initialize()
    stream = await mcp.open_stream(session)
    await stream.next_message()
    stream.response.close()
    server.notify(CONTEXT_UPDATE, empty_context())  # the write that notices the drop
    # The server notices the drop and frees the session for a new stream.
    for _ in range(200):
        if not server.sessions.get(session).stream_open:  # type: ignore[union-attr]
            break
        server.notify(CONTEXT_UPDATE, empty_context())
        await asyncio.sleep(0.01)
    reopened = await mcp.open_stream(session)
    assert _context_of(await reopened.next_message()) == {"workspaceState": {"openFiles": []}}


async def test_two_streams_opened_at_once_on_one_session_give_one_409(mcp: Mcp) -> None:
    session = await mcp.initialize()
    headers = {**auth(), "Accept": "text/event-stream", "Mcp-Session-Id": session}
    responses = await asyncio.gather(*(mcp.client.get("/mcp", headers=headers) for _ in range(2)))
    mcp.streams.extend(responses)
    assert sorted(r.status for r in responses) == [200, 409]


# --- Companion.publish_context over a started server --------------------------------


async def test_published_contexts_reach_the_stream_and_identical_ones_are_not_resent(
    companion: Companion, companion_mcp: Mcp, tmp_path: Any
) -> None:
    session = await companion_mcp.initialize()
    stream = await companion_mcp.open_stream(session)
    assert _context_of(await stream.next_message()) == {"workspaceState": {"openFiles": []}}

    assert companion.publish_context(empty_context()) is False
    a = context_with(str(tmp_path / "a.py"), line=1)
    b = context_with(str(tmp_path / "a.py"), line=2)
    assert companion.publish_context(a) is True
    assert _context_of(await stream.next_message()) == a.params()
    assert companion.publish_context(IdeContext.model_validate(a.params())) is False  # equal, not the same object
    assert companion.publish_context(b) is True
    assert _context_of(await stream.next_message()) == b.params()  # not a second `a`


async def test_a_stream_opened_later_gets_the_latest_published_context(
    companion: Companion, companion_mcp: Mcp, tmp_path: Any
) -> None:
    context = context_with(str(tmp_path / "late.py"), line=9)
    companion.publish_context(context)
    session = await companion_mcp.initialize()
    stream = await companion_mcp.open_stream(session)
    assert _context_of(await stream.next_message()) == context.params()


async def test_two_sessions_of_one_companion_both_get_a_published_context(
    companion: Companion, companion_mcp: Mcp, tmp_path: Any
) -> None:
    first, second = await companion_mcp.initialize(), await companion_mcp.initialize()
    streams = [await companion_mcp.open_stream(first), await companion_mcp.open_stream(second)]
    for stream in streams:
        await stream.next_message()
    context = context_with(str(tmp_path / "both.py"))
    assert companion.publish_context(context)
    for stream in streams:
        assert _context_of(await stream.next_message()) == context.params()
    infos = companion.sessions()
    assert len(infos) == 2 and all(info.stream_open for info in infos)
    assert {info.id_prefix for info in infos} == {first[:8], second[:8]}


async def test_contexts_go_only_to_their_own_companion(
    companion_factory: Callable[..., Companion], tmp_path: Any
) -> None:
    one, two = companion_factory(), companion_factory()
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{one.port}") as c1, aiohttp.ClientSession(
        base_url=f"http://127.0.0.1:{two.port}"
    ) as c2:
        m1, m2 = Mcp(c1, token=one.token), Mcp(c2, token=two.token)
        s1, s2 = await m1.open_stream(await m1.initialize()), await m2.open_stream(await m2.initialize())
        await s1.next_message()
        await s2.next_message()
        only_two = context_with(str(tmp_path / "two.py"))
        only_one = context_with(str(tmp_path / "one.py"))
        two.publish_context(only_two)
        assert _context_of(await s2.next_message()) == only_two.params()
        one.publish_context(only_one)
        assert _context_of(await s1.next_message()) == only_one.params()  # not `only_two`
        m1.close_streams()
        m2.close_streams()
        # Each token opens only its own server.
        response = await c1.post("/mcp", json={}, headers={"Authorization": f"Bearer {two.token}"})
        assert response.status == 401


@pytest.mark.parametrize("count", [5])
async def test_a_burst_of_contexts_ends_with_the_last_one(
    companion: Companion, companion_mcp: Mcp, tmp_path: Any, count: int
) -> None:
    session = await companion_mcp.initialize()
    stream = await companion_mcp.open_stream(session)
    await stream.next_message()
    contexts = [context_with(str(tmp_path / "burst.py"), line=n) for n in range(1, count + 1)]
    for context in contexts:
        companion.publish_context(context)
    seen = []
    while not seen or seen[-1] != contexts[-1].params():
        seen.append(_context_of(await stream.next_message()))
    # Coalesced or not, order is kept and nothing is invented.
    expected = [c.params() for c in contexts]
    assert all(item in expected for item in seen)
    assert [expected.index(item) for item in seen] == sorted(expected.index(item) for item in seen)


def test_a_dropped_stream_stops_counting_as_connected_without_waiting_for_a_write(
    companion_factory: Any, tmp_path: Any
) -> None:
    counts: list[int] = []
    changed = threading.Condition()

    def on_change(connected: int) -> None:
        with changed:
            counts.append(connected)
            changed.notify_all()

    def wait_connected(expected: int) -> None:
        with changed:
            assert changed.wait_for(lambda: counts and counts[-1] == expected, timeout=10), counts

    # No keep-alive is due for an hour, so only the disconnect itself can tell.
    companion = companion_factory(options=ServerOptions(keepalive_seconds=3600), on_sessions_changed=on_change)
    request = urllib.request.Request(
        f"http://127.0.0.1:{companion.port}/mcp",
        data=json.dumps(initialize_body()).encode(),
        headers={"Authorization": f"Bearer {companion.token}", "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"},
    )
    session = urllib.request.urlopen(request).headers["Mcp-Session-Id"]
    stream = socket.create_connection(("127.0.0.1", companion.port))
    stream.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{companion.port}\r\nAuthorization: Bearer {companion.token}\r\n"
        f"Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n".encode()
    )
    assert stream.recv(12) == b"HTTP/1.1 200"
    wait_connected(1)
    stream.close()
    wait_connected(0)
