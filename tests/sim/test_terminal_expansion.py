"""What Open in Terminal builds is what the terminal runs: Terminus passes the
command, folder and title through `sublime.expand_variables` (a `$name` it
does not know becomes "", `\\\\` one backslash), so the package escapes them,
whatever platform, shell or setting they come from."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.editor import Editor, open_editor
from tests.support.mcp_client import WAIT
from tests.support.terminus import install_terminus, mcp_config_option, terminus_records


def opened(editor: Editor, record: Path, settings: dict[str, Any]) -> dict[str, Any]:
    editor.load([editor.workspace], settings=settings)
    install_terminus(editor.host, record)
    editor.user.run_command("qwen_open_terminal")
    [call] = editor.host.wait_for(lambda: terminus_records(record) or None, timeout=WAIT)
    return dict(call)


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield editor


def test_a_dollar_in_qwen_command_reaches_the_shell(editor: Editor, tmp_path: Path) -> None:
    record = tmp_path / "terminus.jsonl"
    bin_dir = tmp_path / "tools bin"
    bin_dir.mkdir()
    (bin_dir / "qwen").write_text('#!/bin/sh\necho "qwen with $*"\n')
    (bin_dir / "qwen").chmod(0o755)
    call = opened(editor, record, {"qwen_command": '"$QWEN_TOOLS/qwen" --approval-mode "$MODE"'})
    argv = call["run"]["cmd"]
    assert argv == ["/usr/bin/env", "bash", "-c",
                    '"$QWEN_TOOLS/qwen" --approval-mode "$MODE"' + mcp_config_option(editor.host)]
    env = {"PATH": os.environ["PATH"], "QWEN_TOOLS": str(bin_dir), "MODE": "plan", **call["env"]}
    ran = subprocess.run(argv, check=False, env=env, cwd=call["run"]["cwd"], capture_output=True, text=True,
                         timeout=WAIT)
    assert ran.stdout.strip() == "qwen with --approval-mode plan" + mcp_config_option(editor.host), ran.stderr


@pytest.mark.real_platform("darwin")
def test_the_login_shells_command_keeps_its_dollars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL", "/bin/zsh")
    with open_editor(tmp_path, monkeypatch, platform="osx", load=False) as editor:
        call = opened(editor, tmp_path / "terminus.jsonl", {"qwen_command": "$HOME/.local/bin/qwen"})
        assert call["run"]["cmd"] == ["/bin/zsh", "-l", "-i", "-c",
                                      "$HOME/.local/bin/qwen" + mcp_config_option(editor.host)]


@pytest.mark.real_platform("win32")
def test_a_windows_command_keeps_its_doubled_backslashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMSPEC", "cmd.exe")
    with open_editor(tmp_path, monkeypatch, platform="windows", load=False) as editor:
        call = opened(editor, tmp_path / "terminus.jsonl", {"qwen_command": "\\\\server\\tools\\qwen.cmd --debug"})
        assert call["run"]["cmd"][:4] == ["cmd.exe", "/c", "\\\\server\\tools\\qwen.cmd", "--debug"]
