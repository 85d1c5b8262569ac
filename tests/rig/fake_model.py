"""An OpenAI-compatible fake model server for driving the real Qwen Code CLI.

The CLI talks to it through ``OPENAI_BASE_URL``. A test queues scripted
replies (text or tool calls); every request body is recorded so the test can
assert on what the CLI sent (prompt text, IDE context, tool results).

Two ways to run it:
- async tests: ``async with FakeModel() as model:`` (serves on the running loop);
- sync tests: ``with FakeModel() as model:`` (own loop in a background thread).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JSON = dict[str, Any]


@dataclass
class ToolCall:
    name: str
    arguments: JSON
    id: str | None = None  # None: a fresh "call_N" each time it is served


@dataclass
class Reply:
    """One assistant turn: optional text, then optional tool calls."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Characters per streamed content delta; small values exercise the
    # CLI's incremental rendering.
    chunk_size: int = 16
    # Seconds between streamed content deltas (a slow model, to cancel mid-stream).
    delay: float = 0.0
    # Set by the test when the answer may end: the stream stops before its
    # last content delta until then (a turn that runs as long as the test
    # needs it to, however loaded the machine), or until the client leaves.
    hold: threading.Event | None = None
    # Streamed before the text as `reasoning_content` deltas (a thinking model).
    reasoning: str = ""
    # The tokens the answer reports (OpenAI `usage`): prompt, completion, cached prompt.
    usage: tuple[int, int, int] = (10, 5, 0)


Responder = Callable[[JSON], Reply | str | None]
HOLD_LIMIT = 120.0  # a hang guard: a test that never releases its reply fails, it does not hang


async def held(hold: threading.Event, request: web.Request) -> None:
    """Until `hold` is set, the client has gone (a cancelled turn) or HOLD_LIMIT passed."""
    deadline = time.monotonic() + HOLD_LIMIT
    while not hold.is_set() and time.monotonic() < deadline:
        if request.transport is None or request.transport.is_closing():
            return
        await asyncio.sleep(0.02)


def text(content: str) -> Reply:
    return Reply(text=content)


def tool_call(name: str, arguments: JSON, text: str = "") -> Reply:
    return Reply(text=text, tool_calls=[ToolCall(name, dict(arguments))])


def read_file(file_path: str) -> Reply:
    # 0.24.4 names the argument file_path (older releases: absolute_path).
    return tool_call("read_file", {"file_path": file_path})


def edit(file_path: str, old_string: str, new_string: str) -> Reply:
    return tool_call(
        "edit",
        {"file_path": file_path, "old_string": old_string, "new_string": new_string},
    )


def write_file(file_path: str, content: str) -> Reply:
    return tool_call("write_file", {"file_path": file_path, "content": content})


def is_agent_request(body: JSON) -> bool:
    """The main agent turn carries the tool list; side calls (titles,
    summaries, classifiers) do not. Only agent turns consume the queue."""
    return bool(body.get("tools"))


def message_text(message: JSON) -> str:
    """Text of an OpenAI chat message whose content is a string or parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def user_texts(body: JSON) -> list[str]:
    return [message_text(m) for m in body.get("messages", []) if m.get("role") == "user"]


def tool_results(body: JSON) -> list[JSON]:
    """The ``role: tool`` messages of a request (the CLI's tool outputs)."""
    return [m for m in body.get("messages", []) if m.get("role") == "tool"]


class FakeModel:
    def __init__(self, default_text: str = "OK.", model: str = "fake-model") -> None:
        self.default_text = default_text
        self.model = model
        self._queue: deque[Reply] = deque()
        self._responder: Responder | None = None
        self._requests: list[JSON] = []
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    # -- scripting -------------------------------------------------------
    def queue(self, *replies: Reply | str) -> None:
        with self._cond:
            self._queue.extend(text(r) if isinstance(r, str) else r for r in replies)

    def set_responder(self, responder: Responder | None) -> None:
        """``responder(body)`` may return a reply for any request; ``None``
        falls through to the queue (agent turns) or the default text."""
        with self._cond:
            self._responder = responder

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    # -- recorded requests ----------------------------------------------
    @property
    def requests(self) -> list[JSON]:
        with self._cond:
            return list(self._requests)

    @property
    def agent_requests(self) -> list[JSON]:
        return [r for r in self.requests if is_agent_request(r)]

    def wait_for_requests(self, n: int, timeout: float = 30.0, agent_only: bool = True) -> list[JSON]:
        """Block until ``n`` (agent) requests have arrived; raise on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = [r for r in self._requests if not agent_only or is_agent_request(r)]
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"fake model got {len(got)} of {n} requests in {timeout}s")
                self._cond.wait(left)

    async def wait_for_requests_async(
        self, n: int, timeout: float = 30.0, agent_only: bool = True
    ) -> list[JSON]:
        # Polls instead of blocking so the serving loop (maybe this one) runs.
        deadline = time.monotonic() + timeout
        while True:
            got = [r for r in self.requests if not agent_only or is_agent_request(r)]
            if len(got) >= n:
                return got
            if time.monotonic() >= deadline:
                raise TimeoutError(f"fake model got {len(got)} of {n} requests in {timeout}s")
            await asyncio.sleep(0.05)

    # -- addresses --------------------------------------------------------
    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("FakeModel is not running")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle on the current loop ----------------------------------
    async def start_async(self) -> FakeModel:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        # Bind the socket ourselves so the OS-chosen port is known.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop_async(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._port = 0

    async def __aenter__(self) -> FakeModel:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # -- lifecycle in a background thread (sync tests) -------------------
    def start(self) -> FakeModel:
        loop = asyncio.new_event_loop()
        started = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as e:  # surface bind errors to start()
                errors.append(e)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._thread_loop = loop
        self._thread = threading.Thread(target=run, name="fake-model", daemon=True)
        self._thread.start()
        if not started.wait(10) or errors:
            raise RuntimeError(f"FakeModel failed to start: {errors}")
        return self

    def stop(self) -> None:
        if self._thread is None or self._thread_loop is None:
            return
        self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
        self._thread.join(10)
        self._thread = None
        self._thread_loop = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP handlers ----------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "rig"}]}
        )

    def _pick(self, body: JSON) -> Reply:
        with self._cond:
            self._requests.append(body)
            self._cond.notify_all()
            responder = self._responder
        if responder is not None:
            picked = responder(body)
            if picked is not None:
                return text(picked) if isinstance(picked, str) else picked
        with self._cond:
            if is_agent_request(body) and self._queue:
                return self._queue.popleft()
        return text(self.default_text)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "bad json"}}, status=400)
        reply = self._pick(body)
        # Fresh ids per serving (a reply object may be queued twice).
        ids = [c.id or f"call_{next(self._ids)}" for c in reply.tool_calls]
        finish = "tool_calls" if reply.tool_calls else "stop"
        prompt, completion, cached = reply.usage
        usage: JSON = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                       "prompt_tokens_details": {"cached_tokens": cached}}
        cid = f"chatcmpl-{next(self._ids)}"
        model = body.get("model") or self.model
        if not body.get("stream"):
            message: JSON = {"role": "assistant", "content": reply.text or None}
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c, call_id in zip(reply.tool_calls, ids, strict=True)
                ]
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )

        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)

        async def send(delta: JSON, finish_reason: str | None = None) -> None:
            chunk = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        step = max(1, reply.chunk_size)
        for i in range(0, len(reply.reasoning), step):
            await send({"reasoning_content": reply.reasoning[i : i + step]})
        for i in range(0, len(reply.text), step):
            if i + step >= len(reply.text) and reply.hold is not None:
                await held(reply.hold, request)
            await send({"content": reply.text[i : i + step]})
            if reply.delay:
                await asyncio.sleep(reply.delay)
        for index, (call, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True)):
            args = json.dumps(call.arguments)
            await send(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            # Arguments in two pieces, as real servers split them.
            half = len(args) // 2
            for piece in (args[:half], args[half:]):
                await send({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        await send({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage_chunk: JSON = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": usage,
            }
            await resp.write(f"data: {json.dumps(usage_chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp
