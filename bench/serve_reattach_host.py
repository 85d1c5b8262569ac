"""The package's serve chat reattaching after a reload, under benchmark: the
built QwenCompanion in the simulated Sublime host (a process of its own),
its chat on the real qwen 0.24.4 through `qwen serve` (kept running across
reloads) with the fake model at MODEL_URL. Prints one JSON line:

    python -m bench.serve_reattach_host WORKDIR MODEL_URL CHUNKS SIZE RELOADS

One turn streams CHUNKS chunks of SIZE characters (bench/serve.py's model
answers the prompt "stream CHUNKS SIZE"); then, RELOADS times, the package is
reloaded and the chat opened again, which attaches to the daemon's session
and replays its events:

- "reattach_ms": per reload, from the new chat's start (the attach) to the
  view update that put the answer's last line in the transcript view;
- "events": per reload, the session updates the chat was handed in the replay;
- "missing" / "doubled": per reload, the answer's lines (and the prompt) not
  in the transcript view, and those in it more than once.

The daemon is stopped with its agents when the host closes; a process the
chat started that is still alive after that is killed and reported.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.host import BenchChat
from bench.serve_host import END, WAIT, cli_for_package, ended_or_killed, timed_apply
from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.sublime import Region
from tests.support.editor import PACKAGE, wait_for_package_threads
from tests.support.processes import alive, descendants


def reattach(host: SimulatedHost) -> tuple[float, int, Any]:
    """Reload the package and open the chat again: (ms from the chat's start to
    the answer's last line in the view, session updates replayed, the chat)."""
    host.reload_package(PACKAGE)
    # The reloaded package imports the chat and adopts the chat's tabs on its own threads; no agent starts
    # until the user opens the chat.
    wait_for_package_threads(host, "start", "preload")
    host.wait_idle(timeout=WAIT)
    window = host.window
    window_chat = host.wait_for(lambda: sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats.get(window), timeout=WAIT)
    conversation = window_chat.core
    if conversation.state.agent_status != "stopped":
        raise RuntimeError(f"the adopted chat started before it was opened ({conversation.state.agent_status})")
    started: list[int] = []
    shown: list[int] = []
    updates: list[Any] = []
    original_start, original_update = conversation.start, conversation.session_update
    original_apply, original_fill = window_chat.apply_pending, window_chat.fill

    def timed_start() -> Any:
        if not started:
            started.append(time.monotonic_ns())
        return original_start()

    def counted(notification: Any) -> None:
        updates.append(notification)
        original_update(notification)

    def timed_fill(view: Any) -> None:  # a transcript view made after the replay is drawn whole
        original_fill(view)
        if not shown and END in conversation.streamer.transcript.text():
            shown.append(time.monotonic_ns())

    conversation.start, conversation.session_update = timed_start, counted
    window_chat.apply_pending, window_chat.fill = timed_apply(window_chat, shown), timed_fill
    try:
        host.run_on_main(lambda: window.run_command("qwen_chat"))  # opening the chat starts it
        conversation.start().result(WAIT)
        host.wait_for(lambda: shown, timeout=WAIT)
        host.wait_idle(timeout=WAIT)
    finally:
        conversation.start, conversation.session_update = original_start, original_update
        window_chat.apply_pending, window_chat.fill = original_apply, original_fill
    if not started:
        raise RuntimeError("the reopened chat was never started")
    return (shown[0] - started[0]) / 1e6, len(updates), window_chat


def lines_in_view(host: SimulatedHost, window_chat: Any, prompt: str, chunks: int) -> tuple[list[str], list[str]]:
    """(missing, doubled): the prompt and the answer's numbered lines as the transcript view shows them."""
    view = window_chat.transcript_view

    def whole_transcript() -> str | None:
        text = str(view.substr(Region(0, view.size())))
        return text if text == window_chat.core.streamer.transcript.text() else None

    text = host.wait_for(whole_transcript, timeout=WAIT)
    # The prompt under its header: its text alone may also be the chat's title.
    user_header = sys.modules[f"{PACKAGE}.core.chat.transcript.render"].USER_HEADER
    expected = [user_header + prompt, END] + [f"{index:06d} " for index in range(chunks - 1)]
    return ([line for line in expected if text.count(line) == 0], [line for line in expected if text.count(line) > 1])


def first_answer(host: SimulatedHost, folder: Path, node: Path, entry: Path, prompt: str) -> int:
    """Load the package, answer `prompt` in its chat on serve (kept running across reloads): the daemon's pid.
    The chat is not kept: a reference to it would keep this copy of the package alive after the reloads."""
    bench = BenchChat(host, folder.resolve(), [str(node), str(entry)], WAIT,
                      {"chat_transport": "serve", "serve_keep_running": True})
    bench.turn(prompt)
    pid: int = bench.conversation.pid
    return pid


def reattach_and_count(host: SimulatedHost, daemon_pid: int, prompt: str, chunks: int) -> dict[str, float]:
    """One reload and reattach: its time, the updates replayed, the lines missing from the view and doubled."""
    elapsed, updates, window_chat = reattach(host)
    if window_chat.core.pid != daemon_pid:
        raise RuntimeError(f"the chat attached to {window_chat.core.pid}, not the daemon {daemon_pid}")
    missing, doubled = lines_in_view(host, window_chat, prompt, chunks)
    return {"reattach_ms": elapsed, "events": updates, "missing": len(missing), "doubled": len(doubled)}


def main(workdir: Path, model_url: str, chunks: int, size: int, reloads: int) -> dict[str, Any]:
    cli = cli_for_package(workdir, model_url)
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    daemon_pid: int | None = None
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        prompt = f"stream {chunks} {size}"
        daemon_pid = first_answer(host, folder, cli.node, cli.entry, prompt)
        result: dict[str, list[Any]] = {"reattach_ms": [], "events": [], "missing": [], "doubled": []}
        for _ in range(reloads):
            for key, value in reattach_and_count(host, daemon_pid, prompt, chunks).items():
                result[key].append(value)
        return result
    finally:
        started = descendants(os.getpid())
        serve_daemon = sys.modules.get(f"{PACKAGE}.plugin.chat.agent.serve_daemon")  # absent if the chat never started
        record = serve_daemon.window_record(host.window) if serve_daemon is not None else None
        if record is not None:  # kept running across reloads: this bench ends it, with its agents
            sys.modules[f"{PACKAGE}.core.serve.daemon"].stop_daemon(record)
        host.close()
        left = ended_or_killed([*started, *([daemon_pid] if daemon_pid and alive(daemon_pid) else [])])
        if left:
            raise RuntimeError(f"processes {left} the chat started outlived the package; killed")


if __name__ == "__main__":
    workdir, model_url, chunks, size, reloads = sys.argv[1:6]
    print(json.dumps(main(Path(workdir), model_url, int(chunks), int(size), int(reloads))), flush=True)
