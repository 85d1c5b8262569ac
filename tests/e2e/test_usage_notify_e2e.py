"""Usage and notifications against the real `qwen --acp` (0.24.4) and the
fake model: a turn's tokens reach the status bar, the transcript's folded
line and the driver's `usage`; a permission asked while the chat's transcript
is hidden behind another tab notifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_chat_agent_e2e import answer, asked, option_of
from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, read_file, tool_call
from tests.rig.qwen_cli import make_home
from tests.support.desktop import DesktopTools

pytestmark = pytest.mark.e2e
CONTEXT_WINDOW = 32_768


@pytest.fixture
def qwen_home(tmp_path: Path) -> Path:
    """The rig's HOME with the model's context window set: qwen then sends `usage_update`."""
    return make_home(tmp_path, settings={"model": {"generationConfig": {"contextWindowSize": CONTEXT_WINDOW}}})


def test_usage_appears_after_a_turn(real_chat: RealChat, workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("alpha\n")
    real_chat.model.queue(Reply(text="", tool_calls=read_file(str(target)).tool_calls, usage=(1000, 40, 600)),
                          Reply(text="Read it.", usage=(1100, 25, 900)))
    real_chat.send("Read a.txt")
    assert real_chat.ended() == ["end_turn"]
    state = real_chat.chat().core.state
    report = state.usage.report()
    assert report["turn"] == {"inputTokens": 2100, "outputTokens": 65, "cachedTokens": 1500, "requests": 2}
    assert report["contextUsed"] == 1100  # the last request's prompt, from usage_update
    assert report["contextSize"] == CONTEXT_WINDOW
    text = real_chat.transcript()
    assert "> Tokens: 2,100 in (1,500 cached) · 65 out" in text
    view = real_chat.chat().transcript_view
    assert any("this turn:" in view.substr(fold) for fold in view.folded_regions())
    status = real_chat.host.window.active_view().get_status("qwen_chat")
    assert "2.1k in / 65 out" in status and "% context" in status

    real_chat.model.queue(Reply(text="Again.", usage=(1200, 5, 0)))
    real_chat.send("Once more")
    assert real_chat.ended(2) == ["end_turn", "end_turn"]
    report = state.usage.report()
    assert report["turn"]["inputTokens"] == 1200
    assert (report["inputTokens"], report["outputTokens"], report["cachedTokens"]) == (3300, 70, 1500)


def test_a_notification_fires_for_a_permission_while_the_chat_is_hidden(real_chat: RealChat,
                                                                      desktop_tools: DesktopTools) -> None:
    host = real_chat.host
    host.user.run_command("qwen_chat")
    host.wait_idle()
    chat = real_chat.chat()
    transcript = chat.transcript_view
    group, _ = host.window.get_view_index(transcript)
    host.user.focus_group(group)
    notes = real_chat.editor.open("notes.md", "notes\n")  # in front of the transcript
    assert host.window.active_view_in_group(group) == notes
    real_chat.model.queue(tool_call("run_shell_command", {"command": "echo hi > hi.txt", "description": "greet"}),
                          Reply(text="Ran it."))
    host.user.type(chat.composer_view, "Run the command")  # the composer, in its own group
    host.user.press_key("enter")
    event = asked(real_chat)[0]  # Default mode: the shell command asks
    note = host.wait_for(lambda: next((d for e, d in real_chat.events if e == "notification"), None), timeout=WAIT)
    assert note == {"window": host.window.id(), "chat": chat.chat_id, "kind": "permission",
                    "text": f"asks: {event['toolCall']['title']}"}
    assert transcript.name().startswith("● ")
    calls = host.wait_for(desktop_tools.calls, timeout=WAIT)
    assert calls == [{"tool": "notify-send", "env": {}, "argv": [  # the body is markup: the agent's ">" as text
        "--app-name=Sublime Text", "--", "Qwen Code", note["text"].replace(">", "&gt;")]}]
    answer(real_chat, option_of(event, "allow_once"))
    assert real_chat.ended() == ["end_turn"]
