"""Chat History in the simulated editor with the BUILT package and the
scripted agent: every page of session/list newest first with its first
prompt, Enter resuming the picked session in a new chat tab (session/resume
where the agent offers it, else session/load), search, rename and delete from
the list (its answers too, through the package's index), and a paging
agent's endless list bounded."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.support.editor import PACKAGE, require_built
from tests.support.headless import HeadlessSublime
from tests.support.terminus import install_terminus, terminus_calls, terminus_records

QWEN_CAPABILITIES = {  # qwen 0.24.4's initialize answer
    "loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True},
    "sessionCapabilities": {"list": {}, "resume": {}}, "mcpCapabilities": {"http": True, "sse": True},
}


def open_panel(rig: ChatRig) -> Any:
    return rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]


def triggers(panel: Any) -> list[str]:
    return [str(getattr(item, "trigger", item)) for item in panel.items]


def three_sessions(rig: ChatRig) -> list[str]:
    """Sessions "alpha one", "beta two", "gamma three" (oldest first); the chat is on the last."""
    ids = []
    for count, text in enumerate(["alpha one", "beta two", "gamma three"], 1):
        if count > 1:
            rig.chat().core.sessions.new_session().result(WAIT)
        rig.send(text)
        rig.ended(count)
        ids.append(rig.chat().core.state.session_id)
    return ids


def prompts_to(rig: ChatRig, session_id: str) -> list[str]:
    return [m["params"]["prompt"][0]["text"] for m in rig.received("session/prompt")
            if m["params"]["sessionId"] == session_id]


def test_history_lists_every_page_newest_first_and_enter_resumes_in_a_new_tab(rig: ChatRig) -> None:
    rig.script_extras.update(capabilities=QWEN_CAPABILITIES, list_page=2, agent_name="qwen-code")
    rig.load()
    alpha, _, gamma = three_sessions(rig)
    first_chat = rig.chat()
    rig.host.user.run_command("qwen_chat_sessions")
    panel = open_panel(rig)
    assert triggers(panel) == ["gamma three", "beta two", "alpha one"]
    assert [item.details for item in panel.items] == ["gamma three", "beta two", "alpha one"]
    assert panel.items[0].annotation.startswith("open · ")  # the first chat has it
    assert [m["params"].get("cursor") for m in rig.received("session/list")] == [None, "2"]
    rig.host.user.choose_quick_panel(2)
    resumed = rig.host.wait_for(lambda: rig.chat() if rig.chat() is not first_chat else None, timeout=WAIT)
    rig.host.wait_for(lambda: resumed.core.state.session_id == alpha and resumed.core.state.agent_status == "ready",
                      timeout=WAIT)
    assert [m["params"]["sessionId"] for m in rig.received("session/resume")] == [alpha]
    assert rig.received("session/load") == []  # resumed: nothing replayed
    rig.host.wait_for(lambda: "> Resumed: the agent has this conversation's earlier messages"
                      in resumed.core.streamer.transcript.text(), timeout=WAIT)
    assert "alpha one" in resumed.transcript_view.name()
    assert rig.host.window.active_view() == resumed.composer_view  # the user's pick takes the keys
    rig.send("delta four")
    rig.ended(4)
    assert prompts_to(rig, alpha) == ["alpha one", "delta four"]
    assert first_chat.core.state.session_id == gamma and len(rig.received("session/new")) == 3


def test_picking_a_session_open_in_a_chat_brings_that_chat_forward(rig: ChatRig) -> None:
    rig.script_extras.update(capabilities=QWEN_CAPABILITIES)
    rig.load()
    _, _, gamma = three_sessions(rig)
    rig.host.user.run_command("qwen_chat_sessions")
    open_panel(rig)
    rig.host.user.choose_quick_panel(0)
    rig.host.wait_idle()
    assert len(rig.chats.of_window(rig.host.window)) == 1 and rig.received("session/resume") == []
    assert rig.chat().core.state.session_id == gamma


def test_an_agent_without_resume_loads_the_session_in_the_new_tab(rig: ChatRig) -> None:
    rig.load()  # the scripted agent's default: load and list, no resume
    alpha, _, _ = three_sessions(rig)
    rig.host.user.run_command("qwen_chat_sessions")
    open_panel(rig)
    rig.host.user.choose_quick_panel(2)
    rig.host.wait_for(lambda: rig.chat().core.state.session_id == alpha, timeout=WAIT)
    assert rig.received("session/resume") == []
    rig.host.wait_for(lambda: "alpha one" in rig.chat().core.streamer.transcript.text(), timeout=WAIT)


def test_search_matches_titles_and_first_prompts(rig: ChatRig) -> None:
    rig.load()
    three_sessions(rig)
    rig.host.user.run_command("qwen_chat_sessions", {"action": "search"})
    rig.host.wait_for(lambda: [p for p in rig.host.app.input_panels if not p.done], timeout=WAIT)
    rig.host.user.submit_input_panel("TWO bet")
    assert triggers(open_panel(rig)) == ["beta two"]


def test_search_in_conversations_matches_answers_through_an_index_in_the_cache_folder(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["The answer mentions ", "ZEBRA stripes."]}], [{"chunks": ["Nothing to see."]}]])
    before = sorted(rig.editor.workspace.rglob("*"))
    rig.send("first question")
    rig.ended()
    rig.chat().core.sessions.new_session().result(WAIT)
    rig.send("second question")
    rig.ended(2)
    index = Path(rig.host.app.cache_dir) / "QwenCompanion" / "conversations-index.jsonl"
    rig.host.wait_for(lambda: sorted(rig.editor.workspace.rglob("*")) != before
                      or (index.exists() and index.read_text(encoding="utf-8").count("\n") == 2), timeout=WAIT)
    assert sorted(rig.editor.workspace.rglob("*")) == before  # nothing of the index in the project
    rig.host.user.run_command("qwen_chat_sessions", {"action": "search"})
    rig.host.wait_for(lambda: [p for p in rig.host.app.input_panels if not p.done], timeout=WAIT)
    rig.host.user.submit_input_panel("zebra QUESTION")  # a word of the answer, one of the prompt
    assert triggers(open_panel(rig)) == ["first question"]


@pytest.mark.parametrize("open_in_a_chat", [False, True])
def test_rename_and_delete_from_the_list(rig: ChatRig, open_in_a_chat: bool) -> None:
    rig.script_extras.update(capabilities=QWEN_CAPABILITIES, agent_name="qwen-code")
    rig.load()
    alpha, beta, gamma = three_sessions(rig)
    target = gamma if open_in_a_chat else beta
    index = 0 if open_in_a_chat else 1
    rig.host.user.run_command("qwen_chat_sessions", {"action": "rename"})
    open_panel(rig)
    rig.host.user.choose_quick_panel(index)
    rig.host.wait_for(lambda: [p for p in rig.host.app.input_panels if not p.done], timeout=WAIT)
    rig.host.user.submit_input_panel("  Better name  ")
    rig.host.wait_for(lambda: rig.received("renameSession"), timeout=WAIT)
    assert [m["params"] for m in rig.received("renameSession")] == [{"sessionId": target, "title": "Better name"}]
    rig.host.answers.push("ok_cancel", False)  # asked, and the user says no: nothing deleted
    rig.host.user.run_command("qwen_chat_sessions", {"action": "delete"})
    open_panel(rig)
    rig.host.user.choose_quick_panel(index)
    rig.host.wait_for(lambda: [d for d in rig.host.dialogs if d.kind == "ok_cancel"], timeout=WAIT)
    rig.host.wait_idle()
    assert rig.received("deleteSession") == []
    rig.host.answers.push("ok_cancel", True)
    rig.host.user.run_command("qwen_chat_sessions", {"action": "delete"})
    open_panel(rig)
    rig.host.user.choose_quick_panel(index)
    rig.host.wait_for(lambda: rig.received("deleteSession"), timeout=WAIT)
    assert [m["params"] for m in rig.received("deleteSession")] == [{"sessionId": target}]
    if open_in_a_chat:  # its open chat is closed with it, once qwen has deleted it
        rig.host.wait_for(lambda: rig.chat() is None, timeout=WAIT)
    else:
        rig.host.wait_idle()
        assert rig.chat() is not None and rig.chat().core.state.session_id == gamma
    assert alpha not in [m["params"]["sessionId"] for m in rig.received("deleteSession")]


@pytest.mark.parametrize("announced", [True, False])
def test_another_agent_deletes_with_acp_session_delete_only_where_it_announces_it(rig: ChatRig, announced: bool) -> None:
    sessions: dict[str, Any] = {"list": {}, "resume": {}, **({"delete": {}} if announced else {})}
    rig.script_extras.update(capabilities={**QWEN_CAPABILITIES, "sessionCapabilities": sessions})  # not qwen by name
    rig.load()
    _, beta, gamma = three_sessions(rig)
    rig.host.answers.push("ok_cancel", True)
    rig.host.user.run_command("qwen_chat_sessions", {"action": "delete"})
    open_panel(rig)
    rig.host.user.choose_quick_panel(1)
    if announced:
        rig.host.wait_for(lambda: rig.received("session/delete"), timeout=WAIT)
        assert [m["params"] for m in rig.received("session/delete")] == [{"sessionId": beta}]
        rig.host.wait_for(lambda: "Qwen Code: deleted" in rig.host.status_messages, timeout=WAIT)
    else:
        rig.host.wait_idle()
        assert rig.received("session/delete") == []
    assert rig.received("deleteSession") == []  # qwen's own method never goes to another agent
    assert rig.chat() is not None and rig.chat().core.state.session_id == gamma


def test_a_paging_agents_endless_list_is_bounded(rig: ChatRig) -> None:
    rig.script_extras.update(listed_sessions={"count": 5000, "title_chars": 10}, list_page=100)
    rig.load()
    rig.send("hello")
    rig.ended()
    rig.host.user.run_command("qwen_chat_sessions")
    panel = open_panel(rig)
    cap = sys.modules[f"{PACKAGE}.core.chat.agent.agents"].MAX_LISTED_SESSIONS
    assert len(panel.items) == cap == 1000
    assert len(rig.received("session/list")) == cap // 100  # no page asked beyond the cap


def test_a_giant_list_of_giant_titles_is_bounded(rig: ChatRig) -> None:
    rig.script_extras.update(listed_sessions={"count": 5000, "title_chars": 20_000}, list_page=500)  # 10 MB pages
    rig.load()
    rig.send("hello")
    rig.ended()
    rig.host.user.run_command("qwen_chat_sessions")
    panel = open_panel(rig)
    cap = sys.modules[f"{PACKAGE}.core.chat.agent.agents"].MAX_LISTED_SESSIONS
    assert len(panel.items) == cap and len(rig.received("session/list")) == 2
    assert all(len(item.trigger) <= 200 and len(item.details) <= 200 and len(item.annotation) <= 60
               for item in panel.items)


def test_branch_from_here_says_why_an_agent_other_than_qwen_cannot(rig: ChatRig) -> None:
    rig.load()  # the scripted agent, not qwen
    rig.send("hello")
    rig.ended()
    rig.host.user.run_command("qwen_chat_branch", {"turn": 0})
    rig.host.wait_for(lambda: any("cannot branch: fake-acp 1.0 cannot branch a conversation (only qwen offers it)"
                                  in m for m in rig.host.status_messages), timeout=WAIT)
    rig.host.wait_idle()
    assert len(rig.chats.of_window(rig.host.window)) == 1 and rig.received("qwen/control/session/branch") == []


def test_branch_from_here_on_qwen_without_its_branch_point_says_why(rig: ChatRig) -> None:
    rig.script_extras.update(agent_name="qwen-code")  # qwen by name; its prompt answers carry no branch point
    rig.load()
    rig.send("hello")
    rig.ended()
    rig.host.user.run_command("qwen_chat_branch", {"turn": 0})
    rig.host.wait_for(lambda: any("cannot branch: qwen gave no branch point for prompt 1" in m
                                  for m in rig.host.status_messages), timeout=WAIT)
    rig.host.wait_idle()
    assert len(rig.chats.of_window(rig.host.window)) == 1


def test_the_tabs_show_the_title_the_agent_sets_bounded_to_one_line(rig: ChatRig) -> None:
    rig.load([[{"update": {"sessionUpdate": "session_info_update", "title": "Fix the\nparser " + "x" * 5000}},
               {"chunks": ["Done."]}],
              [{"notify": "qwen/notify/session/title-update",
                "params": {"v": 1, "sessionId": "", "title": "Renamed in the terminal", "titleSource": "manual"}},
               {"chunks": ["Ok."]}]])
    rig.send("hi")
    rig.ended()
    transcript, composer = rig.chat().transcript_view, rig.chat().composer_view
    title = "Fix the parser " + "x" * (199 - len("Fix the parser ")) + "…"
    rig.host.wait_for(lambda: transcript.name() == f"Qwen Chat: {title}", timeout=WAIT)
    assert composer.name().endswith(f"({title})") and rig.chat().title == title
    rig.send("again")
    rig.ended(2)
    rig.host.wait_for(lambda: transcript.name() == "Qwen Chat: Renamed in the terminal", timeout=WAIT)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[HeadlessSublime]:
    """The headless driver with the scripted agent posing as qwen 0.24.4 (resume, rename, delete)."""
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [], "state": str(tmp_path / "agent-state"), "log": str(tmp_path / "log"),
                                  "capabilities": QWEN_CAPABILITIES, "agent_name": "qwen-code"}))
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    (user / "QwenCompanion.sublime-settings").write_text(
        json.dumps({"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)]}))
    editor = HeadlessSublime(workspace, home)
    yield editor
    editor.kill()


def test_the_drivers_history_and_export_verbs(driver: HeadlessSublime, tmp_path: Path) -> None:
    first = driver.do("chat", text="alpha one")["chat"]
    driver.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e["chat"] == first)
    second = driver.do("chat_new")["chat"]
    driver.do("chat", text="beta two", chat=second)
    driver.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e["chat"] == second)
    listed = driver.do("sessions")["sessions"]
    assert [(s["title"], s["firstPrompt"], s["messages"]) for s in listed] == [
        ("beta two", "beta two", None), ("alpha one", "alpha one", None)]
    assert [s["title"] for s in driver.do("sessions", query="ALPHA")["sessions"]] == ["alpha one"]
    alpha = listed[1]["id"]
    driver.do("chat_close", chat=first)
    assert driver.do("session_rename", id=alpha, title="Renamed")["title"] == "Renamed"
    resumed = driver.do("session_resume", id=alpha)
    assert resumed["ok"] and resumed["chat"] not in (first, second)
    exported = driver.do("chat_export", chat=second, format="jsonl")
    assert [json.loads(line)["kind"] for line in exported["text"].splitlines()][:3] == ["chat", "user", "agent"]
    target = tmp_path / "beta.md"
    assert driver.do("chat_export", chat=second, path=str(target))["path"] == str(target)
    assert target.read_text(encoding="utf-8").startswith("# beta two\n\n## You\n\nbeta two")
    assert driver.do("session_delete", id=alpha)["ok"]
    assert [s["id"] for s in driver.do("sessions")["sessions"]] == [listed[0]["id"]]
    assert driver.do("chat_export", format="pdf")["ok"] is False
    refused = driver.do("chat_branch", chat=second, turn=0)  # qwen by name, without its branch point
    assert refused["ok"] is False and "no branch point for prompt 1" in refused["error"]


def test_continue_in_terminal_closes_the_chat_and_resumes_its_session_in_terminus(rig: ChatRig, tmp_path: Path) -> None:
    record = tmp_path / "terminus.jsonl"
    rig.load([[{"chunks": ["Hello."]}], [{"stall": 30}]])
    install_terminus(rig.host, record)
    rig.send("first prompt")
    rig.ended()
    chat = rig.chat()
    session = chat.core.state.session_id
    rig.send("a long turn")
    rig.host.wait_for(lambda: chat.core.state.agent_status == "busy", timeout=WAIT)
    rig.host.user.run_command("qwen_chat_continue_in_terminal")
    rig.host.wait_idle()
    assert terminus_calls(record) == [] and rig.chat() is chat  # refused while its turn runs: no second writer
    assert any("a turn is running" in message for message in rig.host.status_messages)
    rig.host.run_on_main(lambda: chat.core.cancel())
    rig.ended(2)
    rig.host.user.run_command("qwen_chat_continue_in_terminal")
    [opened] = rig.host.wait_for(lambda: terminus_records(record), timeout=WAIT)
    # the id is the option's value, one word: never an option of its own
    assert opened["run"]["cmd"][-1] == f"--resume={session}" and opened["run"]["cwd"] == str(rig.editor.workspace)
    assert opened["env"]["QWEN_CODE_IDE_SERVER_PORT"]  # wired to this window, as Open in Terminal is
    assert rig.chat() is None  # the chat let go of the session first


def test_history_from_a_window_without_a_chat_leaves_only_the_resumed_one(rig: ChatRig) -> None:
    rig.script_extras.update(capabilities=QWEN_CAPABILITIES)
    rig.load()
    alpha, _, _ = three_sessions(rig)
    rig.host.user.run_command("qwen_chat_close")
    rig.host.wait_idle()
    assert rig.chats.of_window(rig.host.window) == []
    rig.host.user.run_command("qwen_chat_sessions")  # a chat is made to ask the agent, its tabs not opened
    open_panel(rig)
    rig.host.user.choose_quick_panel(2)
    rig.host.wait_for(lambda: rig.chat() is not None and rig.chat().core.state.session_id == alpha, timeout=WAIT)
    rig.host.wait_idle()
    [only] = rig.chats.of_window(rig.host.window)
    assert only.core.state.session_id == alpha and only.transcript_view is not None


def test_an_agent_that_can_list_but_not_resume_says_so_and_opens_nothing(rig: ChatRig) -> None:
    rig.script_extras.update(capabilities={"sessionCapabilities": {"list": {}}})
    rig.load()
    three_sessions(rig)
    rig.host.user.run_command("qwen_chat_sessions")
    panel = open_panel(rig)
    assert panel.placeholder == "Earlier chats (this agent cannot resume or load them)"
    rig.host.user.choose_quick_panel(2)
    rig.host.wait_idle()
    assert len(rig.chats.of_window(rig.host.window)) == 1
    assert "Qwen Code: this agent cannot resume or load its earlier sessions" in rig.host.status_messages
