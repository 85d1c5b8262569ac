"""A window's port and lock file, claimed before the server's libraries load.

Importing pydantic, mcp-types and aiohttp takes most of half a second; a
`qwen` started meanwhile reads the lock directory once and would not see this
window. So the listening socket is bound and the lock file written first (the
standard library only), and the server adopts the socket when it starts; a
CLI that connects in between waits in the socket's backlog.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from . import lockfile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reservation:
    listener: socket.socket
    port: int
    token: str

    def release(self, lock_directory: Path) -> None:
        """Give the claim back unused (its window closed before its server started)."""
        lockfile.remove_lock(lock_directory, self.port)
        self.listener.close()


def bind_loopback() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def reserve(folders: list[str], lock_directory: Path, ppid: int | None = None) -> Reservation:
    listener = bind_loopback()
    reservation = Reservation(listener, listener.getsockname()[1], secrets.token_hex(32))  # 256-bit token
    problem = lockfile.publish(
        lock_directory,
        port=reservation.port,
        folders=folders,
        token=reservation.token,
        ppid=os.getpid() if ppid is None else ppid,
    )
    if problem:  # the companion writes it again and reports the error
        log.debug("early lock file not written: %s", problem)
    return reservation
