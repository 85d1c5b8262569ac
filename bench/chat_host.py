"""The package's chat under benchmark: the built QwenCompanion in the
simulated Sublime host (a process of its own, as Sublime's plugin host is),
its chat started on bench/chat_agent.py. Prints one JSON line:

    python -m bench.chat_host WORKDIR UNPACED PACED RATE MESSAGES

- "rate": session/update notifications handled a second (first to last
  handled) while the agent writes UNPACED chunks at once;
- "latency_ms": chunk written by the agent → its text in the transcript view,
  for PACED chunks at RATE a second; "flush_ms": main-thread time of each
  view update meanwhile;
- "rss_added_mib": the process's RSS added by a chat of MESSAGES messages
  (half prompts, half answers).
"""

from __future__ import annotations

import gc
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import BenchChat, rss_bytes
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parent / "chat_agent.py"
MARKER = re.compile(r"§(\d+)§")
WAIT = 120.0


def main(workdir: Path, unpaced: int, paced: int, rate: float, messages: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        bench = BenchChat(host, folder, [sys.executable, str(AGENT)], WAIT)
        window_chat, chat, turn = bench.window_chat, bench.conversation, bench.turn

        # 1. Throughput: every session/update handled, first to last.
        handled: list[int] = []
        original_update = chat.session_update

        def counted(notification: Any) -> None:
            original_update(notification)
            handled.append(time.monotonic_ns())

        chat.session_update = counted
        turn(f"stream {unpaced} 0 40")
        chat.session_update = original_update
        rate_handled = (len(handled) - 1) / ((handled[-1] - handled[0]) / 1e9)

        # 2. Latency to the view and main-thread time per flush, paced.
        latencies: list[float] = []
        flushes: list[float] = []
        original_apply = window_chat.apply_pending

        def timed_apply() -> None:
            with window_chat._pending_lock:
                texts = [edit.text for edit in window_chat._pending]
            start = time.perf_counter()
            original_apply()
            flushes.append((time.perf_counter() - start) * 1000)
            shown = time.monotonic_ns()
            latencies.extend((shown - int(ns)) / 1e6 for text in texts for ns in MARKER.findall(text))

        window_chat.apply_pending = timed_apply
        turn(f"stream {paced} {rate} 40")
        window_chat.apply_pending = original_apply

        # 3. Memory added by a long chat.
        gc.collect()
        before = rss_bytes()
        for _ in range(messages // 2):
            turn("stream 1 0 200")
        gc.collect()
        after = rss_bytes()
        return {
            "rate": rate_handled,
            "handled": len(handled),
            "latency_ms": latencies,
            "flush_ms": flushes,
            "rss_added_mib": (after - before) / 2**20,
        }
    finally:
        host.close()


if __name__ == "__main__":
    workdir, unpaced, paced, rate, messages = sys.argv[1:6]
    result = main(Path(workdir), int(unpaced), int(paced), float(rate), int(messages))
    print(json.dumps(result), flush=True)
