"""DaemonSession (core/serve/daemon_session.py) and the SSE parser against a fake,
sometimes hostile, `qwen serve`: giant lines, endless replays, events of
unknown sessions, a replay that ignores Last-Event-ID, permissions answered
here or elsewhere, and a turn's end read before its prompt's answer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from qwencompanion_src.core.serve import daemon_session
from qwencompanion_src.core.serve.daemon_session import DaemonSession
from qwencompanion_src.core.serve.http import Address, request_json
from qwencompanion_src.core.serve.sse import SseParser

TOKEN = "beef" * 16
SESSION = "s-1"
WAIT = 10.0  # a hang guard, not a timing check


# --- the parser ------------------------------------------------------------------


def test_the_parser_reads_events_split_anywhere() -> None:
    stream = b'retry: 3000\n\nid: 1\nevent: a\ndata: {"x":\ndata: 1}\n\n: keep-alive\n\nid: 2\r\ndata: b\r\n\r\n'
    parser = SseParser()
    events = [event for i in range(len(stream)) for event in parser.feed(stream[i : i + 1])]
    assert [(e.id, e.event, e.data) for e in events] == [(1, "a", '{"x":\n1}'), (2, "message", "b")]


def test_a_giant_line_is_skipped_without_being_kept_and_its_id_still_counts() -> None:
    parser = SseParser(max_line_bytes=1000)
    events = parser.feed(b"id: 7\n")
    piece = b"x" * 4096
    for _ in range(2000):  # 8 MB of one line
        events += parser.feed(piece)
        assert len(parser._line) <= 1000
    events += parser.feed(b"\n\nid: 8\ndata: after\n\n")
    assert [(e.id, e.oversized, e.data) for e in events] == [(7, True, ""), (8, False, "after")]


def test_many_data_lines_are_bounded_together() -> None:
    parser = SseParser(max_line_bytes=1000)
    events = parser.feed(b"id: 3\n" + b"data: " + b"y" * 500 + b"\n") + parser.feed(
        (b"data: " + b"y" * 500 + b"\n") * 50 + b"\n"
    )
    assert [(e.id, e.oversized, e.data) for e in events] == [(3, True, "")]


# --- a fake daemon -------------------------------------------------------------

Events = Callable[[web.Request, web.StreamResponse], Awaitable[None]]


def envelope(event_id: int, kind: str, data: dict[str, Any], **extra: Any) -> bytes:
    body = {"id": event_id, "v": 1, "type": kind, "data": data, **extra}
    return f"id: {event_id}\nevent: {kind}\ndata: {json.dumps(body)}\n\n".encode()


def user_chunk(event_id: int, text: str, client: str) -> bytes:
    update = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text},
              "_meta": {"source": "bridge-echo"}}
    return envelope(event_id, "session_update", {"sessionId": SESSION, "update": update},
                    originatorClientId=client)


REPLAY_COMPLETE = b'event: replay_complete\ndata: {"v": 1, "type": "replay_complete", "data": {"replayedCount": 3}}\n\n'


def chunk(event_id: int, text: str, session_id: str = SESSION) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return envelope(event_id, "session_update", {"sessionId": session_id, "update": update})


class FakeDaemon:
    def __init__(self) -> None:
        self.events: Events = self.no_events
        self.event_requests: list[web.Request] = []
        self.runs = [1]  # the daemon's run (its event epoch) serving each event request, the last one after
        self.prompts: list[Any] = []
        self.votes: list[tuple[str, Any]] = []
        self.steers: list[dict[str, Any]] = []  # POST mid-turn-message bodies
        self.turn_runs = True  # else a steer is refused as 0.24.4 does when no turn runs
        self.prompt_answer: Callable[[], Awaitable[web.Response]] = self.accepted
        self.slow_events: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None
        self.runner: web.AppRunner | None = None
        self.port = 0

    @staticmethod
    async def no_events(request: web.Request, response: web.StreamResponse) -> None:
        await asyncio.sleep(3600)

    @staticmethod
    async def accepted() -> web.Response:
        return web.json_response({"promptId": "p-1", "lastEventId": 0}, status=202)

    @web.middleware
    async def auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": "Unauthorized"}, status=401)
        response: web.StreamResponse = await handler(request)
        return response

    async def start(self) -> None:
        app = web.Application(middlewares=[self.auth])
        app.router.add_get("/health", self.health)
        app.router.add_get("/session/{id}/events", self.events_route)
        app.router.add_post("/session/{id}/prompt", self.prompt)
        app.router.add_post("/session/{id}/permission/{request}", self.vote)
        app.router.add_post("/session/{id}/mid-turn-message", self.mid_turn)
        # A stream the client left ends its handler (else cleanup waits for the handlers' sleeps).
        self.runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    @staticmethod
    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def events_route(self, request: web.Request) -> web.StreamResponse:
        return await (self.slow_events or self.serve_events)(request)

    async def serve_events(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["id"] != SESSION:
            return web.json_response({"error": "No session", "code": "session_not_found"}, status=404)
        self.event_requests.append(request)
        epoch = f"run-{self.runs[min(len(self.event_requests), len(self.runs)) - 1]}"
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Qwen-Event-Epoch": epoch})
        await response.prepare(request)
        await self.events(request, response)
        return response

    async def prompt(self, request: web.Request) -> web.Response:
        self.prompts.append(await request.json())
        return await self.prompt_answer()

    async def vote(self, request: web.Request) -> web.Response:
        self.votes.append((request.match_info["request"], await request.json()))
        return web.json_response({})

    async def mid_turn(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.steers.append(body)
        if len(body.get("message", "")) > 16 * 1024:  # 0.24.4's MID_TURN_MESSAGE_MAX_LENGTH
            return web.json_response({"error": "`message` must be at most 16384 characters"}, status=400)
        if not self.turn_runs:
            return web.json_response({"accepted": False, "reason": "session_idle"})
        return web.json_response({"accepted": True, "messageId": body["messageId"]})

    def address(self) -> Address:
        return Address("127.0.0.1", self.port, TOKEN)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDaemon]:
    daemon = FakeDaemon()
    await daemon.start()
    yield daemon
    assert daemon.runner is not None
    await daemon.runner.cleanup()


class Recorder:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.refusals: list[str] = []
        self.asked: list[dict[str, Any]] = []
        self.elsewhere: list[str] = []
        self.steers: list[tuple[str, bool]] = []  # (text, late) handed to `steered`
        self.answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def session_update(self, params: dict[str, Any]) -> None:
        self.updates.append(params)

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params)
        return await self.answer

    def prompt_elsewhere(self, params: dict[str, Any]) -> None:
        self.elsewhere.append(params["update"]["content"]["text"])

    def refused(self, message: str) -> None:
        self.refusals.append(message)

    def steered(self, params: dict[str, Any]) -> None:
        self.steers.append((params["text"], params["late"]))

    def texts(self) -> list[str]:
        return [u["update"]["content"]["text"] for u in self.updates]


async def until(condition: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), WAIT)


async def opened(fake: FakeDaemon, last_event_id: int = 0) -> tuple[DaemonSession, Recorder]:
    recorder = Recorder()
    session = DaemonSession(fake.address(), SESSION, "client-1", recorder, last_event_id)
    session.start()
    return session, recorder


# --- hostile streams ---------------------------------------------------------


async def test_a_giant_line_is_dropped_and_said_once(fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon_session, "SseParser", functools.partial(SseParser, max_line_bytes=64 * 1024))

    async def giant(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(chunk(1, "before"))
        await response.write(b"id: 2\ndata: ")
        for _ in range(256):  # 16 MB on one line
            await response.write(b"z" * 65536)
        await response.write(b"\n\n" + chunk(3, "after"))
        await asyncio.sleep(3600)

    fake.events = giant
    session, recorder = await opened(fake)
    try:
        await until(lambda: recorder.texts() == ["before", "after"])
        assert len(recorder.refusals) == 1 and "too large" in recorder.refusals[0]
        assert session.last_event_id == 3
    finally:
        session.close()


async def test_an_endless_replay_is_given_up_without_a_line_shown_twice(
    fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon_session, "MAX_STALE_EVENTS", 500)
    sent: list[int] = []

    async def replaying(request: web.Request, response: web.StreamResponse) -> None:
        while True:  # the same old events again and again, whatever Last-Event-ID says
            for event_id in range(1, 11):
                sent.append(event_id)
                await response.write(chunk(event_id, f"line {event_id}"))

    fake.events = replaying
    session, recorder = await opened(fake, last_event_id=4)
    try:
        await until(lambda: bool(recorder.refusals))
        assert recorder.texts() == [f"line {n}" for n in range(5, 11)]
        assert "replayed" in recorder.refusals[0]
    finally:
        session.close()


async def test_events_of_an_unknown_session_are_dropped(fake: FakeDaemon) -> None:
    async def foreign(request: web.Request, response: web.StreamResponse) -> None:
        for event_id in range(1, 200):
            await response.write(chunk(event_id, "not yours", session_id=f"other-{event_id}"))
        await response.write(chunk(200, "yours"))
        await asyncio.sleep(3600)

    fake.events = foreign
    session, recorder = await opened(fake)
    try:
        await until(lambda: recorder.texts() == ["yours"])
        assert len(recorder.refusals) == 1 and "another session" in recorder.refusals[0]
    finally:
        session.close()


async def test_a_reconnect_sends_last_event_id_and_shows_each_event_once(fake: FakeDaemon) -> None:
    async def drops_after_two(request: web.Request, response: web.StreamResponse) -> None:
        start = int(request.headers.get("Last-Event-ID", "0"))
        # This daemon replays from the start whatever it is asked, then drops the connection.
        for event_id in range(1, start + 3):
            await response.write(chunk(event_id, f"line {event_id}"))

    fake.events = drops_after_two
    session, recorder = await opened(fake)
    try:
        await until(lambda: len(recorder.texts()) >= 6)
        assert recorder.texts()[:6] == [f"line {n}" for n in range(1, 7)]
        assert [r.headers.get("Last-Event-ID") for r in fake.event_requests[:3]] == [None, "2", "4"]
        assert recorder.refusals == []
    finally:
        session.close()


async def test_a_restarted_daemon_counts_its_events_again_and_none_is_lost(fake: FakeDaemon) -> None:
    fake.runs = [1, 2]

    async def restarts(request: web.Request, response: web.StreamResponse) -> None:
        if len(fake.event_requests) == 1:
            for event_id in range(1, 4):
                await response.write(chunk(event_id, f"first run {event_id}"))
            return  # the daemon goes; the next one counts from 1 again
        for event_id in range(1, 3):
            await response.write(chunk(event_id, f"second run {event_id}"))
        await asyncio.sleep(3600)

    fake.events = restarts
    session, recorder = await opened(fake)
    try:
        await until(lambda: len(recorder.texts()) == 5)
        assert recorder.texts() == ["first run 1", "first run 2", "first run 3", "second run 1", "second run 2"]
        assert len(recorder.refusals) == 1 and "restarted" in recorder.refusals[0]
        assert (session.epoch, session.last_event_id) == ("run-2", 2)
    finally:
        session.close()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 200_000 + b"\r\n",  # an endless chunk size
    b"HTTP/1.1 200 OK\r\nX-Filler: " + b"h" * 200_000 + b"\r\n\r\n",  # an endless header
    b"SSH-2.0-not-http\r\n\r\n",
])
async def test_a_broken_answer_is_retried_not_fatal(answer: bytes) -> None:
    attempts: list[int] = []

    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        attempts.append(1)
        writer.write(answer)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(broken, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    recorder = Recorder()
    session = DaemonSession(Address("127.0.0.1", port, TOKEN), SESSION, None, recorder)
    session.start()
    try:
        await until(lambda: len(attempts) >= 2)
        assert session._reader is not None and not session._reader.done()
        assert recorder.updates == []
    finally:
        session.close()
        server.close()


async def test_a_daemon_that_closes_every_stream_at_once_is_asked_ever_less_often(
    fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures: list[int] = []

    def recorded(count: int) -> float:
        failures.append(count)
        return 0.0

    async def closes_at_once(request: web.Request, response: web.StreamResponse) -> None:
        return

    fake.events = closes_at_once
    recorder = Recorder()
    session = DaemonSession(fake.address(), SESSION, None, recorder)
    monkeypatch.setattr(session, "reconnect_delay", recorded)
    session.start()
    try:
        await until(lambda: len(failures) >= 4)
        assert failures[:4] == [1, 2, 3, 4]
    finally:
        session.close()


async def test_an_endless_error_answer_is_read_no_further_than_needed(
    fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def endless_error(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=500)
        await response.prepare(request)
        while True:
            await response.write(b"e" * 65536)

    fake.slow_events = endless_error
    recorder = Recorder()
    session = DaemonSession(fake.address(), SESSION, None, recorder)
    broken: list[int] = []

    def recorded(count: int) -> float:
        broken.append(count)
        return 0.0

    monkeypatch.setattr(session, "reconnect_delay", recorded)
    session.start()
    try:
        await until(lambda: len(broken) >= 2)
    finally:
        session.close()


async def test_an_unknown_session_ends_the_session(fake: FakeDaemon) -> None:
    recorder = Recorder()
    session = DaemonSession(fake.address(), "gone", None, recorder)
    session.start()
    assert "does not know this session" in await asyncio.wait_for(session.gone, WAIT)
    session.close()


async def test_a_wrong_token_is_refused_by_the_daemon(fake: FakeDaemon) -> None:
    assert (await request_json(fake.address(), "GET", "/health", with_token=False)).status == 401
    assert (await request_json(Address("127.0.0.1", fake.port, "wrong"), "GET", "/health")).status == 401
    assert (await request_json(fake.address(), "GET", "/health")).status == 200


# --- prompts and permissions ------------------------------------------------------


async def test_a_turn_that_ends_before_its_prompt_is_answered_still_ends_it(fake: FakeDaemon) -> None:
    ended = asyncio.Event()

    async def ends_first(request: web.Request, response: web.StreamResponse) -> None:
        await asyncio.sleep(0.01) if fake.prompts else await until(lambda: bool(fake.prompts))
        await response.write(envelope(1, "turn_complete", {"sessionId": SESSION, "promptId": "p-1",
                                                           "stopReason": "end_turn"}))
        ended.set()
        await asyncio.sleep(3600)

    async def late() -> web.Response:
        await ended.wait()
        await asyncio.sleep(0.1)
        return web.json_response({"promptId": "p-1", "lastEventId": 0}, status=202)

    fake.events, fake.prompt_answer = ends_first, late
    session, _recorder = await opened(fake)
    try:
        result = await asyncio.wait_for(session.prompt([{"type": "text", "text": "hi"}]), WAIT)
        assert result.stop_reason == "end_turn"
        assert fake.prompts == [{"prompt": [{"type": "text", "text": "hi"}]}]
    finally:
        session.close()


def permission(event_id: int, request_id: str) -> bytes:
    return envelope(event_id, "permission_request", {
        "requestId": request_id, "sessionId": SESSION,
        "toolCall": {"toolCallId": "call_1", "title": "Writing to a.txt"},
        "options": [{"kind": "allow_once", "name": "Allow", "optionId": "proceed_once"}],
    })


async def test_a_prompt_waits_for_the_event_stream_so_its_first_events_are_read(fake: FakeDaemon) -> None:
    """Like the real daemon, this one streams an event only to the readers
    connected when it happens; its streams open slowly."""
    readers: list[web.StreamResponse] = []

    async def live_only(request: web.Request, response: web.StreamResponse) -> None:
        readers.append(response)
        await asyncio.sleep(3600)

    async def slow_stream(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.3)
        return await fake.serve_events(request)

    async def echoed() -> web.Response:
        for reader in readers:
            await reader.write(chunk(1, "echo of the prompt"))
            await reader.write(envelope(2, "turn_complete", {"sessionId": SESSION, "promptId": "p-1",
                                                             "stopReason": "end_turn"}))
        return web.json_response({"promptId": "p-1", "lastEventId": 0}, status=202)

    fake.events, fake.prompt_answer, fake.slow_events = live_only, echoed, slow_stream
    session, recorder = await opened(fake)
    try:
        result = await asyncio.wait_for(session.prompt([{"type": "text", "text": "hi"}]), WAIT)
        assert (result.stop_reason, recorder.texts()) == ("end_turn", ["echo of the prompt"])
    finally:
        session.close()


async def test_a_permission_is_asked_as_acp_and_the_answer_is_voted(fake: FakeDaemon) -> None:
    async def asks(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(permission(1, "r-1"))
        await asyncio.sleep(3600)

    fake.events = asks
    session, recorder = await opened(fake)
    try:
        await until(lambda: bool(recorder.asked))
        assert recorder.asked == [{"sessionId": SESSION, "toolCall": {"toolCallId": "call_1",
                                                                       "title": "Writing to a.txt"},
                                   "options": [{"kind": "allow_once", "name": "Allow",
                                                "optionId": "proceed_once"}]}]
        recorder.answer.set_result({"outcome": {"outcome": "selected", "optionId": "proceed_once"}})
        await until(lambda: bool(fake.votes))
        assert fake.votes == [("r-1", {"outcome": {"outcome": "selected", "optionId": "proceed_once"}})]
    finally:
        session.close()


async def test_a_question_that_cannot_be_asked_is_answered_cancelled(fake: FakeDaemon) -> None:
    async def asks(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(permission(1, "r-1"))
        await asyncio.sleep(3600)

    fake.events = asks
    session, recorder = await opened(fake)
    recorder.answer.set_exception(RuntimeError("no window to show the review in"))
    try:
        await until(lambda: bool(fake.votes))
        assert fake.votes == [("r-1", {"outcome": {"outcome": "cancelled"}})]
    finally:
        session.close()


async def test_a_permission_answered_elsewhere_is_withdrawn(fake: FakeDaemon) -> None:
    async def answered_elsewhere(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(permission(1, "r-1"))
        await until(lambda: bool(recorder.asked))
        await response.write(envelope(2, "permission_resolved", {"requestId": "r-1", "outcome": {
            "outcome": "selected", "optionId": "proceed_once"}}))
        await response.write(chunk(3, "went on"))
        await asyncio.sleep(3600)

    fake.events = answered_elsewhere
    session, recorder = await opened(fake)
    try:
        await until(lambda: recorder.texts() == ["went on"])
        await asyncio.sleep(0)
        assert session._permissions == {}
        assert fake.votes == []
    finally:
        session.close()


# --- attaching again: the ring replayed, then live ------------------------------


def ring_then_live(ring: list[bytes], live: list[bytes]) -> Events:
    """As qwen serve 0.24.4 does: with Last-Event-ID, the ring's events above
    it, then the id-less replay_complete, then live events."""

    async def events(request: web.Request, response: web.StreamResponse) -> None:
        if "Last-Event-ID" in request.headers:
            for event in ring:
                await response.write(event)
            await response.write(REPLAY_COMPLETE)
        for event in live:
            await response.write(event)
        await asyncio.sleep(3600)

    return events


async def test_an_attached_session_replays_the_ring_from_its_start_then_goes_live(fake: FakeDaemon) -> None:
    fake.events = ring_then_live(
        [user_chunk(1, "earlier prompt", "client-0"), chunk(2, "earlier answer"), user_chunk(3, "mine", "client-1")],
        [chunk(4, "live answer")],
    )
    recorder = Recorder()
    session = DaemonSession(fake.address(), SESSION, "client-1", recorder, attached=True)
    session.start(replay=True)
    try:
        await asyncio.wait_for(session.catch_up(), WAIT)
        assert fake.event_requests[0].headers.get("Last-Event-ID") == "0"
        # The replay hands every prompt over as a session update, ours too: the transcript is rebuilt.
        assert not session.replaying
        await until(lambda: recorder.texts()[-1:] == ["live answer"])
        assert [u["update"]["content"]["text"] for u in recorder.updates] == [
            "earlier prompt", "earlier answer", "mine", "live answer"]
        assert recorder.elsewhere == [] and recorder.refusals == []
    finally:
        session.close()


async def test_live_prompts_of_other_clients_are_told_apart_and_our_own_echo_is_dropped(fake: FakeDaemon) -> None:
    fake.events = ring_then_live([], [
        user_chunk(1, "my prompt", "client-1"), chunk(2, "my answer"),
        user_chunk(3, "from curl", "client-9"), chunk(4, "its answer"),
    ])
    session, recorder = await opened(fake)
    try:
        await until(lambda: recorder.texts()[-1:] == ["its answer"])
        assert recorder.texts() == ["my answer", "its answer"]
        assert recorder.elsewhere == ["from curl"]
    finally:
        session.close()


async def test_a_ring_that_lost_the_start_is_said_and_a_replay_never_ended_is_given_up(
    fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon_session, "CATCH_UP_SECONDS", 0.2)
    resync = (b'event: state_resync_required\ndata: {"v": 1, "type": "state_resync_required", '
              b'"data": {"reason": "ring_evicted", "lastDeliveredId": 0, "earliestAvailableId": 5}}\n\n')

    async def never_completes(request: web.Request, response: web.StreamResponse) -> None:
        await response.write(resync + chunk(5, "what is left"))
        await asyncio.sleep(3600)

    fake.events = never_completes
    recorder = Recorder()
    session = DaemonSession(fake.address(), SESSION, "client-1", recorder, attached=True)
    session.start(replay=True)
    try:
        await asyncio.wait_for(session.catch_up(), WAIT)
        assert recorder.texts() == ["what is left"]
        assert len(recorder.refusals) == 2
        assert "no longer holds the start" in recorder.refusals[0] and "did not finish" in recorder.refusals[1]
        assert session.caught_up.is_set() and not session.replaying
    finally:
        session.close()
