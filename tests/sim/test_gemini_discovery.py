"""gemini-cli's discovery files in the simulated editor: one per window's
server (the `companion_clis` setting serves gemini by default), holding the
server's own port and token, gone with the window, and stale ones swept at start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.support.editor import PACKAGE, Editor, open_editor, read_locks, wait_for_package_threads
from tests.support.mcp_client import WAIT, McpClient


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield editor


def gemini_files(directory: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in directory.glob("gemini-ide-server-*.json") if directory.is_dir() else []:
        try:
            found[path.name] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
    return found


def wait_gemini(host: SimulatedHost, directory: Path, workspaces: list[str]) -> dict[str, dict[str, Any]]:
    def match() -> dict[str, dict[str, Any]] | None:
        current = gemini_files(directory)
        return current if sorted(i.get("workspacePath", "") for i in current.values()) == sorted(workspaces) else None

    try:
        return host.wait_for(match, timeout=WAIT)
    except TimeoutError:
        raise AssertionError(f"discovery files {gemini_files(directory)} do not describe {workspaces}") from None


def folder(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.mkdir(exist_ok=True)
    return str(path.resolve())


def test_each_window_publishes_a_gemini_file_with_its_own_server(editor: Editor, tmp_path: Path) -> None:
    host = editor.host
    first = folder(tmp_path, "first")
    host.user.set_folders([first])
    host.load_package(PACKAGE)
    second_window = host.user.new_window()
    second = folder(tmp_path, "second")
    host.user.set_folders([second], window=second_window)

    found = wait_gemini(host, editor.gemini_dir, [first, second])
    locks = {info["workspacePath"]: info for info in read_locks(editor.lock_dir).values()}
    for name, info in found.items():
        lock = locks[info["workspacePath"]]  # the same server as qwen's lock file
        assert name == f"gemini-ide-server-{lock['ppid']}-{lock['port']}.json"
        assert info == {
            "port": lock["port"], "workspacePath": lock["workspacePath"], "authToken": lock["authToken"],
            "ideInfo": {"name": "sublimetext", "displayName": "Sublime Text"},
        }
        McpClient(info["port"], info["authToken"], "gemini-cli").connect().close()
    if sys.platform != "win32":
        assert oct(editor.gemini_dir.stat().st_mode & 0o777) == oct(0o700)
        assert all((editor.gemini_dir / name).stat().st_mode & 0o777 == 0o600 for name in found)

    host.user.close_window(second_window)
    wait_gemini(host, editor.gemini_dir, [first])
    host.unload_package(PACKAGE)
    wait_for_package_threads(host, "unload")
    assert gemini_files(editor.gemini_dir) == {}
    host.assert_no_errors()


def test_companion_clis_without_gemini_writes_no_gemini_file(editor: Editor, tmp_path: Path) -> None:
    host = editor.host
    editor.settings({"companion_clis": ["qwen"]})
    workspace = folder(tmp_path, "only-qwen")
    host.user.set_folders([workspace])
    host.load_package(PACKAGE)
    wait_for_package_threads(host, "start")  # the servers are up, every file they write is written
    assert [i["workspacePath"] for i in read_locks(editor.lock_dir).values()] == [workspace]
    assert not editor.gemini_dir.exists()
    host.assert_no_errors()


def test_stale_files_of_closed_sublimes_are_swept_at_start(editor: Editor, tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    editor.gemini_dir.mkdir(parents=True, mode=0o700)
    os.chmod(editor.gemini_dir.parent, 0o700)
    ours = {"name": "sublimetext", "displayName": "Sublime Text"}
    stale = editor.gemini_dir / f"gemini-ide-server-{child.pid}-1111.json"
    stale.write_text(json.dumps({"port": 1111, "ideInfo": ours}), encoding="utf-8")
    vscode = editor.gemini_dir / f"gemini-ide-server-{child.pid}-2222.json"
    vscode.write_text(json.dumps({"port": 2222}), encoding="utf-8")  # VS Code's: no ideInfo
    workspace = folder(tmp_path, "swept")
    editor.host.user.set_folders([workspace])
    editor.host.load_package(PACKAGE)
    wait_gemini(editor.host, editor.gemini_dir, [workspace, ""])  # ours and VS Code's (no workspacePath)
    assert not stale.exists() and vscode.exists()
    editor.host.assert_no_errors()
