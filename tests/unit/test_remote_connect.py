"""The connect commands for a CLI in a container or over SSH, and the WSL
terminal (core/remote_connect.py): the token never on a command line or the
clipboard, the lock file installed where the CLI there looks, owner-only.
The shell scripts are run here for real."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from qwencompanion_src.core.remote_connect import (
    LOCK_ENV,
    container_connect,
    install_lock_script,
    ssh_connect,
    start_script,
    wsl_terminal,
)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="runs POSIX shell scripts")

TOKEN = "f00d" * 16
PORT = 43210
FOLDERS = ["/workspaces/my app", "/workspaces/lib"]


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    path = tmp_path / "cache" / f"{PORT}.lock"
    path.parent.mkdir()
    path.write_text(json.dumps({"port": PORT, "workspacePath": ":".join(FOLDERS), "authToken": TOKEN}))
    path.chmod(0o600)
    return path


def _all_commands(lock_file: Path) -> list[str]:
    container = container_connect(container="dev", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file))
    ssh = ssh_connect(destination="me@build", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file))
    argv, env = wsl_terminal(distro="Ubuntu", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file))
    return [container, ssh, shlex.join(argv) + "\n" + json.dumps(env)]


def test_no_command_holds_the_token(lock_file: Path) -> None:
    for text in _all_commands(lock_file):
        assert TOKEN not in text
        assert str(lock_file) in text  # the file is named; its content travels on stdin or is read there


@pytest.mark.parametrize("qwen_home", [None, "custom-home"])
def test_the_install_script_puts_the_lock_file_where_the_cli_looks_owner_only(
    lock_file: Path, tmp_path: Path, qwen_home: str | None
) -> None:
    home = tmp_path / "remote-home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    if qwen_home:
        env["QWEN_HOME"] = str(tmp_path / qwen_home)
    with lock_file.open("rb") as stdin:
        subprocess.run(["sh", "-c", install_lock_script(PORT)], stdin=stdin, env=env, check=True, umask=0o022)
    installed = (tmp_path / qwen_home if qwen_home else home / ".qwen") / "ide" / f"{PORT}.lock"
    assert installed.read_text() == lock_file.read_text()
    assert stat.S_IMODE(installed.stat().st_mode) == 0o600
    assert stat.S_IMODE(installed.parent.stat().st_mode) == 0o700
    assert [p.name for p in installed.parent.iterdir()] == [installed.name]  # no temporary file left


def test_the_container_lines_feed_the_lock_file_on_stdin_then_start_the_cli(lock_file: Path) -> None:
    install, start, end = container_connect(
        container="my dev", port=PORT, folders=FOLDERS, command=["qwen", "--yolo"], lock_file=str(lock_file)
    ).split("\n")
    words = shlex.split(install)
    assert words[:4] == ["docker", "exec", "-i", "my dev"] and words[4:6] == ["sh", "-c"]
    assert words[-2:] == ["<", str(lock_file)]
    assert shlex.split(start)[:4] == ["docker", "exec", "-it", "my dev"]
    assert end == ""


def test_the_ssh_lines_forward_the_same_port_back_to_the_editor(lock_file: Path) -> None:
    install, start, _ = ssh_connect(
        destination="me@build", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file)
    ).split("\n")
    assert shlex.split(install)[:2] == ["ssh", "me@build"] and shlex.split(install)[-2:] == ["<", str(lock_file)]
    assert shlex.split(start)[:5] == ["ssh", "-t", "-R", f"127.0.0.1:{PORT}:127.0.0.1:{PORT}", "me@build"]


def test_the_start_script_runs_the_cli_in_the_first_folder_with_the_variables(tmp_path: Path) -> None:
    first, second = tmp_path / "my app", tmp_path / "lib"
    first.mkdir()
    script = start_script(port=PORT, folders=[str(first), str(second)],
                          command=["sh", "-c", 'echo "$QWEN_CODE_IDE_SERVER_PORT|$QWEN_CODE_IDE_WORKSPACE_PATH|$PWD"'])
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{PORT}|{first}:{second}|{first}"


def test_the_wsl_terminal_hands_the_variables_over_wslenv(lock_file: Path) -> None:
    argv, env = wsl_terminal(distro="Ubuntu", port=PORT, folders=FOLDERS, command="qwen",
                             lock_file="C:\\Users\\me\\AppData\\x.lock", inherited_wslenv="GOPATH/l:")
    assert argv[:5] == ["wsl.exe", "-d", "Ubuntu", "--", "sh"]
    assert env["WSLENV"] == f"GOPATH/l:QWEN_CODE_IDE_SERVER_PORT/u:QWEN_CODE_IDE_WORKSPACE_PATH/u:{LOCK_ENV}/pu"
    assert env["QWEN_CODE_IDE_WORKSPACE_PATH"] == ":".join(FOLDERS)
    assert env[LOCK_ENV] == "C:\\Users\\me\\AppData\\x.lock"


def test_the_wsl_script_installs_the_lock_file_it_is_pointed_at_and_starts_the_cli(
    lock_file: Path, tmp_path: Path
) -> None:
    # What the distribution's shell runs, with WSLENV's translation done by hand.
    home, folder = tmp_path / "wsl-home", tmp_path / "ws"
    home.mkdir()
    folder.mkdir()
    argv, env = wsl_terminal(distro="Ubuntu", port=PORT, folders=[str(folder)], command=["pwd"], lock_file="C:\\x.lock")
    inside = {**env, LOCK_ENV: str(lock_file), "HOME": str(home), "PATH": os.environ["PATH"]}
    out = subprocess.run(argv[4:], env=inside, capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(folder)
    assert (home / ".qwen" / "ide" / f"{PORT}.lock").read_text() == lock_file.read_text()
