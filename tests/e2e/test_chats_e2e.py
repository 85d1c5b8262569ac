"""Several chats in one window against the real `qwen --acp` (0.24.4) and
the fake model: one agent process serves them, and what the model is asked
for one chat holds nothing of the other."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat, request_text
from tests.support.editor import PACKAGE
from tests.support.processes import alive, descendants

pytestmark = pytest.mark.e2e


def acp_agents(workspace: Path) -> list[int]:
    """The `qwen --acp` processes this test's editor started, in its workspace
    (not the node each of them runs its CLI in: cli-entry.js starts node
    again; nor an agent of another test of this worker, still being ended)."""
    found: dict[int, int] = {}  # pid -> parent
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except (OSError, ValueError, IndexError):
            continue
        if b"--acp" in argv and cwd.is_relative_to(workspace.resolve()):
            found[pid] = parent
    return [pid for pid, parent in found.items() if parent not in found]


def tabs() -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_tabs"]


def asked_about(real_chat: RealChat, words: str) -> list[str]:
    """What the model was asked in the agent turns whose prompt holds `words`."""
    texts = [request_text(body) for body in real_chat.model.agent_requests]
    return [text for text in texts if words in text]


def test_two_chats_in_one_window_keep_separate_histories_on_one_agent(real_chat: RealChat) -> None:
    real_chat.model.queue("Apples are crisp.")
    real_chat.send("Tell me about apples")
    assert real_chat.ended() == ["end_turn"]
    first = real_chat.chat()

    real_chat.host.user.run_command("qwen_chat_new")
    second = real_chat.host.wait_for(
        lambda: (chat := real_chat.chat()) is not first and chat.core.state.session_id and chat, timeout=WAIT)
    real_chat.model.queue("Pears are soft.")
    real_chat.send("Tell me about pears")
    assert real_chat.ended(2) == ["end_turn", "end_turn"]
    assert "Pears are soft." in real_chat.transcript() and "apples" not in real_chat.transcript()
    pears = asked_about(real_chat, "Tell me about pears")
    assert pears and not [text for text in pears if "apples" in text or "Apples are crisp" in text]

    real_chat.host.run_on_main(lambda: tabs().select_chat(real_chat.host.window, first))
    assert real_chat.chat() is first
    real_chat.model.queue("Red or green.")
    real_chat.send("What colour are they?")
    assert real_chat.ended(3)[-1] == "end_turn"
    colour = asked_about(real_chat, "What colour are they?")
    assert colour and "Tell me about apples" in colour[-1] and "pears" not in colour[-1].lower()

    pid = first.core.pid
    assert pid is not None and second.core.pid == pid
    assert first.core.state.session_id != second.core.state.session_id
    assert acp_agents(real_chat.editor.workspace) == [pid]  # one agent process for the window's two chats

    real_chat.host.user.run_command("qwen_chat_close")
    assert alive(pid) and real_chat.chat() is second
    real_chat.host.user.run_command("qwen_chat_close")
    real_chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    # Its whole process group was signalled; the node it re-runs the CLI in
    # may end a moment after it (seen once in a fresh-clone run).
    real_chat.host.wait_for(lambda: acp_agents(real_chat.editor.workspace) == [], timeout=WAIT)
