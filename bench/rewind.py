"""The rewind row of `make bench`: Rewind to Here before the first prompt of
a 50-turn chat whose every turn wrote two files through the editor
(bench/rewind_host.py, the built package in the simulated host on the
scripted agent posing as qwen), timed from the agent's answer to every file
back and the transcript view cut."""

from __future__ import annotations

from pathlib import Path

from bench.chat import floats, run_host
from bench.run import Row, Samples, progress

TURNS = 50


def rewind_rows(rounds: int, workdir: Path) -> list[Row]:
    answered = Samples()
    progress(f"rewind: a {TURNS}-turn chat back to before its first prompt")
    for number in range(rounds):
        answered.add("ours", floats(run_host("bench.rewind_host", workdir / f"rewind-{number}", TURNS)["answered_ms"]))
    return [
        Row("12", f"rewind of a {TURNS}-turn chat ({TURNS + 1} files back, one in an open view): the agent's "
            "answer → files restored and the transcript cut", "ms", answered, "≤ 300 ms", lambda p50, ratio: p50 <= 300),
    ]
