"""The review view of every hunk under benchmark: the built QwenCompanion in
the simulated Sublime host (a process of its own), a review of HUNKS hunks
in FILES files of 200 lines (not open: an undo writes the file on disk).
Prints one JSON line:

    python -m bench.review_view_host WORKDIR

- "open_ms": Review opened → every hunk shown (the changes diffed on a
  thread of ours, the view's text and scopes set on the main thread);
  "open_cpu_ms": the process's time meanwhile, every thread's.
- "open_main_ms": the part of it on the main thread (after a first review
  of one file, so the editor's listeners have imported what they use).
- "keep_p99_ms" / "undo_p99_ms" (and p50): the main-thread time of a Keep
  (the hunk kept, the view drawn again) and of an Undo (its dispatch, then
  the view drawn again once the file is written), one hunk of each file.

Main-thread time is the main thread's own time (`time.thread_time`): the
wall time of a call also holds the time the host's other threads (and, on
a loaded machine, other processes) ran instead, which is not the call's
cost; the wall figures are given too ("..._wall_...").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.comments_host import timed
from bench.host import BUILT_PACKAGE, PACKAGE
from bench.run import percentile
from tests.sublime_sim import SimulatedHost
from tests.support.editor import wait_for_package_threads

FILES = 200
HUNKS_PER_FILE = 5
LINES = 200
WAIT = 120.0


class BenchSource:
    """A set of changes as a source gives them (no chat: the view's own cost)."""

    title = "bench"

    def __init__(self, changes: list[Any]) -> None:
        self._changes = changes
        self.key = ("bench", len(changes))

    def changes(self) -> list[Any]:
        return self._changes

    def comments(self) -> list[Any]:
        return []

    def watch(self, wrote: Any) -> Any:
        return lambda: None

    def settled(self, *_: Any) -> None:
        return None

    def keep_whole(self, *_: Any) -> None:
        return None

    def undo_whole(self, *_: Any) -> None:
        return None

    def view_of(self, *_: Any) -> None:
        return None  # not open: an undo writes the file on disk


def main(workdir: Path) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        host.install_package(BUILT_PACKAGE, PACKAGE)
        host.user.set_folders([str(folder)])
        host.load_package(PACKAGE)
        wait_for_package_threads(host, "start")  # its start-up work (a thread of its own) is not the review's
        review = sys.modules[f"{PACKAGE}.core.review_hunks.review"]
        views = sys.modules[f"{PACKAGE}.plugin.review_hunks.review_view"]
        actions = sys.modules[f"{PACKAGE}.plugin.review_hunks.hunk_actions"]
        step = LINES // HUNKS_PER_FILE
        changes = []
        for number in range(FILES):
            before = "".join(f"value_{n} = compute({n})  # file {number}\n" for n in range(LINES))
            now = "".join(line.upper() if index % step == step // 2 else line
                          for index, line in enumerate(before.splitlines(keepends=True)))
            path = folder / f"file{number}.py"
            path.write_text(now)
            changes.append(review.ChangedFile(str(path), before, now))
        window = host.window
        warm: list[Any] = []  # a first review of one file: the listeners' first-use imports are not the view's cost
        host.run_on_main(lambda: views.open_review(window, BenchSource(changes[:1]), True, warm.append))
        host.wait_for(lambda: warm, timeout=WAIT)
        main_ms: list[float] = []
        timed(views, "open_review", main_ms, time.thread_time)
        timed(views, "_shown", main_ms, time.thread_time)
        shown: list[Any] = []
        start, start_cpu = time.perf_counter(), time.process_time()
        host.run_on_main(lambda: views.open_review(window, BenchSource(changes), True, shown.append))
        record = host.wait_for(lambda: shown and shown[0], timeout=WAIT)
        open_ms = (time.perf_counter() - start) * 1000
        open_cpu_ms = (time.process_time() - start_cpu) * 1000
        assert record.review.pending_hunks == FILES * HUNKS_PER_FILE, record.review.pending_hunks
        open_main_ms = sum(main_ms)
        kept: list[float] = []
        kept_wall: list[float] = []
        timed(actions, "keep", kept, time.thread_time)
        timed(actions, "keep", kept_wall)
        for index in range(FILES):
            host.run_on_main(lambda i=index: actions.keep(record, i, 0))
        dispatched: list[float] = []
        redrawn: list[float] = []
        timed(actions, "undo", dispatched, time.thread_time)
        timed(actions, "show_file", redrawn, time.thread_time)
        for index in range(FILES):
            outcome: list[Any] = []
            host.run_on_main(lambda i=index, o=outcome: actions.undo(record, i, 0, o.append))
            host.wait_for(lambda o=outcome: o, timeout=WAIT)
            assert outcome == [None], outcome
        undone = [a + b for a, b in zip(dispatched, redrawn[-FILES:], strict=True)]
        assert record.review.pending_hunks == FILES * (HUNKS_PER_FILE - 2)
        return {"open_ms": open_ms, "open_cpu_ms": open_cpu_ms, "open_main_ms": open_main_ms,
                "keep_p99_ms": percentile(kept, 99), "keep_p50_ms": percentile(kept, 50),
                "keep_wall_p99_ms": percentile(kept_wall, 99), "keep_wall_p50_ms": percentile(kept_wall, 50),
                "undo_p99_ms": percentile(undone, 99), "undo_p50_ms": percentile(undone, 50)}
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
