"""The package's chat while the agent reports its work: the built
QwenCompanion in the simulated Sublime host (a process of its own), its chat
on the scripted agent tests/rig/fake_acp_agent.py. Prints one JSON line:

    python -m bench.work_in_sight_host WORKDIR PLAN_UPDATES SHELL_CHUNKS

- "plan_ms": main-thread CPU of each plan update of 100 steps: the pinned
  plan under the composer (its phantom and the status bar) and the
  transcript's edit of the plan's block;
- "shell_package_s": the package's whole time for a turn of SHELL_CHUNKS
  `shell_output` chunks into one tool call: its chat and streamer threads'
  CPU and its main-thread transcript updates (the agent's time left out);
- "shell_rss_added_mib": how much the process's RSS grew over that turn;
- "shell_kept_lines": the lines of output the tool call's block keeps.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import BenchChat, rss_bytes
from bench.hostile_host import package_cpu
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parent.parent / "tests" / "rig" / "fake_acp_agent.py"
PACKAGE = "QwenCompanion"
WAIT = 600.0
MIB = 1024 * 1024
PLAN_STEPS = 100


def plan_update(done: int) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "plan", "entries": [
        {"content": f"step {i}: do the part of the work numbered {i}", "priority": "medium",
         "status": "completed" if i < done else "in_progress" if i == done else "pending"} for i in range(PLAN_STEPS)]}}


def shell_turn(chunks: int) -> list[dict[str, Any]]:
    call = {"toolCallId": "sh", "title": "make test", "kind": "execute"}
    return [{"update": {"sessionUpdate": "tool_call", **call, "status": "pending"}},
            {"update": {"sessionUpdate": "tool_call_update", **call, "status": "in_progress"}},
            *[{"update": {"sessionUpdate": "shell_output", "output": f"test_{n} ... ok\n"}} for n in range(chunks)],
            {"update": {"sessionUpdate": "tool_call_update", **call, "status": "completed"}}]


def main(workdir: Path, plan_updates: int, shell_chunks: int) -> dict[str, Any]:
    folder = workdir / "project"
    folder.mkdir(parents=True, exist_ok=True)
    script = workdir / "script.json"
    script.write_text(json.dumps({"turns": [
        [plan_update(n % PLAN_STEPS) for n in range(plan_updates)],
        shell_turn(shell_chunks),
    ]}))
    host = SimulatedHost(workdir / "Packages", watchdog_ms=None, check_threads=False)  # measured here, not enforced
    try:
        bench = BenchChat(host, folder, [sys.executable, str(AGENT), str(script)], WAIT)
        window_chat, turn = bench.window_chat, bench.turn
        plan_view = sys.modules[f"{PACKAGE}.plugin.chat.transcript.plan_view"]

        # 1. Plan updates: main-thread CPU of each (its pin, and the transcript's edit).
        plan_ms: list[float] = []
        original_pin, original_apply = plan_view.show_pinned_plan, window_chat.apply_pending

        def timed(call: Any) -> Any:
            def run(*args: Any) -> None:
                start = time.thread_time()  # CPU: a loaded machine's descheduling is not ours
                call(*args)
                plan_ms.append((time.thread_time() - start) * 1000)
            return run

        plan_view.show_pinned_plan, window_chat.apply_pending = timed(original_pin), timed(original_apply)
        turn("plans")
        plan_view.show_pinned_plan, window_chat.apply_pending = original_pin, original_apply

        # 2. Shell output: the package's time, and the memory the turn adds.
        applies: list[float] = []

        def timed_apply() -> None:
            start = time.thread_time()
            original_apply()
            applies.append(time.thread_time() - start)

        window_chat.apply_pending = timed_apply
        rss_before, cpu_before = rss_bytes(), package_cpu()
        turn("shell")
        package_s = package_cpu() - cpu_before + sum(applies)
        rss_added = (rss_bytes() - rss_before) / MIB
        window_chat.apply_pending = original_apply
        kept = max((len(tail.lines) for tail in window_chat.renderer()._shells.values()), default=0)
        return {"plan_ms": plan_ms, "shell_package_s": package_s, "shell_rss_added_mib": rss_added,
                "shell_kept_lines": kept}
    finally:
        host.close()


if __name__ == "__main__":
    result = main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(result), flush=True)
