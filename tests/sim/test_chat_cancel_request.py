"""A slow session/list, session/load or session/resume the user gives up on
is given up on the agent's side too: ACP's `$/cancel_request` names the
request's id (a draft no capability announces, so it is only ever a
notification, which an agent may ignore). Scripted agent (tests/rig/fake_acp_agent.py)."""

from __future__ import annotations

from concurrent.futures import CancelledError

import pytest

from tests.sim.test_chat import WAIT, ChatRig


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
