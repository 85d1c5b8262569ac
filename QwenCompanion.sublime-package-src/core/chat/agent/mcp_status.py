"""The MCP servers a chat's agent sees, for MCP Servers… (pure; its calls wait:
run them off Sublime's threads).

qwen 0.24.4 (probed over ACP): a session's servers, the ones `mcpServers`
gave it, are listed only by `qwen/status/session/resources` (its `mcp` cell:
`servers: [{name, status, mcpStatus, errorKind?, hint?}]`);
`qwen/status/workspace/mcp` lists only the servers of qwen's own settings.
`qwen/status/workspace/mcp/tools` and `qwen/control/workspace/mcp/restart`
know only those too: for a session's server they answer "MCP server not
configured". So tools come from the first where qwen has them, and a
session's server is restarted with the chat's agent. Other agents have no
such methods: the servers the chat gave them are listed, status "configured".

Everything the agent sends is bounded (strings, lists) and cleaned of
control and bidi characters here, before any panel shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...display_text import display_text
from ...json_types import JsonObject

SESSION_RESOURCES = "qwen/status/session/resources"
MCP_TOOLS = "qwen/status/workspace/mcp/tools"
MCP_RESTART = "qwen/control/workspace/mcp/restart"
MAX_CHARS = 64 * 1024
MAX_ITEMS = 1000
NOT_CONFIGURED = "MCP server not configured"
CONFIGURED = "configured"  # the status of a server another agent was given

type Call = Callable[[str, JsonObject], Any]


@dataclass(frozen=True)
class McpServerRow:
    name: str
    status: str
    tools: list[str] = field(default_factory=list)
    problem: str = ""  # what the agent says went wrong ("" when nothing)
    key: str = ""  # the name as the agent spelled it (bounded, uncleaned): what its methods are asked with

    def json(self) -> JsonObject:
        return {"name": self.name, "status": self.status, "tools": self.tools,
                **({"problem": self.problem} if self.problem else {})}


def shown(value: object) -> str:
    """An agent's string as a panel may show it: bounded, one line, no control or bidi characters."""
    return display_text(value[:MAX_CHARS], MAX_CHARS) if isinstance(value, str) else ""


def _items(value: object) -> list[Any]:
    return value[:MAX_ITEMS] if isinstance(value, list) else []


def _status_of(server: JsonObject) -> str:
    status, connection = shown(server.get("status")), shown(server.get("mcpStatus"))
    return " · ".join(part for part in (status, connection) if part) or "unknown"


def _problem_of(server: JsonObject) -> str:
    parts = (shown(server.get(key)) for key in ("errorKind", "error", "hint", "authenticationError"))
    return " ".join(part for part in parts if part)


def session_rows(answer: object) -> list[McpServerRow]:
    """The servers of a `qwen/status/session/resources` answer."""
    cell = answer.get("mcp") if isinstance(answer, dict) else None
    servers = cell.get("servers") if isinstance(cell, dict) else None
    rows = []
    for server in _items(servers):
        if isinstance(server, dict) and shown(server.get("name")):
            key = server["name"][:MAX_CHARS]
            rows.append(McpServerRow(shown(key), _status_of(server), problem=_problem_of(server), key=key))
    return rows


def tool_names(answer: object) -> list[str] | None:
    """The tools of a `qwen/status/workspace/mcp/tools` answer; None when qwen does not know the server."""
    if not isinstance(answer, dict):
        return None
    errors = [shown(e.get("error")) for e in _items(answer.get("errors")) if isinstance(e, dict)]
    if any(error.startswith(NOT_CONFIGURED) for error in errors):
        return None
    return [name for tool in _items(answer.get("tools")) if isinstance(tool, dict) and (name := shown(tool.get("name")))]


def qwen_servers(call: Call, session_id: str) -> list[McpServerRow]:
    """What qwen reports of the session's servers, each with its tools where qwen lists them."""
    rows = session_rows(call(SESSION_RESOURCES, {"sessionId": session_id}))
    listed = []
    for row in rows:
        tools = tool_names(call(MCP_TOOLS, {"serverName": row.key}))
        listed.append(McpServerRow(row.name, row.status, tools or [], row.problem, row.key))
    return listed


def configured_servers(names: list[str]) -> list[McpServerRow]:
    """The servers the chat gave an agent that reports none."""
    return [McpServerRow(shown(name), CONFIGURED, key=name) for name in names[:MAX_ITEMS]]


def restart_server(call: Call, name: str) -> bool:
    """Ask qwen to restart `name`: False when qwen knows it only in the session
    (restart the chat's agent then); other refusals are raised."""
    try:
        call(MCP_RESTART, {"serverName": name})
    except Exception as error:
        if NOT_CONFIGURED in str(error):
            return False
        raise
    return True
