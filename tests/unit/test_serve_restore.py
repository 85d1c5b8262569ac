"""Earlier sessions on `qwen serve` (0.24.4's routes, as probed): a load's
answer replayed once before live events, a resume reading on from the
daemon's last event, a page of the folder's sessions in session/list's shape,
the session options on the daemon's own routes, and a rewind that never lets
the daemon restore files."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from qwencompanion_src.core.chat.history.history import list_folder
from qwencompanion_src.core.serve.daemon_session import DaemonSession
from qwencompanion_src.core.serve.http import Address
from qwencompanion_src.core.serve.serve_bridge import (
    NotOnServe,
    _config_route,
    answer_with_state,
    files_changed_since,
    session_list_page,
)
from tests.unit.test_daemon_session import TOKEN, Recorder, chunk, until, user_chunk

SESSION = "s-1"
WAIT = 10.0  # a hang guard, not a timing check


def envelope_of(frame: bytes) -> dict[str, Any]:
    """The JSON envelope of one SSE frame the shared helpers build."""
    data = next(line for line in frame.decode().splitlines() if line.startswith("data: "))
    parsed: dict[str, Any] = json.loads(data[len("data: "):])
    return parsed


class RestoringDaemon:
    """`POST /session/:id/load|resume` answering `answers[action]`, and an event stream sending `live`."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        self.live: list[bytes] = []
        self.last_event_ids: list[str | None] = []
        self.bodies: list[Any] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/session/{id}/{action}", self.restore)
        app.router.add_get("/session/{id}/events", self.events)
        self.runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def restore(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        return web.json_response(self.answers[request.match_info["action"]])

    async def events(self, request: web.Request) -> web.StreamResponse:
        self.last_event_ids.append(request.headers.get("Last-Event-ID"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Qwen-Event-Epoch": "run-1"})
        await response.prepare(request)
        for frame in self.live:
            await response.write(frame)
        await asyncio.sleep(3600)
        return response

    def address(self) -> Address:
        return Address("127.0.0.1", self.port, TOKEN)


@pytest.fixture
async def daemon() -> AsyncIterator[RestoringDaemon]:
    fake = RestoringDaemon()
    await fake.start()
    yield fake
    assert fake.runner is not None
    await fake.runner.cleanup()


async def test_a_load_from_disk_replays_its_answer_once_then_reads_live_events_after_it(
    daemon: RestoringDaemon,
) -> None:
    replay = [user_chunk(1, "old prompt", "client-0"), chunk(2, "old answer"), chunk(2, "old answer"),
              chunk(3, "elsewhere", session_id="s-other")]
    # No `lastEventId`: the cursor still moves past what the replay showed.
    daemon.answers["load"] = {"sessionId": SESSION, "attached": False, "clientId": "client-1",
                              "eventEpoch": "run-1", "compactedReplay": [envelope_of(frame) for frame in replay]}
    daemon.live = [chunk(3, "old answer"), chunk(4, "live answer")]
    recorder = Recorder()
    session, answer = await DaemonSession.restore(daemon.address(), SESSION, "/work", recorder, "load")
    try:
        assert daemon.bodies == [{"cwd": "/work"}] and session.client_id == "client-1"
        assert session.replay(answer["compactedReplay"]) == 3  # the repeated id is not handed over
        # The replayed prompt is a prompt of the conversation (not "another client's"), shown once.
        assert recorder.texts() == ["old prompt", "old answer"] and recorder.elsewhere == []
        assert recorder.refusals == ["the daemon sent events of another session: they were dropped"]
        session.start()
        await until(lambda: recorder.texts()[-1:] == ["live answer"])
        assert daemon.last_event_ids == ["3"]
        assert recorder.texts() == ["old prompt", "old answer", "live answer"]
    finally:
        session.close()


async def test_resume_reads_on_from_the_daemons_last_event(daemon: RestoringDaemon) -> None:
    daemon.answers["resume"] = {"sessionId": SESSION, "attached": True, "clientId": "client-2", "lastEventId": 7}
    daemon.live = [chunk(8, "next")]
    recorder = Recorder()
    session, _ = await DaemonSession.restore(daemon.address(), SESSION, "/work", recorder, "resume")
    try:
        session.start()
        await until(lambda: recorder.texts() == ["next"])
        assert daemon.last_event_ids == ["7"] and session.attached
    finally:
        session.close()


async def test_an_attached_load_is_read_from_the_start_of_the_ring(daemon: RestoringDaemon) -> None:
    """The daemon still runs the session: `start(replay=True)` asks its whole
    ring (Last-Event-ID 0), whatever the answer's last id was."""
    daemon.answers["load"] = {"sessionId": SESSION, "attached": True, "clientId": "client-3", "lastEventId": 5}
    recorder = Recorder()
    session, _ = await DaemonSession.restore(daemon.address(), SESSION, "/work", recorder, "load")
    try:
        session.start(replay=True)
        await until(lambda: bool(daemon.last_event_ids))
        assert daemon.last_event_ids == ["0"]
    finally:
        session.close()


async def test_a_load_of_another_session_than_asked_is_refused(daemon: RestoringDaemon) -> None:
    daemon.answers["load"] = {"sessionId": "s-else", "attached": False}
    with pytest.raises(Exception, match="POST load"):
        await DaemonSession.restore(daemon.address(), SESSION, "/work", Recorder(), "load")


async def test_a_huge_replay_is_bounded_and_said_once(daemon: RestoringDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("qwencompanion_src.core.serve.daemon_session.MAX_REPLAYED", 5)
    daemon.answers["load"] = {"sessionId": SESSION, "attached": False, "lastEventId": 0}
    recorder = Recorder()
    session, _ = await DaemonSession.restore(daemon.address(), SESSION, "/work", recorder, "load")
    assert session.replay([envelope_of(chunk(n, f"c{n}")) for n in range(1, 20)]) == 5
    assert recorder.texts() == ["c1", "c2", "c3", "c4", "c5"] and len(recorder.refusals) == 1
    assert session.replay("not a list") == 0


def test_a_page_of_the_daemons_sessions_is_given_in_session_lists_shape() -> None:
    page = session_list_page({"sessions": [
        {"sessionId": "a", "workspaceCwd": "/w", "displayName": "first prompt", "updatedAt": "2026-11-28T10:00:00Z"},
        "not a session",
    ], "nextCursor": "1795896055837.4866"})
    assert page == {"sessions": [{"sessionId": "a", "cwd": "/w", "title": "first prompt",
                                  "updatedAt": "2026-11-28T10:00:00Z"}], "nextCursor": "1795896055837.4866"}
    assert session_list_page({"sessions": "hostile"}) == {"sessions": []}


async def test_the_pages_are_followed_by_their_cursor() -> None:
    pages = {None: {"sessions": [{"sessionId": "a", "displayName": "one", "updatedAt": "2"}], "nextCursor": "c1"},
             "c1": {"sessions": [{"sessionId": "b", "displayName": "two", "updatedAt": "1"}]}}
    asked: list[str | None] = []

    async def list_page(cwd: str, cursor: str | None) -> Any:
        asked.append(cursor)
        return session_list_page(pages[cursor])

    entries = await list_folder(list_page, "/w")
    assert asked == [None, "c1"] and [entry.title for entry in entries] == ["one", "two"]


def test_the_session_options_go_to_the_daemons_own_routes() -> None:
    assert _config_route({"configId": "mode", "value": "plan"}) == ("/approval-mode", {"mode": "plan"})
    assert _config_route({"configId": "model", "value": "m"}) == ("/model", {"modelId": "m"})
    assert _config_route({"configId": "reasoning_effort", "value": "high"}) == (
        "/config-option", {"configId": "reasoning_effort", "value": "high"})
    with pytest.raises(NotOnServe):
        _config_route({"configId": "temperature", "value": "1"})


def test_a_sessions_state_is_adopted_over_the_daemons_modes() -> None:
    models = {"currentModelId": "$runtime|openai|m", "availableModels": [{"modelId": "$runtime|openai|m", "name": "m"}]}
    answer = answer_with_state(SESSION, {"state": {"models": models, "configOptions": [], "other": 1}})
    assert answer["sessionId"] == SESSION and answer["models"] == models and answer["configOptions"] == []
    assert [mode["id"] for mode in answer["modes"]["availableModes"]][:2] == ["plan", "default"]
    assert "other" not in answer and answer_with_state(SESSION, {"state": "hostile"})["sessionId"] == SESSION


def test_the_files_a_rewound_turn_changed_are_counted_from_its_prompt_on() -> None:
    snapshots = {"snapshots": [
        {"promptId": "p1", "diffStats": {"filesChanged": 4}},
        {"promptId": "p2", "diffStats": {"filesChanged": 1}},
        {"promptId": "p3", "diffStats": {"filesChanged": 2}},
        {"promptId": "p4", "diffStats": {"filesChanged": True}},
        "hostile",
    ]}
    assert files_changed_since(snapshots, "p2") == 3
    assert files_changed_since(snapshots, "p9") == 0 and files_changed_since({"snapshots": None}, "p1") == 0
