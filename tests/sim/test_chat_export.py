"""Export Chat, Copy Conversation and Copy Answer in the simulated editor with
the BUILT package: a new tab, a file the user picks, the clipboard; what an
excluded file (`.env`) gave never leaves, whatever the way out, nor reaches
Search in Conversations' index in the cache folder."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import EDIT_OPTIONS, request, shell_permission
from tests.support.editor import PACKAGE

SECRET = "API_KEY=sk-live-0123456789"


def tool_read_env(rig: ChatRig) -> dict[str, object]:
    env = str(rig.editor.workspace / ".env")
    return {"update": {"sessionUpdate": "tool_call", "toolCallId": "r1", "title": "ReadFile .env", "kind": "read",
                       "status": "completed", "locations": [{"path": env}],
                       "content": [{"type": "content", "content": {"type": "text", "text": f"{SECRET}\nDEBUG=1"}}]}}


def a_turn_with_a_tool_call_and_a_permission(rig: ChatRig) -> None:
    rig.load([[tool_read_env(rig), shell_permission("ls -la"),
               {"chunks": [f"Your key is\n{SECRET}\nand the folder is listed."]}],
              [{"chunks": ["Glad to help."]}]])
    rig.send("what is in .env?")
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)
    rig.host.wait_for(lambda: rig.chat().request_handler().pending.oldest(), timeout=WAIT)
    rig.host.user.press_key("1")
    rig.ended()
    rig.send("thanks")
    rig.ended(2)
    assert SECRET in rig.transcript()  # shown to the user in the editor, never exported


def test_export_to_a_new_tab_in_markdown(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    a_turn_with_a_tool_call_and_a_permission(rig)
    commands = sys.modules[f"{PACKAGE}.plugin.chat.history.export_commands"]
    made_on: list[str] = []

    def export(*args: Any) -> str:
        made_on.append(threading.current_thread().name)
        return str(real_export(*args))

    real_export = commands.export
    monkeypatch.setattr(commands, "export", export)
    before = set(rig.host.window.views())
    rig.host.user.run_command("qwen_chat_export", {"format": "markdown"})
    tab = rig.host.wait_for(lambda: next(iter(set(rig.host.window.views()) - before), None), timeout=WAIT)
    text = rig.host.wait_for(lambda: rig.editor.text(tab) or None, timeout=WAIT)
    assert tab.name().endswith(".md") and rig.host.window.active_view() == tab
    assert tab.syntax().path == "Packages/Markdown/Markdown.sublime-syntax"
    assert "## You\n\nwhat is in .env?" in text and "ReadFile .env" in text
    assert "**Permission** (execute): Shell → Allow" in text and "Glad to help." in text
    assert SECRET not in text and "DEBUG=1" not in text
    assert made_on == ["QwenCompanion chat export"]  # not Sublime's main thread


@pytest.mark.parametrize(("fmt", "syntax"), [("html", "Packages/HTML/HTML.sublime-syntax"),
                                             ("jsonl", "Packages/JSON/JSON.sublime-syntax")])
def test_export_to_a_new_tab_has_its_formats_syntax(rig: ChatRig, fmt: str, syntax: str) -> None:
    rig.load([[{"chunks": ["An answer."]}]])
    rig.send("hi")
    rig.ended()
    before = set(rig.host.window.views())
    rig.host.user.run_command("qwen_chat_export", {"format": fmt})
    tab = rig.host.wait_for(lambda: next(iter(set(rig.host.window.views()) - before), None), timeout=WAIT)
    rig.host.wait_for(lambda: "An answer." in rig.editor.text(tab), timeout=WAIT)
    assert tab.syntax() is not None and tab.syntax().path == syntax


@pytest.mark.parametrize("fmt", ["markdown", "html", "jsonl"])
def test_export_to_a_file_the_user_picks(rig: ChatRig, tmp_path: Path, fmt: str) -> None:
    a_turn_with_a_tool_call_and_a_permission(rig)
    target = tmp_path / f"exported.{fmt}"
    rig.host.answers.push("save", str(target))
    rig.host.user.run_command("qwen_chat_export", {"format": fmt, "to": "file"})
    text = rig.host.wait_for(lambda: target.exists() and target.read_text(encoding="utf-8").endswith("\n")
                             and target.read_text(encoding="utf-8"), timeout=WAIT)
    assert "Glad to help." in text and SECRET not in text
    if fmt == "jsonl":
        assert [json.loads(line)["kind"] for line in text.splitlines()][:2] == ["chat", "user"]


def test_copy_conversation_and_copy_answer_from_the_transcript(rig: ChatRig) -> None:
    a_turn_with_a_tool_call_and_a_permission(rig)
    transcript = rig.chat().transcript_view
    rig.host.run_on_main(lambda: transcript.run_command("qwen_chat_copy", {"what": "answer"}))
    rig.host.wait_for(lambda: rig.host.app.clipboard == "Glad to help.", timeout=WAIT)
    rig.host.run_on_main(lambda: transcript.run_command("qwen_chat_copy", {"what": "conversation"}))
    copied = rig.host.wait_for(lambda: "what is in .env?" in rig.host.app.clipboard and rig.host.app.clipboard,
                               timeout=WAIT)
    assert "Glad to help." in copied and SECRET not in copied


def test_what_an_excluded_file_gave_never_reaches_the_search_index(rig: ChatRig) -> None:
    a_turn_with_a_tool_call_and_a_permission(rig)
    index = Path(rig.host.app.cache_dir) / "QwenCompanion" / "conversations-index.jsonl"
    text = rig.host.wait_for(lambda: index.exists() and index.read_text(encoding="utf-8").count("\n") == 2
                             and index.read_text(encoding="utf-8"), timeout=WAIT)
    first, second = (json.loads(line) for line in text.splitlines())
    assert first["prompt"] == "what is in .env?" and "and the folder is listed." in first["answer"]
    assert second["answer"] == "Glad to help."
    assert SECRET not in text and "sk-live" not in text


def test_an_edit_of_an_excluded_file_leaves_its_diff_out_of_every_export_and_the_index(rig: ChatRig) -> None:
    env = rig.editor.workspace / ".env"
    env.write_text("API_KEY=sk-old-0000000000\n")
    diff = {"type": "diff", "path": str(env), "oldText": "API_KEY=sk-old-0000000000\n",
            "newText": "API_KEY=sk-new-1111111111\n"}
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "Edit .env",
                                 "locations": [{"path": str(env)}], "content": [diff]}, options=EDIT_OPTIONS),
               {"chunks": ["Done: your key is now sk-new-1111111111, as asked."]}]])
    rig.send("rotate my key")
    transcript, _ = rig.open()
    rig.host.wait_for(lambda: rig.chat().request_handler().pending.oldest(), timeout=WAIT)
    assert "sk-new-1111111111" in rig.transcript()  # the user sees the change asked for
    pending = exported_to_tab(rig)
    assert "Edit .env" in pending and "sk-old" not in pending and "sk-new" not in pending
    rig.host.user.focus(transcript)
    rig.host.user.press_key("3")  # Reject
    assert rig.ended() == ["end_turn"]
    after = exported_to_tab(rig)
    assert "Done: your key is now" in after and "sk-new" not in after
    index = Path(rig.host.app.cache_dir) / "QwenCompanion" / "conversations-index.jsonl"
    indexed = rig.host.wait_for(lambda: index.exists() and index.read_text(encoding="utf-8"), timeout=WAIT)
    assert "Done: your key is now" in indexed and "sk-new" not in indexed and "sk-old" not in indexed


def exported_to_tab(rig: ChatRig) -> str:
    before = set(rig.host.window.views())
    rig.host.user.run_command("qwen_chat_export", {"format": "markdown"})
    tab = rig.host.wait_for(lambda: next(iter(set(rig.host.window.views()) - before), None), timeout=WAIT)
    text: str = rig.host.wait_for(lambda: rig.editor.text(tab) or None, timeout=WAIT)
    return text


def test_work_a_command_waits_for_goes_on_as_the_users_command_when_it_ends_later(rig: ChatRig) -> None:
    """Export to a tab opens its tab when the export is done. Done after the
    command returned (a loaded machine), the tab came to the front from a
    thread of ours: a focus change the user had not made."""
    rig.load()
    code = rig.editor.workspace / "code.py"
    code.write_text("pass\n")
    rig.host.user.open_file(code)  # the keys are in the user's code
    background = sys.modules[f"{PACKAGE}.plugin.background"]
    work: Any = background.Future()
    opened: list[Any] = []

    def command() -> None:  # what a command of the user's runs on the main thread
        background.when_done(work, lambda done: opened.append(rig.host.window.new_file()))

    rig.host.run_on_main(command)
    threading.Thread(target=work.set_result, args=("text",)).start()
    rig.host.wait_for(lambda: opened, timeout=WAIT)
    assert rig.host.run_on_main(lambda: rig.host.window.active_view()) == opened[0]
    assert rig.host.app.focus_guard.take() == []
