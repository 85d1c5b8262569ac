"""The prompt each chat's composer holds for Edit and Resend: sending the
composer then replaces that prompt instead of adding one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....core import threads

if TYPE_CHECKING:
    from ..window_chats import WindowChat


@threads.on_main
def begin(chat: WindowChat, index: int) -> None:
    chat.editing_prompt = index


@threads.on_main
def take(chat: WindowChat) -> int | None:
    """The prompt being edited in the chat's composer, if any (it is edited no more)."""
    index, chat.editing_prompt = chat.editing_prompt, None
    return index
