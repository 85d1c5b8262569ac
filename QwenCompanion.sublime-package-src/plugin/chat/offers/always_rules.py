"""The rule an "always" answer to a permission request made, noted in the
chat's transcript: qwen writes it to its settings and does not say which
(core/chat/offers/permission_rules.py `rules_made`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ....core.chat.history.rewind import is_qwen
from ....core.chat.offers.permission_rules import ALWAYS_OPTIONS, PermissionRule, list_rules, rules_made
from .permission_rules_commands import WHAT, shown_rule

if TYPE_CHECKING:
    from acp import schema

    from ....core.chat.requests.permissions import PermissionPrompt
    from ..window_chats import WindowChat

log = logging.getLogger(__name__)
BEFORE_WAIT_S = 5.0  # the longest an "always" answer waits for qwen's rules before it
_noting: set[asyncio.Task[None]] = set()  # the notes being written: kept from the garbage collector


def _rules(chat: WindowChat) -> asyncio.Future[list[PermissionRule]]:
    return asyncio.wrap_future(chat.ask_qwen(WHAT, list_rules))


def rules_before(chat: WindowChat, prompt: PermissionPrompt) -> asyncio.Future[list[PermissionRule]] | None:
    """qwen's rules while the user has not answered yet, when an answer could make one (chat loop)."""
    if not is_qwen(chat.state) or not any(o.option_id in ALWAYS_OPTIONS for o in prompt.options):
        return None
    return _rules(chat)


async def note_rules_made(chat: WindowChat, before: asyncio.Future[list[PermissionRule]] | None,
                          answer: schema.RequestPermissionResponse) -> None:
    """Once qwen has written it, note the rule the user's "always" answer made
    (chat loop). qwen writes the rule the moment it has the answer, so the
    answer waits for the rules read before it (at most BEFORE_WAIT_S)."""
    if before is None:
        return
    chosen = getattr(answer.outcome, "option_id", None)
    if chosen not in ALWAYS_OPTIONS:
        before.cancel()
        return
    await asyncio.wait({before}, timeout=BEFORE_WAIT_S)
    if not before.done():
        before.cancel()
        log.warning("chat: qwen's rules were not read in %s s; the rule an always answer makes is not noted",
                    BEFORE_WAIT_S)
        return

    async def note() -> None:
        try:
            made = await rules_made(before, lambda: _rules(chat))
        except Exception as error:
            log.warning("chat: the rule an always answer made could not be read: %s", error)
            return
        for rule in made:
            chat.note(f"Permission rule added ({rule.kind}, {rule.scope}): {shown_rule(rule)}")

    task = asyncio.ensure_future(note())
    _noting.add(task)
    task.add_done_callback(_noting.discard)
