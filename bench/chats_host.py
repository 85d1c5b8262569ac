"""Several chats in one window under benchmark: the built QwenCompanion in
the simulated Sublime host (a process of its own, as Sublime's plugin host
is), its chats on bench/chat_agent.py. Prints one JSON line:

    python -m bench.chats_host WORKDIR MESSAGES SWITCHES

- "switch_ms": main-thread time of each switch between two chats of MESSAGES
  messages each (half prompts, half answers), as Switch Chat… makes it;
- "second_mib", "tenth_mib": the process's RSS added by a window's second
  and tenth chat (each opened with its tabs and its session started), and
  "second_traced_mib", "tenth_traced_mib": the Python memory they hold
  (tracemalloc, which RSS hides when freed memory is reused);
- "agents": agent processes the window's ten chats run.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.host import PACKAGE, BenchChat, rss_bytes
from tests.sublime_sim import SimulatedHost
from tests.support.processes import descendants

AGENT = Path(__file__).resolve().parent / "chat_agent.py"
WAIT = 120.0
CHATS = 10


def agents() -> int:
    count = 0
    for pid in descendants(os.getpid()):
        try:
            count += AGENT.name.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
    return count


def main(workdir: Path, messages: int, switches: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        bench = BenchChat(host, folder, [sys.executable, str(AGENT)], WAIT)
        tabs = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_tabs"]
        window = host.window

        def new_chat() -> Any:
            chat = host.run_on_main(lambda: tabs.open_new_chat(window))
            chat.core.start().result(WAIT)
            host.wait_idle(timeout=WAIT)
            return chat

        def added_by_new_chat() -> tuple[Any, float, float]:
            """The chat, and the RSS and Python memory it added (MiB)."""
            gc.collect()
            before = rss_bytes()
            tracemalloc.start()
            chat = new_chat()
            gc.collect()
            traced, _ = tracemalloc.get_traced_memory()  # what is still held of what was allocated meanwhile
            tracemalloc.stop()
            return chat, (rss_bytes() - before) / 2**20, traced / 2**20

        def fill(chat: Any) -> None:
            bench.window_chat, bench.conversation = chat, chat.core
            for _ in range(messages // 2):
                bench.turn("stream 1 0 200")

        first = bench.window_chat
        fill(first)
        second, second_mib, second_traced = added_by_new_chat()
        fill(second)
        for _ in range(CHATS - 3):
            new_chat()
        _, tenth_mib, tenth_traced = added_by_new_chat()

        def switch_to(chat: Any) -> float:
            def go() -> float:
                started = time.perf_counter()
                tabs.select_chat(window, chat)
                return (time.perf_counter() - started) * 1000

            spent: float = host.run_on_main(go)
            host.wait_idle(timeout=WAIT)
            return spent

        switch_ms = [switch_to(first if number % 2 else second) for number in range(switches)]
        return {"switch_ms": switch_ms, "second_mib": second_mib, "tenth_mib": tenth_mib,
                "second_traced_mib": second_traced, "tenth_traced_mib": tenth_traced, "agents": agents()}
    finally:
        host.close()


if __name__ == "__main__":
    workdir, messages, switches = sys.argv[1:4]
    print(json.dumps(main(Path(workdir), int(messages), int(switches))), flush=True)
