"""Three worktree chats streaming at once under benchmark: the built
QwenCompanion in the simulated Sublime host (a process of its own, as
Sublime's plugin host is), a git repository as its folder, three chats made
by New Chat in a Worktree (each in a worktree of its own), all on
bench/chat_agent.py. Prints one JSON line:

    python -m bench.worktrees_host WORKDIR CHUNKS RATE

- "update_ms": main-thread time of each view update of the three chats'
  transcripts while each chat's agent streams CHUNKS chunks at RATE a second,
  the three at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.host import PACKAGE, BenchChat
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parent / "chat_agent.py"
WAIT = 120.0
CHATS = 3


def _repository(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "files"]):
        if args[0] == "add":
            (folder / "main.py").write_text("print('hello')\n")
        subprocess.run(["git", "-C", str(folder), "-c", "user.name=b", "-c", "user.email=b@b", *args], check=True,
                       capture_output=True)


def main(workdir: Path, chunks: int, rate: float) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        _repository(folder)
        bench = BenchChat(host, folder, [sys.executable, str(AGENT)], WAIT)  # the window's own chat, idle
        chats = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats
        made: list[int] = []
        ended: list[int] = []
        done = threading.Semaphore(0)

        def observe(event: str, details: dict[str, Any]) -> None:
            if event == "worktree_created":
                made.append(details["chat"])
            elif event == "chat_turn_ended":
                ended.append(details["chat"])
                done.release()

        chats.observers.append(observe)
        for number in range(CHATS):
            host.run_on_main(lambda name=f"task{number}": host.window.run_command("qwen_chat_new_worktree",
                                                                                   {"name": name}))
            host.wait_for(lambda count=number + 1: len(made) >= count, timeout=WAIT)
        worktree_chats = [chats.by_id(chat_id) for chat_id in made]
        for chat in worktree_chats:
            assert chat.worktree is not None
            chat.core.start().result(WAIT)
        host.wait_idle(timeout=WAIT)

        updates: list[float] = []

        def timed(apply_pending: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                started = time.perf_counter()
                apply_pending()
                updates.append((time.perf_counter() - started) * 1000)

            return run

        for chat in worktree_chats:
            chat.apply_pending = timed(chat.apply_pending)
        for chat in worktree_chats:
            chat.core.send(f"stream {chunks} {rate} 40")
        for _ in worktree_chats:
            if not done.acquire(timeout=WAIT):
                raise TimeoutError("a worktree chat's turn did not end")
        for chat in worktree_chats:
            chat.core.streamer.flush()
        host.wait_idle(timeout=WAIT)
        assert sorted(ended) == sorted(made), (ended, made)
        assert bench.window_chat.worktree is None
        return {"update_ms": updates, "chats": len(worktree_chats)}
    finally:
        host.close()


if __name__ == "__main__":
    workdir, chunks, rate = sys.argv[1:4]
    print(json.dumps(main(Path(workdir), int(chunks), float(rate))), flush=True)
