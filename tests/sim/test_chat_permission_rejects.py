"""Rejecting an agent's permission prompt answers with its "reject once"
option even when it also offers "reject always" (listed first here): Esc
and the "reject with a reason" key in the transcript, the reject command and a review's Reject
each turn down this one call, never every later one. The BUILT package in
the simulated editor, with the scripted ACP agent."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig

OPTIONS = [
    {"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
    {"optionId": "proceed_always", "kind": "allow_always", "name": "Always Allow"},
    {"optionId": "never", "kind": "reject_always", "name": "Never Allow"},
    {"optionId": "not_now", "kind": "reject_once", "name": "Reject"},
]
REJECTED_ONCE = {"outcome": {"outcome": "selected", "optionId": "not_now"}}


def permission(tool_call: dict[str, Any]) -> dict[str, Any]:
    return {"request": "session/request_permission", "params": {"sessionId": "", "toolCall": tool_call, "options": OPTIONS}}


def asked(rig: ChatRig) -> None:
    rig.host.wait_for(lambda: any(e == "permission_requested" for e, _ in rig.events), timeout=WAIT)
    rig.host.wait_idle()


@pytest.mark.parametrize("how", ["escape", "reason", "command"])
def test_rejecting_in_the_chat_rejects_once(rig: ChatRig, how: str) -> None:
    rig.load([[permission({"toolCallId": "sh1", "status": "pending", "kind": "execute", "title": "Shell",
                           "rawInput": {"command": "make clean"}})], [{"chunks": ["ok"]}]])
    rig.send("clean up")
    asked(rig)
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)  # keys answer a request only where it is shown
    if how == "escape":
        rig.host.user.press_key("escape")
    elif how == "reason":
        rig.host.user.press_key(str(len(OPTIONS) + 1))  # the key after the options: reject with a reason
        rig.host.user.submit_input_panel("not the build folder")
    else:
        rig.host.user.run_command("qwen_chat_permission", {"reject": True})
    assert rig.answered("session/request_permission") == [REJECTED_ONCE]


def test_a_reviews_reject_rejects_once(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    path = workspace / "hello.py"
    path.write_text("print('hi')\n")
    diff = {"type": "diff", "path": str(path), "oldText": "print('hi')\n", "newText": "print('hello')\n"}
    rig.load([[permission({"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "Edit hello.py",
                           "locations": [{"path": str(path)}], "content": [diff]})]])
    rig.send("edit")
    _, proposed = rig.editor.review(path)
    rig.host.user.focus(proposed)
    binding = rig.host.user.press_key("ctrl+k, x")
    assert binding is not None and binding.command == "qwen_reject_diff"
    assert rig.answered("session/request_permission") == [REJECTED_ONCE]
    assert rig.ended() == ["end_turn"]
    assert path.read_text() == "print('hi')\n"
