"""The `qwen serve` daemon's start, record and reattach checks
(core/serve/daemon.py), with a stand-in daemon that prints what the real one
prints once it listens and writes down the argv and token it was given."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from qwencompanion_src.core.cli.processes import kill_group
from qwencompanion_src.core.serve import daemon
from qwencompanion_src.core.serve.daemon import DaemonRecord, DaemonRefused

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and permissions")
TOKEN = "f00d" * 16

STAND_IN = textwrap.dedent(
    """
    import json, os, socket, sys, time
    report, host = sys.argv[1], sys.argv[2]
    with open(report, "w") as out:
        json.dump({"argv": sys.argv, "token": os.environ.get("QWEN_SERVER_TOKEN")}, out)
    if host != "exit":
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        print(f"qwen serve listening on http://{host}:{port} (mode=http-bridge, workspace=/w)", flush=True)
        time.sleep(60)
    """
)


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return script


@pytest.fixture
def started_pids() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        kill_group(pid)


def start(stand_in: Path, tmp_path: Path, host: str, started_pids: list[int]) -> daemon.StartedDaemon:
    report = tmp_path / "report.json"
    argv = daemon.serve_argv([sys.executable, str(stand_in), str(report), host], [str(tmp_path)])
    env = daemon.serve_env({"PATH": os.environ.get("PATH", ""), "QWEN_SERVER_TOKEN": "another daemon's"}, TOKEN)
    found = daemon.start_daemon(argv, str(tmp_path), env, TOKEN, [str(tmp_path)],
                                daemon.output_path(tmp_path / "cache", [str(tmp_path)]), timeout=30)
    started_pids.append(found.process.pid)
    return found


def test_the_daemon_gets_its_token_from_the_environment_and_nowhere_else(
    stand_in: Path, tmp_path: Path, started_pids: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    found = start(stand_in, tmp_path, "127.0.0.1", started_pids)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["token"] == TOKEN
    assert not any(TOKEN in arg for arg in report["argv"])
    args = report["argv"][3:]
    assert args[:8] == ["serve", "--hostname", "127.0.0.1", "--port", "0", "--require-auth", "--no-web",
                        "--workspace"]
    assert (found.record.host, found.record.token) == ("127.0.0.1", TOKEN) and found.record.port > 0
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(found.record.describe())
    output = daemon.output_path(tmp_path / "cache", [str(tmp_path)])
    assert TOKEN not in output.read_text()
    if sys.platform != "win32":
        assert stat.S_IMODE(output.stat().st_mode) == 0o600


def test_a_token_on_the_command_line_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="command line"):
        daemon.start_daemon([sys.executable, "-c", "pass", "--token", TOKEN], str(tmp_path), {}, TOKEN,
                            [str(tmp_path)], tmp_path / "out")


def test_a_daemon_listening_off_loopback_is_stopped(stand_in: Path, tmp_path: Path,
                                                   started_pids: list[int]) -> None:
    with pytest.raises(DaemonRefused, match="not on loopback"):
        start(stand_in, tmp_path, "0.0.0.0", started_pids)


def test_a_daemon_that_exits_before_listening_says_so(stand_in: Path, tmp_path: Path,
                                                      started_pids: list[int]) -> None:
    with pytest.raises(DaemonRefused, match="exited"):
        start(stand_in, tmp_path, "exit", started_pids)


# --- the record ---------------------------------------------------------------


def record(pid: int | None = None, host: str = "127.0.0.1") -> DaemonRecord:
    return DaemonRecord(pid or os.getpid(), 4711, host, TOKEN, ("/w",), 1.0)


@posix_only
def test_the_record_is_private(tmp_path: Path) -> None:
    path = daemon.record_path(tmp_path / "cache", ["/w"])
    daemon.write_record(path, record())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert daemon.read_record(path) == record()


def test_a_record_shown_in_a_log_or_traceback_shows_no_token() -> None:
    assert TOKEN not in repr(record())
    assert TOKEN not in repr(daemon.Attached(record(), None, ""))


def test_one_record_per_set_of_folders_in_any_order(tmp_path: Path) -> None:
    assert daemon.record_path(tmp_path, ["/a", "/b"]) == daemon.record_path(tmp_path, ["/b", "/a"])
    assert daemon.record_path(tmp_path, ["/a"]) != daemon.record_path(tmp_path, ["/a", "/b"])


@pytest.mark.parametrize(("style", "same"), [("macos", True), ("windows", True), ("posix", False)])
def test_folders_spelled_in_another_case_share_a_record_where_the_file_system_ignores_case(
    tmp_path: Path, style: daemon.PathStyle, same: bool
) -> None:
    upper, lower = daemon.record_path(tmp_path, ["/Projects/App"], style), daemon.record_path(tmp_path, ["/projects/app"], style)
    assert (upper == lower) is same


@posix_only
def test_a_folder_reached_through_a_symlink_shares_its_record(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert daemon.record_path(tmp_path, [str(tmp_path / "link")]) == daemon.record_path(tmp_path, [str(tmp_path / "real")])


def test_no_record_is_none_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    path = daemon.record_path(tmp_path, ["/w"])
    assert daemon.read_record(path) is None
    daemon.write_record(path, record())
    path.write_text("{not json")
    with pytest.raises(DaemonRefused, match="unreadable"):
        daemon.read_record(path)


@posix_only
def test_a_record_others_can_read_is_not_used(tmp_path: Path) -> None:
    path = daemon.record_path(tmp_path, ["/w"])
    daemon.write_record(path, record())
    path.chmod(0o644)
    with pytest.raises(DaemonRefused, match="open to your group or others"):
        daemon.read_record(path)


@posix_only
def test_a_record_of_another_user_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = daemon.record_path(tmp_path, ["/w"])
    daemon.write_record(path, record())
    monkeypatch.setattr(daemon.os, "getuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(DaemonRefused, match="another user"):
        daemon.read_record(path)


def secure_probe(found: DaemonRecord, with_token: bool) -> int:
    return 200 if with_token else 401


@pytest.fixture
def running(stand_in: Path, tmp_path: Path, started_pids: list[int]) -> DaemonRecord:
    """The record of a live stand-in daemon listening on its port."""
    return start(stand_in, tmp_path, "127.0.0.1", started_pids).record


def test_a_live_loopback_daemon_that_requires_its_token_is_attached_to(running: DaemonRecord) -> None:
    daemon.check_record(running, secure_probe)


def test_a_daemon_off_loopback_is_not_attached_to(running: DaemonRecord) -> None:
    with pytest.raises(DaemonRefused, match="loopback"):
        daemon.check_record(dataclasses.replace(running, host="10.0.0.2"), secure_probe)


def test_a_daemon_that_answers_without_a_token_is_not_attached_to(running: DaemonRecord) -> None:
    with pytest.raises(DaemonRefused, match="without a token"):
        daemon.check_record(running, lambda found, with_token: 200)


def test_a_daemon_that_refuses_the_token_is_not_attached_to(running: DaemonRecord) -> None:
    with pytest.raises(DaemonRefused, match="refuses its token"):
        daemon.check_record(running, lambda found, with_token: 401)


def test_a_daemon_that_does_not_answer_is_not_attached_to(running: DaemonRecord) -> None:
    def silent(found: DaemonRecord, with_token: bool) -> int:
        raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(daemon.StaleRecord, match="does not answer"):
        daemon.check_record(running, silent)


def test_a_dead_daemon_is_not_attached_to() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with pytest.raises(daemon.StaleRecord, match="has exited"):
        daemon.check_record(record(pid=child.pid), secure_probe)


@posix_only
def test_a_daemon_of_another_user_is_not_attached_to(running: DaemonRecord, monkeypatch: pytest.MonkeyPatch) -> None:
    def not_permitted(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(daemon.os, "kill", not_permitted)
    with pytest.raises(DaemonRefused, match="not running as this user"):
        daemon.check_record(running, secure_probe)


# --- attach or start ----------------------------------------------------------------


def attach(stand_in: Path, tmp_path: Path, probe: daemon.Probe, started_pids: list[int]) -> daemon.Attached:
    qwen = [sys.executable, str(stand_in), str(tmp_path / "report.json"), "127.0.0.1"]
    found = daemon.attach_or_start(tmp_path / "cache", [str(tmp_path)], qwen, {"PATH": os.environ.get("PATH", "")},
                                   probe)
    if found.process is not None:
        started_pids.append(found.process.pid)
    return found


def test_the_recorded_daemon_is_attached_to_and_a_gone_one_replaced(
    stand_in: Path, tmp_path: Path, started_pids: list[int]
) -> None:
    first = attach(stand_in, tmp_path, secure_probe, started_pids)
    assert first.process is not None
    again = attach(stand_in, tmp_path, secure_probe, started_pids)
    assert (again.process, again.record) == (None, first.record)

    daemon.stop_daemon(first.record)
    first.process.wait(10)
    replaced = attach(stand_in, tmp_path, secure_probe, started_pids)
    assert replaced.process is not None and replaced.record.pid != first.record.pid
    assert replaced.record.token != first.record.token
    assert "has exited" in replaced.note


def test_a_recorded_daemon_that_fails_a_safety_check_is_refused_and_not_replaced(
    stand_in: Path, tmp_path: Path, started_pids: list[int]
) -> None:
    first = attach(stand_in, tmp_path, secure_probe, started_pids)
    with pytest.raises(DaemonRefused, match="without a token"):
        attach(stand_in, tmp_path, lambda found, with_token: 200, started_pids)
    assert len(started_pids) == 1
    assert daemon.read_record(daemon.record_path(tmp_path / "cache", [str(tmp_path)])) == first.record


def test_stop_ends_the_recorded_daemon_and_forgets_it(stand_in: Path, tmp_path: Path,
                                                      started_pids: list[int]) -> None:
    first = attach(stand_in, tmp_path, secure_probe, started_pids)
    assert first.process is not None
    assert daemon.stop_recorded(tmp_path / "cache", [str(tmp_path)]) == first.record
    assert first.process.wait(10) is not None
    assert daemon.read_record(daemon.record_path(tmp_path / "cache", [str(tmp_path)])) is None
    assert daemon.stop_recorded(tmp_path / "cache", [str(tmp_path)]) is None


def test_stop_forgets_the_record_before_the_daemon_ends(stand_in: Path, tmp_path: Path, started_pids: list[int],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A status asked while the daemon dies must find no record, not a dying port
    (it answered a connection reset once)."""
    attach(stand_in, tmp_path, secure_probe, started_pids)
    path = daemon.record_path(tmp_path / "cache", [str(tmp_path)])
    recorded_at_kill: list[bool] = []
    end = daemon.end_group_waiting

    def watched_end(pid: int, grace: float, leader: subprocess.Popen[bytes] | None = None) -> None:
        recorded_at_kill.append(path.exists())
        end(pid, grace, leader)

    monkeypatch.setattr(daemon, "end_group_waiting", watched_end)
    daemon.stop_recorded(tmp_path / "cache", [str(tmp_path)])
    assert recorded_at_kill == [False]


RIG = Path(__file__).resolve().parents[1] / "rig"
LOCKING_STAND_IN = textwrap.dedent(
    """
    import signal, socket, subprocess, sys, time
    from pathlib import Path
    rig, role, lock = sys.argv[1:4]
    sys.path.insert(0, rig)
    from store_lock import hold
    if role == "agent":  # qwen's agent, starting: it holds the extension store's lock
        hold(Path(lock))
        time.sleep(60)
        sys.exit(0)
    if role == "deaf":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, __file__, rig, "agent", lock])
    while not Path(lock).exists():
        time.sleep(0.02)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    print(f"qwen serve listening on http://127.0.0.1:{port} (mode=http-bridge, workspace=/w)", flush=True)
    time.sleep(60)
    """
)


def attach_locking(role: str, tmp_path: Path, started_pids: list[int]) -> tuple[daemon.Attached, Path]:
    """A stand-in daemon whose agent holds qwen's extension-store lock, recorded (`role`: "daemon" or "deaf")."""
    script, lock = tmp_path / "locking_stand_in.py", tmp_path / "extension-store" / "lock.lock"
    script.write_text(LOCKING_STAND_IN)
    lock.parent.mkdir()
    qwen = [sys.executable, str(script), str(RIG), role, str(lock)]
    found = daemon.attach_or_start(tmp_path / "cache", [str(tmp_path)], qwen, {"PATH": os.environ.get("PATH", "")},
                                   secure_probe)
    assert found.process is not None
    started_pids.append(found.process.pid)
    return found, lock


@posix_only
def test_stop_serve_daemon_lets_its_agents_exit_hooks_remove_qwens_store_lock(
    tmp_path: Path, started_pids: list[int]
) -> None:
    """A SIGKILL to the group left the lock of an agent that was starting,
    and every qwen started in the next minute failed: "Extension store is busy"."""
    found, lock = attach_locking("daemon", tmp_path, started_pids)
    assert daemon.stop_recorded(tmp_path / "cache", [str(tmp_path)]) == found.record
    assert found.process is not None and found.process.wait(10) is not None
    assert not lock.exists()


@posix_only
def test_a_daemon_deaf_to_sigterm_is_killed_after_the_grace(
    tmp_path: Path, started_pids: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon, "STOP_GRACE_SECONDS", 0.5)
    found, lock = attach_locking("deaf", tmp_path, started_pids)
    assert daemon.stop_recorded(tmp_path / "cache", [str(tmp_path)]) == found.record
    assert found.process is not None
    assert found.process.wait(10) == -9
    assert not lock.exists()  # its agent heard the SIGTERM


@posix_only
def test_a_daemon_stopped_as_our_child_is_reaped_not_left_a_zombie(tmp_path: Path, started_pids: list[int]) -> None:
    found, _ = attach_locking("daemon", tmp_path, started_pids)
    assert found.process is not None
    pid = found.process.pid
    assert daemon.stop_daemon(found.record)
    with pytest.raises(ChildProcessError):  # already waited for: no zombie is left
        os.waitpid(pid, os.WNOHANG)
