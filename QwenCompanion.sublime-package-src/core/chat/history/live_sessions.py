"""Which of qwen's sessions a live terminal (qwen's TUI) holds: two writers
on one session are refused, as qwen 0.24.4 itself lets both write (two
processes prompting one session both succeed and the record forks).

qwen keeps a registry of its running processes, the one `qwen sessions ps`
reads: `<qwen home>/sessions/<pid>.json` for a TUI (`kind: "tui"`, the
session it holds in `sessionId`), `<pid>-<slot>.json` for each session a
`qwen --acp` process hosts (`kind: "headless"`: ours among them). A record
outlives a process that was killed, so, as `qwen sessions ps` does, one
counts only while its process runs: the pid is alive and, on Linux, its
start token (`<boot id>:<start time>` from /proc) is the one recorded. Read
off the main thread (a directory of small files); every file is bounded and
checked as hostile input.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from ...cli.process_identity import linux_proc_start

REGISTRY_DIR = "sessions"
RECORD_NAME = re.compile(r"^\d+(-[0-9a-f]{8})?\.json$")  # qwen's own pattern; temp files are skipped
TERMINAL_KIND = "tui"
MAX_RECORDS = 500  # files read at most (a registry left full of dead records)
MAX_RECORD_BYTES = 64 * 1024

ProcStart = Callable[[int], str | None]
Alive = Callable[[int], bool]  # is a process of this pid running (the companion's `pid_alive`, given by the caller)


class SessionHeld(Exception):
    """The session is open in a live qwen terminal: the chat does not write it too."""


@dataclass(frozen=True)
class Holder:
    """A live qwen terminal holding a session."""

    pid: int
    cwd: str


def _record(path: str) -> dict[str, object] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_RECORD_BYTES + 1)
        data = json.loads(text) if len(text) <= MAX_RECORD_BYTES else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_running(pid: int, recorded_start: object, alive: Alive, proc_start: ProcStart = linux_proc_start) -> bool:
    """The recorded process still runs: alive, and the same process (its start token, where both are known)."""
    if not alive(pid):
        return False
    current = proc_start(pid) if isinstance(recorded_start, str) else None
    return current is None or current == recorded_start


def terminal_holders(qwen_home: str, session_id: str, alive: Alive,
                     proc_start: ProcStart = linux_proc_start) -> list[Holder]:
    """The live qwen terminals that hold `session_id` (none when the registry cannot be read)."""
    folder = os.path.join(qwen_home, REGISTRY_DIR)
    try:
        names = sorted(name for name in os.listdir(folder) if RECORD_NAME.match(name))[:MAX_RECORDS]
    except OSError:
        return []
    holders: list[Holder] = []
    for name in names:
        record = _record(os.path.join(folder, name))
        if record is None or record.get("sessionId") != session_id or record.get("kind") != TERMINAL_KIND:
            continue
        pid = record.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or str(pid) != name.split("-")[0].split(".")[0]:
            continue  # qwen trusts a record only under its own pid's name
        if is_running(pid, record.get("procStart"), alive, proc_start):
            cwd = record.get("cwd")
            holders.append(Holder(pid, cwd[:4096] if isinstance(cwd, str) else ""))
    return holders


def held_message(holders: list[Holder]) -> str:
    """Why the chat does not open the session (the user closes the terminal's qwen first)."""
    where = f" (process {holders[0].pid}{', in ' + holders[0].cwd if holders[0].cwd else ''})"
    return ("Qwen Code: this conversation is open in qwen in a terminal" + where + "; quit qwen there first, "
            "as two writers on one conversation would fork it")
