"""gemini-cli's discovery files: name, place, content, permissions, clean-up,
and the folder under the shared temp folder that another user may have made."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from qwencompanion_src.core.companion import gemini_discovery
from qwencompanion_src.core.companion.companion import Companion

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions and owners")
IDE_INFO = {"name": "sublimetext", "displayName": "Sublime Text"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def gemini_directory(tmp_path: Path) -> Path:
    (tmp_path / "temp").mkdir()  # the OS temp folder is always there; its gemini/ide is ours to make
    return tmp_path / "temp" / "gemini" / "ide"


# --- where gemini-cli looks ---------------------------------------------------------------


def test_node_tmpdir_follows_nodes_order_on_posix() -> None:
    assert gemini_discovery.node_tmpdir({}, "linux") == "/tmp"
    assert gemini_discovery.node_tmpdir({"TEMP": "/c", "TMP": "/b", "TMPDIR": "/a/"}, "darwin") == "/a"
    assert gemini_discovery.node_tmpdir({"TEMP": "/c", "TMP": "/b"}, "linux") == "/b"
    assert gemini_discovery.node_tmpdir({"TEMP": "/c"}, "linux") == "/c"
    assert gemini_discovery.node_tmpdir({"TMPDIR": "/"}, "linux") == "/"


def test_node_tmpdir_follows_nodes_order_on_windows() -> None:
    assert gemini_discovery.node_tmpdir({"TEMP": "C:\\T\\", "TMP": "D:\\"}, "win32") == "C:\\T"
    assert gemini_discovery.node_tmpdir({"TMP": "D:\\"}, "win32") == "D:\\"
    assert gemini_discovery.node_tmpdir({"SystemRoot": "C:\\Windows"}, "win32") == "C:\\Windows\\temp"


def test_the_file_name_matches_the_clis_pattern(gemini_directory: Path) -> None:
    path = gemini_discovery.discovery_path(gemini_directory, pid=123, port=45678)
    assert path == gemini_directory / "gemini-ide-server-123-45678.json"
    assert gemini_discovery.FILE_NAME.match(path.name)
    assert gemini_discovery.discovery_dir({"TMPDIR": "/x"}, "linux") == Path("/x/gemini/ide")


# --- content and permissions ------------------------------------------------------------


def test_the_file_holds_exactly_what_the_cli_reads(gemini_directory: Path, tmp_path: Path) -> None:
    folders = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert gemini_discovery.publish(gemini_directory, pid=9, port=4321, folders=folders, token="t" * 64) is None
    path = gemini_directory / "gemini-ide-server-9-4321.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "port": 4321,
        "workspacePath": os.pathsep.join(folders),
        "authToken": "t" * 64,
        "ideInfo": IDE_INFO,
    }
    assert sorted(p.name for p in gemini_directory.iterdir()) == [path.name]  # no temporary left


@posix_only
def test_the_folders_are_0700_and_the_file_0600(gemini_directory: Path) -> None:
    old = os.umask(0o022)
    try:
        assert gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="x") is None
    finally:
        os.umask(old)
    assert _mode(gemini_directory.parent) == 0o700
    assert _mode(gemini_directory) == 0o700
    assert _mode(gemini_directory / "gemini-ide-server-1-2.json") == 0o600


# --- hostile places -----------------------------------------------------------------


@posix_only
def test_a_symlink_at_the_files_name_is_replaced_never_followed(gemini_directory: Path, tmp_path: Path) -> None:
    gemini_discovery.ensure_directory(gemini_directory)
    victim = tmp_path / "victim"
    victim.write_text("precious", encoding="utf-8")
    link = gemini_directory / "gemini-ide-server-1-2.json"
    link.symlink_to(victim)
    assert gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="secret") is None
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not link.is_symlink() and _mode(link) == 0o600
    assert json.loads(link.read_text(encoding="utf-8"))["authToken"] == "secret"


@posix_only
@pytest.mark.parametrize("which", ["gemini", "ide"])
def test_a_symlinked_folder_is_refused(gemini_directory: Path, tmp_path: Path, which: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if which == "gemini":
        gemini_directory.parent.symlink_to(elsewhere)
    else:
        gemini_directory.parent.mkdir(mode=0o700)
        gemini_directory.symlink_to(elsewhere)
    problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="secret")
    assert problem is not None and "is not a plain folder (a symlink or a file): refused" in problem
    assert list(elsewhere.rglob("*")) == []


@posix_only
def test_a_folder_others_can_write_is_refused(gemini_directory: Path) -> None:
    gemini_directory.mkdir(parents=True)
    os.chmod(gemini_directory, 0o777)
    problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="secret")
    assert problem is not None and "writable by other users" in problem
    assert list(gemini_directory.iterdir()) == []


@posix_only
@pytest.mark.parametrize(("folder", "mode"), [("gemini", 0o770), ("gemini", 0o703), ("ide", 0o770)],
                         ids=["gemini-group", "gemini-others", "ide-group"])
def test_a_gemini_folder_its_group_or_others_can_write_is_refused(gemini_directory: Path, folder: str,
                                                                 mode: int) -> None:
    """Defect guarded: a group-writable `<tmp>/gemini` (or `ide`) folder was
    accepted; its group could swap the discovery file gemini trusts."""
    gemini_directory.mkdir(parents=True, mode=0o700)
    os.chmod(gemini_directory.parent, 0o700)
    os.chmod(gemini_directory if folder == "ide" else gemini_directory.parent, mode)
    problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="secret")
    assert problem is not None and "writable by other users" in problem
    assert list(gemini_directory.iterdir()) == []


@posix_only
def test_a_folder_of_another_user_is_refused(gemini_directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gemini_directory.mkdir(parents=True, mode=0o700)
    someone_else = os.getuid() + 1
    monkeypatch.setattr(gemini_discovery.os, "getuid", lambda: someone_else)
    problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="secret")
    assert problem is not None and "another user" in problem
    assert list(gemini_directory.iterdir()) == []


@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_gives_a_sentence(gemini_directory: Path) -> None:
    gemini_directory.mkdir(parents=True, mode=0o700)
    os.chmod(gemini_directory, 0o500)
    try:
        problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="x")
    finally:
        os.chmod(gemini_directory, 0o700)
    assert problem is not None and problem.startswith("cannot write gemini-cli's discovery file")


def test_a_refused_write_gives_a_sentence(gemini_directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unwritable folder as root meets it too (root's chmod 0500 does not stop root)."""

    def refused(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(gemini_discovery.lockfile.tempfile, "mkstemp", refused)
    problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="x")
    assert problem == f"cannot write gemini-cli's discovery file in {gemini_directory}: Permission denied"
    assert list(gemini_directory.iterdir()) == []


def test_a_file_where_the_folder_should_be_gives_a_sentence(gemini_directory: Path) -> None:
    gemini_directory.parent.mkdir(parents=True)
    gemini_directory.write_text("not a folder", encoding="utf-8")
    problem = gemini_discovery.publish(gemini_directory, pid=1, port=2, folders=[], token="x")
    assert problem is not None and "not a plain folder" in problem


# --- clean-up ---------------------------------------------------------------------------


def _write(directory: Path, name: str, ide_name: str = "sublimetext") -> Path:
    path = directory / name
    path.write_text(json.dumps({"port": 1, "ideInfo": {"name": ide_name, "displayName": "x"}}), encoding="utf-8")
    return path


def test_the_sweep_removes_only_our_files_of_dead_editors(gemini_directory: Path, tmp_path: Path) -> None:
    gemini_discovery.ensure_directory(gemini_directory)
    dead = _dead_pid()
    stale = _write(gemini_directory, f"gemini-ide-server-{dead}-1111.json")
    alive = _write(gemini_directory, f"gemini-ide-server-{os.getpid()}-2222.json")
    vscode = _write(gemini_directory, f"gemini-ide-server-{dead}-3333.json", ide_name="vscode")
    unnamed = _write(gemini_directory, f"other-{dead}-4444.json")
    broken = gemini_directory / f"gemini-ide-server-{dead}-5555.json"
    broken.write_text("{", encoding="utf-8")
    assert gemini_discovery.sweep_stale(gemini_directory) == [stale]
    assert sorted(p.name for p in gemini_directory.iterdir()) == sorted(p.name for p in (alive, vscode, unnamed, broken))


@posix_only
def test_the_sweep_never_follows_or_removes_a_symlink(gemini_directory: Path, tmp_path: Path) -> None:
    gemini_discovery.ensure_directory(gemini_directory)
    target = _write(tmp_path, "ours-elsewhere.json")
    link = gemini_directory / f"gemini-ide-server-{_dead_pid()}-1111.json"
    link.symlink_to(target)
    assert gemini_discovery.sweep_stale(gemini_directory) == []
    assert link.is_symlink() and target.exists()


def test_the_sweep_of_a_missing_folder_does_nothing(gemini_directory: Path) -> None:
    assert gemini_discovery.sweep_stale(gemini_directory) == []


# --- the Companion publishes and removes it ----------------------------------------------


def test_a_companion_publishes_and_removes_its_gemini_file(
    companion_factory: Callable[..., Companion], gemini_directory: Path, tmp_path: Path
) -> None:
    companion = companion_factory([str(tmp_path / "w")], gemini_directory=gemini_directory, ppid=4242)
    path = gemini_directory / f"gemini-ide-server-4242-{companion.port}.json"
    assert companion.gemini_file == path and companion.gemini_error is None
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["port"] == companion.port and data["authToken"] == companion.token
    companion.set_folders([str(tmp_path / "x")])
    assert json.loads(path.read_text(encoding="utf-8"))["workspacePath"] == str(tmp_path / "x")
    path.unlink()  # something else deleted it: the next poll writes it again
    companion.set_folders([str(tmp_path / "x")])
    assert path.exists()
    companion.stop()
    assert not path.exists()
    assert list(gemini_directory.iterdir()) == []


def test_a_companion_without_gemini_writes_nothing_there(
    companion_factory: Callable[..., Companion], gemini_directory: Path
) -> None:
    companion = companion_factory()
    assert companion.gemini_file is None and companion.gemini_error is None
    assert not gemini_directory.exists()


def test_a_refused_gemini_folder_leaves_qwens_lock_file(
    companion_factory: Callable[..., Companion], gemini_directory: Path
) -> None:
    gemini_directory.parent.mkdir(parents=True)
    gemini_directory.write_text("in the way", encoding="utf-8")
    companion = companion_factory(gemini_directory=gemini_directory)
    assert companion.gemini_error is not None and companion.lock_error is None
    assert companion.lock_file.exists()
