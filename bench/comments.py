"""The review comments' rows of `make bench` (bench/comments_host.py): 100
comments drawn in a view, moved by typing, and sent as one review."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, progress


def comments_rows(rounds: int, workdir: Path) -> list[Row]:
    shown, typed, sent, on_main = Samples(), Samples(), Samples(), Samples()
    progress("comments: 100 review comments shown, moved by typing, sent")
    for number in range(rounds):
        result = run_host("bench.comments_host", workdir / f"comments-{number}")
        shown.add("ours", floats(result["shown_ms"]))
        typed.add("ours", floats(result["typed_p99_ms"]))
        sent.add("ours", floats(result["send_ms"]))
        on_main.add("ours", floats(result["send_main_ms"]))
    return [
        Row("13a", "100 review comments shown in a view opened again (main thread)", "ms", shown, "≤ 16 ms",
            lambda p50, ratio: p50 <= 16),
        Row("13b", "100 review comments moved by a keystroke above them: p99 of 200 (main thread)", "ms", typed,
            "≤ 16 ms", lambda p50, ratio: p50 <= 16),
        Row("13c", "Send Review of 100 comments: the command → the prompt queued", "ms", sent, "≤ 100 ms",
            lambda p50, ratio: p50 <= 100),
        Row("13d", "Send Review of 100 comments: its time on the main thread", "ms", on_main, "≤ 2 ms",
            lambda p50, ratio: p50 <= 2),
    ]
