"""Open in Terminal on macOS (`sublime.platform()` is "osx"): qwen runs
through the user's login shell, which reads the profile that puts it on
PATH; Terminus's own `bash -l -c` reads neither ~/.zprofile nor ~/.zshrc."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.support.editor import Editor, open_editor
from tests.support.mcp_client import WAIT
from tests.support.terminus import install_terminus, mcp_config_option, terminus_calls

# Fakes macOS here; CI runs it on macOS too, where it must pass for real.
pytestmark = pytest.mark.real_platform("darwin")


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "terminus-calls.jsonl"


def editor_on(platform: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    monkeypatch.setenv("SHELL", "/bin/zsh")
    with open_editor(tmp_path, monkeypatch, platform=platform) as editor:
        yield editor


@pytest.fixture
def mac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: Path) -> Iterator[SimulatedHost]:
    for editor in editor_on("osx", tmp_path, monkeypatch):
        install_terminus(editor.host, record)
        yield editor.host


def open_terminal(host: SimulatedHost, record: Path, settings: dict[str, object] | None = None) -> dict[str, object]:
    if settings:
        host.run_on_main(lambda: host.sublime.load_settings("QwenCompanion.sublime-settings").update(settings))
        host.wait_idle()
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    return terminus_calls(record)[-1]


def test_a_string_command_runs_in_the_login_shell(mac: SimulatedHost, record: Path) -> None:
    args = open_terminal(mac, record, {"qwen_command": "qwen --approval-mode default"})
    assert args["cmd"] == ["/bin/zsh", "-l", "-i", "-c", "qwen --approval-mode default" + mcp_config_option(mac)]
    assert "shell_cmd" not in args
    mac.assert_no_errors()


def test_a_list_command_runs_in_the_login_shell_too(mac: SimulatedHost, record: Path) -> None:
    # `#!/usr/bin/env node` needs node on PATH: the shell's profile provides it.
    args = open_terminal(mac, record, {"qwen_command": ["/Users/me/.nvm/versions/node/v22/bin/qwen"]})
    assert args["cmd"] == [
        "/bin/zsh", "-l", "-i", "-c", "/Users/me/.nvm/versions/node/v22/bin/qwen" + mcp_config_option(mac)]
    mac.assert_no_errors()


def test_linux_keeps_terminus_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: Path) -> None:
    for editor in editor_on("linux", tmp_path, monkeypatch):
        install_terminus(editor.host, record)
        args = open_terminal(editor.host, record)
        assert args["shell_cmd"] == "qwen" + mcp_config_option(editor.host) and "cmd" not in args
