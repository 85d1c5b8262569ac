"""The several-chats rows of `make bench`: switching between two chats of
1,000 messages each on the main thread, and what a window's second and tenth
chat add to the plugin host (RSS, and the Python memory they hold), with the
agent processes its ten chats run (bench/chats_host.py, a process of its own
each round). No peer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.chat import floats, run_host
from bench.run import RSS_NOISE_MIB, Row, Samples, percentile, progress

MESSAGES = 1_000
SWITCHES = 40
MIB_GOAL = 5.0


def chats_rows(rounds: int, workdir: Path) -> list[Row]:
    switch, second, tenth, second_traced, tenth_traced, agents = (Samples() for _ in range(6))
    progress(f"chats: switching between chats of {MESSAGES:,} messages, the memory of a 2nd and a 10th chat")
    for number in range(rounds):
        result = run_host("bench.chats_host", workdir / f"chats-{number}", MESSAGES, SWITCHES)
        switch.add("ours", floats(result["switch_ms"]))
        second.add("ours", floats(result["second_mib"]))
        tenth.add("ours", floats(result["tenth_mib"]))
        second_traced.add("ours", floats(result["second_traced_mib"]))
        tenth_traced.add("ours", floats(result["tenth_traced_mib"]))
        agents.add("ours", floats(result["agents"]))

    def at_most(limit: float) -> Callable[[float, float | None], bool | None]:
        return lambda p50, ratio: p50 <= limit

    return [
        Row("12", f"chats: switching chats ({MESSAGES:,} messages in each), main thread", "ms", switch, "≤ 16 ms p99",
            lambda p50, ratio: percentile(switch.values["ours"], 99) <= 16),
        Row("12", "chats: plugin-host RSS added by a window's 2nd chat", "MiB", second, f"≤ {MIB_GOAL:g} MiB",
            at_most(MIB_GOAL), noise=RSS_NOISE_MIB),
        Row("12", "chats: plugin-host RSS added by a window's 10th chat", "MiB", tenth, f"≤ {MIB_GOAL:g} MiB",
            at_most(MIB_GOAL), noise=RSS_NOISE_MIB),
        Row("12", "chats: Python memory (tracemalloc) held by a window's 2nd chat", "MiB", second_traced,
            f"≤ {MIB_GOAL:g} MiB", at_most(MIB_GOAL)),
        Row("12", "chats: Python memory (tracemalloc) held by a window's 10th chat", "MiB", tenth_traced,
            f"≤ {MIB_GOAL:g} MiB", at_most(MIB_GOAL)),
        Row("12", "chats: agent processes for a window's 10 chats", "", agents, "1", lambda p50, ratio: p50 == 1),
    ]
