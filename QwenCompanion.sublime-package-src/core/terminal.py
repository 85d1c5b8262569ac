"""What "Open in Terminal" runs, and the text "Copy Connect Command" copies.

Pure: the Sublime layer passes the window's state and settings in and hands
the result to Terminus's `terminus_open` command (or the clipboard).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

PORT_ENV = "QWEN_CODE_IDE_SERVER_PORT"
WORKSPACE_ENV = "QWEN_CODE_IDE_WORKSPACE_PATH"
DEFAULT_COMMAND = "qwen"
TITLE = "Qwen Code"
PANEL_NAME = "Qwen Code"

Location = Literal["panel", "tab"]
AutoClose = bool | Literal["always", "on_success"]
Shell = Literal["posix", "powershell", "cmd"]
type Json = bool | int | float | str | list["Json"] | dict[str, "Json"] | None


@dataclass(frozen=True)
class TerminalOptions:
    # A string runs through the platform's shell (Terminus's `shell_cmd`); a
    # list runs as it is (`cmd`).
    command: str | list[str] = DEFAULT_COMMAND
    location: Location = "panel"
    reuse: bool = True
    auto_close: AutoClose = "on_success"


def parse_options(settings: Mapping[str, object]) -> tuple[TerminalOptions, list[str]]:
    """Options from the package settings; unusable values fall back to the
    defaults and are reported as warnings (one sentence each)."""
    defaults = TerminalOptions()
    warnings: list[str] = []

    command: str | list[str] = defaults.command
    raw_command = settings.get("qwen_command", defaults.command)
    if isinstance(raw_command, str) and raw_command.strip():
        command = raw_command.strip()
    elif isinstance(raw_command, list) and raw_command and all(isinstance(p, str) and p for p in raw_command):
        command = [str(p) for p in raw_command]
    else:
        warnings.append(f"qwen_command must be a non-empty string or list of strings; using {defaults.command!r}")

    location: Location = defaults.location
    raw_location = settings.get("terminal_location", defaults.location)
    if raw_location in ("panel", "tab"):
        location = "panel" if raw_location == "panel" else "tab"
    else:
        warnings.append(f"terminal_location must be \"panel\" or \"tab\"; using {defaults.location!r}")

    reuse = defaults.reuse
    raw_reuse = settings.get("terminal_reuse", defaults.reuse)
    if isinstance(raw_reuse, bool):
        reuse = raw_reuse
    else:
        warnings.append("terminal_reuse must be true or false; using true")

    auto_close: AutoClose = defaults.auto_close
    raw_close = settings.get("terminal_auto_close", defaults.auto_close)
    if isinstance(raw_close, bool):
        auto_close = raw_close
    elif raw_close in ("always", "on_success"):
        auto_close = "always" if raw_close == "always" else "on_success"
    else:
        warnings.append(f"terminal_auto_close must be true, false, \"always\" or \"on_success\"; using {defaults.auto_close!r}")

    return TerminalOptions(command, location, reuse, auto_close), warnings


def windows_argv(command: str) -> list[str]:
    """A string split as Terminus splits `shell_cmd` for cmd.exe on Windows:
    whitespace separates words, quotes group them and are dropped, and a
    backslash is an ordinary character (`C:\\Users\\me` stays whole)."""
    try:
        words = shlex.split(command, posix=False)
    except ValueError:
        words = command.split()
    return [w[1:-1] if len(w) >= 2 and w[0] == w[-1] and w[0] in "\"'" else w for w in words]


def command_argv(command: str | list[str], *, windows: bool = False) -> list[str]:
    """The command as words: a string is split the way the platform's shell
    would (POSIX rules, or Windows rules on Windows)."""
    if isinstance(command, list):
        return list(command)
    if windows:
        return windows_argv(command)
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def command_line(command: str | list[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def terminal_cwd(folders: list[str], active_file: str | None, home: str) -> str:
    """The window's first folder, else the active file's folder, else home."""
    if folders:
        return folders[0]
    if active_file:
        return os.path.dirname(active_file)
    return home


def terminal_tag(window_id: int, serial: int | None = None) -> str:
    """Terminus tag of a window's qwen terminal; `serial` tells extra ones apart."""
    base = f"qwen-code-window-{window_id}"
    return base if serial is None else f"{base}-{serial}"


def panel_name(serial: int | None = None) -> str:
    return PANEL_NAME if serial is None else f"{PANEL_NAME} {serial}"


def terminal_title(cwd: str, serial: int | None = None) -> str:
    folder = os.path.basename(os.path.normpath(cwd)) if cwd else ""
    title = f"{TITLE} · {folder}" if folder else TITLE
    return title if serial is None else f"{title} ({serial})"


def terminal_env(port: int, workspace_path: str) -> dict[str, str]:
    return {PORT_ENV: str(port), WORKSPACE_ENV: workspace_path}


# Shells that take `-l -i -c COMMAND` (csh and tcsh accept -l only alone).
LOGIN_SHELLS = frozenset({"bash", "zsh", "sh", "ksh", "mksh", "dash", "fish"})


def login_shell_argv(shell: str | None, command: str | list[str]) -> list[str] | None:
    """`command` run by the user's login shell as an interactive login shell
    (as Terminal.app starts it), so the PATH that ~/.zprofile, ~/.zshrc or
    ~/.bash_profile set (nvm, Homebrew) is there; None for another shell."""
    if not shell or not os.path.isabs(shell) or os.path.basename(shell) not in LOGIN_SHELLS:
        return None
    return [shell, "-l", "-i", "-c", command_line(command)]


def terminus_args(
    *,
    window_id: int,
    port: int,
    workspace_path: str,
    cwd: str,
    options: TerminalOptions,
    serial: int | None = None,
    login_shell: str | None = None,
    extra_args: Sequence[str] = (),
    windows: bool = False,
) -> dict[str, Json]:
    """Arguments for Terminus's `terminus_open` window command.

    `auto_close` is always passed: Terminus documents False as its default
    but actually closes the terminal on exit (True) when it is left out.
    With `login_shell` (macOS), the command runs through it: Terminus's own
    `bash -l -c` reads neither ~/.zprofile nor ~/.zshrc, and a Dock-started
    Sublime's PATH lacks what they add. `extra_args` follow the command,
    quoted for the shell that runs it (cmd.exe on Windows).
    """
    command = with_args(options.command, extra_args, windows=windows and login_shell is None)
    env: dict[str, Json] = dict(terminal_env(port, workspace_path))
    args: dict[str, Json] = {
        "cwd": cwd,
        "env": env,
        "title": terminal_title(cwd, serial),
        "tag": terminal_tag(window_id, serial),
        "auto_close": options.auto_close,
        "focus": True,
    }
    through_shell = login_shell_argv(login_shell, command)
    if through_shell is not None:
        args["cmd"] = list[Json](through_shell)
    elif isinstance(command, str):
        args["shell_cmd"] = command
    else:
        args["cmd"] = list[Json](command)
    if options.location == "panel":
        args["show_in_panel"] = True
        args["panel_name"] = panel_name(serial)
    return args


def _powershell_quote(text: str) -> str:
    """A PowerShell single-quoted string: nothing inside is expanded; `'` doubles
    (as do the typographic single quotes PowerShell also accepts as quotes)."""
    return "'" + re.sub(r"(['\u2018\u2019\u201a\u201b])", r"\1\1", text) + "'"


# cmd.exe operators and expansions: a string with these is cmd.exe syntax.
_CMD_SYNTAX = re.compile(r"[&|<>^%]")


def powershell_invocation(command: str | list[str], extra: Sequence[str] = ()) -> str:
    """qwen started from PowerShell: the call operator with each word quoted,
    so a path with spaces or quotes runs. A string that uses cmd.exe syntax
    runs through cmd.exe as Terminus runs it (`--%` passes it on untouched)."""
    if isinstance(command, str) and _CMD_SYNTAX.search(command):
        return f"cmd.exe /d /c --% {with_args(command, extra, windows=True)}"
    words = [*command_argv(command, windows=True), *extra]
    return "& " + " ".join(_powershell_quote(word) for word in words)


def _cmd_quote(word: str) -> str:
    return f'"{word}"' if not word or re.search(r"[\s&|<>^()\"',;=]", word) else word


def with_args(command: str | list[str], extra: Sequence[str], *, windows: bool = False) -> str | list[str]:
    """`command` followed by the words `extra`: appended to a list, or to a
    string quoted for the shell that runs it (POSIX, or cmd.exe on Windows)."""
    if not extra:
        return command
    if isinstance(command, list):
        return [*command, *extra]
    quote = _cmd_quote if windows else shlex.quote
    return " ".join([command, *(quote(word) for word in extra)])


def cmd_invocation(command: str | list[str]) -> str:
    """qwen started from cmd.exe: a string is cmd.exe syntax already; a list's
    words are quoted where cmd.exe would split them."""
    return command if isinstance(command, str) else " ".join(_cmd_quote(word) for word in command)


def connect_command(
    *, port: int, workspace_path: str, cwd: str, command: str | list[str], shell: Shell,
    extra_args: Sequence[str] = (),
) -> str:
    """Lines to paste into an external terminal: set the variables, go to the
    folder, start qwen (followed by `extra_args`)."""
    if shell == "powershell":
        return "\n".join([
            f"$env:{PORT_ENV} = '{port}'",
            f"$env:{WORKSPACE_ENV} = {_powershell_quote(workspace_path)}",
            f"Set-Location -LiteralPath {_powershell_quote(cwd)}; {powershell_invocation(command, extra_args)}",
            "",
        ])
    if shell == "cmd":
        # `set "NAME=value"` keeps spaces and operators; Windows paths hold no `"`.
        return "\n".join([
            f'set "{PORT_ENV}={port}"',
            f'set "{WORKSPACE_ENV}={workspace_path}"',
            f'cd /d "{cwd}" && {cmd_invocation(with_args(command, extra_args, windows=True))}',
            "",
        ])
    return "\n".join([
        f"export {PORT_ENV}={port}",
        f"export {WORKSPACE_ENV}={shlex.quote(workspace_path)}",
        f"cd {shlex.quote(cwd)} && {command_line(with_args(command, extra_args))}",
        "",
    ])
