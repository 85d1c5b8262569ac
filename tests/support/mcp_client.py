"""A blocking MCP client that plays the qwen CLI against a companion server:
initialize, the GET event stream read on a thread, tools/call and DELETE."""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import queue
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

WAIT = 10.0  # a hang guard, not a timing check
QUIET = 0.3  # how long "nothing arrives" is watched for
CONTEXT_UPDATE = "ide/contextUpdate"

Context = dict[str, Any]  # the params of an ide/contextUpdate
OpenFile = dict[str, Any]


class Reply(NamedTuple):
    status: int
    headers: dict[str, str]
    body: Any  # parsed JSON; the text when it is not JSON; None when empty


def open_files(context: Context) -> list[OpenFile]:
    files = context["workspaceState"]["openFiles"]
    assert isinstance(files, list)
    return files


class McpClient:
    """One CLI session. Messages of its GET stream land in two queues:
    `contexts` (ide/contextUpdate params) and `notifications` (the rest)."""

    def __init__(self, port: int, token: str, name: str = "cli", path: str = "/mcp") -> None:
        self.port = port
        self.path = path
        self.token = token
        self.name = name
        self.session_id = ""
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.contexts: queue.Queue[Context] = queue.Queue()
        self._stream: http.client.HTTPConnection | None = None
        self._reader: threading.Thread | None = None
        self._ids = itertools.count(1)

    def _headers(self, token: str | None = None) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {token or self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def post(self, body: dict[str, Any], token: str | None = None) -> Reply:
        """One JSON-RPC POST (with another bearer `token` if given)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request("POST", self.path, json.dumps(body), self._headers(token))
            response = connection.getresponse()
            data = response.read()
            headers = dict(response.getheaders())
        finally:
            connection.close()
        if not data:
            return Reply(response.status, headers, None)
        is_json = headers.get("Content-Type", "").startswith("application/json")
        return Reply(response.status, headers, json.loads(data) if is_json else data.decode("utf-8"))

    def connect(self, stream: bool = True) -> McpClient:
        """initialize, notifications/initialized, then (with `stream`) the GET
        stream up to its first message."""
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
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status == 202
        if stream:
            self._open_stream()
        return self

    def _open_stream(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        connection.request("GET", self.path, headers={**self._headers(), "Accept": "text/event-stream"})
        response = connection.getresponse()
        assert response.status == 200, response.status
        self._stream = connection
        assert connection.sock is not None
        connection.sock.settimeout(None)
        first = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(response, first), name=f"sse {self.name}", daemon=True)
        self._reader.start()
        assert first.wait(WAIT), "the stream's first context never came"

    def _read(self, response: http.client.HTTPResponse, first: threading.Event) -> None:
        data: list[str] = []
        try:
            for raw in response:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif not line and data:
                    message = json.loads("\n".join(data))
                    data.clear()
                    if message.get("method") == CONTEXT_UPDATE:
                        self.contexts.put(message["params"])
                    else:
                        self.notifications.put(message)
                    first.set()
        except Exception:  # the stream was closed under the reader (close())
            return

    # --- tools -------------------------------------------------------------

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

    # --- what the stream brought -------------------------------------------------

    def next_notification(self, timeout: float = WAIT) -> dict[str, Any]:
        try:
            return self.notifications.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no notification within {timeout}s") from None

    def quiet(self, seconds: float = QUIET) -> bool:
        """True when no notification (other than a context update) arrives for `seconds`."""
        try:
            self.notifications.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def next_context(self, timeout: float = WAIT) -> Context:
        try:
            return self.contexts.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no {CONTEXT_UPDATE} within {timeout}s") from None

    def wait_files(self, predicate: Callable[[list[OpenFile]], bool], timeout: float = WAIT) -> list[OpenFile]:
        """Skip context updates until one's openFiles satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        seen: list[list[OpenFile]] = []
        while True:
            try:
                context = self.contexts.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(f"no matching context within {timeout}s; got {seen}") from None
            files = open_files(context)
            if predicate(files):
                return files
            seen.append(files)

    def contexts_within(self, seconds: float) -> list[Context]:
        """The context updates that arrive within `seconds` (and are queued already)."""
        time.sleep(seconds)
        extra = []
        while not self.contexts.empty():
            extra.append(self.contexts.get_nowait())
        return extra

    # --- the end ---------------------------------------------------------------------

    def delete(self) -> None:
        """End the session as a well-behaved client would (the real CLI never does)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            connection.request("DELETE", self.path, headers=self._headers())
            assert connection.getresponse().status == 200
        finally:
            connection.close()

    def close(self) -> None:
        """Drop the stream (again: a no-op)."""
        # Reader first: closing the connection under it races inside http.client.
        if self._stream is not None and self._stream.sock is not None:
            with contextlib.suppress(OSError):
                self._stream.sock.shutdown(socket.SHUT_RDWR)
        if self._reader is not None:
            self._reader.join(WAIT)
        if self._stream is not None:
            self._stream.close()
