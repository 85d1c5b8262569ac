"""The benchmark's MCP client: raw HTTP/1.1 over one keep-alive socket.

Both servers are measured through this same client, so it does as little as it
can (requests are encoded once, responses parsed just enough), which keeps
its own cost small next to the servers'.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
TIMEOUT = 60.0


class HttpError(Exception):
    pass


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of a JSON or an SSE answer."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            parser = SseParser()
            return parser.feed(self.body)
        return [json.loads(self.body)] if self.body else []


class SseParser:
    """Splits an SSE byte stream into the JSON of its `data:` events."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        events: list[dict[str, Any]] = []
        while True:
            end = self._buffer.find(b"\n\n")
            if end < 0:
                return events
            block, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
            lines = [line[5:].lstrip() for line in block.split(b"\n") if line.startswith(b"data:")]
            if lines:
                events.append(json.loads(b"\n".join(lines)))


class Dechunker:
    """Undoes HTTP/1.1 chunked transfer coding, incrementally. Gives views of
    the data fed in, so a chunked body costs the client one join, as a body
    of known length does: the framing is not charged to the server."""

    def __init__(self) -> None:
        self._buffer = b""  # an unfinished chunk-size line
        self._left = 0  # bytes of the current chunk still to come
        self._skip = 0  # bytes of the CRLF after a chunk still to drop
        self.done = False

    def feed(self, data: bytes) -> list[memoryview]:
        if self._buffer:
            data, self._buffer = self._buffer + data, b""
        view = memoryview(data)
        parts: list[memoryview] = []
        position, end = 0, len(data)
        while not self.done and position < end:
            if self._skip:
                dropped = min(self._skip, end - position)
                position += dropped
                self._skip -= dropped
            elif self._left:
                take = min(self._left, end - position)
                parts.append(view[position : position + take])
                position += take
                self._left -= take
                if self._left == 0:
                    self._skip = 2
            else:
                line_end = data.find(b"\r\n", position)
                if line_end < 0:
                    self._buffer = data[position:]
                    break
                size = int(data[position:line_end].split(b";")[0], 16)
                position = line_end + 2
                self._left = size
                self.done = size == 0
        return parts


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1:port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    def close(self) -> None:
        self.sock.close()

    def recv(self) -> bytes:
        data = self.sock.recv(1 << 16)
        if not data:
            raise HttpError("the server closed the connection")
        return data

    def read_head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self._buffer:
            self._buffer += self.recv()
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    def read_response(self) -> Response:
        status, headers = self.read_head()
        if "content-length" in headers:
            length = int(headers["content-length"])
            # Joined once, as chunked bodies are: `+=` per read would copy a
            # 12 MB answer ~200 times and charge that to the server.
            parts, received = [self._buffer], len(self._buffer)
            while received < length:
                parts.append(self.recv())
                received += len(parts[-1])
            data = b"".join(parts)
            body, self._buffer = data[:length], data[length:]
        elif "chunked" in headers.get("transfer-encoding", ""):
            dechunker = Dechunker()
            views = dechunker.feed(self._buffer)
            self._buffer = b""
            while not dechunker.done:
                views += dechunker.feed(self.recv())
            body = b"".join(views)
        else:
            body = self._buffer
            self._buffer = b""
        return Response(status, headers, body)

    def exchange(self, request: bytes) -> Response:
        self.sock.sendall(request)
        return self.read_response()

    def take_buffer(self) -> bytes:
        data, self._buffer = self._buffer, b""
        return data


class Stream:
    """An open GET /mcp SSE stream: its socket and the events read so far."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.sock = connection.sock
        status, headers = connection.read_head()
        if status != 200:
            raise HttpError(f"GET /mcp answered {status}")
        self._chunked = "chunked" in headers.get("transfer-encoding", "")
        self._dechunker = Dechunker()
        self._parser = SseParser()
        self.pending: list[dict[str, Any]] = self._events(connection.take_buffer())

    def _events(self, data: bytes) -> list[dict[str, Any]]:
        return self._parser.feed(b"".join(self._dechunker.feed(data)) if self._chunked else data)

    def read_available(self) -> list[dict[str, Any]]:
        """Read once from the socket (it must be readable) and return new events."""
        events = self.pending + self._events(self.connection.recv())
        self.pending = []
        return events

    def next_event(self) -> dict[str, Any]:
        while not self.pending:
            self.pending = self._events(self.connection.recv())
        return self.pending.pop(0)


class McpSession:
    """One MCP session (what one CLI holds), with prebuilt request bytes."""

    def __init__(self, port: int, token: str, name: str = "bench") -> None:
        self.port = port
        self.token = token
        self.name = name
        self.session_id = ""
        self.version = PROTOCOL_VERSION
        self.connection = Connection(port)
        self._ids = 0

    def _head(self, method: str, length: int | None, accept: str) -> bytes:
        lines = [
            f"{method} /mcp HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            f"Authorization: Bearer {self.token}",
            f"Accept: {accept}",
        ]
        if self.session_id:
            lines += [f"Mcp-Session-Id: {self.session_id}", f"Mcp-Protocol-Version: {self.version}"]
        if length is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {length}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def build(self, method: str, params: dict[str, Any] | None = None, *, notification: bool = False) -> bytes:
        """A POST of one JSON-RPC message, ready to send."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if not notification:
            self._ids += 1
            message["id"] = self._ids
        if params is not None:
            message["params"] = params
        body = json.dumps(message, ensure_ascii=False).encode()
        return self._head("POST", len(body), "application/json, text/event-stream") + body

    def initialize(self) -> McpSession:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": self.name, "version": "1"},
        }
        response = self.connection.exchange(self.build("initialize", params))
        if response.status != 200:
            raise HttpError(f"initialize answered {response.status}: {response.body[:200]!r}")
        self.session_id = response.headers["mcp-session-id"]
        self.version = response.messages()[0]["result"]["protocolVersion"]
        response = self.connection.exchange(self.build("notifications/initialized", notification=True))
        if response.status != 202:
            raise HttpError(f"initialized answered {response.status}")
        return self

    def timed(self, request: bytes) -> tuple[float, Response]:
        """Send a prebuilt request; (seconds until the whole answer was read, answer)."""
        start = time.perf_counter()
        response = self.connection.exchange(request)
        elapsed = time.perf_counter() - start
        if response.status != 200:
            raise HttpError(f"answered {response.status}: {response.body[:200]!r}")
        return elapsed, response

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        _, response = self.timed(self.build(method, params))
        message = response.messages()[-1]
        if "error" in message:
            raise HttpError(f"{method}: {message['error']}")
        result: dict[str, Any] = message["result"]
        return result

    def open_stream(self) -> Stream:
        """A GET stream on a connection of its own."""
        connection = Connection(self.port)
        connection.sock.sendall(self._head("GET", None, "text/event-stream"))
        return Stream(connection)

    def close(self) -> None:
        self.connection.close()
