"""Qwen Code: Open in Terminal (through Terminus) and Copy Connect Command."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ...core.cli.remote_connect import container_connect, ssh_connect, wsl_terminal
from ...core.cli.terminal import (
    CLIS,
    PANEL_NAME,
    TITLE,
    Cli,
    CmdUnquotable,
    Json,
    Shell,
    TerminalOptions,
    connect_command,
    for_terminus,
    parse_command,
    parse_options,
    terminal_cwd,
    terminal_tag,
    terminus_args,
)
from ..settings import preferences, userprefs
from .companions import companions

if TYPE_CHECKING:
    from ...core.companion.companion import Companion

log = logging.getLogger(__name__)

TERMINUS_PACKAGE = "Terminus"
NO_TERMINUS_MESSAGE = (
    "Qwen Code: Open in Terminal needs the Terminus package.\n\n"
    "Install it with Package Control: Install Package → Terminus, then run this command again.\n\n"
    "Until then, run qwen in any terminal: “Copy Connect Command” puts the commands that start "
    "qwen for this window on the clipboard. (Started inside one of the window's folders, qwen also "
    "finds this window without them.)"
)
NO_FOLDER_MESSAGE = (
    "Qwen Code: this window has no folder, so qwen cannot connect to it. "
    "Add one with Project → Add Folder to Project…"
)

_serials = itertools.count(1)  # tells apart the terminals opened when reuse is off


def new_serial() -> int:
    """A number no terminal of ours has yet (a terminal that must not be reused)."""
    return next(_serials)


def terminus_installed() -> bool:
    """Is Terminus installed and not disabled? Its settings file marks the package."""
    ignored = preferences().ignored_packages
    for resource in sublime.find_resources(f"{TERMINUS_PACKAGE}.sublime-settings"):
        parts = resource.split("/")
        if len(parts) == 3 and parts[1] != "User" and parts[1] not in ignored:
            return True
    return False


def options(cli: Cli = "qwen") -> TerminalOptions:
    """The terminal settings, with the command of `cli` (`qwen_command` or `gemini_command`)."""
    settings = userprefs()
    parsed, warnings = parse_options({
        "qwen_command": settings.qwen_command,
        "terminal_location": settings.terminal_location,
        "terminal_reuse": settings.terminal_reuse,
        "terminal_auto_close": settings.terminal_auto_close,
    })
    if cli == "gemini":
        command, problem = parse_command(settings.gemini_command, "gemini_command", "gemini")
        parsed = dataclasses.replace(parsed, command=command)
        warnings = [w for w in warnings if not w.startswith("qwen_command")] + ([problem] if problem else [])
    for warning in warnings:
        log.warning("%s", warning)
    return parsed


def chosen_cli(name: object) -> Cli | None:
    """`name` if it is a CLI the terminal commands start (qwen or gemini), else None."""
    return next((cli for cli in CLIS if cli == name), None)


def running_companion(window: sublime.Window) -> Companion | None:
    """The window's running companion, or None after telling the user why not."""
    companion = companions.get(window)
    if companion is not None and companion.running:
        return companion
    reason = companions.startup_error or "its server is not running"
    sublime.error_message(
        f"Qwen Code: this window has no companion server ({reason}).\n\n"
        "Run “Qwen Code: Restart Server”, or “Qwen Code: Diagnose Connection” to see why."
    )
    return None


def login_shell() -> str | None:
    """On macOS, the user's login shell (Open in Terminal runs qwen through
    it); None elsewhere, where Terminus's own shell is used."""
    if sublime.platform() != "osx":
        return None
    shell = os.environ.get("SHELL")
    if shell and os.path.isabs(shell):
        return shell
    import pwd  # the account's shell, when a Dock-started Sublime has no SHELL

    try:
        return pwd.getpwuid(os.getuid()).pw_shell or None
    except KeyError:
        return None


def mcp_config_args(companion: Companion) -> list[str]:
    """`--mcp-config <file>`: the IDE tools for the terminal's qwen, once the
    server has written the file (none when the `ide_tools` setting is off)."""
    config = companion.mcp_config_file
    return ["--mcp-config", str(config)] if config is not None and config.is_file() else []


def terminal_spec(
    window: sublime.Window, companion: Companion, chosen: TerminalOptions, serial: int | None = None,
    cli: Cli = "qwen", more_args: Sequence[str] = (),
) -> dict[str, Json] | str:
    """The `terminus_open` arguments that start `cli` for `window` (the IDE
    tools' `--mcp-config` is a qwen option: gemini has no such flag), with
    `more_args` after the command's own (e.g. `--resume=<session>`); or why
    not (a word cmd.exe cannot be given)."""
    try:
        return terminus_args(
            window_id=window.id(),
            port=companion.port,
            workspace_path=companion.workspace_path,
            cwd=window_cwd(window),
            options=chosen,
            serial=serial,
            login_shell=login_shell(),
            extra_args=[*(mcp_config_args(companion) if cli == "qwen" else ()), *more_args],
            windows=sublime.platform() == "windows",
            cli=cli,
            ide_pid=companion.ppid,
            token=companion.token,
        )
    except CmdUnquotable as refused:
        return f"Qwen Code: the terminal cannot be started: {refused}"


def open_terminus(window: sublime.Window, args: dict[str, Json]) -> None:
    """Every terminal of ours opens here: Terminus expands `$` and `\\` in its
    command, folder and title, so they go escaped (`for_terminus`)."""
    window.run_command("terminus_open", for_terminus(args))


def window_cwd(window: sublime.Window) -> str:
    view = window.active_view()
    return terminal_cwd(window.folders(), view.file_name() if view else None, os.path.expanduser("~"))


def live_terminal(window: sublime.Window, tag: str, serials: bool = False) -> tuple[sublime.View, str | None] | None:
    """A still-running Terminus terminal with `tag` (or, with `serials`, one
    of the extra ones `terminal_reuse: false` opens): (view, panel name or None)."""
    candidates: list[tuple[sublime.View, str | None]] = [(view, None) for view in window.views()]
    for panel in window.panels():
        name = panel.removeprefix("output.")
        view = window.find_output_panel(name)
        if view is not None:
            candidates.append((view, name))
    for view, panel_name in candidates:
        settings = view.settings()
        found = settings.get("terminus_view.tag")
        ours = found == tag or (serials and isinstance(found, str) and found.startswith(f"{tag}-"))
        if ours and not settings.get("terminus_view.finished"):
            return view, panel_name
    return None


def show_live_terminal(window: sublime.Window, tag: str) -> bool:
    """Show and focus the still-running terminal with `tag`, if there is one."""
    live = live_terminal(window, tag)
    if live is None:
        return False
    view, panel = live
    if panel is not None:
        window.run_command("show_panel", {"panel": f"output.{panel}"})
    window.focus_view(view)
    return True


NO_REMOTE_MESSAGE = (
    "Qwen Code: this window's server has no remote endpoint. Set path_maps (or, on Windows, wsl_distro) "
    "in the Qwen Companion settings, then run “Qwen Code: Restart Server”."
)


def remote_setup(companion: Companion) -> tuple[list[str], str] | str:
    """(the window's folders as the remote CLI names them, the remote lock
    file), or a sentence saying why a remote CLI cannot connect."""
    lock_file = companion.remote_connect_file
    if lock_file is None or not lock_file.is_file():
        return NO_REMOTE_MESSAGE
    folders = companion.translator().remote_folders()
    if not folders:
        return ("Qwen Code: none of this window's folders is inside a path_maps entry's \"local\" folder "
                "(or, for WSL, on a drive or in the wsl_distro distribution), so a remote qwen cannot see them.")
    return folders, str(lock_file)


def wsl_terminal_spec(window: sublime.Window, companion: Companion, chosen: TerminalOptions) -> dict[str, Json] | str:
    """The `terminus_open` arguments that run qwen inside the `wsl_distro`
    distribution, wired to the window's remote endpoint; or why not."""
    settings = userprefs()
    distro = settings.wsl_distro.strip()
    if not distro:
        return "Qwen Code: set wsl_distro (the distribution `wsl.exe -l` lists) in the Qwen Companion settings first."
    setup = remote_setup(companion)
    if isinstance(setup, str):
        return setup
    folders, lock_file = setup
    argv, env = wsl_terminal(distro=distro, port=companion.remote_port, folders=folders,
                             command=settings.remote_qwen_command, lock_file=lock_file,
                             inherited_wslenv=os.environ.get("WSLENV", ""))
    args: dict[str, Json] = {
        "cmd": list[Json](argv),
        "env": dict[str, Json](env),
        "cwd": window_cwd(window),
        "title": f"{TITLE} · WSL {distro}",
        "tag": f"{terminal_tag(window.id())}-wsl",
        "auto_close": chosen.auto_close,
        "focus": True,
    }
    if chosen.location == "panel":
        args["show_in_panel"] = True
        args["panel_name"] = f"{PANEL_NAME} (WSL)"
    return args


class QwenOpenTerminalCommand(sublime_plugin.WindowCommand):
    """Run qwen (or, with `cli: "gemini"`, gemini) in a Terminus terminal wired
    to this window's server; with `profile: "wsl"`, qwen inside WSL."""

    def run(self, cli: str = "qwen", profile: str = "") -> None:
        window = self.window
        which = chosen_cli(cli)
        if which is None:
            window.status_message(f"Qwen Code: no terminal for the CLI {cli!r} (qwen or gemini)")
            return
        if profile == "wsl":
            self._open_in_wsl()
            return
        if not terminus_installed():
            if sublime.ok_cancel_dialog(NO_TERMINUS_MESSAGE, "Copy Connect Command", "Qwen Code"):
                window.run_command("qwen_copy_connect_command", {"cli": which})
            return
        companion = running_companion(window)
        if companion is None:
            return
        chosen = options(which)
        serial = None if chosen.reuse else next(_serials)
        if serial is None and show_live_terminal(window, terminal_tag(window.id(), cli=which)):
            return
        args = terminal_spec(window, companion, chosen, serial, which)
        if isinstance(args, str):
            sublime.error_message(args)
            return
        log.info("opening %s in Terminus in %s", which, args["cwd"])
        open_terminus(window, args)
        if not window.folders():
            window.status_message(NO_FOLDER_MESSAGE)

    def _open_in_wsl(self) -> None:
        window = self.window
        if not terminus_installed():
            sublime.error_message(NO_TERMINUS_MESSAGE)
            return
        companion = running_companion(window)
        if companion is None:
            return
        args = wsl_terminal_spec(window, companion, options())
        if isinstance(args, str):
            sublime.error_message(args)
            return
        if show_live_terminal(window, str(args["tag"])):
            return
        log.info("opening qwen in WSL in Terminus")
        open_terminus(window, args)


# Sublime cannot know which shell an external terminal runs, so Windows users
# pick one; the labels say which.
WINDOWS_SHELLS: list[tuple[Shell, str]] = [
    ("powershell", "PowerShell (Windows Terminal, PowerShell 5 and 7)"),
    ("cmd", "Command Prompt (cmd.exe)"),
]


class QwenCopyConnectCommandCommand(sublime_plugin.WindowCommand):
    """Put the commands that start qwen (or, with `cli: "gemini"`, gemini) for
    this window on the clipboard.

    `shell` ("posix", "powershell" or "cmd") picks the syntax; without it,
    macOS and Linux get POSIX lines and Windows asks which shell."""

    def run(self, shell: str = "", cli: str = "qwen") -> None:
        window = self.window
        which = chosen_cli(cli)
        if which is None:
            window.status_message(f"Qwen Code: no connect command for the CLI {cli!r} (qwen or gemini)")
            return
        chosen = next((name for name in ("posix", "powershell", "cmd") if name == shell), None)
        if chosen is None and sublime.platform() == "windows":
            def picked(index: int) -> None:
                if index >= 0:
                    window.run_command("qwen_copy_connect_command", {"shell": WINDOWS_SHELLS[index][0], "cli": which})

            window.show_quick_panel([label for _, label in WINDOWS_SHELLS], picked,
                                    placeholder="Copy the connect command for which shell?")
            return
        companion = running_companion(window)
        if companion is None:
            return
        try:
            text = connect_command(
                port=companion.port,
                workspace_path=companion.workspace_path,
                cwd=window_cwd(window),
                command=options(which).command,
                shell=chosen or "posix",
                extra_args=mcp_config_args(companion) if which == "qwen" else (),
                cli=which,
                ide_pid=companion.ppid,
            )
        except CmdUnquotable as refused:
            sublime.error_message(f"Qwen Code: no connect command for cmd.exe: {refused}")
            return
        sublime.set_clipboard(text)
        window.status_message(
            NO_FOLDER_MESSAGE if not window.folders()
            else "Qwen Code: connect command copied; paste it into a terminal"
        )


REMOTE_PROMPTS = {"container": "Container name or id (docker exec):", "ssh": "SSH destination (user@host):"}


class QwenCopyRemoteConnectCommandCommand(sublime_plugin.WindowCommand):
    """Put the lines that start qwen in a container (`via: "container"`) or on
    a machine over SSH (`via: "ssh"`), wired to this window's remote endpoint,
    on the clipboard; asks for the container or destination unless `target`
    names it. The lines name the remote lock file, never its token."""

    def run(self, via: str = "container", target: str = "") -> None:
        window = self.window
        prompt = REMOTE_PROMPTS.get(via)
        if prompt is None:
            window.status_message(f"Qwen Code: no connect command for {via!r} (container or ssh)")
            return
        if not target.strip():
            def entered(text: str) -> None:
                if text.strip():
                    window.run_command("qwen_copy_remote_connect_command", {"via": via, "target": text.strip()})

            window.show_input_panel(prompt, "", entered, None, None)
            return
        companion = running_companion(window)
        if companion is None:
            return
        setup = remote_setup(companion)
        if isinstance(setup, str):
            sublime.error_message(setup)
            return
        folders, lock_file = setup
        command = userprefs().remote_qwen_command
        if via == "container":
            text = container_connect(container=target, port=companion.remote_port, folders=folders, command=command,
                                     lock_file=lock_file)
        else:
            text = ssh_connect(destination=target, port=companion.remote_port, folders=folders, command=command,
                               lock_file=lock_file)
        sublime.set_clipboard(text)
        window.status_message("Qwen Code: remote connect command copied; paste it into a terminal on this machine")
