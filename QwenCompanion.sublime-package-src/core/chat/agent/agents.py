"""Which ACP agent a chat runs, and what the chat may send it (pure).

The setting `chat_agents` names agents: `{"command": ..., "env": {...}}`
each. `qwen` and `gemini` are always known: without a `command` they run
`qwen_command` / `gemini_command` with `--acp` (the flag of qwen 0.24.4 and of
gemini-cli 0.61.0, which keeps `--experimental-acp` only as a deprecated
alias). Any other agent needs its whole command, flags included.
An agent that runs elsewhere (`wsl.exe -d Ubuntu qwen --acp`, `docker exec`,
`ssh`) says so with `"path_map": true` (the `path_maps` and `wsl_distro`
settings) or its own `"path_maps": [{"local": …, "remote": …}]`: its paths
are then translated (remote_paths.py).

What is sent follows what the agent says in its `initialize` answer, never
its name alone: session/load only with `loadSession`, session/list only with
`sessionCapabilities.list`, session/resume only with
`sessionCapabilities.resume`, an HTTP or SSE MCP server only with the
matching `mcpCapabilities`, embedded resources and images only with the matching
`promptCapabilities`. qwen's own extensions go only to an agent that
`speaks_qwen`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...cli.cli_command import ACP_FLAG, CommandNotFound, agent_argv
from ...cli.path_maps import parse_path_maps
from ...json_types import JsonObject

if TYPE_CHECKING:  # the settings import this module: the ACP library's models load later, off the main thread
    from acp.schema import AgentCapabilities, Implementation

# Titles taken from an agent or given by the user: qwen refuses longer ones on
# renameSession, so a chat's name and its session's title stay the same.
TITLE_MAX_CHARS = 200
# The sessions kept of an agent's session/list (Chat History): the newest
# first as agents list them; a list of 200,000 is not held (+230 MB).
MAX_LISTED_SESSIONS = 1000


QWEN = "qwen"
GEMINI = "gemini"
BUILT_IN = (QWEN, GEMINI)
# What qwen answers `initialize` with as `agentInfo.name` (0.24.4).
QWEN_AGENT_NAME = "qwen-code"
INSTALL = {
    QWEN: "Install Qwen Code (npm install -g @qwen-code/qwen-code)",
    GEMINI: "Install gemini-cli (npm install -g @google/gemini-cli)",
}


@dataclass(frozen=True)
class AgentEntry:
    """One agent of `chat_agents`. `command` None: the built-in CLI's command setting with `--acp`."""

    command: str | list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    # Where it runs elsewhere: True for the path_maps / wsl_distro settings, or its own maps (raw entries).
    path_maps: bool | list[JsonObject] = False


@dataclass(frozen=True)
class AgentLaunch:
    argv: list[str]
    env: dict[str, str]


def entry_problem(name: str, raw: object) -> str | None:
    """Why `raw` is no usable `chat_agents` entry named `name` (None: it is)."""
    if not name.strip():
        return "needs a name"
    if not isinstance(raw, dict):
        return "must be an object with \"command\" and \"env\""
    command = raw.get("command")
    if command is None:
        if name not in BUILT_IN:
            return "needs a \"command\" (only qwen and gemini have one built in)"
    elif not (isinstance(command, str) and command.strip()) and not (
        isinstance(command, list) and command and all(isinstance(word, str) and word for word in command)
    ):
        return "needs a \"command\" that is a non-empty string or list of strings"
    env = raw.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in env.items()):
        return "needs an \"env\" that maps names to strings"
    if not isinstance(raw.get("path_map", False), bool):
        return "needs a \"path_map\" that is true or false"
    if "path_maps" in raw:
        if "path_map" in raw:
            return "has both \"path_map\" and \"path_maps\": give one"
        maps = raw["path_maps"]
        if not maps or parse_path_maps(maps)[1]:
            return "needs \"path_maps\" that is a list of {\"local\": absolute path, \"remote\": path starting with /}"
    unknown = sorted(set(raw) - {"command", "env", "path_map", "path_maps"})
    if unknown:
        return f"has keys no agent uses: {', '.join(unknown)}"
    return None


def known_agents(configured: Mapping[str, JsonObject]) -> dict[str, AgentEntry]:
    """qwen and gemini, then the configured entries (valid ones: see `entry_problem`)."""
    agents = {name: AgentEntry() for name in BUILT_IN}
    for name, raw in configured.items():
        command = raw.get("command")
        agents[name] = AgentEntry(
            command.strip() if isinstance(command, str) else list(command) if isinstance(command, list) else None,
            dict(raw.get("env") or {}),
            list(raw["path_maps"]) if isinstance(raw.get("path_maps"), list) else raw.get("path_map") is True,
        )
    return agents


def agent_env(env: Mapping[str, str], *, windows: bool) -> dict[str, str]:
    """The variables as the agent's environment takes them: Windows' names
    ignore case and Python's `os.environ` holds them upper-case there, so a
    user's `Path` replaces `PATH` instead of doubling it."""
    return {(name.upper() if windows else name): value for name, value in env.items()}


def not_found(agent: str, program: str, built_in: bool) -> str:
    """What to do when `program` of `agent` is nowhere to be found."""
    where = f"(“command -v {program}” in a terminal tells it; “where {program}” on Windows)"
    if built_in:
        return (f"“{program}” was not found on the PATH Sublime Text was started with. {INSTALL[agent]}; if it is "
                f"installed, set “{agent}_command” in the Qwen Companion settings to its full path {where}.")
    return (f"The chat agent “{agent}”: “{program}” was not found on the PATH Sublime Text was started with. "
            f"Set its “command” in the chat_agents setting to the program's full path {where}.")


def agent_launch(
    agent: str, entry: AgentEntry, *, cli_command: str | list[str] | None, windows: bool,
    login_shell: str | None, path: str | None, home: str | None,
) -> AgentLaunch:
    """The argv and extra environment of `agent` (raises `CommandNotFound`).
    A built-in agent without a command runs its CLI's command with `--acp`,
    found as "Open in Terminal" finds it (login shell on macOS, nvm and
    Homebrew folders); any other runs its own command as it is.
    `cli_command`: the built-in agent's command setting."""
    built_in = entry.command is None
    command = entry.command if entry.command is not None else cli_command
    if command is None:
        raise CommandNotFound(f"The chat agent “{agent}” has no command: set one in the chat_agents setting.", agent)
    try:
        argv = agent_argv(command, windows=windows, login_shell=login_shell, path=path,
                          flags=(ACP_FLAG,) if built_in else (), home=home if built_in else None)
    except CommandNotFound as error:
        program = error.program
        raise CommandNotFound(not_found(agent, program, built_in), program) from None
    return AgentLaunch(argv, agent_env(entry.env, windows=windows))


def speaks_qwen(info: Implementation | None) -> bool:
    """Whether qwen's own methods may go to this agent: it says it is
    qwen-code in `agentInfo` (never assumed from its name in chat_agents or
    its command). The one rule: conversation_edits and rewind ask it too."""
    return info is not None and info.name == QWEN_AGENT_NAME


def can_load(capabilities: AgentCapabilities | None) -> bool:
    return bool(capabilities is not None and capabilities.load_session)


def can_list(capabilities: AgentCapabilities | None) -> bool:
    sessions = capabilities.session_capabilities if capabilities is not None else None
    return sessions is not None and sessions.list is not None


def can_resume(capabilities: AgentCapabilities | None) -> bool:
    sessions = capabilities.session_capabilities if capabilities is not None else None
    return sessions is not None and sessions.resume is not None


def can_close(capabilities: AgentCapabilities | None) -> bool:
    sessions = capabilities.session_capabilities if capabilities is not None else None
    return sessions is not None and sessions.close is not None


def can_delete(capabilities: AgentCapabilities | None) -> bool:
    sessions = capabilities.session_capabilities if capabilities is not None else None
    return sessions is not None and sessions.delete is not None


def takes_more_folders(capabilities: AgentCapabilities | None) -> bool:
    """`additionalDirectories` may go on session/new, load and resume."""
    sessions = capabilities.session_capabilities if capabilities is not None else None
    return sessions is not None and sessions.additional_directories is not None


def servers_for(servers: list[JsonObject], capabilities: AgentCapabilities | None) -> list[JsonObject]:
    """The MCP servers the agent can use: stdio ones always (ACP requires
    them of every agent), HTTP and SSE ones only where it says it takes them."""
    mcp = capabilities.mcp_capabilities if capabilities is not None else None
    taken = {"stdio": True, "http": bool(mcp and mcp.http), "sse": bool(mcp and mcp.sse)}
    return [server for server in servers if taken.get(str(server.get("type", "stdio")), False)]


def prompt_for(blocks: list[JsonObject], capabilities: AgentCapabilities | None) -> list[JsonObject]:
    """`blocks` in the content types the agent takes: ACP's baseline is text
    and resource links; an embedded resource becomes text for an agent
    without `embeddedContext`, and an image or audio it does not take is named
    in a line of text instead (the user's words are never dropped)."""
    prompt = capabilities.prompt_capabilities if capabilities is not None else None
    takes = {
        "resource": bool(prompt and prompt.embedded_context),
        "image": bool(prompt and prompt.image),
        "audio": bool(prompt and prompt.audio),
    }
    fitted: list[JsonObject] = []
    for block in blocks:
        kind = str(block.get("type"))
        if takes.get(kind, True):
            fitted.append(block)
        elif kind == "resource":
            resource = block.get("resource")
            resource = resource if isinstance(resource, dict) else {}
            text = resource.get("text")
            body = text if isinstance(text, str) else "(binary content left out: the agent takes no embedded files)"
            fitted.append({"type": "text", "text": f"{resource.get('uri', '')}:\n{body}"})
        else:
            fitted.append({"type": "text", "text": f"({kind} {block.get('uri', '')} left out: the agent takes none)"})
    return fitted


def session_key(project: str | None, agent: str) -> str | None:
    """Where a project's last session is remembered: per agent (a session id
    means nothing to another agent); qwen keeps the key it always had."""
    if project is None or agent == QWEN:
        return project
    return f"{agent}\n{project}"
