"""qwen's permission rules over ACP (qwen 0.24.4, read in its bundle and
probed against the CLI; the session's workspace settings when `sessionId`
is given):

- `qwen/permissions/getSettings {sessionId}` -> `{v: 1, user: {path, rules:
  {allow, ask, deny}}, workspace: {path, rules: {...}}, merged: {...},
  isTrusted}`: each rule list as the settings file holds it.
- `qwen/permissions/setRules {sessionId, scope: "user" | "workspace",
  ruleType: "allow" | "ask" | "deny", rules: [str]}`: REPLACES that scope's
  list of that kind (at most 500 rules of at most 512 characters; a malformed
  new rule is refused, -32602) and answers as getSettings. The live sessions
  adopt the change at once.

So the scopes are qwen's words, `user` and `workspace` (the project's
`.qwen/settings.json`). A change reads the list again and writes it back
with the one rule added or removed. Rules are kept exactly as qwen stores
them (bounded); they are cleaned only where they are shown."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from .qwen_calls import MAX_ITEMS, BadAnswer, Request

GET_METHOD = "qwen/permissions/getSettings"
SET_METHOD = "qwen/permissions/setRules"
KINDS = ("allow", "ask", "deny")
SCOPES = ("user", "workspace")
MAX_RULE_CHARS = 512  # qwen's own limit on one rule
Change = Literal["add", "remove"]


@dataclass(frozen=True)
class PermissionRule:
    kind: str  # allow, ask or deny
    rule: str  # as qwen stores it, e.g. "Bash(npm test)"
    scope: str  # user or workspace

    def report(self) -> dict[str, str]:
        return {"kind": self.kind, "rule": self.rule, "scope": self.scope}


class NeedsYes(Exception):
    """The change would let a project's settings allow a tool: the user says yes first."""


def needs_yes(change: Change, rule: PermissionRule) -> bool:
    """Whether the user must say yes first: an allow rule added to a project's
    settings (a project's settings never gain an allow rule silently)."""
    return change == "add" and rule.kind == "allow" and rule.scope == "workspace"


def _scope_lists(answer: object, scope: str) -> dict[str, list[str]]:
    """One scope's rule lists, each as qwen sent it (strings only)."""
    part = answer.get(scope) if isinstance(answer, dict) else None
    rules = part.get("rules") if isinstance(part, dict) else None
    if not isinstance(rules, dict):
        raise BadAnswer(f"the agent's permission settings have no {scope} rules: {str(answer)[:200]}")
    return {kind: [rule for rule in rules.get(kind) or [] if isinstance(rule, str)]
            if isinstance(rules.get(kind), list) else [] for kind in KINDS}


def rules_of(answer: object) -> list[PermissionRule]:
    """Every rule of both scopes, bounded: at most `MAX_ITEMS` in all, each at
    most `MAX_RULE_CHARS` (a longer one, which qwen never writes, is left out:
    a cut rule would not be the one qwen stores)."""
    found = [PermissionRule(kind, rule, scope) for scope in SCOPES
             for kind, rules in _scope_lists(answer, scope).items() for rule in rules[:MAX_ITEMS]]
    return [rule for rule in found if 0 < len(rule.rule) <= MAX_RULE_CHARS][:MAX_ITEMS]


async def list_rules(request: Request) -> list[PermissionRule]:
    return rules_of(await request(GET_METHOD, {}))


def valid(rule: PermissionRule) -> PermissionRule:
    if rule.kind not in KINDS or rule.scope not in SCOPES:
        raise ValueError(f"a rule's kind is one of {', '.join(KINDS)} and its scope one of {', '.join(SCOPES)}")
    text = rule.rule.strip()
    if not text or len(text) > MAX_RULE_CHARS or "\n" in text:
        raise ValueError(f"a rule is one line of at most {MAX_RULE_CHARS} characters")
    return PermissionRule(rule.kind, text, rule.scope)


async def change_rule(request: Request, change: Change, rule: PermissionRule, *, said_yes: bool) -> list[PermissionRule]:
    """Add or remove one rule; every rule after. `NeedsYes` when the user
    has not said yes to what `needs_yes` names."""
    rule = valid(rule)
    if needs_yes(change, rule) and not said_yes:
        raise NeedsYes(f"allow {rule.rule!r} for everyone who opens this project")
    current = _scope_lists(await request(GET_METHOD, {}), rule.scope)[rule.kind]
    if change == "add":
        rules = current if rule.rule in current else [*current, rule.rule]
    elif rule.rule in current:
        rules = [kept for kept in current if kept != rule.rule]
    else:
        raise BadAnswer(f"qwen holds no {rule.kind} rule {rule.rule!r} in its {rule.scope} settings")
    return rules_of(await request(SET_METHOD, {"scope": rule.scope, "ruleType": rule.kind, "rules": rules}))


def made_rules(before: list[PermissionRule], after: list[PermissionRule]) -> list[PermissionRule]:
    """The rules an "always" answer made: in `after`, not in `before`."""
    known = set(before)
    return [rule for rule in after if rule not in known]


# qwen's "Always Allow in project: …" and "Always Allow for user: …" answers: qwen writes an allow rule.
ALWAYS_OPTIONS = frozenset({"proceed_always_project", "proceed_always_user"})
MADE_TRIES, MADE_PAUSE_S = 20, 0.25


async def rules_made(before: Awaitable[list[PermissionRule]],
                     now: Callable[[], Awaitable[list[PermissionRule]]]) -> list[PermissionRule]:
    """The rules an "always" answer made. qwen writes them after it has the
    answer, before the tool runs, and tells no one: read again until they show."""
    known = await before
    for _ in range(MADE_TRIES):
        made = made_rules(known, await now())
        if made:
            return made
        await asyncio.sleep(MADE_PAUSE_S)
    return []
