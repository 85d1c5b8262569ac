"""The prompt queue under benchmark: the built QwenCompanion in the simulated
Sublime host (a process of its own, as Sublime's plugin host is), its chat
on the scripted ACP agent, a turn running that never ends by itself and
QUEUED prompts waiting behind it. Prints one JSON line:

    python -m bench.queue_host WORKDIR QUEUED OPERATIONS

- "main_ms": main-thread time of each change the user makes to the queue,
  in turn: queueing one more (Enter in the composer), editing, moving and
  removing one (Edit Queued Prompt… with its arguments, as the palette runs
  it), each with the redraw of the queue below the transcript that it causes.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import PACKAGE, BenchChat
from tests.sublime_sim import SimulatedHost

AGENT = Path(__file__).resolve().parents[1] / "tests" / "rig" / "fake_acp_agent.py"
WAIT = 120.0


def main(workdir: Path, queued: int, operations: int) -> dict[str, Any]:
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        (workdir / "script.json").write_text(json.dumps({"agent_name": "qwen-code", "turns": [[{"stall": 3600}]]}))
        bench = BenchChat(host, folder, [sys.executable, str(AGENT), str(workdir / "script.json")], WAIT)
        conversation, chat = bench.conversation, bench.window_chat
        conversation.send("a turn that runs until cancelled")
        host.wait_for(lambda: conversation.state.agent_status == "busy", timeout=WAIT)
        for number in range(queued - 1):
            conversation.send(f"queued prompt {number}: " + "words " * 20)
        window, composer = host.window, chat.composer_view
        views = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_views"]
        pick = random.Random(1)

        def timed(change: Any) -> float:
            def run() -> float:
                start = time.perf_counter()
                change()
                views.refresh_status(window.id())  # the redraw the change's state update brings
                return (time.perf_counter() - start) * 1000

            took: float = host.run_on_main(run)
            host.wait_idle(timeout=WAIT)
            return took

        def queued_command(**args: Any) -> Any:
            return lambda: window.run_command("qwen_chat_queued", {"chat": chat.chat_id, **args})

        main_ms: list[float] = []
        for number in range(operations):
            main_ms.append(timed(lambda text=f"one more {number}": composer.run_command("qwen_chat_send", {"text": text})))
            assert len(conversation.queue) == queued
            index = pick.randrange(queued)
            main_ms.append(timed(queued_command(action="edit", index=index, text=f"edited {number}")))
            main_ms.append(timed(queued_command(action="move", index=index, to=pick.randrange(queued))))
            main_ms.append(timed(queued_command(action="remove", index=pick.randrange(queued))))
            assert len(conversation.queue) == queued - 1
        return {"main_ms": main_ms}
    finally:
        host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
