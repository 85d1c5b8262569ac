"""Remember… against the real `qwen --acp` (0.24.4) with its managed memory
on (the rig's HOME turns it off elsewhere): qwen's own memory agent (here the
fake model, asking for one write_file) writes the note into qwen's managed
memory folder, and the chat says so."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat, request_text
from tests.rig.fake_model import Reply, ToolCall, tool_results
from tests.rig.qwen_cli import make_home
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e
NOTE = "the tests run with make test-all"


@pytest.fixture
def qwen_home(tmp_path: Path) -> Path:
    return make_home(tmp_path, settings={"memory": {"enableManagedAutoMemory": True}})


def test_remember_writes_qwens_managed_memory(real_chat: RealChat) -> None:
    real_chat.send("hello")
    assert real_chat.ended() == ["end_turn"]
    chat = real_chat.chat()
    memory = sys.modules[f"{PACKAGE}.core.chat.offers.memory"]
    folder = dict(chat.core.calls.ask_qwen("Open Memory Files", memory.memory_paths).result(WAIT))[
        "qwen's managed memory folder"]
    entry = Path(folder) / "testing.md"

    def remember_agent(body: dict[str, Any]) -> Reply | None:
        if NOTE not in request_text(body) or "hello" in request_text(body):
            return None
        if tool_results(body):
            return Reply(text="Saved.")
        content = f"---\nname: testing\ndescription: how the tests run\ntype: project\n---\n\n{NOTE}\n"
        return Reply(tool_calls=[ToolCall("write_file", {"file_path": str(entry), "content": content})])

    real_chat.model.set_responder(remember_agent)
    window = real_chat.host.window
    offers = sys.modules[f"{PACKAGE}.plugin.chat.offers.memory_commands"]
    change = real_chat.host.run_on_main(lambda: offers.change_memory(window, chat, "remember", NOTE)).result(WAIT * 2)
    assert change.items == [str(entry)] and NOTE in entry.read_text()
    real_chat.host.wait_for(lambda: f"Memory (remember): {change.summary}" in real_chat.transcript(), timeout=WAIT)
