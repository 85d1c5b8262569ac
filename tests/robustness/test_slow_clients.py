"""Slow clients never hold up other sessions or Sublime's threads.

In the simulated editor with the built package: one CLI's stream is never
read while 40 MB of notifications are pushed at it (from a test thread, as
the package's own threads push), and slowloris connections hold half-sent
requests open. Meanwhile another CLI keeps getting answers and context
updates, both Sublime threads go quiet, and the stalled session's backlog
stays bounded (the server keeps at most MAX_PENDING messages per session).
"""

from __future__ import annotations

import gc
import socket
import sys
import tracemalloc
from pathlib import Path

import pytest

from tests.support.editor import PACKAGE, open_editor
from tests.support.mcp_client import McpClient

PUSHED = 400  # notifications of 100 KB: 40 MB in all
BACKLOG_BOUND = 32 * 1024 * 1024  # MAX_PENDING (256) of them, plus room
SLOWLORIS = 20


def stalled_stream(port: int, token: str, session: str) -> socket.socket:
    """A GET stream whose client never reads a byte."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n".encode()
    )
    return sock


def slowloris(port: int, token: str, session: str) -> list[socket.socket]:
    """Half-sent requests: some stop inside the headers, some inside an authorized body."""
    sockets = []
    for index in range(SLOWLORIS):
        sock = socket.create_connection(("127.0.0.1", port))
        if index % 2:
            sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthoriz".encode())
        else:
            sock.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                f"Mcp-Session-Id: {session}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
                '{"jsonrpc": "2.0", "id": 1, "method": "pi'.encode()
            )
        sockets.append(sock)
    return sockets


def test_a_stalled_reader_and_slowloris_requests_hold_up_no_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch) as editor:
        lock = editor.lock_info()
        port, token = lock["port"], lock["authToken"]
        fast = editor.cli("fast")
        stalled = McpClient(port, token, "stalled")
        initialize = {
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stalled", "version": "1"}},
        }
        session = stalled.post(initialize).headers["Mcp-Session-Id"]
        held = [stalled_stream(port, token, session), *slowloris(port, token, session)]
        try:
            companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(editor.window)
            messages = sys.modules[f"{PACKAGE}.core.companion.ide_messages"]
            gc.collect()
            tracemalloc.start()
            try:
                baseline = tracemalloc.get_traced_memory()[0]
                for index in range(PUSHED):  # each returns at once: the server thread does the sending
                    notice = messages.DiffAccepted(filePath=f"/w/{index}.py", content=f"{index}" + "x" * 100_000)
                    companion.notify(messages.DIFF_ACCEPTED, notice, session_id=session)

                # Others are served meanwhile: requests, and context from the editor.
                for _ in range(20):
                    reply = fast.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                    assert reply.status == 200 and len(reply.body["result"]["tools"]) == 2
                view = editor.open("typing.py", "one\ntwo\nthree\n")
                editor.user.set_selection(view, [(5, 5)])
                files = fast.wait_files(lambda files: bool(files) and files[0].get("cursor") == {"line": 2, "character": 2})
                assert files[0]["path"] == str(editor.workspace / "typing.py")
                editor.host.wait_idle()  # neither Sublime thread is stuck behind the slow ones
                assert editor.host.run_on_main(lambda: "main answers") == "main answers"

                gc.collect()
                grown = tracemalloc.get_traced_memory()[0] - baseline
            finally:
                tracemalloc.stop()
            assert grown < BACKLOG_BOUND, f"{grown} bytes held for one stalled reader"
            assert any(s.id_prefix == session[:8] and s.stream_open for s in companion.sessions())  # still held open
        finally:
            for sock in held:
                sock.close()
        assert fast.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}).body == {"jsonrpc": "2.0", "id": 2, "result": {}}
        editor.host.assert_no_errors()
