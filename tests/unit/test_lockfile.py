"""Discovery lock files (spec section 2)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.companion import lockfile
from qwencompanion_src.core.companion.companion import Companion
from qwencompanion_src.core.companion.lockfile import LockInfo
from qwencompanion_src.core.loop_thread import LoopThread

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid is gone, not a zombie
    assert not lockfile.pid_alive(child.pid)
    return child.pid


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- lock_dir -------------------------------------------------------------------------


def test_lock_dir_honours_qwen_home(tmp_path: Path) -> None:
    assert lockfile.lock_dir({"QWEN_HOME": str(tmp_path / "qh"), "HOME": str(tmp_path / "home")}) == tmp_path / "qh" / "ide"


def test_lock_dir_defaults_to_dot_qwen_in_home(tmp_path: Path) -> None:
    assert lockfile.lock_dir({"HOME": str(tmp_path)}) == tmp_path / ".qwen" / "ide"
    assert lockfile.lock_dir({"QWEN_HOME": "", "HOME": str(tmp_path)}) == tmp_path / ".qwen" / "ide"


def test_lock_dir_reads_the_process_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "env-home"))
    assert lockfile.lock_dir() == tmp_path / "env-home" / "ide"


# --- content and permissions ---------------------------------------------------------------


def test_the_lock_file_content_is_exactly_the_contract(tmp_path: Path) -> None:
    folders = [str(tmp_path / "one"), str(tmp_path / "two")]
    info = LockInfo(port=4321, workspace_path=lockfile.workspace_path(folders), auth_token="t" * 64, ppid=77)
    path = lockfile.write_lock(tmp_path / "ide", info)
    assert path == tmp_path / "ide" / "4321.lock"
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "port": 4321,
        "workspacePath": os.pathsep.join(folders),
        "authToken": "t" * 64,
        "ppid": 77,
        "ideName": "Sublime Text",
        "ideInfo": {"name": "sublimetext", "displayName": "Sublime Text"},
    }


def test_workspace_path_of_no_folders_is_empty() -> None:
    assert lockfile.workspace_path([]) == ""


@posix_only
def test_the_directory_is_0700_and_the_file_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = lockfile.write_lock(tmp_path / "home" / "ide", LockInfo(1, "", "x", 1))
    finally:
        os.umask(old)
    assert _mode(tmp_path / "home" / "ide") == 0o700
    assert _mode(path) == 0o600


@posix_only
def test_a_rewrite_keeps_0600(tmp_path: Path) -> None:
    path = lockfile.write_lock(tmp_path, LockInfo(1, "", "x", 1))
    os.chmod(path, 0o644)
    lockfile.write_lock(tmp_path, LockInfo(1, "/a", "x", 1))
    assert _mode(path) == 0o600


def test_writes_leave_no_temporary_file(tmp_path: Path) -> None:
    for n in range(5):
        lockfile.write_lock(tmp_path, LockInfo(1234, f"/w{n}", "x", 1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1234.lock"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lockfile.write_lock(tmp_path, LockInfo(1234, "/old", "x", 1))

    def broken_replace(*args: Any) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(lockfile.os, "replace", broken_replace)
    with pytest.raises(OSError):
        lockfile.write_lock(tmp_path, LockInfo(1234, "/new", "x", 1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1234.lock"]
    assert lockfile.read_lock(tmp_path / "1234.lock")["workspacePath"] == "/old"


def test_a_reader_never_sees_a_partial_file(tmp_path: Path) -> None:
    path = lockfile.write_lock(tmp_path, LockInfo(5555, "", "x", 1))
    stop = threading.Event()
    problems: list[str] = []
    reads = [0]

    def reader() -> None:
        while not stop.is_set():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError) as error:
                problems.append(repr(error))
                continue
            reads[0] += 1
            if set(data) != {"port", "workspacePath", "authToken", "ppid", "ideName", "ideInfo"}:
                problems.append(f"fields {sorted(data)}")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(200):
            # Large enough that a non-atomic write would be seen half done.
            lockfile.write_lock(tmp_path, LockInfo(5555, os.pathsep.join(f"/folder/{n}/{i}" for i in range(500)), "x" * 64, n))
    finally:
        stop.set()
        thread.join()
    assert problems == []
    assert reads[0] > 0
    assert lockfile.read_lock(path)["ppid"] == 199
    assert sorted(p.name for p in tmp_path.iterdir()) == ["5555.lock"]


def test_read_lock_rejects_non_objects(tmp_path: Path) -> None:
    path = tmp_path / "1.lock"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError):
        lockfile.read_lock(path)


def test_remove_lock_is_quiet_when_the_file_is_gone(tmp_path: Path) -> None:
    lockfile.remove_lock(tmp_path, 1)
    lockfile.write_lock(tmp_path, LockInfo(1, "", "x", 1))
    lockfile.remove_lock(tmp_path, 1)
    assert list(tmp_path.iterdir()) == []


# --- the Companion's lock file ----------------------------------------------------------------


def test_a_started_companion_writes_its_lock_file(
    companion_factory: Callable[..., Companion], lock_directory: Path, tmp_path: Path
) -> None:
    folders = [str(tmp_path / "a"), str(tmp_path / "b")]
    companion = companion_factory(folders)
    assert companion.lock_error is None
    assert companion.lock_file == lock_directory / f"{companion.port}.lock"
    assert lockfile.read_lock(companion.lock_file) == {
        "port": companion.port,
        "workspacePath": os.pathsep.join(folders),
        "authToken": companion.token,
        "ppid": os.getpid(),
        "ideName": "Sublime Text",
        "ideInfo": {"name": "sublimetext", "displayName": "Sublime Text"},
    }


def test_a_companion_without_folders_writes_an_empty_workspace_path(
    companion_factory: Callable[..., Companion],
) -> None:
    companion = companion_factory([])
    assert lockfile.read_lock(companion.lock_file)["workspacePath"] == ""


def test_set_folders_rewrites_the_lock_file(companion_factory: Callable[..., Companion], tmp_path: Path) -> None:
    companion = companion_factory([str(tmp_path / "a")])
    companion.set_folders([str(tmp_path / "b"), str(tmp_path / "c")])
    data = lockfile.read_lock(companion.lock_file)
    assert data["workspacePath"] == os.pathsep.join([str(tmp_path / "b"), str(tmp_path / "c")])
    assert data["authToken"] == companion.token and data["port"] == companion.port
    companion.set_folders([])
    assert lockfile.read_lock(companion.lock_file)["workspacePath"] == ""
    assert sorted(p.name for p in companion.lock_directory.iterdir()) == [companion.lock_file.name]


def test_stop_removes_the_lock_file(companion_factory: Callable[..., Companion], lock_directory: Path) -> None:
    companion = companion_factory()
    path = companion.lock_file
    assert path.exists()
    companion.stop()
    assert not path.exists()
    assert list(lock_directory.iterdir()) == []
    assert not companion.running


def test_set_folders_after_stop_writes_no_lock_file(
    companion_factory: Callable[..., Companion], lock_directory: Path, tmp_path: Path
) -> None:
    companion = companion_factory()
    companion.stop()
    companion.set_folders([str(tmp_path / "elsewhere")])
    assert list(lock_directory.iterdir()) == []


def test_the_ppid_can_be_given(
    companion_factory: Callable[..., Companion],
) -> None:
    companion = companion_factory(ppid=424242)
    assert lockfile.read_lock(companion.lock_file)["ppid"] == 424242


def test_an_unwritable_lock_directory_gives_lock_error_and_no_crash(
    server_thread: LoopThread, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file")
    # Root ignores permission bits, but nobody can create a directory inside a file.
    companion = Companion(server_thread, folders=[str(tmp_path)], lock_directory=blocker / "ide")
    companion.start()
    try:
        assert companion.running
        assert companion.lock_error is not None
        assert str(blocker / "ide") in companion.lock_error
        companion.set_folders([str(tmp_path / "other")])
        assert companion.lock_error is not None
    finally:
        companion.stop()
    assert blocker.read_text() == "a regular file"
    assert not companion.running


def test_a_lock_directory_that_is_a_file_gives_lock_error(server_thread: LoopThread, tmp_path: Path) -> None:
    blocker = tmp_path / "ide"
    blocker.write_text("x")
    companion = Companion(server_thread, folders=[], lock_directory=blocker)
    companion.start()
    try:
        assert companion.lock_error is not None
    finally:
        companion.stop()


# --- the stale sweep ---------------------------------------------------------------------------


def _write_raw(directory: Path, name: str, data: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_the_sweep_removes_only_our_own_files_of_dead_editors(tmp_path: Path) -> None:
    dead = _dead_pid()
    ours = {"ideName": "Sublime Text", "ideInfo": {"name": "sublimetext", "displayName": "Sublime Text"}}
    ours_dead = _write_raw(tmp_path, "1001.lock", {"port": 1001, "ppid": dead, **ours})
    ours_alive = _write_raw(tmp_path, "1002.lock", {"port": 1002, "ppid": os.getpid(), **ours})
    vscode_dead = _write_raw(
        tmp_path, "1003.lock", {"port": 1003, "ppid": dead, "ideInfo": {"name": "vscode", "displayName": "VS Code"}}
    )
    no_info_dead = _write_raw(tmp_path, "1004.lock", {"port": 1004, "ppid": dead})
    broken = _write_raw(tmp_path, "1005.lock", "{half a file")
    not_a_lock = _write_raw(tmp_path, "notes.txt", {"ppid": dead, **ours})
    ours_without_ppid = _write_raw(tmp_path, "1006.lock", {"port": 1006, **ours})

    removed = lockfile.sweep_stale_locks(tmp_path)
    assert removed == [ours_dead]
    assert not ours_dead.exists()
    for kept in (ours_alive, vscode_dead, no_info_dead, broken, not_a_lock, ours_without_ppid):
        assert kept.exists(), kept.name


def test_the_sweep_of_a_missing_directory_does_nothing(tmp_path: Path) -> None:
    assert lockfile.sweep_stale_locks(tmp_path / "missing") == []


def test_the_sweep_keeps_a_running_companions_file(
    companion_factory: Callable[..., Companion], lock_directory: Path
) -> None:
    companion = companion_factory()
    assert lockfile.sweep_stale_locks(lock_directory) == []
    assert companion.lock_file.exists()


def test_pid_alive() -> None:
    assert lockfile.pid_alive(os.getpid())
    assert not lockfile.pid_alive(0)
    assert not lockfile.pid_alive(-5)
    assert not lockfile.pid_alive(_dead_pid())


def test_the_sweep_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = _dead_pid()
    ours = {"ideName": "Sublime Text", "ideInfo": {"name": "sublimetext", "displayName": "Sublime Text"}}
    stuck = _write_raw(tmp_path, "1001.lock", {"port": 1001, "ppid": dead, **ours})
    stale = _write_raw(tmp_path, "1002.lock", {"port": 1002, "ppid": dead, **ours})
    real_unlink = Path.unlink

    def refusing_unlink(self: Path, missing_ok: bool = False) -> None:
        if self == stuck:
            raise PermissionError(13, "Permission denied", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refusing_unlink)
    assert lockfile.sweep_stale_locks(tmp_path) == [stale]  # the next file is still swept
    assert stuck.exists()

    def unreadable_directory(self: Path, pattern: str) -> Any:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "glob", unreadable_directory)
    assert lockfile.sweep_stale_locks(tmp_path) == []
