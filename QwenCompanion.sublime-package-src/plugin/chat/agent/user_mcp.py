"""The user's MCP servers (`chat_mcp_servers`) of one chat's sessions.

Read through `userprefs()` like `chat_agents`: from the package's settings
files (the user's), which a project's settings never reach. What the chat
cannot pass (a bad entry, keys ACP has no place for, a kind the agent does
not take) is said in the chat once per chat, and the chat starts without
it. On the serve transport the same entries go to the daemon through
client-MCP (core/serve/client_mcp.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ....core.chat.agent.agents import servers_for
from ....core.chat.agent.user_mcp_servers import left_out_by_agent, user_servers
from ...settings import userprefs

if TYPE_CHECKING:
    from acp.schema import InitializeResponse

    from ....core.json_types import JsonObject


class ChatMcpServers:
    """The user's servers for one chat; `said` keeps each note to once."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._said: set[str] = set()
        self._lock = threading.Lock()
        self.given: list[str] = []  # the servers' names last handed to the agent's session

    def entries(self, own: list[JsonObject], agent: str, initialized: InitializeResponse | None) -> list[JsonObject]:
        """The package's `own` entries and the user's usable servers (the agent's thread)."""
        read = user_servers(userprefs().chat_mcp_servers)
        notes = read.problems + read.not_passed
        entries = read.entries
        if initialized is not None:
            taken = servers_for(entries, initialized.agent_capabilities)
            left_out = left_out_by_agent(agent, taken, entries)
            notes += [left_out] if left_out else []
            entries = taken
        for note in notes:
            self._once(note)
        capabilities = initialized.agent_capabilities if initialized is not None else None
        self.given = [str(entry["name"]) for entry in servers_for(own + entries, capabilities)]
        return own + entries

    def _once(self, note: str) -> None:
        with self._lock:
            if note in self._said:
                return
            self._said.add(note)
        self._say(note)
