"""End to end: the real Qwen Code CLI on a simulated remote machine finds the
editor through the remote endpoint and a path map.

The "remote" is a network namespace (its 127.0.0.1 is not the editor's; only
the endpoint's port is forwarded in, as `ssh -R` does, plus the fake model's)
and a mount namespace in which the workspace is bind-mounted at another path,
as a dev container mounts it. The CLI gets what "Copy Connect Command for a
Container" copies: its install line (the lock file on stdin) and its start
line run inside the namespace, only `docker exec` itself left out. The CLI
connects, sees the editor's context under its own paths, proposes an edit
under its own path, the review opens on the local file, and the accepted text
lands in that file.
"""

from __future__ import annotations

import json
import shlex
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.e2e.test_ide_tools_e2e import assert_right_answers, received, symbols_then_definition, write_project
from tests.rig import remote_namespace
from tests.rig.fake_model import FakeModel, edit, message_text, read_file
from tests.rig.qwen_cli import QwenCli, TuiSession, cli_env, make_home
from tests.support.editor import Editor, open_editor

pytestmark = pytest.mark.e2e

CONFIRM = r"Apply this change\?"
DONE = "Finished editing."


@dataclass(frozen=True)
class RemoteCli(QwenCli):
    """The CLI as TuiSession starts it, but through `inside` (the simulated remote's argv)."""

    inside: tuple[str, ...] = ()

    def argv(self, *args: str) -> list[str]:
        return list(self.inside)


@pytest.fixture
def namespaces() -> None:
    # A machine that cannot make namespaces (no root, user namespaces off)
    # lacks the simulated remote, not the CLI: skipped even when e2e is required.
    reason = remote_namespace.available()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def remote_root(tmp_path: Path) -> Path:
    """The workspace's path on the remote side: an empty folder here, the
    workspace itself inside the namespace (its mount point)."""
    root = tmp_path / "container" / "workspaces" / "app"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def editor(
    tmp_path: Path, qwen_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch,
    qwen_cli: QwenCli, remote_root: Path, namespaces: None,
) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, home=qwen_home, workspace=workspace, load=False) as editor:
        editor.load([workspace], settings={
            "path_maps": [{"local": str(workspace), "remote": str(remote_root)}],
            "remote_qwen_command": qwen_cli.argv(),
        })
        yield editor


@pytest.fixture
def sockets() -> Iterator[Path]:
    """A short folder for the forwards' Unix sockets (their paths are limited to ~100 bytes)."""
    with tempfile.TemporaryDirectory(prefix="qc-remote-") as folder:
        yield Path(folder)


def copied_lines(editor: Editor) -> tuple[str, Path, str]:
    """(install script, lock file, start script) of the copied container command."""
    host = editor.host
    host.app.clipboard = ""
    host.user.run_command("qwen_copy_remote_connect_command", {"via": "container", "target": "dev"})
    text = str(host.wait_for(lambda: host.app.clipboard, timeout=30))
    install, start, _ = text.split("\n")
    install_words, start_words = shlex.split(install), shlex.split(start)
    assert install_words[:6] == ["docker", "exec", "-i", "dev", "sh", "-c"] and install_words[-2] == "<"
    assert start_words[:6] == ["docker", "exec", "-it", "dev", "sh", "-c"]
    return install_words[6], Path(install_words[-1]), start_words[6]


@contextmanager
def remote_tui(
    editor: Editor, qwen_cli: QwenCli, tmux_bin: str, fake_model: FakeModel, workspace: Path, remote_root: Path,
    sockets: Path, tmp_path: Path,
) -> Iterator[tuple[TuiSession, Path]]:
    """The copied container lines run in the simulated remote: (its TUI, its home)."""
    install, lock_file, start = copied_lines(editor)
    token = editor.lock_info()["authToken"]
    assert token not in install + start  # nor the remote tokens: the connect file's content travels on stdin
    assert stat.S_IMODE(lock_file.stat().st_mode) == 0o600

    remote_port = next(int(w.split("=")[1]) for w in shlex.split(start) if w.startswith("QWEN_CODE_IDE_SERVER_PORT="))
    model_port = urlparse(fake_model.base_url).port
    assert model_port is not None
    forwards = [remote_namespace.UnixToTcp(sockets / "ide", remote_port),
                remote_namespace.UnixToTcp(sockets / "model", model_port)]
    remote_home = make_home(tmp_path / "remote")
    script = f"sh -c {shlex.quote(install)} < {shlex.quote(str(lock_file))} && exec sh -c {shlex.quote(start)}"
    cli = RemoteCli(qwen_cli.cache_dir, tuple(remote_namespace.command(
        binds=[(workspace, remote_root)],
        forwards=[(remote_port, sockets / "ide"), (model_port, sockets / "model")],
        argv=["sh", "-c", script],
    )))
    tui = TuiSession(cli, workspace, cli_env(qwen_cli, remote_home, fake_model.base_url), tmux=tmux_bin)
    try:
        tui.start()
        tui.wait_ready(60)
        yield tui, remote_home
    finally:
        tui.close()
        for forward in forwards:
            forward.close()


def test_a_cli_on_a_remote_with_a_mapped_workspace_connects_sees_context_and_its_accepted_edit_lands(
    editor: Editor, qwen_cli: QwenCli, tmux_bin: str, fake_model: FakeModel, workspace: Path, remote_root: Path,
    sockets: Path, tmp_path: Path,
) -> None:
    path = workspace / "greet.py"
    path.write_bytes(b"def greet():\n    return 'hello'\n")
    with remote_tui(editor, qwen_cli, tmux_bin, fake_model, workspace, remote_root, sockets, tmp_path) as (tui, home):
        tui.wait_ide_status("✓ Connected", timeout=30)
        [installed] = (home / ".qwen" / "ide").glob("*.lock")
        assert stat.S_IMODE(installed.stat().st_mode) == 0o600

        editor.open("greet.py", path.read_text())
        deadline = time.monotonic() + 30
        while tui.ide_status() and "- greet.py (active)" not in tui.screen():
            assert time.monotonic() < deadline, "the context never reached the remote CLI"
            time.sleep(0.5)

        remote_file = str(remote_root / "greet.py")
        fake_model.queue(read_file(remote_file), edit(remote_file, "'hello'", "'hello, remote'"), DONE)
        tui.submit("please edit greet.py")
        tui.wait_for(CONFIRM, timeout=60)
        prompt = "\n".join(message_text(m) for m in fake_model.agent_requests[0]["messages"])
        assert remote_file in prompt and str(path) not in prompt  # the context names the file as the CLI sees it

        _, proposed = editor.review(path)  # the review is of the local file
        assert editor.text(proposed) == "def greet():\n    return 'hello, remote'\n"
        editor.host.user.click_annotation(proposed, "accept")
        fake_model.wait_for_requests(3, timeout=30)
        tui.wait_for(DONE, timeout=30)
    assert path.read_bytes() == b"def greet():\n    return 'hello, remote'\n"
    assert editor.review_views() == []
    editor.host.assert_no_errors()


def test_a_cli_on_a_remote_calls_the_ide_tools_under_its_own_paths(
    editor: Editor, qwen_cli: QwenCli, tmux_bin: str, fake_model: FakeModel, workspace: Path, remote_root: Path,
    sockets: Path, tmp_path: Path,
) -> None:
    write_project(workspace)
    fake_model.set_responder(symbols_then_definition(remote_root))
    with remote_tui(editor, qwen_cli, tmux_bin, fake_model, workspace, remote_root, sockets, tmp_path) as (tui, home):
        [config] = (home / ".qwen" / "ide").glob("*-ide-tools.json")
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        tui.submit("Where is Shelf defined?")
        tui.wait_for("Shelf is a class in shelf.py.", timeout=60)
    # The answers name the files as the remote CLI sees them, and nothing local.
    assert_right_answers(fake_model, remote_root)
    assert str(workspace) not in json.dumps(received(fake_model))
    editor.host.assert_no_errors()
