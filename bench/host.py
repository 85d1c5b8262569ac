"""The package under benchmark: the built QwenCompanion loaded in the simulated
Sublime host, in a process of its own (as Sublime's plugin host is).

    python -m bench.host PACKAGES_DIR WORKSPACE VIEWS cold|warm

HOME / QWEN_HOME come from the environment (the runner points them at a
temporary folder). "warm" compiles the package first, as an earlier start of
Sublime has (the simulator imports plugins without writing bytecode); "cold"
starts with nothing compiled. The process opens VIEWS files of WORKSPACE, loads the
package, waits for its lock file, prints one JSON line (port, token, start-up
timings, RSS) and then answers one JSON command a line:

    {"cmd": "listener", "events": N}  main-thread µs of N selection events in
                                      the package's listeners
    {"cmd": "select", "point": P}     move the active view's caret on the main
                                      thread; answers the monotonic ns it did
    {"cmd": "notify", "params": {...}} publish an ide/contextUpdate (from this
                                      thread, as Sublime's worker thread does)
    {"cmd": "idle"}                   wait until both Sublime threads are quiet
    {"cmd": "main_seconds"}           wall seconds the main thread has spent in
                                      callbacks, each from when the scheduler took it
    {"cmd": "malloc"}                 glibc's heap: bytes in use and bytes free but
                                      kept (mallinfo2; null where the C library is not glibc)
    {"cmd": "rss"} / {"cmd": "quit"}
"""

from __future__ import annotations

import compileall
import ctypes
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from tests.sublime_sim import SimulatedHost, sublime_plugin as sim_plugin
from tests.support.editor import wait_for_package_threads

ROOT = Path(__file__).resolve().parent.parent
BUILT_PACKAGE = ROOT / "dist" / "QwenCompanion"
PACKAGE = "QwenCompanion"
LOCK_POLL = 0.05
WAIT = 60.0


def rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def malloc_split() -> dict[str, int] | None:
    """glibc's heap over all arenas: bytes in use (small blocks and mmapped
    ones) and bytes freed but kept by the allocator; None without glibc 2.33+."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {"in_use": info.uordblks + info.hblkhd, "free": info.fordblks}


def lock_dir() -> Path:
    home = os.environ.get("QWEN_HOME")
    return (Path(home) if home else Path(os.environ["HOME"]) / ".qwen") / "ide"


def time_plugin_loaded(spent: list[float]) -> None:
    """Record the main-thread seconds of every plugin_loaded() the host runs."""
    start_modules = sim_plugin.start_modules

    def timed(modules: list[sim_plugin.LoadedModule]) -> None:
        for loaded in modules:
            hook: Callable[[], None] | None = getattr(loaded.module, "plugin_loaded", None)
            if hook is not None:
                loaded.module.plugin_loaded = _timer(hook, spent)  # type: ignore[attr-defined]
        start_modules(modules)

    sim_plugin.start_modules = timed


def _timer(hook: Callable[[], None], spent: list[float]) -> Callable[[], None]:
    def run() -> None:
        start = time.perf_counter()
        try:
            hook()
        finally:
            spent.append(time.perf_counter() - start)

    return run


class Bench:
    """The loaded package and the commands the runner sends it."""

    def __init__(self, host: SimulatedHost, views: list[Any]) -> None:
        self.host = host
        self.active = views[-1]  # the last one opened has the focus
        self.companions = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions
        self.ide_messages = sys.modules[f"{PACKAGE}.core.companion.ide_messages"]

    def listener(self, events: int) -> list[float]:
        """µs per selection event in the package's own listeners, on the main thread."""
        view = self.active
        callbacks = [
            listener.on_selection_modified
            for listener in sim_plugin.all_callbacks["on_selection_modified"]
            if type(listener).__module__.startswith(PACKAGE + ".")
        ]

        def burst() -> list[float]:
            samples = []
            for _ in range(events):
                start = time.perf_counter_ns()
                for callback in callbacks:
                    callback(view)
                samples.append((time.perf_counter_ns() - start) / 1000)
            return samples

        result: list[float] = self.host.run_on_main(burst)
        return result

    def select(self, point: int) -> int:
        # What host.user.set_selection does, minus focusing the view first: a
        # focus event would make this a bigger refresh than a caret move is.
        app = self.host.app
        view_id = self.active.view_id

        def move() -> int:
            at = time.monotonic_ns()
            before = app.snapshot(view_id)
            app.sel_set(view_id, [(point, point)])
            app.flush_modifications(view_id, before)
            return at

        result: int = self.host.run_on_main(move)
        return result

    def notify(self, params: dict[str, Any]) -> None:
        context = self.ide_messages.IdeContext.model_validate(params)
        for companion in self.companions.all().values():
            companion.publish_context(context)

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        name = command["cmd"]
        if name == "listener":
            return {"us": self.listener(command["events"])}
        if name == "select":
            return {"at_ns": self.select(command["point"])}
        if name == "notify":
            self.notify(command["params"])
            return {}
        if name == "idle":
            self.host.wait_idle(timeout=WAIT)
            return {}
        if name == "main_seconds":
            return {"seconds": self.host.app.main.run_seconds}
        if name == "malloc":
            return {"malloc": malloc_split()}
        if name == "rss":
            return {"rss": rss_bytes()}
        raise ValueError(f"unknown command {name!r}")


class BenchChat:
    """The package's chat in `host`, started on `qwen_command` in `folder`;
    `turn` sends a prompt and returns once the answer is in the transcript."""

    def __init__(self, host: SimulatedHost, folder: Path, qwen_command: list[str], wait: float,
                 settings: dict[str, Any] | None = None) -> None:
        host.install_package(BUILT_PACKAGE, PACKAGE)
        (host.packages_dir / "User" / "QwenCompanion.sublime-settings").write_text(
            json.dumps({"qwen_command": qwen_command, **(settings or {})}))
        host.user.set_folders([str(folder)])
        host.load_package(PACKAGE)
        chats = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats
        window = host.window
        host.run_on_main(lambda: window.run_command("qwen_chat"))
        # The chat opens once its modules are imported, on the package's own thread.
        self.window_chat = host.wait_for(lambda: chats.get(window), timeout=wait)
        host.wait_idle()
        self.host = host
        self.wait = wait
        self.conversation = self.window_chat.core
        self.conversation.start().result(wait)
        self._ended = threading.Semaphore(0)
        chats.observers.append(lambda event, details: event == "chat_turn_ended" and self._ended.release())

    def turn(self, text: str) -> None:
        self.conversation.send(text)
        if not self._ended.acquire(timeout=self.wait):
            raise TimeoutError(f"no answer to {text!r}")
        self.window_chat.core.streamer.flush()
        self.host.wait_idle(timeout=self.wait)


def open_views(host: SimulatedHost, workspace: Path, count: int) -> list[Any]:
    paths = sorted(workspace.glob("*.py"))[:count]
    views = [host.user.open_file(path, wait=False) for path in paths]
    host.wait_for(lambda: not any(view.is_loading() for view in views), timeout=WAIT)
    host.wait_idle(timeout=WAIT)
    return views


def start(packages: Path, workspace: Path, view_count: int, warm: bool, out: TextIO) -> Bench:
    host = SimulatedHost(packages, check_threads=False)
    host.install_package(BUILT_PACKAGE, PACKAGE)
    if warm:
        compileall.compile_dir(packages / PACKAGE, quiet=1)
    host.user.set_folders([str(workspace)])
    views = open_views(host, workspace, view_count)
    rss_before = rss_bytes()
    plugin_loaded: list[float] = []
    time_plugin_loaded(plugin_loaded)

    begin = time.time_ns()
    host.load_package(PACKAGE)
    directory = lock_dir()
    # Seldom polled (a busy poll would take the GIL from the start it measures);
    # the file's own mtime tells when it was written.
    while not (locks := list(directory.glob("*.lock"))):
        if time.time_ns() - begin > WAIT * 1e9:
            raise TimeoutError("no lock file")
        time.sleep(LOCK_POLL)
    lock_seconds = (locks[0].stat().st_mtime_ns - begin) / 1e9
    lock = json.loads(locks[0].read_text())
    # The lock is written before the server's libraries are imported: the
    # measurements start once the package's start thread has ended.
    wait_for_package_threads(host, "start")
    host.wait_idle(timeout=WAIT)
    report = {
        "port": lock["port"],
        "token": lock["authToken"],
        "plugin_loaded_ms": sum(plugin_loaded) * 1000,
        "lock_ms": lock_seconds * 1000,
        "rss_before": rss_before,
        "pid": os.getpid(),
    }
    print(json.dumps(report), file=out, flush=True)
    return Bench(host, views)


def main() -> None:
    packages, workspace, view_count, warm = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "warm"
    # Answers go to the real stdout; anything the host or package prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    bench = start(packages, workspace, view_count, warm, out)
    host = bench.host
    try:
        for line in sys.stdin:
            command = json.loads(line)
            if command["cmd"] == "quit":
                break
            print(json.dumps(bench.handle(command)), file=out, flush=True)
    finally:
        host.close()
    errors = host.errors
    if errors:
        print("plugin errors:\n" + "\n".join(str(e) for e in errors), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
