"""The work-in-sight rows of `make bench`: the package's chat while the
scripted agent updates a plan of 100 steps and streams a shell command's
output (bench/work_in_sight_host.py). No peer: the goals are absolute."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import RSS_NOISE_MIB, Row, Samples, progress

PLAN_UPDATES = 200
SHELL_CHUNKS = 10_000


def work_in_sight_rows(rounds: int, workdir: Path) -> list[Row]:
    plan, package, memory = Samples(), Samples(), Samples()
    progress(f"work in sight: {PLAN_UPDATES} plan updates of 100 steps, then {SHELL_CHUNKS:,} shell_output chunks")
    for number in range(rounds):
        result = run_host("bench.work_in_sight_host", workdir / f"work-in-sight-{number}", PLAN_UPDATES, SHELL_CHUNKS)
        plan.add("ours", floats(result["plan_ms"]))
        package.add("ours", floats(result["shell_package_s"]))
        memory.add("ours", floats(result["shell_rss_added_mib"]))
        progress(f"work in sight: the tool call's block keeps {result['shell_kept_lines']} lines")
    return [
        Row("13", "work in sight: main-thread CPU per plan update of 100 steps (the pinned plan under the composer, "
            "the status bar, the transcript's plan block)", "ms", plan, "≤ 5 ms max",
            lambda p50, ratio: max(plan.values["ours"]) <= 5),
        Row("13", f"work in sight: package time for {SHELL_CHUNKS:,} shell_output chunks in one turn (chat and "
            "streamer threads' CPU + main-thread CPU of its transcript updates)", "s", package, "≤ 2 s",
            lambda p50, ratio: p50 <= 2),
        Row("13", f"work in sight: plugin-host RSS added by those {SHELL_CHUNKS:,} chunks (the last 2,000 lines kept, 200 shown)",
            "MiB", memory, "flat (≤ 5 MiB)", lambda p50, ratio: p50 <= 5, noise=RSS_NOISE_MIB),
    ]
