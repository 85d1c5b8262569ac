"""The first minutes of a new user whose qwen was never signed in: the chat and
a quick action each end in one message that says how to sign in (what the
real qwen 0.24.4 answers with a fresh HOME and no key is played by the fakes);
with no folder open, the chat says where qwen works and what to open, and a
quick action answers (it reads only the selection)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.sim.test_actions import FAKE_CLI, ActionRig
from tests.sim.test_chat import FAKE_AGENT, ChatRig
from tests.support.editor import open_editor

# qwen 0.24.4 `-p … --output-format stream-json` with no auth configured: exit 1 and this result error.
NO_AUTH_TYPE = ("No auth type is selected. Please configure an auth type (e.g. via settings or `--auth-type`) "
                "before running in non-interactive mode.")
SIGN_IN = "/auth"


def test_a_chat_before_signing_in_says_how_to_sign_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.24.4 --acp: session/new -32000 "Authentication required", authenticate("openai") -32603 without a key.
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"auth_required": True, "auth_fails": True, "agent_name": "qwen-code",
                                  "log": str(tmp_path / "agent-log.jsonl")}))
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ChatRig(editor, tmp_path)
        editor.load([editor.workspace], {"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)]})
        rig.watch()
        rig.send("hi")
        assert rig.ended() == ["error"]  # the turn ends: no view left waiting, no prompt without a session
        assert not rig.received("session/prompt")
        message = [details["message"] for event, details in rig.events if event == "chat_error"][-1]
        assert "not signed in" in message and SIGN_IN in message and "OPENAI_API_KEY" in message
        assert "Traceback" not in rig.transcript() and SIGN_IN in rig.transcript()
        assert rig.received("authenticate")  # it tried the agent's own method first
        rig.host.assert_no_errors()


def test_a_quick_action_before_signing_in_says_how_to_sign_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ActionRig(editor, tmp_path)
        rig.load([{"result": "error", "error": NO_AUTH_TYPE}])
        rig.open_area()
        rig.run("explain")
        assert rig.finished() == ["failed"]
        answer = rig.answer()
        assert NO_AUTH_TYPE in answer  # the CLI's own words, then what to do
        assert SIGN_IN in answer and "OPENAI_API_KEY" in answer
        assert "Traceback" not in answer
        rig.host.assert_no_errors()




def test_a_chat_with_no_folder_open_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"chunks": ["hello"]}]], "log": str(tmp_path / "agent-log.jsonl")}))
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ChatRig(editor, tmp_path)
        editor.load([], {"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)]})
        rig.watch()
        rig.send("hi")
        assert rig.ended() == ["end_turn"]
        assert "hello" in rig.transcript()
        [new] = rig.received("session/new")
        assert new["params"]["cwd"] == str(editor.root / "home")  # the home folder, as Open in Terminal
        assert any(f"qwen works in {editor.root / 'home'}" in message and "Open Folder" in message
                   for message in rig.host.status_messages)
        rig.host.assert_no_errors()


def test_a_quick_action_with_no_folder_open_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ActionRig(editor, tmp_path)
        rig.script.write_text(json.dumps({"steps": [{"text": "an answer"}], "log": str(rig.log)}))
        editor.load([], {"qwen_command": [sys.executable, str(FAKE_CLI), str(rig.script)]})
        rig.watch()
        rig.open_area()
        rig.run("explain")
        assert rig.finished() == ["answered"]
        assert "an answer" in rig.answer()
        rig.host.assert_no_errors()
