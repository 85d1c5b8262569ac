"""The review view's rows of `make bench` (bench/review_view_host.py): a
review of 1,000 hunks in 200 files opened, then a hunk of each file kept
and one undone (on disk)."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, progress

FIGURES = ("open_ms", "open_main_ms", "keep_p99_ms", "undo_p99_ms")  # what each run of the host gives, in row order


def review_view_rows(rounds: int, workdir: Path) -> list[Row]:
    progress("review view: 1,000 hunks in 200 files opened, kept and undone")
    samples = {figure: Samples() for figure in FIGURES}
    for number in range(rounds):
        result = run_host("bench.review_view_host", workdir / f"review-view-{number}")
        for figure, into in samples.items():
            into.add("ours", floats(result[figure]))
    opened, on_main, kept, undone = (samples[figure] for figure in FIGURES)
    return [
        Row("15a", "review view of 1,000 hunks in 200 files: opened → every hunk shown", "ms", opened, "≤ 300 ms",
            lambda p50, ratio: p50 <= 300),
        Row("15b", "review view of 1,000 hunks: the opening's time on the main thread", "ms", on_main, "≤ 50 ms",
            lambda p50, ratio: p50 <= 50),
        Row("15c", "review view: Keep of a hunk, p99 of 200 (main thread)", "ms", kept, "≤ 16 ms",
            lambda p50, ratio: p50 <= 16),
        Row("15d", "review view: Undo of a hunk on disk, p99 of 200 (main thread)", "ms", undone, "≤ 16 ms",
            lambda p50, ratio: p50 <= 16),
    ]
