"""Run `python -m tests.headless` as a child process and talk JSON lines to it."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0


class HeadlessSublime:
    """The built package in the simulated editor, in its own process."""

    def __init__(self, workspace: Path, home: Path) -> None:
        temp = home / "tmp"  # gemini-cli's discovery files go under it
        temp.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(home), "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
        env.pop("QWEN_HOME", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.headless", "--workspace", str(workspace)],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._collect_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.ready = self.wait_event(lambda e: e.get("event") == "ready")

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(json.loads(line))

    def _collect_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def _next(self, deadline: float) -> dict[str, Any]:
        try:
            message = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"the headless editor said nothing in time; stderr:\n{''.join(self.stderr)[-3000:]}") from None
        if "event" in message:
            self.events.append(message)
        return message

    def wait_event(self, match: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict[str, Any]:
        """The first event (seen before or arriving now) that matches."""
        for event in self.events:
            if match(event):
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if "event" in message and match(message):
                return message

    def do(self, verb: str, **arguments: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"do": verb, **arguments}) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + WAIT
        while True:
            message = self._next(deadline)
            if message.get("do") == verb:
                return message

    def connected(self) -> int:
        sessions = [e for e in self.events if e.get("event") == "sessions"]
        return sessions[-1]["connected"] if sessions else 0

    def quit(self) -> dict[str, Any]:
        answer = self.do("quit")
        self.process.wait(WAIT)
        self._close_pipes()
        return answer

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)
        self._close_pipes()

    def _close_pipes(self) -> None:
        """Once the readers have seen the end of what the process wrote."""
        for reader in self._readers:
            reader.join(WAIT)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
