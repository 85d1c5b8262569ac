"""ACP's session/set_model and session/set_mode on the serve transport: the
bridge maps them onto the daemon's `POST /session/:id/model` `{modelId}` and
`POST /session/:id/approval-mode` `{mode}` (the routes and fields of qwen
serve 0.24.4), for the chat's own session only; a refusal is a clear error and
what has no route still says it is not on the serve transport."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from aiohttp import web

from qwencompanion_src.core.chat.agent.transport import AgentError, BridgeEvents
from qwencompanion_src.core.chat.chat_state import ChatState
from qwencompanion_src.core.chat.requests.request_handler import AgentRequestHandler
from qwencompanion_src.core.serve import daemon as daemon_module, serve_bridge
from qwencompanion_src.core.serve.daemon_session import DaemonSession
from qwencompanion_src.core.serve.http import Address
from qwencompanion_src.core.serve.serve_bridge import (
    DAEMON_MODES,
    NotOnServe,
    ServeBridge,
    ServeCommand,
    session_answer,
)

TOKEN = "cafe" * 16
SESSION = "s-7"


class SettingsDaemon:
    def __init__(self) -> None:
        self.posts: list[tuple[str, str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/session/{id}/{route}", self.route)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def route(self, request: web.Request) -> web.Response:
        session_id, route = request.match_info["id"], request.match_info["route"]
        body = await request.json()
        self.posts.append((session_id, route, body))
        if session_id != SESSION:
            return web.json_response({"error": "No session", "code": "session_not_found"}, status=404)
        if route == "approval-mode" and body.get("mode") not in DAEMON_MODES:
            return web.json_response({"error": "`mode` is required and must be one of the allowed values"}, status=400)
        if route == "model" and not body.get("modelId"):
            return web.json_response({"error": "`modelId` is required and must be a non-empty string"}, status=400)
        return web.json_response({"ok": route})


@pytest.fixture
async def daemon() -> AsyncIterator[SettingsDaemon]:
    fake = SettingsDaemon()
    await fake.start()
    yield fake
    assert fake.runner is not None
    await fake.runner.cleanup()


def bridge_on(daemon: SettingsDaemon) -> ServeBridge:
    bridge = ServeBridge(ServeCommand(argv=["qwen", "serve"], cwd="."),
                         lambda: cast(AgentRequestHandler, None), cast(BridgeEvents, None))
    session = DaemonSession(Address("127.0.0.1", daemon.port, TOKEN), SESSION, "client-1", cast(Any, None))
    bridge._sessions[SESSION] = session
    bridge._live = True
    return bridge


async def test_set_model_posts_the_model_id_to_the_sessions_model_route(daemon: SettingsDaemon) -> None:
    answer = await bridge_on(daemon).request("session/set_model", {"sessionId": SESSION, "modelId": "qwen3-coder"})
    assert daemon.posts == [(SESSION, "model", {"modelId": "qwen3-coder"})]
    assert answer == {"ok": "model"}


async def test_set_mode_posts_the_mode_to_the_sessions_approval_mode_route(daemon: SettingsDaemon) -> None:
    await bridge_on(daemon).request("session/set_mode", {"sessionId": SESSION, "modeId": "plan"})
    assert daemon.posts == [(SESSION, "approval-mode", {"mode": "plan"})]


async def test_a_refused_setting_is_a_clear_error_naming_the_request(daemon: SettingsDaemon) -> None:
    with pytest.raises(AgentError, match=r"refused session/set_mode.*one of the allowed values"):
        await bridge_on(daemon).request("session/set_mode", {"sessionId": SESSION, "modeId": "reckless"})


async def test_a_session_the_chat_has_not_open_is_not_asked(daemon: SettingsDaemon) -> None:
    with pytest.raises(AgentError, match="not open"):
        await bridge_on(daemon).request("session/set_model", {"sessionId": "other", "modelId": "m"})
    assert daemon.posts == []


async def test_what_has_no_route_still_says_it_is_not_on_serve(daemon: SettingsDaemon) -> None:
    with pytest.raises(NotOnServe, match="not on the serve transport"):
        await bridge_on(daemon).request("session/rewind", {"sessionId": SESSION})
    with pytest.raises(NotOnServe, match=r"^qwen/control/session/btw \(one of qwen's own methods\) is not on"):
        await bridge_on(daemon).request("qwen/control/session/btw", {"sessionId": SESSION, "question": "q"})
    with pytest.raises(NotOnServe, match=r"^authenticate \(sign-in\) is not on"):
        await bridge_on(daemon).request("authenticate", {"methodId": "openai"})
    assert daemon.posts == []


def test_a_new_sessions_answer_gives_the_chat_the_daemons_modes_to_pick() -> None:
    state = ChatState()
    state.adopt_session(session_answer(SESSION))
    assert [mode.id for mode in state.modes] == ["plan", "default", "auto-edit", "auto", "yolo"]


class Exits:
    def __init__(self) -> None:
        self.codes: list[int] = []

    def exited(self, code: int, stderr: list[str]) -> None:
        self.codes.append(code)


async def test_stopping_forgets_the_daemon_before_the_chat_can_start_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Once the bridge reads as stopped, a prompt starts the next daemon. Had the
    # record outlived that moment, the prompt found the ending daemon: its pid
    # still alive, its port closed, and attached to nothing ("another process
    # listens").
    folders = [str(tmp_path)]
    record = daemon_module.DaemonRecord(os.getpid(), 1, "127.0.0.1", TOKEN, tuple(folders), 0.0, "start")
    path = daemon_module.record_path(tmp_path, folders)
    path.parent.mkdir(parents=True)
    daemon_module.write_record(path, record)
    stopped: list[daemon_module.DaemonRecord] = []
    monkeypatch.setattr(serve_bridge, "stop_daemon", stopped.append)
    exits = Exits()
    bridge = ServeBridge(ServeCommand(argv=["qwen", "serve"], cwd=".", cache_dir=tmp_path, folders=tuple(folders),
                                      keep_running=False),
                         lambda: cast(AgentRequestHandler, None), cast(BridgeEvents, exits))
    seen_when_stopped: list[tuple[bool, bool]] = []

    class Session:
        def close(self) -> None:
            seen_when_stopped.append((bridge.running, path.exists()))

    bridge._sessions[SESSION] = cast(DaemonSession, Session())
    bridge._live = True
    await bridge.stop(end_daemon=True)
    assert seen_when_stopped == [(False, False)]
    assert stopped == [record] and exits.codes == [0]
