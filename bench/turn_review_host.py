"""A turn's references under benchmark: the built QwenCompanion in the
simulated Sublime host (a process of its own, as Sublime's plugin host is),
FILES files of SIZE bytes open in its window. Prints one JSON line:

    python -m bench.turn_review_host WORKDIR FILES SIZE ROUNDS

- "per_file_ms": the main-thread time of the end of a turn that changed the
  FILES open files (each view found and given its checkpoint's text as its
  reference document, the status bar set), divided by FILES; one per round.

The simulated view keeps the reference as a string: Sublime's own diff of it
is native code that cannot run here, so this measures the package's part.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import BUILT_PACKAGE, PACKAGE, open_views
from tests.sublime_sim import SimulatedHost

LINE = "def handle(request):  # café\n"
NO_CHAT = 0  # chat ids start at 1: the turn's note and link have no transcript to go to
WAIT = 120.0


def main(workdir: Path, files: int, size: int, rounds: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        text = LINE * (size // len(LINE))
        for number in range(files):
            (folder / f"file{number}.py").write_text(text)
        host.install_package(BUILT_PACKAGE, PACKAGE)
        host.user.set_folders([str(folder)])
        host.load_package(PACKAGE)
        views = open_views(host, folder, files)
        review = sys.modules[f"{PACKAGE}.plugin.chat.history.turn_review"]
        core = sys.modules[f"{PACKAGE}.core.chat.history.turn_changes"]
        paths = [os.path.realpath(view.file_name()) for view in views]
        summaries = [core.FileSummary(path, 1, 1, core.CHANGED) for path in paths]
        window_id = host.window.id()
        per_file_ms: list[float] = []
        for turn in range(1, rounds + 1):
            references = dict.fromkeys(paths, f"turn {turn}\n{text}")  # the checkpoints' texts

            def end_turn(turn: int = turn, references: dict[str, str] = references) -> float:
                started = time.perf_counter()
                review._show_turn(window_id, NO_CHAT, turn, summaries, references)
                return (time.perf_counter() - started) * 1000

            spent: float = host.run_on_main(end_turn)
            per_file_ms.append(spent / files)
            host.wait_idle(timeout=WAIT)
        return {"per_file_ms": per_file_ms}
    finally:
        host.close()


if __name__ == "__main__":
    workdir, files, size, rounds = sys.argv[1:5]
    print(json.dumps(main(Path(workdir), int(files), int(size), int(rounds))), flush=True)
