"""Qwen Code: Continue in Terminal — a chat's session goes on in qwen's TUI
in Terminus (`qwen --resume=<session>`, wired to this window as Open in
Terminal is: the IDE companion's environment and tools). The chat is closed
first, so one writer holds the session at a time; a chat whose turn runs,
whose session another chat has open too, or that qwen in a terminal holds
already is refused with the reason, never forked. (The other way, a session started in
the terminal is in Chat History, and Enter resumes it in a chat.)"""

from __future__ import annotations

from concurrent.futures import Future

import sublime

from ....core.chat.agent.agents import QWEN
from ....core.chat.history.live_sessions import SessionHeld
from ....core.cli.terminal import Json
from ...background import when_done
from ...companion.terminal import (
    new_serial,
    open_terminus,
    options,
    running_companion,
    terminal_spec,
    terminus_installed,
)
from ..agent.live_writers import unless_held
from ..command_bases import ActiveChatCommand
from ..transcript.chat_tabs import close_chat
from ..window_chats import WindowChat, chats

# qwen 0.24.4 resumes a session by its id; one word, so the id is always the
# option's value, never an option of its own.
RESUME_OPTION = "--resume="


def continue_refusal(chat: WindowChat) -> str | None:
    """Why the chat's session cannot go on in the terminal now (None: it can)."""
    state = chat.state
    if chat.agent != QWEN:
        return f"Qwen Code: only qwen's sessions continue in its terminal (this chat runs {chat.agent})"
    if state.session_id is None:
        return "Qwen Code: this chat has no conversation to continue yet"
    if state.agent_status == "busy" or state.queued:
        return ("Qwen Code: a turn is running in this chat; wait for its end or cancel it, then continue in "
                "the terminal (two writers on one session would fork it)")
    if any(other is not chat and other.session_id == state.session_id for other in chats.all()):
        return ("Qwen Code: this conversation is open in another chat too; close that one first (two writers "
                "on one session would fork it)")
    return None


def continue_spec(window: sublime.Window, chat: WindowChat) -> dict[str, Json] | str | None:
    """The `terminus_open` arguments that resume the chat's session, or why
    not (None: the window's server is not running)."""
    companion = running_companion(window)
    if companion is None or chat.session_id is None:
        return None
    return terminal_spec(window, companion, options("qwen"), new_serial(), "qwen",
                         more_args=[RESUME_OPTION + chat.session_id])


class QwenChatContinueInTerminalCommand(ActiveChatCommand):
    def run(self, chat: int | None = None) -> None:
        window = self.window
        found = self.active_chat(chat)
        if found is None:
            return
        refusal = continue_refusal(found)
        if refusal is not None:
            window.status_message(refusal)
            return
        if not terminus_installed():
            window.status_message("Qwen Code: Continue in Terminal needs the Terminus package")
            return
        session_id = found.session_id or ""

        def hand_over() -> None:
            spec = continue_spec(window, found) if window.is_valid() and continue_refusal(found) is None else None
            if spec is None:
                return
            if isinstance(spec, str):
                sublime.error_message(spec)
                return
            close_chat(window, found)  # first: the chat never writes the session again
            open_terminus(window, spec)

        def refused(done: Future[None]) -> None:
            if isinstance(done.exception(), SessionHeld):
                window.status_message(str(done.exception()))

        when_done(unless_held(session_id, None, hand_over), refused)  # qwen in a terminal on it already: no second
