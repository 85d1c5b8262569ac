"""Permission Rules… as the user works it, with the scripted agent posing as
qwen 0.24.4 (its getSettings answer, display-cleaned in the panel, the rule
itself kept exactly): a rule picked is removed with setRules on the list read
just before; an allow rule for the project is written only on the user's yes."""

from __future__ import annotations

from typing import Any

from tests.sim.test_chat import WAIT, ChatRig

EMPTY = {"allow": [], "ask": [], "deny": []}


def settings(user: dict[str, Any], workspace: dict[str, Any]) -> dict[str, Any]:
    return {"v": 1, "user": {"path": "/h", "rules": {**EMPTY, **user}},
            "workspace": {"path": "/p", "rules": {**EMPTY, **workspace}}, "merged": EMPTY, "isTrusted": True}


def test_the_panel_lists_cleaned_rules_and_removes_the_exact_one_picked(rig: ChatRig) -> None:
    hostile = "Bash(echo \u202ehi)"
    answer = settings({"allow": [hostile, "Read"]}, {"deny": ["Edit"]})
    rig.script_extras.update(agent_name="qwen-code", qwen_answers={
        "qwen/permissions/getSettings": answer, "qwen/permissions/setRules": answer})
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    rig.host.user.run_command("qwen_chat_permission_rules")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    triggers = [item.trigger for item in panel.items]
    assert triggers == ["Add a rule…", "allow: Bash(echo hi)", "allow: Read", "deny: Edit"]
    rig.host.user.choose_quick_panel(1)
    [written] = rig.host.wait_for(lambda: rig.received("qwen/permissions/setRules"), timeout=WAIT)
    assert written["params"]["scope"] == "user" and written["params"]["ruleType"] == "allow"
    assert written["params"]["rules"] == ["Read"]  # the hostile rule removed exactly as qwen stores it
    rig.host.wait_for(lambda: "Permission rule removed (allow, user): Bash(echo hi)" in rig.transcript(),
                      timeout=WAIT)


def test_adding_an_allow_rule_for_the_project_asks_first(rig: ChatRig) -> None:
    answer = settings({}, {})
    rig.script_extras.update(agent_name="qwen-code", qwen_answers={
        "qwen/permissions/getSettings": answer, "qwen/permissions/setRules": answer})
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    for answer_given in (False, True):
        rig.host.answers.push("ok_cancel", answer_given)
        rig.host.user.run_command("qwen_chat_permission_rules")
        rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
        rig.host.user.choose_quick_panel("Add a rule…")
        rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
        rig.host.user.choose_quick_panel("allow")
        rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
        rig.host.user.choose_quick_panel("workspace")
        rig.host.wait_for(lambda: [p for p in rig.host.input_panels if not p.done], timeout=WAIT)
        rig.host.user.submit_input_panel("Bash(make build)")
        asked = 2 if answer_given else 1
        rig.host.wait_for(lambda n=asked: len([d for d in rig.host.dialogs if d.kind == "ok_cancel"]) == n,
                          timeout=WAIT)
        if not answer_given:
            rig.host.wait_for(lambda: any("no rule added" in m for m in rig.host.status_messages), timeout=WAIT)
            assert rig.received("qwen/permissions/setRules") == []  # the no: nothing written
    [written] = rig.host.wait_for(lambda: rig.received("qwen/permissions/setRules"), timeout=WAIT)
    assert written["params"] == {"sessionId": written["params"]["sessionId"], "scope": "workspace",
                                 "ruleType": "allow", "rules": ["Bash(make build)"]}


def answer_always_at_once(rig: ChatRig, read_delay: float) -> None:
    """qwen asks to run a command; the user answers "Always Allow for user"
    before qwen has given its rules (each read takes `read_delay` s)."""
    rig.script_extras.update(agent_name="qwen-code", qwen_answers={"qwen/permissions/getSettings": settings({}, {})},
                             qwen_answer_delay=read_delay, always_rule="Bash(touch *)")
    options = [{"optionId": "proceed_always_project", "kind": "allow_always",
                "name": "Always Allow in project: touch *"},
               {"optionId": "proceed_always_user", "kind": "allow_always", "name": "Always Allow for user: touch *"},
               {"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
               {"optionId": "cancel", "kind": "reject_once", "name": "Reject"}]
    rig.load([[{"request": "session/request_permission", "params": {
        "sessionId": "", "options": options, "toolCall": {
            "toolCallId": "sh1", "status": "pending", "kind": "execute", "title": "touch always.txt",
            "rawInput": {"command": "touch always.txt"}}}}, {"chunks": ["Done."]}]])
    rig.send("say it always")
    rig.host.wait_for(lambda: rig.chat().request_handler().pending.oldest(), timeout=WAIT)
    rig.host.user.run_command("qwen_chat_permission", {"option": "proceed_always_user"})


def test_an_always_answer_before_qwen_has_read_its_rules_still_notes_the_rule(rig: ChatRig) -> None:
    """qwen writes the rule the moment it has the answer: the answer waits
    for the rules read before it, however slowly qwen gives them."""
    answer_always_at_once(rig, read_delay=1.0)
    assert rig.ended() == ["end_turn"]
    rig.host.wait_for(lambda: "Permission rule added (allow, user): Bash(touch *)" in rig.transcript(), timeout=WAIT)


def test_an_always_answer_is_not_held_by_a_qwen_that_never_gives_its_rules(rig: ChatRig) -> None:
    answer_always_at_once(rig, read_delay=600.0)
    assert rig.ended() == ["end_turn"]  # the answer went after BEFORE_WAIT_S, not after qwen's read
    assert "Permission rule added" not in rig.transcript()
