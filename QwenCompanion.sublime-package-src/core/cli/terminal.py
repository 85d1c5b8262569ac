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

Cli = Literal["qwen", "gemini"]
CLIS: tuple[Cli, ...] = ("qwen", "gemini")


@dataclass(frozen=True)
class CliProfile:
    """What tells one CLI's terminal apart: its title (and panel name), its
    Terminus tag, and the variables that point it at a window's server."""
    title: str
    tag: str
    port_env: str
    workspace_env: str


PROFILES: dict[Cli, CliProfile] = {
    "qwen": CliProfile(TITLE, "qwen-code-window", PORT_ENV, WORKSPACE_ENV),
    # gemini-cli's names (packages/vscode-ide-companion/src/ide-server.ts).
    "gemini": CliProfile("Gemini CLI", "gemini-cli-window", "GEMINI_CLI_IDE_SERVER_PORT", "GEMINI_CLI_IDE_WORKSPACE_PATH"),
}


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


def parse_command(raw: object, key: str, default: str) -> tuple[str | list[str], str | None]:
    """A CLI's command from the setting `key`: a non-empty string or list of
    non-empty strings, else `default` and a sentence saying so."""
    if isinstance(raw, str) and raw.strip():
        return raw.strip(), None
    if isinstance(raw, list) and raw and all(isinstance(p, str) and p for p in raw):
        return [str(p) for p in raw], None
    return default, f"{key} must be a non-empty string or list of strings; using {default!r}"


def parse_options(settings: Mapping[str, object]) -> tuple[TerminalOptions, list[str]]:
    """Options from the package settings; unusable values fall back to the
    defaults and are reported as warnings (one sentence each)."""
    defaults = TerminalOptions()
    warnings: list[str] = []

    command, problem = parse_command(settings.get("qwen_command", defaults.command), "qwen_command", DEFAULT_COMMAND)
    if problem:
        warnings.append(problem)

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


def terminal_tag(window_id: int, serial: int | None = None, cli: Cli = "qwen") -> str:
    """Terminus tag of a window's terminal of `cli`; `serial` tells extra ones apart."""
    base = f"{PROFILES[cli].tag}-{window_id}"
    return base if serial is None else f"{base}-{serial}"


def panel_name(serial: int | None = None, cli: Cli = "qwen") -> str:
    name = PROFILES[cli].title
    return name if serial is None else f"{name} {serial}"


def terminal_title(cwd: str, serial: int | None = None, cli: Cli = "qwen") -> str:
    folder = os.path.basename(os.path.normpath(cwd)) if cwd else ""
    name = PROFILES[cli].title
    title = f"{name} · {folder}" if folder else name
    return title if serial is None else f"{title} ({serial})"


def terminal_env(port: int, workspace_path: str) -> dict[str, str]:
    return {PORT_ENV: str(port), WORKSPACE_ENV: workspace_path}


def cli_env(cli: Cli, port: int, workspace_path: str, *, ide_pid: int = 0, token: str | None = None) -> dict[str, str]:
    """The variables that point `cli` at the window's server. gemini also gets
    `TERM_PROGRAM=sublime` (its `detectIde` then knows Sublime Text),
    `GEMINI_CLI_IDE_PID` (the pid its discovery file is named with, which it
    otherwise guesses from its process tree) and, given `token`, the token it
    falls back to when no discovery file is readable (as VS Code's companion
    sets it; only ever for a terminal's own environment, never the clipboard)."""
    if cli == "qwen":
        return terminal_env(port, workspace_path)
    profile = PROFILES[cli]
    env = {profile.port_env: str(port), profile.workspace_env: workspace_path, "TERM_PROGRAM": "sublime"}
    if ide_pid > 0:
        env["GEMINI_CLI_IDE_PID"] = str(ide_pid)
    if token:
        env["GEMINI_CLI_IDE_AUTH_TOKEN"] = token
    return env


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
    cli: Cli = "qwen",
    ide_pid: int = 0,
    token: str | None = None,
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
    if cli == "gemini" and not windows:
        command = _after_terminus_env(command)
    env: dict[str, Json] = dict(cli_env(cli, port, workspace_path, ide_pid=ide_pid, token=token))
    args: dict[str, Json] = {
        "cwd": cwd,
        "env": env,
        "title": terminal_title(cwd, serial, cli),
        "tag": terminal_tag(window_id, serial, cli),
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
        args["panel_name"] = panel_name(serial, cli)
    return args


# What Terminus's `terminus_open` passes through `sublime.expand_variables`
# (randy3k/Terminus, terminus/commands.py): the command (a `shell_cmd` too, as
# a word of the command it builds), the folder and the title; not `env`.
TERMINUS_EXPANDS = ("cmd", "shell_cmd", "cwd", "title")


def terminus_literal(text: str) -> str:
    """`text` as `sublime.expand_variables` gives it back unchanged: there `$name`
    and `${name}` are the window's variables (an unknown one becomes ""), `\\$`
    is a `$` and `\\\\` one backslash."""
    return text.replace("\\", "\\\\").replace("$", "\\$")


def for_terminus(args: Mapping[str, Json]) -> dict[str, Json]:
    """`terminus_open` arguments with every string Terminus expands made
    literal, so the process gets exactly the words, folder and title built."""
    escaped = dict(args)
    for key in TERMINUS_EXPANDS:
        value = escaped.get(key)
        if isinstance(value, str):
            escaped[key] = terminus_literal(value)
        elif isinstance(value, list):
            escaped[key] = [terminus_literal(word) if isinstance(word, str) else word for word in value]
    return escaped


def _after_terminus_env(command: str | list[str]) -> str | list[str]:
    """`command` run with `TERM_PROGRAM=sublime` set by the command itself:
    Terminus sets `TERM_PROGRAM=Terminus-Sublime` after the `env` it is given,
    and without `sublime` there gemini-cli refuses IDE mode unless it reads our
    discovery file (whose `ideInfo` also names Sublime Text). POSIX shells only."""
    if isinstance(command, list):
        return ["env", "TERM_PROGRAM=sublime", *command]
    return f"TERM_PROGRAM=sublime {command}"


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


class CmdUnquotable(ValueError):
    """A word cmd.exe cannot be handed as one literal argument; the message says why."""


# cmd.exe expands `%name%` inside quotes too and has no escape for a `"` inside
# them, and a line break ends the command: a word with one is refused, never run.
_CMD_UNQUOTABLE = re.compile(r'["%\r\n\x00]')


def _cmd_quote(word: str) -> str:
    if _CMD_UNQUOTABLE.search(word):
        raise CmdUnquotable(f"{word[:80]!r} cannot pass through cmd.exe as one argument "
                            "(it holds a '\"', a '%' or a line break)")
    return f'"{word}"' if not word or re.search(r"[\s&|<>^()',;=]", word) else word


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
    extra_args: Sequence[str] = (), cli: Cli = "qwen", ide_pid: int = 0,
) -> str:
    """Lines to paste into an external terminal: set the variables (never the
    token: clipboards are read by other programs), go to the folder, start the
    CLI (followed by `extra_args`)."""
    env = cli_env(cli, port, workspace_path, ide_pid=ide_pid)
    if shell == "powershell":
        return "\n".join([
            *(f"$env:{name} = {_powershell_quote(value)}" for name, value in env.items()),
            f"Set-Location -LiteralPath {_powershell_quote(cwd)}; {powershell_invocation(command, extra_args)}",
            "",
        ])
    if shell == "cmd":
        # `set "NAME=value"` keeps spaces and operators; Windows paths hold no `"`.
        return "\n".join([
            *(f'set "{name}={value}"' for name, value in env.items()),
            f'cd /d "{cwd}" && {cmd_invocation(with_args(command, extra_args, windows=True))}',
            "",
        ])
    return "\n".join([
        *(f"export {name}={shlex.quote(value)}" for name, value in env.items()),
        f"cd {shlex.quote(cwd)} && {command_line(with_args(command, extra_args))}",
        "",
    ])
