"""What a chat asks of its session besides its prompts (`SessionCalls`):
a rewind, a branch, qwen's own methods (offers/). Owned by the chat's
`ChatCore`; each runs on the chat's thread and gives the caller a Future."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .. import threads
from ..json_types import JsonObject
from .agent.chat_thread import soon
from .agent.transport import AgentError
from .chat_side import ChatSide
from .history.branch import Branch, branch
from .history.rewind import FileRestorer, RewindOutcome, RewindRefused, RewindTarget, rewind
from .offers.qwen_calls import Request as QwenRequest, offered
from .session_lifecycle import SessionLifecycle

T = TypeVar("T")


class SessionCalls:
    def __init__(self, chat: ChatSide, sessions: SessionLifecycle) -> None:
        self._chat = chat
        self._sessions = sessions
        self.thread = chat.thread
        self.reported = chat.reported
        self.rewinding = False  # a prompt sent meanwhile waits for its end
        self.next_prompt_note: str | None = None  # a files-only rewind's note, for the model with the next prompt

    @soon
    @threads.on_chat_loop
    async def rewind(self, turn: int, text: str | None = None, files: FileRestorer | None = None,
                     scope: str = "all") -> RewindOutcome:
        """Back to before prompt `turn` (0-based), files too; with `text`, Edit
        and Resend (rewind.py). Fails with `RewindRefused` while a turn runs."""
        chat = self._chat
        if self.rewinding:
            raise RewindRefused("a rewind is running already", for_now=True)
        bridge = await self._sessions.ensure_ready()
        target = RewindTarget(chat.state, chat.prompts, self._queued, bridge.request, chat.layout.cut, chat.send,
                              self._note_next_prompt)
        self.rewinding = True
        try:
            return await rewind(target, turn, text, files, scope)
        finally:
            self.rewinding = False
            chat.changed()
            if chat.queue:
                self.thread.spawn(chat.drain(), "sending the queued prompts")

    def _queued(self) -> int:
        return len(self._chat.queue) + self._chat.draining

    def _note_next_prompt(self, note: str) -> None:
        self.next_prompt_note = note

    @soon
    @threads.on_chat_loop
    async def branch(self, turn: int) -> Branch:
        """A new session holding prompts 0..`turn` and their answers (branch.py);
        this chat's session is left as it is. Fails with `BranchRefused`."""
        bridge = await self._sessions.ensure_ready()
        return await branch(self._chat.state, self._chat.prompts, self._queued(), bridge.request, turn,
                            self._sessions.cwd(), live_points=bridge.answers_give_branch_points)

    @soon
    @threads.on_chat_loop
    async def ask_qwen(self, what: str, call: Callable[[QwenRequest], Awaitable[T]]) -> T:
        """`call` with a way to ask qwen's own methods of the chat's session
        (offers/), even while a turn runs; fails with `NotOffered` when the
        chat's agent is not qwen (`what` names the feature in that message)."""
        bridge = await self._sessions.ensure_ready()
        offered(self._chat.state, what)
        session_id = self._chat.state.session_id

        async def request(method: str, params: JsonObject) -> Any:
            return await bridge.request(method, {"sessionId": session_id, **params})

        return await call(request)

    @soon
    @threads.on_chat_loop
    async def sign_out(self) -> None:
        """ACP's `logout` on the chat's agent (the caller checked the agent announces it)."""
        bridge = self._chat.connection.bridge
        if bridge is None:
            raise AgentError("the agent is not running")
        await bridge.request("logout", {})
