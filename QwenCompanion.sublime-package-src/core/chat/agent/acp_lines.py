"""The JSON-RPC lines between the editor and one agent process, as the ACP
SDK's message transport (the `Transport` that `acp.connect_to_agent` takes:
`send`, `receive`, `close`). The SDK's own stdio framing is not used because
it holds a line of any length whole, logs a traceback for every line that is
not JSON, dispatches each notification as a task of its own, and keeps the
last message read until the next one arrives. Here:

- a line longer than MAX_MESSAGE_BYTES is skipped piece by piece, never held,
  and reported; when its start shows it is the answer to one of our requests
  (qwen and the SDK write "jsonrpc" and "id" before "result"), that request is
  answered with an error instead, so nothing waits for it forever; a line that
  is not a JSON object is logged once and skipped;
- notifications are validated as the SDK's router would and handed to where
  the client's own go (`AgentNotifications`) as they are read, in order, not
  to the SDK: a streamed answer is thousands of session/update notifications,
  and one task each (the SDK's way) takes five times the CPU per update;
- a message handed to the SDK is emptied once it is handled (a response at
  the next read, a request once answered), so an idle agent's last message (a
  19 MB session list) is not kept;
- qwen names its own methods without the "_" that ACP reserves for
  extensions (its `rewindSession`, `qwen/notify/...`), and the SDK hands only
  "_" methods to `ext_method` / `ext_notification` and sends only "_" ones from
  its own: one "_" is added to what comes in outside the methods the SDK
  routes to the client, and taken off what goes out, so both ends see the
  names as they are on the wire;
- for an agent elsewhere (WSL, a container, SSH) every path field is
  translated here, both ways, and an fs request for a path outside the
  window's folders is answered with an error here (remote_paths.py);
- the traffic is logged at DEBUG, text and file contents left out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from acp import CLIENT_METHODS
from acp.schema import SessionNotification
from pydantic import ValidationError

from ..transcript.work_reports import UNLISTED_KINDS, UnlistedUpdate
from .acp_client import AgentNotifications, WarnOnce
from .remote_paths import RemotePaths, refusal

log = logging.getLogger(__name__)
traffic_log = logging.getLogger(__name__ + ".traffic")

# The longest message taken from the agent (a file it writes, a long
# replay); a longer line is skipped piece by piece, never held whole.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
# How much of a skipped line is kept to find whose answer it was.
SKIPPED_HEAD_BYTES = 4096
# JSON-RPC's "internal error", what the SDK answers when a request fails on its side.
INTERNAL_ERROR = -32603
EXTENSION = "_"
SESSION_UPDATE = CLIENT_METHODS["session_update"]
# The agent's requests the SDK's router gives the client under their ACP names.
ROUTED_BY_THE_SDK = frozenset(CLIENT_METHODS[name] for name in (
    "fs_read_text_file", "fs_write_text_file", "session_request_permission", "terminal_create",
    "terminal_output", "terminal_release", "terminal_wait_for_exit", "terminal_kill",
))


@dataclass(frozen=True)
class SkippedLine:
    """A line longer than MAX_MESSAGE_BYTES: its size and its first bytes."""

    size: int
    head: bytes


def answered_id(head: bytes) -> int | str | None:
    """The id of the response a line starting with `head` is, when its keys
    before "result" or "error" say so unambiguously (an "id" given once, no
    "method"); None for anything else (a request, a notification, an id that
    comes after the result or is cut off)."""
    text = head.decode("utf-8", "ignore")
    decoder = json.JSONDecoder()
    seen: dict[str, Any] = {}

    def after_space(position: int) -> int:
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        return position

    position = after_space(0)
    if not text.startswith("{", position):
        return None
    position += 1
    try:
        while True:
            key, position = decoder.raw_decode(text, after_space(position))
            position = after_space(position)
            if not isinstance(key, str) or key in seen or not text.startswith(":", position):
                return None
            if key in ("result", "error"):
                request_id = seen.get("id")
                valid_id = isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
                return request_id if valid_id and "method" not in seen else None
            seen[key], position = decoder.raw_decode(text, after_space(position + 1))
            position = after_space(position)
            if not text.startswith(",", position):
                return None
            position += 1
    except ValueError:  # cut off or not JSON: whose answer it was is unknown
        return None


def redact(message: Any) -> Any:
    """`message` with text, file contents and secrets replaced by their size,
    for the traffic log."""
    if isinstance(message, dict):
        out: dict[str, Any] = {}
        for key, value in message.items():
            if key in ("text", "content", "oldText", "newText", "data", "blob") and isinstance(value, str):
                out[key] = f"<{len(value)} chars>"
            elif key.lower() in ("token", "apikey", "api_key", "authorization", "env", "headers"):
                out[key] = "<hidden>"
            else:
                out[key] = redact(value)
        return out
    if isinstance(message, list):
        return [redact(item) for item in message]
    return message


def trace(arrow: str, message: dict[str, Any]) -> None:
    """The ACP traffic at DEBUG, text and file contents left out."""
    if traffic_log.isEnabledFor(logging.DEBUG):
        traffic_log.debug("%s %s", arrow, json.dumps(redact(message))[:2000])


class AgentLines:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, notifications: AgentNotifications,
                 on_oversized: Callable[[int], None], warn_once: WarnOnce,
                 remote_paths: RemotePaths | None = None) -> None:
        self._reader = reader
        self._remote_paths = remote_paths
        self._writer = writer
        self._notifications = notifications
        self._on_oversized = on_oversized
        self._warn_once = warn_once
        self._warned_not_json = False
        self._handled_response: dict[str, Any] | None = None
        self._unanswered: dict[Hashable, deque[dict[str, Any]]] = {}
        # The id of the request each task of ours has out (one at a time): what `$/cancel_request` names.
        self.request_ids: weakref.WeakKeyDictionary[asyncio.Task[Any], Any] = weakref.WeakKeyDictionary()

    # --- out ----------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        task = asyncio.current_task()
        if isinstance(method, str) and "id" in message and task is not None:
            self.request_ids[task] = message["id"]
        if isinstance(method, str) and method.startswith(EXTENSION):
            message = {**message, "method": method[len(EXTENSION):]}
        elif method is None and "id" in message:
            self._answered(message["id"])
        if self._remote_paths is not None:
            message = self._remote_paths.outgoing(message)
        await self._write(message)

    async def _write(self, message: dict[str, Any]) -> None:
        trace("->", message)
        self._writer.write((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
        await self._writer.drain()

    async def close(self) -> None:
        """Nothing of its own to close: the bridge closes the agent's pipes."""

    # --- in -----------------------------------------------------------------

    async def receive(self) -> dict[str, Any] | None:
        if self._handled_response is not None:  # the SDK took its result when it was read
            self._handled_response.clear()
            self._handled_response = None
        while (message := await self._next_message()) is not None:
            if self._remote_paths is not None:
                translated = self._remote_paths.incoming(message)
                if isinstance(translated, str):  # an fs request for a path outside the folders
                    log.warning("refused the agent's %.40s: %s", message.get("method"), translated)
                    await self._write(refusal(message.get("id"), translated))
                    continue
                message = translated
            method = message.get("method")
            if method is None:
                self._handled_response = message
                return message
            if "id" not in message:
                self._notified(method, message.get("params"))
                del message  # not held while the next line is awaited
                continue
            if not (isinstance(method, str) and method in ROUTED_BY_THE_SDK):
                message["method"] = f"{EXTENSION}{method}"  # a name that is no string is unknown all the same
            self._unanswered.setdefault(self._key(message["id"]), deque()).append(message)
            return message
        return None

    def _notified(self, method: Any, params: Any) -> None:
        payload = params if isinstance(params, dict) else {}
        try:
            if method != SESSION_UPDATE:
                self._notifications.ext_notification(str(method), payload)
                return
            update = payload.get("update")
            kind = update.get("sessionUpdate") if isinstance(update, dict) else None
            if isinstance(update, dict) and kind in UNLISTED_KINDS and isinstance(payload.get("sessionId"), str):
                # Newer than the SDK's schema: passed on as sent, routed by session like the rest.
                self._notifications.session_update(SessionNotification.model_construct(
                    session_id=payload["sessionId"], update=UnlistedUpdate(str(kind), update), field_meta=None))
                return
            try:
                notification = SessionNotification.model_validate(payload)
            except ValidationError as error:
                self._warn_once(f"update:{kind}", "ignored a malformed session/update (%s): %s", kind or "?", error)
                return
            self._notifications.session_update(notification)
        except Exception:
            log.exception("handling a %.100s notification failed", method)

    def _answered(self, request_id: Any) -> None:
        waiting = self._unanswered.get(self._key(request_id))
        if waiting:
            waiting.popleft().clear()  # the SDK read it when it started answering
            if not waiting:
                del self._unanswered[self._key(request_id)]

    @staticmethod
    def _key(request_id: Any) -> Hashable:
        return request_id if isinstance(request_id, Hashable) else repr(request_id)  # JSON-RPC: a string or a number

    async def _next_message(self) -> dict[str, Any] | None:
        """The next JSON object the agent sent, or None at the end."""
        while True:
            line = await self._read_line()
            if isinstance(line, SkippedLine):
                self._on_oversized(line.size)
                request_id = answered_id(line.head)
                if request_id is None:  # whose answer it was is unknown: nothing is failed on a guess
                    continue
                megabytes = line.size / (1024 * 1024)
                return {"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": INTERNAL_ERROR,
                    "message": f"the agent's answer was {megabytes:.0f} MB, more than the "
                               f"{MAX_MESSAGE_BYTES // (1024 * 1024)} MB the editor takes"}}
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):  # nested deeper than the decoder goes: not a message either
                message = None
            if isinstance(message, dict):
                trace("<-", message)
                return message
            if not self._warned_not_json:
                self._warned_not_json = True
                log.warning("skipped a line from the agent that is not a JSON-RPC message: %.200r "
                            "(further ones are skipped silently)", line)

    async def _read_line(self) -> bytes | SkippedLine:
        """The next line, or b"" at the end; a line longer than
        MAX_MESSAGE_BYTES is read to its end and dropped, only its size and
        first bytes kept."""
        reader = self._reader
        pieces: list[bytes] = []
        head = b""
        held = 0
        while True:
            try:
                piece = await reader.readuntil(b"\n")
                ended = True
            except asyncio.LimitOverrunError as error:
                piece = await reader.readexactly(error.consumed)
                ended = False
            except asyncio.IncompleteReadError as error:
                piece = error.partial
                ended = True
            if len(head) < SKIPPED_HEAD_BYTES:
                head += piece[:SKIPPED_HEAD_BYTES - len(head)]
            held += len(piece)
            if held <= MAX_MESSAGE_BYTES:
                pieces.append(piece)
            elif pieces:
                pieces.clear()  # too long: what was kept goes, the rest is skipped as it comes
            if ended:
                if held > MAX_MESSAGE_BYTES:
                    if piece.endswith(b"\n"):
                        return SkippedLine(held, head)
                    self._on_oversized(held)  # the output's last line: the agent is gone, nothing is answered
                    return b""
                return b"".join(pieces)
