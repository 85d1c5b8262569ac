"""What "Open in Terminal" asks Terminus for, the fallback's clipboard text,
and the status-bar text."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from qwencompanion_src.core.cli.terminal import (
    TerminalOptions,
    cli_env,
    command_argv,
    connect_command,
    parse_command,
    parse_options,
    terminal_cwd,
    terminal_env,
    terminus_args,
)
from qwencompanion_src.core.companion.status import status_text


def test_defaults() -> None:
    options, warnings = parse_options({})
    assert options == TerminalOptions("qwen", "panel", True, "on_success")
    assert warnings == []


def test_settings_are_read_and_bad_values_fall_back() -> None:
    options, warnings = parse_options({
        "qwen_command": ["node", "cli.js"], "terminal_location": "tab", "terminal_reuse": False, "terminal_auto_close": False,
    })
    assert options == TerminalOptions(["node", "cli.js"], "tab", False, False)
    assert warnings == []
    options, warnings = parse_options({
        "qwen_command": "  ", "terminal_location": "left", "terminal_reuse": "yes", "terminal_auto_close": "never",
    })
    assert options == TerminalOptions()
    assert len(warnings) == 4
    assert parse_options({"terminal_auto_close": "always"})[0].auto_close == "always"
    assert parse_options({"qwen_command": [1]})[1] != []


def test_cwd_choice() -> None:
    assert terminal_cwd(["/a", "/b"], "/c/file.py", "/home") == "/a"
    assert terminal_cwd([], "/c/file.py", "/home") == "/c"
    assert terminal_cwd([], None, "/home") == "/home"


def test_terminus_args_for_a_panel() -> None:
    args = terminus_args(window_id=7, port=43125, workspace_path="/a:/b", cwd="/a", options=TerminalOptions())
    assert args == {
        "shell_cmd": "qwen",
        "cwd": "/a",
        "env": {"QWEN_CODE_IDE_SERVER_PORT": "43125", "QWEN_CODE_IDE_WORKSPACE_PATH": "/a:/b"},
        "title": "Qwen Code · a",
        "tag": "qwen-code-window-7",
        "auto_close": "on_success",
        "focus": True,
        "show_in_panel": True,
        "panel_name": "Qwen Code",
    }


def test_terminus_args_for_an_extra_tab_with_an_argv_command() -> None:
    options = TerminalOptions(["qwen", "--approval-mode", "default"], "tab", False, True)
    args = terminus_args(window_id=7, port=1, workspace_path="", cwd="/x/proj/", options=options, serial=3)
    assert args["cmd"] == ["qwen", "--approval-mode", "default"] and "shell_cmd" not in args
    assert args["tag"] == "qwen-code-window-7-3"
    assert args["title"] == "Qwen Code · proj (3)"
    assert args["auto_close"] is True
    assert "panel_name" not in args and "show_in_panel" not in args


def test_command_argv() -> None:
    assert command_argv("qwen --approval-mode 'default'") == ["qwen", "--approval-mode", "default"]
    assert command_argv(["a b", "c"]) == ["a b", "c"]
    assert command_argv("qwen 'unbalanced") == ["qwen", "'unbalanced"]


def test_posix_connect_command_quotes_paths() -> None:
    text = connect_command(port=43125, workspace_path="/a b:/c", cwd="/a b", command="qwen", shell="posix")
    assert text == (
        "export QWEN_CODE_IDE_SERVER_PORT=43125\n"
        "export QWEN_CODE_IDE_WORKSPACE_PATH='/a b:/c'\n"
        "cd '/a b' && qwen\n"
    )
    assert connect_command(port=1, workspace_path="/w", cwd="/w", command=["my qwen", "-y"], shell="posix").endswith(
        "cd /w && 'my qwen' -y\n"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="runs sh")
def test_posix_connect_command_runs_in_a_shell(tmp_path: Path) -> None:
    folder = tmp_path / "it's here"
    folder.mkdir()
    text = connect_command(port=5, workspace_path=str(folder), cwd=str(folder),
                           command='echo "$QWEN_CODE_IDE_SERVER_PORT|$QWEN_CODE_IDE_WORKSPACE_PATH|$PWD"', shell="posix")
    out = subprocess.run(["sh", "-c", text], capture_output=True, text=True, check=True).stdout
    assert out == f"5|{folder}|{folder}\n"
    assert shlex.split(text.splitlines()[2])[1] == str(folder)


def test_powershell_connect_command() -> None:
    text = connect_command(port=43125, workspace_path="C:\\it's;D:\\x", cwd="C:\\it's", command="qwen", shell="powershell")
    assert text == (
        "$env:QWEN_CODE_IDE_SERVER_PORT = '43125'\n"
        "$env:QWEN_CODE_IDE_WORKSPACE_PATH = 'C:\\it''s;D:\\x'\n"
        "Set-Location -LiteralPath 'C:\\it''s'; & 'qwen'\n"
    )


@pytest.mark.parametrize(
    ("command", "invocation"),
    [
        # A list: every word quoted, the call operator runs the first.
        (["C:\\Program Files\\it's\\qwen.cmd", "--approval-mode", "default"],
         "& 'C:\\Program Files\\it''s\\qwen.cmd' '--approval-mode' 'default'"),
        # A quoted string: PowerShell would read "…" as a value and stop; split as cmd.exe would.
        ('"C:\\Program Files\\nodejs\\qwen.cmd" --yolo', "& 'C:\\Program Files\\nodejs\\qwen.cmd' '--yolo'"),
        ("C:\\Users\\me\\qwen.cmd", "& 'C:\\Users\\me\\qwen.cmd'"),
        ('"C:\\Program Files (x86)\\nodejs\\qwen.cmd"', "& 'C:\\Program Files (x86)\\nodejs\\qwen.cmd'"),
        # PowerShell also closes a single-quoted string at typographic quotes.
        (["C:\\O\u2019Brien\\qwen.cmd"], "& 'C:\\O\u2019\u2019Brien\\qwen.cmd'"),
        # cmd.exe syntax goes to cmd.exe untouched, as Terminus runs a string.
        ("qwen --yolo 2>%TEMP%\\qwen.log", "cmd.exe /d /c --% qwen --yolo 2>%TEMP%\\qwen.log"),
    ],
)
def test_powershell_runs_lists_and_quoted_commands(command: str | list[str], invocation: str) -> None:
    text = connect_command(port=1, workspace_path="C:\\w", cwd="C:\\w", command=command, shell="powershell")
    assert text.splitlines()[-1] == f"Set-Location -LiteralPath 'C:\\w'; {invocation}"


def test_cmd_connect_command() -> None:
    text = connect_command(port=43125, workspace_path="C:\\a b;D:\\x&y", cwd="C:\\a b",
                           command=["C:\\Program Files\\qwen.cmd", "--approval-mode", "default"], shell="cmd")
    assert text == (
        'set "QWEN_CODE_IDE_SERVER_PORT=43125"\n'
        'set "QWEN_CODE_IDE_WORKSPACE_PATH=C:\\a b;D:\\x&y"\n'
        'cd /d "C:\\a b" && "C:\\Program Files\\qwen.cmd" --approval-mode default\n'
    )
    as_string = connect_command(port=1, workspace_path="C:\\w", cwd="C:\\w", command='"C:\\q q\\qwen.cmd" -y', shell="cmd")
    assert as_string.splitlines()[-1] == 'cd /d "C:\\w" && "C:\\q q\\qwen.cmd" -y'


@pytest.mark.parametrize(
    ("command", "windows", "argv"),
    [
        ("C:\\Users\\me\\AppData\\Roaming\\npm\\qwen.cmd --yolo", True,
         ["C:\\Users\\me\\AppData\\Roaming\\npm\\qwen.cmd", "--yolo"]),
        ('"C:\\Program Files\\nodejs\\qwen.cmd" --approval-mode default', True,
         ["C:\\Program Files\\nodejs\\qwen.cmd", "--approval-mode", "default"]),
        ("C:\\Users\\me\\qwen.cmd", False, ["C:Usersmeqwen.cmd"]),  # POSIX rules: why Windows needs its own
        ("/opt/my\\ qwen -y", False, ["/opt/my qwen", "-y"]),
    ],
)
def test_command_argv_per_platform(command: str, windows: bool, argv: list[str]) -> None:
    assert command_argv(command, windows=windows) == argv


def test_status_text() -> None:
    assert status_text(True, 2) == "Qwen ● 2"
    assert status_text(True, 0) == "Qwen ○"
    assert status_text(False, 3) == "Qwen ✕"


# --- the IDE tools' --mcp-config option after the command ---------------------------------

CONFIG = ["--mcp-config", "C:\\Users\\Jo Doe\\AppData\\Local\\Sublime Text\\Cache\\QwenCompanion\\ide-tools\\5.json"]


@pytest.mark.parametrize(
    ("shell", "command", "last_line"),
    [
        ("posix", "qwen -y", "cd /w && qwen -y --mcp-config '/c/it'\"'\"'s dir/5.json'"),
        ("posix", ["/opt/q q/qwen"], "cd /w && '/opt/q q/qwen' --mcp-config '/c/it'\"'\"'s dir/5.json'"),
        ("powershell", "qwen -y",
         "Set-Location -LiteralPath '/w'; & 'qwen' '-y' '--mcp-config' '/c/it''s dir/5.json'"),
        ("powershell", "qwen 2>%TEMP%\\q.log",
         "Set-Location -LiteralPath '/w'; cmd.exe /d /c --% qwen 2>%TEMP%\\q.log --mcp-config \"/c/it's dir/5.json\""),
        ("cmd", "qwen -y", 'cd /d "/w" && qwen -y --mcp-config "/c/it\'s dir/5.json"'),
        ("cmd", ["C:\\q q\\qwen.cmd"], 'cd /d "/w" && "C:\\q q\\qwen.cmd" --mcp-config "/c/it\'s dir/5.json"'),
    ],
)
def test_connect_command_quotes_the_extra_arguments_for_its_shell(
    shell: str, command: str | list[str], last_line: str
) -> None:
    text = connect_command(port=5, workspace_path="/w", cwd="/w", command=command, shell=shell,  # type: ignore[arg-type]
                           extra_args=["--mcp-config", "/c/it's dir/5.json"])
    assert text.splitlines()[-1] == last_line


def test_terminus_gets_the_extra_arguments_as_its_shell_reads_them() -> None:
    def args(command: str | list[str], **platform: object) -> dict[str, object]:
        options = TerminalOptions(command=command)
        return terminus_args(window_id=1, port=5, workspace_path="/w", cwd="/w", options=options,
                             extra_args=CONFIG, **platform)  # type: ignore[arg-type]

    assert args(["qwen"])["cmd"] == ["qwen", *CONFIG]
    assert args("qwen", windows=True)["shell_cmd"] == f'qwen --mcp-config "{CONFIG[1]}"'
    assert shlex.split(str(args("qwen")["shell_cmd"])) == ["qwen", *CONFIG]
    login = args("qwen -y", login_shell="/bin/zsh", windows=False)["cmd"]
    assert login == ["/bin/zsh", "-l", "-i", "-c", f"qwen -y --mcp-config {shlex.quote(CONFIG[1])}"]


# --- gemini-cli -----------------------------------------------------------------------


def test_gemini_env_names_the_server_the_editor_and_sublime() -> None:
    assert cli_env("gemini", 43125, "/a:/b", ide_pid=77, token="t") == {
        "GEMINI_CLI_IDE_SERVER_PORT": "43125",
        "GEMINI_CLI_IDE_WORKSPACE_PATH": "/a:/b",
        "TERM_PROGRAM": "sublime",
        "GEMINI_CLI_IDE_PID": "77",
        "GEMINI_CLI_IDE_AUTH_TOKEN": "t",
    }
    assert cli_env("gemini", 1, "/w") == {
        "GEMINI_CLI_IDE_SERVER_PORT": "1", "GEMINI_CLI_IDE_WORKSPACE_PATH": "/w", "TERM_PROGRAM": "sublime",
    }
    assert cli_env("qwen", 1, "/w", ide_pid=77, token="t") == terminal_env(1, "/w")  # qwen reads its lock file


def test_gemini_terminus_args_have_their_own_tag_title_and_panel() -> None:
    args = terminus_args(window_id=7, port=5, workspace_path="/w", cwd="/w/proj", options=TerminalOptions(command="gemini"),
                         cli="gemini", ide_pid=3, token="secret", serial=2)
    assert (args["tag"], args["title"], args["panel_name"]) == ("gemini-cli-window-7-2", "Gemini CLI · proj (2)", "Gemini CLI 2")
    assert args["env"] == cli_env("gemini", 5, "/w", ide_pid=3, token="secret")


@pytest.mark.parametrize("shell", ["posix", "powershell", "cmd"])
def test_the_gemini_connect_command_never_holds_the_token(shell: str) -> None:
    text = connect_command(port=5, workspace_path="/w", cwd="/w", command="gemini", shell=shell,  # type: ignore[arg-type]
                           cli="gemini", ide_pid=3)
    assert "AUTH_TOKEN" not in text
    for name in ("GEMINI_CLI_IDE_SERVER_PORT", "GEMINI_CLI_IDE_WORKSPACE_PATH", "TERM_PROGRAM", "GEMINI_CLI_IDE_PID"):
        assert name in text
    assert "QWEN_CODE" not in text


def test_parse_command_names_its_setting() -> None:
    assert parse_command(["gemini", "-d"], "gemini_command", "gemini") == (["gemini", "-d"], None)
    assert parse_command(" gemini ", "gemini_command", "gemini") == ("gemini", None)
    assert parse_command("", "gemini_command", "gemini") == (
        "gemini", "gemini_command must be a non-empty string or list of strings; using 'gemini'")


def test_gemini_in_terminus_sets_term_program_itself() -> None:
    """Terminus sets TERM_PROGRAM=Terminus-Sublime after the `env` it is given."""
    def command(options: TerminalOptions, **kwargs: object) -> object:
        args = terminus_args(window_id=1, port=5, workspace_path="/w", cwd="/w", options=options, cli="gemini",
                             **kwargs)  # type: ignore[arg-type]
        return args.get("cmd", args.get("shell_cmd"))

    assert command(TerminalOptions(command="gemini -d")) == "TERM_PROGRAM=sublime gemini -d"
    assert command(TerminalOptions(command=["/o/gemini"])) == ["env", "TERM_PROGRAM=sublime", "/o/gemini"]
    assert command(TerminalOptions(command=["/o/gemini"]), login_shell="/bin/zsh") == [
        "/bin/zsh", "-l", "-i", "-c", "env TERM_PROGRAM=sublime /o/gemini"]
    assert command(TerminalOptions(command="gemini"), windows=True) == "gemini"  # cmd.exe has no such syntax
    qwen = terminus_args(window_id=1, port=5, workspace_path="/w", cwd="/w", options=TerminalOptions(command="qwen"))
    assert qwen["shell_cmd"] == "qwen"
