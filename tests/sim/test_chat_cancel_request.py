"""A slow session/list, session/load or session/resume the user gives up on
is given up on the agent's side too: ACP's `$/cancel_request` names the
request's id (a draft no capability announces, so it is only ever a
notification, which an agent may ignore). Scripted agent (tests/rig/fake_acp_agent.py)."""

from __future__ import annotations

import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_history import QWEN_CAPABILITIES


def test_a_slow_list_given_up_is_cancelled_by_its_id(rig: ChatRig) -> None:
    rig.script_extras.update(list_delay=30)
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    listing = rig.chat().core.sessions.list_history([str(rig.editor.workspace)])
    [asked] = rig.host.wait_for(lambda: rig.received("session/list"), timeout=WAIT)
    listing.cancel()  # the user gives up on it
    [cancel] = rig.host.wait_for(lambda: rig.received("$/cancel_request"), timeout=WAIT)
    assert cancel["params"] == {"requestId": asked["id"]} and "id" not in cancel  # a notification
    with pytest.raises(CancelledError):
        listing.result(WAIT)
    rig.send("still here")  # the chat goes on
    assert rig.ended(2) == ["end_turn", "end_turn"]


def test_a_request_not_given_up_is_never_cancelled(rig: ChatRig) -> None:
    rig.script_extras.update(list_delay=0.2)
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    rig.chat().core.sessions.list_history([str(rig.editor.workspace)]).result(WAIT)
    assert rig.received("$/cancel_request") == []


def test_chat_history_asked_again_gives_up_on_the_slow_list(rig: ChatRig) -> None:
    rig.script_extras.update(list_delay=30)
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    rig.host.user.run_command("qwen_chat_sessions")
    [first] = rig.host.wait_for(lambda: rig.received("session/list"), timeout=WAIT)
    rig.host.user.run_command("qwen_chat_sessions")  # the user starts over
    [cancel] = rig.host.wait_for(lambda: rig.received("$/cancel_request"), timeout=WAIT)
    assert cancel["params"] == {"requestId": first["id"]}
    rig.host.wait_for(lambda: len(rig.received("session/list")) == 2, timeout=WAIT)
    assert not [q for q in rig.host.quick_panels if not q.done]  # the given-up list opens no panel


def resume_slowly(rig: ChatRig, capabilities: dict[str, Any]) -> tuple[Any, str, dict[str, Any]]:
    """Chat History's first conversation picked while the agent takes long to
    open it (session/resume where `capabilities` offer it, else session/load):
    the new chat, the session, and the request the agent received."""
    rig.script_extras.update(open_delay=3, capabilities=capabilities)
    rig.load([[{"chunks": ["Earlier answer."]}], [{"chunks": ["Hi."]}]])
    rig.send("earlier prompt")
    rig.ended()
    first_chat = rig.chat()
    session = first_chat.core.state.session_id
    first_chat.core.sessions.new_session().result(WAIT)
    rig.host.user.run_command("qwen_chat_sessions")
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(0)  # the earlier conversation (the first chat has moved on)
    method = "session/resume" if "resume" in capabilities.get("sessionCapabilities", {}) else "session/load"
    [asked] = rig.host.wait_for(lambda: rig.received(method), timeout=WAIT)
    resumed = rig.chat()
    assert resumed is not first_chat and resumed.core.state.agent_status == "starting"
    return resumed, session, asked


def test_escape_during_a_slow_resume_gives_it_up_and_the_chat_goes_on(rig: ChatRig) -> None:
    resumed, session, asked = resume_slowly(rig, QWEN_CAPABILITIES)
    rig.host.user.press_key("escape")  # in the new chat's composer: the user gives up
    [cancel] = rig.host.wait_for(lambda: rig.received("$/cancel_request"), timeout=WAIT)
    assert cancel["params"] == {"requestId": asked["id"]} and "id" not in cancel  # a notification
    rig.host.wait_for(lambda: resumed.core.state.agent_status == "ready", timeout=WAIT)
    assert "> Gave up loading the conversation; this is a new one." in rig.transcript()
    assert resumed.core.state.session_id not in (None, session)
    rig.send("still here")  # the chat goes on, in its new session
    assert rig.ended(2) == ["end_turn", "end_turn"]


def test_a_late_answer_to_a_given_up_load_is_ignored(rig: ChatRig) -> None:
    resumed, session, _ = resume_slowly(rig, {"loadSession": True, "sessionCapabilities": {"list": {}}})
    rig.host.user.press_key("escape")
    rig.host.wait_for(lambda: rig.received("$/cancel_request"), timeout=WAIT)
    rig.host.wait_for(lambda: resumed.core.state.agent_status == "ready", timeout=WAIT)
    fresh = resumed.core.state.session_id
    time.sleep(4)  # the agent ignores the cancel: its answer and replay come late
    rig.send("still here")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    assert resumed.core.state.session_id == fresh != session  # the late answer adopted nothing
    assert "Earlier answer." not in rig.transcript()  # nor was the late replay shown


def test_closing_the_chat_during_a_slow_load_gives_it_up(rig: ChatRig) -> None:
    resumed, _, asked = resume_slowly(rig, {"loadSession": True, "sessionCapabilities": {"list": {}}})
    rig.host.user.run_command("qwen_chat_close", {"chat": resumed.chat_id})
    [cancel] = rig.host.wait_for(lambda: rig.received("$/cancel_request"), timeout=WAIT)
    assert cancel["params"] == {"requestId": asked["id"]}
    assert resumed.core.pid is not None  # the agent lives on for the other chat, which goes on
    rig.send("still here")
    assert rig.ended(2) == ["end_turn", "end_turn"]
