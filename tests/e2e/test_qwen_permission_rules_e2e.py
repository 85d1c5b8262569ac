"""Permission Rules… against the real `qwen --acp` (0.24.4) and the fake
model: a rule added is then used (the tool runs, nobody is asked), an allow
rule for the project is written only on the user's yes, and an "always"
answer's rule is noted in the transcript."""

from __future__ import annotations

import json
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, tool_call
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e


def rules_module() -> Any:
    return sys.modules[f"{PACKAGE}.core.chat.offers.permission_rules"]


def change(real_chat: RealChat, verb: str, kind: str, rule: str, scope: str) -> Future[Any]:
    commands = sys.modules[f"{PACKAGE}.plugin.chat.offers.permission_rules_commands"]
    window, chat = real_chat.host.window, real_chat.chat()
    made = rules_module().PermissionRule(kind, rule, scope)
    return real_chat.host.run_on_main(lambda: commands.change_permission_rule(window, chat, verb, made))


def listed(real_chat: RealChat) -> list[tuple[str, str, str]]:
    rules = real_chat.chat().ask_qwen("Permission Rules", rules_module().list_rules).result(WAIT)
    return [(rule.kind, rule.rule, rule.scope) for rule in rules]


def asked_count(real_chat: RealChat) -> int:
    return len([e for e, _ in real_chat.events if e == "permission_requested"])


def shell(command: str) -> Reply:
    return tool_call("run_shell_command", {"command": command, "description": "say it"})


def tool_messages(real_chat: RealChat) -> str:
    return json.dumps([m for body in real_chat.model.agent_requests for m in body.get("messages", [])
                       if m.get("role") == "tool"])


def test_a_rule_added_is_used_and_removed(real_chat: RealChat, qwen_home: Path, workspace: Path) -> None:
    real_chat.send("hello")
    assert real_chat.ended() == ["end_turn"]
    rules = change(real_chat, "add", "allow", "Bash(touch rule-word-e2e.txt)", "user").result(WAIT)
    assert ("allow", "Bash(touch rule-word-e2e.txt)", "user") in [(r.kind, r.rule, r.scope) for r in rules]
    real_chat.host.wait_for(
        lambda: "Permission rule added (allow, user): Bash(touch rule-word-e2e.txt)" in real_chat.transcript(), timeout=WAIT)
    settings = json.loads((qwen_home / ".qwen" / "settings.json").read_text())
    assert "Bash(touch rule-word-e2e.txt)" in settings["permissions"]["allow"]  # where qwen keeps it

    real_chat.model.queue(shell("touch rule-word-e2e.txt"), Reply(text="Ran it."))
    real_chat.send("say the word")
    assert real_chat.ended(2) == ["end_turn", "end_turn"]
    assert asked_count(real_chat) == 0  # the rule answered: nobody was asked
    assert (workspace / "rule-word-e2e.txt").exists()

    change(real_chat, "remove", "allow", "Bash(touch rule-word-e2e.txt)", "user").result(WAIT)
    assert ("allow", "Bash(touch rule-word-e2e.txt)", "user") not in listed(real_chat)
    real_chat.model.queue(shell("touch rule-word-e2e.txt"), Reply(text="Asked this time."))
    real_chat.send("say it again")
    real_chat.host.wait_for(lambda: asked_count(real_chat) == 1, timeout=WAIT)  # without the rule, qwen asks
    real_chat.host.user.run_command("qwen_chat_cancel")


def test_an_allow_rule_for_the_project_waits_for_the_users_yes(real_chat: RealChat) -> None:
    real_chat.send("hello")
    assert real_chat.ended() == ["end_turn"]
    real_chat.host.answers.push("ok_cancel", False)
    refused = change(real_chat, "add", "allow", "Bash(rm -rf build)", "workspace")
    with pytest.raises(rules_module().NeedsYes):
        refused.result(WAIT)
    asked = [d for d in real_chat.host.dialogs if d.kind == "ok_cancel"]
    assert len(asked) == 1 and "Bash(rm -rf build)" in asked[0].message
    assert ("allow", "Bash(rm -rf build)", "workspace") not in listed(real_chat)

    change(real_chat, "add", "deny", "Bash(rm -rf build)", "workspace").result(WAIT)  # a deny rule: not asked
    assert len([d for d in real_chat.host.dialogs if d.kind == "ok_cancel"]) == 1
    real_chat.host.answers.push("ok_cancel", True)
    change(real_chat, "add", "allow", "Bash(make build)", "workspace").result(WAIT)
    assert {("deny", "Bash(rm -rf build)", "workspace"), ("allow", "Bash(make build)", "workspace")} <= set(
        listed(real_chat))


def test_an_always_answer_notes_the_rule_qwen_made(real_chat: RealChat) -> None:
    real_chat.model.queue(shell("touch always-word-e2e.txt"), Reply(text="Done."))
    real_chat.send("say it always")
    real_chat.host.wait_for(lambda: asked_count(real_chat) == 1, timeout=WAIT)
    event = next(d for e, d in real_chat.events if e == "permission_requested")
    always = next(o["optionId"] for o in event["options"] if o["optionId"] == "proceed_always_user")
    real_chat.host.user.run_command("qwen_chat_permission", {"option": always})
    assert real_chat.ended() == ["end_turn"]
    made = [rule for kind, rule, scope in listed(real_chat) if kind == "allow" and scope == "user"]
    assert made == ["Bash(touch *)"]  # qwen 0.24.4's rule for a command: its first word
    real_chat.host.wait_for(
        lambda: f"Permission rule added (allow, user): {made[0]}" in real_chat.transcript(), timeout=WAIT)
