"""Starting `qwen` for a one-shot stream-json exchange: in a process group
of its own (the launcher may start a child node; ending the group ends
both), with its output read as whole lines of any length."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import deque
from dataclasses import dataclass
from typing import Any

READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Invocation:
    """One run of `qwen`: its command line, the folder it runs in, what it adds
    to the environment, and the prompt it is given."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    prompt: str


async def spawn(argv: list[str], cwd: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW
    else:
        kwargs["start_new_session"] = True
    return await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env={**os.environ, **env}, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, **kwargs,
    )


class Lines:
    """A stream's lines, without asyncio's `readline` limit (64 KiB by
    default: an answer holding a whole file is one longer line). Only each
    new chunk is split; a long line's pieces are joined once, when it ends."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream
        self._partial: list[bytes] = []  # the pieces of a line not ended yet
        self._ready: deque[bytes] = deque()

    async def next(self) -> bytes | None:
        """The next line without its newline (the last may lack one); None
        at the end of the stream."""
        while not self._ready:
            chunk = await self._stream.read(READ_CHUNK)
            if not chunk:
                last = b"".join(self._partial)
                self._partial.clear()
                return last or None
            first, *rest = chunk.split(b"\n")
            self._partial.append(first)
            if rest:
                self._ready.append(b"".join(self._partial))
                self._ready.extend(rest[:-1])
                self._partial = [rest[-1]]
        return self._ready.popleft()
