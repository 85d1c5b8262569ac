"""ACP's stable session methods, sent only to an agent that announces them
(qwen 0.24.4 announces none: it is sent nothing new), against the scripted
ACP agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
    chat.new_session().result(WAIT)
    chat.load_session(session).result(WAIT)
    further, _, _ = rig.chat(folders=folders, capabilities=capabilities)
    further.resume_session(session).result(WAIT)
    return [rig.received(method)[0]["params"] for method in ("session/new", "session/load", "session/resume")]


def test_the_windows_other_folders_go_with_each_session_to_an_agent_that_takes_them(rig: Rig, tmp_path: Path) -> None:
    other = str(tmp_path / "other")
    for params in _lifecycle(rig, STABLE_CAPABILITIES, (str(rig.folder), other)):
        assert params["cwd"] == str(rig.folder)
        assert params["additionalDirectories"] == [other]  # the cwd is not repeated


def test_an_agent_without_additional_directories_is_sent_none(rig: Rig, tmp_path: Path) -> None:
    for params in _lifecycle(rig, QWEN_CAPABILITIES, (str(rig.folder), str(tmp_path / "other"))):
        assert "additionalDirectories" not in params
