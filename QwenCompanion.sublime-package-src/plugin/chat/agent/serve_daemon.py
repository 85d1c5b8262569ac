"""The `qwen serve` daemons (chat_transport "serve") as Diagnose, the driver
and *Qwen Code: Stop Serve Daemon* see them: the window's, and every one the
package started (Diagnose lists them, each with a Stop link). The functions
here block (a record read, an HTTP request, a process group's end) unless
marked: call them from a thread of ours, never from Sublime's main or
worker thread."""

from __future__ import annotations

import logging
import time
from concurrent.futures import CancelledError

import sublime

from ....core import threads
from ....core.serve.daemon import (
    DaemonRecord,
    DaemonRefused,
    DaemonStatus,
    RecordedDaemon,
    daemon_status,
    read_record,
    record_path,
    recorded_daemons,
    stop_by_key,
    stop_recorded,
    sweep_records,
)
from ...background import in_background
from ...paths import package_cache
from ...settings import userprefs
from ..window_chats import chats
from .agents import serve_folders

log = logging.getLogger(__name__)

STOP_LINKS_KEY = "qwen_serve_stop_links"
DAEMONS_HEADING = "qwen serve daemons the package started"


def window_record(window: sublime.Window) -> DaemonRecord | None:
    """The record of the daemon of the window's folders, if one was started."""
    return read_record(record_path(package_cache(), serve_folders(window)))


def serve_status(window: sublime.Window) -> DaemonStatus | None:
    """The daemon's own account (GET /daemon/status), None when none is recorded.
    Raises OSError when the recorded daemon does not answer."""
    record = window_record(window)
    return daemon_status(record) if record is not None else None


def stop_serve(window: sublime.Window) -> bool:
    """End the daemon of the window's folders and its agents (the window's chats
    on it first, so they do not read a dead stream); True when one ran."""
    from ....core.serve.serve_bridge import END_DAEMON_SECONDS, ServeConnection  # acp and pydantic: behind the gate

    connection = chats.serve_connection(window)
    if isinstance(connection, ServeConnection):
        ending = connection.end_daemon()
        try:
            ended = ending.result(END_DAEMON_SECONDS)
        except (TimeoutError, CancelledError):
            # The chat's loop goes on with it (or its window closed, and the
            # drain ends it); its record is already forgotten.
            log.warning("serve: the daemon was still ending after %.0f s", END_DAEMON_SECONDS)
            return True
        if ended:
            # Its record is forgotten and the daemon ended: a record read now may
            # already be the next daemon's, started by a prompt meanwhile.
            return True
    return stop_recorded(package_cache(), serve_folders(window)) is not None


def serve_report_rows(window: sublime.Window) -> list[tuple[str, str]]:
    """Diagnose's rows about the daemon (none when the window neither uses nor has one)."""
    try:
        record = window_record(window)
        if record is None:
            return [("daemon", "none started for these folders")] if userprefs().chat_transport == "serve" else []
        status = daemon_status(record)
    except (OSError, DaemonRefused) as error:
        return [("daemon", f"not usable: {error}")]
    auth = "token required" if status.require_auth else "NO AUTH"
    bind = "loopback" if status.loopback else "NOT LOOPBACK"
    return [("daemon", f"qwen serve {status.version}, pid {status.pid}, port {status.port}, {auth}, {bind}"),
            ("sessions", str(status.sessions))]


def sweep_serve_daemons() -> None:
    """At the package's start (any thread; the work runs on one of ours):
    records of daemons that are gone are forgotten, and a daemon whose folder
    no longer exists is stopped."""

    def sweep() -> None:
        for done in sweep_records(package_cache()):
            log.info("serve: %s", done)

    in_background(sweep, "serve sweep")


def stop_recorded_daemon(key: str) -> DaemonRecord | None:
    """Stop the daemon recorded under `key` (Diagnose's Stop)."""
    return stop_by_key(package_cache(), key)


def _daemon_row(daemon: RecordedDaemon) -> tuple[str, str]:
    record = daemon.record
    if record is None:
        return daemon.key, f"record refused: {daemon.problem}"
    state = "running" if daemon.running else "no longer running"
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.started_at))
    return daemon.key, f"{', '.join(record.folders)}: pid {record.pid}, port {record.port}, {state}, started {started}"


def all_daemons_rows() -> list[tuple[str, str]]:
    """Diagnose's list of every daemon the package started: (record key, what it is)."""
    return [_daemon_row(daemon) for daemon in recorded_daemons(package_cache())]


@threads.on_main
def add_stop_links(view: sublime.View) -> None:
    """A Stop link after each running daemon's row of the report in `view`."""
    heading = view.find(DAEMONS_HEADING, 0, sublime.FindFlags.LITERAL)
    phantoms: list[sublime.Phantom] = []
    if heading.a >= 0:
        for row in view.find_all(r"^  [0-9a-f]{32}  .*, running, ", sublime.FindFlags.NONE):
            if row.a < heading.a:
                continue
            key = view.substr(row).split()[0]
            phantoms.append(sublime.Phantom(sublime.Region(view.line(row).b), f'<a href="{key}">Stop</a>',
                                            sublime.PhantomLayout.INLINE,
                                            lambda href: _stop_from_report(view, href)))
    links = sublime.PhantomSet(view, STOP_LINKS_KEY)
    links.update(phantoms)
    _phantom_sets[view.id()] = links


_phantom_sets: dict[int, sublime.PhantomSet] = {}  # a PhantomSet's phantoms go when it is collected; pruned at its view's close


def forget_stop_links(view_id: int) -> None:
    _phantom_sets.pop(view_id, None)


@threads.on_main
def _stop_from_report(view: sublime.View, key: str) -> None:
    window = view.window()

    def stop() -> None:
        try:
            stopped = stop_recorded_daemon(key)
        except DaemonRefused as refused:
            message = f"Qwen Code: {refused}"
        else:
            message = (f"Qwen Code: stopped {stopped.describe()}" if stopped is not None
                       else "Qwen Code: that serve daemon is no longer recorded")
        if window is not None:
            sublime.set_timeout(lambda: window.status_message(message))

    in_background(stop, "serve stop")
