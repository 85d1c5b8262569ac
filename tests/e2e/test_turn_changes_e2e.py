"""A turn's changes against the real `qwen --acp` (0.24.4) and the fake model,
in Auto Edit mode: the agent edits two files (nothing asks), a shell command
changes a third; the turn lists them with their counts, the open file diffs
against its pre-turn text, Undo restores byte for byte and never loses the
user's own edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_chat_agent_e2e import answer, asked, option_of
from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, edit, read_file, tool_call
from tests.support.editor import wait_for_package_threads

pytestmark = pytest.mark.e2e

CRLF_BOM = b"\xef\xbb\xbfalpha = 1\r\nbeta = 2\r\n"
PLAIN = b"one\ntwo\nthree\n"


def test_auto_edit_turn_lists_its_files_and_undo_restores_them(real_chat: RealChat, workspace: Path) -> None:
    closed, opened, built = workspace / "win.py", workspace / "notes.txt", workspace / "built.txt"
    closed.write_bytes(CRLF_BOM)
    opened.write_bytes(PLAIN)
    built.write_text("before\n")
    view = real_chat.host.user.open_file(opened)
    real_chat.host.user.run_command("qwen_chat")
    chat = real_chat.host.wait_for(lambda: (c := real_chat.chat()) and c.core.state.session_id and c, timeout=WAIT)
    chat.core.option_setter.set_mode("auto-edit").result(timeout=WAIT)
    assert chat.core.state.mode_id == "auto-edit"
    real_chat.model.queue(
        read_file(str(closed)), read_file(str(opened)), read_file(str(built)),
        edit(str(closed), "beta = 2", "beta = 3\ngamma = 4"),
        edit(str(opened), "two", "TWO"),
        tool_call("run_shell_command", {"command": "echo after > built.txt", "description": "build"}),
        Reply(text="Done."))
    real_chat.send("Change both files and build")
    shell = asked(real_chat)[0]  # Auto Edit asks for commands, never for edits
    assert shell["toolCall"]["kind"] == "execute"
    answer(real_chat, option_of(shell, "allow_once"))
    assert real_chat.ended() == ["end_turn"]
    assert len(asked(real_chat)) == 1
    real_chat.host.wait_for(lambda: [d for e, d in real_chat.events if e == "turn_changes"], timeout=WAIT)
    event = next(d for e, d in real_chat.events if e == "turn_changes")
    assert event["files"] == [
        {"path": str(closed), "added": 2, "removed": 1, "state": "changed"},
        {"path": str(opened), "added": 1, "removed": 1, "state": "changed"},
        {"path": str(built), "added": 0, "removed": 0, "state": "outside"},
    ]
    assert closed.read_bytes() == b"\xef\xbb\xbfalpha = 1\r\nbeta = 3\r\ngamma = 4\r\n"
    assert real_chat.host.app.view(view.id()).buffer.reference_document == "one\ntwo\nthree\n"

    real_chat.host.user.run_command("qwen_turn_undo", {"path": str(closed)})
    wait_for_package_threads(real_chat.host, "turn undo")
    assert closed.read_bytes() == CRLF_BOM

    real_chat.host.user.click(view, 0)
    real_chat.host.user.type(view, "# mine\n")  # the user's own edit, unsaved
    real_chat.host.user.run_command("qwen_turn_undo")
    wait_for_package_threads(real_chat.host, "turn undo")
    real_chat.host.wait_idle()
    assert real_chat.editor.text(view) == "one\ntwo\nthree\n" and view.is_dirty()
    real_chat.host.run_on_main(lambda: view.run_command("undo"))
    assert real_chat.editor.text(view) == "# mine\none\nTWO\nthree\n"  # kept in the undo history
    assert built.read_text() == "after\n"  # changed outside: never overwritten
    states = [f.state for f in real_chat.chat().request_handler().files.turns.files(event["turn"])]
    assert states == ["reverted", "reverted", "outside"]
