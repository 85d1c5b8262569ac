"""The chat's MCP servers as the package itself reaches them for a chat on
`qwen serve` (client-MCP, see client_mcp.py): the daemon hands the agent's
JSON-RPC messages over its WebSocket, and a relay passes each to its server
and gives back the server's answer.

- An HTTP server (ACP's `http` entry: the package's IDE tools, or a user's
  `httpUrl`): each message POSTed as streamable HTTP, its `Mcp-Session-Id`
  kept, the answer read as JSON or as an event stream. Its headers (the IDE
  tools' bearer token among them) stay in the relay: they go only into the
  POST to the server, never into a frame, a note or a log.
- A stdio server (a user's `command`): started by the package, one JSON-RPC
  message a line. A request the server itself sends (roots, sampling) is
  answered "not supported": the daemon takes no request back from a client.

Everything read is bounded (MAX_MESSAGE_BYTES a message or a line) and every
wait has a timeout, so a hostile or stuck server costs one error answer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import sys
from collections.abc import Mapping
from typing import Any, Protocol

import aiohttp

from ..cli.processes import start_process
from ..json_types import JsonObject

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
ANSWER_TIMEOUT_SECONDS = 60.0  # the daemon gives up on an answer after 30 s itself
STDERR_LINES = 20
STDERR_LINE_CHARS = 300
SESSION_HEADER = "Mcp-Session-Id"
NOT_SUPPORTED = -32601


class RelayError(Exception):
    """The server gave no answer we can pass on (its words, never its headers)."""


class McpRelay(Protocol):
    async def request(self, payload: JsonObject) -> JsonObject: ...

    async def notify(self, payload: JsonObject) -> None: ...

    async def close(self) -> None: ...


def error_response(request_id: Any, code: int, message: str) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _answer_in_events(body: bytes, request_id: Any) -> JsonObject | None:
    """The answer to `request_id` among an event stream's `data:` events."""
    for event in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
        with contextlib.suppress(ValueError):
            message = json.loads(data) if data else None
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message
    return None


class HttpRelay:
    """One streamable-HTTP MCP server, reached from the chat's loop."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self._url = url
        self._headers = headers
        self._session_id: str | None = None
        self._http: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:  # the headers (a token) stay out of logs and tracebacks
        return f"HttpRelay({self._url!r})"

    async def _post(self, payload: JsonObject) -> tuple[int, str, bytes]:
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=ANSWER_TIMEOUT_SECONDS))
        headers = {**self._headers, "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self._session_id is not None:
            headers[SESSION_HEADER] = self._session_id
        try:
            async with self._http.post(self._url, data=json.dumps(payload), headers=headers) as response:
                given = response.headers.get(SESSION_HEADER)
                if given and len(given) <= 256 and given.isprintable():
                    self._session_id = given
                body = await response.content.read(MAX_MESSAGE_BYTES + 1)
                if len(body) > MAX_MESSAGE_BYTES:
                    raise RelayError(f"an answer of more than {MAX_MESSAGE_BYTES} bytes")
                return response.status, response.headers.get("Content-Type", ""), body
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RelayError(f"the server did not answer ({type(error).__name__})") from None

    async def request(self, payload: JsonObject) -> JsonObject:
        status, content_type, body = await self._post(payload)
        if status >= 400:
            raise RelayError(f"the server answered HTTP {status}")
        if "text/event-stream" in content_type:
            found = _answer_in_events(body, payload.get("id"))
        else:
            try:
                found = json.loads(body)
            except ValueError:
                found = None
        if not isinstance(found, dict):
            raise RelayError("the server's answer is not a JSON-RPC message")
        return found

    async def notify(self, payload: JsonObject) -> None:
        await self._post(payload)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None


class StdioRelay:
    """One stdio MCP server the package starts for the chat (its process group
    of its own, ended with the chat's session)."""

    def __init__(self, command: str, args: list[str], env: Mapping[str, str], cwd: str | None) -> None:
        self._argv = [command, *args]
        self._env = dict(env)
        self._cwd = cwd or None
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[str, asyncio.Future[JsonObject]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._gone: str | None = None

    def __repr__(self) -> str:
        return f"StdioRelay({self._argv[0]!r})"

    async def _started(self) -> asyncio.subprocess.Process:
        if self._gone is not None:
            raise RelayError(self._gone)
        if self._process is None:
            try:
                self._process = await start_process(
                    *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, env=self._env, cwd=self._cwd, limit=MAX_MESSAGE_BYTES,
                    start_new_session=sys.platform != "win32")
            except OSError as error:
                self._gone = f"the server did not start: {error.strerror or error}"
                raise RelayError(self._gone) from None
            self._tasks = [asyncio.create_task(self._read(self._process)),
                           asyncio.create_task(self._read_stderr(self._process))]
        return self._process

    async def _write(self, payload: JsonObject) -> None:
        process = await self._started()
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(payload).encode("utf-8") + b"\n")
            await process.stdin.drain()
        except (OSError, RuntimeError) as error:
            raise RelayError(f"the server took no message ({error})") from None

    async def request(self, payload: JsonObject) -> JsonObject:
        key = json.dumps(payload.get("id"))
        answer: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._pending[key] = answer
        try:
            await self._write(payload)
            return await asyncio.wait_for(answer, ANSWER_TIMEOUT_SECONDS)
        except TimeoutError:
            raise RelayError(f"the server did not answer in {ANSWER_TIMEOUT_SECONDS:.0f} s") from None
        finally:
            self._pending.pop(key, None)

    async def notify(self, payload: JsonObject) -> None:
        await self._write(payload)

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        reason = "the server exited"
        while True:
            try:
                line = await process.stdout.readline()
            except ValueError:  # past the reader's limit: the server is ended, its pipe read to its end
                reason = f"the server wrote a line of more than {MAX_MESSAGE_BYTES} bytes"
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                while await process.stdout.read(65536):
                    pass
                break
            if not line:
                break
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a server's stray output line is no message
            if isinstance(message, dict):
                await self._take(message)
        self._gone = reason + (f": {self.stderr_tail[-1]}" if self.stderr_tail else "")
        for waiting in self._pending.values():
            if not waiting.done():
                waiting.set_exception(RelayError(self._gone))

    async def _take(self, message: JsonObject) -> None:
        if "method" in message:
            if "id" in message:  # the server asks the client: the daemon takes no such request back
                with contextlib.suppress(RelayError):
                    await self._write(error_response(message["id"], NOT_SUPPORTED, "not supported by this client"))
            return
        waiting = self._pending.get(json.dumps(message.get("id")))
        if waiting is not None and not waiting.done():
            waiting.set_result(message)

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        with contextlib.suppress(ValueError):
            async for line in process.stderr:
                self.stderr_tail.append(line.decode("utf-8", "replace").rstrip()[:STDERR_LINE_CHARS])

    async def close(self) -> None:
        process, self._process = self._process, None
        self._gone = self._gone or "the chat's session ended"
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 3)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        # Its pipes read to their end, so their transports close with them.
        _, running = await asyncio.wait(self._tasks, timeout=3)
        for task in running:
            task.cancel()


def relay_for(entry: JsonObject, cwd: str, base_env: Mapping[str, str]) -> McpRelay | None:
    """An ACP `mcpServers` entry's relay (None: a kind not relayed, SSE); a
    stdio server starts in `cwd`, the session's folder, with the daemon's
    environment (`base_env`, the agent's) plus its own `env`, as the agent's would."""
    def pairs(key: str) -> dict[str, str]:
        listed = entry.get(key)
        return {str(pair["name"]): str(pair["value"]) for pair in listed
                if isinstance(pair, dict) and "name" in pair and "value" in pair} if isinstance(listed, list) else {}

    if "command" in entry:
        args = entry.get("args")
        return StdioRelay(str(entry["command"]), [str(arg) for arg in args] if isinstance(args, list) else [],
                          {**base_env, **pairs("env")}, cwd)
    if entry.get("type") == "http" and isinstance(entry.get("url"), str):
        return HttpRelay(str(entry["url"]), pairs("headers"))
    return None
