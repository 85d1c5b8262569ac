"""One chat's `Conversation`: its ACP session on an agent it may share with other chats
(`AgentConnection`: the process, its start, back-off and routing by session),
sign-in, and its queue of prompts. What the chat shows of the agent is
`ChatState` (chat_state.py), where its words go is `TranscriptLayout`
(transcript_layout.py), and the thread it runs on is `ChatThread`.

Public methods may be called from any thread: they hand the work to the
chat's asyncio thread and return at once (or give a Future). State is only
changed on that thread; `ConversationEvents` callbacks run there too and must only
schedule work elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from acp.schema import AgentMessageChunk, SessionNotification, UserMessageChunk

from .. import threads
from ..cli.qwen_home import SIGN_IN_HINT
from ..display_text import display_text
from ..json_types import JsonObject
from .agent.agent_connection import AgentConnection
from .agent.bridge import PROMPT_ELSEWHERE, PROMPT_STEERED, AgentBridge, AgentCommand, AgentError, AgentGone
from .agent.chat_thread import ChatThread
from .agent.command import CommandNotFound
from .agent.session_ids import session_id_or_none, session_id_refusal
from .agent.usage import turn_text
from .chat_state import ChatState
from .history.branch import Branch, branch, branch_point_of
from .history.history import SessionEntry, list_folder, newest_first
from .history.rewind import FileRestorer, PromptLog, RewindOutcome, RewindRefused, RewindTarget, is_qwen, rewind
from .history.search_index import TEXT_MAX_CHARS
from .history.store import SessionStore
from .offers.qwen_calls import (
    SUGGESTION_NOTIFICATION,
    Request as QwenRequest,
    is_command_output,
    offered,
    suggestion_of,
)
from .prompts.prompt_queue import PromptQueue, QueuedPrompt, QueueFull
from .requests.request_handler import AgentRequestHandler
from .transcript.render import UpdateRenderer, chunk_text
from .transcript.streamer import BlockStreamer
from .transcript.transcript_layout import TranscriptLayout

log = logging.getLogger(__name__)
T = TypeVar("T")

CANCEL_TIMEOUT = 5.0
# The agent's requests as they were first shown: once answered, their block no longer holds what they asked
# (an edit's diff of `.env`), but an answer may quote it, and exports and the index must still leave it out.
REQUEST_BLOCK = "perm"
REQUESTS_REMEMBERED = 200
REQUEST_TEXT_MAX_CHARS = 20_000
AGENT_NAME_MAX_CHARS = 100  # its `agentInfo` name and version, as Diagnose and /status show them
RESUMED_NOTE = "Resumed: the agent has this conversation's earlier messages; they are not shown again here."
AUTH_REQUIRED = -32000
NOT_SENT_NOTE = "Not sent: your prompt is back in the composer."


class NotSignedIn(AgentError):
    """The agent refused a session until the user signs in."""


class StartFailed(AgentError):
    """The agent or its session could not be started; the chat has said why (once)."""


def _adoptable(session_id: object) -> str:
    """`session_id` if the chat may take it as its session (session_ids.py), else AgentError."""
    checked = session_id_or_none(session_id)
    if checked is None:
        raise AgentError(session_id_refusal(session_id))
    return checked


class ConversationEvents(Protocol):
    def state_changed(self) -> None: ...

    def turn_ended(self, stop_reason: str) -> None: ...

    def error(self, message: str) -> None: ...

    def cancel_timed_out(self) -> None: ...

    def steered(self, text: str, late: bool) -> None: ...

    def not_sent(self, prompts: list[QueuedPrompt]) -> None:
        """The agent could not start: `prompts` (the one being sent, then those
        queued) were never sent and go back to the user."""
        ...


@dataclass(frozen=True)
class ConversationSetup:
    command: Callable[[], AgentCommand]
    mcp_servers: Callable[[], list[JsonObject]]
    request_handler: Callable[[], AgentRequestHandler]
    renderer: Callable[[], UpdateRenderer]
    store: SessionStore
    key: str | None
    # The agent process this chat shares with others (None: one of its own).
    connection: AgentConnection | None = None
    # The folder its session works in (a worktree of its own); None: the agent's.
    cwd: str | None = None
    # Takes each finished turn (session, prompt, answer, the turn's transcript blocks as (id, text))
    # for Search in Conversations; must not block.
    index_turn: Callable[[str, str, str, list[tuple[str, str]]], None] | None = None
    # Why a session may not be opened here (a live qwen terminal writes it), else None; may read small files.
    held_elsewhere: Callable[[str], str | None] | None = None


class Conversation:
    def __init__(self, thread: ChatThread, setup: ConversationSetup, streamer: BlockStreamer, events: ConversationEvents) -> None:
        self._thread = thread
        self._setup = setup
        self.streamer = streamer
        self._events = events
        self.state = ChatState()
        self.history: list[str] = []  # prompts sent, for Up in the composer
        self.connection = setup.connection or AgentConnection(thread, setup.command)
        self.connection.attach(self)
        self._session_bridge: AgentBridge | None = None  # the agent process our session is open on
        self.prompts = PromptLog()  # the session's prompts, for a rewind
        self.queue = PromptQueue()  # the user changes it from the main thread (prompt_queue.py)
        self._ready_lock: asyncio.Lock | None = None
        self._draining = False
        self._closed = False  # `close` is final: nothing of this chat starts its agent again
        self._rewinding = False
        self._next_prompt_note: str | None = None  # a files-only rewind's note, for the model with the next prompt
        self._layout = TranscriptLayout(streamer)
        self._replaying = False
        self._cancelling = False
        self._turn_lost_agent = False  # the running turn's agent went away (see `exited`)
        self._start_failure_shown = ""  # the last start failure said, until a start succeeds: not said twice
        self._resume_in: str | None = None  # the folder of the session the start resumes
        self._answer: list[str] = []  # the running turn's answer, up to TEXT_MAX_CHARS, for the search index
        self._answer_chars = 0
        self._requests_shown: deque[tuple[int, str, str]] = deque(maxlen=REQUESTS_REMEMBERED)  # (turn, block, text)
        self._requests_lock = threading.Lock()  # an export reads them from the main thread
        if setup.key is not None:
            self.state.session_id = setup.store.get(setup.key)

    # --- any thread ------------------------------------------------------

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return self._thread.submit(coroutine)

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
        self._submit(self._enqueue())
        return True

    def send_now(self, prompt: QueuedPrompt) -> None:
        """Send queued `prompt` next, stopping the running turn for it
        (ValueError: it is no longer queued)."""
        self.queue.move(prompt, 0)
        self._submit(self._send_now(prompt))

    def offers_steer(self) -> bool:
        """Whether a queued prompt can be added to the running turn (Steer):
        the agent process our session is open on offers it, and a turn runs."""
        bridge = self._session_bridge
        return bridge is not None and bridge.offers_steer and self.state.agent == "busy"

    def can_steer(self, prompt: QueuedPrompt) -> bool:
        """`offers_steer`, for this prompt and what it has attached."""
        bridge = self._session_bridge
        return self.offers_steer() and bridge is not None and bridge.can_steer(prompt.text, prompt.context)

    def steer(self, prompt: QueuedPrompt) -> None:
        """Add queued `prompt` to the running turn, out of the queue (ValueError:
        it is no longer queued). A turn that ends before it is taken has it sent
        as the next prompt; where it entered is shown as a prompt marked steered."""
        self.queue.remove(prompt)
        self._submit(self._steer(prompt))

    def queue_changed(self) -> None:
        """The user changed the queue: the status and its display follow."""
        self._submit(self._queue_changed())

    def start(self) -> Future[None]:
        """Start the agent and its session now (prestart, or a picker)."""
        return self._submit(self._guarded(self._start()))

    def cancel(self) -> None:
        """Stop the running turn and drop the queued prompts."""
        self._submit(self._cancel(drop_queue=True))

    def new_session(self) -> Future[None]:
        return self._submit(self._guarded(self._new_session()))

    def load_session(self, session_id: str) -> Future[None]:
        return self._submit(self._guarded(self._load_session(session_id)))

    def resume_session(self, session_id: str, cwd: str | None = None, replay: bool = False) -> Future[None]:
        """Go on with an earlier session (of folder `cwd`, default the agent's):
        a chat not started yet starts on it, with session/resume where the
        agent offers it (nothing replayed), else session/load; with `replay`,
        session/load, which shows its conversation (a branch's)."""
        return self._submit(self._guarded(self._resume_session(session_id, cwd, replay)))

    def branch(self, turn: int) -> Future[Branch]:
        """A new session holding prompts 0..`turn` and their answers (branch.py);
        this chat's session is left as it is. Fails with `BranchRefused`."""
        return self._submit(self._branch(turn))

    def ask_qwen(self, what: str, call: Callable[[QwenRequest], Awaitable[T]]) -> Future[T]:
        """`call` with a way to ask qwen's own methods of the chat's session
        (offers/), even while a turn runs; fails with `NotOffered` when the
        chat's agent is not qwen (`what` names the feature in that message)."""
        return self._submit(self._ask_qwen(what, call))

    def list_history(self, folders: list[str]) -> Future[list[SessionEntry]]:
        """The sessions of `folders` (default: the agent's folder), newest first, bounded."""
        return self._submit(self._list_history(folders))

    def set_mode(self, mode_id: str) -> Future[None]:
        return self._submit(self._guarded(self._set_mode(mode_id)))

    def set_model(self, model_id: str) -> Future[None]:
        return self._submit(self._guarded(self._set_model(model_id)))

    def set_option(self, option_id: str, value: str | bool) -> Future[None]:
        """One of the agent's config options (`state.options`), through session/set_config_option."""
        return self._submit(self._guarded(self._set_option(option_id, value)))

    def rewind(self, turn: int, text: str | None = None, files: FileRestorer | None = None,
               scope: str = "all") -> Future[RewindOutcome]:
        """Back to before prompt `turn` (0-based), files too; with `text`, Edit
        and Resend (rewind.py). Fails with `RewindRefused` while a turn runs."""
        return self._submit(self._rewind(turn, text, files, scope))

    def restart(self) -> Future[None]:
        """End the agent and start it again on the same session."""
        return self._submit(self._guarded(self._restart()))

    def sign_out(self) -> Future[None]:
        """ACP's `logout` on the chat's agent (the caller checked the agent announces it)."""
        return self._submit(self._sign_out())

    @threads.on_chat_loop
    async def _sign_out(self) -> None:
        bridge = self.connection.bridge
        if bridge is None:
            raise AgentError("the agent is not running")
        await bridge.request("logout", {})

    def note(self, text: str) -> None:
        """A line of the chat's own in the transcript (not sent to the agent)."""
        self._submit(self._note(text))

    def close(self) -> None:
        """Leave the agent; the last chat to leave ends it now, whatever state
        the loop is in (any thread; never waits)."""
        self._closed = True  # first: the turn the kill below ends must not start the next queued one
        self.state.agent = "stopped"  # an expected exit: no error line
        self._setup.request_handler().cancel_pending()
        self.connection.detach(self)
        self.streamer.close()

    def request_handler(self) -> AgentRequestHandler:
        """What answers the agent's requests about this chat's session."""
        return self._setup.request_handler()

    @property
    def _bridge(self) -> AgentBridge | None:
        return self.connection.bridge

    @property
    def turn_cancelled(self) -> bool:
        """The user cancelled the running (or last) turn; the next turn clears it."""
        return self._cancelling

    @property
    def pid(self) -> int | None:
        bridge = self._bridge
        return bridge.pid if bridge is not None and bridge.running else None

    def stderr_lines(self) -> list[str]:
        bridge = self._bridge
        return list(bridge.stderr_lines) if bridge is not None else []

    @threads.on_chat_loop
    def upsert(self, block_id: str, text: str) -> None:
        """A block of the editor's own in the transcript, e.g. a permission prompt."""
        if block_id.startswith(REQUEST_BLOCK):
            with self._requests_lock:
                self._requests_shown.append((self._layout.turn, block_id, text[:REQUEST_TEXT_MAX_CHARS]))
        self._layout.upsert(block_id, text)

    def requests_shown(self, turn: int | None = None) -> list[tuple[str, str]]:
        """The agent's requests (of `turn`, default every turn remembered) as
        they were shown, as transcript blocks (id, text); any thread."""
        with self._requests_lock:
            return [(block_id, text) for shown_in, block_id, text in self._requests_shown
                    if turn is None or shown_in == turn]

    def upsert_soon(self, block_id: str, text: str) -> None:
        """`upsert` from any thread (the user's answer on the main thread): the
        transcript's layout is the chat thread's."""
        self._submit(self._upsert_async(block_id, text))

    @threads.on_chat_loop
    async def _upsert_async(self, block_id: str, text: str) -> None:
        self.upsert(block_id, text)

    # --- the agent's work ------------------------------------------------

    @threads.on_chat_loop
    async def _guarded(self, coroutine: Coroutine[Any, Any, None]) -> None:
        try:
            await coroutine
        except StartFailed:
            pass  # said by `_start_failed`
        except AgentError as error:
            self._error(str(error))
        finally:
            self._changed()

    @threads.on_chat_loop
    def _changed(self) -> None:
        bridge = self._bridge
        self.state.pid = bridge.pid if bridge is not None and bridge.running else None
        self.state.started_at = bridge.started_at if bridge is not None else 0.0
        self.state.queued = len(self.queue)
        self._events.state_changed()

    @threads.on_chat_loop
    def _error(self, message: str) -> None:
        log.warning("chat: %s", message)
        self._write_note(message)
        self._events.error(message)

    @threads.on_chat_loop
    async def _note(self, text: str) -> None:
        self._write_note(text)

    @threads.on_chat_loop
    def _write_note(self, text: str) -> None:
        self._layout.note(text)

    @threads.on_chat_loop
    async def _ensure_ready(self) -> AgentBridge:
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if self._closed:  # e.g. a mode change that came after the chat was closed
                raise AgentGone("the chat is closed")
            bridge = self._bridge
            if (bridge is not None and bridge.running and bridge is self._session_bridge
                    and self.state.agent not in ("stopped", "exited")):
                return bridge
            self.state.agent, self.state.stopped_why = "starting", ""
            self._changed()
            try:
                bridge = await self._open(await self.connection.ready(self._write_note))
            except AgentError as error:
                self._start_failed(error)
                raise StartFailed(str(error)) from error
            self._start_failure_shown = ""
            self._session_bridge = bridge
            self.state.agent = "ready"
            return bridge

    @threads.on_chat_loop
    def _start_failed(self, error: AgentError) -> None:
        """The chat is stopped, with why (its status says it); the reason is
        written once, however often a start fails the same way in a row."""
        self.state.agent = "stopped"
        cause = error.__cause__
        self.state.stopped_why = ("not signed in" if isinstance(error, NotSignedIn)
                                  else "agent not found" if isinstance(cause, CommandNotFound) else "could not start")
        message = str(error)
        if message != self._start_failure_shown and not self._closed:
            self._error(message)
        self._start_failure_shown = message

    @threads.on_chat_loop
    async def _open(self, bridge: AgentBridge) -> AgentBridge:
        """The chat's session on the started `bridge`: resumed, reloaded or new."""
        self.state.agent_name = display_text(self.connection.agent_name, AGENT_NAME_MAX_CHARS)
        self.state.accepts_images = self.connection.accepts_images
        session_id = self.state.session_id
        resume_in, self._resume_in = self._resume_in, None
        held = self._setup.held_elsewhere(session_id) if session_id and self._setup.held_elsewhere else None
        if held is not None:  # e.g. the folder's last conversation, continued in the terminal since
            self._write_note(f"{held}. This is a new conversation.")
            session_id = self.state.session_id = None
        if session_id is not None and resume_in is not None and bridge.can_resume:
            try:
                await self._resume(bridge, session_id, resume_in)
            except AgentError as error:
                self._write_note(f"The conversation could not be resumed ({error}); this is a new one.")
                await self._new(bridge)
        elif session_id is not None and bridge.can_load:
            try:
                await self._load(bridge, session_id)
            except AgentError as error:
                log.warning("could not reload session %s (%s); starting a new one", session_id, error)
                self._write_note(f"The previous conversation could not be reloaded ({error}); this is a new one.")
                await self._new(bridge)
        else:
            if resume_in is not None:
                self._write_note(f"{bridge.command.agent} cannot resume or load earlier conversations; "
                                 "this is a new one.")
            await self._new(bridge)
        return bridge

    @threads.on_chat_loop
    async def _start(self) -> None:
        await self._ensure_ready()

    @threads.on_chat_loop
    async def _authenticated(self, bridge: AgentBridge, call: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """`call()`, authenticating first when qwen says it must (its first
        method signs in from its settings and environment). Another agent's
        methods may start a browser sign-in or drop its saved sign-in: the
        user signs in where the agent says how."""
        try:
            return await call()
        except AgentError as error:
            cause = error.__cause__
            if getattr(cause, "code", None) != AUTH_REQUIRED or not self.connection.auth_methods:
                raise
            if not bridge.speaks_qwen:
                raise NotSignedIn(f"{bridge.command.agent} is not signed in ({error}). Sign in to "
                                  f"{bridge.command.agent} in a terminal; then send again.") from error
        method = self.connection.auth_methods[0]
        try:
            await bridge.request("authenticate", {"methodId": method})
        except AgentError as error:
            raise NotSignedIn(f"{bridge.command.agent} is not signed in ({error}). {SIGN_IN_HINT} "
                              "(Qwen Code: Sign In runs qwen's sign-in in a terminal); then send again.") from error
        return await call()

    @threads.on_chat_loop
    def _cwd(self) -> str:
        if self._setup.cwd is not None:
            return self._setup.cwd
        return self._bridge.command.cwd if self._bridge is not None else ""

    @threads.on_chat_loop
    def _folders(self) -> list[str]:
        """The session's other roots: the window's folders; none for a chat in
        a worktree of its own, whose agent must not reach past it."""
        if self._setup.cwd is not None or self._bridge is None:
            return []
        return list(self._bridge.command.folders)

    @threads.on_chat_loop
    async def _new(self, bridge: AgentBridge) -> None:
        self.state.usage.new_session()
        with self.connection.opening():
            response, raw = await self._authenticated(
                bridge, lambda: bridge.new_session(self._cwd(), self._setup.mcp_servers(), self._folders())
            )
            self.connection.claim(_adoptable(response.session_id), self)
        self._adopt(response.session_id, raw)
        if bridge.replays(response.session_id):
            await self._catch_up(bridge, response.session_id)

    @threads.on_chat_loop
    async def _catch_up(self, bridge: AgentBridge, session_id: str) -> None:
        """A session shared with other clients (qwen serve), attached again:
        its earlier events rebuild the transcript, as a reload's replay does."""
        try:
            with self._rebuilt_by_replay():
                await bridge.catch_up(session_id)  # the answer may go on live: its block stays open
        finally:
            self._changed()

    @contextlib.contextmanager
    def _rebuilt_by_replay(self) -> Iterator[None]:
        """An empty transcript and prompt log, which the session's replay
        (session/load's, or the daemon's) fills meanwhile."""
        self._layout.clear()
        self.prompts.clear()
        self._replaying = True
        try:
            yield
        finally:
            self._replaying = False

    @threads.on_chat_loop
    async def _load(self, bridge: AgentBridge, session_id: str) -> None:
        self.connection.claim(_adoptable(session_id), self)  # its replay comes to this chat
        self.state.usage.new_session()
        try:
            with self._rebuilt_by_replay():
                _, raw = await self._authenticated(
                    bridge, lambda: bridge.load_session(session_id, self._cwd(), self._setup.mcp_servers(), self._folders())
                )
        finally:
            self._layout.end_blocks()
        self._adopt(session_id, raw)
        if bridge.replays(session_id):  # one qwen serve still runs: its conversation comes from the daemon's ring
            await self._catch_up(bridge, session_id)

    @threads.on_chat_loop
    async def _resume(self, bridge: AgentBridge, session_id: str, cwd: str) -> None:
        self.connection.claim(_adoptable(session_id), self)
        self._layout.clear()
        self.state.usage.new_session()
        self.prompts.clear()
        raw = await self._authenticated(
            bridge, lambda: bridge.resume_session(session_id, cwd or self._cwd(), self._setup.mcp_servers(),
                                                  self._folders())
        )
        self._adopt(session_id, raw)
        self._write_note(RESUMED_NOTE)

    @threads.on_chat_loop
    def _adopt(self, session_id: str, raw: JsonObject) -> None:
        """Take the session and what its answer offers (modes, models)."""
        # The session's id last: another thread that sees it sees what the session offers.
        self.state.adopt_session(raw)
        self.state.suggestion = None  # the last session's follow-up
        self.state.session_id = session_id
        if self._setup.key is not None:
            self._setup.store.put(self._setup.key, session_id)
        self._changed()

    @threads.on_chat_loop
    async def _enqueue(self) -> None:
        self._changed()
        await self._drain()

    @threads.on_chat_loop
    async def _queue_changed(self) -> None:
        self._changed()

    @threads.on_chat_loop
    async def _send_now(self, prompt: QueuedPrompt) -> None:
        if prompt in self.queue:  # a turn that ended meanwhile took it: the running turn is its own
            await self._cancel(drop_queue=False)
        else:
            self._changed()

    @threads.on_chat_loop
    async def _steer(self, prompt: QueuedPrompt) -> None:
        bridge = self._session_bridge
        taken = False
        try:
            if bridge is not None and self.state.agent == "busy":
                taken = await bridge.steer(self.state.session_id or "", prompt.text, prompt.context)
        except AgentError as error:
            self._write_note(f"not steered ({error}): it stays queued")
        if not taken:  # the turn ended first (or refused it): the prompt goes out next instead
            try:
                self.queue.add(prompt, first=True)
            except QueueFull as full:
                self._write_note(str(full))
            await self._enqueue()
            return
        self._changed()

    @threads.on_chat_loop
    async def _drain(self) -> None:
        if self._draining or self._rewinding:  # a prompt sent while a rewind runs waits for its end
            return
        self._draining = True
        try:
            # Closing ends the running turn (its agent is killed): the queued prompts are left unsent.
            while not (self._closed or self._thread.closing) and (prompt := self.queue.take()) is not None:
                await self._turn_of(prompt)
        finally:
            self._draining = False
            self._changed()

    @threads.on_chat_loop
    async def _turn_of(self, prompt: QueuedPrompt) -> None:
        text, context, shown = prompt.text, prompt.context, prompt.shown
        try:  # first: reloading a session replaces the transcript
            bridge = await self._ensure_ready()
        except AgentError as error:
            if not isinstance(error, StartFailed):
                self._error(str(error))
            unsent = [prompt]
            while (queued := self.queue.take()) is not None:  # they would only fail the same way, one by one
                unsent.append(queued)
            if not self._closed:
                self._write_note(NOT_SENT_NOTE)
                self._events.not_sent(unsent)
            self.prompts.turn_ended()
            self._events.turn_ended("error")
            return
        self._layout.prompt(text if shown is None else shown, context)
        prompt_block = f"t{self._layout.turn}.user"
        self.prompts.sent(text, context, self._layout.turn)
        self.state.agent = "busy"
        self.state.suggestion = None  # the next prompt is sent: the last turn's suggestion is of no use
        self.state.usage.start_turn()
        self._cancelling = False
        self._turn_lost_agent = False
        self._answer, self._answer_chars = [], 0
        self._changed()
        note, self._next_prompt_note = self._next_prompt_note, None
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
                self._write_note("cancelled (the agent was restarted)")
            else:
                stop_reason = "error"  # the exit is reported once, by `exited`
                self._turn_lost_agent = True  # `exited` may come after this turn has ended
        except AgentError as error:
            stop_reason = "error"
            self._error(str(error))
        self._layout.end_blocks()
        self._layout.footer(turn_text(self.state.usage))
        if bridge.running:
            self.state.agent = "ready"
            if stop_reason == "cancelled":
                self._write_note("cancelled")
            elif stop_reason != "end_turn" and stop_reason != "error":
                self._write_note(f"stopped: {stop_reason}")
            if stop_reason != "error":
                self.connection.turn_succeeded()
        self.streamer.flush()
        self._changed()
        self.prompts.turn_ended(branch_point)
        if self._setup.index_turn is not None and stop_reason != "error" and session_id:
            # The turn's tool calls and requests: what they show of excluded files is kept out of the index.
            turn_blocks = self.streamer.transcript.blocks_from(prompt_block) + self.requests_shown(self._layout.turn)
            self._setup.index_turn(session_id, text, "".join(self._answer), turn_blocks)
        self._events.turn_ended(stop_reason)

    @threads.on_chat_loop
    async def _cancel(self, *, drop_queue: bool) -> None:
        dropped = self.queue.clear() if drop_queue else 0
        if dropped:
            self._write_note(f"{dropped} queued prompt(s) dropped")
        bridge = self._bridge
        if self.state.agent != "busy" or bridge is None or self.state.session_id is None:
            self._changed()
            return
        self._cancelling = True
        # The user's side first: an agent that stops reading its stdin blocks the
        # write of session/cancel for good, and the restart must still be offered.
        self._setup.request_handler().cancel_pending()  # ACP: the client answers them "cancelled" after session/cancel
        turn = self._layout.turn
        asyncio.get_running_loop().call_later(CANCEL_TIMEOUT, self._check_cancelled, turn)
        self._changed()
        try:
            await asyncio.wait_for(bridge.cancel(self.state.session_id), CANCEL_TIMEOUT)
        except (TimeoutError, ConnectionError) as error:
            log.warning("chat: session/cancel could not be sent (%s); the restart is offered", error or "timed out")

    @threads.on_chat_loop
    def _check_cancelled(self, turn: int) -> None:
        if self._cancelling and self.state.agent == "busy" and self._layout.turn == turn:
            self._events.cancel_timed_out()

    @threads.on_chat_loop
    async def _new_session(self) -> None:
        bridge = await self._ensure_ready()
        self._layout.clear()
        self.prompts.clear()
        await self._new(bridge)

    @threads.on_chat_loop
    async def _load_session(self, session_id: str) -> None:
        bridge = await self._ensure_ready()
        if session_id == self.state.session_id:
            return
        await self._load(bridge, session_id)

    @threads.on_chat_loop
    async def _resume_session(self, session_id: str, cwd: str | None, replay: bool) -> None:
        _adoptable(session_id)
        if self._session_bridge is None:
            self.state.session_id = session_id  # not started: its start takes this session
            self._resume_in = None if replay else cwd or ""
        bridge = await self._ensure_ready()
        if session_id != self.state.session_id:
            await self._load(bridge, session_id)

    @threads.on_chat_loop
    async def _list_history(self, folders: list[str]) -> list[SessionEntry]:
        bridge = await self._ensure_ready()
        return newest_first([await list_folder(bridge.list_page, folder) for folder in folders or [self._cwd()]])

    @threads.on_chat_loop
    async def _set_mode(self, mode_id: str) -> None:
        bridge = await self._ensure_ready()
        if not await self._set_config("mode", mode_id, bridge):
            await bridge.request("session/set_mode", {"sessionId": self.state.session_id, "modeId": mode_id})
        self.state.mode_id = mode_id

    @threads.on_chat_loop
    async def _set_model(self, model_id: str) -> None:
        bridge = await self._ensure_ready()
        if not await self._set_config("model", model_id, bridge):
            await bridge.request("session/set_model", {"sessionId": self.state.session_id, "modelId": model_id})
        self.state.model_id = model_id

    @threads.on_chat_loop
    async def _set_config(self, category: str, value: str, bridge: AgentBridge) -> bool:
        """session/set_config_option, when the agent offers `category` as a
        config option (ACP's way; the older methods only for agents without)."""
        if category not in self.state.config_ids:
            return False
        await self._request_option(bridge, self.state.config_ids[category], value)
        return True

    @threads.on_chat_loop
    async def _set_option(self, option_id: str, value: str | bool) -> None:
        bridge = await self._ensure_ready()
        await self._request_option(bridge, option_id, value)

    @threads.on_chat_loop
    async def _request_option(self, bridge: AgentBridge, option_id: str, value: str | bool) -> None:
        params: JsonObject = {"sessionId": self.state.session_id, "configId": option_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"  # ACP tells a boolean's request by its type
        answer = await bridge.request("session/set_config_option", params)
        if isinstance(answer, dict):  # every option as it now is
            self.state.adopt_config_options(answer.get("configOptions"))

    @threads.on_chat_loop
    async def _rewind(self, turn: int, text: str | None, files: FileRestorer | None, scope: str) -> RewindOutcome:
        if self._rewinding:
            raise RewindRefused("a rewind is running already", for_now=True)
        bridge = await self._ensure_ready()
        target = RewindTarget(self.state, self.prompts, lambda: len(self.queue) + self._draining,
                              bridge.request, self._layout.cut, self.send, self._note_next_prompt)
        self._rewinding = True
        try:
            return await rewind(target, turn, text, files, scope)
        finally:
            self._rewinding = False
            self._changed()
            if self.queue:
                self._submit(self._drain())

    def _note_next_prompt(self, note: str) -> None:
        self._next_prompt_note = note

    @threads.on_chat_loop
    async def _branch(self, turn: int) -> Branch:
        bridge = await self._ensure_ready()
        return await branch(self.state, self.prompts, len(self.queue) + self._draining, bridge.request, turn,
                            self._cwd(), live_points=bridge.answers_give_branch_points)

    @threads.on_chat_loop
    async def _ask_qwen(self, what: str, call: Callable[[QwenRequest], Awaitable[T]]) -> T:
        bridge = await self._ensure_ready()
        offered(self.state, what)
        session_id = self.state.session_id

        async def request(method: str, params: JsonObject) -> Any:
            return await bridge.request(method, {"sessionId": session_id, **params})

        return await call(request)

    @threads.on_chat_loop
    async def _restart(self) -> None:
        self.state.agent = "stopped"  # an exit asked for: no error line
        await self.connection.stop()  # the other chats reload their sessions when next used
        await self._start()
        self._write_note("The agent was restarted and the conversation reloaded.")

    # --- from the bridge --------------------------------------------------

    @threads.on_chat_loop
    def session_update(self, notification: SessionNotification) -> None:
        if notification.session_id != self.state.session_id and not self._replaying:
            return
        update = notification.update
        if isinstance(update, AgentMessageChunk):
            self._agent_text(chunk_text(update.content), update.field_meta)
        elif isinstance(update, UserMessageChunk):
            if self._replaying:  # live echoes of our own prompt are not shown twice
                self._layout.user_text(chunk_text(update.content))
                self.prompts.replayed(chunk_text(update.content), self._layout.turn)
        elif self.state.adopt_update(update):
            self._changed()
        else:
            self._setup.renderer().render(self._layout, notification.session_id, update)

    @threads.on_chat_loop
    def _agent_text(self, text: str, meta: dict[str, Any] | None) -> None:
        if self.state.adopt_usage(meta, replaying=self._replaying):
            self._changed()
        if is_command_output(meta) and is_qwen(self.state):  # a status qwen's slash command gave, not the model's
            self._layout.command_output(text)
            return
        if not self._replaying and self._answer_chars < TEXT_MAX_CHARS:
            self._answer.append(text[:TEXT_MAX_CHARS - self._answer_chars])
            self._answer_chars += len(self._answer[-1])
        self._layout.agent_text(text, replaying=self._replaying)

    @threads.on_chat_loop
    def ext_notification(self, method: str, params: JsonObject) -> None:
        if params.get("sessionId") not in (None, self.state.session_id):
            return
        if method == PROMPT_ELSEWHERE:
            text = str(params.get("text", ""))
            self._layout.prompt_elsewhere(text)
            self.prompts.replayed(text, self._layout.turn)
        elif method == PROMPT_STEERED and self._session_bridge is not None and self._session_bridge.offers_steer:
            # Only a bridge that steers says so: an agent's own notification of that name is no prompt of the user's.
            text, late = str(params.get("text", "")), params.get("late") is True
            self._layout.prompt_steered(text, late=late)
            self.prompts.replayed(text, self._layout.turn)
            if not self._replaying:  # a reattach shows it again, but it entered the session once
                self._events.steered(text, late)
        elif method == SUGGESTION_NOTIFICATION and is_qwen(self.state):  # the gate: another agent's is ignored
            self.state.suggestion = suggestion_of(params)
            self._changed()
        elif self.state.adopt_notification(method, params):
            self._changed()
        else:
            log.debug("ignored notification %s", method)

    @threads.on_chat_loop
    def exited(self, bridge: AgentBridge, returncode: int | None, stderr_tail: list[str], *,
               expected: bool = False) -> None:
        if bridge is not self._session_bridge:
            return  # this chat had no session on it
        lost_turn, self._turn_lost_agent = self.state.agent == "busy" or self._turn_lost_agent, False
        if expected and lost_turn:  # another chat restarted the agent they share
            self._write_note("The agent was restarted from another chat, which ended this turn; send again to go on.")
        stopped = self.state.agent == "stopped" or expected
        self.state.agent = "stopped" if expected else "exited"
        if not stopped:
            last = next((line for line in reversed(stderr_tail) if line.strip()), "")
            detail = f": {last[:200]}" if last and returncode != 0 else ""
            self._error(f"The agent exited (code {returncode}){detail}. The next prompt restarts it.")
        self._setup.request_handler().cancel_pending()  # nobody is left to wait for them
        self._changed()

    @threads.on_chat_loop
    def refused(self, message: str) -> None:
        """The agent sent what the editor drops (too large)."""
        self._error(message)
