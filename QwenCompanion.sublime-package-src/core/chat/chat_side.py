"""What the pieces of a chat's core (`SessionLifecycle`, `SessionCalls`)
use of the `ChatCore` that owns them (`ChatSide`), and how a chat is set up
(`ChatCoreSetup`). Every member is used on the chat's thread."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from ..json_types import JsonObject
from .agent.agent_connection import AgentConnection, SessionOwner
from .agent.chat_thread import ChatThread
from .agent.transport import AgentCommand
from .chat_state import ChatState
from .history.rewind import PromptLog
from .history.store import SessionStore
from .prompts.prompt_queue import PromptQueue
from .requests.request_handler import AgentRequestHandler
from .transcript.render import UpdateRenderer
from .transcript.transcript_layout import TranscriptLayout


@dataclass(frozen=True)
class ChatCoreSetup:
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


class ChatSide(SessionOwner, Protocol):
    thread: ChatThread
    setup: ChatCoreSetup
    state: ChatState
    prompts: PromptLog  # the session's prompts, for a rewind
    queue: PromptQueue
    layout: TranscriptLayout
    connection: AgentConnection
    closed: bool  # `close` is final: nothing of this chat starts its agent again
    draining: bool  # the queue's prompts are being sent

    def changed(self) -> None:
        """The chat's state changed: its status and display follow."""

    def error(self, message: str) -> None:
        """`message` in the transcript and told to the chat's user."""

    def write_note(self, text: str) -> None:
        """A line of the chat's own in the transcript."""

    def reported(self, work: Coroutine[Any, Any, None]) -> Coroutine[Any, Any, None]:
        """`work`, its AgentError said in the chat."""
        ...

    def send(self, text: str, context: list[JsonObject] | None = None, *, first: bool = False,
             attached: dict[str, JsonObject] | None = None, shown: str | None = None) -> bool: ...

    async def drain(self) -> None:
        """Send the queued prompts, one turn each."""
