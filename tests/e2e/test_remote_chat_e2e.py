"""The chat's agent elsewhere, against the real `qwen --acp` (0.24.4) and the
fake model: qwen runs on a simulated remote (tests/rig/remote_namespace.py:
its own network namespace with only the model's port forwarded in, its own
mount namespace with the workspace bind-mounted at another path), started by
a `chat_agents` entry with its own `path_maps`. qwen works in the remote
folder, reads and edits the file by its remote path, the review is of the
local file, and the accepted edit lands in the local file."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig import remote_namespace
from tests.rig.fake_model import FakeModel, Reply, edit, read_file
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE, open_editor

pytestmark = pytest.mark.e2e


@pytest.fixture
def remote_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_env: dict[str, str], qwen_cli: QwenCli,
                fake_model: FakeModel, workspace: Path) -> Iterator[tuple[RealChat, Path]]:
    reason = remote_namespace.available()
    if reason:
        pytest.skip(reason)  # the machine lacks the simulated remote, not the CLI
    remote_root = tmp_path / "container" / "workspaces" / "app"  # empty here; the workspace inside
    remote_root.mkdir(parents=True)
    model_port = urlparse(fake_model.base_url).port
    assert model_port is not None
    with tempfile.TemporaryDirectory(prefix="qc-chat-") as sockets:  # Unix socket paths are short
        forward = remote_namespace.UnixToTcp(Path(sockets) / "model", model_port)
        argv = remote_namespace.command(binds=[(workspace, remote_root)], forwards=[(model_port, forward.path)],
                                        argv=[str(qwen_cli.node), str(qwen_cli.entry), "--acp"])
        try:
            with open_editor(tmp_path, monkeypatch, home=Path(real_env["HOME"]), workspace=workspace,
                             load=False) as editor:
                monkeypatch.delenv("QWEN_HOME", raising=False)
                editor.load([workspace], {"chat_agent": "remote", "chat_agents": {"remote": {
                    "command": argv, "path_maps": [{"local": str(workspace), "remote": str(remote_root)}]}}})
                yield RealChat(editor, fake_model), remote_root
        finally:
            forward.close()


def test_qwen_elsewhere_edits_a_file_by_its_own_path_and_the_edit_lands_in_the_local_file(
    remote_chat: tuple[RealChat, Path], workspace: Path,
) -> None:
    chat, remote_root = remote_chat
    local = workspace / "greet.py"
    local.write_text("def greet():\n    return 'hello'\n")
    theirs = str(remote_root / "greet.py")
    chat.model.queue(read_file(theirs), edit(theirs, "'hello'", "'hello, remote'"), Reply(text="Edited remotely."))
    reviews_module = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"]
    opened: list[dict[str, Any]] = []
    reviews_module.reviews.observers.append(lambda event, details: opened.append({"event": event, **details}))
    chat.send("Change the greeting")
    review = chat.host.wait_for(lambda: next((r for r in opened if r["event"] == "diff_opened"), None), timeout=WAIT)
    proposed = next(v for v in chat.host.window.views() if v.id() == review["proposed_view"])
    assert chat.editor.text(proposed) == "def greet():\n    return 'hello, remote'\n"
    chat.host.user.focus(proposed)
    chat.host.user.run_command("qwen_accept_diff")
    assert chat.ended() == ["end_turn"]
    assert local.read_text() == "def greet():\n    return 'hello, remote'\n"
    assert "Edited remotely." in chat.transcript()
    # qwen worked in its own folder and read the file by its own path: the model saw the remote names only.
    sent = str(chat.model.agent_requests)
    assert str(remote_root) in sent and str(local) not in sent
