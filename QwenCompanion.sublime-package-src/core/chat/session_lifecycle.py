"""A chat's session over its agent's life (`SessionLifecycle`): the agent
started and the session opened on it (new, reloaded, resumed or taken
over, authenticating first where the agent asks), a shared session's
earlier events caught up, the session's answer adopted, a restart, the
folder's earlier sessions listed. Owned by the chat's `ChatCore`; its
public coroutines run on the chat's thread and give the caller a Future."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from .. import threads
from ..cli.cli_command import CommandNotFound
from ..cli.qwen_home import SIGN_IN_HINT
from ..display_text import display_text
from ..json_types import JsonObject
from .agent.chat_thread import soon, soon_reported
from .agent.session_ids import session_id_or_none, session_id_refusal
from .agent.transport import AgentError, AgentGone, AgentTransport
from .chat_side import ChatSide
from .history.history import SavedConversation, list_folder, newest_first

log = logging.getLogger(__name__)
T = TypeVar("T")

AGENT_NAME_MAX_CHARS = 100  # its `agentInfo` name and version, as Diagnose and /status show them
RESUMED_NOTE = "Resumed: the agent has this conversation's earlier messages; they are not shown again here."
GAVE_UP_NOTE = "Gave up loading the conversation; this is a new one."
AUTH_REQUIRED = -32000


class NotSignedIn(AgentError):
    """The agent refused a session until the user signs in."""


class StartFailed(AgentError):
    """The agent or its session could not be started; the chat has said why (once)."""


class GaveUp(AgentError):
    """The user gave up on a slow session/load or session/resume (Cancel
    Chat Turn, or the chat closed)."""


def adoptable(session_id: object) -> str:
    """`session_id` if the chat may take it as its session (session_ids.py), else AgentError."""
    checked = session_id_or_none(session_id)
    if checked is None:
        raise AgentError(session_id_refusal(session_id))
    return checked


class SessionLifecycle:
    def __init__(self, chat: ChatSide) -> None:
        self._chat = chat
        self.thread = chat.thread
        self.reported = chat.reported
        self.bridge: AgentTransport | None = None  # the agent process our session is open on
        self.replaying = False  # the transcript is being rebuilt from the session's replay
        self._ready_lock: asyncio.Lock | None = None
        self._start_failure_shown = ""  # the last start failure said, until a start succeeds: not said twice
        self._resume_in: str | None = None  # the folder of the session the start resumes
        self._opening: asyncio.Task[Any] | None = None  # the session/load or resume out: `give_up` ends it
        self._given_up: asyncio.Task[Any] | None = None
        self._given_up_session: str | None = None  # the session last given up on: not opened again unasked

    # --- any thread: each runs on the chat's thread --------------------------

    @soon_reported
    @threads.on_chat_loop
    async def start(self) -> None:
        """Start the agent and its session now (prestart, or a picker)."""
        await self.ensure_ready()

    @soon_reported
    @threads.on_chat_loop
    async def new_session(self) -> None:
        bridge = await self.ensure_ready()
        self._chat.layout.clear()
        self._chat.prompts.clear()
        await self._new(bridge)

    @soon_reported
    @threads.on_chat_loop
    async def load_session(self, session_id: str) -> None:
        bridge = await self.ensure_ready()
        if session_id == self._chat.state.session_id:
            return
        await self._load_or_new(bridge, session_id)

    @soon_reported
    @threads.on_chat_loop
    async def resume_session(self, session_id: str, cwd: str | None = None, replay: bool = False) -> None:
        """Go on with an earlier session (of folder `cwd`, default the agent's):
        a chat not started yet starts on it, with session/resume where the
        agent offers it (nothing replayed), else session/load; with `replay`,
        session/load, which shows its conversation (a branch's)."""
        adoptable(session_id)
        self._given_up_session = None
        if self.bridge is None:
            self._chat.state.session_id = session_id  # not started: its start takes this session
            self._resume_in = None if replay else cwd or ""
        bridge = await self.ensure_ready()
        if session_id not in (self._chat.state.session_id, self._given_up_session):  # the start gave it up: done
            await self._load_or_new(bridge, session_id)

    @soon_reported
    @threads.on_chat_loop
    async def restart(self) -> None:
        """End the agent and start it again on the same session."""
        self._chat.state.agent_status = "stopped"  # an exit asked for: no error line
        await self._chat.connection.stop()  # the other chats reload their sessions when next used
        await self.ensure_ready()
        self._chat.write_note("The agent was restarted and the conversation reloaded.")

    @soon
    @threads.on_chat_loop
    async def list_history(self, folders: list[str]) -> list[SavedConversation]:
        """The sessions of `folders` (default: the agent's folder), newest first, bounded."""
        bridge = await self.ensure_ready()
        return newest_first([await list_folder(bridge.list_page, folder) for folder in folders or [self.cwd()]])

    # --- the chat's thread ---------------------------------------------------

    @threads.on_chat_loop
    async def ensure_ready(self) -> AgentTransport:
        """The agent, started (and the session opened on it) when it is not."""
        chat, state = self._chat, self._chat.state
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if chat.closed:  # e.g. a mode change that came after the chat was closed
                raise AgentGone("the chat is closed")
            bridge = chat.connection.bridge
            if (bridge is not None and bridge.running and bridge is self.bridge
                    and state.agent_status not in ("stopped", "exited")):
                return bridge
            state.agent_status, state.stopped_why = "starting", ""
            chat.changed()
            try:
                bridge = await self._open(await chat.connection.ready(chat.write_note))
            except AgentError as error:
                self._start_failed(error)
                raise StartFailed(str(error)) from error
            self._start_failure_shown = ""
            self.bridge = bridge
            state.agent_status = "ready"
            return bridge

    @threads.on_chat_loop
    def _start_failed(self, error: AgentError) -> None:
        """The chat is stopped, with why (its status says it); the reason is
        written once, however often a start fails the same way in a row."""
        state = self._chat.state
        state.agent_status = "stopped"
        cause = error.__cause__
        state.stopped_why = ("not signed in" if isinstance(error, NotSignedIn)
                             else "agent not found" if isinstance(cause, CommandNotFound) else "could not start")
        message = str(error)
        if message != self._start_failure_shown and not self._chat.closed:
            self._chat.error(message)
        self._start_failure_shown = message

    @threads.on_chat_loop
    async def _open(self, bridge: AgentTransport) -> AgentTransport:
        """The chat's session on the started `bridge`: resumed, reloaded or new."""
        chat, state, setup = self._chat, self._chat.state, self._chat.setup
        state.agent_name = display_text(chat.connection.agent_name, AGENT_NAME_MAX_CHARS)
        state.accepts_images = chat.connection.accepts_images
        session_id = state.session_id
        resume_in, self._resume_in = self._resume_in, None
        held = setup.held_elsewhere(session_id) if session_id and setup.held_elsewhere else None
        if held is not None:  # e.g. the folder's last conversation, continued in the terminal since
            chat.write_note(f"{held}. This is a new conversation.")
            session_id = state.session_id = None
        if session_id is not None and resume_in is not None and bridge.abilities.can_resume:
            try:
                await self._resume(bridge, session_id, resume_in)
            except AgentError as error:
                await self._new_instead(bridge, error, f"The conversation could not be resumed ({error}); this is a new one.")
        elif session_id is not None and bridge.abilities.can_load:
            try:
                await self._load(bridge, session_id)
            except AgentError as error:
                log.warning("could not reload session %s (%s); starting a new one", session_id, error)
                await self._new_instead(bridge, error,
                                        f"The previous conversation could not be reloaded ({error}); this is a new one.")
        else:
            if resume_in is not None:
                chat.write_note(f"{bridge.command.agent} cannot resume or load earlier conversations; "
                                "this is a new one.")
            await self._new(bridge)
        return bridge

    @threads.on_chat_loop
    async def _new_instead(self, bridge: AgentTransport, error: AgentError, why: str) -> None:
        """A new session in place of the one that could not be opened (`why`
        says so) or that the user gave up on; none for a closed chat."""
        if isinstance(error, GaveUp):
            if self._chat.closed:
                raise AgentGone("the chat is closed") from error
            why = GAVE_UP_NOTE
        self._chat.write_note(why)
        await self._new(bridge)

    @threads.on_chat_loop
    async def _load_or_new(self, bridge: AgentTransport, session_id: str) -> None:
        """Load `session_id` into the started chat; a new session if the user gives up on it."""
        try:
            await self._load(bridge, session_id)
        except GaveUp as error:
            if not self._chat.closed:
                await self._new_instead(bridge, error, GAVE_UP_NOTE)

    @threads.on_chat_loop
    def give_up(self) -> bool:
        """Give up on the session/load or session/resume out, if one is (the
        bridge tells the agent with `$/cancel_request`, and its late answer is
        dropped); the chat goes on with a new session (`_new_instead`)."""
        task = self._opening
        if task is None or task.done():
            return False
        self._given_up = task
        task.cancel()
        return True

    @threads.on_chat_loop
    async def _given_up_on(self, session_id: str, call: Coroutine[Any, Any, T]) -> T:
        """`call` (opening `session_id`) in a task of its own: the one `give_up` cancels."""
        task: asyncio.Task[T] = asyncio.ensure_future(call)
        self._opening = task
        try:
            return await task
        except asyncio.CancelledError:
            if self._given_up is not task:  # the chat's thread is ending: not the user's doing
                raise
            self._given_up_session = session_id
            raise GaveUp("gave up loading the conversation") from None
        finally:
            self._opening = self._given_up = None

    @threads.on_chat_loop
    async def _authenticated(self, bridge: AgentTransport, call: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """`call()`, authenticating first when qwen says it must (its first
        method signs in from its settings and environment). Another agent's
        methods may start a browser sign-in or drop its saved sign-in: the
        user signs in where the agent says how."""
        connection = self._chat.connection
        try:
            return await call()
        except AgentError as error:
            cause = error.__cause__
            if getattr(cause, "code", None) != AUTH_REQUIRED or not connection.auth_methods:
                raise
            if not bridge.abilities.speaks_qwen:
                raise NotSignedIn(f"{bridge.command.agent} is not signed in ({error}). Sign in to "
                                  f"{bridge.command.agent} in a terminal; then send again.") from error
        method = connection.auth_methods[0]
        try:
            await bridge.request("authenticate", {"methodId": method})
        except AgentError as error:
            raise NotSignedIn(f"{bridge.command.agent} is not signed in ({error}). {SIGN_IN_HINT} "
                              "(Qwen Code: Sign In runs qwen's sign-in in a terminal); then send again.") from error
        return await call()

    @threads.on_chat_loop
    def cwd(self) -> str:
        """The folder the session works in."""
        bridge = self._chat.connection.bridge
        if self._chat.setup.cwd is not None:
            return self._chat.setup.cwd
        return bridge.command.cwd if bridge is not None else ""

    @threads.on_chat_loop
    def _folders(self) -> list[str]:
        """The session's other roots: the window's folders; none for a chat in
        a worktree of its own, whose agent must not reach past it."""
        bridge = self._chat.connection.bridge
        if self._chat.setup.cwd is not None or bridge is None:
            return []
        return list(bridge.command.folders)

    @threads.on_chat_loop
    async def _new(self, bridge: AgentTransport) -> None:
        chat = self._chat
        chat.state.usage.new_session()
        with chat.connection.opening():
            response, raw = await self._authenticated(
                bridge, lambda: bridge.new_session(self.cwd(), chat.setup.mcp_servers(), self._folders())
            )
            chat.connection.claim(adoptable(response.session_id), chat)
        self._adopt(response.session_id, raw)
        if bridge.replays(response.session_id):
            await self._catch_up(bridge, response.session_id)

    @threads.on_chat_loop
    async def _catch_up(self, bridge: AgentTransport, session_id: str) -> None:
        """A session shared with other clients (qwen serve), attached again:
        its earlier events rebuild the transcript, as a reload's replay does."""
        try:
            with self._rebuilt_by_replay():
                await bridge.catch_up(session_id)  # the answer may go on live: its block stays open
        finally:
            self._chat.changed()

    @contextlib.contextmanager
    def _rebuilt_by_replay(self) -> Iterator[None]:
        """An empty transcript and prompt log, which the session's replay
        (session/load's, or the daemon's) fills meanwhile."""
        self._chat.layout.clear()
        self._chat.prompts.clear()
        self.replaying = True
        try:
            yield
        finally:
            self.replaying = False

    @threads.on_chat_loop
    async def _load(self, bridge: AgentTransport, session_id: str) -> None:
        chat = self._chat
        chat.connection.claim(adoptable(session_id), chat)  # its replay comes to this chat
        chat.state.usage.new_session()
        try:
            with self._rebuilt_by_replay():
                _, raw = await self._authenticated(
                    bridge, lambda: self._given_up_on(
                        session_id, bridge.load_session(session_id, self.cwd(), chat.setup.mcp_servers(), self._folders()))
                )
        finally:
            chat.layout.end_blocks()
        self._adopt(session_id, raw)
        if bridge.replays(session_id):  # one qwen serve still runs: its conversation comes from the daemon's ring
            await self._catch_up(bridge, session_id)

    @threads.on_chat_loop
    async def _resume(self, bridge: AgentTransport, session_id: str, cwd: str) -> None:
        chat = self._chat
        chat.connection.claim(adoptable(session_id), chat)
        chat.layout.clear()
        chat.state.usage.new_session()
        chat.prompts.clear()
        raw = await self._authenticated(
            bridge, lambda: self._given_up_on(session_id, bridge.resume_session(session_id, cwd or self.cwd(),
                                                                    chat.setup.mcp_servers(), self._folders()))
        )
        self._adopt(session_id, raw)
        chat.write_note(RESUMED_NOTE)

    @threads.on_chat_loop
    def _adopt(self, session_id: str, raw: JsonObject) -> None:
        """Take the session and what its answer offers (modes, models)."""
        state, setup = self._chat.state, self._chat.setup
        # The session's id last: another thread that sees it sees what the session offers.
        state.adopt_session(raw)
        state.suggestion = None  # the last session's follow-up
        state.session_id = session_id
        if setup.key is not None:
            setup.store.put(setup.key, session_id)
        self._chat.changed()
