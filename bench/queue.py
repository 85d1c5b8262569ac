"""The prompt-queue row of `make bench`: queueing, editing, moving and
removing among 1,000 queued prompts while a turn runs, main-thread time with
the redraw below the transcript (bench/queue_host.py). No peer."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, percentile, progress

QUEUED = 1_000
OPERATIONS = 50


def queue_rows(rounds: int, workdir: Path) -> list[Row]:
    changes = Samples()
    progress(f"queue: changes among {QUEUED:,} queued prompts")
    for number in range(rounds):
        changes.add("ours", floats(run_host("bench.queue_host", workdir / f"queue-{number}", QUEUED, OPERATIONS)["main_ms"]))
    return [
        Row("13", f"queue: queueing, editing, moving or removing among {QUEUED:,} queued prompts, main thread", "ms",
            changes, "≤ 16 ms p99", lambda p50, ratio: percentile(changes.values["ours"], 99) <= 16),
    ]
