"""The prompt each chat's composer holds for Edit and Resend: sending the
composer then replaces that prompt instead of adding one."""

from __future__ import annotations

from ....core import threads

_editing: dict[int, int] = {}  # chat id -> the index of the prompt being edited


@threads.on_main
def begin(chat_id: int, index: int) -> None:
    _editing[chat_id] = index


@threads.on_main
def take(chat_id: int) -> int | None:
    """The prompt being edited in the chat's composer, if any (it is edited no more)."""
    return _editing.pop(chat_id, None)
