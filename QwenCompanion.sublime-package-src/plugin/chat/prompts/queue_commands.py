"""Edit Queued Prompt…: edit, move, remove a prompt queued while the agent
works, send it now (Enter on a prompt opens its actions; Ctrl/Cmd+Enter
sends it now, stopping the running turn), or steer: add it to the running
turn, offered only where the chat's agent offers a way to (`qwen serve`;
not ACP over stdio) and for a prompt with nothing attached (the daemon's
route takes words and images, not the files a prompt names). The queue is
shown below the transcript (queue_view.py).

Nothing here focuses a view or changes the active group: the panels open in
the window the user ran the command in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import sublime

from ..command_bases import ActiveChatCommand
from ..transcript.queue_view import first_line

if TYPE_CHECKING:
    from ....core.chat.prompts.prompt_queue import QueuedPrompt
    from ..window_chats import WindowChat

ACTIONS = ["Edit…", "Send Now (stops the running turn)", "Move Up", "Move Down", "Remove"]
STEER = "Steer (adds it to the running turn)"


class QwenChatQueuedCommand(ActiveChatCommand):
    """Qwen Code: Edit Queued Prompt…: with `action` ("edit" with `text`,
    "remove", "move" with `to`, "send_now", "steer") on queued prompt `index`
    (0-based), else a quick panel of the queued prompts."""

    def run(self, chat: int | None = None, action: str | None = None, index: int | None = None,
            text: str | None = None, to: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is None:
            return
        if action is None or index is None:
            self._pick(found)
            return
        queue = found.queue
        try:
            prompt = queue.at(index)
            if action == "edit" and text is not None:
                self._edit(found, prompt, text)
            elif action == "remove":
                queue.remove(prompt)
            elif action == "move" and to is not None:
                queue.move(prompt, to)
            elif action == "send_now":
                found.send_now(prompt)
            elif action == "steer" and steerable(found, prompt):
                found.steer(prompt)
            elif action == "steer":
                self.window.status_message("Qwen Code: this prompt cannot be steered into the turn "
                                           "(no turn runs, the agent offers no way to, or it has attachments)")
                return
            else:
                self.window.status_message(f"Qwen Code: no queue action {action!r} (edit with text, remove, "
                                           "move with to, send_now, steer)")
                return
        except (IndexError, ValueError) as error:  # a turn ended meanwhile and took it
            self.window.status_message(f"Qwen Code: {error}")
            return
        found.queue_changed()

    def is_enabled(self, chat: int | None = None, **_: Any) -> bool:
        found = self.active_chat(chat)
        return found is not None and len(found.queue) > 0

    def _edit(self, chat: WindowChat, prompt: QueuedPrompt, text: str) -> None:
        if text.strip():
            chat.queue.edit(prompt, text)
        else:  # an emptied prompt is one the user no longer wants sent
            chat.queue.remove(prompt)

    def _pick(self, chat: WindowChat) -> None:
        prompts = chat.queue.prompts()
        if not prompts:
            self.window.status_message("Qwen Code: no prompt is queued")
            return
        send_key = "⌘+Enter" if sublime.platform() == "osx" else "Ctrl+Enter"

        # Sublime passes the event with a pick only: Esc calls this with the index alone.
        def picked(choice: int, event: dict[str, Any] | None = None) -> None:
            if choice < 0:
                return
            if (event or {}).get("modifier_keys", {}).get("primary"):
                self._act(chat, prompts[choice], 1)
                return
            actions = [*ACTIONS, STEER] if steerable(chat, prompts[choice]) else ACTIONS
            self.window.show_quick_panel(
                actions, lambda action: self._act(chat, prompts[choice], action) if action >= 0 else None,
                placeholder=f"Queued prompt {choice + 1}: {first_line(prompts[choice].text)}")

        items = [f"{n}. {first_line(p.text)}" for n, p in enumerate(prompts, 1)]
        # WANT_EVENT: Sublime passes the event (its modifier keys) too; the stubs know one signature only.
        self.window.show_quick_panel(items, cast("Callable[[int], None]", picked), sublime.QuickPanelFlags.WANT_EVENT,
                                     placeholder=f"Enter: edit, move or remove · {send_key}: send now")

    def _act(self, chat: WindowChat, prompt: QueuedPrompt, action: int) -> None:
        """ACTIONS[action] (STEER after them) on `prompt`, if it is still queued."""
        queue = chat.queue
        try:
            queue.index(prompt)  # ValueError once it went out or was removed
            if action == 0:
                self.window.show_input_panel("Queued prompt:", prompt.text,
                                             lambda text: self._edited(chat, prompt, text), None, None)
                return
            if action == 1:
                chat.send_now(prompt)
            elif action in (2, 3):
                queue.move_by(prompt, -1 if action == 2 else 1)
            elif action == 4:
                queue.remove(prompt)
            elif steerable(chat, prompt):  # the turn may have ended since the list was shown
                chat.steer(prompt)
            else:
                self.window.status_message("Qwen Code: the turn ended before the steer: the prompt stays queued")
        except ValueError as gone:
            self.window.status_message(f"Qwen Code: {gone}")
            return
        chat.queue_changed()

    def _edited(self, chat: WindowChat, prompt: QueuedPrompt, text: str) -> None:
        try:
            self._edit(chat, prompt, text)
        except ValueError as gone:
            self.window.status_message(f"Qwen Code: {gone}")
            return
        chat.queue_changed()


def steerable(chat: WindowChat, prompt: QueuedPrompt) -> bool:
    """Steer is offered: the chat's agent can add this prompt, with what it has attached, to its running turn."""
    return chat.can_steer(prompt)
