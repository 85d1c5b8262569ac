"""The prompts queued while the agent works, shown below the transcript: a
phantom after its end, dimmed and numbered. A phantom is not part of the
transcript's text, so it is never copied, exported or rewound with it."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import sublime

if TYPE_CHECKING:
    from ....core.chat.prompts.prompt_queue import PromptQueue, QueuedPrompt
    from ..window_chats import WindowChat

PHANTOM_KEY = "qwen_chat_queue"
SHOWN = 10  # prompts drawn below the transcript; the rest are counted
LINE_CHARS = 120

_drawn: dict[int, tuple[int, int]] = {}  # transcript view id -> (queue version, view size) drawn; pruned at its close


def forget_queue_drawn(view_id: int) -> None:
    _drawn.pop(view_id, None)


def queue_html(prompts: list[QueuedPrompt]) -> str:
    """The queue as minihtml: numbered first lines, dimmed; a count for the rest."""
    lines = [f"<div>{n}. {html.escape(first_line(p.text))}</div>" for n, p in enumerate(prompts[:SHOWN], 1)]
    if len(prompts) > SHOWN:
        lines.append(f"<div>… and {len(prompts) - SHOWN:,} more</div>")
    return ('<body id="qwen-chat-queue"><style>body { color: color(var(--foreground) alpha(0.5)); }</style>'
            f"<div>Queued, sent as turns end (Qwen Code: Edit Queued Prompt…):</div>{''.join(lines)}</body>")


def first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    more = len(line) > LINE_CHARS or "\n" in text.strip()
    return line[:LINE_CHARS] + ("…" if more else "")


def show_queue(chat: WindowChat) -> None:
    """Draw chat's queue after its transcript's end (main thread); redrawn
    when the queue changed or the transcript's end moved. Sublime documents
    nowhere whether an empty phantom region is pushed past text inserted at
    it, so every append to the transcript draws the queue again (chat_views.py)
    and its place never depends on that."""
    view = chat.transcript_view
    if view is None or not view.is_valid():
        return
    queue: PromptQueue = chat.queue
    drawn = (queue.version, view.size() if len(queue) else -1)  # an empty queue has nothing to move
    if _drawn.get(view.id()) == drawn:
        return
    _drawn[view.id()] = drawn
    view.erase_phantoms(PHANTOM_KEY)
    prompts = queue.prompts()
    if prompts:
        view.add_phantom(PHANTOM_KEY, sublime.Region(view.size()), queue_html(prompts), sublime.PhantomLayout.BLOCK)
