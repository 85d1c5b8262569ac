"""End to end: the chat runs the real gemini-cli (`chat_agent: "gemini"`: its
`gemini_command` with `--acp`, gemini-cli 0.61.0) in the headless driver,
with a scripted Gemini-API model (tests/rig/fake_gemini_model.py) that asks
for one `write_file` and then answers "done": the prompt goes out, gemini's
permission request is answered in the editor, its write comes through the
editor's `fs/write_text_file`, and its answer streams into the transcript."""

from __future__ import annotations

import json
from pathlib import Path

from tests.rig.fake_gemini_model import FakeGeminiModel
from tests.rig.gemini_cli import GeminiCli, make_gemini_home
from tests.support.editor import require_built
from tests.support.headless import HeadlessSublime


def test_a_chat_with_gemini_asks_permission_writes_through_the_editor_and_streams(
    gemini: GeminiCli, tmp_path: Path
) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "project").resolve()
    workspace.mkdir(parents=True)
    target = workspace / "notes.txt"
    target.write_text("hello\n")
    with FakeGeminiModel(str(target), "bye\n") as model:
        user = home / ".config" / "sublime-text" / "Packages" / "User"
        user.mkdir(parents=True)
        (user / "QwenCompanion.sublime-settings").write_text(json.dumps({
            "gemini_command": [str(gemini.qwen.node), str(gemini.entry)],
            "chat_agent": "gemini",
            "chat_agents": {"gemini": {"env": {
                "HOME": str(make_gemini_home(tmp_path)),  # its settings: API-key sign-in, a fixed model
                "GEMINI_API_KEY": "rig-fake-key",
                "GOOGLE_GEMINI_BASE_URL": model.base_url,
                "GEMINI_CLI_NO_RELAUNCH": "true",
                "NO_PROXY": "127.0.0.1,localhost",
            }}},
        }))
        editor = HeadlessSublime(workspace, home)
        try:
            sent = editor.do("chat", text="change notes.txt")
            assert sent["ok"] and sent["agent"] == "gemini"
            asked = editor.wait_event(lambda e: e.get("event") == "permission_requested", timeout=90)
            assert asked["toolCall"]["kind"] == "edit"
            allow = next(o["optionId"] for o in asked["options"] if o["kind"] == "allow_once")
            assert editor.do("permission", option=allow)["ok"]
            ended = editor.wait_event(lambda e: e.get("event") == "chat_turn_ended", timeout=60)
            assert ended["stopReason"] == "end_turn"
            assert target.read_text() == "bye\n"
            shown = editor.do("chat_text")
            assert "done" in shown["text"] and shown["agent_name"] == "gemini"
            assert shown["mode"] == "default"  # gemini's own mode ids: default, autoEdit, yolo, plan
            [response] = [r for _, request in model.requests for r in model.function_responses(request)][-1:]
            assert response["name"] == "write_file"
            assert editor.quit()["ok"]
        finally:
            editor.kill()
