"""Several chats in one window (the headless driver's chat_new, chats,
chat_select, chat_close and `chat` arguments) on the scripted ACP agent:
one agent process for all of them, each chat's answers, requests and turn
changes its own, a running turn never holding up another chat, and no
agent left once the window's last chat is closed."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.support.editor import PACKAGE, open_editor, require_built
from tests.support.headless import HeadlessSublime
from tests.support.processes import alive

FAKE_AGENT = Path(__file__).resolve().parents[1] / "rig" / "fake_acp_agent.py"
OPTIONS = [{"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
           {"optionId": "cancel", "kind": "reject_once", "name": "Reject"}]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    editors: list[HeadlessSublime] = []

    def start(turns: list[list[dict[str, Any]]]) -> HeadlessSublime:
        require_built()
        home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
        workspace.mkdir()
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"turns": turns, "log": str(tmp_path / "agent-log.jsonl")}))
        user = home / ".config" / "sublime-text" / "Packages" / "User"
        user.mkdir(parents=True)
        (user / "QwenCompanion.sublime-settings").write_text(
            json.dumps({"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)]}))
        editor = HeadlessSublime(workspace, home)
        editors.append(editor)
        return editor

    yield start
    for editor in editors:
        editor.kill()


def agent_starts(tmp_path: Path) -> int:
    """How many scripted agents were started: each answers one initialize
    (read from the agent's log; any platform)."""
    log = tmp_path / "agent-log.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(json.loads(line).get("method") == "initialize" for line in lines)


def wait_until(condition: Callable[[], Any], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def ended(editor: HeadlessSublime, chat: int, count: int = 1) -> list[str]:
    def so_far() -> list[str]:
        return [e["stopReason"] for e in editor.events if e.get("event") == "chat_turn_ended" and e["chat"] == chat]

    editor.wait_event(lambda e: len(so_far()) >= count)
    return so_far()


def test_chats_are_tabs_on_one_agent_switched_listed_and_closed(start: Any, tmp_path: Path) -> None:
    editor = start([[{"echo": "answer to "}], [{"echo": "answer to "}]])
    first = editor.do("chat", text="about apples")["chat"]
    assert ended(editor, first) == ["end_turn"]
    second = editor.do("chat_new")["chat"]
    assert second != first
    listed = editor.do("chats")["chats"]
    assert [(c["chat"], c["active"]) for c in listed] == [(first, False), (second, True)]
    assert listed[0]["title"] == "about apples" and listed[0]["state"] == "ready"
    editor.do("chat", text="about pears")  # the active chat: the new one
    assert ended(editor, second) == ["end_turn"]
    one, two = editor.do("chat_text", chat=first), editor.do("chat_text")
    assert two["chat"] == second
    assert "answer to about apples" in one["text"] and "pears" not in one["text"]
    assert "answer to about pears" in two["text"] and "apples" not in two["text"]
    assert one["pid"] == two["pid"] and agent_starts(tmp_path) == 1  # one process serves both
    assert one["session"] != two["session"]

    assert editor.do("chat_select", chat=first)["active"] is True
    assert [c["active"] for c in editor.do("chats")["chats"]] == [True, False]
    assert editor.do("chat_close", chat=first)["active"] == second
    assert alive(two["pid"])  # the other chat still holds the agent
    assert editor.do("chat_close", chat=second)["active"] is None
    assert editor.do("chats")["chats"] == []
    wait_until(lambda: not alive(two["pid"]))
    assert editor.quit()["ok"]


def test_a_running_turn_never_holds_up_another_chat(start: Any) -> None:
    editor = start([[{"chunks": ["working"]}, {"stall": 30}], [{"chunks": ["quick answer"]}]])
    slow = editor.do("chat", text="slow one")["chat"]
    wait_until(lambda: editor.do("chat_text", chat=slow)["agent"] == "busy")
    quick = editor.do("chat_new")["chat"]
    editor.do("chat", chat=quick, text="quick one")
    assert ended(editor, quick) == ["end_turn"]
    assert editor.do("chat_text", chat=slow)["agent"] == "busy"
    assert "quick answer" in editor.do("chat_text", chat=quick)["text"]
    editor.do("chat_cancel", chat=slow)
    assert ended(editor, slow) == ["cancelled"]
    assert editor.quit()["ok"]


def test_a_chats_permission_request_and_turn_changes_stay_in_that_chat(start: Any, tmp_path: Path) -> None:
    editor = start([
        [{"chunks": ["nothing to do"]}],
        [{"deaf": 1.5},  # time for the user to switch to the other chat
         {"request": "session/request_permission", "params": {"sessionId": "", "options": OPTIONS, "toolCall": {
             "toolCallId": "t1", "kind": "execute", "title": "npm test", "rawInput": {"command": "npm test"}}}},
         {"deaf": 1.5},  # and to switch back before the turn writes and ends
         {"request": "fs/write_text_file", "params": {
             "sessionId": "", "path": str(tmp_path / "workspace" / "made.txt"), "content": "made\n"}}],
    ])
    quiet = editor.do("chat", text="hello")["chat"]
    ended(editor, quiet)
    asking = editor.do("chat_new")["chat"]
    editor.do("chat", chat=asking, text="test it")
    editor.do("chat_select", chat=quiet)  # the user looks at the other chat while it asks
    asked = editor.wait_event(lambda e: e.get("event") == "permission_requested")
    assert asked["chat"] == asking
    assert [c["active"] for c in editor.do("chats")["chats"]] == [True, False]  # the user's tab stays
    assert "npm test" not in editor.do("chat_text", chat=quiet)["text"]
    assert "npm test" in editor.do("chat_text", chat=asking)["text"]
    editor.do("chat_select", chat=asking)
    editor.do("permission", option="proceed_once")
    editor.do("chat_select", chat=quiet)
    assert ended(editor, asking) == ["end_turn"]
    changes = editor.wait_event(lambda e: e.get("event") == "turn_changes")
    assert changes["chat"] == asking
    assert editor.do("turn_changes", chat=quiet)["files"] == []
    assert [f["state"] for f in editor.do("turn_changes", chat=asking)["files"]] == ["changed"]
    assert [f["state"] for f in editor.do("turn_undo", chat=asking)["files"]] == ["reverted"]
    assert not (tmp_path / "workspace" / "made.txt").exists()
    assert editor.quit()["ok"]


# --- in the simulated editor itself ------------------------------------------------


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ChatRig(editor, tmp_path)


def new_chat_by_key(rig: ChatRig) -> Any:
    before = rig.chat()
    rig.host.user.press_key("ctrl+k, o")
    return rig.host.wait_for(lambda: (chat := rig.chat()) is not before and chat.core.pid and chat, timeout=WAIT)


def test_closing_the_window_ends_the_one_agent_of_all_its_chats(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}]])
    rig.send("go")
    pid = rig.host.wait_for(lambda: rig.chat().core.pid, timeout=WAIT)
    second = new_chat_by_key(rig)
    assert second.core.pid == pid and len(rig.chats.of_window(rig.host.window)) == 2
    rig.host.user.close_window(rig.host.window)
    rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert rig.chats.all() == []


def test_a_chats_tab_activated_makes_it_the_active_chat_with_its_composer(rig: ChatRig) -> None:
    rig.load()
    first_transcript, first_composer = rig.open()
    first = rig.chat()
    second = new_chat_by_key(rig)
    window = rig.host.window
    assert window.active_view() == second.composer_view
    assert second.transcript_view.name() == "Qwen Chat 2" and first_transcript.name() == "Qwen Chat"
    rig.host.user.focus(first_transcript)  # a click on the first chat's tab
    rig.host.wait_idle()
    assert rig.chat() is first
    assert window.active_view() == first_transcript
    assert window.active_view_in_group(window.get_view_index(first_composer)[0]) == first_composer
    rig.host.user.type(second.composer_view, "to the second")  # typing in a composer: its chat
    rig.host.user.press_key("enter")
    rig.ended()
    assert rig.chat() is second and second.core.history == ["to the second"] and first.core.history == []


@pytest.mark.parametrize("agent_name", ["qwen-code", "another-agent"])
def test_rename_and_delete_reach_the_agent_only_when_it_is_qwen(rig: ChatRig, agent_name: str) -> None:
    rig.script_extras = {"agent_name": agent_name}
    rig.load()
    rig.send("hello")
    rig.ended()
    chat = rig.chat()
    session = chat.core.state.session_id
    pid = chat.core.pid
    rig.host.user.run_command("qwen_chat_rename", {"title": "Apples"})
    rig.host.wait_idle()
    assert chat.transcript_view.name() == "Qwen Chat: Apples" and chat.title == "Apples"
    rig.host.user.run_command("qwen_chat_delete", {"confirmed": True})
    rig.host.wait_for(lambda: rig.chats.of_window(rig.host.window) == [], timeout=WAIT)
    rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)  # the window's last chat took its agent along
    sent = [(m["method"], m["params"]) for m in map(json.loads, rig.log.read_text().splitlines())
            if m.get("method") in ("renameSession", "deleteSession")]
    if agent_name == "qwen-code":
        assert sent == [("renameSession", {"sessionId": session, "title": "Apples"}),
                        ("deleteSession", {"sessionId": session})]
        remembered = Path(rig.host.sublime.cache_path()) / "QwenCompanion" / "chat-sessions.json"
        rig.host.wait_for(lambda: session not in remembered.read_text(), timeout=WAIT)  # not reloaded next time
    else:
        assert sent == []


def test_deleting_a_second_chat_keeps_the_first_chats_conversation_remembered(rig: ChatRig) -> None:
    """Defect guarded: Delete Chat of a second chat made the window forget the
    conversation it reloads, the first chat's."""
    rig.script_extras = {"agent_name": "qwen-code"}
    rig.load()
    rig.send("hello")
    rig.ended()
    kept = rig.chat().core.state.session_id
    remembered = Path(rig.host.sublime.cache_path()) / "QwenCompanion" / "chat-sessions.json"
    assert kept in remembered.read_text()
    second = new_chat_by_key(rig)
    deleted = rig.host.wait_for(lambda: second.core.state.session_id, timeout=WAIT)
    assert deleted != kept
    rig.host.user.run_command("qwen_chat_delete", {"chat": second.chat_id, "confirmed": True})
    rig.host.wait_for(lambda: second not in rig.chats.of_window(rig.host.window), timeout=WAIT)
    # The store is changed on a thread of its own, started before the chat closed.
    rig.host.wait_for(lambda: not [t for t in threading.enumerate() if t.name == "QwenCompanion forget session"],
                      timeout=WAIT)
    assert [m["params"] for m in rig.received("deleteSession")] == [{"sessionId": deleted}]
    assert kept in remembered.read_text()


def test_chat_ids_are_unique_across_windows_and_each_window_has_its_own_agent(rig: ChatRig) -> None:
    rig.load()
    rig.send("in the first window")
    rig.ended()
    first = rig.chat()
    other = rig.host.user.new_window()
    rig.host.user.set_folders([rig.editor.workspace], window=other)
    rig.host.run_on_main(lambda: other.run_command("qwen_chat"))
    theirs = rig.host.wait_for(lambda: rig.chats.get(other), timeout=WAIT)
    theirs.core.start().result(WAIT)
    assert theirs.chat_id != first.chat_id and theirs.window_id != first.window_id
    assert theirs.core.pid != first.core.pid  # one agent per window
    pid = theirs.core.pid
    rig.host.user.close_window(other)
    rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert alive(first.core.pid)


def test_a_reload_brings_every_chat_back_with_its_own_conversation(rig: ChatRig) -> None:
    rig.load([[{"echo": "one: "}], [{"echo": "two: "}]])
    rig.send("apples")
    rig.ended()
    first_session = rig.chat().core.state.session_id
    second = new_chat_by_key(rig)
    rig.send("pears")
    rig.ended(2)
    second_session = second.core.state.session_id
    rig.host.reload_package(PACKAGE)
    rig.watch()
    window = rig.host.window
    rig.host.wait_for(lambda: [c.core.state.session_id for c in rig.chats.of_window(window)]
                      == [first_session, second_session], timeout=WAIT)
    first_again, second_again = rig.chats.of_window(window)
    rig.editor.wait_for_package_threads("start", "preload")
    assert not first_again.core.pid and not second_again.core.pid  # adopting the tabs starts no agent
    for chat in (first_again, second_again):  # as the user's next prompt in each does
        chat.core.start().result(WAIT)
    assert rig.chat() is first_again and first_again.core.pid == second_again.core.pid
    rig.host.wait_for(lambda: "one: apples" in rig.editor.text(first_again.transcript_view)
                      and "two: pears" in rig.editor.text(second_again.transcript_view), timeout=WAIT)
    texts = [rig.editor.text(c.transcript_view) for c in (first_again, second_again)]
    assert "pears" not in texts[0] and "apples" not in texts[1]
    names = [view.name() for view in window.views()]
    assert sorted(names) == ["Qwen Chat", "Qwen Chat 2", "Qwen Chat: message", "Qwen Chat: message 2"]
