"""Notifications and usage in the simulated editor with the BUILT package and
the scripted ACP agent: a turn's end or a waiting permission while the chat
is out of sight (behind another tab, or Sublime in the background) marks the
status bar and the transcript's tab, sends the `notification` event and, per
the setting, starts the platform's tool (a stand-in here, see
tests/support/desktop.py); seeing the chat clears the marks. Usage from the
agent's hostile `_meta` reaches the status bar and the transcript."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import pending, shell_permission
from tests.support.desktop import TOOLS, DesktopTools
from tests.support.editor import PACKAGE
from tests.support.processes import descendants

MARKED = "● Qwen Chat"
# The tools' stand-ins (tests/support/desktop.py) are POSIX scripts.
posix_tools = pytest.mark.skipif(sys.platform == "win32", reason="the notification tools' stand-ins are POSIX scripts")


def notifications(rig: ChatRig) -> list[dict[str, Any]]:
    return [d for e, d in rig.events if e == "notification"]


def hide_transcript_behind(rig: ChatRig) -> tuple[Any, Any]:
    """Another tab opened in the transcript's group, in front of it: (transcript, that tab)."""
    transcript, _ = rig.open()
    window = rig.host.window
    group, _ = window.get_view_index(transcript)
    rig.host.user.focus_group(group)
    other = rig.editor.open("notes.md", "notes\n")
    assert window.active_view_in_group(group) == other
    return transcript, other


def tool_processes() -> list[int]:
    """Our processes that run a notification tool, or ran one and were not
    reaped (zombies keep the name they were started with); Linux only (read
    from /proc), elsewhere none. Another test's zombie on this worker is not
    this test's tool."""
    if not Path("/proc/self/stat").exists():
        return []
    found = []
    for pid in descendants(os.getpid()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name in {tool[:15] for tool in TOOLS}:  # the kernel keeps 15 characters of the name
            found.append(pid)
    return found


def usage_chunk(inputs: Any, outputs: Any, cached: Any = 0) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""},
                       "_meta": {"usage": {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": 1,
                                           "cachedReadTokens": cached}, "durationMs": 5}}}


def test_a_turn_ending_behind_another_tab_marks_the_tab_and_seeing_it_clears(rig: ChatRig,
                                                                           desktop_tools: DesktopTools) -> None:
    rig.load([[{"stall": 0.5}, {"chunks": ["Done."]}]])
    rig.send("work")
    transcript, _ = hide_transcript_behind(rig)
    assert rig.ended() == ["end_turn"]
    note = rig.host.wait_for(lambda: notifications(rig), timeout=WAIT)
    chat = rig.chat()
    assert note == [{"window": rig.host.window.id(), "chat": chat.chat_id, "kind": "turn_ended",
                     "text": "the chat's answer is ready"}]
    assert transcript.name() == MARKED
    assert rig.host.window.active_view().get_status("qwen_chat_done") == "Qwen Code: the chat's answer is ready"
    assert desktop_tools.calls() == []  # a short turn: no desktop notification
    rig.host.user.focus(transcript)
    rig.host.wait_for(lambda: transcript.name() == "Qwen Chat", timeout=WAIT)
    assert transcript.get_status("qwen_chat_done") == ""


def test_a_turn_the_user_cancelled_out_of_sight_tells_nothing(rig: ChatRig, desktop_tools: DesktopTools) -> None:
    """Defect guarded: a turn the user cancelled (from the command palette,
    the chat behind another tab) still marked the tab and notified."""
    rig.load([[{"stall": 30}]])
    rig.send("work")
    rig.host.wait_for(lambda: rig.chat().core.state.agent_status == "busy", timeout=WAIT)
    transcript, _ = hide_transcript_behind(rig)
    rig.chat().core.cancel()
    assert rig.ended() == ["cancelled"]
    rig.host.wait_idle()
    assert notifications(rig) == [] and transcript.name() == "Qwen Chat" and desktop_tools.calls() == []


def test_a_turn_ending_in_sight_tells_nothing(rig: ChatRig) -> None:
    rig.load([[{"stall": 0.3}]])
    rig.send("in sight")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_idle()
    transcript, _ = rig.open()
    assert notifications(rig) == [] and transcript.name() == "Qwen Chat"


@posix_tools
def test_a_long_turn_ending_while_sublime_is_in_the_background_pops_a_desktop_notification(
        rig: ChatRig, desktop_tools: DesktopTools, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load([[{"stall": 0.5}, {"stop": "max_tokens"}]])
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"], "LONG_TURN_SECONDS", 0.2)
    rig.send("long")
    rig.host.user.leave_app()  # the chat is the selected tab, but another application has the keys
    assert rig.ended() == ["max_tokens"]
    rig.host.wait_for(lambda: notifications(rig), timeout=WAIT)
    calls = rig.host.wait_for(desktop_tools.calls, timeout=WAIT)
    assert calls == [{"tool": "notify-send", "argv": ["--app-name=Sublime Text", "--", "Qwen Code",
                                                     "the chat's answer is ready (max_tokens)"], "env": {}}]
    rig.host.wait_for(lambda: not tool_processes(), timeout=WAIT)  # the tool ended and was reaped
    transcript = rig.chat().transcript_view
    assert transcript.name() == MARKED
    rig.host.user.return_to_app()  # back, with the chat in sight
    rig.host.wait_for(lambda: transcript.name() == "Qwen Chat", timeout=WAIT)


def test_a_short_turn_after_a_long_one_pops_no_desktop_notification(rig: ChatRig,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect guarded: the first turn's start was never forgotten, so every
    later turn, however short, counted as long and popped a desktop
    notification. The turns' lengths come from a clock the test moves."""
    asked = shell_permission("make")
    rig.load([[asked, {"chunks": ["one"]}], [asked, {"chunks": ["two"]}]])
    clock = [0.0]
    notify = sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"]
    monkeypatch.setattr(notify, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    popped: list[str] = []  # the desktop's notifications, recorded where notify() starts them (main thread)
    monkeypatch.setattr(notify, "runner", lambda command: popped.append(command.argv[-1]))

    def answered_turn(number: int, length: float) -> None:
        rig.host.user.leave_app()  # the chat is the selected tab, but another application has the keys
        prompt = pending(rig)  # the turn waits for the user: its length is the clock's move
        # The question's desktop notification is the chat's one until it is seen:
        # the user looks at the chat, then leaves again before the turn ends.
        rig.host.user.return_to_app()
        rig.host.wait_for(lambda: not rig.chat().transcript_view.name().startswith(notify.TITLE_MARK), timeout=WAIT)
        rig.host.user.leave_app()
        clock[0] += length
        requests = rig.chat().request_handler()
        rig.host.run_on_main(lambda: requests.choose(prompt.key, "cancel"))
        assert rig.ended(number)[-1] == "end_turn"
        rig.host.wait_for(lambda: len([n for n in notifications(rig) if n["kind"] == "turn_ended"]) == number,
                          timeout=WAIT)
        rig.host.wait_idle()
        rig.host.user.return_to_app()

    rig.send("long")
    answered_turn(1, notify.LONG_TURN_SECONDS + 1)
    assert popped.count("the chat's answer is ready") == 1
    rig.send("short")
    answered_turn(2, 1)
    assert popped.count("the chat's answer is ready") == 1


@posix_tools
def test_a_permission_waiting_unseen_notifies_with_the_agents_text_cleaned(
        rig: ChatRig, desktop_tools: DesktopTools) -> None:
    permission = shell_permission("make deploy")
    permission["params"]["toolCall"]["title"] = "Shell\x1b[2J <b>now</b>\n" + "x" * 500
    rig.load([[{"stall": 0.5}, permission]])
    rig.send("deploy")
    transcript, notes = hide_transcript_behind(rig)
    pending(rig)
    note = rig.host.wait_for(lambda: notifications(rig), timeout=WAIT)[0]
    assert note["kind"] == "permission" and note["text"].startswith("asks: Shell[2J <b>now</b> xxx")
    assert len(note["text"]) == 200 and "\x1b" not in note["text"] and "\n" not in note["text"]
    assert transcript.name() == MARKED  # the prompt brought the chat to view; the mark stays until it is seen
    calls = rig.host.wait_for(desktop_tools.calls, timeout=WAIT)
    assert calls[0]["argv"][3].startswith("asks: Shell[2J &lt;b&gt;now&lt;/b&gt; xxx")
    assert rig.host.window.active_view() == notes  # the keys stayed where they were
    rig.host.user.run_command("qwen_chat_permission", {"index": 1})


def test_the_setting_off_keeps_the_desktop_quiet(rig: ChatRig, desktop_tools: DesktopTools) -> None:
    rig.load([[{"stall": 0.5}, shell_permission("ls")]], chat_desktop_notifications=False)
    rig.send("list")
    hide_transcript_behind(rig)
    pending(rig)
    assert rig.host.wait_for(lambda: notifications(rig), timeout=WAIT)[0]["kind"] == "permission"
    rig.host.wait_idle()
    assert desktop_tools.calls() == []
    rig.host.user.run_command("qwen_chat_permission", {"index": 1})


def test_usage_reaches_the_status_bar_and_the_transcript_and_hostile_counts_are_dropped(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["Hi."]}, usage_chunk(1500, 20, 1000), usage_chunk(-5, "lots"), usage_chunk(10**40, None),
               {"update": {"sessionUpdate": "usage_update", "used": 1520, "size": 1000}}]])
    rig.send("count")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_idle()
    transcript, composer = rig.open()
    assert "> Tokens: 1,500 in (1,000 cached) · 20 out · 100% context\n" in rig.transcript()
    folded = [transcript.substr(r) for r in rig.host.run_on_main(transcript.folded_regions)]
    assert any("this turn: 1,500 in (1,000 cached) · 20 out in 1 request(s)" in text for text in folded)
    rig.host.wait_for(lambda: "100% context · 1.5k in / 20 out" in composer.get_status("qwen_chat"), timeout=WAIT)
    assert rig.chat().core.state.usage.report()["contextUsed"] == 1520


@posix_tools
def test_the_real_runner_starts_each_platforms_tool_with_argv_and_environment(rig: ChatRig,
                                                                            desktop_tools: DesktopTools) -> None:
    rig.load()
    notify = sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"]
    commands = sys.modules[f"{PACKAGE}.core.notifications"]
    hostile = '" & (do shell script "touch pwned") & " $(calc) \'; rm -r x'
    for platform in ("osx", "windows"):
        notify.run_desktop_command(commands.desktop_command(platform, hostile))
    calls = rig.host.wait_for(lambda: len(desktop_tools.calls()) == 2 and desktop_tools.calls(), timeout=WAIT)
    by_tool = {call["tool"]: call for call in calls}
    assert by_tool["osascript"]["argv"][-2:] == ["Qwen Code", hostile]
    assert all(hostile not in arg for arg in by_tool["osascript"]["argv"][:-1])
    assert hostile not in " ".join(by_tool["powershell.exe"]["argv"])
    assert by_tool["powershell.exe"]["env"] == {"QWEN_COMPANION_NOTIFY_TITLE": "Qwen Code",
                                                "QWEN_COMPANION_NOTIFY_TEXT": hostile}
    rig.host.wait_for(lambda: not tool_processes(), timeout=WAIT)


def test_a_question_waiting_unseen_notifies_with_the_question(rig: ChatRig) -> None:
    question = {"request": "session/request_permission", "params": {
        "sessionId": "", "options": [{"optionId": "proceed_once", "kind": "allow_once", "name": "Submit"}],
        "toolCall": {"toolCallId": "q1", "status": "pending", "kind": "other", "title": "ask_user_question",
                     "rawInput": {"questions": [{"question": "Which colour?",
                                                 "options": [{"label": "Red"}, {"label": "Blue"}]}]}}}}
    rig.load([[{"stall": 0.5}, question]])
    rig.send("ask me")
    hide_transcript_behind(rig)
    pending(rig)
    note = rig.host.wait_for(lambda: notifications(rig), timeout=WAIT)[0]
    assert (note["kind"], note["text"]) == ("question", "asks: Which colour?")
    rig.host.user.run_command("qwen_chat_permission", {"index": 1})


@posix_tools
def test_a_burst_of_permissions_unseen_starts_one_desktop_tool_until_the_chat_is_seen(
        rig: ChatRig, desktop_tools: DesktopTools) -> None:
    burst = [{**shell_permission(f"ls {index}"), "wait": False} for index in range(30)]
    for index, action in enumerate(burst):
        action["params"]["toolCall"]["toolCallId"] = f"sh{index}"
    rig.load([[{"stall": 0.5}, *burst, {"stall": 30}]])
    rig.send("list")
    transcript, _ = hide_transcript_behind(rig)
    rig.host.wait_for(lambda: len(notifications(rig)) == 30, timeout=WAIT)
    notify = sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"]
    rig.host.wait_for(desktop_tools.calls, timeout=WAIT)
    rig.host.wait_for(lambda: not notify._DesktopQueue.running and not tool_processes(), timeout=WAIT)
    assert len(desktop_tools.calls()) == 1  # one per chat, not one per request
    rig.host.run_on_main(lambda: notify.notify(rig.host.window, rig.chat(), "permission", "asks: again"))
    rig.host.wait_idle()
    assert len(desktop_tools.calls()) == 1  # still unseen
    rig.host.user.focus(transcript)  # seen: the next one tells the desktop again
    rig.host.wait_for(lambda: transcript.name() == "Qwen Chat", timeout=WAIT)
    rig.host.user.focus(rig.editor.open("other.md", "other\n"))
    rig.host.run_on_main(lambda: notify.notify(rig.host.window, rig.chat(), "permission", "asks: again"))
    rig.host.wait_for(lambda: len(desktop_tools.calls()) == 2, timeout=WAIT)


def test_queued_desktop_notifications_run_one_at_a_time_on_one_thread(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load()
    notify = sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"]
    commands = sys.modules[f"{PACKAGE}.core.notifications"]
    started: list[str] = []
    ran: list[str] = []
    release = threading.Event()
    original_start = notify.in_background

    def counted_start(work: Any, name: str) -> Any:
        started.append(name)
        return original_start(work, name)

    def held_run(command: Any) -> None:
        release.wait(WAIT)  # the first tool runs until every other one is queued
        ran.append(command.argv[-1])

    monkeypatch.setattr(notify, "in_background", counted_start)
    monkeypatch.setattr(notify, "_run_one", held_run)
    for index in range(20):
        notify.run_desktop_command(commands.desktop_command("linux", f"note {index}"))
    assert started == ["desktop notification"]
    release.set()
    rig.host.wait_for(lambda: len(ran) == 20 and not notify._DesktopQueue.running, timeout=WAIT)
    assert ran == [f"note {index}" for index in range(20)]
    notify.run_desktop_command(commands.desktop_command("linux", "later"))  # drained: a new burst starts it again
    rig.host.wait_for(lambda: len(ran) == 21, timeout=WAIT)
    assert started == ["desktop notification"] * 2


@posix_tools
@pytest.mark.parametrize("order", ["view_first", "input_first"])
def test_the_command_palette_opening_over_a_chat_in_sight_is_no_lost_focus(
        rig: ChatRig, desktop_tools: DesktopTools, monkeypatch: pytest.MonkeyPatch, order: str) -> None:
    """The palette takes the keys from the view: whichever of the view's
    deactivation and the palette input's activation Sublime sends first, the
    chat on screen is not marked unseen and no desktop notification pops."""
    rig.load([[{"stall": 0.5}, {"chunks": ["Done."]}]])
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"], "LONG_TURN_SECONDS", 0.2)
    transcript, composer = rig.open()
    rig.send("long")
    if order == "view_first":
        rig.host.user.open_command_palette()  # as the simulator orders them
    else:  # the other order: the palette's input activated, then the view deactivated
        app = rig.host.app

        def palette_input_first() -> None:
            widget = app.make_view(app.active_window_id, element="command_palette:input", sheet=False, widget=True)
            app.emit("view", "on_activated", widget)
            app.emit("view", "on_deactivated", composer.id())

        rig.host.run_on_main(palette_input_first)
    assert rig.ended() == ["end_turn"]
    rig.host.wait_idle()
    assert notifications(rig) == [] and transcript.name() == "Qwen Chat"
    assert desktop_tools.calls() == []
    if order == "view_first":
        rig.host.user.close_command_palette()
