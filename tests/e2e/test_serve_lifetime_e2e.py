"""The `qwen serve` daemon's record and lifetime against the real daemon of
0.24.4 and the fake model, through the package loaded in the simulator: a
record its owner's group can read is refused, and the chat says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_serve_chat_e2e import daemon_pid
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE
from tests.support.processes import alive

pytestmark = pytest.mark.e2e


def kept_running(chat: RealChat, qwen_cli: QwenCli) -> int:
    """A daemon kept running after a first answer; its pid."""
    chat.editor.settings({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                          "chat_transport": "serve", "serve_keep_running": True})
    chat.model.queue("First.")
    chat.send("first")
    assert chat.ended() == ["end_turn"]
    return daemon_pid(chat)


def record_file(chat: RealChat) -> Path:
    records = list(Path(chat.editor.host.app.cache_dir).rglob("serve/*.json"))
    assert len(records) == 1
    return records[0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_record_the_group_can_read_is_refused_and_the_chat_says_so(serve_chat: RealChat,
                                                                    qwen_cli: QwenCli) -> None:
    pid = kept_running(serve_chat, qwen_cli)
    record = record_file(serve_chat)
    record.chmod(0o640)
    try:
        refused_and_said(serve_chat, pid)
    finally:
        record.unlink(missing_ok=True)  # the fixture's clean-up reads records too
        sys.modules[f"{PACKAGE}.core.cli.processes"].kill_group(pid)
    serve_chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def refused_and_said(serve_chat: RealChat, pid: int) -> None:
    serve_chat.host.reload_package(PACKAGE)
    after = RealChat(serve_chat.editor, serve_chat.model)
    after.host.user.run_command("qwen_chat")
    after.editor.wait_for_package_threads("start", "preload")
    after.send("second")
    assert after.ended() == ["error"]
    text = after.transcript()
    assert "open to your group or others (mode 640)" in text and "not used" in text, text[-1500:]
    assert after.chat().conversation.pid != pid  # not attached to
    assert alive(pid)  # and not replaced by a second daemon: the user looks into it
    assert len(list(Path(serve_chat.editor.host.app.cache_dir).rglob("serve/*.json"))) == 1
