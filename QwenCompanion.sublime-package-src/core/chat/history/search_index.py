"""Search in Conversations' index of what was said: qwen 0.24.4 cannot
search its sessions (session/list gives titles and first prompts only), so
the package keeps, as chats happen, each turn's prompt and answer (cut to
TEXT_MAX_CHARS each) with its session's id, one JSON line a turn, in the
user's cache folder (the caller gives the path; never a project's folder).
It keeps no more than an export would: what the turn's tool calls and
requests gave from excluded files is left out as export.py leaves it out.

Bounded: past MAX_BYTES the oldest turns are dropped (the file is rewritten
with its newer half). The user's alone: the file and its temporary one are
0600 in a 0700 folder (tightened where an older version left them
readable). Written and read on a thread of ours (`writer`), never
Sublime's: a file of several MiB.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterable
from typing import BinaryIO

from ... import threads
from .export import Block, Excludes, naming_excluded, redacted

FILE_NAME = "conversations-index.jsonl"
TEXT_MAX_CHARS = 4000  # of a prompt, and of an answer, per turn
MAX_BYTES = 8 * 1024 * 1024  # the index's size before its oldest half goes
MAX_LINE_BYTES = 64 * 1024  # a longer line (not ours) is skipped
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600


def indexed_text(prompt: str, answer: str, turn_blocks: list[tuple[str, str]], excludes: Excludes) -> tuple[str, str]:
    """The prompt and answer with what an export leaves out left out: lines
    quoting what the turn's tool calls and requests on excluded files gave
    (`turn_blocks`: the turn's transcript blocks as (id, text))."""
    named = naming_excluded(turn_blocks, excludes)
    kept_prompt, kept_answer, *_ = redacted([Block("user", 0, prompt), Block("agent", 0, answer), *named], excludes)
    return kept_prompt.text, kept_answer.text


def _tighten(path: str, mode: int) -> None:
    """`path` readable by its owner alone (an older version made it 0755 / 0644)."""
    if os.name != "nt" and stat.S_IMODE(os.stat(path).st_mode) & ~mode:
        os.chmod(path, mode)


def _private_file(path: str, flags: int) -> BinaryIO:
    """`path` opened to write, made 0600 if it is new and tightened if it is not."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | flags | getattr(os, "O_BINARY", 0), PRIVATE_FILE)
    try:
        if os.name != "nt" and stat.S_IMODE(os.fstat(handle).st_mode) & ~PRIVATE_FILE:
            os.fchmod(handle, PRIVATE_FILE)
        return os.fdopen(handle, "wb")
    except BaseException:
        os.close(handle)
        raise


class SearchIndex:
    """The index file at `path`; every method may block on the disk (a thread of ours)."""

    def __init__(self, path: str, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    @threads.runs_on(threads.OURS)
    def add(self, session_id: str, prompt: str, answer: str) -> None:
        """One turn of `session_id`: its prompt and answer, each cut."""
        line = json.dumps({"session": session_id, "prompt": prompt[:TEXT_MAX_CHARS],
                           "answer": answer[:TEXT_MAX_CHARS]}, ensure_ascii=False) + "\n"
        with self._lock:
            folder = os.path.dirname(self.path)
            os.makedirs(folder, mode=PRIVATE_FOLDER, exist_ok=True)
            _tighten(folder, PRIVATE_FOLDER)
            with _private_file(self.path, os.O_APPEND) as out:
                out.write(line.encode("utf-8"))
            if os.path.getsize(self.path) > self.max_bytes:
                self._drop_oldest()

    def _drop_oldest(self) -> None:
        """Keep the newer turns that fill half the budget (written whole, then renamed over)."""
        with open(self.path, "rb") as source:
            lines = source.readlines()
        kept: list[bytes] = []
        size = 0
        for line in reversed(lines):
            size += len(line)
            if size > self.max_bytes // 2:
                break
            kept.append(line)
        temporary = self.path + ".tmp"
        with _private_file(temporary, os.O_TRUNC) as out:
            out.writelines(reversed(kept))
        os.replace(temporary, self.path)

    def _turns(self) -> Iterable[tuple[str, str]]:
        """(session, its turn's text) of each readable line."""
        try:
            source = open(self.path, "rb")  # noqa: SIM115  (closed below; a missing index is empty)
        except FileNotFoundError:
            return
        with source:
            for raw in source:
                if len(raw) > MAX_LINE_BYTES:
                    continue
                try:
                    turn = json.loads(raw)
                except ValueError:
                    continue  # a line cut by a crash
                session = turn.get("session") if isinstance(turn, dict) else None
                if isinstance(session, str):
                    yield session, "\n".join(text for text in (turn.get("prompt"), turn.get("answer"))
                                             if isinstance(text, str))

    @threads.runs_on(threads.OURS)
    def sessions_matching(self, query: str) -> set[str]:
        """The sessions whose turns, together, hold every word of `query` (any case)."""
        words = query.casefold().split()
        if not words:
            return set()
        found: dict[str, set[str]] = {}
        with self._lock:
            for session, text in self._turns():
                folded = text.casefold()
                found.setdefault(session, set()).update(word for word in words if word in folded)
        return {session for session, seen in found.items() if len(seen) == len(words)}
