"""The package's chat on one transport under benchmark: the built
QwenCompanion in the simulated Sublime host (a process of its own, as
Sublime's plugin host is), its chat on the real qwen 0.24.4 with the fake
model at MODEL_URL, either through `qwen serve` (`chat_transport: "serve"`)
or through `qwen --acp` on stdio. Prints one JSON line:

    python -m bench.serve_host WORKDIR serve|stdio MODEL_URL CHUNKS SIZE TURNS

After a warm-up answer of the same size, TURNS turns each stream CHUNKS chunks of SIZE characters
(bench/serve.py's model answers the prompt "stream CHUNKS SIZE"):

- "rate": per turn, the answer's chunks handled a second, from the first
  one handled to the view update that put the last one in the transcript view;
- "chunks": per turn, the agent_message_chunk updates handled;
- "rss_added_mib": the process's RSS added from before the package loaded to
  after the turns (the chat and its transport still attached).

The daemon runs with `serve_keep_running: false`, so closing the host ends
it with its agents; a process the chat started that is still alive after
that is killed and reported.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.host import BenchChat, rss_bytes
from tests.rig.qwen_cli import QwenCli, cli_env, find_cli, make_home
from tests.sublime_sim import SimulatedHost
from tests.support.processes import alive, descendants

WAIT = 180.0
END = "§END§"  # the last chunk's text starts with it: the answer is in the view once a view update carries it


def timed_apply(window_chat: Any, shown: list[int]) -> Callable[[], None]:
    """`window_chat.apply_pending` that adds to `shown` when the view update carrying END was applied."""
    original_apply = window_chat.apply_pending

    def apply_pending() -> None:
        with window_chat._pending_lock:
            carries_end = any(END in edit.text for edit in window_chat._pending)
        original_apply()
        if carries_end and not shown:
            shown.append(time.monotonic_ns())

    return apply_pending


def cli_for_package(workdir: Path, model_url: str) -> QwenCli:
    """The real qwen, the fake model at `model_url` and an isolated home under
    `workdir` made this process's environment: the package starts qwen with Sublime's."""
    cli = find_cli()
    reason = cli.missing_reason()
    if reason:
        raise RuntimeError(reason)
    os.environ.update(cli_env(cli, make_home(workdir / "cli"), model_url))
    os.environ.pop("QWEN_HOME", None)
    return cli


def turn_rate(bench: BenchChat, chunks: int, size: int) -> tuple[float, int]:
    """(chunks handled a second, first handled → the last in the view; chunks handled) of one turn."""
    chat, window_chat = bench.conversation, bench.window_chat
    handled: list[int] = []
    shown: list[int] = []
    original_update, original_apply = chat.session_update, window_chat.apply_pending

    def counted(notification: Any) -> None:
        original_update(notification)
        if getattr(notification.update, "session_update", None) == "agent_message_chunk":
            handled.append(time.monotonic_ns())

    chat.session_update, window_chat.apply_pending = counted, timed_apply(window_chat, shown)
    try:
        bench.turn(f"stream {chunks} {size}")
    finally:
        chat.session_update, window_chat.apply_pending = original_update, original_apply
    if not shown or not handled:
        raise RuntimeError(f"the answer's last chunk never reached the view ({len(handled)} chunks handled)")
    return len(handled) / ((shown[0] - handled[0]) / 1e9), len(handled)


def main(workdir: Path, transport: str, model_url: str, chunks: int, size: int, turns: int) -> dict[str, Any]:
    cli = cli_for_package(workdir, model_url)
    host = SimulatedHost(workdir / "Packages", check_threads=False)
    try:
        folder = workdir / "project"
        folder.mkdir(exist_ok=True)
        gc.collect()
        before = rss_bytes()
        bench = BenchChat(host, folder.resolve(), [str(cli.node), str(cli.entry)], WAIT,
                          {"chat_transport": transport, "serve_keep_running": False})
        # Warm-up: a whole answer first, so both node processes (the agent, and on serve the daemon) have
        # compiled their hot paths before a rate is taken.
        bench.turn(f"stream {chunks} {size}")
        rates, counts = [], []
        for _ in range(turns):
            rate, count = turn_rate(bench, chunks, size)
            rates.append(rate)
            counts.append(count)
        text = bench.conversation.streamer.transcript.text()
        if text.count(END) != turns + 1:
            raise RuntimeError(f"{text.count(END)} answers in the transcript, not {turns + 1}")
        gc.collect()
        after = rss_bytes()
        return {"rate": rates, "chunks": counts, "rss_added_mib": (after - before) / 2**20}
    finally:
        started = descendants(os.getpid())  # the agent, or the daemon and its agents: none may outlive the host
        host.close()
        left = ended_or_killed(started)
        if left:
            raise RuntimeError(f"processes {left} the chat started outlived the package; killed")


def ended_or_killed(pids: list[int]) -> list[int]:
    """Wait for `pids` to exit; kill and return those that do not."""
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


if __name__ == "__main__":
    workdir, transport, model_url, chunks, size, turns = sys.argv[1:7]
    assert transport in ("serve", "stdio"), transport
    result = main(Path(workdir), transport, model_url, int(chunks), int(size), int(turns))
    print(json.dumps(result), flush=True)
