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


def kept_running(chat: RealChat, qwen_cli: QwenCli, idle_minutes: float = 60) -> int:
    """A daemon kept running after a first answer; its pid."""
    chat.editor.settings({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                          "chat_transport": "serve", "serve_keep_running": True, "serve_idle_minutes": idle_minutes})
    chat.model.queue("First.")
    chat.send("first")
    assert chat.ended() == ["end_turn"]
    return daemon_pid(chat)


def watchdogs_of(chat: RealChat) -> list[int]:
    """The watchdogs running for daemons of this editor (their script is in its cache folder)."""
    cache = str(Path(chat.editor.host.app.cache_dir))
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and "serve_watchdog" in command_of(int(entry.name))
            and cache in command_of(int(entry.name))]


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
    assert after.chat().core.pid != pid  # not attached to
    assert alive(pid)  # and not replaced by a second daemon: the user looks into it
    assert len(list(Path(serve_chat.editor.host.app.cache_dir).rglob("serve/*.json"))) == 1


def group_of(pid: int) -> list[int]:
    return [pid, *descendants(pid)]


def test_a_daemon_the_chat_starts_gets_a_detached_watchdog(serve_chat: RealChat, qwen_cli: QwenCli) -> None:
    kept_running(serve_chat, qwen_cli)
    watchdogs = serve_chat.host.wait_for(lambda: watchdogs_of(serve_chat), timeout=WAIT)
    assert len(watchdogs) == 1
    assert watchdogs[0] not in descendants(os.getpid())  # detached: never a zombie of the plugin host


def test_the_watchdog_keeps_a_daemon_with_a_chat_and_ends_it_idle_after_the_chat_closes(
    serve_chat: RealChat, qwen_cli: QwenCli
) -> None:
    """Sublime gone or not, the daemon ends with its agents once no chat is
    attached and no turn runs for serve_idle_minutes. The watchdog is started
    here once the chat is attached, as the package starts it (a few seconds'
    idle time would otherwise end the daemon before a loaded machine opens
    its first session)."""
    pid = kept_running(serve_chat, qwen_cli, idle_minutes=0)  # 0: the package starts no watchdog
    assert watchdogs_of(serve_chat) == []
    idle_seconds = 3.0
    record = next(iter(sys.modules[f"{PACKAGE}.core.serve.daemon"].recorded_daemons(
        Path(serve_chat.editor.host.app.cache_dir) / "QwenCompanion"))).record
    agents = sys.modules[f"{PACKAGE}.plugin.chat.agent.agents"]
    sys.modules[f"{PACKAGE}.core.serve.watchdog"].start_watchdog(
        record, agents.watchdog_script(), Path(serve_chat.editor.host.app.cache_dir) / "QwenCompanion",
        idle_seconds / 60, dict(os.environ))
    watchdogs = serve_chat.host.wait_for(lambda: watchdogs_of(serve_chat), timeout=WAIT)
    tree = group_of(pid)
    assert len(tree) > 1  # the daemon and its agent
    time.sleep(idle_seconds * 3)  # the chat stays attached: not idle
    assert all(alive(each) for each in tree)
    rss = " ".join(line.split(None, 1)[1].strip() + " " + line.split(":")[0] for line in
                   Path(f"/proc/{watchdogs[0]}/status").read_text().splitlines()
                   if line.startswith(("VmRSS", "RssAnon")))
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
    print(f"the daemon ended {ended_after:.1f} s after its last chat closed (idle time {idle_seconds} s); "
          f"the watchdog's {rss}")


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
