"""The chat against the real `qwen --acp` (0.24.4) and the fake model: the
built package in the simulated editor (and, for a restart, the headless
driver in two processes one after the other)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.rig.fake_model import FakeModel, Reply, user_texts
from tests.rig.qwen_cli import QwenCli
from tests.support.desktop import DesktopTools
from tests.support.editor import PACKAGE, Editor, drawn_transcript, open_editor
from tests.support.headless import HeadlessSublime
from tests.support.processes import alive

pytestmark = pytest.mark.e2e
WAIT = 90.0


def request_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []))


class RealChat:
    def __init__(self, editor: Editor, model: FakeModel) -> None:
        self.editor, self.host, self.model = editor, editor.host, model
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.chats.observers.append(lambda event, details: self.events.append((event, details)))

    @property
    def chats(self) -> Any:
        return sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats

    def chat(self) -> Any:
        return self.chats.get(self.host.window)

    def send(self, text: str) -> None:
        self.host.user.run_command("qwen_chat")
        self.host.wait_idle()
        composer = self.chat().composer_view
        self.host.user.type(composer, text)
        self.host.user.press_key("enter")

    def ended(self, count: int = 1) -> list[str]:
        self.host.wait_for(lambda: len(self.ended_so_far()) >= count, timeout=WAIT)
        return self.ended_so_far()

    def ended_so_far(self) -> list[str]:
        return [d["stopReason"] for e, d in self.events if e == "chat_turn_ended"]

    def transcript(self) -> str:
        return drawn_transcript(self.host, self.chat(), self.editor.text, WAIT)


@pytest.fixture
def real_env(monkeypatch: pytest.MonkeyPatch, qwen_env: dict[str, str], qwen_cli: QwenCli,
             desktop_tools: DesktopTools) -> dict[str, str]:
    """The package starts qwen with Sublime's environment: make it the CLI's
    (the notification tools' stand-ins still first on PATH)."""
    for key, value in qwen_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{desktop_tools.folder}{os.pathsep}{qwen_env['PATH']}")
    monkeypatch.delenv("QWEN_HOME", raising=False)
    return qwen_env


@pytest.fixture
def real_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_env: dict[str, str], qwen_cli: QwenCli,
              fake_model: FakeModel, workspace: Path) -> Iterator[RealChat]:
    with open_editor(tmp_path, monkeypatch, home=Path(real_env["HOME"]), workspace=workspace, load=False) as editor:
        monkeypatch.delenv("QWEN_HOME", raising=False)
        editor.load([workspace], {"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)]})
        yield RealChat(editor, fake_model)


def test_a_streamed_answer_appears_in_the_transcript(real_chat: RealChat) -> None:
    answer = "First paragraph of the answer.\n\n" + "Streamed in many small pieces. " * 40
    real_chat.model.queue(Reply(text=answer, chunk_size=7))
    real_chat.send("Say something long")
    assert real_chat.ended() == ["end_turn"]
    text = real_chat.transcript()
    assert "## You\n\nSay something long" in text
    assert answer.strip() in text
    state = real_chat.chat().core.state
    assert state.session_id and state.mode_id == "default"
    assert state.model_id and "fake-model" in state.model_id
    assert len(state.commands) > 10  # the CLI's slash commands


def test_the_editor_context_reaches_the_model(real_chat: RealChat, workspace: Path) -> None:
    source = workspace / "calc.py"
    source.write_text("def add(a, b):\n    return a + b\n\n\ndef unused_marker_fn():\n    pass\n")
    view = real_chat.host.user.open_file(source)
    region = real_chat.host.sublime.Region(0, len("def add(a, b):\n    return a + b"))
    real_chat.host.user.set_selection(view, [region])
    real_chat.send("What does the selected code do?")
    assert real_chat.ended() == ["end_turn"]
    body = request_text(real_chat.model.agent_requests[-1])
    assert "What does the selected code do?" in body
    assert "return a + b" in body  # the selection, embedded
    assert "calc.py" in body  # the active file, linked


def test_cancel_mid_stream_ends_the_turn_cancelled(real_chat: RealChat) -> None:
    real_chat.model.queue(Reply(text="slow words " * 400, chunk_size=5, delay=0.05))
    real_chat.send("Write slowly")
    real_chat.host.wait_for(lambda: "slow words" in real_chat.chat().core.streamer.transcript.text(), timeout=WAIT)
    real_chat.host.user.press_key("escape")
    assert real_chat.ended() == ["cancelled"]
    assert "> cancelled" in real_chat.transcript()
    real_chat.model.queue("Still here.")
    real_chat.send("Are you there?")
    assert real_chat.ended(2)[-1] == "end_turn"
    assert "Still here." in real_chat.transcript()


def test_set_mode_and_set_model_take_effect(real_chat: RealChat) -> None:
    real_chat.send("hello")
    real_chat.ended()
    chat = real_chat.chat().core
    chat.option_setter.set_mode("plan").result(WAIT)
    assert chat.state.mode_id == "plan"
    model_id = chat.state.models[0].id
    chat.option_setter.set_model(model_id).result(WAIT)
    assert chat.state.model_id == model_id
    real_chat.send("/status")
    assert "Mode: Plan" in real_chat.host.wait_for(lambda: "Mode:" in real_chat.transcript() and real_chat.transcript(),
                                                  timeout=WAIT)
    real_chat.model.queue("Planned.")
    real_chat.send("make a plan")
    real_chat.ended(2)
    body = request_text(real_chat.model.agent_requests[-1])
    assert "plan mode" in body.lower()  # the CLI tells the model it is in plan mode
    chat.option_setter.set_model("fake-model").result(WAIT)  # a short name: the CLI refuses it
    assert chat.state.model_id == model_id
    # qwen offers its model as a config option: the chat sets it through session/set_config_option
    assert any(e == "chat_error" and "set_config_option" in d["message"] for e, d in real_chat.events)


def test_a_killed_agent_is_restarted_by_the_next_prompt(real_chat: RealChat) -> None:
    real_chat.model.queue("Before the kill.")
    real_chat.send("one")
    real_chat.ended()
    chat = real_chat.chat().core
    pid, session = chat.pid, chat.state.session_id
    os.killpg(pid, signal.SIGKILL)
    real_chat.host.wait_for(lambda: chat.state.agent_status == "exited", timeout=WAIT)
    # The chat's state changes on the agent's thread; its line reaches the transcript on the main thread after.
    real_chat.host.wait_for(lambda: "The agent exited" in real_chat.transcript(), timeout=WAIT)
    real_chat.model.queue("After the restart.")
    real_chat.send("two")
    assert real_chat.ended(2)[-1] == "end_turn"
    assert chat.pid != pid and chat.state.session_id == session
    text = real_chat.transcript()
    assert "Before the kill." in text and "After the restart." in text
    assert "one" in user_texts(real_chat.model.agent_requests[-1])[0] or "one" in request_text(real_chat.model.agent_requests[-1])


def test_closing_the_window_leaves_no_qwen_process(real_chat: RealChat) -> None:
    real_chat.send("hello")
    real_chat.ended()
    pid = real_chat.chat().core.pid
    children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    real_chat.host.user.close_window(real_chat.host.window)
    real_chat.host.wait_for(lambda: not alive(pid) and not any(alive(c) for c in children), timeout=WAIT)


def test_the_session_survives_a_sublime_restart(tmp_path: Path, real_env: dict[str, str], qwen_cli: QwenCli,
                                               fake_model: FakeModel, workspace: Path) -> None:
    home = Path(real_env["HOME"])
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True, exist_ok=True)
    (user / "QwenCompanion.sublime-settings").write_text(
        json.dumps({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)]}))
    fake_model.queue("The secret word is mango.")
    editor = HeadlessSublime(workspace, home)
    try:
        editor.do("chat", text="Remember a word")
        assert editor.wait_event(lambda e: e.get("event") == "chat_turn_ended", timeout=WAIT)["stopReason"] == "end_turn"
        before = editor.do("chat_text")
        pid = before["pid"]
        assert editor.quit()["ok"]
    finally:
        editor.kill()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)

    fake_model.queue("You told me mango.")
    again = HeadlessSublime(workspace, home)
    try:
        again.do("chat", text="What was the word?")
        assert again.wait_event(lambda e: e.get("event") == "chat_turn_ended", timeout=WAIT)["stopReason"] == "end_turn"
        after = again.do("chat_text")
        assert after["session"] == before["session"]
        text = after["text"]
        assert text.index("Remember a word") < text.index("The secret word is mango.") < text.index("You told me mango.")
        # The model saw the earlier turn: the conversation continued.
        assert "The secret word is mango." in request_text(fake_model.agent_requests[-1])
        assert again.quit()["ok"]
    finally:
        again.kill()
