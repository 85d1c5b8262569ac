"""The window's `qwen serve` daemon (chat_transport "serve") as Diagnose, the
driver and *Qwen Code: Stop Serve Daemon* see it. Both functions here block
(a record read, an HTTP request, a process group's end): call them from a
thread of ours, never from Sublime's main or worker thread."""

from __future__ import annotations

import sublime

from ....core.serve.daemon import (
    DaemonRecord,
    DaemonRefused,
    DaemonStatus,
    daemon_status,
    read_record,
    record_path,
    stop_recorded,
)
from ...paths import package_cache
from ...settings import userprefs
from ..chats import chats
from .agents import serve_folders

END_WAIT_SECONDS = 10.0


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
    from ....core.serve.serve_bridge import ServeConnection  # acp and pydantic: behind the gate

    connection = chats.serve_connection(window)
    ended = isinstance(connection, ServeConnection) and connection.end_daemon().result(END_WAIT_SECONDS)
    return stop_recorded(package_cache(), serve_folders(window)) is not None or ended


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
