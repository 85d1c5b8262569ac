"""Chat History and Export under benchmark: the built QwenCompanion in the
simulated Sublime host (a process of its own, as Sublime's plugin host is),
its chat on the scripted ACP agent, which lists SESSIONS sessions (pages of
100, as many as the package reads: its first 1,000) and keeps two recorded
sessions, one of RESUMED messages and one of EXPORTED. Prints one JSON line:

    python -m bench.history_host WORKDIR SESSIONS RESUMED EXPORTED

- "list_ms": Chat History run → its quick panel shown (the agent's pages included).
- "list_mib": Python memory the listing allocated at its peak (tracemalloc, a second listing).
- "filter_ms": Search in Conversations' filter over the listed sessions, per
  query as typed a keystroke at a time (Sublime filters the panel itself as
  one types: the package does no work per keystroke there).
- "resume_ms": Enter on the RESUMED-message session (an agent that loads it:
  session/load replays every message; qwen's session/resume replays none) →
  the transcript view shows its last message.
- "export_ms": Export Chat to Markdown of the EXPORTED-message chat → its
  text, made off the main thread; "export_main_ms": what the main thread spent.
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.host import PACKAGE, BenchChat
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parents[1] / "tests" / "rig" / "fake_acp_agent.py"
WAIT = 300.0
QUERY = "fix the parser"


def recorded(state: Path, session_id: str, folder: Path, messages: int) -> None:
    """A session the agent keeps: `messages` alternating prompts and answers."""
    entries = [{"role": "user", "text": f"Prompt {n // 2}: fix the parser's edge case {n}.", "promptId": f"{session_id}########{n // 2 + 1}"}
               if n % 2 == 0 else {"role": "agent", "text": f"Answer {n // 2}: " + "the parser now reads it. " * 12}
               for n in range(messages)]
    (state / f"{session_id}.json").write_text(json.dumps(entries))
    (state / f"{session_id}.meta").write_text(json.dumps({"cwd": str(folder), "title": f"{session_id} chat", "preview": "",
                                                          "updatedAt": "2026-11-28T09:00:00Z"}))


def shown(host: SimulatedHost) -> Any:
    """The quick panel, once it is open."""
    while True:
        panel = next((panel for panel in host.quick_panels if not panel.done), None)
        if panel is not None:
            return panel
        time.sleep(0.0005)


def main(workdir: Path, sessions: int, resumed: int, exported: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        state = workdir / "agent-state"
        state.mkdir(exist_ok=True)
        recorded(state, "resumed", folder, resumed)
        recorded(state, "exported", folder, exported)
        (workdir / "script.json").write_text(json.dumps({
            "turns": [], "state": str(state), "list_page": 100,
            "listed_sessions": {"count": sessions, "title_chars": 60}}))
        bench = BenchChat(host, folder, [sys.executable, str(AGENT), str(workdir / "script.json")], WAIT)
        window = host.window
        history = sys.modules[f"{PACKAGE}.plugin.chat.history.history_commands"]
        core_history = sys.modules[f"{PACKAGE}.core.chat.history.history"]

        started = time.perf_counter()
        host.run_on_main(lambda: window.run_command("qwen_chat_sessions"))
        panel = shown(host)
        list_ms = (time.perf_counter() - started) * 1000
        listed = len(panel.items)
        host.user.cancel_quick_panel()
        host.wait_idle(timeout=WAIT)

        tracemalloc.start()
        baseline = tracemalloc.get_traced_memory()[0]
        host.run_on_main(lambda: window.run_command("qwen_chat_sessions"))
        shown(host)
        list_mib = (tracemalloc.get_traced_memory()[1] - baseline) / 2**20
        tracemalloc.stop()
        host.user.cancel_quick_panel()
        host.wait_idle(timeout=WAIT)

        entries = history.history_of(window)[1].result(WAIT)
        filter_ms = []
        for typed in range(1, len(QUERY) + 1):
            started = time.perf_counter()
            core_history.filtered(entries, QUERY[:typed], set())
            filter_ms.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        chat = host.run_on_main(lambda: history.resume_in_new_chat(window, "resumed", "resumed chat", None, None))
        last = f"Answer {resumed // 2 - 1}: "
        while chat.transcript_view is None or last not in chat.core.streamer.transcript.text()[-2000:] \
                or chat.transcript_view.size() != len(chat.core.streamer.transcript.text()):
            time.sleep(0.0005)
        resume_ms = (time.perf_counter() - started) * 1000

        big = host.run_on_main(lambda: history.resume_in_new_chat(window, "exported", "exported chat", None, None))
        last = f"Answer {exported // 2 - 1}: "
        host.wait_for(lambda: last in big.core.streamer.transcript.text()[-2000:], timeout=WAIT)
        host.wait_idle(timeout=WAIT)
        export_commands = sys.modules[f"{PACKAGE}.plugin.chat.history.export_commands"]
        started = time.perf_counter()
        future = host.run_on_main(lambda: export_commands.exported(big, "markdown"))
        export_main_ms = (time.perf_counter() - started) * 1000
        text = future.result(WAIT)
        export_ms = (time.perf_counter() - started) * 1000
        assert text.count("## You") == exported // 2, text.count("## You")
        del bench
        return {"list_ms": list_ms, "listed": listed, "list_mib": list_mib, "filter_ms": filter_ms,
                "resume_ms": resume_ms, "export_ms": export_ms, "export_main_ms": export_main_ms}
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
