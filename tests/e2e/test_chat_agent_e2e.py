"""The agent at work in the chat against the real `qwen --acp` (0.24.4) and
the fake model: edit permissions through the review, rejections (with a
reason), allow-all, a shell command's whole text, reads of unsaved buffers,
plans from the todo tool, and thoughts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, edit, read_file, tool_call
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e


def asked(chat: RealChat, count: int = 1) -> list[dict[str, Any]]:
    chat.host.wait_for(lambda: len([e for e in chat.events if e[0] == "permission_requested"]) >= count, timeout=WAIT)
    return [d for e, d in chat.events if e == "permission_requested"]


def option_of(event: dict[str, Any], kind: str) -> str:
    return next(o["optionId"] for o in event["options"] if o["kind"] == kind)


def answer(chat: RealChat, option: str) -> None:
    chat.host.user.run_command("qwen_chat_permission", {"option": option})


def tool_messages(chat: RealChat) -> str:
    return json.dumps([m for body in chat.model.agent_requests for m in body.get("messages", []) if m.get("role") == "tool"])


def test_an_edit_opens_the_review_and_the_users_text_is_written(real_chat: RealChat, workspace: Path) -> None:
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    real_chat.model.queue(read_file(str(target)), edit(str(target), "print('hi')", "print('hello')"), Reply(text="Edited."))
    reviews_module = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"]
    opened: list[dict[str, Any]] = []
    reviews_module.reviews.observers.append(lambda event, details: opened.append({"event": event, **details}))
    real_chat.send("Change the greeting")
    event = asked(real_chat)[0]
    assert event["toolCall"]["kind"] == "edit"
    review = real_chat.host.wait_for(lambda: next((r for r in opened if r["event"] == "diff_opened"), None), timeout=WAIT)
    proposed = next(v for v in real_chat.host.window.views() if v.id() == review["proposed_view"])
    assert real_chat.editor.text(proposed) == "print('hello')\n"
    real_chat.host.user.replace(proposed, (0, proposed.size()), "print('mine')\n")
    real_chat.host.user.focus(proposed)
    real_chat.host.user.run_command("qwen_accept_diff")
    assert real_chat.ended() == ["end_turn"]
    assert target.read_text() == "print('mine')\n"
    assert "Edited." in real_chat.transcript()


def test_reject_leaves_the_file_and_the_agent_continues(real_chat: RealChat, workspace: Path) -> None:
    target = workspace / "keep.py"
    target.write_text("x = 1\n")
    real_chat.model.queue(read_file(str(target)), edit(str(target), "x = 1", "x = 2"), Reply(text="Understood, left as is."))
    real_chat.send("Change x")
    event = asked(real_chat)[0]
    answer(real_chat, option_of(event, "reject_once"))
    assert real_chat.ended() == ["end_turn"]  # 0.24.4 ends the turn on a rejection
    assert target.read_text() == "x = 1\n"
    assert "canceled by the user" in real_chat.transcript()
    real_chat.send("Go on without it")
    assert real_chat.ended(2) == ["end_turn", "end_turn"]
    assert "Understood, left as is." in real_chat.transcript()


def test_reject_with_a_reason_reaches_the_model(real_chat: RealChat, workspace: Path) -> None:
    target = workspace / "keep.py"
    target.write_text("y = 1\n")
    real_chat.model.queue(read_file(str(target)), edit(str(target), "y = 1", "y = 2"), Reply(text="Noted."))
    real_chat.send("Change y")
    asked(real_chat)
    real_chat.host.user.focus(real_chat.chat().transcript_view)
    real_chat.host.user.press_key(str(len(asked(real_chat)[0]["options"]) + 1))
    real_chat.host.user.submit_input_panel("y must stay 1 for the tests")
    assert real_chat.ended(2)[:2] == ["end_turn", "end_turn"]
    assert target.read_text() == "y = 1\n"
    assert "y must stay 1 for the tests" in json.dumps(real_chat.model.agent_requests[-1]["messages"])


def test_allow_all_edits_stops_further_prompts(real_chat: RealChat, workspace: Path) -> None:
    first, second = workspace / "one.py", workspace / "two.py"
    first.write_text("a = 1\n")
    second.write_text("b = 1\n")
    real_chat.model.queue(read_file(str(first)), read_file(str(second)), edit(str(first), "a = 1", "a = 2"),
                          edit(str(second), "b = 1", "b = 2"), Reply(text="Both done."))
    real_chat.send("Change both")
    event = asked(real_chat)[0]
    answer(real_chat, option_of(event, "allow_always"))
    assert real_chat.ended() == ["end_turn"]
    assert first.read_text() == "a = 2\n" and second.read_text() == "b = 2\n"
    assert len(asked(real_chat)) == 1


def test_a_shell_permission_shows_the_whole_command(real_chat: RealChat, workspace: Path) -> None:
    command = "echo " + " ".join(f"word{i}" for i in range(60)) + " > out.txt"
    real_chat.model.queue(tool_call("run_shell_command", {"command": command, "description": "write words"}),
                          Reply(text="Ran it."))
    real_chat.send("Run the command")
    event = asked(real_chat)[0]
    assert event["toolCall"]["kind"] == "execute"
    prompt = real_chat.chat().request_handler().pending.oldest()
    assert prompt is not None and command in prompt.detail
    assert command in real_chat.transcript()
    answer(real_chat, option_of(event, "allow_once"))
    assert real_chat.ended() == ["end_turn"]
    assert (workspace / "out.txt").read_text().startswith("word0 word1")


def test_a_read_of_an_open_unsaved_file_gives_the_unsaved_text(real_chat: RealChat, workspace: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("saved text\n")
    view = real_chat.host.user.open_file(target)
    real_chat.host.user.type(view, "UNSAVED MARKER ")
    # Offset and limit: 0.24.4 answers a plain re-read of a file it has seen with "unchanged since last read".
    real_chat.model.queue(tool_call("read_file", {"file_path": str(target), "offset": 0, "limit": 5}), Reply(text="Read it."))
    real_chat.send("Read notes.txt")
    assert real_chat.ended() == ["end_turn"]
    assert "UNSAVED MARKER" in tool_messages(real_chat)


def test_a_plan_from_the_todo_tool_renders_and_updates(real_chat: RealChat, real_env: dict[str, str]) -> None:
    settings = Path(real_env["HOME"]) / ".qwen" / "settings.json"
    current = json.loads(settings.read_text())
    current.setdefault("tools", {})["todoWrite"] = {"enabled": True}  # 0.24.4: off by default
    settings.write_text(json.dumps(current))
    todos = [{"id": "1", "content": "Write the parser", "status": "in_progress"},
             {"id": "2", "content": "Test the parser", "status": "pending"}]
    done = [dict(todos[0], status="completed"), dict(todos[1], status="in_progress")]
    real_chat.model.queue(tool_call("todo_write", {"todos": todos}), tool_call("todo_write", {"todos": done}),
                          Reply(text="Planned."))
    real_chat.send("Plan the work")
    assert real_chat.ended() == ["end_turn"]
    text = real_chat.transcript()
    assert "**Plan 1/2**" in text and "- [x] Write the parser" in text and "- [~] Test the parser" in text
    assert "Plan 0/2" not in text  # one checklist, updated in place


def test_thoughts_stream_into_a_thinking_block(real_chat: RealChat) -> None:
    real_chat.model.queue(Reply(text="The answer is 4.", reasoning="Two plus two makes four."))
    real_chat.send("What is 2+2?")
    assert real_chat.ended() == ["end_turn"]
    text = real_chat.transcript()
    assert "▸ Thinking\n> Two plus two makes four." in text
    assert text.index("Thinking") < text.index("The answer is 4.")


def test_ask_user_question_shows_numbered_choices_and_the_answer_reaches_the_model(real_chat: RealChat) -> None:
    questions = {"questions": [
        {"question": "Which colour?", "header": "Colour", "multiSelect": False,
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]},
        {"question": "Which size?", "header": "Size", "multiSelect": False,
         "options": [{"label": "Small", "description": "s"}, {"label": "Large", "description": "l"}]}]}
    real_chat.model.queue(tool_call("ask_user_question", questions), Reply(text="Thanks."))
    real_chat.send("Ask me")
    asked(real_chat)
    assert "[1] Red  [2] Blue" in real_chat.transcript()
    real_chat.host.user.focus(real_chat.chat().transcript_view)
    real_chat.host.user.press_key("2")
    real_chat.host.wait_for(lambda: "→ Blue" in real_chat.transcript(), timeout=WAIT)
    real_chat.host.user.press_key("1")
    assert real_chat.ended() == ["end_turn"]
    result = tool_messages(real_chat)
    assert "Blue" in result and "Small" in result and "No valid answers" not in result


def test_an_edits_review_leaves_the_transcript_in_sight_and_what_people_read_is_relative(
        real_chat: RealChat, workspace: Path) -> None:
    (workspace / "src").mkdir()
    target = workspace / "src" / "hello.py"
    target.write_text("print('hi')\n")
    real_chat.model.queue(read_file(str(target)), edit(str(target), "print('hi')", "print('hello')"), Reply(text="Edited."))
    code = real_chat.host.user.open_file(target)
    real_chat.host.wait_idle()
    real_chat.send("Change the greeting")
    event = asked(real_chat)[0]
    assert event["toolCall"]["kind"] == "edit"
    review = real_chat.host.wait_for(lambda: real_chat.editor.review_views() or None, timeout=WAIT)
    real_chat.host.wait_idle()
    chat = real_chat.chat()
    visible = real_chat.host.visible_views(real_chat.host.window)
    assert chat.transcript_view in visible and set(review) <= set(visible)
    assert real_chat.host.window.get_view_index(review[0])[0] == real_chat.host.window.get_view_index(code)[0]
    text = real_chat.transcript()
    assert "src/hello.py: +1 −1 line(s)\n-print('hi')\n+print('hello')" in text  # not the tool's JSON input
    assert str(workspace) not in text  # tool-call lines name src/hello.py
    status = chat.transcript_view.get_status("qwen_chat")
    assert "fake-model" in status and "$runtime" not in status  # 0.24.4's models: name "fake-model", id "$runtime|openai|…"
    answer(real_chat, option_of(event, "allow_once"))
    assert real_chat.ended() == ["end_turn"]
    assert target.read_text() == "print('hello')\n"


def test_qwen_announces_none_of_acps_stable_session_extras(real_chat: RealChat, workspace: Path) -> None:
    """additionalDirectories, session/close and session/delete go only to an
    agent that announces them: qwen 0.24.4 must not, so it is sent nothing new."""
    real_chat.model.queue(Reply(text="Hi."))
    real_chat.send("Hello")
    assert real_chat.ended() == ["end_turn"]
    initialized = real_chat.chat().core.connection.initialized
    sessions = initialized.agent_capabilities.session_capabilities
    assert sessions.list is not None and sessions.resume is not None  # what 0.24.4 does announce
    assert (sessions.additional_directories, sessions.close, sessions.delete) == (None, None, None)
