"""The `qwen serve` daemon's record and lifetime against the real daemon of
0.24.4 and the fake model, through the package loaded in the simulator: a
record its owner's group can read is refused, and the chat says so; the
watchdog keeps a daemon while a chat is attached and ends it, with its
agents, once the last chat has closed and the idle time has passed."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_serve_chat_e2e import daemon_pid
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE
from tests.support.processes import alive, descendants

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


def group_of(pid: int) -> list[int]:
    return [pid, *descendants(pid)]


def test_the_watchdog_keeps_a_daemon_with_a_chat_and_ends_it_idle_after_the_chat_closes(
    serve_chat: RealChat, qwen_cli: QwenCli
) -> None:
    """Sublime gone or not: the daemon the chat started ends with its agents
    once no chat is attached and no turn runs for serve_idle_minutes."""
    idle_seconds = 8.0  # past the first session's opening on a loaded machine, which is not a client yet
    serve_chat.editor.settings({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                                "chat_transport": "serve", "serve_keep_running": True,
                                "serve_idle_minutes": idle_seconds / 60})
    serve_chat.model.queue("Watched.")
    serve_chat.send("hello")
    assert serve_chat.ended() == ["end_turn"]
    pid = daemon_pid(serve_chat)
    watchdogs = [each for each in descendants(os.getpid()) if "serve_watchdog" in command_of(each)]
    assert len(watchdogs) == 1, watchdogs
    tree = group_of(pid)
    assert len(tree) > 1  # the daemon and its agent
    time.sleep(idle_seconds * 2)  # the chat stays attached: not idle
    assert all(alive(each) for each in tree)
    rss = next((line for line in Path(f"/proc/{watchdogs[0]}/status").read_text().splitlines()
                if line.startswith("VmRSS")), "")
    serve_chat.host.user.run_command("qwen_chat_close")
    closed = time.monotonic()
    deadline = closed + WAIT
    while any(alive(each) for each in tree):
        assert time.monotonic() < deadline, [each for each in tree if alive(each)]
        time.sleep(0.1)
    ended_after = time.monotonic() - closed
    while alive(watchdogs[0]):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    print(f"the daemon ended {ended_after:.1f} s after its last chat closed (idle time {idle_seconds} s); the watchdog's {rss}")


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
