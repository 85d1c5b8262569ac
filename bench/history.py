"""The Chat History rows of `make bench`: the list of an agent with 10,000
sessions, the search filter, a 1,000-message conversation loaded, and the
Markdown export of a 5,000-message chat (bench/history_host.py, the built
package in the simulated host on the scripted agent). No peer: the goals are
absolute."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, percentile, progress

SESSIONS = 10_000
RESUMED = 1_000
EXPORTED = 5_000


def history_rows(rounds: int, workdir: Path) -> list[Row]:
    listed, memory, filtering, resumed, exported, export_main = (Samples() for _ in range(6))
    progress(f"history: {SESSIONS:,} sessions listed, a {RESUMED:,}-message one loaded, a {EXPORTED:,}-message export")
    for number in range(rounds):
        result = run_host("bench.history_host", workdir / f"history-{number}", SESSIONS, RESUMED, EXPORTED)
        listed.add("ours", floats(result["list_ms"]))
        memory.add("ours", floats(result["list_mib"]))
        filtering.add("ours", floats(result["filter_ms"]))
        resumed.add("ours", floats(result["resume_ms"]))
        exported.add("ours", floats(result["export_ms"]))
        export_main.add("ours", floats(result["export_main_ms"]))
    return [
        Row("13", f"Chat History of an agent with {SESSIONS:,} sessions (the package reads its first 1,000, pages of "
            "100): command → the list shown, the agent's pages included", "ms", listed, "≤ 150 ms",
            lambda p50, ratio: p50 <= 150),
        Row("13", "Chat History: Python memory the listing allocates at its peak (tracemalloc)", "MiB", memory,
            "≤ 20 MiB", lambda p50, ratio: p50 <= 20),
        Row("13", "Search in Conversations: the package's filter over the 1,000 listed sessions, per query as typed "
            "(Sublime filters the list itself per keystroke)", "ms", filtering, "≤ 16 ms p99",
            lambda p50, ratio: percentile(filtering.values["ours"], 99) <= 16),
        Row("13", f"a {RESUMED:,}-message conversation opened from Chat History by an agent that replays it "
            "(session/load; qwen's session/resume replays none): Enter → its last message shown", "ms", resumed,
            "≤ 300 ms", lambda p50, ratio: p50 <= 300),
        Row("13", f"Export Chat to Markdown of a {EXPORTED:,}-message chat, made off the main thread: command → "
            "the text", "ms", exported, "≤ 1 s", lambda p50, ratio: p50 <= 1000),
        Row("13", "the same: the main thread's part (the command's call, a round trip to it included)", "ms",
            export_main, "≤ 16 ms", lambda p50, ratio: p50 <= 16),
    ]
