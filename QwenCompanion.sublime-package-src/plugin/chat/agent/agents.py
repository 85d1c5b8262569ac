"""The command line of a chat's agent, by its name in the `chat_agents`
setting, started as "Open in Terminal" would start that CLI for the window:
same folder, the user's login shell on macOS, and the variables that point a
CLI the companion serves (qwen, gemini) at the window's server."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import sublime

from ....core.chat.agent.agents import AgentEntry, agent_launch, known_agents
from ....core.cli.cli_command import CommandNotFound, agent_argv
from ....core.cli.path_maps import PathTranslator, parse_path_maps
from ....core.cli.terminal import cli_env, command_line
from ....core.files.paths import path_style
from ....core.serve.daemon import serve_flags
from ....core.serve.watchdog import SCRIPT_NAME
from ...companion.companions import companions, remote_translator
from ...companion.terminal import chosen_cli, login_shell, options, window_cwd
from ...paths import package_cache
from ...settings import userprefs

if TYPE_CHECKING:
    from ....core.chat.agent.transport import AgentCommand
    from ....core.serve.serve_bridge import ServeCommand


def agent_names() -> list[str]:
    """Every agent a chat can run: qwen, gemini and the configured others."""
    return list(known_agents(userprefs().chat_agents))


def default_agent() -> str:
    return userprefs().chat_agent


def agent_command(window: sublime.Window, agent: str) -> AgentCommand:
    """The agent named `agent` for this window (raises `CommandNotFound`, also
    for a name no setting knows)."""
    from ....core.chat.agent.transport import AgentCommand

    entry = known_agents(userprefs().chat_agents).get(agent)
    if entry is None:
        raise CommandNotFound(f"No chat agent is named “{agent}”: add it to the chat_agents setting.", agent)
    env: dict[str, str] = {}
    cli = chosen_cli(agent)
    companion = companions.get(window)
    if cli is not None and companion is not None and companion.running:
        env = cli_env(cli, companion.port, companion.workspace_path, ide_pid=companion.ppid, token=companion.token)
    launch = agent_launch(
        agent, entry,
        cli_command=options(cli).command if cli is not None and entry.command is None else None,
        windows=sublime.platform() == "windows",
        login_shell=login_shell(),
        path=os.environ.get("PATH"),
        home=os.path.expanduser("~"),
    )
    return AgentCommand(launch.argv, window_cwd(window), {**env, **launch.env}, agent,
                        remote_paths(window, agent, entry), tuple(window.folders()))


def remote_paths(window: sublime.Window, agent: str, entry: AgentEntry) -> PathTranslator | None:
    """How an agent elsewhere names the window's files (None: it runs here)."""
    if entry.path_maps is False:
        return None
    folders = window.folders()
    if entry.path_maps is True:
        translator = remote_translator()
        if translator is None:
            raise CommandNotFound(f"The chat agent “{agent}” has \"path_map\": true, but neither path_maps nor "
                                  "wsl_distro is set in the Qwen Companion settings.", agent)
        return translator(folders)
    style = path_style(sublime.platform())
    maps, _ = parse_path_maps(entry.path_maps, style)  # entries were checked when the settings were read
    return PathTranslator(maps, folders, style)


def agent_rows(window: sublime.Window) -> list[tuple[str, str]]:
    """(name, how it starts or why it cannot) for every chat agent, as Diagnose
    shows them; the versions of qwen and gemini are in their own sections."""
    rows: list[tuple[str, str]] = []
    chosen = default_agent()
    for name in agent_names():
        label = f"{name} (default)" if name == chosen else name
        try:
            argv = agent_command(window, name).argv
        except CommandNotFound as error:
            rows.append((label, f"not found: {error}"))
        else:
            rows.append((label, f"runs {command_line(argv)}"))
    return rows


def serve_command(window: sublime.Window) -> ServeCommand:
    """The `qwen serve` daemon of the window's folders (chat_transport "serve"):
    qwen_command with the daemon's flags, qwen's environment for this window."""
    from ....core.serve.serve_bridge import ServeCommand

    agent = agent_command(window, "qwen")  # the companion's variables, and qwen found or the fix said
    folders = serve_folders(window)
    argv = agent_argv(userprefs().qwen_command, windows=sublime.platform() == "windows", login_shell=login_shell(),
                      path=os.environ.get("PATH"), flags=serve_flags(folders), home=os.path.expanduser("~"))
    return ServeCommand(argv, agent.cwd, {**os.environ, **agent.env}, "qwen", folders=folders,
                        cache_dir=package_cache(), keep_running=userprefs().serve_keep_running,
                        idle_minutes=userprefs().serve_idle_minutes, watchdog_script=watchdog_script())


def watchdog_script() -> str:
    """serve_watchdog.js's text, read from the package (it may be a zip node cannot read); "" when missing."""
    package = __package__.split(".")[0] if __package__ else "QwenCompanion"
    try:
        return sublime.load_resource(f"Packages/{package}/core/serve/{SCRIPT_NAME}")
    except (OSError, RuntimeError):  # RuntimeError: "resource not found"
        return ""


def serve_folders(window: sublime.Window) -> tuple[str, ...]:
    """The folders the window's daemon serves (and its record is found by)."""
    return tuple(window.folders()) or (window_cwd(window),)
