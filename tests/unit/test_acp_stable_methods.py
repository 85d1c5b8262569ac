"""ACP's stable session methods, sent only to an agent that announces them
(qwen 0.24.4 announces none: it is sent nothing new), against the scripted
ACP agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_agent_connection import SharedRig
from tests.unit.test_chat_core import WAIT, Rig, wait_for

# qwen 0.24.4's capabilities, and the same with ACP's stable session capabilities.
QWEN_CAPABILITIES: dict[str, Any] = {
    "loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True},
    "sessionCapabilities": {"list": {}, "resume": {}}, "mcpCapabilities": {"http": True, "sse": True},
}
STABLE_CAPABILITIES: dict[str, Any] = {
    **QWEN_CAPABILITIES,
    "sessionCapabilities": {"list": {}, "resume": {}, "additionalDirectories": {}, "close": {}, "delete": {}},
}


@pytest.fixture
def rig(tmp_path: Path) -> Any:
    rig = Rig(tmp_path)
    yield rig
    rig.close()


def _lifecycle(rig: Rig, capabilities: dict[str, Any], folders: tuple[str, ...]) -> list[dict[str, Any]]:
    """A session begun, loaded again after another, and resumed in a further
    chat: the params of each call."""
    chat, _, events = rig.chat([[{"chunks": ["A"]}]], folders=folders, capabilities=capabilities)
    chat.send("first")
    wait_for(lambda: events.ended)
    session = chat.state.session_id or ""
    chat.sessions.new_session().result(WAIT)
    chat.sessions.load_session(session).result(WAIT)
    further, _, _ = rig.chat(folders=folders, capabilities=capabilities)
    further.sessions.resume_session(session).result(WAIT)
    return [rig.received(method)[0]["params"] for method in ("session/new", "session/load", "session/resume")]


def test_the_windows_other_folders_go_with_each_session_to_an_agent_that_takes_them(rig: Rig, tmp_path: Path) -> None:
    other = str(tmp_path / "other")
    for params in _lifecycle(rig, STABLE_CAPABILITIES, (str(rig.folder), other)):
        assert params["cwd"] == str(rig.folder)
        assert params["additionalDirectories"] == [other]  # the cwd is not repeated


def test_an_agent_without_additional_directories_is_sent_none(rig: Rig, tmp_path: Path) -> None:
    for params in _lifecycle(rig, QWEN_CAPABILITIES, (str(rig.folder), str(tmp_path / "other"))):
        assert "additionalDirectories" not in params


def _one_chat_leaves(rig: Rig, capabilities: dict[str, Any]) -> tuple[str, str]:
    """Two chats share one agent; the first, mid-turn, closes; the second then
    runs a turn (so the agent has read whatever the close sent before it).
    (the closed chat's session, the second chat's answer)"""
    gate = rig.tmp / "never"  # the first chat's turn runs until its session is closed or cancelled
    shared = SharedRig(rig, [[{"gate": str(gate)}], [{"echo": "second: "}]], capabilities=capabilities)
    first, _, _ = shared.chat()
    second, second_view, second_events = shared.chat()
    first.send("alpha")
    wait_for(lambda: rig.turns_taken() == 1)
    closed = first.state.session_id or ""
    first.close()
    second.send("beta")
    wait_for(lambda: second_events.ended)
    return closed, second_view.text


def test_a_chat_that_closes_ends_its_session_in_the_agent_others_share(rig: Rig) -> None:
    closed, second_text = _one_chat_leaves(rig, STABLE_CAPABILITIES)
    wait_for(lambda: rig.received("session/close"))
    assert [m["params"] for m in rig.received("session/close")] == [{"sessionId": closed}]
    assert "second: beta" in second_text  # the agent goes on for the other chat


def test_an_agent_without_session_close_is_sent_none(rig: Rig) -> None:
    _, second_text = _one_chat_leaves(rig, QWEN_CAPABILITIES)
    assert "second: beta" in second_text
    assert rig.received("session/close") == []


def test_a_chat_in_a_worktree_of_its_own_is_given_no_other_folders(rig: Rig, tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    chat, _, _ = rig.chat(folders=(str(rig.folder), str(tmp_path / "other")), cwd=str(worktree),
                          capabilities=STABLE_CAPABILITIES)
    chat.sessions.new_session().result(WAIT)
    params = rig.received("session/new")[0]["params"]
    assert params["cwd"] == str(worktree) and "additionalDirectories" not in params
