"""A chat with an ACP agent that is not qwen (the chat_agents and chat_agent
settings), end to end with the BUILT package: the scripted agent
(tests/rig/fake_acp_agent.py) under another name, with another agentInfo
and only ACP's baseline capabilities, gets only standard ACP methods and
only what its capabilities allow; its name is on the chat's tabs and status."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.support.editor import PACKAGE, require_built
from tests.support.headless import HeadlessSublime

# What a client may send an agent that offers nothing beyond ACP's baseline.
BASELINE_METHODS = {"initialize", "authenticate", "session/new", "session/prompt", "session/cancel",
                    "session/set_mode", "session/set_config_option"}
BASELINE_BLOCKS = {"text", "resource_link"}
PLAIN_AGENT = {"agent_name": "plain-agent", "capabilities": {}}
OPTIONS = [{"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
           {"optionId": "cancel", "kind": "reject_once", "name": "Reject"}]


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def assert_only_baseline_acp(log: Path) -> None:
    messages = logged(log)
    methods = {m["method"] for m in messages if "method" in m}
    assert methods <= BASELINE_METHODS, methods - BASELINE_METHODS
    for message in messages:
        params = message.get("params") or {}
        assert "_meta" not in params, message
        if message.get("method") in ("session/new", "session/load"):
            assert params["mcpServers"] == []  # the IDE tools are served over HTTP, which it does not take
        if message.get("method") == "session/prompt":
            assert {block["type"] for block in params["prompt"]} <= BASELINE_BLOCKS


def test_another_agent_by_name_streams_asks_permission_and_gets_only_standard_acp(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    log = tmp_path / "agent-log.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**PLAIN_AGENT, "log": str(log), "turns": [[
        {"chunks": ["Hello ", "from ", "another agent."], "delay": 0.01},
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "make", "kind": "execute",
                    "status": "pending"}},
        {"request": "session/request_permission", "params": {"sessionId": "", "options": OPTIONS, "toolCall": {
            "toolCallId": "t1", "kind": "execute", "title": "make", "rawInput": {"command": "make"}}}},
        {"chunks": [" Done."]},
    ]]}))
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    (user / "QwenCompanion.sublime-settings").write_text(json.dumps({
        "qwen_command": "no-qwen-here",  # the chat must not need qwen
        "chat_agents": {"plain": {"command": [sys.executable, str(FAKE_AGENT), str(script)]}},
    }))
    editor = HeadlessSublime(workspace, home)
    try:
        made = editor.do("chat_new", agent="plain")
        assert made["ok"]
        sent = editor.do("chat", text="build it", chat=made["chat"])
        assert sent["ok"] and sent["agent"] == "plain"
        asked = editor.wait_event(lambda e: e.get("event") == "permission_requested")
        assert asked["toolCall"]["title"] == "make"
        assert editor.do("permission", option="proceed_once")["ok"]
        ended = editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        assert ended["stopReason"] == "end_turn"
        shown = editor.do("chat_text", chat=made["chat"])
        assert "Hello from another agent." in shown["text"] and " Done." in shown["text"]
        assert shown["agent_name"] == "plain"
        assert {"answer_to": "session/request_permission",
                "answer": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}} in logged(log)
        assert editor.quit()["ok"]
    finally:
        editor.kill()
    assert_only_baseline_acp(log)


def test_chat_agent_names_the_default_and_its_name_is_on_the_tabs_and_status(rig: ChatRig) -> None:
    rig.script_extras = PLAIN_AGENT
    rig.load()
    script = str(rig.tmp / "script.json")
    rig.editor.settings({"qwen_command": "no-qwen-here", "chat_agent": "plain",
                         "chat_agents": {"plain": {"command": [sys.executable, str(FAKE_AGENT), script]}}})
    rig.host.wait_idle()
    code = rig.editor.open("a.py", "x = 1\n")
    rig.host.window.focus_view(code)
    code.sel().clear()
    code.sel().add(rig.editor.sublime.Region(0, 5))  # a selection goes as an embedded resource to qwen
    transcript, composer = rig.open()
    assert (transcript.name(), composer.name()) == ("Chat · plain", "Chat · plain: message")
    rig.host.window.focus_view(code)
    rig.send("first")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_for(lambda: (code.get_status("qwen_chat") or "").startswith("Chat · plain"), timeout=WAIT)
    [prompt] = rig.received("session/prompt")
    assert {"type": "text", "text": f"{(rig.editor.workspace / 'a.py').as_uri()}#L1-L1:\nx = 1"} in \
        prompt["params"]["prompt"]
    # A restart starts a new session: the agent cannot load one, and is not asked to.
    session = rig.chat().core.state.session_id
    rig.chat().core.sessions.restart().result(WAIT)
    assert len(rig.received("session/new")) == 2
    assert "could not be reloaded" not in rig.transcript()
    # Nor when something asks for an earlier session by its id.
    rig.chat().core.sessions.load_session(session).result(WAIT)
    rig.host.wait_for(lambda: "cannot load earlier sessions" in rig.transcript(), timeout=WAIT)
    # Chat History says it cannot list them, without asking.
    rig.host.user.run_command("qwen_chat_sessions")
    rig.host.wait_idle()
    rig.send("second")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    assert_only_baseline_acp(rig.log)


def test_a_chat_agents_entry_without_a_command_is_left_out(rig: ChatRig) -> None:
    rig.load(chat_agents={"broken": {"env": {}}, "qwen": {}}, chat_agent="broken")
    prefs = sys.modules[f"{PACKAGE}.plugin.settings"].userprefs()
    assert prefs.chat_agents == {"qwen": {}} and prefs.chat_agent == "qwen"
    rig.send("hi")  # the chat runs qwen (here the scripted agent as qwen_command)
    assert rig.ended() == ["end_turn"]
    assert rig.chat().agent == "qwen" and rig.chat().transcript_view.name() == "Qwen Chat"


def test_an_agent_that_is_not_qwen_is_neither_signed_in_nor_told_qwens_way(rig: ChatRig) -> None:
    rig.script_extras = {**PLAIN_AGENT, "auth_required": True}
    rig.load()
    script = str(rig.tmp / "script.json")
    rig.editor.settings({"chat_agent": "plain",
                         "chat_agents": {"plain": {"command": [sys.executable, str(FAKE_AGENT), script]}}})
    rig.host.wait_idle()
    rig.send("hi")
    rig.ended()
    [message] = [d["message"] for e, d in rig.events if e == "chat_error"]  # said once, however often it was tried
    assert message.startswith("plain is not signed in") and "Sign in to plain in a terminal" in message
    assert "OPENAI_API_KEY" not in message and "qwen" not in message
    assert rig.received("session/new") and not rig.received("authenticate")  # its methods are its user's to pick
    # Sent again (after signing in elsewhere): the agent is asked for a session again, never sent a prompt without one.
    asked = len(rig.received("session/new"))
    rig.send("again")
    rig.ended(2)
    assert len(rig.received("session/new")) > asked and not rig.received("session/prompt")
