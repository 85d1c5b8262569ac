"""The agent at work in the chat, in the simulated editor with the BUILT
package and the scripted ACP agent: file reads and writes through buffers,
confinement, permission prompts (inline keys, the review for edits, reasons),
pending prompts answered "cancelled", unknown requests, tool calls, plans
and thoughts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.support.editor import PACKAGE

EDIT_OPTIONS = [
    {"optionId": "proceed_always", "kind": "allow_always", "name": "Allow All Edits"},
    {"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
    {"optionId": "cancel", "kind": "reject_once", "name": "Reject"},
]
SHELL_OPTIONS = [
    {"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
    {"optionId": "proceed_always", "kind": "allow_always", "name": "Always Allow"},
    {"optionId": "cancel", "kind": "reject_once", "name": "Reject"},
]


def request(method: str, **params: Any) -> dict[str, Any]:
    return {"request": method, "params": {"sessionId": "", **params}}


def shell_permission(command: str) -> dict[str, Any]:
    return request(
        "session/request_permission",
        toolCall={"toolCallId": "sh1", "status": "pending", "kind": "execute", "title": "Shell",
                  "rawInput": {"command": command}},
        options=SHELL_OPTIONS,
    )


def answers(rig: ChatRig, method: str) -> list[Any]:
    if not rig.log.exists():
        return []
    lines = [json.loads(line) for line in rig.log.read_text().splitlines()]
    return [m["answer"] for m in lines if m.get("answer_to") == method]


def wait_answers(rig: ChatRig, method: str, count: int = 1) -> list[Any]:
    rig.host.wait_for(lambda: len(answers(rig, method)) >= count, timeout=WAIT)
    return answers(rig, method)


def pending(rig: ChatRig) -> Any:
    return rig.host.wait_for(lambda: rig.chat().request_handler().pending.oldest(), timeout=WAIT)


def test_reads_come_from_the_open_buffer_with_line_and_limit(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    path = str(workspace / "a.py")
    rig.load([[request("fs/read_text_file", path=path, line=2, limit=2),
               request("fs/read_text_file", path=str(workspace / "disk.txt")),
               request("fs/read_text_file", path=str(workspace / "missing.txt"))]])
    view = rig.editor.open("a.py", "one\ntwo\nthree\nfour\n")
    rig.editor.file("disk.txt", "on\r\ndisk\r\n")
    rig.host.user.type(view, "zero\n")  # unsaved: the caret is at the start
    assert view.is_dirty()
    rig.send("read")
    assert rig.ended() == ["end_turn"]
    read, disk, missing = wait_answers(rig, "fs/read_text_file", 3)
    assert read == {"content": "one\ntwo\n"}
    assert disk == {"content": "on\ndisk\n"}
    assert missing["code"] == -32002 and "missing.txt" in json.dumps(missing)


def test_paths_outside_the_folders_are_refused_unless_open(rig: ChatRig, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (outside / "open.txt").write_text("open\n")
    workspace = rig.editor.workspace
    (workspace / "link").symlink_to(outside)
    rig.load([[request("fs/read_text_file", path=str(workspace / ".." / "outside" / "secret.txt")),
               request("fs/read_text_file", path=str(workspace / "link" / "secret.txt")),
               request("fs/write_text_file", path=str(workspace / "link" / "secret.txt"), content="x"),
               request("fs/read_text_file", path=str(outside / "open.txt"))]])
    rig.host.user.open_file(outside / "open.txt")
    rig.send("escape")
    assert rig.ended() == ["end_turn"]
    dotdot, link = wait_answers(rig, "fs/read_text_file", 3)[:2]
    assert dotdot["code"] == -32602 and "outside the window's folders" in json.dumps(dotdot)
    assert link["code"] == -32602
    assert wait_answers(rig, "fs/write_text_file")[0]["code"] == -32602
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert answers(rig, "fs/read_text_file")[2] == {"content": "open\n"}


def test_a_write_to_an_open_file_is_one_undo_step_and_saved(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    rig.load([[request("fs/write_text_file", path=str(workspace / "a.py"), content="new\ntext\n")]])
    view = rig.editor.open("a.py", "old\r\ntext\r\n")
    assert view.line_endings() == "Windows"
    rig.send("write")
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None]
    assert rig.editor.text(view) == "new\ntext\n" and not view.is_dirty()
    assert (workspace / "a.py").read_bytes() == b"new\r\ntext\r\n"
    rig.host.user.focus(view)
    rig.host.run_on_main(lambda: view.run_command("undo"))
    rig.host.wait_idle()
    assert rig.editor.text(view) == "old\ntext\n"


@pytest.mark.parametrize("before", [b"a\r\nb\r\n", b"a\nb"], ids=["crlf", "no-final-newline"])
def test_a_write_to_a_closed_file_keeps_its_shape_and_makes_folders(rig: ChatRig, before: bytes) -> None:
    workspace = rig.editor.workspace
    (workspace / "f.txt").write_bytes(before)
    rig.load([[request("fs/write_text_file", path=str(workspace / "f.txt"), content="a\nB" + ("\n" if before.endswith(b"\n") else "")),
               request("fs/write_text_file", path=str(workspace / "new" / "dir" / "g.txt"), content="g\n")]])
    rig.send("write")
    assert rig.ended() == ["end_turn"]
    wait_answers(rig, "fs/write_text_file", 2)
    assert (workspace / "f.txt").read_bytes() == before.replace(b"b", b"B")
    assert (workspace / "new" / "dir" / "g.txt").read_bytes() == b"g\n"
    assert [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")] == []


def test_unknown_requests_get_method_not_found(rig: ChatRig) -> None:
    rig.load([[{"request": "craft/drainMidTurnQueue", "params": {}}, {"chunks": ["still here"]}]])
    rig.send("go")
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "craft/drainMidTurnQueue")[0]["code"] == -32601
    assert "still here" in rig.transcript()


def test_a_shell_permission_shows_the_whole_command_and_keys_pick_options(rig: ChatRig) -> None:
    command = "for f in *.py; do echo \"$f\"; done && " + "x" * 400
    rig.load([[shell_permission(command)]])
    rig.send("run it")
    prompt = pending(rig)
    assert prompt.detail == command
    assert command in rig.transcript() and "[1] Allow  [2] Always Allow  [3] Reject  [4] Reject with a reason…" in rig.transcript()
    event = next(d for e, d in rig.events if e == "permission_requested")
    assert event["toolCall"]["kind"] == "execute"
    assert [o["optionId"] for o in event["options"]] == ["proceed_once", "proceed_always", "cancel"]
    transcript, composer = rig.open()
    rig.host.user.focus(transcript)
    rig.host.user.press_key("2")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_always"}}]
    assert rig.ended() == ["end_turn"]
    assert rig.editor.text(composer) == ""
    assert "Shell → Always Allow" in rig.transcript()


def test_escape_rejects_and_typing_stays_typing(rig: ChatRig) -> None:
    rig.load([[shell_permission("ls")]])
    rig.send("run it")
    pending(rig)
    transcript, composer = rig.open()
    rig.host.user.focus(composer)
    rig.host.user.press_key("1")  # digits in the composer type, empty or not
    rig.host.user.press_key("2")
    assert rig.editor.text(composer) == "12"
    rig.host.user.focus(transcript)
    rig.host.user.press_key("escape")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "cancel"}}]


def test_reject_with_a_reason_sends_it_as_the_next_prompt(rig: ChatRig) -> None:
    rig.load([[shell_permission("rm -rf build")], [{"chunks": ["ok"]}]])
    rig.send("clean")
    pending(rig)
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)
    rig.host.user.press_key("4")
    rig.host.user.submit_input_panel("keep the build folder")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "cancel"}}]
    assert rig.ended(2) == ["end_turn", "end_turn"]
    prompts = [m["params"]["prompt"][0]["text"] for m in rig.received("session/prompt")]
    assert prompts == ["clean", "keep the build folder"]


@pytest.mark.parametrize("how", ["cancel", "close_transcript", "window", "unload"])
def test_a_pending_permission_is_answered_cancelled(rig: ChatRig, how: str) -> None:
    rig.load([[shell_permission("sleep 100"), {"stall": 30}]])
    rig.send("wait")
    prompt = pending(rig)
    requests = rig.chat().request_handler()
    transcript, _ = rig.open()
    if how == "cancel":
        rig.host.user.run_command("qwen_chat_cancel")
    elif how == "close_transcript":
        rig.host.user.close(transcript)
    elif how == "window":
        rig.host.user.close_window()
    else:
        rig.host.unload_package(PACKAGE)
    rig.host.wait_for(lambda: requests.pending.get(prompt.key) is None, timeout=WAIT)
    if how in ("cancel", "close_transcript"):
        assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "cancelled"}}]


def test_an_edit_permission_opens_the_review_and_the_users_text_is_written(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    path = str(workspace / "hello.py")
    (workspace / "hello.py").write_text("print('hi')\n")
    diff = {"type": "diff", "path": path, "oldText": "print('hi')\n", "newText": "print('hello')\n"}
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "Edit hello.py",
                                 "locations": [{"path": path}], "content": [diff]},
                       options=EDIT_OPTIONS),
               request("fs/write_text_file", path=path, content="print('hello')\n")]])
    reviews: list[dict[str, Any]] = []
    review_module = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"]
    review_module.reviews.observers.append(lambda event, details: reviews.append({"event": event, **details}))
    rig.send("edit")
    opened = rig.host.wait_for(lambda: next((r for r in reviews if r["event"] == "diff_opened"), None), timeout=WAIT)
    proposed = next(v for v in rig.host.window.views() if v.id() == opened["proposed_view"])
    assert rig.editor.text(proposed) == "print('hello')\n"
    rig.host.user.replace(proposed, (0, proposed.size()), "print('mine')\n")
    rig.host.user.focus(proposed)
    rig.host.user.run_command("qwen_accept_diff")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_once"}}]
    assert rig.ended() == ["end_turn"]
    assert (workspace / "hello.py").read_text() == "print('mine')\n"
    assert any(r["event"] == "diff_closed" for r in reviews)


def test_answering_in_the_chat_closes_the_edit_review(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    path = str(workspace / "b.py")
    (workspace / "b.py").write_text("b = 1\n")
    diff = {"type": "diff", "path": path, "oldText": "b = 1\n", "newText": "b = 2\n"}
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e2", "status": "pending", "kind": "edit", "title": "Edit b.py",
                                 "locations": [{"path": path}], "content": [diff]},
                       options=EDIT_OPTIONS)]])
    rig.send("edit")
    pending(rig)
    rig.host.wait_for(lambda: rig.editor.review_views(), timeout=WAIT)
    rig.host.user.run_command("qwen_chat_permission", {"option": "proceed_always"})
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_always"}}]
    rig.host.wait_for(lambda: not rig.editor.review_views(), timeout=WAIT)
    assert (workspace / "b.py").read_text() == "b = 1\n"


def test_tool_calls_plans_and_thoughts_render_in_place(rig: ChatRig) -> None:
    updates: list[dict[str, Any]] = [{"update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Pondering."}}},
                                     {"chunks": ["First.\n\n"]}]
    for i in range(100):
        updates.append({"update": {"sessionUpdate": "tool_call", "toolCallId": f"c{i}", "title": f"ls {i}", "kind": "execute", "status": "pending"}})
        for status in ("in_progress", "in_progress", "in_progress", "completed"):
            updates.append({"update": {"sessionUpdate": "tool_call_update", "toolCallId": f"c{i}", "status": status}})
    updates.append({"update": {"sessionUpdate": "plan", "entries": [
        {"content": "a", "priority": "high", "status": "completed"},
        {"content": "b", "priority": "high", "status": "pending"}]}})
    updates.append({"update": {"sessionUpdate": "tool_call", "toolCallId": "long", "title": "cat big", "kind": "read",
                               "status": "completed", "content": [
                                   {"type": "content", "content": {"type": "text", "text": "\n".join(f"row {n}" for n in range(8))}}]}})
    updates.append({"chunks": ["Last."]})
    rig.load([updates])
    rig.send("work")
    assert rig.ended() == ["end_turn"]
    text = rig.transcript()
    assert text.count("— completed") == 101 and "— in_progress" not in text
    assert text.index("First.") < text.index("ls 0") < text.index("ls 99") < text.index("Plan 1/2") < text.index("Last.")
    assert "▸ Thinking\n> Pondering.\n\n" in text
    transcript, _ = rig.open()
    folded = rig.host.run_on_main(lambda: transcript.folded_regions())
    assert [transcript.substr(region) for region in folded] == [
        "\n> Pondering.", "\n" + "\n".join(f"    row {n}" for n in range(8))]
    calls = [d for e, d in rig.events if e == "tool_call"]
    assert len(calls) == 301 and calls[-1]["status"] == "completed"
    rig.host.wait_for(lambda: rig.host.window.views()[0].get_status("qwen_chat_plan") == "Plan 1/2", timeout=WAIT)


def test_a_long_turn_that_ends_out_of_sight_is_announced(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load([[{"stall": 0.5}, {"stop": "max_tokens"}]])
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"], "LONG_TURN_SECONDS", 0.2)
    code = rig.editor.open("a.py", "x = 1\n")
    rig.send("a long one")
    rig.host.user.focus(code)
    transcript, _ = rig.open()
    rig.host.user.close(transcript)  # the chat out of sight
    rig.host.user.focus(code)
    assert rig.ended() == ["max_tokens"]
    rig.host.wait_for(lambda: code.get_status("qwen_chat_done") == "Qwen Code: the chat's answer is ready (max_tokens)", timeout=WAIT)
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)
    rig.host.wait_for(lambda: code.get_status("qwen_chat_done") == "", timeout=WAIT)
    assert "stopped: max_tokens" in rig.transcript()


def test_a_turn_that_ends_in_sight_is_not_announced(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load([[{"stall": 0.5}]])
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.plugin.chat.transcript.notify"], "LONG_TURN_SECONDS", 0.2)
    rig.send("in sight")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_idle()
    transcript, composer = rig.open()
    assert composer.get_status("qwen_chat_done") == "" and transcript.get_status("qwen_chat_done") == ""


def test_a_permission_arriving_while_the_chat_is_hidden_brings_it_to_view(rig: ChatRig) -> None:
    rig.load([[{"stall": 1.0}, shell_permission("make deploy")]])
    rig.send("deploy")
    transcript, composer = rig.open()
    rig.host.user.close(transcript)
    rig.host.user.close(composer)
    pending(rig)
    chat = rig.chat()
    rig.host.wait_for(lambda: chat.transcript_view is not None and chat.transcript_view.is_valid(), timeout=WAIT)
    assert "make deploy" in rig.transcript()
    assert "Qwen Code asks: Shell (answer it in the chat's transcript)" in rig.host.status_messages
    rig.host.user.run_command("qwen_chat_permission", {"index": 1})
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_once"}}]


def test_thoughts_of_later_turns_fold_too(rig: ChatRig) -> None:
    def thought(text: str) -> dict[str, Any]:
        return {"update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}}

    rig.load([[thought("first idea"), {"chunks": ["One."]}], [thought("second idea"), {"chunks": ["Two."]}]])
    rig.send("one")
    rig.ended()
    rig.send("two")
    rig.ended(2)
    rig.transcript()
    transcript, _ = rig.open()
    folded = rig.host.run_on_main(lambda: transcript.folded_regions())
    assert [transcript.substr(region) for region in folded] == ["\n> first idea", "\n> second idea"]


def test_the_permission_panel_preselects_a_refusal_and_stays_open_when_the_focus_moves(rig: ChatRig) -> None:
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "Edit"},
                       options=EDIT_OPTIONS)]])  # the agent lists "Allow All Edits" first
    code = rig.editor.open("a.py", "x = 1\n")
    rig.send("edit")
    pending(rig)
    rig.host.user.run_command("qwen_chat_permission")  # the user asks for the choices
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[-1]
    assert panel.items[panel.selected_index] == "Reject"  # Enter refuses, whatever the agent's order
    assert panel.flags & rig.host.sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST
    rig.host.user.focus(code)  # the keys move (a click, a tab an agent opened): the panel is no answer
    rig.host.wait_idle()
    assert not panel.done and pending(rig) is not None
    rig.host.user.choose_quick_panel(panel.selected_index)
    assert wait_answers(rig, "session/request_permission")[0]["outcome"] == {"outcome": "selected", "optionId": "cancel"}
