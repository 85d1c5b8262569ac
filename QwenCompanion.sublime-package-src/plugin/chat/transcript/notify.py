"""Telling the user the chat needs them while it is out of sight: its turn
ended, or a permission or question waits. The status bar says so, the
transcript's tab title is marked, the `notification` event goes to the
observers and (the `chat_desktop_notifications` setting) the desktop shows it
through the platform's own tool; the marks stay until the chat is seen.

In sight means: the chat's window is `sublime.active_window()`, its transcript
is the selected tab of its group, and Sublime is focused. Sublime has no
call that says whether it is focused; it sends `on_deactivated` to the view
that had the keys when they go elsewhere and `on_activated` to the one that
gets them, widgets too: the command palette's or a quick panel's input, a
panel's. Opening the palette deactivates the view and activates the
palette's input (closing it, the other way round), so a deactivation alone
says nothing. Sublime counts as focused while some view holds the keys: the
one last activated, until that same view is deactivated (the keys went to
another application). A deactivation of a view that no longer holds them
(its successor's activation came first) changes nothing, whatever the order
Sublime sends the two in."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import ClassVar

import sublime

from ....core import threads
from ....core.cli.processes import own_group_options
from ....core.display_text import display_text
from ....core.notifications import TEXT_LIMIT, DesktopCommand, desktop_command
from ...background import in_background
from ...settings import userprefs
from ..window_chats import WindowChat, chats, window_by_id

log = logging.getLogger(__name__)

STATUS_KEY = "qwen_chat_done"
TITLE_MARK = "● "  # before the transcript's tab title while the chat waits unseen
LONG_TURN_SECONDS = 20.0  # a turn's end pops a desktop notification only after a turn this long
TOOL_TIMEOUT = 60.0  # seconds a notification tool may run before it is ended


class AppFocus:
    """Which view holds Sublime's keys, from the activation events (main
    thread): None once they went to another application, UNKNOWN before any
    event (taken as focused); and whether the package itself is bringing a
    chat to view (its activation events are not the user seeing the chat)."""

    UNKNOWN = 0
    keys_in: int | None = UNKNOWN
    showing = False

    @classmethod
    def focused(cls) -> bool:
        return cls.keys_in is not None


def app_focus_changed(view_id: int, activated: bool) -> None:
    if activated:
        AppFocus.keys_in = view_id
    elif AppFocus.keys_in in (view_id, AppFocus.UNKNOWN):  # the view holding the keys lost them
        AppFocus.keys_in = None


def chat_in_sight(window: sublime.Window, chat: WindowChat) -> bool:
    transcript = chat.transcript_view
    if transcript is None or not transcript.is_valid() or not AppFocus.focused() or sublime.active_window() != window:
        return False
    group, _ = window.get_view_index(transcript)
    return window.active_view_in_group(group) == transcript


class _DesktopQueue:
    """The tools waiting to run, and whether the one thread that runs them is
    running: a burst of notifications starts one thread, one tool at a time."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    waiting: ClassVar[deque[DesktopCommand]] = deque()
    running: ClassVar[bool] = False


def run_desktop_command(command: DesktopCommand) -> None:
    """Queue the tool for the one notification thread of ours, never waited on
    by the editor; it reaps each tool (ending it after TOOL_TIMEOUT) so no
    process is left behind."""
    with _DesktopQueue.lock:
        _DesktopQueue.waiting.append(command)
        if _DesktopQueue.running:
            return
        _DesktopQueue.running = True
    in_background(_run_queued_commands, "desktop notification")


def _run_queued_commands() -> None:
    try:
        while True:
            with _DesktopQueue.lock:
                if not _DesktopQueue.waiting:
                    _DesktopQueue.running = False
                    return
                command = _DesktopQueue.waiting.popleft()
            try:
                _run_one(command)
            except (OSError, ValueError) as error:
                log.warning("desktop notification with %s failed: %s", command.argv[0], error)
    except BaseException:
        with _DesktopQueue.lock:  # the next notification starts the thread again
            _DesktopQueue.running = False
        raise


def _run_one(command: DesktopCommand) -> None:
    executable = shutil.which(command.argv[0])
    if executable is None:
        log.debug("no %s: no desktop notification", command.argv[0])
        return
    process = subprocess.Popen(
        [executable, *command.argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={**os.environ, **command.env}, **own_group_options(),
    )
    try:
        process.wait(TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# What shows a desktop notification: tests put a recorder here (no popups).
runner: Callable[[DesktopCommand], None] = run_desktop_command


@threads.on_main
def notify(window: sublime.Window, chat: WindowChat, kind: str, text: str, *, desktop: bool = True) -> None:
    """The chat needs the user (`kind`: turn_ended, permission, question) and
    is out of sight: say so until it is seen."""
    line = display_text(text, TEXT_LIMIT)
    window.status_message(f"Qwen Code: {line}")
    for view in window.views():
        view.set_status(STATUS_KEY, f"Qwen Code: {line}")
    transcript = chat.transcript_view
    if transcript is not None and transcript.is_valid() and not transcript.name().startswith(TITLE_MARK):
        transcript.set_name(TITLE_MARK + transcript.name())
    chats.tell("notification", {"window": window.id(), "chat": chat.chat_id, "kind": kind, "text": line})
    command = desktop_command(sublime.platform(), line) if desktop and userprefs().chat_desktop_notifications else None
    if command is not None and not chat.desktop_told:  # one per chat until it is seen
        chat.desktop_told = True
        runner(command)


def waiting(window: sublime.Window, chat: WindowChat, kind: str, text: str, show: Callable[[], object]) -> None:
    """A permission or question waits: `show` brings it into view (the keys
    stay where they are) and, if the chat was out of sight, the user is told."""
    unseen = not chat_in_sight(window, chat)
    keys_in = AppFocus.keys_in
    AppFocus.showing = True
    try:
        show()
    finally:
        AppFocus.showing = False
    if keys_in is None:  # focusing a view does not bring Sublime to the front
        AppFocus.keys_in = None
    if unseen:
        notify(window, chat, kind, text)


@threads.on_main
def chat_seen(window: sublime.Window) -> None:
    """A chat is in sight again: its marks go; the status bar's once no chat
    of the window waits unseen."""
    if AppFocus.showing:
        return
    waiting_unseen = False
    for chat in chats.of_window(window):
        transcript = chat.transcript_view
        if transcript is None or not transcript.is_valid() or not transcript.name().startswith(TITLE_MARK):
            continue
        if chat_in_sight(window, chat):
            transcript.set_name(transcript.name()[len(TITLE_MARK):])
            chat.desktop_told = False  # the mark and the desktop's turn go together
        else:
            waiting_unseen = True
    if not waiting_unseen and any(chat_in_sight(window, chat) for chat in chats.of_window(window)):
        for view in window.views():
            view.erase_status(STATUS_KEY)


def track_turn(window_id: int) -> None:
    for chat in chats.of_window(window_by_id(window_id)):
        if chat.busy and chat.turn_started is None:
            chat.turn_started = time.monotonic()


def turn_ended(window_id: int, chat_id: int, stop_reason: str) -> None:
    """A turn ended (any thread): the user is told if the chat is out of sight;
    the desktop only after a long turn (a short one ends while they glance away)."""
    ended_chat = chats.by_id(chat_id)
    started = ended_chat.turn_started if ended_chat is not None else None
    if ended_chat is not None:
        ended_chat.turn_started = None
    if stop_reason == "cancelled":  # the user stopped it: nothing to tell
        return
    long_turn = started is not None and time.monotonic() - started >= LONG_TURN_SECONDS
    text = "the chat's answer is ready" + ("" if stop_reason == "end_turn" else f" ({stop_reason})")

    def tell() -> None:
        window, chat = window_by_id(window_id), chats.by_id(chat_id)
        if window is not None and chat is not None and not chat_in_sight(window, chat):
            notify(window, chat, "turn_ended", text, desktop=long_turn)

    sublime.set_timeout(tell)
