"""How fast the `qwen serve` daemon itself delivers an answer's chunks, for
the serve rate row: the real qwen 0.24.4 daemon and the fake model at
MODEL_URL, the session's events read turn by turn (alternating) by the
package's transport (core/serve/daemon_session.py, handing each event over as the
chat gets it, without the editor) and by a bare reader that only counts the
chunks in the raw bytes. Prints one JSON line:

    python -m bench.serve_ceiling_host WORKDIR MODEL_URL CHUNKS SIZE TURNS

- "transport" / "bare": per turn, the answer's chunks a second, from the
  first chunk read to the last.

The bare reader does no work per event, so it reads as fast as the daemon
sends: when the transport matches it, what limits the serve rate is the
daemon (its relay of every event from its agent), not the package.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import tests.conftest  # noqa: F401  (the package source as `qwencompanion_src`)
from bench.serve_host import cli_for_package
from qwencompanion_src.core.serve import daemon
from qwencompanion_src.core.serve.daemon_session import DaemonSession
from qwencompanion_src.core.serve.http import Address, open_request, request_json

CHUNK = b"agent_message_chunk"
WAIT = 180.0


class Counted:
    """The chat's side of a DaemonSession, counting the answer's chunks as they are handed over."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def session_update(self, params: dict[str, Any]) -> None:
        update = params.get("update")
        if isinstance(update, dict) and update.get("sessionUpdate") == "agent_message_chunk":
            self.times.append(time.perf_counter())

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "cancelled"}}

    def prompt_elsewhere(self, params: dict[str, Any]) -> None:
        pass

    def refused(self, message: str) -> None:
        raise RuntimeError(f"the transport dropped events: {message}")


async def by_transport(address: Address, folder: str, prompt: str) -> tuple[float, int]:
    counted = Counted()
    session = await DaemonSession.open(address, folder, counted)
    session.start()
    try:
        await asyncio.wait_for(session.prompt([{"type": "text", "text": prompt}]), WAIT)
    finally:
        session.close()
    return len(counted.times) / (counted.times[-1] - counted.times[0]), len(counted.times)


async def by_bare_reader(address: Address, folder: str, prompt: str, chunks: int) -> tuple[float, int]:
    opened = await request_json(address, "POST", "/session", {"cwd": folder})
    session_id, client = opened.body["sessionId"], opened.body["clientId"]
    stream = await open_request(address, "GET", f"/session/{session_id}/events", {"Accept": "text/event-stream"})
    times: list[float] = []
    try:
        await request_json(address, "POST", f"/session/{session_id}/prompt",
                           {"prompt": [{"type": "text", "text": prompt}]}, {"X-Qwen-Client-Id": client})

        async def read() -> None:
            async for piece in stream.chunks():
                found = piece.count(CHUNK)
                if found:
                    times.extend([time.perf_counter()] * found)
                if len(times) >= chunks:
                    return

        await asyncio.wait_for(read(), WAIT)
    finally:
        stream.close()
    return len(times) / (times[-1] - times[0]), len(times)


async def measure(address: Address, folder: str, chunks: int, size: int, turns: int) -> dict[str, Any]:
    prompt = f"stream {chunks} {size}"
    await by_transport(address, folder, prompt)  # warm-up: the node processes compile their hot paths
    rates: dict[str, list[float]] = {"transport": [], "bare": []}
    for turn in range(turns):
        for name in (("transport", "bare") if turn % 2 == 0 else ("bare", "transport")):
            if name == "transport":
                rate, count = await by_transport(address, folder, prompt)
            else:
                rate, count = await by_bare_reader(address, folder, prompt, chunks)
            if count < chunks:
                raise RuntimeError(f"{name}: {count} chunks read, not {chunks}")
            rates[name].append(rate)
    return rates


def main(workdir: Path, model_url: str, chunks: int, size: int, turns: int) -> dict[str, Any]:
    cli = cli_for_package(workdir, model_url)
    folder = workdir / "project"
    folder.mkdir(exist_ok=True)
    # The daemon gets the CLI's environment (its home with the fake model's settings) as the package passes it.
    attached = daemon.attach_or_start(workdir / "cache", [str(folder.resolve())], cli.argv(), dict(os.environ))
    try:
        record = attached.record
        return asyncio.run(measure(Address(record.host, record.port, record.token), str(folder.resolve()),
                                   chunks, size, turns))
    finally:
        daemon.stop_daemon(attached.record)
        if attached.process is not None:
            attached.process.wait(30)


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))
