"""Edit and Resend against the real `qwen --acp` (0.24.4) and the fake model:
the prompt and every later one leave the conversation (the model's next
request holds none of them), and the files the agent changed since come back
byte for byte (a CRLF file with a BOM, a file it made is gone)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, edit, read_file, user_texts, write_file
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e

CRLF_BOM = b"\xef\xbb\xbfalpha = 1\r\nbeta = 2\r\n"


def test_edit_and_resend_replaces_the_turn_and_restores_the_files_changed_after_it(
        real_chat: RealChat, workspace: Path) -> None:
    source, made = workspace / "win.py", workspace / "made.txt"
    source.write_bytes(CRLF_BOM)
    real_chat.host.user.run_command("qwen_chat")
    chat = real_chat.host.wait_for(lambda: (c := real_chat.chat()) and c.core.state.session_id and c, timeout=WAIT)
    chat.core.option_setter.set_mode("auto-edit").result(timeout=WAIT)  # edits ask nothing
    real_chat.model.queue(
        Reply(text="First answer."),
        read_file(str(source)), edit(str(source), "beta = 2", "beta = 3"), Reply(text="Changed beta."),
        edit(str(source), "alpha = 1", "alpha = 0"), write_file(str(made), "made\n"), Reply(text="Changed alpha."),
        Reply(text="Answer to the edited prompt."))
    for number, prompt in enumerate(["PROMPT-ONE", "PROMPT-TWO", "PROMPT-THREE"], start=1):
        real_chat.send(prompt)
        assert real_chat.ended(number)[-1] == "end_turn"
    assert source.read_bytes() == b"\xef\xbb\xbfalpha = 0\r\nbeta = 3\r\n" and made.exists()

    rewind = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"].rewind
    window = real_chat.host.window
    outcome = real_chat.host.run_on_main(lambda: rewind(window, chat, 1, "PROMPT-EDITED")).result(timeout=WAIT)
    assert sorted(outcome.files_restored) == sorted([str(source), str(made)]) and outcome.not_restored == []
    assert source.read_bytes() == CRLF_BOM and not made.exists()

    assert real_chat.ended(4)[-1] == "end_turn"
    prompts = user_texts(real_chat.model.agent_requests[-1])
    assert prompts[-1] == "PROMPT-EDITED" and prompts[0].endswith("PROMPT-ONE")
    assert not [text for text in prompts if "PROMPT-TWO" in text or "PROMPT-THREE" in text]
    transcript = real_chat.transcript()
    assert "Answer to the edited prompt." in transcript and "First answer." in transcript
    assert "PROMPT-TWO" not in transcript and "Changed alpha." not in transcript
    assert chat.core.prompts.texts() == ["PROMPT-ONE", "PROMPT-EDITED"]


def test_a_rewind_while_qwen_runs_a_turn_is_refused(real_chat: RealChat) -> None:
    running = threading.Event()
    real_chat.model.queue(Reply(text="First answer."), Reply(text="slow answer " * 10, chunk_size=4, hold=running))
    real_chat.send("PROMPT-ONE")
    assert real_chat.ended(1) == ["end_turn"]
    real_chat.send("PROMPT-TWO")
    chat = real_chat.chat()
    real_chat.host.wait_for(lambda: chat.core.state.agent_status == "busy", timeout=WAIT)
    rewind = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"].rewind
    window = real_chat.host.window
    with pytest.raises(Exception, match="a turn is running"):
        real_chat.host.run_on_main(lambda: rewind(window, chat, 0, None)).result(timeout=WAIT)
    running.set()
    assert real_chat.ended(2)[-1] == "end_turn"
    assert chat.core.prompts.texts() == ["PROMPT-ONE", "PROMPT-TWO"]


def test_a_files_only_rewind_keeps_the_conversation_and_the_next_request_names_the_files(
        real_chat: RealChat, workspace: Path) -> None:
    source = workspace / "notes.txt"
    source.write_text("alpha\n")
    real_chat.host.user.run_command("qwen_chat")
    chat = real_chat.host.wait_for(lambda: (c := real_chat.chat()) and c.core.state.session_id and c, timeout=WAIT)
    chat.core.option_setter.set_mode("auto-edit").result(timeout=WAIT)  # edits ask nothing
    real_chat.model.queue(
        Reply(text="First answer."),
        read_file(str(source)), edit(str(source), "alpha", "beta"), Reply(text="Changed it."),
        Reply(text="Noted the rewind."))
    for number, prompt in enumerate(["PROMPT-ONE", "PROMPT-TWO"], start=1):
        real_chat.send(prompt)
        assert real_chat.ended(number)[-1] == "end_turn"
    assert source.read_text() == "beta\n"

    rewind = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"].rewind
    window = real_chat.host.window
    outcome = real_chat.host.run_on_main(lambda: rewind(window, chat, 1, None, True, "files")).result(timeout=WAIT)
    assert outcome.files_restored == [str(source)] and source.read_text() == "alpha\n"
    assert chat.core.prompts.texts() == ["PROMPT-ONE", "PROMPT-TWO"]

    real_chat.send("PROMPT-THREE")
    assert real_chat.ended(3)[-1] == "end_turn"
    prompts = user_texts(real_chat.model.agent_requests[-1])
    assert any("PROMPT-ONE" in text for text in prompts) and any("PROMPT-TWO" in text for text in prompts)
    assert prompts[-1].endswith("PROMPT-THREE") and "put these files back" in prompts[-1] and str(source) in prompts[-1]
    transcript = real_chat.transcript()
    assert "Changed it." in transcript and "Files put back to before prompt 2" in transcript
