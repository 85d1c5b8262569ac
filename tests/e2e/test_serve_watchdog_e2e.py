"""The `qwen serve` watchdog (core/serve/serve_watchdog.js, run by the
rig's node 22 as the package runs it by the daemon's node), against a
stand-in daemon: a process group leader for its pid and a loopback server
answering `GET /health?deep=1` as 0.24.4 does. It ends an idle daemon's
group after the idle time, keeps a busy one, ends one whose folder is gone,
leaves alone a port that refuses the token, and ends itself when the daemon
is gone. The real daemon's case is in test_serve_lifetime_e2e.py."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.serve.daemon import DaemonRecord
from qwencompanion_src.core.serve.watchdog import watchdog_settings
from tests.rig.qwen_cli import QwenCli
from tests.support.processes import alive

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src" / "core" / "serve" / "serve_watchdog.js"
TOKEN = "7e57" * 16
IDLE_MINUTES = 0.02  # 1.2 s
WAIT = 30.0
IDLE = {"status": "ok", "connectedClients": 0, "activePrompts": 0, "pendingPermissions": 0, "activeWork": False}


@dataclass
class StandIn:
    """The daemon as the watchdog sees it."""

    process: subprocess.Popen[bytes]
    port: int = 0
    health: dict[str, Any] = field(default_factory=lambda: dict(IDLE))
    token: str = TOKEN
    asked: int = 0
    stop_answering: Callable[[], None] = lambda: None


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    process = subprocess.Popen(["sleep", "120"], start_new_session=True)
    daemon = StandIn(process)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            daemon.asked += 1
            allowed = self.headers.get("Authorization") == f"Bearer {daemon.token}" and self.path == "/health?deep=1"
            body = json.dumps(daemon.health if allowed else {"error": "Unauthorized"}).encode()
            self.send_response(200 if allowed else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    daemon.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop_answering() -> None:
        server.shutdown()
        server.server_close()

    daemon.stop_answering = stop_answering
    yield daemon
    stop_answering()
    process.kill()
    process.wait()


def watch(qwen_cli: QwenCli, daemon: StandIn, folders: list[str], idle_minutes: float = IDLE_MINUTES
          ) -> subprocess.Popen[bytes]:
    """The watchdog's watching copy (the one the package's launch starts
    detached; test_serve_lifetime_e2e.py has the launch), its settings on stdin."""
    record = DaemonRecord(daemon.process.pid, daemon.port, "127.0.0.1", TOKEN, tuple(folders), time.time(), "x")
    watchdog = subprocess.Popen([str(qwen_cli.node), str(SCRIPT), "--watching"], stdin=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    assert watchdog.stdin is not None
    watchdog.stdin.write(json.dumps(watchdog_settings(record, idle_minutes)).encode())
    watchdog.stdin.close()
    return watchdog


def waited(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def said(watchdog: subprocess.Popen[bytes]) -> str:
    assert watchdog.wait(WAIT) is not None
    assert watchdog.stderr is not None
    return watchdog.stderr.read().decode()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_an_idle_daemon_is_ended_after_the_idle_time(qwen_cli: QwenCli, stand_in: StandIn, folder: Path) -> None:
    watchdog = watch(qwen_cli, stand_in, [str(folder)])
    assert waited(lambda: stand_in.process.poll() is not None)
    assert "no client and no turn" in said(watchdog)


def test_a_busy_daemon_is_kept_until_its_last_client_goes(qwen_cli: QwenCli, stand_in: StandIn,
                                                          folder: Path) -> None:
    stand_in.health = {**IDLE, "connectedClients": 1}  # a chat reads its events
    watchdog = watch(qwen_cli, stand_in, [str(folder)])
    asked = stand_in.asked
    assert waited(lambda: stand_in.asked >= asked + 6)  # well past the idle time (polls a sixth of it apart)
    assert alive(stand_in.process.pid) and watchdog.poll() is None
    stand_in.health = {**IDLE, "activePrompts": 1, "activeWork": True}  # the chat left, its turn goes on
    asked = stand_in.asked
    assert waited(lambda: stand_in.asked >= asked + 6)
    assert alive(stand_in.process.pid) and watchdog.poll() is None
    stand_in.health = dict(IDLE)
    assert waited(lambda: stand_in.process.poll() is not None)
    assert "no client and no turn" in said(watchdog)


def test_a_daemon_whose_folder_is_gone_is_ended(qwen_cli: QwenCli, stand_in: StandIn, folder: Path) -> None:
    stand_in.health = {**IDLE, "connectedClients": 1}
    watchdog = watch(qwen_cli, stand_in, [str(folder)])
    assert waited(lambda: stand_in.asked >= 1)
    folder.rmdir()
    assert waited(lambda: stand_in.process.poll() is not None)
    assert f"its folder {folder} is gone" in said(watchdog)


def test_the_watchdog_ends_itself_when_the_daemon_is_gone(qwen_cli: QwenCli, stand_in: StandIn,
                                                          folder: Path) -> None:
    stand_in.health = {**IDLE, "connectedClients": 1}
    watchdog = watch(qwen_cli, stand_in, [str(folder)])
    assert waited(lambda: stand_in.asked >= 1)
    stand_in.stop_answering()
    stand_in.process.kill()
    stand_in.process.wait()
    assert "gone" in said(watchdog)


def test_a_port_that_refuses_the_token_is_left_alone(qwen_cli: QwenCli, stand_in: StandIn, folder: Path) -> None:
    """Another server took the daemon's port: nothing is ended."""
    stand_in.token = "another daemon's"
    watchdog = watch(qwen_cli, stand_in, [str(folder)])
    assert "not ours" in said(watchdog)
    assert alive(stand_in.process.pid)
