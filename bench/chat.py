"""The chat rows of `make bench`: the package's chat (bench/chat_host.py)
against a client on the TypeScript ACP SDK (bench/peer/acp_client.mjs), both
fed the same recorded agent (bench/chat_agent.py), interleaved round by round."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench.run import ALL_CPUS, NODE, PEER_DIR, ROOT, RSS_NOISE_MIB, Row, Samples, interleaved, percentile, progress

UNPACED = 20_000  # chunks written at once: the throughput row
PACED = 4_000  # chunks at RATE a second: the latency and main-thread rows
RATE = 2_000
MESSAGES = 1_000  # the memory row's chat
FLUSH_MS = 50  # the streamer's flush interval
AGENT = ROOT / "bench" / "chat_agent.py"


def _all_cpus() -> None:
    os.sched_setaffinity(0, ALL_CPUS)


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    completed = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
                               preexec_fn=_all_cpus)
    if completed.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed:\n{completed.stderr[-3000:]}")
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def run_host(module: str, home: Path, *args: object) -> dict[str, object]:
    """`python -m module home args…` with `home` as its HOME (made if need be): its last JSON line."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(home)}
    env.pop("QWEN_HOME", None)
    return _run([sys.executable, "-m", module, str(home), *map(str, args)], ROOT, env)


def ours(workdir: Path, messages: int) -> dict[str, object]:
    return run_host("bench.chat_host", workdir, UNPACED, PACED, RATE, messages)


def peer(workdir: Path) -> dict[str, object]:
    return _run([str(NODE), str(PEER_DIR / "acp_client.mjs"), sys.executable, str(AGENT),
                 str(UNPACED), str(PACED), str(RATE)], PEER_DIR)


def floats(value: object) -> list[float]:
    return [float(v) for v in value] if isinstance(value, list) else [float(str(value))]


def chat_rows(rounds: int, workdir: Path) -> list[Row]:
    rate, latency, flush, memory = Samples(), Samples(), Samples(), Samples()
    progress("chat: recorded agent stream, ours and the ACP SDK peer")
    for number, name in interleaved(rounds):
        if name == "ours":
            # The long chat once: the memory it adds does not change round to round.
            result = ours(workdir / f"chat-{number}", MESSAGES if number == 0 else 0)
            flush.add("ours", floats(result["flush_ms"]))
            if number == 0:
                memory.add("ours", floats(result["rss_added_mib"]))
        else:
            result = peer(workdir)
        rate.add(name, floats(result["rate"]))
        latency.add(name, floats(result["latency_ms"]))

    def ratio_at_least(limit: float) -> Callable[[float, float | None], bool | None]:
        return lambda p50, ratio: ratio is not None and ratio >= limit

    def p99_at_most(samples: Samples, limit: float) -> Callable[[float, float | None], bool | None]:
        return lambda p50, ratio: percentile(samples.values["ours"], 99) <= limit

    return [
        Row("7", f"chat: session/update handled per second ({UNPACED:,} chunks written at once)", "/s", rate,
            "≥ 1.0× peer", ratio_at_least(1.0)),
        Row("7", f"chat: chunk written by the agent → text in the view ({RATE:,} chunks/s; peer: in its string)",
            "ms", latency, f"≤ {FLUSH_MS + 5} ms p99", p99_at_most(latency, FLUSH_MS + 5)),
        Row("7", f"chat: main-thread time per view update ({RATE:,} chunks/s)", "ms", flush, "≤ 2 ms p99",
            p99_at_most(flush, 2)),
        Row("7", f"chat: plugin-host RSS added by a {MESSAGES:,}-message chat", "MiB", memory, "≤ 20 MiB",
            lambda p50, ratio: p50 <= 20, noise=RSS_NOISE_MIB),
    ]
