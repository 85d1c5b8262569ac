"""Qwen Code: Sign In and Sign Out (core/chat/offers/sign_in.py).

Sign In runs qwen with the args of its terminal auth method in a Terminus
terminal (through `open_terminus`, which escapes `$` and `\\`), wired to the
window as Open in Terminal is; once that terminal's process ends, the chat
starts its agent again, which reads the sign-in qwen saved, and goes on.
Without Terminus it offers the command to copy. Sign Out asks first, then
sends ACP's `logout` where the agent announces it. Neither shows a key."""

from __future__ import annotations

import time
from concurrent.futures import Future

import sublime

from ....core.chat.agent.agents import QWEN
from ....core.chat.offers.sign_in import TerminalSignIn, offers_logout, terminal_sign_in
from ....core.cli.terminal import CmdUnquotable, connect_command
from ...background import when_done
from ...companion.terminal import (
    live_terminal,
    mcp_config_args,
    new_serial,
    open_terminus,
    options,
    running_companion,
    tagged_terminals,
    terminal_spec,
    terminus_installed,
    window_cwd,
)
from ..command_bases import ActiveChatCommand
from ..window_chats import WindowChat, chats, window_by_id

WATCH_MS = 1000
WATCH_LIMIT_S = 30 * 60  # a sign-in left open longer is not waited for
NOT_OFFERED = "Qwen Code: {what} is not offered by this agent ({agent})"


def sign_in_method(chat: WindowChat) -> TerminalSignIn | str:
    """qwen's terminal sign-in, or why there is none."""
    initialized = chat.connection.initialized
    if chat.agent != QWEN:
        return NOT_OFFERED.format(what="Sign In", agent=chat.agent)
    method = terminal_sign_in(list(initialized.auth_methods or [])) if initialized is not None else None
    if method is None:
        return "Qwen Code: the agent announces no sign-in to run in a terminal (start the chat first)"
    return method


def sign_in(window: sublime.Window, chat: WindowChat) -> str | None:
    """Open qwen's sign-in in a terminal (or offer its command to copy); the
    terminal's tag, or None when none opened (the status bar says why)."""
    method = sign_in_method(chat)
    companion = running_companion(window)
    if isinstance(method, str) or companion is None:
        if isinstance(method, str):
            window.status_message(method)
        return None
    if not terminus_installed():
        _offer_copy(window, method)
        return None
    spec = terminal_spec(window, companion, options("qwen"), new_serial(), "qwen", more_args=method.args)
    if isinstance(spec, str):
        sublime.error_message(spec)
        return None
    open_terminus(window, spec)
    tag = str(spec["tag"])
    chat.note(f"Sign in ({method.name}) in the terminal that opened; the chat goes on once it ends.")
    sublime.set_timeout(lambda: _watch(window.id(), chat.chat_id, tag, time.monotonic(), False), WATCH_MS)
    return tag


def _watch(window_id: int, chat_id: int, tag: str, since: float, seen: bool) -> None:
    """Every second: once the sign-in's terminal has run and its process has
    ended (Terminus marks it finished, or it was closed), start the chat's agent again."""
    window, chat = window_by_id(window_id), chats.by_id(chat_id)
    if window is None or chat is None or time.monotonic() - since > WATCH_LIMIT_S:
        return
    opened = bool(tagged_terminals(window, tag))
    if live_terminal(window, tag) is not None or not (seen or opened):  # Terminus opens it a moment after it is asked
        sublime.set_timeout(lambda: _watch(window_id, chat_id, tag, since, seen or opened), WATCH_MS)
        return
    chat.note("The sign-in's terminal has ended: starting the agent again.")
    chat.restart()


def _offer_copy(window: sublime.Window, method: TerminalSignIn) -> None:
    companion = running_companion(window)
    if companion is None or not sublime.ok_cancel_dialog(
            f"Qwen Code: sign in ({method.name}) by running qwen in a terminal. Terminus is not installed: "
            "copy the command to run it in yours?", "Copy Sign-In Command"):
        return
    try:
        text = connect_command(port=companion.port, workspace_path=companion.workspace_path, cwd=window_cwd(window),
                               command=options("qwen").command, shell="posix",
                               extra_args=[*mcp_config_args(companion), *method.args], cli="qwen",
                               ide_pid=companion.ppid)
    except CmdUnquotable as refused:
        sublime.error_message(f"Qwen Code: no sign-in command: {refused}")
        return
    sublime.set_clipboard(text)
    window.status_message("Qwen Code: sign-in command copied; run it in a terminal, then restart the chat's agent")


def sign_out(window: sublime.Window, chat: WindowChat, *, confirmed: bool = False) -> Future[None] | None:
    """ACP's `logout` on the user's yes, where the agent announces it; None when not sent."""
    initialized = chat.connection.initialized
    if initialized is None or not offers_logout(initialized.agent_capabilities):
        window.status_message(NOT_OFFERED.format(what="Sign Out", agent=chat.agent) +
                              (": qwen 0.24.4 has no sign-out over ACP; /auth in its terminal changes the sign-in"
                               if chat.agent == QWEN else ""))
        return None
    if not confirmed and not sublime.ok_cancel_dialog(
            f"Qwen Code: sign out of {chat.agent}? Every chat of it stops until you sign in again.", "Sign Out"):
        return None
    signed_out = chat.core.calls.sign_out()

    def said(done: Future[None]) -> None:
        error = done.exception()
        window.status_message(f"Qwen Code: not signed out: {error}" if error is not None else "Qwen Code: signed out")
        if error is None:
            chat.note("Signed out.")

    when_done(signed_out, said)
    return signed_out


class QwenChatSignInCommand(ActiveChatCommand):
    """Qwen Code: Sign In — qwen's own sign-in, in a terminal."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is not None:
            sign_in(self.window, found)


class QwenChatSignOutCommand(ActiveChatCommand):
    """Qwen Code: Sign Out — ACP's logout, where the agent offers it (asks first)."""

    def run(self, chat: int | None = None, confirmed: bool = False) -> None:
        found = self.active_chat(chat)
        if found is not None:
            sign_out(self.window, found, confirmed=confirmed)
