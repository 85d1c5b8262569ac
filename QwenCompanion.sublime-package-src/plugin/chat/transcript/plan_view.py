"""The agent's plan in sight: its progress in the status bar and the pinned
plan under the chat's composer, updated in place as plan updates come."""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING

import sublime

from ..window_chats import WindowChat, chats, window_by_id

if TYPE_CHECKING:
    from ....core.chat.transcript.tool_calls import PinnedPlan

PLAN_STATUS_KEY = "qwen_chat_plan"
# The pinned plan: a block phantom under the text of the chat's composer. The
# composer stays in sight and does not scroll with the transcript, the user's
# eyes are there while the agent works, and it is the chat's own view: nothing
# is opened, focused or closed (an output panel would close the user's panel).
# Under the draft, not at its start: Sublime draws a block phantom below its
# line, so one at 0 would split a draft of several lines.
PLAN_PHANTOM_KEY = "qwen_chat_pinned_plan"
# Dimmed by the colour's alpha, as the queue is: minihtml has no `opacity`.
PLAN_HTML = ('<body id="qwen-pinned-plan"><style>div.step {{ margin: 0; }} span.dim {{ '
             'color: color(var(--foreground) alpha(0.6)); }}</style>{}</body>')
_plans_lock = threading.Lock()  # guards each chat's `plan_due` (the chat's thread sets it)


def plan_due(chat_id: int, pinned: PinnedPlan) -> bool:
    """Hold `pinned` (and its HTML, built here on the chat's thread) as the
    plan to show next; True when none was waiting (so one show is due)."""
    content = plan_html(pinned)
    chat = chats.by_id(chat_id)
    if chat is None:
        return False
    with _plans_lock:
        first = chat.plan_due is None
        chat.plan_due = (pinned, content)
    return first


def plan_html(pinned: PinnedPlan) -> str:
    lines = pinned.lines()
    rows = [f"<div class=\"step\"><b>{html.escape(lines[0])}</b></div>"]
    # The current step in full colour, the others dimmed.
    rows += [f"<div class=\"step\">{html.escape(line)}</div>" if line.startswith("▶")
             else f"<div class=\"step\"><span class=\"dim\">{html.escape(line)}</span></div>" for line in lines[1:]]
    return PLAN_HTML.format("".join(rows))


def show_pinned_plan(window_id: int, chat_id: int) -> None:
    chat = chats.by_id(chat_id)
    if chat is None:
        return
    with _plans_lock:
        due, chat.plan_due = chat.plan_due, None
    if due is None:
        return
    chat.pinned_plan, chat.plan_html = due
    show_plan(window_id, due[0].progress.label())
    redraw_pinned_plan(chat)


def redraw_pinned_plan(chat: WindowChat) -> None:
    """Draw the chat's pinned plan under its composer's text again (main
    thread): at every edit of the composer, since Sublime documents nowhere
    whether an empty phantom region is pushed past text typed at it."""
    content = chat.plan_html
    composer = chat.composer_view
    if content is not None and composer is not None and composer.is_valid():
        composer.erase_phantoms(PLAN_PHANTOM_KEY)
        composer.add_phantom(PLAN_PHANTOM_KEY, sublime.Region(composer.size()), content, sublime.PhantomLayout.BLOCK)


def drop_stale_plan(chat: WindowChat) -> None:
    """Take the pinned plan away once the chat is on another session (a new
    or loaded conversation): it was the plan of the one before."""
    pinned = chat.pinned_plan
    if pinned is None or pinned.session_id == chat.session_id:
        return
    chat.pinned_plan = chat.plan_html = None
    composer = chat.composer_view
    if composer is not None and composer.is_valid():
        composer.erase_phantoms(PLAN_PHANTOM_KEY)


def show_plan(window_id: int, label: str) -> None:
    window = window_by_id(window_id)
    if window is None:
        return
    for view in window.views():
        view.set_status(PLAN_STATUS_KEY, label)
