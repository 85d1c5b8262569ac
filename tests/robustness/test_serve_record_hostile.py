"""A `qwen serve` record whose pid now names an unrelated process (the
daemon died, its pid was reused) and a loopback server on the recorded port
answering as the daemon does (401 without a token, 200 with any): the
package must send that server no token and no session, and signal no
process of that pid's group, neither when a chat attaches nor on Stop.
Real processes and a real HTTP server (core/serve/daemon.py, whose checks
the chat's start and Stop go through)."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from qwencompanion_src.core.cli.process_identity import start_token
from qwencompanion_src.core.cli.processes import kill_group
from qwencompanion_src.core.serve import daemon
from qwencompanion_src.core.serve.daemon import DaemonRecord, DaemonRefused
from tests.support.processes import alive
from tests.unit.test_serve_daemon import STAND_IN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checked with /proc here")

TOKEN = "5ec7e7" * 10


@dataclass
class Impostor:
    """A loopback server answering /health as the daemon does, writing down what it is sent."""

    port: int = 0
    authorizations: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def impostor() -> Iterator[Impostor]:
    seen = Impostor()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.requests.append(f"{self.command} {self.path}")
            authorization = self.headers.get("Authorization")
            if authorization:
                seen.authorizations.append(authorization)
            status = 200 if authorization else 401
            body = b'{"status":"ok"}' if authorization else b'{"error":"Unauthorized"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    seen.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def unrelated() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated program leading a process group of its own (as a daemon's pid would)."""
    process = subprocess.Popen(["sleep", "120"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return script


def recorded(cache: Path, folders: list[str], record: DaemonRecord) -> None:
    daemon.write_record(daemon.record_path(cache, folders), record)


def test_a_reused_pid_behind_an_answering_port_gets_no_token_and_no_kill(
    tmp_path: Path, impostor: Impostor, unrelated: subprocess.Popen[bytes], stand_in: Path
) -> None:
    """The record's daemon died; its pid now runs `sleep`, and another
    server took the port. Attaching starts a daemon of its own instead, and
    Stop ends that one only."""
    cache, folders = tmp_path / "cache", [str(tmp_path)]
    dead_daemons_start = "0f0f0f0f-0000-0000-0000-000000000000:12345"
    recorded(cache, folders, DaemonRecord(unrelated.pid, impostor.port, "127.0.0.1", TOKEN, tuple(folders),
                                          time.time(), dead_daemons_start))
    attached = daemon.attach_or_start(cache, folders, [sys.executable, str(stand_in), str(tmp_path / "r.json"),
                                                       "127.0.0.1"], {})
    try:
        assert impostor.authorizations == [] and impostor.requests == []
        assert attached.process is not None and attached.record.pid != unrelated.pid
        assert "another process" in attached.note
        assert daemon.stop_recorded(cache, folders) == attached.record
        assert attached.process.wait(10) is not None
    finally:
        kill_group(attached.record.pid)
    assert alive(unrelated.pid)


def test_stop_leaves_a_reused_pids_group_alone(tmp_path: Path, impostor: Impostor,
                                               unrelated: subprocess.Popen[bytes]) -> None:
    cache, folders = tmp_path / "cache", [str(tmp_path)]
    recorded(cache, folders, DaemonRecord(unrelated.pid, impostor.port, "127.0.0.1", TOKEN, tuple(folders),
                                          time.time(), "0f0f0f0f-0000-0000-0000-000000000000:12345"))
    assert daemon.stop_recorded(cache, folders) is not None  # forgotten
    time.sleep(0.2)
    assert alive(unrelated.pid)
    assert daemon.read_record(daemon.record_path(cache, folders)) is None


def test_a_record_of_an_earlier_version_without_a_start_is_not_trusted(
    tmp_path: Path, impostor: Impostor, unrelated: subprocess.Popen[bytes]
) -> None:
    record = DaemonRecord(unrelated.pid, impostor.port, "127.0.0.1", TOKEN, (str(tmp_path),), time.time())
    with pytest.raises(daemon.StaleRecord):
        daemon.check_record(record, daemon.http_probe)
    assert not daemon.stop_daemon(record)
    time.sleep(0.2)
    assert alive(unrelated.pid) and impostor.authorizations == []


def test_the_recorded_process_must_be_the_one_listening_before_it_is_sent_the_token(
    impostor: Impostor, unrelated: subprocess.Popen[bytes]
) -> None:
    """The pid is the process recorded (its start matches), but the port is
    another process's: the token goes nowhere."""
    record = DaemonRecord(unrelated.pid, impostor.port, "127.0.0.1", TOKEN, ("/w",), time.time(),
                          start_token(unrelated.pid) or "")
    with pytest.raises(DaemonRefused, match="does not listen"):
        daemon.check_record(record, daemon.http_probe)
    assert impostor.authorizations == [] and impostor.requests == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the port's listeners are read from /proc")
def test_the_recorded_process_no_longer_listening_is_a_daemon_in_its_end(unrelated: subprocess.Popen[bytes]) -> None:
    """The pid is the process recorded, but nothing listens on its port any
    more (a stopped daemon closes its socket before it exits): the record is
    stale, so a new daemon is started instead of the user being refused."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: no one listens on it
        record = DaemonRecord(unrelated.pid, port, "127.0.0.1", TOKEN, ("/w",), time.time(),
                              start_token(unrelated.pid) or "")
        with pytest.raises(daemon.StaleRecord, match="no longer listens"):
            daemon.check_record(record, daemon.http_probe)


def test_a_record_from_before_a_restart_is_dropped(tmp_path: Path, unrelated: subprocess.Popen[bytes]) -> None:
    """Same pid, same start tick, another boot: another process."""
    token = start_token(unrelated.pid) or ""
    _, ticks = token.split(":")
    record = DaemonRecord(unrelated.pid, 1, "127.0.0.1", TOKEN, ("/w",), time.time(),
                          f"00000000-0000-0000-0000-000000000000:{ticks}")
    with pytest.raises(daemon.StaleRecord, match="restarted"):
        daemon.check_record(replace(record), daemon.http_probe)
    assert not daemon.stop_daemon(record)
    assert alive(unrelated.pid)
