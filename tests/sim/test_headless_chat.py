"""The headless driver's chat verbs and events, with the scripted ACP agent
as `qwen_command`; quitting and starting the driver again with the same HOME
is a Sublime restart, and the chat comes back with its session."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.editor import require_built
from tests.support.headless import HeadlessSublime
from tests.support.processes import alive

FAKE_AGENT = Path(__file__).resolve().parents[1] / "rig" / "fake_acp_agent.py"
# qwen 0.24.4's report of a model request's tokens
USAGE = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""},
         "_meta": {"usage": {"inputTokens": 300, "outputTokens": 7, "totalTokens": 307, "cachedReadTokens": 100}}}


def use_scripted_agent(home: Path, script: Path) -> None:
    """The user's settings run the scripted ACP agent with `script` as the chat's agent."""
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    (user / "QwenCompanion.sublime-settings").write_text(
        json.dumps({"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)]}))


def test_chat_verbs_events_and_a_restart_that_finds_the_session(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({
        "turns": [[{"chunks": ["first answer"]}, {"update": USAGE}], [{"chunks": ["partial"]}, {"stall": 30}],
                  [{"chunks": ["after restart"]}]],
        "state": str(tmp_path / "agent-state"),
    }))
    use_scripted_agent(home, script)

    editor = HeadlessSublime(workspace, home)
    try:
        assert editor.do("chat", text="hello")["ok"]
        ended = editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        assert ended["stopReason"] == "end_turn" and ended["window"] == editor.ready["window"]
        shown = editor.do("chat_text")
        assert "## You\n\nhello" in shown["text"] and "first answer" in shown["text"]
        session, pid = shown["session"], shown["pid"]
        assert session and pid and alive(pid)
        assert (shown["model"], shown["model_id"]) == ("fake-model", "$runtime|openai|fake-model(openai)")
        assert shown["usage"] == {"inputTokens": 300, "outputTokens": 7, "cachedTokens": 100, "contextUsed": 307,
                                  "contextSize": 1000,
                                  "turn": {"inputTokens": 300, "outputTokens": 7, "cachedTokens": 100, "requests": 1}}

        editor.do("chat", text="long one")
        editor.do("chat_cancel")
        cancelled = editor.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e["stopReason"] == "cancelled")
        assert cancelled["window"] == editor.ready["window"]
        assert editor.quit()["ok"]
    finally:
        editor.kill()
    assert not alive(pid)
    assert (home / ".cache" / "sublime-text" / "Cache" / "QwenCompanion" / "chat-sessions.json").exists()

    again = HeadlessSublime(workspace, home)
    try:
        assert again.do("chat", text="and now?")["ok"]
        again.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        shown = again.do("chat_text")
        assert shown["session"] == session
        text = shown["text"]
        assert text.index("hello") < text.index("first answer") < text.index("and now?") < text.index("after restart")
        assert again.quit()["ok"]
    finally:
        again.kill()


def test_permission_and_tool_call_events_and_the_permission_verb(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    script = tmp_path / "script.json"
    log = tmp_path / "agent-log.jsonl"
    options = [{"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
               {"optionId": "cancel", "kind": "reject_once", "name": "Reject"}]
    script.write_text(json.dumps({"log": str(log), "turns": [[
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "npm test", "kind": "execute", "status": "pending"}},
        {"request": "session/request_permission", "params": {"sessionId": "", "options": options, "toolCall": {
            "toolCallId": "t1", "kind": "execute", "title": "npm test", "rawInput": {"command": "npm test"}}}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}},
    ]]}))
    use_scripted_agent(home, script)

    editor = HeadlessSublime(workspace, home)
    try:
        editor.do("chat", text="test it")
        asked = editor.wait_event(lambda e: e.get("event") == "permission_requested")
        assert asked["toolCall"]["title"] == "npm test" and asked["toolCall"]["kind"] == "execute"
        assert asked["options"] == options
        assert editor.do("permission", option="proceed_once")["ok"]
        done = editor.wait_event(lambda e: e.get("event") == "tool_call" and e["status"] == "completed")
        assert done["toolCallId"] == "t1" and done["title"] == "npm test"
        editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        answers = [json.loads(line) for line in log.read_text().splitlines()]
        assert {"answer_to": "session/request_permission",
                "answer": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}} in answers
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def test_turn_change_verbs_and_event(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    opened, closed = workspace / "win.txt", workspace / "new.txt"
    opened.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    script = tmp_path / "script.json"
    write = [{"request": "fs/read_text_file", "params": {"sessionId": "", "path": str(opened)}},
             {"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(opened), "content": "one\nTWO\n"}},
             {"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(closed), "content": "made\n"}}]
    script.write_text(json.dumps({"turns": [write]}))
    use_scripted_agent(home, script)

    editor = HeadlessSublime(workspace, home)
    try:
        window = editor.ready["window"]
        moded = editor.do("chat_mode", mode="yolo")  # the window's chat, made on first use
        assert moded["mode"] == "yolo"
        chat = moded["chat"]
        assert editor.do("open", path=str(opened))["ok"]
        assert editor.do("chat", text="change them")["ok"]
        event = editor.wait_event(lambda e: e.get("event") == "turn_changes")
        files = [{"path": str(opened), "added": 1, "removed": 1, "state": "changed"},
                 {"path": str(closed), "added": 1, "removed": 0, "state": "changed"}]
        assert event == {"event": "turn_changes", "window": window, "chat": chat, "turn": 1, "files": files}
        assert editor.do("turn_changes")["files"] == files
        assert editor.do("reference", path=str(opened))["reference"] == "one\ntwo\n"
        kept = editor.do("turn_keep", path=str(closed))
        assert [f["state"] for f in kept["files"]] == ["changed", "kept"]
        undone = editor.do("turn_undo", chat=chat, turn=1)
        assert [f["state"] for f in undone["files"]] == ["reverted", "reverted"]
        assert opened.read_bytes() == b"\xef\xbb\xbfone\r\ntwo\r\n" and not closed.exists()
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def test_mention_and_paste_image_verbs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    (workspace / "shelf.py").write_text("def shelve(book):\n    return [book]\n\n\nOTHER = 1\n")
    log = tmp_path / "agent-log.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"chunks": ["seen"]}]], "state": str(tmp_path / "agent-state"),
                                  "log": str(log)}))
    use_scripted_agent(home, script)
    tools = tmp_path / "bin"  # the X11 clipboard tool, holding a PNG
    tools.mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"\x02" * 16
    (tools / "xclip").write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.buffer.write({png!r})\n")
    (tools / "xclip").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)

    editor = HeadlessSublime(workspace, home)
    try:
        symbol = editor.do("mention", kind="symbol", name="shelve")
        assert symbol["ok"] and symbol["token"] == "symbol:shelve" and symbol["chat"] == editor.ready["window"]
        assert editor.wait_event(lambda e: e.get("event") == "mention_added")["token"] == "symbol:shelve"
        assert editor.do("mention", kind="terminal")["error"].startswith("this window has no running qwen terminal")
        image = editor.do("paste_image")
        assert image["token"] == "image-1" and image["summary"] == "image/png, 0 KiB"
        editor.do("chat", text="look")
        editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        prompts = [m for m in map(json.loads, log.read_text().splitlines()) if m.get("method") == "session/prompt"]
        blocks = prompts[0]["params"]["prompt"]
        assert {"type": "image", "mimeType": "image/png", "data": base64.b64encode(png).decode()} in blocks
        assert any("return [book]" in b["resource"]["text"] for b in blocks if b["type"] == "resource")
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def turns_ended(editor: HeadlessSublime, count: int) -> None:
    seen: list[dict[str, Any]] = []

    def counted(event: dict[str, Any]) -> bool:
        if event.get("event") == "chat_turn_ended":
            seen.append(event)
        return len(seen) >= count

    editor.wait_event(counted)


def test_chat_rewind_verb_rewinds_and_edits_and_resends(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    made = workspace / "made.txt"
    script = tmp_path / "script.json"
    write = {"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(made), "content": "made\n"}}
    script.write_text(json.dumps({"agent_name": "qwen-code", "state": str(tmp_path / "agent-state"),
                                  "turns": [[{"chunks": ["first"]}], [write, {"chunks": ["second"]}],
                                            [{"chunks": ["edited"]}]]}))
    use_scripted_agent(home, script)

    editor = HeadlessSublime(workspace, home)
    try:
        for count, text in enumerate(["one", "two"], start=1):
            chat = editor.do("chat", text=text)["chat"]
            turns_ended(editor, count)
        assert made.exists()
        refused = editor.do("chat_rewind", chat=chat, turn=5)
        assert not refused["ok"] and "there is no prompt 5" in refused["error"]
        rewound = editor.do("chat_rewind", chat=chat, turn=1, text="two, edited")
        assert rewound["ok"] and rewound["filesRestored"] == [str(made)] and not made.exists()
        turns_ended(editor, 3)
        text = editor.do("chat_text")["text"]
        assert "two, edited" in text and "edited" in text and "second" not in text
        assert editor.do("chat_rewind", turn=0)["filesRestored"] == []
        assert "first" not in editor.do("chat_text")["text"]
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def test_elicitation_event_and_verb(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    script = tmp_path / "script.json"
    log = tmp_path / "agent-log.jsonl"
    schema = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 2}, "count": {"type": "integer", "maximum": 9},
        "color": {"type": "string", "enum": ["red", "green"]}}}
    ask = {"request": "elicitation/create", "params": {"sessionId": "", "mode": "form", "message": "Who?",
                                                         "requestedSchema": schema}}
    script.write_text(json.dumps({"log": str(log), "turns": [[ask], [ask]]}))
    use_scripted_agent(home, script)

    editor = HeadlessSublime(workspace, home)
    try:
        editor.do("chat", text="ask me")
        asked = editor.wait_event(lambda e: e.get("event") == "elicitation_requested")
        assert asked["mode"] == "form" and asked["message"] == "Who?"
        assert [(f["name"], f["type"], f["required"]) for f in asked["fields"]] == [
            ("name", "string", True), ("count", "integer", False), ("color", "choice", False)]
        assert asked["fields"][2]["choices"] == ["red", "green"]
        refused = editor.do("elicitation", values={"name": "A", "count": 3})
        assert refused["ok"] and "name: shorter than 2" in refused["error"]
        assert editor.do("elicitation", values={"name": "Ada", "count": 3, "color": "green"}) == {
            "ok": True, "do": "elicitation"}
        first_end = editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        editor.do("chat", text="again")
        editor.wait_event(lambda e: e.get("event") == "elicitation_requested" and e is not asked)
        assert editor.do("elicitation", cancel=True)["ok"]
        editor.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e is not first_end)
        answers = [m["answer"] for m in map(json.loads, log.read_text().splitlines())
                   if m.get("answer_to") == "elicitation/create"]
        assert answers == [{"action": "accept", "content": {"name": "Ada", "count": 3, "color": "green"}},
                           {"action": "cancel"}]
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def test_plan_and_session_option_verbs(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    script = tmp_path / "script.json"
    steps = [{"content": f"step {i}", "priority": "low", "status": "completed" if i < 4 else "in_progress" if i == 4 else "pending"}
             for i in range(12)]
    script.write_text(json.dumps({
        "turns": [[{"update": {"sessionUpdate": "plan", "entries": steps}}]],
        "more_options": [{"id": "web", "name": "Web search", "type": "boolean", "currentValue": False}],
    }))
    use_scripted_agent(home, script)
    editor = HeadlessSublime(workspace, home)
    try:
        options = editor.do("session_options")
        assert [(o["id"], o["kind"]) for o in options["options"]] == [("mode", "select"), ("model", "select"),
                                                                       ("web", "boolean")]
        assert options["options"][0]["currentName"] == "Default" and options["leftOut"] == 0
        answer = editor.do("session_option", id="mode", value="Plan")  # a choice's name or value
        assert answer["applied"] and answer["option"]["current"] == "plan"
        assert editor.do("session_option", id="web", value=True)["option"]["currentName"] == "on"
        refused = editor.do("session_option", id="web", value="maybe")
        assert not refused["ok"] and "not a value of Web search" in refused["error"]
        assert editor.do("plan")["entries"] == []
        editor.do("chat", text="plan")
        editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")
        shown = editor.do("plan")
        assert (shown["done"], shown["total"], shown["above"], shown["below"]) == (4, 12, 1, 4)
        assert [e["content"] for e in shown["entries"] if e["current"]] == ["step 4"]
        assert shown["lines"][0] == "Plan 4/12"
    finally:
        editor.kill()



def test_review_verbs_comment_list_delete_send_and_a_files_only_rewind(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    code, made = workspace / "code.py", workspace / "made.txt"
    code.write_text("a = 1\nb = 2\nc = 3\n")
    script = tmp_path / "script.json"
    write = {"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(made), "content": "made\n"}}
    script.write_text(json.dumps({"agent_name": "qwen-code", "state": str(tmp_path / "agent-state"),
                                  "turns": [[write, {"chunks": ["first"]}], [{"chunks": ["reviewed"]}]]}))
    use_scripted_agent(home, script)

    editor = HeadlessSublime(workspace, home)
    try:
        chat = editor.do("chat", text="one")["chat"]
        turns_ended(editor, 1)
        kept = editor.do("review_comment", path=str(code), line=2, end_line=3, text="why b and c?")["comment"]
        dropped = editor.do("review_comment", path=str(code), line=1, text="later", chat=chat)["comment"]
        assert editor.do("review_comment_delete", comment=dropped)["ok"]
        assert editor.do("review_comments", chat=chat)["comments"] == [
            {"comment": kept, "path": str(code), "line": 2, "end_line": 3, "text": "why b and c?", "state": "pending"}]
        assert not editor.do("review_comment", path=str(tmp_path / "outside.py"), line=1, text="x")["ok"]
        sent = editor.do("review_send", text="Overall: fine.")
        assert (sent["ok"], sent["chat"], sent["sent"]) == (True, chat, 1)
        turns_ended(editor, 2)
        text = editor.do("chat_text")["text"]
        assert "Review: 1 comment on 1 file\nOverall: fine.\n- code.py:2-3: why b and c?" in text
        assert editor.do("review_comments")["comments"] == []  # cleared once the turn ended
        rewound = editor.do("chat_rewind", chat=chat, turn=0, scope="files")
        assert rewound["ok"] and rewound["filesRestored"] == [str(made)] and not made.exists()
        assert "first" in editor.do("chat_text")["text"]  # the conversation stays
        assert editor.quit()["ok"]
    finally:
        editor.kill()
