"""Copy Connect Command for a Container / over SSH in the simulated editor:
the command asks for the target, copies lines that name the remote endpoint's
lock file (never a token), and says why when the window has no remote endpoint."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.editor import Editor, open_editor
from tests.support.mcp_client import WAIT
from tests.support.terminus import install_terminus, terminus_calls, terminus_records

REMOTE = "/workspaces/app"


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield editor


def copy(editor: Editor, args: dict[str, str]) -> None:
    editor.host.app.clipboard = ""
    editor.user.run_command("qwen_copy_remote_connect_command", args)
    editor.host.wait_idle()


def test_the_ssh_command_asks_for_the_destination_and_copies_the_forward_and_the_lock_file(editor: Editor) -> None:
    lock = editor.load([editor.workspace], settings={"path_maps": [{"local": str(editor.workspace), "remote": REMOTE}]})
    copy(editor, {"via": "ssh"})
    assert editor.host.app.clipboard == ""
    editor.user.submit_input_panel("me@build")
    text = str(editor.host.wait_for(lambda: editor.host.app.clipboard, timeout=WAIT))
    install, start, _ = text.split("\n")
    lock_file = Path(shlex.split(install)[-1])
    remote_lock = lock_file.read_text()
    remote_port = int(lock_file.stem)
    assert remote_port != lock["port"]
    assert f'"workspacePath": "{REMOTE}"' in remote_lock
    assert shlex.split(start)[:5] == ["ssh", "-t", "-R", f"127.0.0.1:{remote_port}:127.0.0.1:{remote_port}", "me@build"]
    assert f"cd {REMOTE} && QWEN_CODE_IDE_SERVER_PORT={remote_port} QWEN_CODE_IDE_WORKSPACE_PATH={REMOTE}" in start
    assert lock["authToken"] not in text and remote_lock.split('"authToken": "')[1][:64] not in text
    editor.host.assert_no_errors()


def test_without_path_maps_the_command_says_how_to_get_a_remote_endpoint(editor: Editor) -> None:
    editor.load([editor.workspace])
    copy(editor, {"via": "container", "target": "dev"})
    assert editor.host.app.clipboard == ""
    assert any(d.kind == "error" and "path_maps" in d.message for d in editor.host.dialogs)


def test_a_map_that_holds_none_of_the_folders_is_refused(editor: Editor, tmp_path: Path) -> None:
    editor.load([editor.workspace], settings={"path_maps": [{"local": str(tmp_path / "elsewhere"), "remote": REMOTE}]})
    copy(editor, {"via": "container", "target": "dev"})
    assert editor.host.app.clipboard == ""
    assert any(d.kind == "error" and "none of this window's folders" in d.message for d in editor.host.dialogs)


def test_open_in_terminal_wsl_hands_the_port_workspace_and_lock_file_over_wslenv(editor: Editor, tmp_path: Path) -> None:
    # On Linux the WSL maps stay off (they are Windows paths'); path_maps gives the mapped folder.
    record = tmp_path / "terminus-calls.jsonl"
    install_terminus(editor.host, record)
    lock = editor.load([editor.workspace], settings={
        "path_maps": [{"local": str(editor.workspace), "remote": REMOTE}], "wsl_distro": "Ubuntu",
    })
    editor.user.run_command("qwen_open_terminal", {"profile": "wsl"})
    [call] = editor.host.wait_for(lambda: terminus_calls(record) or None, timeout=WAIT)
    assert call["cmd"][:5] == ["wsl.exe", "-d", "Ubuntu", "--", "sh"]
    env = call["env"]
    lock_file = Path(env["QWEN_COMPANION_LOCK_FILE"])
    assert lock_file.is_file() and int(env["QWEN_CODE_IDE_SERVER_PORT"]) == int(lock_file.stem) != lock["port"]
    assert env["QWEN_CODE_IDE_WORKSPACE_PATH"] == REMOTE
    assert env["WSLENV"].endswith("QWEN_CODE_IDE_SERVER_PORT/u:QWEN_CODE_IDE_WORKSPACE_PATH/u:QWEN_COMPANION_LOCK_FILE/pu")
    assert lock["authToken"] not in json.dumps(call)
    editor.host.assert_no_errors()


def test_open_in_terminal_wsl_runs_its_script_as_built_through_terminus(editor: Editor, tmp_path: Path) -> None:
    """Terminus expands `$name` in `cmd` (unknown: ""): the script that installs
    the lock file and starts qwen must reach the distribution's shell whole."""
    record = tmp_path / "terminus-calls.jsonl"
    install_terminus(editor.host, record)
    remote, home = tmp_path / "remote-folder", tmp_path / "wsl-home"
    remote.mkdir()
    home.mkdir()
    editor.load([editor.workspace], settings={
        "path_maps": [{"local": str(editor.workspace), "remote": str(remote)}], "wsl_distro": "Ubuntu",
        "remote_qwen_command": ["sh", "-c", 'echo "qwen on $QWEN_CODE_IDE_SERVER_PORT in $PWD with $*"', "sh"],
    })
    editor.user.run_command("qwen_open_terminal", {"profile": "wsl"})
    [call] = editor.host.wait_for(lambda: terminus_records(record) or None, timeout=WAIT)
    argv, env = call["run"]["cmd"], call["env"]
    assert argv[:4] == ["wsl.exe", "-d", "Ubuntu", "--"]
    # Inside the distribution: WSLENV hands the variables over (`/p` translates the lock file's path, the same here).
    inside = {**env, "HOME": str(home), "PATH": os.environ["PATH"]}
    ran = subprocess.run(argv[4:], check=False, env=inside, capture_output=True, text=True, timeout=WAIT)
    port = env["QWEN_CODE_IDE_SERVER_PORT"]
    installed = home / ".qwen" / "ide"
    lock_line = Path(env["QWEN_COMPANION_LOCK_FILE"]).read_text().splitlines()[0]
    assert (installed / f"{port}.lock").read_text().strip() == lock_line, ran.stderr
    tools = installed / f"{port}-ide-tools.json"
    assert ran.stdout.strip() == f"qwen on {port} in {remote} with --mcp-config {tools}", ran.stderr
    assert tools.is_file()


def test_open_in_terminal_wsl_without_a_distribution_says_so(editor: Editor, tmp_path: Path) -> None:
    record = tmp_path / "terminus-calls.jsonl"
    install_terminus(editor.host, record)
    editor.load([editor.workspace], settings={"path_maps": [{"local": str(editor.workspace), "remote": REMOTE}]})
    editor.user.run_command("qwen_open_terminal", {"profile": "wsl"})
    editor.host.wait_idle()
    assert terminus_calls(record) == []
    assert any(d.kind == "error" and "wsl_distro" in d.message for d in editor.host.dialogs)
