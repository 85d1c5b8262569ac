"""The package's review comments under benchmark: the built QwenCompanion in
the simulated Sublime host (a process of its own), its chat on the scripted
ACP agent. 100 comments on a 2,000-line file open in a view; prints one JSON
line:

    python -m bench.comments_host WORKDIR

- "shown_ms": the file opened again → its 100 comments' marks drawn (the
  listener's main-thread time).
- "typed_p99_ms" (and "typed_p50_ms"): the p99 (p50) of the main-thread
  time the package takes to move the 100 comments' records after each of
  200 keystrokes above them.
- "send_ms": Send Review of the 100 comments → its prompt queued (built on a
  thread of ours); "send_main_ms": the part of it on the main thread.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.host import PACKAGE, BenchChat
from bench.run import percentile
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parents[1] / "tests" / "rig" / "fake_acp_agent.py"
WAIT = 120.0
COMMENTS = 100
KEYSTROKES = 200


def timed(module: Any, name: str, into: list[float], clock: Callable[[], float] = time.perf_counter) -> None:
    """`module.name` made to add its run time to `into` (by `clock`: wall time unless told;
    `time.thread_time` counts only its thread's own time, not the time other threads held the GIL)."""
    function = getattr(module, name)

    def run(*args: Any) -> Any:
        start = clock()
        try:
            return function(*args)
        finally:
            into.append((clock() - start) * 1000)

    setattr(module, name, run)


def main(workdir: Path) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        source = folder / "big.py"
        source.write_text("".join(f"value_{n} = compute({n})  # line {n}\n" for n in range(2000)))
        (workdir / "script.json").write_text(json.dumps({"turns": [[{"chunks": ["ok"]}]]}))
        bench = BenchChat(host, folder, [sys.executable, str(AGENT), str(workdir / "script.json")], WAIT)
        marks = sys.modules[f"{PACKAGE}.plugin.chat.comments.comment_marks"]
        commands = sys.modules[f"{PACKAGE}.plugin.chat.comments.comment_commands"]
        window, chat = host.window, bench.window_chat
        view = host.user.open_file(source)
        for number in range(COMMENTS):
            line = 100 + number * 15
            host.run_on_main(lambda li=line: commands.add_comment(window, chat, str(source), li, li + 2,
                                                                  f"comment {li}", view))
        host.user.close(view)
        shown: list[float] = []
        timed(marks, "show_in", shown)
        view = host.user.open_file(source)
        host.wait_idle()
        moved: list[float] = []
        timed(marks, "follow_change", moved)
        host.user.set_selection(view, [0])
        for _ in range(KEYSTROKES // 2):
            host.user.type(view, "x")
            host.user.type(view, "\n")
        host.wait_idle()
        first = marks.book.of_chat(chat.chat_id)[0]
        assert first.line == 100 + KEYSTROKES // 2, first
        main_time: list[float] = []
        timed(commands, "send_review", main_time)
        start = time.perf_counter()
        sent = host.run_on_main(lambda: commands.send_review(window, chat, "")).result(WAIT)
        send_ms = (time.perf_counter() - start) * 1000
        assert sent == COMMENTS, sent
        return {"shown_ms": sum(shown), "typed_p99_ms": percentile(moved, 99), "typed_p50_ms": percentile(moved, 50),
                "send_ms": send_ms,
                "send_main_ms": main_time[0]}
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
