"""qwen's permission rules as the chat adopts and changes them
(core/chat/offers/permission_rules.py): both scopes' lists bounded, a wrong
shape a clear `BadAnswer`, one rule added or removed on the list read just
before, and an allow rule for the project never written without a yes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from qwencompanion_src.core.chat.offers.permission_rules import (
    GET_METHOD,
    MAX_RULE_CHARS,
    SET_METHOD,
    NeedsYes,
    PermissionRule,
    change_rule,
    made_rules,
    rules_made,
    rules_of,
)
from qwencompanion_src.core.chat.offers.qwen_calls import MAX_ITEMS, BadAnswer


def settings(user: dict[str, Any] | None = None, workspace: dict[str, Any] | None = None) -> dict[str, Any]:
    """getSettings' answer, as qwen 0.24.4 gives it."""
    empty = {"allow": [], "ask": [], "deny": []}
    return {"v": 1, "user": {"path": "/h/.qwen/settings.json", "rules": {**empty, **(user or {})}},
            "workspace": {"path": "/p/.qwen/settings.json", "rules": {**empty, **(workspace or {})}},
            "merged": empty, "isTrusted": True}


class FakeQwen:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer, self.calls = answer, []  # type: ignore[var-annotated]

    async def __call__(self, method: str, params: dict[str, Any]) -> Any:
        self.calls.append((method, params))
        if method == SET_METHOD:
            self.answer["workspace" if params["scope"] == "workspace" else "user"]["rules"][params["ruleType"]] = \
                params["rules"]
        return self.answer


def test_both_scopes_are_listed_as_qwen_stores_them() -> None:
    answer = settings(user={"allow": ["Bash(npm test)"], "deny": ["Read(~/.ssh/**)"]}, workspace={"ask": ["Edit"]})
    assert [r.report() for r in rules_of(answer)] == [
        {"kind": "allow", "rule": "Bash(npm test)", "scope": "user"},
        {"kind": "deny", "rule": "Read(~/.ssh/**)", "scope": "user"},
        {"kind": "ask", "rule": "Edit", "scope": "workspace"}]


def test_a_wrong_shape_is_a_bad_answer_and_odd_entries_are_left_out() -> None:
    for wrong in (None, [], {"user": {}}, {"user": {"rules": []}, "workspace": {"rules": {}}}):
        with pytest.raises(BadAnswer):
            rules_of(wrong)
    odd = settings(user={"allow": ["Read", 7, None, "", "x" * (MAX_RULE_CHARS + 1)], "ask": "Edit"})
    assert [r.rule for r in rules_of(odd)] == ["Read"]


def test_the_lists_are_bounded() -> None:
    many = [f"Bash(echo {n})" for n in range(MAX_ITEMS * 3)]
    assert len(rules_of(settings(user={"allow": many, "deny": many}, workspace={"ask": many}))) == MAX_ITEMS


def test_one_rule_is_added_or_removed_on_the_list_read_just_before() -> None:
    qwen = FakeQwen(settings(user={"allow": ["Read", "Bash(ls)"]}))
    rules = asyncio.run(change_rule(qwen, "add", PermissionRule("allow", " Bash(npm test) ", "user"), said_yes=False))
    assert qwen.calls[-1] == (SET_METHOD, {"scope": "user", "ruleType": "allow",
                                           "rules": ["Read", "Bash(ls)", "Bash(npm test)"]})
    assert PermissionRule("allow", "Bash(npm test)", "user") in rules
    asyncio.run(change_rule(qwen, "remove", PermissionRule("allow", "Read", "user"), said_yes=False))
    assert qwen.calls[-1][1]["rules"] == ["Bash(ls)", "Bash(npm test)"]
    with pytest.raises(BadAnswer, match="holds no allow rule"):
        asyncio.run(change_rule(qwen, "remove", PermissionRule("allow", "Read", "user"), said_yes=False))
    for bad in (PermissionRule("allow", "", "user"), PermissionRule("always", "Read", "user"),
                PermissionRule("allow", "Read", "project"), PermissionRule("allow", "Read\nEdit", "user")):
        with pytest.raises(ValueError):
            asyncio.run(change_rule(qwen, "add", bad, said_yes=True))


def test_an_allow_rule_for_the_project_is_never_written_without_a_yes() -> None:
    qwen = FakeQwen(settings())
    with pytest.raises(NeedsYes):
        asyncio.run(change_rule(qwen, "add", PermissionRule("allow", "Bash(rm -rf build)", "workspace"), said_yes=False))
    assert qwen.calls == []  # nothing asked of qwen, nothing written
    for free in (PermissionRule("deny", "Bash(rm *)", "workspace"), PermissionRule("allow", "Read", "user")):
        asyncio.run(change_rule(qwen, "add", free, said_yes=False))
    asyncio.run(change_rule(qwen, "remove", PermissionRule("deny", "Bash(rm *)", "workspace"), said_yes=False))
    asyncio.run(change_rule(qwen, "add", PermissionRule("allow", "Bash(make)", "workspace"), said_yes=True))
    assert qwen.answer["workspace"]["rules"]["allow"] == ["Bash(make)"]
    assert [method for method, _ in qwen.calls] == [GET_METHOD, SET_METHOD] * 4


def test_the_rule_an_always_answer_made_is_found_once_qwen_wrote_it() -> None:
    before = [PermissionRule("allow", "Read", "user")]
    reads = iter([before, before, [*before, PermissionRule("allow", "Bash(touch *)", "user")]])

    async def now() -> list[PermissionRule]:
        return next(reads)

    async def known() -> list[PermissionRule]:
        return before

    assert asyncio.run(rules_made(known(), now)) == [PermissionRule("allow", "Bash(touch *)", "user")]
    assert made_rules(before, before) == []
