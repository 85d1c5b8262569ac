"""The hostile rows of `make bench`: the package's chat on a scripted agent
that floods it with tool calls and sends inputs far larger than any limit
(bench/hostile_host.py). No peer: the goals are absolute."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, progress

TOOL_CALLS = 100_000


def hostile_rows(rounds: int, workdir: Path) -> list[Row]:
    package, main, memory = Samples(), Samples(), Samples()
    progress(f"hostile: {TOOL_CALLS:,} tool calls in one turn, then oversized inputs")
    for number in range(rounds):
        result = run_host("bench.hostile_host", workdir / f"hostile-{number}", TOOL_CALLS)
        package.add("ours", floats(result["package_s"]))
        main.add("ours", floats(result["main_ms"]))
        memory.add("ours", floats(result["rss_peak_added_mib"]))
    return [
        Row("10", f"hostile: package time for {TOOL_CALLS:,} tool calls in one turn (chat and streamer threads' CPU "
            "+ main-thread CPU of its transcript updates; the agent left out)", "s",
            package, "< 10 s", lambda p50, ratio: p50 < 10),
        Row("10", "hostile: main-thread CPU per transcript update in that turn (simulator's rope buffer included)",
            "ms", main, "≤ 100 ms max", lambda p50, ratio: max(main.values["ours"]) <= 100),
        Row("10", "hostile: plugin-host RSS peak added by a 256 MiB line, 64 MiB of stderr, a 200 MB file read",
            "MiB", memory, "≤ 200 MiB", lambda p50, ratio: p50 <= 200),
    ]
