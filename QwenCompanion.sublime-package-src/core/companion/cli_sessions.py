"""MCP sessions of one server: who is connected and what waits to be sent.

The real CLI never sends DELETE; its sessions just go quiet. A session with no
open stream and no request for `idle_timeout` seconds is therefore expired
(`dropped_grace` seconds once it had a stream that dropped: the CLI retries
a dropped stream within about a second, or is gone),
and the number of sessions is capped so a misbehaving client cannot grow
memory without bound.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import threads
from .ide_messages import CONTEXT_UPDATE

MAX_PENDING = 256


@dataclass(eq=False)
class CliSession:
    id: str
    protocol_version: str
    client_name: str
    created: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    stream_open: bool = False
    had_stream: bool = False
    pending: deque[dict[str, Any]] = field(default_factory=deque)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    @threads.on_server_loop
    def enqueue(self, message: dict[str, Any]) -> None:
        """Queue a notification; only the newest context is worth sending."""
        if message.get("method") == CONTEXT_UPDATE:
            self.pending = deque(m for m in self.pending if m.get("method") != CONTEXT_UPDATE)
        self.pending.append(message)
        while len(self.pending) > MAX_PENDING:
            self.pending.popleft()
        self.wakeup.set()

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()


class TooManySessions(Exception):
    pass


class SessionRegistry:
    def __init__(
        self,
        *,
        idle_timeout: float,
        dropped_grace: float,
        max_sessions: int,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._sessions: dict[str, CliSession] = {}
        self._idle_timeout = idle_timeout
        self._dropped_grace = dropped_grace
        self._max_sessions = max_sessions
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[CliSession]:
        return iter(list(self._sessions.values()))

    def connected_count(self) -> int:
        return sum(1 for s in self._sessions.values() if s.stream_open)

    @threads.on_server_loop
    def create(self, protocol_version: str, client_name: str) -> CliSession:
        if len(self._sessions) >= self._max_sessions:
            self._evict_one()
        session = CliSession(id=secrets.token_hex(16), protocol_version=protocol_version, client_name=client_name)
        self._sessions[session.id] = session
        self._on_change()
        return session

    def get(self, session_id: str) -> CliSession | None:
        return self._sessions.get(session_id)

    @threads.on_server_loop
    def remove(self, session_id: str) -> CliSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()
            self._on_change()
        return session

    @threads.on_server_loop
    def set_stream_open(self, session: CliSession, is_open: bool) -> None:
        session.stream_open = is_open
        session.had_stream = session.had_stream or is_open
        session.touch()
        self._on_change()

    @threads.on_server_loop
    def expire_idle(self, now: float | None = None) -> list[CliSession]:
        now = time.monotonic() if now is None else now
        idle = [
            s for s in self._sessions.values()
            if not s.stream_open
            and now - s.last_seen >= (self._dropped_grace if s.had_stream else self._idle_timeout)
        ]
        for session in idle:
            self.remove(session.id)
        return idle

    @threads.on_server_loop
    def close_all(self) -> None:
        for session_id in list(self._sessions):
            self.remove(session_id)

    def _evict_one(self) -> None:
        quiet = [s for s in self._sessions.values() if not s.stream_open]
        if not quiet:
            raise TooManySessions(f"{self._max_sessions} sessions are connected already")
        self.remove(min(quiet, key=lambda s: s.last_seen).id)
