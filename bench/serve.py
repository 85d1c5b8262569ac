"""The serve rows of `make bench`: the package's chat on `qwen serve` against
the same chat on `qwen --acp` over stdio (bench/serve_host.py), the real
qwen 0.24.4 on both, fed by one fake OpenAI-compatible model in this process
(tests/rig/fake_model.py), the two transports interleaved round by round (the
order alternating). In the rows, "ours" is serve and "peer" is stdio, but
in the daemon's-pace row (bench/serve_ceiling_host.py), where ours is the
package's serve transport and peer a bare reader of the same stream. The
reattach row is serve's alone (bench/serve_reattach_host.py): a chat that
streamed a long answer, the package reloaded, the chat opened again and
replaying the daemon's events into its transcript view."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from bench.chat import floats, run_host
from bench.run import RSS_NOISE_MIB, Row, Samples, interleaved, progress
from tests.rig.fake_model import FakeModel, Reply, is_agent_request, user_texts

CHUNKS = 5_000  # chunks of one measured answer
SIZE = 40  # characters a chunk
TURNS = 5  # measured answers per host process, after a warm-up one
MEMORY_MARGIN_MIB = 10
PROMPT = re.compile(r"stream (\d+) (\d+)")
END = "§END§"  # bench/serve_host.py's sign that the answer's last chunk is in the view
REATTACH_CHUNKS = 1_000  # chunks of the answer replayed after each reload: as many daemon events and a few more
RELOADS = 5  # reloads per host process
REATTACH_GOAL_MS = 300


def answer(body: dict[str, object]) -> Reply | None:
    """The model's answer to "stream N SIZE": N chunks of SIZE characters, a
    paragraph every 20, the last starting with END."""
    prompts = user_texts(body) if is_agent_request(body) else []
    found = PROMPT.search(prompts[-1]) if prompts else None
    if found is None:
        return None
    count, size = int(found[1]), int(found[2])
    pieces = [(f"{index:06d} " + "x" * size)[:size - 2] + ("\n\n" if index % 20 == 19 else "  ")
              for index in range(count - 1)]
    pieces.append((END + " " * size)[:size])
    return Reply(text="".join(pieces), chunk_size=size)


def serve_rows(rounds: int, workdir: Path) -> list[Row]:
    rate, memory, ceiling = Samples(), Samples(), Samples()
    transports = {"ours": "serve", "peer": "stdio"}
    handled: set[int] = set()  # chunks of an answer as the chat got them: the same on both, or the rates differ in kind
    progress(f"serve: {CHUNKS:,}-chunk answers from the real qwen on serve and on stdio, the fake model")
    with FakeModel() as model:
        model.set_responder(answer)
        for number, name in interleaved(rounds):
            result = run_host("bench.serve_host", workdir / f"serve-{number}-{transports[name]}", transports[name],
                              model.base_url, CHUNKS, SIZE, TURNS)
            rate.add(name, floats(result["rate"]))
            memory.add(name, floats(result["rss_added_mib"]))
            handled.update(int(count) for count in floats(result["chunks"]))
            if name == "ours":  # the daemon's own pace, once a round
                paced = run_host("bench.serve_ceiling_host", workdir / f"serve-ceiling-{number}", model.base_url,
                                 CHUNKS, SIZE, TURNS)
                ceiling.add("ours", floats(paced["transport"]))
                ceiling.add("peer", floats(paced["bare"]))
    if len(handled) != 1:
        raise RuntimeError(f"the transports handled answers of different numbers of chunks: {sorted(handled)}")

    def within_margin(p50: float, ratio: float | None) -> bool | None:
        return p50 <= statistics.median(memory.values["peer"]) + MEMORY_MARGIN_MIB

    return [
        Row("14", f"serve: answer chunks in the view per second, `qwen serve` (ours) vs `qwen --acp` on stdio "
            f"(peer), {CHUNKS:,} chunks from the fake model", "/s", rate, "≥ 0.9× stdio",
            lambda p50, ratio: ratio is not None and ratio >= 0.9),
        Row("14", f"serve: answer chunks read from the daemon per second, the package's transport (ours: "
            f"core/serve, each event handed over as the chat gets it) vs a bare reader counting them in the raw "
            f"bytes (peer), {CHUNKS:,} chunks: the daemon's own pace", "/s", ceiling,
            "≥ 0.9× the bare reader", lambda p50, ratio: ratio is not None and ratio >= 0.9),
        Row("14", f"serve: plugin-host RSS added by the package with a chat after {TURNS + 1} answers, serve (ours) "
            "vs stdio (peer)", "MiB", memory, f"≤ stdio + {MEMORY_MARGIN_MIB} MiB", within_margin,
            noise=RSS_NOISE_MIB),
        *reattach_rows(rounds, workdir),
    ]


def reattach_rows(rounds: int, workdir: Path) -> list[Row]:
    reattach = Samples()
    progress(f"serve: reattaching after a reload, a {REATTACH_CHUNKS:,}-chunk answer replayed, {RELOADS} reloads "
             f"in each of {rounds} host processes")
    with FakeModel() as model:
        model.set_responder(answer)
        for number in range(rounds):
            result = run_host("bench.serve_reattach_host", workdir / f"serve-reattach-{number}", model.base_url,
                              REATTACH_CHUNKS, SIZE, RELOADS)
            # Every line exactly once, or the time is not a reattach's: the row fails instead of reporting it.
            missing, doubled = sum(floats(result["missing"])), sum(floats(result["doubled"]))
            if missing or doubled:
                raise RuntimeError(f"after a reattach, {missing:.0f} lines were missing from the transcript view "
                                   f"and {doubled:.0f} shown more than once")
            if min(floats(result["events"])) < REATTACH_CHUNKS:
                raise RuntimeError(f"the replays handed over {floats(result['events'])} events, not {REATTACH_CHUNKS:,}")
            reattach.add("ours", floats(result["reattach_ms"]))
    return [
        Row("14", f"serve: reattaching after a reload, {REATTACH_CHUNKS:,} events replayed: the chat's start (attach) "
            "→ the last line in the transcript view (every line checked there once)", "ms", reattach,
            f"≤ {REATTACH_GOAL_MS} ms", lambda p50, ratio: p50 <= REATTACH_GOAL_MS),
    ]
