"""Qwen Code: Permission Rules… — qwen's allow, ask and deny rules of the
user and of the project (core/chat/offers/permission_rules.py), listed in a
quick panel: a rule picked is removed, "Add a rule…" asks its kind, its
scope and its text. An allow rule added to the project's settings asks
first. Each change is noted in the chat's transcript."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future

import sublime

from ....core.chat.offers.permission_rules import (
    KINDS,
    SCOPES,
    Change,
    NeedsYes,
    PermissionRule,
    change_rule,
    list_rules,
    needs_yes,
)
from ....core.display_text import display_text
from ...background import when_done
from ...quick_panel_items import panel_item
from ..command_bases import ActiveChatCommand
from ..window_chats import WindowChat

WHAT = "Permission Rules"
SCOPE_NAMES = {"user": "you, in every project", "workspace": "this project (its .qwen/settings.json)"}
KIND_NAMES = {"allow": "qwen runs it without asking", "ask": "qwen always asks first", "deny": "qwen never runs it"}
RULE_CHARS = 300  # a rule as a panel row or a note shows it


def shown_rule(rule: PermissionRule) -> str:
    return display_text(rule.rule, RULE_CHARS)


def change_permission_rule(window: sublime.Window, chat: WindowChat, change: Change,
                           rule: PermissionRule) -> Future[list[PermissionRule]]:
    """Add or remove `rule` (main thread): an allow rule for the project only
    once the user said yes; every rule after, or why not."""
    said_yes = needs_yes(change, rule) and sublime.ok_cancel_dialog(
        f"Qwen Code: let qwen run “{shown_rule(rule)}” without asking, for everyone who opens this project?\n\n"
        "The rule is written to the project's .qwen/settings.json.", "Allow in Project")
    asked = chat.ask_qwen(WHAT, lambda request: change_rule(request, change, rule, said_yes=said_yes))

    def said(done: Future[list[PermissionRule]]) -> None:
        error = done.exception()
        if isinstance(error, NeedsYes):
            window.status_message("Qwen Code: no rule added")
        elif error is not None:
            window.status_message(f"Qwen Code: permission rules not changed: {error}")
        else:
            done_word = "added" if change == "add" else "removed"
            window.status_message(f"Qwen Code: permission rule {done_word}")
            chat.note(f"Permission rule {done_word} ({rule.kind}, {rule.scope}): {shown_rule(rule)}")

    when_done(asked, said)
    return asked


def _then(show: Callable[[], object]) -> None:
    """Show the next panel once the one whose callback runs has closed, as part of the user's command."""
    command = contextvars.copy_context()
    sublime.set_timeout(lambda: command.run(show))


class QwenChatPermissionRulesCommand(ActiveChatCommand):
    """Qwen Code: Permission Rules… — list, add and remove qwen's rules."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is None:
            return
        window, command = self.window, contextvars.copy_context()

        def listed(done: Future[list[PermissionRule]]) -> None:
            error = done.exception()
            if error is not None:
                window.status_message(f"Qwen Code: {error}")
            else:
                _list(window, found, done.result())

        when_done(found.ask_qwen(WHAT, list_rules), lambda done: command.run(listed, done))


def _list(window: sublime.Window, chat: WindowChat, rules: list[PermissionRule]) -> None:
    items = [panel_item("Add a rule…", "allow, ask or deny a tool, for you or for this project")]
    items += [panel_item(f"{rule.kind}: {shown_rule(rule)}", f"remove it · {SCOPE_NAMES[rule.scope]}", rule.scope)
              for rule in rules]

    def chosen(index: int) -> None:
        if index == 0:
            _then(lambda: _add(window, chat))
        elif 0 < index <= len(rules):
            change_permission_rule(window, chat, "remove", rules[index - 1])

    window.show_quick_panel(items, chosen, placeholder="qwen's permission rules: pick one to remove it")


def _add(window: sublime.Window, chat: WindowChat) -> None:
    kinds = [panel_item(kind, KIND_NAMES[kind]) for kind in KINDS]
    scopes = [panel_item(scope, SCOPE_NAMES[scope]) for scope in SCOPES]

    def kind_chosen(kind: int) -> None:
        if kind >= 0:
            _then(lambda: window.show_quick_panel(
                scopes, lambda scope: scope_chosen(KINDS[kind], scope), placeholder="For whom"))

    def scope_chosen(kind: str, scope: int) -> None:
        def typed(text: str) -> None:
            if text.strip():
                change_permission_rule(window, chat, "add", PermissionRule(kind, text.strip(), SCOPES[scope]))

        if scope >= 0:
            _then(lambda: window.show_input_panel(
                f"{kind} rule (as qwen writes them, e.g. Bash(npm test), Read, mcp__server__tool):", "", typed,
                None, None))

    window.show_quick_panel(kinds, kind_chosen, placeholder="Add a rule: what qwen does")
