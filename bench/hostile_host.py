"""The package's chat against a hostile agent: the built QwenCompanion in the
simulated Sublime host (a process of its own), its chat started on the
scripted agent tests/rig/fake_acp_agent.py. Prints one JSON line:

    python -m bench.hostile_host WORKDIR TOOL_CALLS

- "threads_s": CPU time of the package's chat and streamer threads for one
  turn of TOOL_CALLS tool calls (each started, then completed);
- "main_ms": main-thread CPU time of each transcript update in that turn
  (the simulator's buffer included: a rope, an edit costs O(log n) as in
  Sublime);
- "main_ms_without_gc": the same, less the garbage collections that ran
  inside each update (a full collection walks every tracked object in the
  process, the simulator's included: reported apart, below);
- "gc_full_ms": each full collection during the turn (CPU time); "gc_in_updates_ms":
  the collections that landed inside updates;
- "gc_after_ms": the CPU time of one full collection right after the turn,
  with what is left;
- "tracked": gc-tracked objects by owner at the end of the turn
  (bench/gc_census.py);
- "package_s": the package's whole time for that turn: its threads and its
  main-thread updates (the agent's own time left out);
- "rss_peak_added_mib": the most the process's RSS grew above its level before
  a turn in which the agent sends a 256 MiB line, 64 MiB on stderr, and reads
  one line of a 200 MB file and the whole of it.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.gc_census import GcPauses, census
from bench.host import BenchChat, rss_bytes
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parent.parent / "tests" / "rig" / "fake_acp_agent.py"
WAIT = 600.0
MIB = 1024 * 1024


def thread_cpu(name: str) -> float:
    """CPU seconds of the live thread called `name` (0 when there is none)."""
    for thread in threading.enumerate():
        if thread.name == name and thread.native_id is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
    return 0.0


def package_cpu() -> float:
    return thread_cpu("QwenCompanion chat") + thread_cpu("QwenCompanion chat streamer")


def main(workdir: Path, tool_calls: int) -> dict[str, Any]:
    folder = workdir / "project"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "big.log").open("wb") as out:
        line = b"." * 99 + b"\n"
        for _ in range(200):
            out.write(line * 10_000)
    file_request = {"request": "fs/read_text_file", "params": {"sessionId": "", "path": str(folder / "big.log")}}
    script = workdir / "script.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_calls": tool_calls}],
        [{"big": 256 * MIB}, {"stderr": 64 * MIB},
         {"request": "fs/read_text_file", "params": {**file_request["params"], "line": 5, "limit": 1}},
         file_request],
    ]}))
    host = SimulatedHost(workdir / "Packages", watchdog_ms=None, check_threads=False)  # measured here, not enforced
    try:
        bench = BenchChat(host, folder, [sys.executable, str(AGENT), str(script)], WAIT)
        window_chat, turn = bench.window_chat, bench.turn

        # 1. A flood of tool calls: package time, and main-thread time per update.
        main_ms: list[float] = []
        gc_in_updates_ms: list[float] = []
        original_apply = window_chat.apply_pending
        collections = GcPauses()

        def timed_apply() -> None:
            start, wall = time.thread_time(), time.perf_counter()  # CPU: a loaded machine's descheduling is not ours
            original_apply()
            main_ms.append((time.thread_time() - start) * 1000)
            gc_in_updates_ms.append(collections.within(wall, time.perf_counter()) * 1000)

        window_chat.apply_pending = timed_apply
        cpu_before = package_cpu()
        with collections:
            turn("flood")
        threads_s = package_cpu() - cpu_before
        window_chat.apply_pending = original_apply
        started = time.thread_time()
        gc.collect()
        gc_after_ms = (time.thread_time() - started) * 1000
        tracked = census()

        # 2. Oversized inputs: the most the RSS grows meanwhile.
        before = rss_bytes()
        peak = before
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.01):
                peak = max(peak, rss_bytes())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        turn("oversized")
        done.set()
        sampler.join()
        return {"threads_s": threads_s, "main_ms": main_ms,
                "main_ms_without_gc": [max(0.0, ms - gc_ms) for ms, gc_ms in zip(main_ms, gc_in_updates_ms, strict=True)],
                "gc_in_updates_ms": [ms for ms in gc_in_updates_ms if ms], "gc_full_ms": collections.full(),
                "gc_after_ms": gc_after_ms, "tracked": tracked, "package_s": threads_s + sum(main_ms) / 1000,
                "rss_peak_added_mib": (peak - before) / MIB}
    finally:
        host.close()


if __name__ == "__main__":
    result = main(Path(sys.argv[1]), int(sys.argv[2]))
    print(json.dumps(result), flush=True)
