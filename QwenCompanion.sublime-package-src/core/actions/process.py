"""Starting `qwen` for a one-shot stream-json exchange: in a process group
of its own (the launcher may start a child node; ending the group ends
both), with its output read as whole lines of any length."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from dataclasses import dataclass

from ..cli.processes import own_group_options, start_process

READ_CHUNK = 64 * 1024
# The longest line taken from qwen's output (one stream-json message).
MAX_LINE_BYTES = 32 * 1024 * 1024
EXIT_GRACE = 2.0  # for qwen to end once its input is closed
TERM_GRACE = 2.0  # after SIGTERM, before SIGKILL (cli/processes.py: end_group says why)


@dataclass(frozen=True)
class Invocation:
    """One run of `qwen`: its command line, the folder it runs in, what it adds
    to the environment, and the prompt it is given."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    prompt: str


async def spawn(argv: list[str], cwd: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await start_process(
        *argv, cwd=cwd, env={**os.environ, **env}, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, **own_group_options(),
    )


class Lines:
    """A stream's lines, longer than asyncio's `readline` limit (64 KiB by
    default: an answer holding a whole file is one longer line) but at most
    `longest` bytes: of a longer line only that much is kept, the rest is
    read and dropped as it comes (`cut` says so). Only each new chunk is
    split; a long line's pieces are joined once, when it ends."""

    def __init__(self, stream: asyncio.StreamReader, longest: int = MAX_LINE_BYTES) -> None:
        self._stream = stream
        self._longest = longest
        self._partial: list[bytes] = []  # the pieces of a line not ended yet
        self._held = 0  # their size, and what was dropped of the line
        self._ready: deque[tuple[bytes, bool]] = deque()
        self.cut = False  # the line last returned was longer than `longest`

    def _keep(self, piece: bytes) -> None:
        room = self._longest - min(self._held, self._longest)
        if room:
            self._partial.append(piece[:room])
        self._held += len(piece)

    def _end_line(self) -> tuple[bytes, bool]:
        line, cut = b"".join(self._partial), self._held > self._longest
        self._partial, self._held = [], 0
        return line, cut

    async def next(self) -> bytes | None:
        """The next line without its newline (the last may lack one); None
        at the end of the stream."""
        while not self._ready:
            chunk = await self._stream.read(READ_CHUNK)
            if not chunk:
                last, cut = self._end_line()
                self.cut = cut
                return last if last or cut else None
            first, *rest = chunk.split(b"\n")
            self._keep(first)
            if rest:
                self._ready.append(self._end_line())
                for line in rest[:-1]:
                    self._keep(line)
                    self._ready.append(self._end_line())
                self._keep(rest[-1])
        line, self.cut = self._ready.popleft()
        return line
