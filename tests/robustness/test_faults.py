"""Faults: clients that vanish or never leave, a CLI killed with its review
open, an unwritable lock directory, stale lock files of a dead Sublime.

Covered elsewhere and not repeated here: twenty reloads of the package
(tests/sim/test_lifecycle.py::test_twenty_reloads_leave_exactly_one_live_server_per_window),
the sweep's rules for whose lock files are stale (tests/unit/test_lockfile.py)
and a companion whose lock cannot be written (tests/unit/test_lockfile.py);
here are the package-level halves of the last two: what Sublime shows and does.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.companion.ide_messages import DIFF_ACCEPTED, DiffAccepted
from qwencompanion_src.core.companion.lockfile import IDE_INFO, IDE_NAME, pid_alive
from qwencompanion_src.core.companion.server import CompanionServer, ServerOptions
from tests.support.editor import PACKAGE, open_editor
from tests.unit.conftest import TOKEN, WAIT

from .conftest import ROOT, exchange, new_session, ping_ok, post

SHORT = ServerOptions(idle_timeout_seconds=0.5, dropped_stream_grace_seconds=0.5, max_sessions=32)
LOG_PANEL = "Qwen Companion Log"


async def eventually(condition: Callable[[], bool]) -> None:
    """Wait for `condition` (a hang guard of WAIT seconds, not a timing check)."""
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.02)


async def open_stream(server: CompanionServer, session: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, limit=1 << 24)
    writer.write(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n".encode()
    )
    await writer.drain()
    assert (await reader.readline()).startswith(b"HTTP/1.1 200")
    return reader, writer


def abort(writer: asyncio.StreamWriter) -> None:
    """Drop the connection the rude way: RST, no FIN."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


# --- clients that vanish or never leave ---------------------------------------------


async def test_a_client_dropping_mid_stream_is_forgotten_and_others_carry_on(
    live_server: Callable[..., Any], error_log: Callable[[], list[str]]
) -> None:
    server = await live_server(SHORT)
    rude, polite = await new_session(server), await new_session(server)
    _, rude_writer = await open_stream(server, rude)
    polite_reader, polite_writer = await open_stream(server, polite)
    await eventually(lambda: server.sessions.connected_count() == 2)

    content = "x" * 100_000
    for index in range(40):  # 4 MB in all, never coalesced: the rude one drops in the middle
        server.notify(DIFF_ACCEPTED, DiffAccepted(filePath=f"/w/{index}.py", content=content))
        if index == 5:
            abort(rude_writer)
    seen = 0
    async with asyncio.timeout(WAIT):
        while seen < 40:
            line = await polite_reader.readline()
            seen += line.startswith(b"data:") and b"ide/diffAccepted" in line

    await eventually(lambda: server.sessions.connected_count() == 1)
    await ping_ok(server, polite)
    await eventually(lambda: server.sessions.get(rude) is None)  # its grace ran out; no DELETE needed
    assert server.sessions.get(polite) is not None  # streaming sessions never expire
    polite_writer.close()
    assert error_log() == []


async def test_a_hundred_sessions_left_open_are_capped_and_expire(
    live_server: Callable[..., Any], error_log: Callable[[], list[str]]
) -> None:
    server = await live_server(SHORT)
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        sessions = []
        for _ in range(100):  # never DELETEd, as the real CLI never does
            sessions.append(await new_session(server))
            assert len(server.sessions) <= SHORT.max_sessions
        streams = [await open_stream(server, s) for s in sessions[-20:]]  # the newest outlive the cap
        await eventually(lambda: server.sessions.connected_count() == len(streams))
        for _, writer in streams:
            abort(writer)
        await eventually(lambda: len(server.sessions) == 0)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert grown < 4 * 1024 * 1024, f"{grown} bytes still allocated"
    assert (await exchange(server.port, post(server.port, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', session=sessions[-1]))).status == 404
    await ping_ok(server, await new_session(server))
    assert error_log() == []


# --- a CLI killed while its review is open ------------------------------------------

CLI_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from tests.support.mcp_client import McpClient
    client = McpClient(int(sys.argv[2]), sys.argv[3], "doomed").connect()
    assert client.open_diff(sys.argv[4], "proposed\\n")["isError"] is False
    print(client.session_id, flush=True)
    time.sleep(3600)
    """
)


def test_a_cli_killed_with_its_review_open_leaves_it_orphaned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch) as editor:
        # Short expiry for the package's servers, then a restart so the window's server has it.
        companion_module = sys.modules[f"{PACKAGE}.core.companion.companion"]
        options = sys.modules[f"{PACKAGE}.core.companion.server"].ServerOptions(
            idle_timeout_seconds=1.0, dropped_stream_grace_seconds=0.5
        )
        monkeypatch.setitem(companion_module.Companion.__init__.__kwdefaults__, "options", options)
        old_port = editor.lock_info()["port"]
        editor.window.run_command("qwen_restart_server")

        def restarted() -> dict[str, Any] | None:
            info = editor.find_lock()
            return info if info is not None and info["port"] != old_port else None

        lock = editor.host.wait_for(restarted, timeout=WAIT)
        assert lock is not None
        path = editor.file("victim.py", "original\n")

        cli = subprocess.Popen(
            [sys.executable, "-c", CLI_SCRIPT, str(ROOT), str(lock["port"]), lock["authToken"], str(path)],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            assert cli.stdout is not None and cli.stdout.readline().strip()
            _, proposed = editor.review(path)
            assert "Orphaned" not in editor.banner_html(proposed)
            cli.send_signal(signal.SIGKILL)
            cli.wait(WAIT)
            # The stream drops with the process; the session expires after its grace.
            editor.host.wait_for(lambda: "Orphaned" in editor.banner_html(proposed), timeout=WAIT)
        finally:
            cli.kill()
            cli.wait()
        assert editor.text(proposed) == "proposed\n"  # still there to copy
        assert path.read_text() == "original\n"
        editor.host.assert_no_errors()


# --- lock files -------------------------------------------------------------------------


def test_an_unwritable_lock_directory_shows_in_the_log_and_the_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file")
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        # Root ignores permission bits, but no one can create a directory inside a file.
        monkeypatch.setenv("QWEN_HOME", str(blocker / "qwen"))
        view = editor.open("a.py")
        editor.host.load_package(PACKAGE)
        editor.host.wait_for(lambda: view.get_status("qwen_companion") == "Qwen ⚠ no lock file", timeout=WAIT)

        editor.host.run_on_main(lambda: editor.window.run_command("qwen_show_log"))
        editor.host.wait_idle()
        panel = editor.window.find_output_panel(LOG_PANEL)
        assert panel is not None
        log = editor.text(panel)
        assert f"cannot write the lock file in {blocker / 'qwen' / 'ide'}" in log
        assert "Traceback" not in log
        assert blocker.read_text() == "a file"
        editor.host.assert_no_errors()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)
    return child.pid


def test_a_stale_lock_of_a_dead_sublime_is_swept_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours = {"ideName": IDE_NAME, "ideInfo": IDE_INFO, "authToken": "0" * 64, "workspacePath": str(tmp_path)}
    dead = _dead_pid()
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        editor.lock_dir.mkdir(parents=True)
        stale = editor.lock_dir / "1111.lock"
        stale.write_text(json.dumps({**ours, "port": 1111, "ppid": dead}))
        alive = editor.lock_dir / "2222.lock"  # another Sublime, still running
        alive.write_text(json.dumps({**ours, "port": 2222, "ppid": os.getpid()}))
        vscode = editor.lock_dir / "3333.lock"  # not ours: never touched
        vscode.write_text(json.dumps({"port": 3333, "ppid": dead, "workspacePath": "", "ideInfo": {"name": "vscode"}}))

        lock = editor.load([editor.workspace])
        assert not stale.exists()
        assert alive.exists() and vscode.exists()
        assert (editor.lock_dir / f"{lock['port']}.lock").exists()
        editor.host.assert_no_errors()


def test_a_stale_lock_that_cannot_be_deleted_does_not_stop_the_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root may delete anything, so the refusal (another user's file, a file
    # Windows holds open) is injected where the package deletes it.
    ours = {"ideName": IDE_NAME, "ideInfo": IDE_INFO, "authToken": "0" * 64, "workspacePath": str(tmp_path)}
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        editor.lock_dir.mkdir(parents=True)
        stuck = editor.lock_dir / "1111.lock"
        stuck.write_text(json.dumps({**ours, "port": 1111, "ppid": _dead_pid()}))
        real_unlink = Path.unlink

        def refusing_unlink(self: Path, missing_ok: bool = False) -> None:
            if self == stuck:
                raise PermissionError(13, "Permission denied", str(self))
            real_unlink(self, missing_ok=missing_ok)

        monkeypatch.setattr(Path, "unlink", refusing_unlink)
        lock = editor.load([editor.workspace])
        assert (editor.lock_dir / f"{lock['port']}.lock").exists()
        assert stuck.exists()

        editor.host.run_on_main(lambda: editor.window.run_command("qwen_show_log"))
        editor.host.wait_idle()
        panel = editor.window.find_output_panel(LOG_PANEL)
        assert panel is not None
        assert f"cannot remove the stale lock file {stuck}: Permission denied" in editor.text(panel)
        editor.host.assert_no_errors()
