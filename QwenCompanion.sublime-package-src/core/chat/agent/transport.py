"""What a chat needs of its agent's transport (`AgentTransport`), and what
every transport shares: the command that starts the agent, the errors it
raises, the events it reports and what the agent's `initialize` answer says
it can do. Two transports implement it: `StdioBridge` (stdio_bridge.py: one
`qwen --acp` process) and `ServeBridge` (core/serve/serve_bridge.py: a
`qwen serve` daemon's HTTP routes).

A transport runs on the chat's asyncio thread, except `kill`, which any
thread may call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from acp.schema import AgentCapabilities, InitializeResponse, LoadSessionResponse, NewSessionResponse, PromptResponse

from ...cli.path_maps import PathTranslator
from ...json_types import JsonObject
from .acp_client import AgentNotifications
from .agents import can_load, can_resume, speaks_qwen


class BridgeEvents(AgentNotifications, Protocol):
    """What a transport reports; called on the chat's asyncio thread."""

    def exited(self, returncode: int | None, stderr_tail: list[str]) -> None: ...

    def refused(self, message: str) -> None:
        """Something the agent sent was dropped (too large): tell the user."""


@dataclass(frozen=True)
class AgentCommand:
    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    agent: str = "qwen"  # its name in the chat_agents setting
    # An agent elsewhere (WSL, a container, SSH): its paths, translated at its lines.
    remote_paths: PathTranslator | None = None
    # The window's folders: a session's other roots besides its cwd.
    folders: tuple[str, ...] = ()


PROMPT_ELSEWHERE = "_qwencompanion/prompt_elsewhere"
"""The notification a bridge sends for a prompt another client of a shared
session sent (`{sessionId, text}`, a piece at a time), shown as a prompt."""

PROMPT_STEERED = "_qwencompanion/prompt_steered"
"""The notification a bridge that `offers_steer` sends when a steer entered
the session (`{sessionId, messageId, text, late}`; `late`: its turn had
ended, so it went as a turn of its own), shown as a prompt marked steered."""


class AgentError(Exception):
    """A request the agent answered with an error, or could not answer."""


class AgentGone(AgentError):
    """The agent exited (or closed stdout) before answering."""


class AgentAbilities:
    """What the agent's `initialize` answer says it can do (None until it started)."""

    def __init__(self) -> None:
        self.initialized: InitializeResponse | None = None

    @property
    def capabilities(self) -> AgentCapabilities | None:
        return self.initialized.agent_capabilities if self.initialized is not None else None

    @property
    def can_load(self) -> bool:
        return can_load(self.capabilities)

    @property
    def can_resume(self) -> bool:
        return can_resume(self.capabilities)

    @property
    def speaks_qwen(self) -> bool:
        """qwen's own methods may be sent (see `agents.speaks_qwen`)."""
        return speaks_qwen(self.initialized.agent_info if self.initialized is not None else None)


class AgentTransport(Protocol):
    """The agent a chat's session is open on, however it is reached."""

    command: AgentCommand
    abilities: AgentAbilities
    pid: int | None
    started_at: float
    stderr_lines: list[str]  # bounded; for Show Agent Log

    @property
    def running(self) -> bool: ...

    @property
    def answers_give_branch_points(self) -> bool:
        """A prompt's answer carries qwen's branch point (`branch.py`)."""
        ...

    @property
    def offers_steer(self) -> bool:
        """Whether words can be added to a running turn."""
        ...

    # --- lifecycle ---------------------------------------------------------

    async def start(self) -> InitializeResponse: ...

    async def stop(self) -> None: ...

    async def reap(self) -> None:
        """Wait (briefly) for a killed agent's exit."""

    def release(self) -> None:
        """Let go of what still ties the loop to an agent that is gone."""

    def kill(self) -> None:
        """End the agent now (any thread; idempotent)."""

    # --- the session -------------------------------------------------------

    async def request(self, method: str, params: JsonObject) -> Any:
        """`method` with `params` as given; the answer as it came."""

    async def new_session(
        self, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> tuple[NewSessionResponse, JsonObject]: ...

    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> tuple[LoadSessionResponse, JsonObject]: ...

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[JsonObject], folders: list[str]
    ) -> JsonObject:
        """The session goes on without replaying its messages."""

    async def list_page(self, cwd: str, cursor: str | None) -> Any:
        """One page of the folder's sessions in session/list's shape."""

    def replays(self, session_id: str) -> bool:
        """`catch_up` would show what the session holds (one shared with other clients)."""

    async def catch_up(self, session_id: str) -> None:
        """Hand the attached session's earlier events over as a replay."""

    async def prompt(self, session_id: str, blocks: list[JsonObject]) -> PromptResponse: ...

    def can_steer(self, text: str, context: list[JsonObject]) -> bool:
        """Whether a prompt of `text` with `context` attached can be added to a running turn."""

    async def steer(self, session_id: str, text: str, context: list[JsonObject]) -> bool:
        """Add `text` (and `context`) to the running turn; False when no turn runs to take it."""

    async def cancel(self, session_id: str) -> None: ...
