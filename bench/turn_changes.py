"""The turn-changes rows of `make bench`: a turn's checkpoints and its undo,
measured in this process on the built package's core (no editor, no peer):
the checkpoint work a write of a 1 MB file adds on the thread that writes
(its bytes read, kept, the agent's text recorded), Undo Turn of 20 files
of 1 MB on disk (each checked to still hold the agent's text, then its
checkpoint's bytes written back atomically), and, in the simulated host
(bench/turn_review_host.py), the main-thread time per file of giving a 20-file
turn's open views their references.

The checkpoints and the undo are measured in a process of their own
(`python -m bench.turn_changes WORKDIR ROUNDS`, one JSON line): a checkpoint's
cost is mostly the fresh memory its 1 MB takes, and in the bench's own process
that depended on what earlier parts had left to the allocator (0.13-0.57 ms
for the same code)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.chat import floats, run_host
from bench.run import ROOT, Row, Samples, progress

FILES = 20
SIZE = 1_000_000
LINE = "def handle(request):  # café\r\n"  # CRLF and a BOM: the bytes a checkpoint must keep


def _core() -> Any:
    sys.path.insert(0, str(ROOT / "dist"))
    from QwenCompanion.core.chat.history import turn_changes
    from QwenCompanion.core.files import agent_files  # the built package's core

    return agent_files, turn_changes


def checkpoints_and_undo(rounds: int, workdir: Path) -> dict[str, list[float]]:
    """ms of checkpoint work per write, and of each round's Undo Turn."""
    agent_files, core = _core()
    original = b"\xef\xbb\xbf" + (LINE * (SIZE // len(LINE))).encode()
    agents_text = original[3:].decode().replace("\r\n", "\n") + "one more line\n"
    checkpoint: list[float] = []
    undo: list[float] = []
    for number in range(rounds):
        folder = workdir / f"turn-{number}"
        folder.mkdir()
        turns = core.TurnChanges()
        paths = [str(folder / f"file{index}.py") for index in range(FILES)]
        for path in paths:
            Path(path).write_bytes(original)
            started = time.perf_counter()
            if turns.needs_checkpoint(path):
                turns.checkpoint(path, core.checkpoint_of(path))
            overhead = time.perf_counter() - started
            agent_files.write_text(path, agents_text)  # the write itself is not the checkpoint's cost
            started = time.perf_counter()
            turns.wrote(path, agents_text)
            checkpoint.append((overhead + time.perf_counter() - started) * 1000)
        turn, _ = turns.end_turn()
        started = time.perf_counter()
        for path in paths:
            core.restore_on_disk(turns.change(turn, path))
        undo.append((time.perf_counter() - started) * 1000)
        assert all(Path(path).read_bytes() == original for path in paths)
    return {"checkpoint_ms": checkpoint, "undo_ms": undo}


def turn_changes_rows(rounds: int, workdir: Path) -> list[Row]:
    checkpoint, undo = Samples(), Samples()
    progress(f"turn changes: checkpoints of {FILES} files of {SIZE // 1_000_000} MB, then Undo Turn")
    result = run_host("bench.turn_changes", workdir / "checkpoints", rounds)
    checkpoint.add("ours", floats(result["checkpoint_ms"]))
    undo.add("ours", floats(result["undo_ms"]))
    references = Samples()
    result = run_host("bench.turn_review_host", workdir / "turn-review", FILES, SIZE, rounds)
    references.add("ours", floats(result["per_file_ms"]))
    return [
        Row("11", f"turn changes: checkpoint work per write of a {SIZE // 1_000_000} MB file, on the writing thread",
            "ms", checkpoint, "≤ 1 ms", lambda p50, ratio: p50 <= 1),
        Row("11", f"turn changes: Undo Turn of {FILES} files of {SIZE // 1_000_000} MB on disk (byte-exact, each "
            "checked first)", "ms", undo, "≤ 200 ms", lambda p50, ratio: p50 <= 200),
        Row("11", f"turn changes: references set at the end of a {FILES}-file turn ({SIZE // 1_000_000} MB files, "
            "open), main thread, per file", "ms", references, "≤ 16 ms", lambda p50, ratio: p50 <= 16),
    ]


if __name__ == "__main__":
    print(json.dumps(checkpoints_and_undo(int(sys.argv[2]), Path(sys.argv[1]))))
