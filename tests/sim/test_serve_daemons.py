"""The `qwen serve` daemons the package started, across its loads: at the
package's start a daemon whose folder is gone is ended and its record
dropped (a running one of an existing folder is kept); Diagnose Connection
lists every daemon the package started, and a running one's Stop link ends
it. Stand-in daemons (a process listening on loopback, recorded as the
package records a daemon) in the simulated host's cache folder."""

from __future__ import annotations

import importlib
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from qwencompanion_src.core.cli.processes import kill_group
from qwencompanion_src.core.serve import daemon
from tests.sim.test_ux_commands import REPORT_NAME, home, workspace  # noqa: F401  (fixtures)
from tests.support.editor import PACKAGE, Editor, open_editor
from tests.support.processes import alive
from tests.unit.test_serve_daemon import STAND_IN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="stand-ins checked through /proc")

WAIT = 30.0
TOKEN = "d1a9" * 16


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path, workspace: Path) -> Iterator[Editor]:  # noqa: F811
    with open_editor(tmp_path, monkeypatch, home=home, workspace=workspace, load=False) as editor:
        yield editor


@pytest.fixture
def started_pids() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        kill_group(pid)


def recorded_stand_in(editor: Editor, folder: Path, tmp_path: Path, pids: list[int]) -> daemon.DaemonRecord:
    """A stand-in daemon for `folder`, recorded where the package keeps its records."""
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    cache = Path(editor.host.app.cache_dir) / "QwenCompanion"
    argv = daemon.serve_argv([sys.executable, str(script), str(tmp_path / f"{folder.name}.json"), "127.0.0.1"],
                             [str(folder)])
    started = daemon.start_daemon(argv, str(tmp_path), {}, TOKEN, [str(folder)], daemon.output_path(cache, [str(folder)]))
    pids.append(started.process.pid)
    daemon.write_record(daemon.record_path(cache, [str(folder)]), started.record)
    return started.record


def waited(condition: object) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_daemon_whose_folder_is_gone_ends_when_the_package_starts(
    editor: Editor, workspace: Path, tmp_path: Path, started_pids: list[int]  # noqa: F811
) -> None:
    gone_folder = tmp_path / "deleted-project"
    gone_folder.mkdir()
    kept = recorded_stand_in(editor, workspace, tmp_path, started_pids)
    orphan = recorded_stand_in(editor, gone_folder, tmp_path, started_pids)
    shutil.rmtree(gone_folder)
    editor.load([workspace])
    assert waited(lambda: not alive(orphan.pid))
    cache = Path(editor.host.app.cache_dir) / "QwenCompanion"
    assert daemon.read_record(daemon.record_path(cache, [str(gone_folder)])) is None
    assert alive(kept.pid)
    assert daemon.read_record(daemon.record_path(cache, [str(workspace)])) == kept


def test_diagnose_lists_every_daemon_and_its_stop_link_ends_one(
    editor: Editor, workspace: Path, tmp_path: Path, started_pids: list[int]  # noqa: F811
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    ours = recorded_stand_in(editor, workspace, tmp_path, started_pids)
    elsewhere = recorded_stand_in(editor, other, tmp_path, started_pids)
    editor.load([workspace])
    host = editor.host
    host.user.run_command("qwen_diagnose_connection", {"folder": str(workspace)})
    report_view = host.wait_for(lambda: next((v for v in host.window.views()
                                              if v.name() == REPORT_NAME and v.size()), None), timeout=WAIT)
    host.wait_idle()
    text = report_view.substr(host.sublime.Region(0, report_view.size()))
    for record, folder in ((ours, workspace), (elsewhere, other)):
        assert f"{folder}: pid {record.pid}, port {record.port}, running" in text, text
    key = daemon.folders_key([str(other)])
    host.user.click_phantom(report_view, key)
    assert waited(lambda: not alive(elsewhere.pid))
    assert alive(ours.pid)
    cache = Path(editor.host.app.cache_dir) / "QwenCompanion"
    assert daemon.read_record(daemon.record_path(cache, [str(other)])) is None


def test_stop_serve_daemon_leaves_a_daemon_started_after_the_chats_one_ended(
    editor: Editor, workspace: Path, tmp_path: Path, started_pids: list[int], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    # The chat's connection ends its daemon and forgets its record; a prompt
    # sent meanwhile starts the next one. Stop must not end that one too: the
    # chat that just started on it would find it gone.
    editor.load([workspace])
    host = editor.host
    serve_bridge = importlib.import_module(f"{PACKAGE}.core.serve.serve_bridge")
    window_chats = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"]
    started_meanwhile: list[daemon.DaemonRecord] = []

    class EndedConnection:
        def end_daemon(self) -> Future[bool]:
            started_meanwhile.append(recorded_stand_in(editor, workspace, tmp_path, started_pids))
            done: Future[bool] = Future()
            done.set_result(True)
            return done

    monkeypatch.setattr(serve_bridge, "ServeConnection", EndedConnection)
    monkeypatch.setattr(window_chats.chats, "serve_connection", lambda window: EndedConnection())
    host.user.run_command("qwen_serve_stop")
    host.wait_for(lambda: any("serve daemon was stopped" in said for said in host.status_messages), timeout=WAIT)
    [next_daemon] = started_meanwhile
    assert alive(next_daemon.pid)
    cache = Path(host.app.cache_dir) / "QwenCompanion"
    assert daemon.read_record(daemon.record_path(cache, [str(workspace)])) == next_daemon


@pytest.mark.parametrize("outcome", ["still ending", "window closed"])
def test_stop_serve_daemon_is_said_when_the_chats_stop_outlasts_the_wait(
    editor: Editor, workspace: Path, monkeypatch: pytest.MonkeyPatch, outcome: str  # noqa: F811
) -> None:
    # A daemon that hangs is when the user reaches for Stop: its channels'
    # closes and its grace may outlast the wait, or the window closes and its
    # drain cancels the stop. The user is still told, and the daemon is not
    # looked up again by its record: the chat's stop forgot it first.
    editor.load([workspace])
    host = editor.host
    serve_bridge = importlib.import_module(f"{PACKAGE}.core.serve.serve_bridge")
    window_chats = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"]
    ending: Future[bool] = Future()
    looked_up: list[object] = []

    class HungConnection:
        def end_daemon(self) -> Future[bool]:
            if outcome == "window closed":
                ending.cancel()
            return ending

    monkeypatch.setattr(serve_bridge, "ServeConnection", HungConnection)
    monkeypatch.setattr(serve_bridge, "END_DAEMON_SECONDS", 0.2)
    monkeypatch.setattr(window_chats.chats, "serve_connection", lambda window: HungConnection())
    serve_daemon = sys.modules[f"{PACKAGE}.plugin.chat.agent.serve_daemon"]
    monkeypatch.setattr(serve_daemon, "stop_recorded", lambda *args: looked_up.append(args))
    host.user.run_command("qwen_serve_stop")
    host.wait_for(lambda: any("serve daemon was stopped" in said for said in host.status_messages), timeout=WAIT)
    assert looked_up == []
    ending.cancel()
