"""One chat's core (`ChatCore`): its ACP session on an agent it may share with
other chats (`AgentConnection`: the process, its start, back-off and routing
by session), sign-in, and its queue of prompts and their turns. What the
chat shows of the agent is `ChatState` (chat_state.py), where its words go
is `TranscriptLayout` (transcript_layout.py), and the thread it runs on is
`ChatThread`. It owns the pieces along its seams: the session's lifecycle
(`sessions`: session_lifecycle.py), its options (`option_setter`:
agent/session_options.py) and the calls on its history and qwen's methods
(`calls`: session_calls.py).

Public methods may be called from any thread: they hand the work to the
chat's asyncio thread and return at once (or give a Future). State is only
changed on that thread; `ChatCoreEvents` callbacks run there too and must only
schedule work elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, Protocol

from acp.schema import AgentMessageChunk, SessionNotification, UserMessageChunk

from .. import threads
from ..json_types import JsonObject
from .agent.agent_connection import AgentConnection
from .agent.chat_thread import ChatThread
from .agent.session_options import SessionOptionSetter
from .agent.transport import BRIDGE_NOTE, PROMPT_ELSEWHERE, PROMPT_STEERED, AgentError, AgentGone, AgentTransport
from .agent.usage import turn_text
from .chat_side import ChatCoreSetup as ChatCoreSetup
from .chat_state import ChatState
from .history.branch import branch_point_of
from .history.rewind import PromptLog, is_qwen
from .history.search_index import TEXT_MAX_CHARS
from .offers.qwen_calls import SUGGESTION_NOTIFICATION, is_command_output, suggestion_of
from .prompts.prompt_queue import PromptQueue, QueuedPrompt, QueueFull
from .requests.request_handler import AgentRequestHandler
from .session_calls import SessionCalls
from .session_lifecycle import SessionLifecycle, StartFailed
from .transcript.render import chunk_text
from .transcript.streamer import BlockStreamer
from .transcript.transcript_layout import TranscriptLayout

log = logging.getLogger(__name__)

CANCEL_TIMEOUT = 5.0
# The agent's requests as they were first shown: once answered, their block no longer holds what they asked
# (an edit's diff of `.env`), but an answer may quote it, and exports and the index must still leave it out.
REQUEST_BLOCK = "perm"
REQUESTS_REMEMBERED = 200
REQUEST_TEXT_MAX_CHARS = 20_000
NOT_SENT_NOTE = "Not sent: your prompt is back in the composer."


class ChatCoreEvents(Protocol):
    def state_changed(self) -> None: ...

    def turn_ended(self, stop_reason: str) -> None: ...

    def error(self, message: str) -> None: ...

    def cancel_timed_out(self) -> None: ...

    def steered(self, text: str, late: bool) -> None: ...

    def not_sent(self, prompts: list[QueuedPrompt]) -> None:
        """The agent could not start: `prompts` (the one being sent, then those
        queued) were never sent and go back to the user."""
        ...



class ChatCore:
    def __init__(self, thread: ChatThread, setup: ChatCoreSetup, streamer: BlockStreamer, events: ChatCoreEvents) -> None:
        self.thread = thread
        self.setup = setup
        self.streamer = streamer
        self._events = events
        self.state = ChatState()
        self.history: list[str] = []  # prompts sent, for Up in the composer
        self.connection = setup.connection or AgentConnection(thread, setup.command)
        self.connection.attach(self)
        self.prompts = PromptLog()  # the session's prompts, for a rewind
        self.queue = PromptQueue()  # the user changes it from the main thread (prompt_queue.py)
        self.draining = False
        self.closed = False  # `close` is final: nothing of this chat starts its agent again
        self.layout = TranscriptLayout(streamer)
        self._cancelling = False
        self._turn_lost_agent = False  # the running turn's agent went away (see `exited`)
        self._answer: list[str] = []  # the running turn's answer, up to TEXT_MAX_CHARS, for the search index
        self._answer_chars = 0
        self._requests_shown: deque[tuple[int, str, str]] = deque(maxlen=REQUESTS_REMEMBERED)  # (turn, block, text)
        self._requests_lock = threading.Lock()  # an export reads them from the main thread
        self.sessions = SessionLifecycle(self)
        self.calls = SessionCalls(self, self.sessions)
        self.option_setter = SessionOptionSetter(thread, self.state, self.sessions.ensure_ready, self.reported)
        if setup.key is not None:
            self.state.session_id = setup.store.get(setup.key)

    # --- any thread ------------------------------------------------------

    def send(self, text: str, context: list[JsonObject] | None = None, *, first: bool = False,
             attached: dict[str, JsonObject] | None = None, shown: str | None = None) -> bool:
        """Queue a prompt: `text` plus context blocks (resources, images; those
        of them the composer attached under a token in `attached` too);
        `first`: before the prompts queued already; `shown`: what the
        transcript shows instead of `text`. False: the queue is full (the
        transcript says so)."""
        try:
            self.queue.add(QueuedPrompt(text, list(context or []), dict(attached or {}), shown), first=first)
        except QueueFull as full:
            self.note(str(full))
            return False
        self.history.append(text)
        self.thread.spawn(self._enqueue(), "sending the prompt")
        return True

    def send_now(self, prompt: QueuedPrompt) -> None:
        """Send queued `prompt` next, stopping the running turn for it
        (ValueError: it is no longer queued)."""
        self.queue.move(prompt, 0)
        self.thread.spawn(self._send_now(prompt), "sending the prompt now")

    def offers_steer(self) -> bool:
        """Whether a queued prompt can be added to the running turn (Steer):
        the agent process our session is open on offers it, and a turn runs."""
        bridge = self.sessions.bridge
        return bridge is not None and bridge.offers_steer and self.state.agent_status == "busy"

    def can_steer(self, prompt: QueuedPrompt) -> bool:
        """`offers_steer`, for this prompt and what it has attached."""
        bridge = self.sessions.bridge
        return self.offers_steer() and bridge is not None and bridge.can_steer(prompt.text, prompt.context)

    def steer(self, prompt: QueuedPrompt) -> None:
        """Add queued `prompt` to the running turn, out of the queue (ValueError:
        it is no longer queued). A turn that ends before it is taken has it sent
        as the next prompt; where it entered is shown as a prompt marked steered."""
        self.queue.remove(prompt)
        self.thread.spawn(self._steer(prompt), "steering the turn")

    def queue_changed(self) -> None:
        """The user changed the queue: the status and its display follow."""
        self.thread.call_soon(self.changed)

    def start(self) -> Future[None]:
        """Start the agent and its session now (prestart, or a picker)."""
        return self.sessions.start()

    def cancel(self) -> None:
        """Stop the running turn (or give up on a slow session/load or
        resume) and drop the queued prompts."""
        self.thread.spawn(self._cancel(drop_queue=True), "cancelling the turn")

    def note(self, text: str) -> None:
        """A line of the chat's own in the transcript (not sent to the agent)."""
        self.thread.call_soon(self.write_note, text)

    def close(self) -> None:
        """Leave the agent; the last chat to leave ends it now, whatever state
        the loop is in (any thread; never waits)."""
        self.closed = True  # first: the turn the kill below ends must not start the next queued one
        self.state.agent_status = "stopped"  # an expected exit: no error line
        self.thread.call_soon(self.sessions.give_up)  # first: an agent other chats share is told
        self.setup.request_handler().cancel_pending()
        self.connection.detach(self)
        self.streamer.close()

    def request_handler(self) -> AgentRequestHandler:
        """What answers the agent's requests about this chat's session."""
        return self.setup.request_handler()

    @property
    def turn_cancelled(self) -> bool:
        """The user cancelled the running (or last) turn; the next turn clears it."""
        return self._cancelling

    @property
    def pid(self) -> int | None:
        bridge = self.connection.bridge
        return bridge.pid if bridge is not None and bridge.running else None

    def stderr_lines(self) -> list[str]:
        bridge = self.connection.bridge
        return list(bridge.stderr_lines) if bridge is not None else []

    @threads.on_chat_loop
    def upsert(self, block_id: str, text: str) -> None:
        """A block of the editor's own in the transcript, e.g. a permission prompt."""
        if block_id.startswith(REQUEST_BLOCK):
            with self._requests_lock:
                self._requests_shown.append((self.layout.turn, block_id, text[:REQUEST_TEXT_MAX_CHARS]))
        self.layout.upsert(block_id, text)

    def requests_shown(self, turn: int | None = None) -> list[tuple[str, str]]:
        """The agent's requests (of `turn`, default every turn remembered) as
        they were shown, as transcript blocks (id, text); any thread."""
        with self._requests_lock:
            return [(block_id, text) for shown_in, block_id, text in self._requests_shown
                    if turn is None or shown_in == turn]

    def upsert_soon(self, block_id: str, text: str) -> None:
        """`upsert` from any thread (the user's answer on the main thread): the
        transcript's layout is the chat thread's."""
        self.thread.call_soon(self.upsert, block_id, text)

    # --- the agent's work ------------------------------------------------

    @threads.on_chat_loop
    async def reported(self, work: Coroutine[Any, Any, None]) -> None:
        """`work`, its AgentError said in the chat (a failed start's once), the state shown after."""
        try:
            await work
        except StartFailed:
            pass  # said by `SessionLifecycle._start_failed`
        except AgentError as error:
            self.error(str(error))
        finally:
            self.changed()

    @threads.on_chat_loop
    def changed(self) -> None:
        bridge = self.connection.bridge
        self.state.pid = bridge.pid if bridge is not None and bridge.running else None
        self.state.started_at = bridge.started_at if bridge is not None else 0.0
        self.state.queued = len(self.queue)
        self._events.state_changed()

    @threads.on_chat_loop
    def error(self, message: str) -> None:
        log.warning("chat: %s", message)
        self.write_note(message)
        self._events.error(message)

    @threads.on_chat_loop
    def write_note(self, text: str) -> None:
        self.layout.note(text)

    @threads.on_chat_loop
    async def _enqueue(self) -> None:
        self.changed()
        await self.drain()

    @threads.on_chat_loop
    async def _send_now(self, prompt: QueuedPrompt) -> None:
        if prompt in self.queue:  # a turn that ended meanwhile took it: the running turn is its own
            await self._cancel(drop_queue=False)
        else:
            self.changed()

    @threads.on_chat_loop
    async def _steer(self, prompt: QueuedPrompt) -> None:
        bridge = self.sessions.bridge
        taken = False
        try:
            if bridge is not None and self.state.agent_status == "busy":
                taken = await bridge.steer(self.state.session_id or "", prompt.text, prompt.context)
        except AgentError as error:
            self.write_note(f"not steered ({error}): it stays queued")
        if not taken:  # the turn ended first (or refused it): the prompt goes out next instead
            try:
                self.queue.add(prompt, first=True)
            except QueueFull as full:
                self.write_note(str(full))
            await self._enqueue()
            return
        self.changed()

    @threads.on_chat_loop
    async def drain(self) -> None:
        if self.draining or self.calls.rewinding:  # a prompt sent while a rewind runs waits for its end
            return
        self.draining = True
        try:
            # Closing ends the running turn (its agent is killed): the queued prompts are left unsent.
            while not (self.closed or self.thread.closing) and (prompt := self.queue.take()) is not None:
                await self._turn_of(prompt)
        finally:
            self.draining = False
            self.changed()

    @threads.on_chat_loop
    async def _turn_of(self, prompt: QueuedPrompt) -> None:
        text, context, shown = prompt.text, prompt.context, prompt.shown
        try:  # first: reloading a session replaces the transcript
            bridge = await self.sessions.ensure_ready()
        except AgentError as error:
            if not isinstance(error, StartFailed):
                self.error(str(error))
            unsent = [prompt]
            while (queued := self.queue.take()) is not None:  # they would only fail the same way, one by one
                unsent.append(queued)
            if not self.closed:
                self.write_note(NOT_SENT_NOTE)
                self._events.not_sent(unsent)
            self.prompts.turn_ended()
            self._events.turn_ended("error")
            return
        self.layout.prompt(text if shown is None else shown, context)
        prompt_block = f"t{self.layout.turn}.user"
        self.prompts.sent(text, context, self.layout.turn)
        self.state.agent_status = "busy"
        self.state.suggestion = None  # the next prompt is sent: the last turn's suggestion is of no use
        self.state.usage.start_turn()
        self._cancelling = False
        self._turn_lost_agent = False
        self._answer, self._answer_chars = [], 0
        self.changed()
        note, self.calls.next_prompt_note = self.calls.next_prompt_note, None
        blocks: list[JsonObject] = [{"type": "text", "text": text if note is None else f"{note}\n\n{text}"}, *context]
        session_id = self.state.session_id or ""
        branch_point = None
        try:
            response = await bridge.prompt(session_id, blocks)
            stop_reason = str(response.stop_reason)
            branch_point = branch_point_of(response.field_meta)
        except AgentGone:
            if self._cancelling:  # the agent was restarted to stop the turn
                stop_reason = "cancelled"
                self.write_note("cancelled (the agent was restarted)")
            else:
                stop_reason = "error"  # the exit is reported once, by `exited`
                self._turn_lost_agent = True  # `exited` may come after this turn has ended
        except AgentError as error:
            stop_reason = "error"
            self.error(str(error))
        self.layout.end_blocks()
        self.layout.footer(turn_text(self.state.usage))
        if bridge.running:
            self.state.agent_status = "ready"
            if stop_reason == "cancelled":
                self.write_note("cancelled")
            elif stop_reason != "end_turn" and stop_reason != "error":
                self.write_note(f"stopped: {stop_reason}")
            if stop_reason != "error":
                self.connection.turn_succeeded()
        self.streamer.flush()
        self.changed()
        self.prompts.turn_ended(branch_point)
        if self.setup.index_turn is not None and stop_reason != "error" and session_id:
            # The turn's tool calls and requests: what they show of excluded files is kept out of the index.
            turn_blocks = self.streamer.transcript.blocks_from(prompt_block) + self.requests_shown(self.layout.turn)
            self.setup.index_turn(session_id, text, "".join(self._answer), turn_blocks)
        self._events.turn_ended(stop_reason)

    @threads.on_chat_loop
    async def _cancel(self, *, drop_queue: bool) -> None:
        dropped = self.queue.clear() if drop_queue else 0
        if dropped:
            self.write_note(f"{dropped} queued prompt(s) dropped")
        if self.sessions.give_up():
            return  # no turn runs while a session opens
        bridge = self.connection.bridge
        if self.state.agent_status != "busy" or bridge is None or self.state.session_id is None:
            self.changed()
            return
        self._cancelling = True
        # The user's side first: an agent that stops reading its stdin blocks the
        # write of session/cancel for good, and the restart must still be offered.
        self.setup.request_handler().cancel_pending()  # ACP: the client answers them "cancelled" after session/cancel
        turn = self.layout.turn
        asyncio.get_running_loop().call_later(CANCEL_TIMEOUT, self._check_cancelled, turn)
        self.changed()
        try:
            await asyncio.wait_for(bridge.cancel(self.state.session_id), CANCEL_TIMEOUT)
        except (TimeoutError, ConnectionError) as error:
            log.warning("chat: session/cancel could not be sent (%s); the restart is offered", error or "timed out")

    @threads.on_chat_loop
    def _check_cancelled(self, turn: int) -> None:
        if self._cancelling and self.state.agent_status == "busy" and self.layout.turn == turn:
            self._events.cancel_timed_out()

    # --- from the bridge --------------------------------------------------

    @threads.on_chat_loop
    def session_update(self, notification: SessionNotification) -> None:
        if notification.session_id != self.state.session_id and not self.sessions.replaying:
            return
        update = notification.update
        if isinstance(update, AgentMessageChunk):
            self._agent_text(chunk_text(update.content), update.field_meta)
        elif isinstance(update, UserMessageChunk):
            if self.sessions.replaying:  # live echoes of our own prompt are not shown twice
                self.layout.user_text(chunk_text(update.content))
                self.prompts.replayed(chunk_text(update.content), self.layout.turn)
        elif self.state.adopt_update(update):
            self.changed()
        else:
            self.setup.renderer().render(self.layout, notification.session_id, update)

    @threads.on_chat_loop
    def _agent_text(self, text: str, meta: dict[str, Any] | None) -> None:
        if self.state.adopt_usage(meta, replaying=self.sessions.replaying):
            self.changed()
        if is_command_output(meta) and is_qwen(self.state):  # a status qwen's slash command gave, not the model's
            self.layout.command_output(text)
            return
        if not self.sessions.replaying and self._answer_chars < TEXT_MAX_CHARS:
            self._answer.append(text[:TEXT_MAX_CHARS - self._answer_chars])
            self._answer_chars += len(self._answer[-1])
        self.layout.agent_text(text, replaying=self.sessions.replaying)

    @threads.on_chat_loop
    def ext_notification(self, method: str, params: JsonObject) -> None:
        if params.get("sessionId") not in (None, self.state.session_id):
            return
        if method == PROMPT_ELSEWHERE:
            text = str(params.get("text", ""))
            self.layout.prompt_elsewhere(text)
            self.prompts.replayed(text, self.layout.turn)
        elif method == BRIDGE_NOTE and self.sessions.bridge is not None and self.sessions.bridge.sends_notes:
            self.write_note(str(params.get("text", "")))
        elif method == PROMPT_STEERED and self.sessions.bridge is not None and self.sessions.bridge.offers_steer:
            # Only a bridge that steers says so: an agent's own notification of that name is no prompt of the user's.
            text, late = str(params.get("text", "")), params.get("late") is True
            self.layout.prompt_steered(text, late=late)
            self.prompts.replayed(text, self.layout.turn)
            if not self.sessions.replaying:  # a reattach shows it again, but it entered the session once
                self._events.steered(text, late)
        elif method == SUGGESTION_NOTIFICATION and is_qwen(self.state):  # the gate: another agent's is ignored
            self.state.suggestion = suggestion_of(params)
            self.changed()
        elif self.state.adopt_notification(method, params):
            self.changed()
        else:
            log.debug("ignored notification %s", method)

    @threads.on_chat_loop
    def exited(self, bridge: AgentTransport, returncode: int | None, stderr_tail: list[str], *,
               expected: bool = False) -> None:
        if bridge is not self.sessions.bridge:
            return  # this chat had no session on it
        lost_turn, self._turn_lost_agent = self.state.agent_status == "busy" or self._turn_lost_agent, False
        if expected and lost_turn:  # another chat restarted the agent they share
            self.write_note("The agent was restarted from another chat, which ended this turn; send again to go on.")
        stopped = self.state.agent_status == "stopped" or expected
        self.state.agent_status = "stopped" if expected else "exited"
        if not stopped:
            last = next((line for line in reversed(stderr_tail) if line.strip()), "")
            detail = f": {last[:200]}" if last and returncode != 0 else ""
            self.error(f"The agent exited (code {returncode}){detail}. The next prompt restarts it.")
        self.setup.request_handler().cancel_pending()  # nobody is left to wait for them
        self.changed()

    @threads.on_chat_loop
    def refused(self, message: str) -> None:
        """The agent sent what the editor drops (too large)."""
        self.error(message)
