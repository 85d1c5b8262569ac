"""A new user's first prompt with the real `qwen --acp` (0.24.4) installed but
never signed in (a HOME of its own, no key in the environment): the chat says
once how to sign in, in the CLI's own terms, stops with that reason, and the
prompt is back in the composer to send again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.rig.qwen_cli import QwenCli, cli_env, default_settings
from tests.support.editor import PACKAGE, open_editor

pytestmark = pytest.mark.e2e
WAIT = 90.0
PROMPT = "explain this project"


def test_a_first_prompt_before_signing_in_comes_back_with_the_way_to_sign_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qwen_cli: QwenCli, workspace: Path) -> None:
    home = tmp_path / "home"
    settings = default_settings()
    del settings["security"]["auth"]  # as installed: no way of signing in chosen yet
    (home / ".qwen").mkdir(parents=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
    env = cli_env(qwen_cli, home, "http://127.0.0.1:9")
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        env.pop(key)
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("QWEN_HOME", raising=False)
    with open_editor(tmp_path, monkeypatch, home=home, workspace=workspace, load=False) as editor:
        editor.load([workspace], {"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)]})
        events: list[tuple[str, dict[str, Any]]] = []
        chats = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats
        chats.observers.append(lambda event, details: events.append((event, details)))
        host = editor.host
        host.user.run_command("qwen_chat")
        host.wait_idle()
        chat = chats.get(host.window)
        host.user.type(chat.composer_view, PROMPT)
        host.user.press_key("enter")
        host.wait_for(lambda: any(event == "chat_turn_ended" for event, _ in events), timeout=WAIT)
        assert host.wait_for(lambda: editor.text(chat.composer_view), timeout=WAIT) == PROMPT
        [message] = [details["message"] for event, details in events if event == "chat_error"]
        assert "not signed in" in message and "`qwen`" in message and "/auth" in message
        assert "OPENAI_API_KEY" in message  # the CLI's own reason (its data.details) and the hint both name it
        state = chat.core.state
        assert (state.agent_status, state.stopped_why) == ("stopped", "not signed in")
        transcript = editor.text(chat.transcript_view)
        assert transcript.count(message) == 1 and PROMPT not in transcript
        assert os.environ.get("OPENAI_API_KEY") is None
        host.assert_no_errors()
