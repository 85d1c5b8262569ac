"""qwen's registry of running processes read as `qwen sessions ps` reads it
(records as qwen 0.24.4 writes them): a live terminal holding a session is
found; a dead one, a reused pid, a record under another pid's name, an ACP
process's record and hostile files are not; the reading is bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.chat.history.live_sessions import (
    MAX_RECORD_BYTES,
    MAX_RECORDS,
    Holder,
    held_message,
    is_running,
    linux_proc_start,
    terminal_holders,
)
from qwencompanion_src.core.companion.lockfile import pid_alive

SESSION = "13576e6b-b5ce-4aab-b8c6-d5f7ae9f84b5"


def record(pid: int, kind: str = "tui", session: str = SESSION, start: str | None = "boot:100") -> dict[str, Any]:
    """A record as qwen 0.24.4's TUI (kind "tui") or `qwen --acp` (kind "headless") writes it."""
    return {"schemaVersion": 1, "pid": pid, "procStart": start, "pidNs": 4026531836, "sessionId": session,
            "cwd": "/project", "name": "project-00", "startedAt": 1795870286226, "qwenVersion": "0.24.4", "kind": kind}


def registry(home: Path, files: dict[str, object]) -> str:
    folder = home / "sessions"
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return str(home)


LIVE = {101: "boot:100", 102: "boot:200", 103: "boot:300"}


def alive(pid: int) -> bool:
    return pid in LIVE


def start_of(pid: int) -> str | None:
    return LIVE.get(pid)


def test_a_live_terminal_holding_the_session_is_found(tmp_path: Path) -> None:
    home = registry(tmp_path, {"101.json": record(101), "102-aa2ca7b2.json": record(102, kind="headless", start="boot:200")})
    assert terminal_holders(home, SESSION, alive, start_of) == [Holder(101, "/project")]
    assert terminal_holders(home, "another-session", alive, start_of) == []
    message = held_message([Holder(101, "/project")])
    assert "open in qwen in a terminal (process 101, in /project)" in message and "quit qwen there first" in message


def test_records_of_processes_that_are_gone_or_not_the_one_recorded_hold_nothing(tmp_path: Path) -> None:
    home = registry(tmp_path, {
        "104.json": record(104),  # dead: its record outlived a kill
        "102.json": record(102, start="boot:1"),  # the pid reused by another process
        "103.json": record(101),  # a record under another pid's name: qwen trusts neither
        "101.json.0123456789ab.tmp": record(101),  # qwen's temporary file
    })
    assert terminal_holders(home, SESSION, alive, start_of) == []
    assert is_running(101, None, alive, start_of)  # no token recorded (not Linux): alive is enough
    assert is_running(101, "boot:100", alive, lambda pid: None)  # token unreadable now: alive is enough


def test_hostile_records_are_skipped_and_the_reading_is_bounded(tmp_path: Path) -> None:
    files: dict[str, object] = {
        "101.json": "{not json",
        "102.json": "x" * (MAX_RECORD_BYTES + 10),
        "103.json": [record(103)],
    }
    files.update({f"{200 + n}.json": record(200 + n, session="other") for n in range(MAX_RECORDS)})
    files["999.json"] = record(999)  # sorted after the bound: never read
    home = registry(tmp_path, files)
    assert terminal_holders(home, SESSION, lambda pid: True, start_of) == []
    bool_pid = record(101)
    bool_pid["pid"] = True
    assert terminal_holders(registry(tmp_path / "b", {"1.json": bool_pid}), SESSION, alive, start_of) == []
    assert terminal_holders(str(tmp_path / "nowhere"), SESSION, alive, start_of) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="qwen's start token exists on Linux only")
def test_the_start_token_of_this_process_is_the_one_qwen_would_record() -> None:
    token = linux_proc_start(os.getpid())
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert token is not None and token.startswith(boot_id + ":") and token.split(":")[-1].isdigit()
    assert linux_proc_start(2**22 + 12345) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="qwen's start token exists on Linux only")
def test_a_process_that_exited_and_awaits_its_parent_runs_no_more() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        token = None
        for _ in range(500):  # until it has exited; it is not reaped before `wait`
            token = linux_proc_start(child.pid)
            if token == "":
                break
            time.sleep(0.01)
        assert token == "" and not is_running(child.pid, "boot:1", pid_alive)
    finally:
        child.wait()
