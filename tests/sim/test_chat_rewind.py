"""Rewind to Here and Edit and Resend, in the simulated editor with the BUILT
package and the scripted ACP agent posing as qwen (its `rewindSession` and
rewind snapshots answer as qwen 0.24.4's do): the conversation, the
transcript and the files the agent changed since go back; a running turn,
another agent, a file the user changed since and an unsaved buffer are
never run over."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import request, wait_answers
from tests.sublime_sim._constants import DialogResult
from tests.support.editor import PACKAGE

CRLF_BOM = b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n"
LATIN = "café\nligne 2\n".encode("latin-1")
QWEN = {"agent_name": "qwen-code"}


def rewind(rig: ChatRig, turn: int, text: str | None = None) -> Any:
    """What the headless driver's chat_rewind does: the outcome (or the refusal raised)."""
    module = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"]
    window, chat = rig.host.window, rig.chat()
    future = rig.host.run_on_main(lambda: module.rewind(window, chat, turn, text))
    return future.result(timeout=WAIT)


def three_turns(rig: ChatRig, *, open_file: bool = False) -> tuple[Path, Path, Path, Any]:
    """Prompt 0 changes nothing; prompt 1 rewrites a CRLF+BOM file and a Latin-1
    file; prompt 2 rewrites the Latin-1 file again and makes a new file."""
    workspace = rig.editor.workspace
    crlf, latin, made = workspace / "win.txt", workspace / "latin.txt", workspace / "made.txt"
    crlf.write_bytes(CRLF_BOM)
    latin.write_bytes(LATIN)
    rig.script_extras.update(QWEN)
    rig.load([[{"chunks": ["first answer"]}],
              [request("fs/read_text_file", path=str(crlf)), request("fs/read_text_file", path=str(latin)),
               request("fs/write_text_file", path=str(crlf), content="one\nTWO\nthree\n"),
               request("fs/write_text_file", path=str(latin), content="café\n"), {"chunks": ["second answer"]}],
              [request("fs/write_text_file", path=str(latin), content="again\n"),
               request("fs/write_text_file", path=str(made), content="new\n"), {"chunks": ["third answer"]}]])
    view = rig.host.user.open_file(crlf) if open_file else None
    for number, prompt in enumerate(["PROMPT-ONE", "PROMPT-TWO", "PROMPT-THREE"], start=1):
        rig.send(prompt)
        assert rig.ended(number)[-1] == "end_turn"
    assert wait_answers(rig, "fs/write_text_file", 4) == [None] * 4
    rig.host.wait_for(lambda: len([e for e, _ in rig.events if e == "turn_changes"]) >= 2, timeout=WAIT)
    assert made.read_bytes() == b"new\n" and latin.read_bytes() == b"again\n"
    return crlf, latin, made, view


def second_turn_running(rig: ChatRig) -> None:
    """qwen answered "one"; its turn for "two" runs (it never ends by itself)."""
    rig.script_extras.update(QWEN)
    rig.load([[{"chunks": ["first"]}], [{"stall": 30}]])
    rig.send("one")
    rig.ended(1)
    rig.send("two")
    rig.host.wait_for(lambda: rig.chat().core.state.agent_status == "busy", timeout=WAIT)


def agent_history(rig: ChatRig) -> list[str]:
    """The prompts the agent's session holds (what a model would see)."""
    session = rig.chat().core.state.session_id
    entries = json.loads((rig.tmp / "agent-state" / f"{session}.json").read_text())
    return [entry["text"] for entry in entries if entry["role"] == "user"]


def test_edit_and_resend_replaces_the_turn_and_restores_its_files_byte_exact(rig: ChatRig) -> None:
    crlf, latin, made, _ = three_turns(rig)
    outcome = rewind(rig, 1, "PROMPT-EDITED")
    assert sorted(outcome.files_restored) == sorted([str(crlf), str(latin), str(made)])
    assert outcome.not_restored == []
    assert crlf.read_bytes() == CRLF_BOM and latin.read_bytes() == LATIN and not made.exists()
    (asked,) = [m["params"] for m in rig.received("rewindSession")]
    assert asked == {"sessionId": rig.chat().core.state.session_id, "targetTurnIndex": 1, "rewindFiles": False}
    assert rig.ended(4)[-1] == "end_turn"
    assert agent_history(rig) == ["PROMPT-ONE", "PROMPT-EDITED"]
    transcript = rig.transcript()
    assert "PROMPT-ONE" in transcript and "first answer" in transcript and "PROMPT-EDITED" in transcript
    assert "PROMPT-TWO" not in transcript and "second answer" not in transcript and "PROMPT-THREE" not in transcript
    assert rig.chat().core.prompts.texts() == ["PROMPT-ONE", "PROMPT-EDITED"]


def test_rewind_to_here_drops_the_prompt_and_sends_nothing(rig: ChatRig) -> None:
    _, latin, _, _ = three_turns(rig)
    outcome = rewind(rig, 2)
    assert outcome.files_restored == [str(latin), str(rig.editor.workspace / "made.txt")]
    assert latin.read_bytes() == "café\n".encode("latin-1")  # as prompt 1 left it
    assert agent_history(rig) == ["PROMPT-ONE", "PROMPT-TWO"]
    rig.host.wait_for(lambda: "Rewound to before prompt 3" in rig.transcript(), timeout=WAIT)
    assert "PROMPT-THREE" not in rig.transcript() and "second answer" in rig.transcript()
    assert len(rig.received("session/prompt")) == 3


def test_the_rewound_turns_files_are_no_longer_offered_for_review(rig: ChatRig) -> None:
    """Defect guarded: after a rewind, the rewound turns' files were still
    offered for review: Turn Changes listed them as changed, and a file opened
    again diffed against a checkpoint of a turn that no longer exists."""
    _, latin, made, _ = three_turns(rig)
    turns = rig.chat().request_handler().files.turns
    rewound = turns.last_changed_turn()
    assert rewound is not None and str(made) in turns.paths(rewound)
    assert turns.pending(str(made)) is not None  # offered for review before the rewind
    rewind(rig, 2)
    assert {f.path: f.state for f in turns.files(rewound)} == {str(latin): "reverted", str(made): "reverted"}
    assert turns.pending(str(latin)) is None and turns.pending(str(made)) is None
    assert [f.state for f in turns.files(rewound - 1)] == ["changed", "changed"]  # the turn kept stays offered


def test_a_rewind_while_a_turn_runs_is_refused_and_nothing_is_asked(rig: ChatRig) -> None:
    second_turn_running(rig)
    with pytest.raises(Exception, match="a turn is running"):
        rewind(rig, 0)
    assert rig.received("rewindSession") == []
    assert rig.chat().core.prompts.texts() == ["one", "two"]


def test_another_agent_is_never_sent_qwens_method(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["first"]}]])
    rig.send("one")
    rig.ended(1)
    with pytest.raises(Exception, match="cannot rewind a conversation"):
        rewind(rig, 0)
    assert rig.received("rewindSession") == [] and rig.received("qwen/status/session/rewind_snapshots") == []


def test_an_open_buffer_gets_its_text_back_in_one_undo_step_and_keeps_the_users_edit(rig: ChatRig) -> None:
    _, _, _, view = three_turns(rig, open_file=True)
    assert rig.editor.text(view) == "one\nTWO\nthree\n"
    rig.host.user.click(view, 0)
    rig.host.user.type(view, "mine ")  # unsaved
    rewind(rig, 1)
    rig.host.wait_idle()
    assert rig.editor.text(view) == "one\ntwo\nthree\n" and view.is_dirty()  # not saved over the user's edit
    rig.host.run_on_main(lambda: view.run_command("undo"))
    assert rig.editor.text(view) == "mine one\nTWO\nthree\n"  # the user's edit, one undo step away


def test_rewind_never_saves_over_a_line_the_user_saved_since(rig: ChatRig) -> None:
    """Finding 4 for Rewind: the user adds a line to the agent's file and saves."""
    crlf, _, _, view = three_turns(rig, open_file=True)
    rig.host.user.click(view, 0)
    rig.host.user.type(view, "the user's line\n")
    rig.host.user.save(view)
    saved = crlf.read_bytes()
    outcome = rewind(rig, 1)
    rig.host.wait_idle()
    assert crlf.read_bytes() == saved and rig.editor.text(view).startswith("the user's line\n")
    assert str(crlf) not in outcome.files_restored
    assert any(str(crlf) in why and "changed since the agent wrote it" in why for why in outcome.not_restored)


def test_a_file_changed_after_the_agent_is_never_overwritten(rig: ChatRig) -> None:
    _, latin, _, _ = three_turns(rig)
    latin.write_bytes(b"the user's own\n")
    outcome = rewind(rig, 1)
    assert latin.read_bytes() == b"the user's own\n"
    assert str(latin) not in outcome.files_restored
    assert any("changed since the agent wrote it" in why for why in outcome.not_restored)


def test_edit_and_resend_from_the_transcript_puts_the_prompt_in_the_composer(rig: ChatRig) -> None:
    crlf, _, _, _ = three_turns(rig)
    transcript, composer = rig.open()
    point = rig.transcript().index("PROMPT-TWO")
    rig.host.user.click(transcript, point)
    rig.host.user.run_command("qwen_chat_edit_prompt")
    rig.host.wait_idle()
    assert rig.editor.text(composer) == "PROMPT-TWO"
    rig.host.user.type(composer, " again")
    rig.host.user.press_key("enter")
    assert rig.ended(4)[-1] == "end_turn"
    assert agent_history(rig) == ["PROMPT-ONE", "PROMPT-TWO again"]
    assert crlf.read_bytes() == CRLF_BOM


def test_a_reloaded_conversation_lets_qwen_restore_the_files_it_tracked_if_the_user_agrees(rig: ChatRig) -> None:
    tracked = str(rig.editor.workspace / "tracked.txt")
    rig.script_extras.update({**QWEN, "rewind_files": [tracked]})
    rig.load([[{"chunks": ["first"]}], [{"chunks": ["second"]}], [{"chunks": ["third"]}]])
    for number, prompt in enumerate(["one", "two", "three"], start=1):
        rig.send(prompt)
        rig.ended(number)
    rig.chat().core.sessions.restart().result(timeout=WAIT)  # the package's record of those turns is gone
    assert rig.chat().core.prompts.texts() == ["one", "two", "three"]
    session = rig.chat().core.state.session_id
    rig.host.answers.push("yes_no_cancel", DialogResult.NO)  # asked first: qwen's history writes over changes since
    rig.host.user.run_command("qwen_chat_rewind", {"turn": 2})
    rig.host.wait_for(lambda: rig.received("rewindSession"), timeout=WAIT)
    assert rig.received("rewindSession")[-1]["params"] == {"sessionId": session, "targetTurnIndex": 2,
                                                          "rewindFiles": False}
    assert "writes them on disk over any change made since" in rig.host.dialogs[-1].message
    rig.host.wait_for(lambda: "Rewound to before prompt 3" in rig.transcript(), timeout=WAIT)
    outcome = rewind(rig, 1)  # as the headless driver does: qwen's default, files restored
    assert rig.received("rewindSession")[-1]["params"] == {"sessionId": session, "rewindFiles": True,
                                                          "promptId": f"{session}########2"}
    assert outcome.files_restored == [tracked]
    rig.send("again")
    rig.ended(4)
    rewind(rig, 1)  # a prompt sent since is in the package's record: by index, no file asked of qwen
    assert rig.received("rewindSession")[-1]["params"] == {"sessionId": session, "targetTurnIndex": 1,
                                                          "rewindFiles": False}


def test_cancelling_the_rewind_dialog_leaves_the_chat_and_the_edited_prompt_as_they_were(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["first"]}], [{"chunks": ["second"]}]])
    for number, prompt in enumerate(["one", "two"], start=1):
        rig.send(prompt)
        rig.ended(number)
    rig.chat().core.sessions.restart().result(timeout=WAIT)  # no record of those turns: the dialog asks
    _, composer = rig.open()
    transcript_before = rig.transcript()
    rig.host.answers.push("yes_no_cancel", DialogResult.CANCEL)  # Cancel, or the dialog closed
    rig.host.user.run_command("qwen_chat_rewind", {"turn": 0, "text": "one, edited"})
    rig.host.wait_idle()
    assert not rig.received("rewindSession")
    assert rig.chat().core.prompts.texts() == ["one", "two"]
    assert rig.transcript() == transcript_before
    assert rig.editor.text(composer) == "one, edited"  # the edited prompt is not lost
    assert rig.host.dialogs[-1].kind == "yes_no_cancel"  # two real choices and Cancel


def test_rewind_to_here_from_the_transcripts_context_menu_acts_on_the_prompt_under_the_mouse(rig: ChatRig) -> None:
    _, latin, made, _ = three_turns(rig)
    transcript, composer = rig.open()
    rig.host.user.type(composer, "a draft")
    under_mouse = transcript.text_to_window(rig.transcript().index("PROMPT-THREE") + 3)
    menu = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"].QwenChatPromptMenuCommand
    assert rig.host.run_on_main(lambda: menu(transcript).is_visible())
    code = rig.host.user.open_file(latin)
    assert not rig.host.run_on_main(lambda: menu(code).is_visible())  # only on the transcript
    first = rig.chat()
    rig.host.run_on_main(lambda: rig.host.window.run_command("qwen_chat_new"))
    rig.host.wait_idle()
    assert rig.chat() is not first  # the menu acts on its transcript's chat, not on the active one
    event = {"x": under_mouse[0], "y": under_mouse[1]}
    rig.host.run_on_main(lambda: transcript.run_command("qwen_chat_prompt_menu", {"resend": False, "event": event}))
    rig.host.user.choose_quick_panel("Rewind Files and Conversation")  # the first of three choices
    rig.host.wait_for(lambda: "Rewound to before prompt 3" in first.core.streamer.transcript.text(), timeout=WAIT)
    tabs = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_tabs"]
    rig.host.run_on_main(lambda: tabs.select_chat(rig.host.window, first))
    assert "PROMPT-THREE" not in rig.transcript() and not made.exists()
    assert rig.editor.text(composer) == "a draft"  # Rewind to Here leaves the composer alone
    assert agent_history(rig) == ["PROMPT-ONE", "PROMPT-TWO"]


def test_a_prompt_sent_while_a_rewind_runs_waits_for_it_and_a_second_rewind_is_refused(rig: ChatRig) -> None:
    rig.script_extras.update({**QWEN, "rewind_delay": 1.0})
    rig.load([[{"chunks": ["first"]}], [{"chunks": ["second"]}], [{"chunks": ["third"]}]])
    for number, prompt in enumerate(["one", "two"], start=1):
        rig.send(prompt)
        rig.ended(number)
    module = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"]
    window, chat = rig.host.window, rig.chat()
    running = rig.host.run_on_main(lambda: module.rewind(window, chat, 1, None))
    rig.host.wait_for(lambda: rig.received("rewindSession"), timeout=WAIT)
    rig.send("three")  # while qwen rewinds
    with pytest.raises(Exception, match="a rewind is running already"):
        rewind(rig, 0)
    running.result(timeout=WAIT)
    assert rig.ended(3)[-1] == "end_turn"
    assert agent_history(rig) == ["one", "three"] and chat.core.prompts.texts() == ["one", "three"]


def test_an_edited_prompt_refused_while_a_turn_runs_comes_back_to_the_composer(rig: ChatRig) -> None:
    second_turn_running(rig)
    transcript, composer = rig.open()
    rig.host.user.click(transcript, rig.transcript().index("one"))
    rig.host.user.run_command("qwen_chat_edit_prompt")
    rig.host.wait_idle()
    rig.host.user.type(composer, ", edited")
    rig.host.user.press_key("enter")
    rig.host.wait_for(lambda: rig.editor.text(composer) == "one, edited", timeout=WAIT)  # not lost
    assert rig.received("rewindSession") == [] and rig.chat().core.prompts.texts() == ["one", "two"]


def test_a_refused_edit_and_resend_keeps_the_draft_typed_meanwhile(rig: ChatRig) -> None:
    """Defect guarded: an Edit and Resend refused (a turn ran) put the edited
    prompt into the composer over the draft the user had typed since; the
    draft, sent, must not replace the edited prompt either."""
    second_turn_running(rig)
    _, composer = rig.open()
    rig.host.user.focus(composer)
    rig.host.user.type(composer, "my draft")  # typed after pressing Enter on the edited prompt
    with pytest.raises(Exception, match="a turn is running"):
        rewind(rig, 0, "one, edited")
    rig.host.wait_for(lambda: any("cannot rewind" in m for m in rig.host.status_messages), timeout=WAIT)
    rig.host.wait_idle()
    assert rig.editor.text(composer) == "my draft"
    module = sys.modules[f"{PACKAGE}.plugin.chat.prompts.prompt_edits"]
    assert rig.host.run_on_main(lambda: module.take(rig.chat())) is None  # the draft edits no prompt


def test_an_edit_of_a_prompt_gone_since_is_sent_as_a_prompt_of_its_own_next_time(rig: ChatRig) -> None:
    rig.script_extras.update(QWEN)
    rig.load([[{"chunks": ["first"]}]])
    rig.send("one")
    rig.ended(1)
    transcript, composer = rig.open()
    rig.host.user.click(transcript, rig.transcript().index("one"))
    rig.host.user.run_command("qwen_chat_edit_prompt")
    rig.chat().core.sessions.new_session().result(timeout=WAIT)  # /clear: prompt 0 is gone
    rig.host.user.focus(composer)
    rig.host.user.press_key("enter")
    rig.host.wait_for(lambda: rig.editor.text(composer) == "one", timeout=WAIT)  # refused: the text is kept
    rig.host.user.press_key("enter")
    assert rig.ended(2)[-1] == "end_turn"  # sent as a new prompt, not refused again
    assert rig.received("rewindSession") == [] and rig.chat().core.prompts.texts() == ["one"]


def test_rewind_files_only_from_the_menu_keeps_the_conversation_and_tells_the_next_prompt(rig: ChatRig) -> None:
    _, latin, made, _ = three_turns(rig)
    transcript, _ = rig.open()
    point = transcript.text_to_window(rig.transcript().index("PROMPT-THREE") + 3)
    rig.host.run_on_main(lambda: transcript.run_command(
        "qwen_chat_prompt_menu", {"resend": False, "event": {"x": point[0], "y": point[1]}}))
    rig.host.user.choose_quick_panel("Rewind Files Only")
    rig.host.wait_for(lambda: "Files put back to before prompt 3" in rig.chat().core.streamer.transcript.text(),
                      timeout=WAIT)
    assert not made.exists() and latin.read_bytes() == "café\n".encode("latin-1")  # what prompt 2 left
    assert agent_history(rig) == ["PROMPT-ONE", "PROMPT-TWO", "PROMPT-THREE"]  # the conversation stays
    assert "PROMPT-THREE" in rig.transcript()
    rig.send("PROMPT-FOUR")
    rig.ended(4)
    told = agent_history(rig)[-1]
    assert told.endswith("PROMPT-FOUR") and str(made) in told and str(latin) in told and "put these files back" in told
    assert "put these files back" not in rig.transcript()  # the note is the model's, the transcript shows the prompt
