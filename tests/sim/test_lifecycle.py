"""The servers' lifecycle in the simulated editor: one per window, started off
the main thread, rewritten with the folders, gone with the window, the
package, or Sublime itself."""

from __future__ import annotations

import gc
import importlib.abc
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package
from tests.support.editor import (
    BUILT_PACKAGE,
    PACKAGE,
    ROOT,
    THREAD_WAIT,
    Editor,
    isolate_home,
    open_editor,
    read_locks,
    require_built,
    wait_for_package_threads,
)
from tests.support.mcp_client import WAIT, McpClient

SERVER_THREAD = "QwenCompanion server"


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    """Installed, not loaded: each test loads the package itself."""
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield editor


@pytest.fixture
def host(editor: Editor) -> SimulatedHost:
    return editor.host


@pytest.fixture
def lock_dir(editor: Editor) -> Path:
    return editor.lock_dir


def folder(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.mkdir(exist_ok=True)
    return str(path.resolve())


def wait_locks(host: SimulatedHost, lock_dir: Path, workspaces: list[str], *,
               after_start: bool = True) -> dict[int, dict[str, Any]]:
    """Wait until the lock files describe exactly these workspaces; with
    `after_start`, once the package's start and window threads have ended: a
    window's server, lock file included, may wait for the first start, which
    imports the server libraries (seconds on a loaded machine)."""
    if after_start:
        wait_for_package_threads(host, "start", "window")

    def match() -> dict[int, dict[str, Any]] | None:
        current = read_locks(lock_dir)
        return current if sorted(i["workspacePath"] for i in current.values()) == sorted(workspaces) else None

    try:
        return host.wait_for(match, timeout=WAIT)
    except TimeoutError:
        raise AssertionError(f"lock files {read_locks(lock_dir)} do not describe {workspaces}") from None


def server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == SERVER_THREAD]


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def test_each_window_gets_its_own_server_port_token_and_lock(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    first = folder(tmp_path, "first")
    host.user.set_folders([first])
    host.load_package(PACKAGE)
    second_window = host.user.new_window()
    second = folder(tmp_path, "second")
    host.user.set_folders([second], window=second_window)

    found = wait_locks(host, lock_dir, [first, second])
    assert len({info["authToken"] for info in found.values()}) == 2
    for port, info in found.items():
        assert info["port"] == port
        assert info["ppid"] == os.getpid()
        assert info["ideInfo"] == {"name": "sublimetext", "displayName": "Sublime Text"}
        client = McpClient(port, info["authToken"], "lifecycle").connect()
        client.close()
    host.assert_no_errors()


def test_closing_a_window_stops_its_server_and_removes_its_lock(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    host.user.set_folders([folder(tmp_path, "kept")])
    host.load_package(PACKAGE)
    doomed = host.user.new_window()
    host.user.set_folders([folder(tmp_path, "doomed")], window=doomed)
    before = wait_locks(host, lock_dir, [folder(tmp_path, "kept"), folder(tmp_path, "doomed")])
    doomed_port = next(p for p, i in before.items() if i["workspacePath"].endswith("doomed"))

    host.user.close_window(doomed)

    wait_locks(host, lock_dir, [folder(tmp_path, "kept")])
    # The close's stop may wait for the start (its window thread begins when the
    # start has ended); the lock goes first, then the socket closes.
    wait_for_package_threads(host, "start", "window")
    assert refuses(doomed_port)
    host.assert_no_errors()


CLOSE_HOOK = """
import sublime_plugin

ON_PRE_CLOSE = []


class CloseHook(sublime_plugin.EventListener):
    def on_pre_close_window(self, window):
        for hook in ON_PRE_CLOSE:
            hook(window)
"""


def test_a_window_closed_while_its_server_restarts_keeps_no_server_or_lock(
    host: SimulatedHost, lock_dir: Path, tmp_path: Path
) -> None:
    """The close stops the window's server; a restart whose start comes after
    that stop, while Sublime still closes the window, must not start another."""
    kept, doomed_folder = folder(tmp_path, "kept"), folder(tmp_path, "doomed")
    host.user.set_folders([kept])
    doomed = host.user.new_window()
    host.user.set_folders([doomed_folder], window=doomed)
    host.load_package(PACKAGE)
    write_package(host.packages_dir, "CloseHook", {"close_hook.py": CLOSE_HOOK})
    host.load_package("CloseHook")  # its listener hears the close after the package's
    before = wait_locks(host, lock_dir, [kept, doomed_folder])
    wait_for_package_threads(host, "start", "window")
    doomed_port = next(p for p, i in before.items() if i["workspacePath"] == doomed_folder)

    def restart_once_the_close_stopped_the_server(window: Any) -> None:
        with host.watchdog.internal():  # the test holds the close open; no package callback waits
            host.wait_for(lambda: doomed_port not in read_locks(lock_dir), timeout=WAIT)
            window.run_command("qwen_restart_server")
            wait_for_package_threads(host, "restart")

    sys.modules["CloseHook.close_hook"].ON_PRE_CLOSE.append(restart_once_the_close_stopped_the_server)
    host.user.close_window(doomed)

    wait_for_package_threads(host, "window", "restart")
    assert [i["workspacePath"] for i in read_locks(lock_dir).values()] == [kept]
    assert refuses(doomed_port)
    assert len(server_threads()) == 1
    host.assert_no_errors()


class _ImportGate(importlib.abc.MetaPathFinder):
    """Holds the start's import of the server libraries until the test opens it."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> None:
        if name == f"{PACKAGE}._vendor.aiohttp" and not self.opened.is_set():
            self.reached.set()
            self.opened.wait(THREAD_WAIT)
        return


def test_a_window_closed_while_the_servers_start_keeps_no_server_or_lock(
    host: SimulatedHost, lock_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _ImportGate()
    monkeypatch.setattr(sys, "meta_path", [gate, *sys.meta_path])
    kept, doomed_folder = folder(tmp_path, "kept"), folder(tmp_path, "doomed")
    host.user.set_folders([kept])
    doomed = host.user.new_window()
    host.user.set_folders([doomed_folder], window=doomed)
    host.load_package(PACKAGE)
    # The ports are claimed, their lock files written. A hang guard as long as the
    # package threads': a fresh process imports the package's modules first.
    assert gate.reached.wait(THREAD_WAIT)
    claimed = wait_locks(host, lock_dir, [kept, doomed_folder], after_start=False)  # the start is held
    doomed_port = next(p for p, i in claimed.items() if i["workspacePath"] == doomed_folder)

    host.user.close_window(doomed)
    gate.opened.set()

    wait_for_package_threads(host, "start", "window")
    assert [i["workspacePath"] for i in read_locks(lock_dir).values()] == [kept]
    assert refuses(doomed_port)
    host.assert_no_errors()


def test_folder_changes_rewrite_the_lock_file(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    one, two = folder(tmp_path, "one"), folder(tmp_path, "two")
    host.user.set_folders([one])
    host.load_package(PACKAGE)
    port = next(iter(wait_locks(host, lock_dir, [one])))

    host.user.add_folder(two)
    assert list(wait_locks(host, lock_dir, [os.pathsep.join([one, two])])) == [port]
    host.user.remove_folder(one)
    assert list(wait_locks(host, lock_dir, [two])) == [port]
    host.user.set_folders([])
    assert list(wait_locks(host, lock_dir, [""])) == [port]
    host.assert_no_errors()


def test_the_lock_file_is_written_before_the_server_libraries_load(
    host: SimulatedHost, lock_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, bool] = {}

    class LockWatcher(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> None:
            if name == f"{PACKAGE}._vendor.aiohttp" and name not in seen:
                seen[name] = bool(read_locks(lock_dir))
            return

    monkeypatch.setattr(sys, "meta_path", [LockWatcher(), *sys.meta_path])
    host.user.set_folders([folder(tmp_path, "w")])

    host.load_package(PACKAGE)
    [(port, info)] = wait_locks(host, lock_dir, [folder(tmp_path, "w")]).items()
    McpClient(port, info["authToken"], "early").connect().close()  # the server adopted that port

    assert seen == {f"{PACKAGE}._vendor.aiohttp": True}
    host.assert_no_errors()


def test_unloading_leaves_no_thread_socket_or_lock_file(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    host.user.set_folders([folder(tmp_path, "w")])
    host.load_package(PACKAGE)
    port = next(iter(wait_locks(host, lock_dir, [folder(tmp_path, "w")])))
    wait_for_package_threads(host, "start")  # the lock file comes first; the server follows
    assert len(server_threads()) == 1

    host.unload_package(PACKAGE)

    assert read_locks(lock_dir) == {}  # at once: the process may end right after
    wait_for_package_threads(host, "stop", "server")  # the servers close on the package's own thread
    assert server_threads() == []
    assert refuses(port)
    host.assert_no_errors()


def test_quitting_sublime_removes_the_lock_files(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    host.user.set_folders([folder(tmp_path, "w")])
    host.load_package(PACKAGE)
    port = next(iter(wait_locks(host, lock_dir, [folder(tmp_path, "w")])))
    wait_for_package_threads(host, "start")

    host.quit()  # on_exit, not plugin_unloaded, as in Sublime

    assert read_locks(lock_dir) == {}  # at once: the process ends after on_exit
    wait_for_package_threads(host, "stop", "server")
    assert server_threads() == []
    assert refuses(port)


def test_twenty_reloads_leave_exactly_one_live_server_per_window(
    host: SimulatedHost, lock_dir: Path, tmp_path: Path
) -> None:
    host.user.set_folders([folder(tmp_path, "a")])
    second = host.user.new_window()
    host.user.set_folders([folder(tmp_path, "b")], window=second)
    host.load_package(PACKAGE)
    wait_locks(host, lock_dir, [folder(tmp_path, "a"), folder(tmp_path, "b")], after_start=False)  # the first reload races it
    seen_ports: set[int] = set()

    for _ in range(20):
        # Reload right away, sometimes before the previous start finished.
        host.reload_package(PACKAGE)
        seen_ports |= set(read_locks(lock_dir))
    wait_for_package_threads(host, "start", "stop")
    host.wait_idle()
    final = wait_locks(host, lock_dir, [folder(tmp_path, "a"), folder(tmp_path, "b")])

    assert len(server_threads()) == 1
    for port, info in final.items():
        McpClient(port, info["authToken"], "after-reloads").connect().close()
    assert all(refuses(port) for port in seen_ports - set(final))
    host.assert_no_errors()


class _ImportThreadRecorder(importlib.abc.MetaPathFinder):
    """Notes which thread first imports the vendored aiohttp and pydantic."""

    def __init__(self) -> None:
        self.threads: dict[str, str] = {}

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> None:
        if name in (f"{PACKAGE}._vendor.aiohttp", "pydantic") and name not in self.threads:
            self.threads[name] = threading.current_thread().name
        return


def test_heavy_imports_and_sockets_stay_off_the_main_thread(
    host: SimulatedHost, lock_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _ImportThreadRecorder()
    monkeypatch.setattr(sys, "meta_path", [recorder, *sys.meta_path])
    saved_pydantic = {k: v for k, v in sys.modules.items() if k == "pydantic" or k.startswith("pydantic.")}
    for name in saved_pydantic:
        monkeypatch.delitem(sys.modules, name)
    host.user.set_folders([folder(tmp_path, "w")])

    host.load_package(PACKAGE)
    wait_locks(host, lock_dir, [folder(tmp_path, "w")])
    wait_for_package_threads(host, "start")  # the lock file comes before the imports

    # Neither Sublime's main thread nor its worker shared by every package.
    assert recorder.threads.get(f"{PACKAGE}._vendor.aiohttp") == "QwenCompanion start"
    assert recorder.threads.get("pydantic") == "QwenCompanion start"
    host.assert_no_errors()


MISMATCH_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])          # the fake pydantic comes first
    sys.path.insert(0, sys.argv[2])          # the repository, for tests.sublime_sim
    from tests.sublime_sim import SimulatedHost
    from tests.support.editor import wait_for_package_threads
    host = SimulatedHost(sys.argv[3])
    host.install_package(sys.argv[4], "QwenCompanion")
    host.load_package("QwenCompanion")
    wait_for_package_threads(host, "start")
    host.wait_idle()
    print(json.dumps({
        "dialogs": [[d.kind, d.message] for d in host.dialogs],
        "errors": [str(e) for e in host.errors],
    }))
    host.close()
    """
)


def test_a_pydantic_core_mismatch_shows_one_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_built()
    home = isolate_home(monkeypatch, tmp_path / "home")  # no host here: the subprocess runs it
    fake = tmp_path / "fake" / "pydantic"
    fake.mkdir(parents=True)
    # The text real pydantic raises when pydantic-core does not match.
    (fake / "__init__.py").write_text(
        "raise SystemError('The installed pydantic-core version (2.0.0) is incompatible with the current "
        "pydantic version, which requires 2.50.4.')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", MISMATCH_SCRIPT, str(fake.parent), str(ROOT), str(tmp_path / "Packages"), str(BUILT_PACKAGE)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["errors"] == []
    assert len(report["dialogs"]) == 1
    kind, message = report["dialogs"][0]
    assert kind == "error"
    assert "pydantic-core" in message and "Satisfy Libraries" in message
    assert "Traceback" not in message
    assert read_locks(home / ".qwen" / "ide") == {}


def test_disable_then_enable_starts_a_live_server_again(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    host.user.set_folders([folder(tmp_path, "w")])
    host.load_package(PACKAGE)
    first = next(iter(wait_locks(host, lock_dir, [folder(tmp_path, "w")])))
    wait_for_package_threads(host, "start")

    host.disable_package(PACKAGE)  # only the plugin module leaves sys.modules
    assert read_locks(lock_dir) == {}
    host.enable_package(PACKAGE)

    final = wait_locks(host, lock_dir, [folder(tmp_path, "w")])
    wait_for_package_threads(host, "start", "stop")
    host.wait_idle(timeout=WAIT)
    port, info = next(iter(final.items()))
    assert port != first and refuses(first)
    McpClient(port, info["authToken"], "after-enable").connect().close()
    assert len(server_threads()) == 1
    host.assert_no_errors()


def test_an_upgrade_runs_the_new_files_with_a_live_server(host: SimulatedHost, lock_dir: Path, tmp_path: Path) -> None:
    # Package Control disables the package, replaces its files, enables it.
    (host.packages_dir / PACKAGE).unlink()
    installed = host.install_package(BUILT_PACKAGE, PACKAGE, copy=True)
    host.user.set_folders([folder(tmp_path, "w")])
    host.load_package(PACKAGE)
    wait_locks(host, lock_dir, [folder(tmp_path, "w")])

    host.disable_package(PACKAGE)
    status_module = installed / "core" / "companion" / "status.py"
    status_module.write_text(status_module.read_text() + "\nUPGRADED = True\n")
    host.enable_package(PACKAGE)

    wait_for_package_threads(host, "start", "stop")  # the old load's lock is gone, the new one's written
    final = wait_locks(host, lock_dir, [folder(tmp_path, "w")])
    host.wait_idle(timeout=WAIT)
    assert getattr(sys.modules[f"{PACKAGE}.core.companion.status"], "UPGRADED", False)
    port, info = next(iter(final.items()))
    McpClient(port, info["authToken"], "after-upgrade").connect().close()
    host.assert_no_errors()


def test_a_lock_file_deleted_by_something_else_is_written_again(
    host: SimulatedHost, lock_dir: Path, tmp_path: Path
) -> None:
    host.user.set_folders([folder(tmp_path, "w")])
    host.load_package(PACKAGE)
    locks = wait_locks(host, lock_dir, [folder(tmp_path, "w")])
    port, info = next(iter(locks.items()))

    (lock_dir / f"{port}.lock").unlink()

    again = wait_locks(host, lock_dir, [folder(tmp_path, "w")])  # within the folder poll
    assert again == {port: info}
    host.assert_no_errors()


def test_a_reload_leaves_the_previous_copy_to_the_garbage_collector(editor: Editor) -> None:
    """Sublime's reload and Package Control's upgrade import the package anew in
    the same plugin host: the old copy's classes (the vendored ACP schema, held
    by `typing`'s and pydantic's caches once subscripted) must not stay alive."""
    editor.load([editor.workspace])
    editor.wait_for_package_threads("preload")
    old_schema = weakref.ref(sys.modules[f"{PACKAGE}._vendor.acp.schema"].PromptRequest)
    old_server = weakref.ref(sys.modules[f"{PACKAGE}._vendor.aiohttp.web"].Application)
    for _ in range(2):
        editor.host.reload_package(PACKAGE)
        editor.wait_for_package_threads("start", "preload")
    editor.host.wait_idle()
    gc.collect()
    assert old_schema() is None and old_server() is None
    assert sys.modules[f"{PACKAGE}._vendor.acp.schema"].PromptRequest is not None  # the new copy is loaded
