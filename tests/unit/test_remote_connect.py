"""The connect commands for a CLI in a container or over SSH, and the WSL
terminal (core/cli/remote_connect.py): the token never on a command line or the
clipboard, the lock file and the IDE tools' config installed where the CLI
there looks, owner-only, the config naming the editor where the CLI reaches it.
The shell scripts are run here for real."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from qwencompanion_src.core.cli.remote_connect import (
    HOST_PLACEHOLDER,
    LOCK_ENV,
    TOOLS_CONFIG,
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


LOCK = {"port": PORT, "workspacePath": ":".join(FOLDERS), "authToken": TOKEN}
TOOLS = {"mcpServers": {"sublime-ide-tools": {
    "httpUrl": f"http://{HOST_PLACEHOLDER}:{PORT}/ide-tools/mcp", "headers": {"Authorization": "Bearer " + "beef" * 16},
}}}
IN_A_CONTAINER = Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()


def write_connect_file(path: Path, *lines: object) -> Path:
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    path.chmod(0o600)
    return path


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    """The connect file, as the remote endpoint writes it: the lock file's JSON, then the tools config's."""
    return write_connect_file(tmp_path / "cache" / f"{PORT}.connect", LOCK, TOOLS)


def _all_commands(lock_file: Path) -> list[str]:
    container = container_connect(container="dev", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file))
    ssh = ssh_connect(destination="me@build", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file))
    argv, env = wsl_terminal(distro="Ubuntu", port=PORT, folders=FOLDERS, command="qwen", lock_file=str(lock_file))
    return [container, ssh, shlex.join(argv) + "\n" + json.dumps(env)]


def test_no_command_holds_the_token(lock_file: Path) -> None:
    for text in _all_commands(lock_file):
        assert TOKEN not in text
        assert str(lock_file) in text  # the file is named; its content travels on stdin or is read there


def install(connect_file: Path, env: dict[str, str]) -> None:
    with connect_file.open("rb") as stdin:
        subprocess.run(["sh", "-c", install_lock_script(PORT)], stdin=stdin, env=env, check=True, umask=0o022)


@pytest.mark.parametrize("qwen_home", [None, "custom-home"])
def test_the_install_script_puts_the_lock_file_and_tools_config_where_the_cli_looks_owner_only(
    lock_file: Path, tmp_path: Path, qwen_home: str | None
) -> None:
    home = tmp_path / "remote-home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    if qwen_home:
        env["QWEN_HOME"] = str(tmp_path / qwen_home)
    install(lock_file, env)
    folder = (tmp_path / qwen_home if qwen_home else home / ".qwen") / "ide"
    installed, tools = folder / f"{PORT}.lock", folder / TOOLS_CONFIG.format(port=PORT)
    assert json.loads(installed.read_text()) == LOCK
    config = json.loads(tools.read_text())
    assert config["mcpServers"]["sublime-ide-tools"]["headers"] == TOOLS["mcpServers"]["sublime-ide-tools"]["headers"]
    for path in (installed, tools):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == sorted([installed.name, tools.name])  # no temporary file left


def installed_tools_url(tmp_path: Path, path: str) -> str:
    home = tmp_path / "home"
    home.mkdir(parents=True)
    install(write_connect_file(tmp_path / f"{PORT}.connect", LOCK, TOOLS), {"HOME": str(home), "PATH": path})
    config = json.loads((home / ".qwen" / "ide" / TOOLS_CONFIG.format(port=PORT)).read_text())
    return str(config["mcpServers"]["sublime-ide-tools"]["httpUrl"])


def test_the_tools_config_names_the_editor_at_127_0_0_1_unless_a_container_resolves_docker_s_host_name(
    tmp_path: Path
) -> None:
    # A `getent` that resolves every name stands for a container on Docker's
    # bridge; outside a container the name is never used.
    tools = tmp_path / "bin"
    tools.mkdir()
    getent = tools / "getent"
    getent.write_text("#!/bin/sh\nexit 0\n")
    getent.chmod(0o755)
    url = installed_tools_url(tmp_path / "a", f"{tools}:{os.environ['PATH']}")
    host = "host.docker.internal" if IN_A_CONTAINER else "127.0.0.1"
    assert url == f"http://{host}:{PORT}/ide-tools/mcp"
    getent.write_text("#!/bin/sh\nexit 2\n")  # the name does not resolve (`--network=host`)
    assert installed_tools_url(tmp_path / "b", f"{tools}:{os.environ['PATH']}") == f"http://127.0.0.1:{PORT}/ide-tools/mcp"


def test_a_connect_file_without_tools_installs_the_lock_file_and_removes_an_old_tools_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".qwen" / "ide"
    folder.mkdir(parents=True)
    stale = folder / TOOLS_CONFIG.format(port=PORT)
    stale.write_text("{}")
    install(write_connect_file(tmp_path / "only-lock.connect", LOCK), {"HOME": str(home), "PATH": os.environ["PATH"]})
    assert json.loads((folder / f"{PORT}.lock").read_text()) == LOCK
    assert not stale.exists()


def test_an_empty_connect_file_installs_nothing_and_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    empty = tmp_path / "empty.connect"
    empty.write_text("")
    with empty.open("rb") as stdin, pytest.raises(subprocess.CalledProcessError):
        subprocess.run(["sh", "-c", install_lock_script(PORT)], stdin=stdin, check=True,
                       env={"HOME": str(home), "PATH": os.environ["PATH"]})
    assert list((home / ".qwen" / "ide").iterdir()) == []


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
                          command=["sh", "-c", 'echo "$QWEN_CODE_IDE_SERVER_PORT|$QWEN_CODE_IDE_WORKSPACE_PATH|$PWD|$*"', "sh"])
    env = {"HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]}
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == f"{PORT}|{first}:{second}|{first}|"  # no tools config installed: no --mcp-config


def test_the_start_script_gives_the_cli_the_installed_tools_config(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    install(write_connect_file(tmp_path / "c.connect", LOCK, TOOLS), env)
    script = start_script(port=PORT, folders=[str(folder)], command=["sh", "-c", 'echo "$*"', "sh"])
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == f"--mcp-config {home}/.qwen/ide/{TOOLS_CONFIG.format(port=PORT)}"


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
    argv, env = wsl_terminal(distro="Ubuntu", port=PORT, folders=[str(folder)], command=["sh", "-c", "pwd", "sh"],
                             lock_file="C:\\x.lock")
    inside = {**env, LOCK_ENV: str(lock_file), "HOME": str(home), "PATH": os.environ["PATH"]}
    out = subprocess.run(argv[4:], env=inside, capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(folder)
    assert json.loads((home / ".qwen" / "ide" / f"{PORT}.lock").read_text()) == LOCK
