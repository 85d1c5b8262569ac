"""The package's quick actions under benchmark: the built QwenCompanion in
the simulated Sublime host (a process of its own, as Sublime's plugin host
is). Prints one JSON line:

    python -m bench.actions_host WORKDIR RUNS PAIRS

- "spawn_main_ms": main-thread CPU time from running Explain Selection to
  the CLI spawned (tests/rig/fake_stream_cli.py), RUNS times;
- "updates_per_s": answer-view updates a second while the CLI streams
  UNPACED chunks at once, and PACED chunks at RATE a second;
- "review_ms": the result line written by the CLI → the review open (Fix
  Selection), RUNS times;
- "scripted_overhead_ms" / "real_overhead_ms": Explain through the package,
  from the command to its end (the CLI exited), minus the same argv and
  prompt run by hand (initialize, the prompt, read to the result, close
  stdin, wait for the exit), PAIRS pairs each: on the scripted CLI, and on
  the real `qwen` with the fake model.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.host import BUILT_PACKAGE, PACKAGE
from tests.rig.fake_model import FakeModel
from tests.rig.qwen_cli import cli_env, find_cli, make_home
from tests.sublime_sim import SimulatedHost

FAKE_CLI = Path(__file__).resolve().parents[1] / "tests" / "rig" / "fake_stream_cli.py"
SETTINGS = "QwenCompanion.sublime-settings"
UNPACED = 40_000
PACED = 4_000
RATE = 2_000
CODE = "def area(r):\n    return 3.14 * r * r\n"
WAIT = 120.0


class Bench:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.host = SimulatedHost(workdir / "Packages", check_threads=False)
        self.script = workdir / "script.json"
        self.log = workdir / "cli.jsonl"
        self.finished = threading.Semaphore(0)
        self.outcomes: list[str] = []
        self.finished_at = 0.0  # perf_counter at the last action_finished

    def start(self) -> None:
        host = self.host
        host.install_package(BUILT_PACKAGE, PACKAGE)
        (host.packages_dir / "User" / SETTINGS).write_text(
            json.dumps({"qwen_command": [sys.executable, str(FAKE_CLI), str(self.script)]}))
        folder = self.workdir / "project"
        folder.mkdir(exist_ok=True)
        (folder / "geometry.py").write_text(CODE)
        host.user.set_folders([str(folder)])
        host.load_package(PACKAGE)
        self.actions = sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions
        self.actions.observers.append(self._observe)
        self.view = host.user.open_file(folder / "geometry.py")
        host.wait_idle()

    def _observe(self, event: str, details: dict[str, Any]) -> None:
        if event == "action_finished":
            self.finished_at = time.perf_counter()
            self.outcomes.append(details["outcome"])
            self.finished.release()

    def steps(self, steps: list[dict[str, Any]]) -> None:
        self.script.write_text(json.dumps({"steps": steps, "log": str(self.log)}))
        self.log.unlink(missing_ok=True)

    def action(self, name: str) -> float:
        """Run `name` on the whole file and wait for its end; when it was run (perf_counter)."""
        self.host.user.set_selection(self.view, [(0, len(CODE))])
        self.host.wait_idle()
        start = time.perf_counter()
        self.host.run_on_main(lambda: self.view.run_command("qwen_action", {"action": name}))
        self.wait()
        return start

    def wait(self) -> None:
        if not self.finished.acquire(timeout=WAIT):
            raise TimeoutError("the action did not end")
        self.host.wait_idle()

    def spawn_main_ms(self, runs: int) -> list[float]:
        # Imported by the first action; imported here to be timed (that one import is in the first sample).
        run_module = importlib.import_module(f"{PACKAGE}.core.actions.run")
        main_clock = time.pthread_getcpuclockid(self.host.main_thread.ident)
        spawned: list[float] = []
        original = run_module.spawn

        async def timed_spawn(*args: Any) -> Any:
            process = await original(*args)
            spawned.append(time.clock_gettime(main_clock))
            return process

        run_module.spawn = timed_spawn
        self.steps([{"text": "An answer."}])
        samples = []
        try:
            for _ in range(runs):
                self.host.user.set_selection(self.view, [(0, len(CODE))])
                self.host.wait_idle()
                before = time.clock_gettime(main_clock)
                self.host.run_on_main(lambda: self.view.run_command("qwen_action", {"action": "explain"}))
                self.host.wait_for(lambda: len(spawned) > len(samples), timeout=WAIT)
                samples.append((spawned[-1] - before) * 1000)
                self.wait()
        finally:
            run_module.spawn = original
        return samples

    def updates_per_s(self) -> list[float]:
        answer = sys.modules[f"{PACKAGE}.plugin.actions.answer"].AnswerStream
        original = answer.flush
        times: list[float] = []

        def timed_flush(stream: Any) -> None:
            updates = stream.updates
            original(stream)
            if stream.updates > updates:
                times.append(time.monotonic())

        answer.flush = timed_flush
        rates = []
        try:
            for steps in ([{"text": "x" * UNPACED, "chunks": UNPACED}],
                          [{"text": "y" * PACED, "chunks": PACED, "delay": 1 / RATE}]):
                times.clear()
                self.steps(steps)
                self.action("explain")
                rates.append((len(times) - 1) / (times[-1] - times[0]))
        finally:
            answer.flush = original
        return rates

    def review_ms(self, runs: int) -> list[float]:
        reviews = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"].reviews
        opened: list[int] = []
        reviews.observers.append(lambda event, details: event == "diff_opened" and opened.append(time.monotonic_ns()))
        samples = []
        for _ in range(runs):
            self.steps([{"text": f"Use math.pi.\n\n```python\n{CODE.replace('3.14', 'math.pi')}```\n"}])
            self.action("fix")
            written = next(m["result_ns"] for m in map(json.loads, self.log.read_text().splitlines()) if "result_ns" in m)
            samples.append((opened[-1] - written) / 1e6)
        return samples

    def overhead(self, pairs: int) -> list[float]:
        """Explain through the package minus the same command and prompt run by
        hand, pair by pair (the order alternating), in ms."""
        self.action("explain")  # a first start warms caches (the CLI compiles its own): not counted
        job = self.actions.jobs[self.host.window.id()]
        differences = []
        for number in range(pairs):
            package = by_hand_ms = 0.0
            for which in (("package", "by hand") if number % 2 == 0 else ("by hand", "package")):
                if which == "package":
                    start = self.action("explain")
                    package = self.finished_at - start
                else:
                    start = time.perf_counter()
                    by_hand(job.invocation.argv, job.invocation.cwd, job.invocation.prompt)
                    by_hand_ms = time.perf_counter() - start
            differences.append((package - by_hand_ms) * 1000)
        return differences

    def real_overhead(self, pairs: int) -> list[float]:
        """`overhead` with the real qwen on the fake model."""
        cli = find_cli()
        reason = cli.missing_reason()
        if reason:
            raise RuntimeError(reason)
        with FakeModel() as model:
            os.environ.update(cli_env(cli, make_home(self.workdir / "cli-home"), model.base_url))
            self.host.user.edit_settings_file(SETTINGS, {"qwen_command": [str(cli.node), str(cli.entry)]})
            self.host.wait_idle()
            return self.overhead(pairs)


def by_hand(argv: list[str], cwd: str, prompt: str) -> None:
    """The stream-json exchange the package has, written out plainly."""
    process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}) + "\n")
    process.stdin.write(json.dumps({"type": "user", "session_id": "by-hand", "parent_tool_use_id": None,
                                    "message": {"role": "user", "content": prompt}}) + "\n")
    process.stdin.flush()
    for line in process.stdout:
        if json.loads(line).get("type") == "result":
            break
    process.stdin.close()
    process.wait(WAIT)


def main(workdir: Path, runs: int, pairs: int) -> dict[str, Any]:
    bench = Bench(workdir)
    try:
        bench.start()
        results: dict[str, Any] = {
            "spawn_main_ms": bench.spawn_main_ms(runs),
            "updates_per_s": bench.updates_per_s(),
            "review_ms": bench.review_ms(runs),
        }
        bench.steps([{"text": "An answer."}])
        results["scripted_overhead_ms"] = bench.overhead(pairs)
        results["real_overhead_ms"] = bench.real_overhead(pairs)
        if any(outcome == "failed" for outcome in bench.outcomes):
            raise RuntimeError(f"an action failed: {bench.outcomes}")
        return results
    finally:
        bench.host.close()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))), flush=True)
