"""Helpers for the diff review tests: the built package in a simulated host and
a small blocking MCP client that plays the CLI (POSTs plus an SSE reader thread).

Also used by tests/e2e/test_diff_e2e.py, which runs the real CLI against the
same host.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost

ROOT = Path(__file__).resolve().parents[2]
BUILT_PACKAGE = ROOT / "dist" / "QwenCompanion"
DIFF_VIEW = "qwen_companion.diff_view"
WAIT = 10.0
QUIET = 0.3  # how long "nothing arrives" is watched for


class McpClient:
    """One CLI session: initialize, tools/call, and the notifications of its GET stream."""

    def __init__(self, port: int, token: str, name: str = "diff-test") -> None:
        self.port = port
        self.token = token
        self.name = name
        self.session_id = ""
        self.received: list[dict[str, Any]] = []  # diff notifications, in order
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self._stream: http.client.HTTPConnection | None = None
        self._reader: threading.Thread | None = None
        self._ids = iter(range(1, 1_000_000))

    def _headers(self) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def post(self, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request("POST", "/mcp", json.dumps(body), self._headers())
            response = connection.getresponse()
            data = response.read()
            return response.status, dict(response.getheaders()), json.loads(data) if data else None
        finally:
            connection.close()

    def connect(self) -> McpClient:
        status, headers, _ = self.post({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": self.name, "version": "1"},
            },
        })
        assert status == 200
        self.session_id = headers["Mcp-Session-Id"]
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
        self._open_stream()
        return self

    def _open_stream(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        connection.request("GET", "/mcp", headers={**self._headers(), "Accept": "text/event-stream"})
        response = connection.getresponse()
        assert response.status == 200
        self._stream = connection
        assert connection.sock is not None
        connection.sock.settimeout(None)
        first = threading.Event()

        def read() -> None:
            data: list[str] = []
            try:
                while True:
                    raw = response.readline()
                    if not raw:
                        return
                    line = raw.decode("utf-8").rstrip("\r\n")
                    if line.startswith("data:"):
                        data.append(line[5:].lstrip())
                    elif not line and data:
                        message = json.loads("\n".join(data))
                        data.clear()
                        first.set()
                        if message.get("method") != "ide/contextUpdate":
                            self._queue.put(message)
            except Exception:  # the stream was closed under the reader (close())
                return

        self._reader = threading.Thread(target=read, name=f"sse {self.name}", daemon=True)
        self._reader.start()
        assert first.wait(WAIT), "the stream's first context never came"

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        status, _, body = self.post({
            "jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        })
        assert status == 200, body
        result: dict[str, Any] = body["result"]
        return result

    def open_diff(self, path: Path | str, new_content: str) -> dict[str, Any]:
        return self.call("openDiff", {"filePath": str(path), "newContent": new_content})

    def close_diff(self, path: Path | str, suppress: bool | None = None) -> Any:
        """closeDiff's answer, parsed as the CLI does (`JSON.parse(text).content`)."""
        arguments: dict[str, Any] = {"filePath": str(path)}
        if suppress is not None:
            arguments["suppressNotification"] = suppress
        result = self.call("closeDiff", arguments)
        assert not result.get("isError"), result
        assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
        return json.loads(result["content"][0]["text"])["content"]

    def next_notification(self, timeout: float = WAIT) -> dict[str, Any]:
        message = self._queue.get(timeout=timeout)
        self.received.append(message)
        return message

    def quiet(self, seconds: float = QUIET) -> bool:
        """True when no notification arrives for `seconds`."""
        try:
            self.received.append(self._queue.get(timeout=seconds))
        except queue.Empty:
            return True
        return False

    def delete(self) -> None:
        """End the session as a well-behaved client would (the real CLI never does)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request("DELETE", "/mcp", headers=self._headers())
            assert connection.getresponse().status == 200
        finally:
            connection.close()

    def close(self) -> None:
        if self._stream is not None and self._stream.sock is not None:
            try:
                self._stream.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._stream.close()
        if self._reader is not None:
            self._reader.join(WAIT)


@dataclass
class Editor:
    """The simulated Sublime Text with QwenCompanion loaded and a workspace folder."""

    host: SimulatedHost
    workspace: Path
    lock_dir: Path
    clients: list[McpClient] = field(default_factory=list)

    @property
    def sublime(self) -> Any:
        return self.host.sublime

    @property
    def window(self) -> Any:
        return self.host.window

    def lock_info(self, window: Any = None) -> dict[str, Any]:
        """The lock file of `window`'s server (the first window's by default)."""
        folders = (window or self.window).folders()
        expected = os.pathsep.join(folders)

        def find() -> dict[str, Any] | None:
            for path in self.lock_dir.glob("*.lock"):
                info: dict[str, Any] = json.loads(path.read_text())
                if info["workspacePath"] == expected:
                    return info
            return None

        return self.host.wait_for(find, timeout=WAIT)

    def cli(self, name: str = "cli", window: Any = None) -> McpClient:
        info = self.lock_info(window)
        client = McpClient(info["port"], info["authToken"], name).connect()
        self.clients.append(client)
        return client

    def text(self, view: Any) -> str:
        return str(view.substr(self.sublime.Region(0, view.size())))

    def review_views(self, window: Any = None) -> list[Any]:
        window = window or self.window
        return [v for v in window.views() if v.settings().get(DIFF_VIEW)]

    def review(self, path: Path, window: Any = None) -> tuple[Any, Any]:
        """(original, proposed) views of the open review of `path`, once they are up."""
        name = path.name

        def find() -> tuple[Any, Any] | None:
            views = {v.name(): v for v in self.review_views(window)}
            left = views.get(f"{name} (original)") or views.get(f"{name} (new file)")
            right = views.get(f"{name} (Qwen Code proposal)")
            return (left, right) if left is not None and right is not None else None

        pair = self.host.wait_for(find, timeout=WAIT)
        self.host.wait_idle()
        return pair

    def phantom_html(self, view: Any) -> str:
        return "".join(p.content for p in self.host.view_state(view).phantoms.values())

    def settle(self) -> None:
        """Let the main thread and the server deliver what the last action caused."""
        self.host.wait_idle()
        time.sleep(0.05)


def start_editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, home: Path | None = None) -> Iterator[Editor]:
    """A host with the built package; HOME (and so the lock files) under tmp_path."""
    if not (BUILT_PACKAGE / "boot.py").is_file():
        pytest.fail("the package is not built: run `make build` first", pytrace=False)
    home = home or tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("QWEN_HOME", str(home / ".qwen"))  # where the CLI looks too
    workspace = (tmp_path / "workspace").resolve()
    workspace.mkdir(exist_ok=True)
    host = SimulatedHost(tmp_path / "Packages")
    editor = Editor(host, workspace, home / ".qwen" / "ide")
    try:
        host.install_package(BUILT_PACKAGE)
        host.load_package("QwenCompanion")
        host.user.set_folders([str(workspace)])
        editor.lock_info()
        yield editor
    finally:
        for client in editor.clients:
            client.close()
        host.close()
