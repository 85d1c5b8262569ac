"""One chat session on a `qwen serve` daemon, with ACP-shaped messages.

What the daemon streams (0.24.4, `GET /session/:id/events`) are envelopes
`{id, v, type, data, promptId?, originatorClientId?}`. This module turns them
into what the stdio transport hands the chat:
- `session_update`: `data` is ACP's `session/update` params `{sessionId, update}`;
- `permission_request`: `data` is ACP's `session/request_permission` params plus
  `requestId`; the answer (ACP's `{outcome: ...}`) is posted to
  `POST /session/:id/permission/:requestId`; `permission_resolved` (another
  client answered first) withdraws the question;
- `turn_complete` / `turn_error` end the prompt of the same `promptId`
  (`POST /session/:id/prompt` answers 202 with that id at once);
- `session_died` ends the session;
- a steer (`POST /session/:id/mid-turn-message`, refused with `session_idle`
  when no turn runs) is taken by the agent after the turn's next tool batch,
  before its next model request (0.24.4 adds it to that request as
  "[User message received during tool execution]: ..."), which the daemon
  says with `mid_turn_message_injected` (no echo of it as a prompt); a turn
  that ends before that leaves it to the daemon, which sends it as a turn of
  its own (`pending_prompt_started` with the steer's id as its promptId, then
  the usual echo and answer). Either is handed to `steered` once.

A chat that attaches to a session the daemon already had (a reload, another
window) reads it from the start of the daemon's ring (`Last-Event-ID: 0`):
every event the ring holds comes again, then the id-less `replay_complete`
(`state_resync_required` first when the ring no longer holds the start), and
then live events; `caught_up` is set at `replay_complete`. Live, the echo of a
prompt (`user_message_chunk`) is another client's when its envelope's
`originatorClientId` is not ours: it goes to `prompt_elsewhere`; our own echo
is dropped (the chat showed the prompt when it was sent).

The stream is read with `Last-Event-ID`: an event whose id is not above the
last one handed over is a replay already shown and is dropped, so a reattach
shows no line twice (ids count within one run of the daemon, its
`X-Qwen-Event-Epoch`: a new run starts the count again). A daemon that only replays (more than MAX_STALE_EVENTS
old events in a row), sends events of another session, or lines too long, is
bounded: those are dropped and said once through `refused`.

Runs on the chat's asyncio thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from .. import threads
from .http import Address, HttpError, JsonAnswer, open_request, request_json
from .sse import SseEvent, SseParser
from .steer import steer_of

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]

MAX_STEERS_SHOWN = 1000  # steer ids remembered so a replayed injection is not shown twice
MAX_STALE_EVENTS = 10_000  # replayed events in a row before the stream is given up
MAX_RESTORE_BYTES = 64 * 1024 * 1024  # a load's answer holds the whole conversation
RESTORE_SECONDS = 120.0  # a load starts an agent and reads the conversation from disk
MAX_REPLAYED = 100_000  # events of a load's answer handed over (the answer itself is bounded by size)
RECONNECT_DELAYS = (0.2, 0.5, 1.0, 2.0, 5.0)
CLIENT_ID_HEADER = "X-Qwen-Client-Id"
CONNECT_WAIT_SECONDS = 30.0
CATCH_UP_SECONDS = 30.0  # a daemon that never ends its replay: the chat goes on without the mark


class ServeError(Exception):
    """The daemon refused a request; the message says what it answered."""


class SessionGone(ServeError):
    """The daemon no longer knows the session (it died, or the daemon restarted)."""


class ServeEvents(Protocol):
    def session_update(self, params: JsonObject) -> None:
        """ACP `session/update` params."""

    def request_permission(self, params: JsonObject) -> Awaitable[JsonObject]:
        """ACP `session/request_permission` params; returns ACP's answer `{outcome: ...}`."""

    def prompt_elsewhere(self, params: JsonObject) -> None:
        """ACP `session/update` params of a live `user_message_chunk` another client sent."""

    def refused(self, message: str) -> None:
        """Something the daemon sent was dropped: tell the user (once per kind)."""

    def steered(self, params: JsonObject) -> None:
        """A steer entered the session: `{sessionId, messageId, text, late}`;
        `late`: the turn had ended, so it went as a turn of its own."""


@dataclass(frozen=True)
class TurnResult:
    stop_reason: str


def _path(session_id: str, tail: str = "") -> str:
    return f"/session/{quote(session_id, safe='')}{tail}"


def _failed(answer: JsonAnswer, what: str) -> ServeError:
    body = answer.body
    detail = body.get("error") if isinstance(body, dict) else body
    if answer.status == 404:
        return SessionGone(f"{what}: the daemon does not know this session ({detail})")
    return ServeError(f"{what}: HTTP {answer.status} {detail}")


class DaemonSession:
    def __init__(self, address: Address, session_id: str, client_id: str | None, events: ServeEvents,
                 last_event_id: int = 0, epoch: str | None = None, attached: bool = False) -> None:
        self.address = address
        self.session_id = session_id
        self.client_id = client_id
        self.attached = attached  # the daemon had the session before this client asked for it
        self.caught_up = asyncio.Event()  # set once a replay asked by `start` was handed over
        self.last_event_id = last_event_id
        self.epoch = epoch  # the daemon's run (X-Qwen-Event-Epoch) the event ids count in
        self._events = events
        self._turns: dict[str, asyncio.Future[TurnResult]] = {}
        self._early_ends: dict[str, JsonObject] = {}  # a turn's end read before its 202 was
        self._permissions: dict[str, asyncio.Task[None]] = {}
        self._said: set[str] = set()
        self._steers: dict[str, str] = {}  # our steers the daemon holds, by messageId: their text
        self._steers_shown: dict[str, None] = {}  # ids handed to `steered`, oldest first
        self._closed = False
        self._reader: asyncio.Task[None] | None = None
        self.gone: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        # Set while the event stream is open: the daemon streams only to readers
        # connected when an event happens (or asking for it by Last-Event-ID).
        self.connected = asyncio.Event()
        self._replaying_answer = False  # handing over a load's replay (`replay`)
        self._replayed_up_to = 0

    # --- opening ------------------------------------------------------------

    @classmethod
    @threads.on_chat_loop
    async def open(cls, address: Address, cwd: str, events: ServeEvents, own: bool = False) -> DaemonSession:
        """`POST /session` for `cwd` (the daemon's session of that folder:
        created, or attached to when another client has it); `own`: a new
        session of its own (`sessionScope: "thread"`), for a further chat."""
        body_sent: JsonObject = {"cwd": cwd, **({"sessionScope": "thread"} if own else {})}
        answer = await request_json(address, "POST", "/session", body_sent)
        body = answer.body
        if answer.status != 200 or not isinstance(body, dict) or not isinstance(body.get("sessionId"), str):
            raise _failed(answer, "POST /session")
        client_id = body.get("clientId")
        return cls(address, body["sessionId"], client_id if isinstance(client_id, str) else None, events,
                   attached=body.get("attached") is True)

    @classmethod
    @threads.on_chat_loop
    async def restore(cls, address: Address, session_id: str, cwd: str, events: ServeEvents,
                      action: str) -> tuple[DaemonSession, JsonObject]:
        """`POST /session/:id/load` or `/resume` (`action`): an earlier session
        back on the daemon (from its disk after a restart, or attached to when
        it still runs). Its answer: `{attached, clientId, lastEventId,
        eventEpoch}`, `state` (ACP's modes, models, configOptions) when it came
        from disk, and for a load `compactedReplay`, the conversation's events
        up to `lastEventId`. Live events are read from there on (`start`)."""
        answer = await request_json(address, "POST", _path(session_id, f"/{action}"), {"cwd": cwd},
                                    timeout=RESTORE_SECONDS, max_bytes=MAX_RESTORE_BYTES)
        body = answer.body
        if answer.status != 200 or not isinstance(body, dict) or body.get("sessionId") != session_id:
            raise _failed(answer, f"POST {action}")
        client_id = body.get("clientId")
        last_event_id = body.get("lastEventId")
        epoch = body.get("eventEpoch")
        session = cls(address, session_id, client_id if isinstance(client_id, str) else None, events,
                      last_event_id=last_event_id if isinstance(last_event_id, int) and last_event_id > 0 else 0,
                      epoch=epoch if isinstance(epoch, str) else None, attached=body.get("attached") is True)
        return session, body

    def _headers(self) -> dict[str, str]:
        return {CLIENT_ID_HEADER: self.client_id} if self.client_id else {}

    # --- the event stream ---------------------------------------------------

    @property
    def started(self) -> bool:
        return self._reader is not None

    @property
    def replaying(self) -> bool:
        """Reading the ring from its start, until `replay_complete`, or
        handing over a load's `compactedReplay`."""
        return self._replaying_answer or (self.started and not self.caught_up.is_set())

    def replay(self, envelopes: object) -> int:
        """A load's `compactedReplay` (envelopes as the stream sends them),
        handed over as a replay before `start`: how many were taken. Ids at or
        below the cursor were shown already, and none is kept past MAX_REPLAYED."""
        if not isinstance(envelopes, list):
            return 0
        taken = 0
        self._replaying_answer = True
        try:
            for envelope in envelopes[:MAX_REPLAYED]:
                event_id = envelope.get("id") if isinstance(envelope, dict) else None
                if isinstance(event_id, int) and event_id <= self._replayed_up_to:
                    continue
                if isinstance(event_id, int):
                    self._replayed_up_to = event_id
                taken += 1
                self._handle(envelope)
        finally:
            self._replaying_answer = False
        self.last_event_id = max(self.last_event_id, self._replayed_up_to)  # live events count on from there
        if len(envelopes) > MAX_REPLAYED:
            self._say("replay", f"the daemon's replay held more than {MAX_REPLAYED} events: the rest were dropped")
        return taken

    def start(self, replay: bool = False) -> None:
        """Read the session's events (and read them again after a dropped
        connection) until `close()`; with `replay`, from the start of the
        daemon's ring (see `caught_up`)."""
        if replay:
            self.last_event_id = 0
        else:
            self.caught_up.set()
        self._reader = asyncio.ensure_future(self._read_events())

    @threads.on_chat_loop
    async def catch_up(self) -> None:
        """Wait until the replay asked by `start(replay=True)` has been handed
        over (or the session ended, or the daemon never marked the end)."""
        await self._until(self.caught_up, CATCH_UP_SECONDS)
        if not self.caught_up.is_set() and not self.gone.done():
            self._say("replay-end", f"the daemon did not finish replaying the conversation within "
                      f"{CATCH_UP_SECONDS:.0f} s: what came meanwhile is shown as it comes")
        self.caught_up.set()

    @threads.on_chat_loop
    async def _until(self, event: asyncio.Event, seconds: float) -> None:
        """Wait for `event`, or the session's end, at most `seconds`."""
        waiting: asyncio.Future[object] = asyncio.ensure_future(event.wait())
        ended: asyncio.Future[object] = asyncio.ensure_future(asyncio.shield(self.gone))
        try:
            await asyncio.wait([waiting, ended], timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            ended.cancel()

    @threads.on_chat_loop
    async def _read_events(self) -> None:
        failures = 0
        while not self._closed:
            try:
                # A stream that brought nothing new counts as a failure: a daemon
                # that closes at once, or only replays, is asked again ever less often.
                failures = 0 if await self._stream_once() else failures + 1
            except SessionGone as gone:
                self._end(str(gone))
                return
            except (OSError, HttpError, asyncio.IncompleteReadError, ServeError) as error:
                log.info("the event stream of session %s broke: %s", self.session_id, error)
                failures += 1
            if self._closed or self.gone.done():
                return
            await asyncio.sleep(self.reconnect_delay(failures))

    @staticmethod
    def reconnect_delay(failures: int) -> float:
        return RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]

    @threads.on_chat_loop
    async def _stream_once(self) -> int:
        """Read one connection's events; how many new ones it brought."""
        headers = {"Accept": "text/event-stream", **self._headers()}
        if self.last_event_id or self.replaying:  # "0": the whole ring
            headers["Last-Event-ID"] = str(self.last_event_id)
        response = await open_request(self.address, "GET", _path(self.session_id, "/events"), headers)
        try:
            if response.status != 200:
                data = bytearray()
                async for piece in response.chunks():
                    data += piece
                    if len(data) >= 4096:  # enough to say why; the rest may never end
                        break
                body: Any = bytes(data[:4096]).decode("utf-8", "replace")
                with contextlib.suppress(ValueError):
                    body = json.loads(body)
                raise _failed(JsonAnswer(response.status, body), "GET events")
            self._check_epoch(response.headers.get("x-qwen-event-epoch"))
            self.connected.set()
            parser = SseParser()
            stale = fresh = 0
            async for piece in response.chunks():
                for event in parser.feed(piece):
                    if event.id is not None and event.id <= self.last_event_id:
                        stale += 1
                        if stale > MAX_STALE_EVENTS:
                            self._say("replay", f"the daemon replayed more than {MAX_STALE_EVENTS} old events "
                                      "in a row: the stream was dropped")
                            return fresh
                        continue
                    stale, fresh = 0, fresh + 1
                    if event.id is not None:
                        self.last_event_id = event.id
                    self._dispatch(event)
                    if self.gone.done():
                        return fresh
            return fresh
        finally:
            self.connected.clear()
            response.close()

    def _check_epoch(self, epoch: str | None) -> None:
        """Event ids restart with each run of the daemon: after a restart the
        old cursor would hide the new run's events as replays."""
        if epoch and self.epoch and epoch != self.epoch:
            self.last_event_id = 0
            self._say("epoch", "the daemon was restarted: what it streamed before is gone")
        self.epoch = epoch or self.epoch

    @threads.on_chat_loop
    def _dispatch(self, event: SseEvent) -> None:
        if event.oversized:
            self._say("oversized", "the daemon sent an event too large to read: it was dropped")
            return
        try:
            envelope = json.loads(event.data)
        except ValueError:
            self._say("malformed", "the daemon sent an event that is not JSON: it was dropped")
            return
        self._handle(envelope)

    @threads.on_chat_loop
    def _handle(self, envelope: object) -> None:
        if not isinstance(envelope, dict) or not isinstance(envelope.get("data"), dict):
            self._say("malformed", "the daemon sent an event without data: it was dropped")
            return
        kind, data = envelope.get("type"), envelope["data"]
        session_id = data.get("sessionId")
        if session_id is not None and session_id != self.session_id:
            self._say("foreign", "the daemon sent events of another session: they were dropped")
            return
        handler = self._handlers().get(kind if isinstance(kind, str) else "")
        if handler is not None:
            handler(envelope, data)

    def _handlers(self) -> dict[str, Callable[[JsonObject, JsonObject], None]]:
        return {
            "session_update": self._session_update,
            "replay_complete": self._replay_complete,
            "state_resync_required": lambda _envelope, data: self._say(
                "resync", "the daemon no longer holds the start of this conversation: earlier lines are missing"),
            "permission_request": self._permission_asked,
            "permission_resolved": self._permission_resolved,
            "turn_complete": self._turn_ended,
            "turn_error": self._turn_ended,
            "session_died": lambda _envelope, data: self._end(f"the daemon's session ended ({data.get('reason')})"),
            "client_evicted": lambda _envelope, _data: None,  # the stream closes; the reader reconnects
            "mid_turn_message_injected": self._steers_injected,
            "pending_prompt_started": self._steer_promoted,
        }

    def _session_update(self, envelope: JsonObject, data: JsonObject) -> None:
        update = data.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        if kind != "user_message_chunk" or self.replaying:
            self._events.session_update(data)
        elif self.client_id is not None and envelope.get("originatorClientId") not in (None, self.client_id):
            self._events.prompt_elsewhere(data)  # our own echo is dropped: the chat showed the prompt

    def _replay_complete(self, _envelope: JsonObject, _data: JsonObject) -> None:
        self.caught_up.set()

    def _say(self, kind: str, message: str) -> None:
        if kind not in self._said:
            self._said.add(kind)
            self._events.refused(message)

    def _end(self, reason: str) -> None:
        if not self.gone.done():
            self.gone.set_result(reason)
        for future in self._turns.values():
            if not future.done():
                future.set_exception(SessionGone(reason))
        for task in self._permissions.values():
            task.cancel()

    # --- prompts -------------------------------------------------------------

    @threads.on_chat_loop
    async def prompt(self, blocks: list[JsonObject]) -> TurnResult:
        """Send a prompt and wait for its turn to end (streamed meanwhile through
        `session_update`); the end comes on the event stream: `start()` first."""
        if self._reader is None:
            raise ServeError("the session's events are not read: start() it before prompting")
        await self._until_connected()
        answer = await request_json(self.address, "POST", _path(self.session_id, "/prompt"), {"prompt": blocks},
                                    self._headers())
        body = answer.body
        if answer.status not in (200, 202) or not isinstance(body, dict):
            raise _failed(answer, "POST prompt")
        if answer.status == 200:  # an older daemon that answers when the turn ended
            return TurnResult(str(body.get("stopReason", "end_turn")))
        prompt_id = str(body.get("promptId"))
        future: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        early = self._early_ends.pop(prompt_id, None)
        if early is not None:
            self._settle(future, early)
        self._turns[prompt_id] = future
        try:
            return await future
        finally:
            self._turns.pop(prompt_id, None)

    @threads.on_chat_loop
    async def _until_connected(self) -> None:
        """Wait for the event stream, so that the prompt's first events are read."""
        if self.connected.is_set():
            return
        await self._until(self.connected, CONNECT_WAIT_SECONDS)
        if self.gone.done():
            raise SessionGone(self.gone.result())
        if not self.connected.is_set():
            raise ServeError(f"the daemon's event stream did not open within {CONNECT_WAIT_SECONDS:.0f} s")

    def _turn_ended(self, envelope: JsonObject, data: JsonObject) -> None:
        prompt_id = str(data.get("promptId") or envelope.get("promptId"))
        data = {**data, "type": envelope.get("type")}
        future = self._turns.get(prompt_id)
        if future is None:
            if len(self._early_ends) < 64:  # a prompt of another client's ends here too: keep few
                self._early_ends[prompt_id] = data
            return
        self._settle(future, data)

    @staticmethod
    def _settle(future: asyncio.Future[TurnResult], data: JsonObject) -> None:
        if future.done():
            return
        if data.get("type") == "turn_error":
            future.set_exception(ServeError(f"the turn failed: {data.get('message') or data.get('code')}"))
        else:
            future.set_result(TurnResult(str(data.get("stopReason") or "end_turn")))

    # --- steering ------------------------------------------------------------

    @threads.on_chat_loop
    async def steer(self, text: str, context: list[JsonObject] | None = None) -> str | None:
        """Add `text` and its attachments to the running turn: its messageId once
        the daemon holds it, None when no turn runs (the daemon's `session_idle`)
        or it refused. ServeError when the daemon takes no steer of them."""
        steer = steer_of(text, context or [])
        if steer is None:
            raise ServeError("the daemon takes no steer of this prompt's attachments")
        message_id = f"steer-{uuid.uuid4()}"
        self._steers[message_id] = text  # first: the injection may be read before the answer
        answer = await request_json(self.address, "POST", _path(self.session_id, "/mid-turn-message"),
                                    steer.body(message_id), self._headers())
        body = answer.body
        if answer.status != 200 or not isinstance(body, dict):
            self._steers.pop(message_id, None)
            raise _failed(answer, "POST mid-turn-message")
        if body.get("accepted") is not True:
            self._steers.pop(message_id, None)
            return None
        return message_id

    def _steers_injected(self, _envelope: JsonObject, data: JsonObject) -> None:
        """Steers the running turn took (ours or another client's, live or replayed)."""
        ids, texts = data.get("messageIds"), data.get("messages")
        if not isinstance(ids, list) or not isinstance(texts, list):
            return
        for message_id, text in zip(ids, texts, strict=False):  # a malformed frame: what pairs up
            if isinstance(message_id, str) and isinstance(text, str):
                # Ours as the user wrote it: the message may carry the attachments' link lines.
                self._steer_entered(message_id, self._steers.get(message_id, text), late=False)

    def _steer_promoted(self, envelope: JsonObject, data: JsonObject) -> None:
        """A steer of ours came after its turn ended: the daemon sends it as a turn."""
        prompt_id = data.get("promptId") or envelope.get("promptId")
        text = self._steers.get(prompt_id) if isinstance(prompt_id, str) else None
        if isinstance(prompt_id, str) and text is not None:
            self._steer_entered(prompt_id, text, late=True)

    def _steer_entered(self, message_id: str, text: str, *, late: bool) -> None:
        self._steers.pop(message_id, None)
        if message_id in self._steers_shown:
            return
        self._steers_shown[message_id] = None
        if len(self._steers_shown) > MAX_STEERS_SHOWN:
            del self._steers_shown[next(iter(self._steers_shown))]
        self._events.steered({"sessionId": self.session_id, "messageId": message_id, "text": text, "late": late})

    @threads.on_chat_loop
    async def cancel(self) -> None:
        answer = await request_json(self.address, "POST", _path(self.session_id, "/cancel"), {}, self._headers())
        if answer.status not in (200, 202, 204):
            raise _failed(answer, "POST cancel")

    @threads.on_chat_loop
    async def post(self, suffix: str, body: JsonObject) -> JsonObject:
        """A session route that answers JSON (model, approval mode): its answer, or ServeError."""
        return await self._ask("POST", suffix, body)

    @threads.on_chat_loop
    async def get(self, suffix: str) -> JsonObject:
        """A session route that reads (context, rewind snapshots): its answer, or ServeError."""
        return await self._ask("GET", suffix, None)

    @threads.on_chat_loop
    async def _ask(self, method: str, suffix: str, body: JsonObject | None) -> JsonObject:
        answer = await request_json(self.address, method, _path(self.session_id, suffix), body, self._headers())
        if answer.status not in (200, 201):  # 201: a branch made
            raise _failed(answer, f"{method} {suffix}")
        return answer.body if isinstance(answer.body, dict) else {}

    # --- permissions ---------------------------------------------------------

    def _permission_asked(self, _envelope: JsonObject, data: JsonObject) -> None:
        request_id = data.get("requestId")
        if not isinstance(request_id, str) or request_id in self._permissions:
            return
        params = {key: value for key, value in data.items() if key != "requestId"}
        self._permissions[request_id] = asyncio.ensure_future(self._answer_permission(request_id, params))

    @threads.on_chat_loop
    async def _answer_permission(self, request_id: str, params: JsonObject) -> None:
        try:
            try:
                answer = await self._events.request_permission(params)
            except Exception:  # the question could not be put to the user: the tool does not run
                log.exception("cannot ask permission %s", request_id)
                answer = {}
            outcome = answer.get("outcome") if isinstance(answer, dict) else None
            vote = await request_json(
                self.address, "POST", _path(self.session_id, f"/permission/{quote(request_id, safe='')}"),
                {"outcome": outcome if isinstance(outcome, dict) else {"outcome": "cancelled"}}, self._headers(),
            )
            if vote.status == 404:
                log.info("permission %s was answered elsewhere first", request_id)
            elif vote.status != 200:
                log.warning("the daemon refused the permission answer: HTTP %d", vote.status)
        except (TimeoutError, OSError, HttpError) as error:
            log.warning("cannot answer permission %s: %s", request_id, error)
        finally:
            self._permissions.pop(request_id, None)

    def _permission_resolved(self, _envelope: JsonObject, data: JsonObject) -> None:
        task = self._permissions.get(str(data.get("requestId")))
        if task is not None and not task.done():
            task.cancel()  # another client answered: the question is withdrawn

    # --- closing -------------------------------------------------------------

    def close(self) -> None:
        """Stop reading; the daemon keeps the session (another client, or this
        one after a reload, may attach again from `last_event_id`)."""
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
        for task in list(self._permissions.values()):
            task.cancel()
