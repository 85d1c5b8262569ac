"""Copy Connect Command and Diagnose Connection as Windows users meet them
(`sublime.platform()` is "windows"): the shell is chosen, not guessed, and a
Windows `qwen_command` is split with Windows rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.support.editor import Editor, open_editor
from tests.support.mcp_client import WAIT
from tests.support.terminus import mcp_config_option

# Fakes Windows here; CI runs it on Windows too, where it must pass for real.
pytestmark = pytest.mark.real_platform("win32")

REPORT_NAME = "Qwen Code: Diagnose Connection"
QWEN_CMD = "C:\\Program Files\\it's\\qwen.cmd"


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, platform="windows") as editor:
        yield editor


def copy_for(host: SimulatedHost, choice: int) -> str:
    host.app.clipboard = ""
    host.user.run_command("qwen_copy_connect_command")
    host.wait_idle()
    host.user.choose_quick_panel(choice)
    return str(host.wait_for(lambda: host.app.clipboard, timeout=WAIT))


def test_windows_users_choose_powershell_or_cmd(editor: Editor) -> None:
    host = editor.host
    lock = editor.lock_info()
    editor.settings({"qwen_command": [QWEN_CMD, "--approval-mode", "default"]})
    host.wait_idle()

    config = mcp_config_option(host).split()[1]  # no character cmd.exe or PowerShell would quote
    powershell = copy_for(host, 0)
    assert powershell.splitlines() == [
        f"$env:QWEN_CODE_IDE_SERVER_PORT = '{lock['port']}'",
        f"$env:QWEN_CODE_IDE_WORKSPACE_PATH = '{editor.workspace}'",
        (f"Set-Location -LiteralPath '{editor.workspace}'; "
         "& 'C:\\Program Files\\it''s\\qwen.cmd' '--approval-mode' 'default'"
         f" '--mcp-config' '{config}'"),
    ]
    cmd = copy_for(host, 1)
    assert cmd.splitlines() == [
        f'set "QWEN_CODE_IDE_SERVER_PORT={lock["port"]}"',
        f'set "QWEN_CODE_IDE_WORKSPACE_PATH={editor.workspace}"',
        (f'cd /d "{editor.workspace}" && "C:\\Program Files\\it\'s\\qwen.cmd" --approval-mode default'
         f" --mcp-config {config}"),
    ]
    [panel, _] = list(host.app.quick_panels)[-2:]
    assert [str(item) for item in panel.items] == [
        "PowerShell (Windows Terminal, PowerShell 5 and 7)", "Command Prompt (cmd.exe)",
    ]
    host.assert_no_errors()


def test_a_cancelled_choice_copies_nothing(editor: Editor) -> None:
    host = editor.host
    host.app.clipboard = "kept"
    host.user.run_command("qwen_copy_connect_command")
    host.wait_idle()
    host.user.cancel_quick_panel()
    host.wait_idle()
    assert host.app.clipboard == "kept"


def test_an_explicit_shell_skips_the_choice(editor: Editor) -> None:
    host = editor.host
    host.user.run_command("qwen_copy_connect_command", {"shell": "cmd"})
    text = host.wait_for(lambda: host.app.clipboard, timeout=WAIT)
    assert text.startswith('set "QWEN_CODE_IDE_SERVER_PORT=')
    assert not host.app.quick_panels


def test_diagnose_splits_a_windows_command_with_windows_rules(editor: Editor) -> None:
    host = editor.host
    editor.settings({"qwen_command": "C:\\Users\\me\\AppData\\Roaming\\npm\\qwen.cmd --approval-mode default"})
    host.wait_idle()
    host.user.run_command("qwen_diagnose_connection", {"folder": str(editor.workspace)})

    def report() -> str:
        for view in host.window.views():
            if view.name() == REPORT_NAME and view.size():
                return str(view.substr(host.sublime.Region(0, view.size())))
        return ""

    text = host.wait_for(report, timeout=WAIT)
    assert "`C:\\Users\\me\\AppData\\Roaming\\npm\\qwen.cmd` not found on PATH" in text
    assert "C:Users" not in text
    assert "default (the qwen_command setting)" in text
    host.assert_no_errors()
