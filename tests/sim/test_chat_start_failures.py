"""When the agent cannot start, as a new user meets it (the simulated editor,
the BUILT package, the scripted agent for the faults): the prompt sent is
given back in the composer, the reason is said once (however often the
start is tried), and the chat's state says it stopped and why. Every fault
before a turn starts goes this way: no agent on the PATH, an agent that
exits, one that never answers, one that refuses the session, one not signed
in, and a qwen serve daemon that will not start."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.support.editor import PACKAGE, open_editor

PROMPT = "please refactor the parser"


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ChatRig(editor, tmp_path)


def scripted(rig: ChatRig, **script: Any) -> dict[str, Any]:
    path = rig.tmp / "script.json"
    path.write_text(json.dumps({"log": str(rig.log), **script}))
    return {"qwen_command": [sys.executable, str(FAKE_AGENT), str(path)]}


def start_timeout(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.core.chat.agent.agent_connection"], "START_TIMEOUT", seconds)


FAULTS: dict[str, tuple[Any, str, str]] = {
    # fault: (settings for the rig, the chat's stopped reason, words of the message said)
    "no qwen on the PATH": (lambda rig: {}, "agent not found", "was not found on the PATH"),
    "an agent that exits": (lambda rig: scripted(rig, exit_on_start=3), "could not start", "could not start the agent"),
    "an agent that never answers": (lambda rig: scripted(rig, start_gate=str(rig.tmp / "never")), "could not start",
                                    "did not answer within 0.5 s"),
    "a refused session": (lambda rig: scripted(rig, refuse_session="cwd is not a folder"), "could not start",
                          "cwd is not a folder"),
    "not signed in": (lambda rig: scripted(rig, auth_required=True, auth_fails=True, agent_name="qwen-code"),
                      "not signed in", "/auth"),
    "a daemon that will not start": (lambda rig: {**scripted(rig, exit_on_start=3), "chat_transport": "serve"},
                                     "could not start", "daemon"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_prompt_the_agent_could_not_take_comes_back_and_the_reason_is_said_once(
        rig: ChatRig, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    settings, why, said = FAULTS[fault]
    rig.editor.load([rig.editor.workspace], settings(rig))
    if fault == "an agent that never answers":
        start_timeout(monkeypatch, 0.5)
    rig.watch()
    rig.send(PROMPT)  # opening the chat starts the agent (and fails); the prompt tries again
    assert rig.ended() == ["error"]
    chat = rig.chat()
    transcript, composer = chat.transcript_view, chat.composer_view
    assert rig.host.wait_for(lambda: rig.editor.text(composer), timeout=WAIT) == PROMPT  # typed once, not lost
    assert ("chat_not_sent", {"window": rig.host.window.id(), "chat": chat.chat_id, "prompts": [PROMPT]}) in rig.events
    errors = [details["message"] for event, details in rig.events if event == "chat_error"]
    assert len(errors) == 1 and said in errors[0]
    text = rig.transcript()
    assert text.count(errors[0]) == 1 and "back in the composer" in text and PROMPT not in text
    state = chat.core.state
    assert (state.agent_status, state.stopped_why) == ("stopped", why)
    assert f"stopped ({why})" in (transcript.get_status("qwen_chat") or "")
    assert any(f"not sent ({why})" in message for message in rig.host.status_messages)
    rig.host.assert_no_errors()
