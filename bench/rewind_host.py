"""The package's rewind under benchmark: the built QwenCompanion in the
simulated Sublime host (a process of its own, as Sublime's plugin host is),
its chat on the scripted ACP agent posing as qwen. A chat of TURNS prompts,
each answered with text and two writes through the editor (a file of its own,
closed, and one file open in a view), is rewound to before its first prompt.
Prints one JSON line:

    python -m bench.rewind_host WORKDIR TURNS

- "answered_ms": the agent's rewindSession answer read → the rewind's outcome
  (every file back: the open view in one undo step, the closed files on disk
  byte for byte; the transcript cut), and the transcript view showing it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import PACKAGE, BenchChat
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parents[1] / "tests" / "rig" / "fake_acp_agent.py"
WAIT = 120.0
FILE_BYTES = 20_000
LINE = "value = compute(value)  # café\r\n"  # CRLF: the bytes each file must get back


def script(folder: Path, turns: int, opened: Path) -> dict[str, Any]:
    text = (LINE * (FILE_BYTES // len(LINE))).replace("\r\n", "\n")

    def write(path: Path, content: str) -> dict[str, Any]:
        return {"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(path), "content": content}}

    return {"agent_name": "qwen-code", "turns": [
        [write(folder / f"file{number}.py", text + f"# turn {number}\n"), write(opened, text + f"# turn {number}\n"),
         {"chunks": [f"Changed file{number}.py. " * 40]}]
        for number in range(turns)]}


def main(workdir: Path, turns: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        opened = folder / "open.py"
        original = (LINE * (FILE_BYTES // len(LINE))).encode()
        for path in [opened, *(folder / f"file{number}.py" for number in range(turns))]:
            path.write_bytes(original)
        (workdir / "script.json").write_text(json.dumps(script(folder, turns, opened)))
        bench = BenchChat(host, folder, [sys.executable, str(AGENT), str(workdir / "script.json")], WAIT)
        view = host.user.open_file(opened)
        for number in range(turns):
            bench.turn(f"change file{number}.py")
        rewind_module = sys.modules[f"{PACKAGE}.core.chat.history.rewind"]
        commands = sys.modules[f"{PACKAGE}.plugin.chat.history.rewind_commands"]
        answered: list[float] = []
        files_of = rewind_module.files_of

        def timed_files_of(answer: Any) -> Any:
            answered.append(time.perf_counter())  # the agent's answer, just read
            return files_of(answer)

        rewind_module.files_of = timed_files_of
        window, transcript = host.window, bench.window_chat.core.streamer.transcript
        outcome = host.run_on_main(lambda: commands.rewind(window, bench.window_chat, 0, None)).result(WAIT)
        shown_view = bench.window_chat.transcript_view
        while shown_view.size() != len(transcript.text()):
            time.sleep(0.0005)
        done = time.perf_counter()
        assert len(outcome.files_restored) == turns + 1, outcome
        assert all((folder / f"file{n}.py").read_bytes() == original for n in range(turns))
        host.wait_idle(timeout=WAIT)
        assert view.substr(host.sublime.Region(0, view.size())) == original.decode().replace("\r\n", "\n")
        return {"answered_ms": (done - answered[0]) * 1000}
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]))))
