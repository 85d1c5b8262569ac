"""A small HTTP/1.1 client on asyncio streams for the daemon's loopback API.

One request per connection (`Connection: close`): the daemon is local, and
the event stream holds its own connection anyway. Bodies are read with
bounds (a JSON answer up to MAX_JSON_BYTES; the event stream in chunks fed
to the SSE parser), and the bearer token goes only into the Authorization
header, which nothing here logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from .. import threads

MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024
CONNECT_TIMEOUT_SECONDS = 10.0
REQUEST_TIMEOUT_SECONDS = 60.0


class HttpError(Exception):
    """The daemon answered something that is not HTTP we can read."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int
    token: str

    def __repr__(self) -> str:  # the token stays out of logs and tracebacks
        return f"Address({self.host!r}, {self.port})"


@dataclass(frozen=True)
class JsonAnswer:
    status: int
    body: Any


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (chunked or not), until the connection ends."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                try:  # readline raises ValueError past the stream's limit (MAX_HEADER_BYTES)
                    size_line = await self.reader.readline()
                    size = int(size_line.split(b";")[0].strip(), 16) if size_line else 0
                except ValueError:
                    raise HttpError("bad chunk size") from None
                if size == 0:
                    return
                left = size
                while left:
                    piece = await self.reader.read(min(left, READ_CHUNK))
                    if not piece:
                        return
                    left -= len(piece)
                    yield piece
                await self.reader.readline()
        else:
            length = self.headers.get("content-length")
            remaining: int | None = int(length) if length and length.isdigit() else None
            while remaining is None or remaining > 0:
                piece = await self.reader.read(READ_CHUNK if remaining is None else min(remaining, READ_CHUNK))
                if not piece:
                    return
                if remaining is not None:
                    remaining -= len(piece)
                yield piece

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


def request_bytes(address: Address, method: str, path: str, headers: Mapping[str, str], body: bytes | None,
                  with_token: bool = True) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {address.host}:{address.port}", "Connection: close"]
    if with_token:
        lines.append(f"Authorization: Bearer {address.token}")
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


@threads.on_chat_loop
async def open_request(
    address: Address,
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
    body: object = None,
    with_token: bool = True,
) -> Response:
    """Send one request and read the answer's status and headers; the body is left to read."""
    payload = None if body is None else json.dumps(body).encode("utf-8")
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(address.host, address.port, limit=MAX_HEADER_BYTES), CONNECT_TIMEOUT_SECONDS
    )
    try:
        writer.write(request_bytes(address, method, path, headers or {}, payload, with_token))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as error:
        writer.close()
        raise HttpError(f"no HTTP answer: {error}") from None
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        writer.close()
        raise HttpError("not an HTTP answer")
    found: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        if name:
            found[name.strip().lower()] = value.strip()
    return Response(int(parts[1]), found, reader, writer)


@threads.on_chat_loop
async def request_json(
    address: Address,
    method: str,
    path: str,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    with_token: bool = True,
    timeout: float = REQUEST_TIMEOUT_SECONDS,
    max_bytes: int = MAX_JSON_BYTES,
) -> JsonAnswer:
    """One request whose answer is JSON (or empty: None), of at most `max_bytes`."""
    async def ask() -> JsonAnswer:
        response = await open_request(address, method, path, headers, body, with_token)
        try:
            data = bytearray()
            async for piece in response.chunks():
                data += piece
                if len(data) > max_bytes:
                    raise HttpError(f"an answer of more than {max_bytes} bytes")
        finally:
            response.close()
        return json_answer(response.status, bytes(data))

    return await asyncio.wait_for(ask(), timeout)


@threads.may_block
def request_json_blocking(address: Address, method: str, path: str, with_token: bool = True,
                          timeout: float = REQUEST_TIMEOUT_SECONDS) -> JsonAnswer:
    """`request_json` for a thread of ours that may wait (a probe, a status):
    no event loop of its own, whose default pool would be a thread nobody
    named (a host name's look-up runs there). Raises HttpError or TimeoutError."""
    connection = http.client.HTTPConnection(address.host, address.port, timeout=timeout)
    headers = {"Connection": "close", "Accept": "application/json"}
    if with_token:
        headers["Authorization"] = f"Bearer {address.token}"
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        data = response.read(MAX_JSON_BYTES + 1)
    except TimeoutError:
        raise
    except (OSError, http.client.HTTPException) as error:
        raise HttpError(f"{method} {path}: {error}") from None
    finally:
        connection.close()
    if len(data) > MAX_JSON_BYTES:
        raise HttpError(f"an answer of more than {MAX_JSON_BYTES} bytes")
    return json_answer(response.status, data)


def json_answer(status: int, data: bytes) -> JsonAnswer:
    """An answer's body as JSON (empty: None; not JSON: its first 200 characters, to say why)."""
    try:
        parsed = json.loads(data) if data.strip() else None
    except ValueError:
        parsed = data[:200].decode("utf-8", "replace")
    return JsonAnswer(status, parsed)
