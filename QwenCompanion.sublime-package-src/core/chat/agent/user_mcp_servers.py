"""The user's own MCP servers (the `chat_mcp_servers` setting) as ACP
`mcpServers` entries (pure).

The setting has the shape of `mcpServers` in qwen's settings.json: by name, a
stdio server `{"command", "args", "env", "cwd"}` or an HTTP one
`{"httpUrl" | "url", "headers"}`. As in qwen, `httpUrl` is streamable HTTP
and `url` is SSE; they become ACP's `http` and `sse` entries, which go only
to an agent whose `mcpCapabilities` take them (`agents.servers_for`).

ACP's stdio entry has no working directory: qwen 0.24.4 builds the session's
server from command, args and env alone (`newSessionConfigInRuntimeContext`),
so the server starts in the agent process's own working directory, with the
agent's environment plus `env`. `cwd` and qwen's other keys (`timeout`,
`trust`, `includeTools`…) are accepted and named as not passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...display_text import display_text
from ...ide_tools import SERVER_NAME
from ...json_types import JsonObject

STDIO_KEYS = ("command", "args", "env", "cwd")
HTTP_KEYS = ("httpUrl", "url", "headers")
NAME_MAX_CHARS = 200


@dataclass(frozen=True)
class UserServers:
    """The usable servers as ACP entries, why the others are left out, and
    what ACP cannot carry of the usable ones (each a sentence)."""

    entries: list[JsonObject]
    problems: list[str]
    not_passed: list[str]


def _strings_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and k and isinstance(v, str) for k, v in value.items())


def _pairs(value: Mapping[str, str]) -> list[JsonObject]:
    return [{"name": name, "value": text} for name, text in value.items()]


def server_problem(name: str, raw: object) -> str | None:
    """Why `raw` is no usable server named `name` (None: it is)."""
    if not name.strip() or len(name) > NAME_MAX_CHARS or display_text(name, NAME_MAX_CHARS) != name:
        return "needs a name of printable characters"
    if name == SERVER_NAME:
        return "has the name of the package's own IDE tools server"
    if not isinstance(raw, dict):
        return "must be an object with \"command\" (stdio) or \"httpUrl\" / \"url\" (HTTP)"
    given = [key for key in ("command", "httpUrl", "url") if key in raw]
    if len(given) != 1:
        return "needs exactly one of \"command\", \"httpUrl\" and \"url\""
    if given == ["command"]:
        if not (isinstance(raw["command"], str) and raw["command"].strip()):
            return "needs a \"command\" that is a non-empty string"
        args = raw.get("args", [])
        if not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
            return "needs \"args\" that is a list of strings"
        if not _strings_map(raw.get("env", {})):
            return "needs an \"env\" that maps names to strings"
        if not isinstance(raw.get("cwd", ""), str):
            return "needs a \"cwd\" that is a string"
        if "headers" in raw:
            return "has \"headers\", which only an HTTP server takes"
        return None
    url = raw[given[0]]
    if not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        return f"needs a \"{given[0]}\" that starts with http:// or https://"
    if not _strings_map(raw.get("headers", {})):
        return "needs \"headers\" that maps names to strings"
    stdio_keys = sorted(set(raw) & {"args", "env", "cwd"})
    if stdio_keys:
        return f"has {', '.join(stdio_keys)}, which only a stdio server takes"
    return None


def acp_entry(name: str, raw: JsonObject) -> JsonObject:
    """A usable server (see `server_problem`) as ACP's McpServer entry."""
    if "command" in raw:
        return {"name": name, "command": raw["command"], "args": list(raw.get("args", [])),
                "env": _pairs(raw.get("env", {}))}
    kind, url = ("http", raw["httpUrl"]) if "httpUrl" in raw else ("sse", raw["url"])
    return {"type": kind, "name": name, "url": url, "headers": _pairs(raw.get("headers", {}))}


def user_servers(setting: object) -> UserServers:
    """The `chat_mcp_servers` setting read: its usable servers, the others left out."""
    if setting is None:
        return UserServers([], [], [])
    if not isinstance(setting, dict):
        return UserServers([], ["chat_mcp_servers must be an object of servers by name; no server is passed"], [])
    entries: list[JsonObject] = []
    problems: list[str] = []
    not_passed: list[str] = []
    for name, raw in setting.items():
        shown = display_text(str(name), NAME_MAX_CHARS)
        problem = server_problem(name, raw)
        if problem is not None:
            problems.append(f"The MCP server “{shown}” of chat_mcp_servers {problem}; it is left out.")
            continue
        entries.append(acp_entry(name, raw))
        extra = sorted(set(raw) - set(STDIO_KEYS) - set(HTTP_KEYS))
        if raw.get("cwd"):
            extra.insert(0, "cwd (it starts in the agent's working directory)")
        if extra:
            not_passed.append(f"The MCP server “{shown}” gets no {', '.join(extra)}: ACP has no place for them.")
    return UserServers(entries, problems, not_passed)


def left_out_by_agent(agent: str, sent: list[JsonObject], given: list[JsonObject]) -> str | None:
    """The sentence naming the user's servers the agent does not take (None: it takes all)."""
    names = [str(entry["name"]) for entry in given if entry not in sent]
    if not names:
        return None
    return (f"{agent} takes no HTTP or SSE MCP servers of this kind (its mcpCapabilities): "
            f"{', '.join(names)} not passed.")
