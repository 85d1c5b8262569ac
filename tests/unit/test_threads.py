"""Threads start in one place (core/threads.py), each named for what it does,
and the thread markers check where a call runs (only when a referee is
installed: the simulator's; tests/sim/test_sim_threads.py)."""

from __future__ import annotations

import ast
import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from qwencompanion_src.core import threads
from qwencompanion_src.core.loop_thread import LoopThread

PACKAGE = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"
EXECUTORS = {PACKAGE / "core" / "threads.py", PACKAGE / "core" / "loop_thread.py"}  # the second makes loops, through the first

# What starts a thread: the classes, the pools, the low-level call, the timer
# (a thread), and an asyncio loop of its own (its default pool is unnamed).
_STARTS = {"Thread", "ThreadPoolExecutor", "Timer", "start_new_thread", "start_new", "new_event_loop", "run"}
_MODULES = {"threading", "_thread", "concurrent.futures", "asyncio"}
# Calls that start a thread of ours and the argument (position, keyword) that names it.
_NAMED_STARTS = {"start": (0, "name"), "pool": (0, "name"), "timer": (0, "name"), "in_background": (1, "name"), "LoopThread": (0, "name")}


def _package_sources() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "vendor" not in path.relative_to(PACKAGE).parts:
            yield path


def _shown(path: Path) -> Path:
    return path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> `module.name` for `from threading import Thread` and the like."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in _MODULES:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def thread_starts_outside_the_executors(sources: Iterator[Path]) -> list[str]:
    """Every place outside the executors that starts a thread (or subclasses Thread)."""
    found = []
    for path in sources:
        if path in EXECUTORS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        imported = _imported_names(tree)
        for node in ast.walk(tree):
            target = node.func if isinstance(node, ast.Call) else None
            bases = node.bases if isinstance(node, ast.ClassDef) else []
            for each in [target, *bases]:
                if isinstance(each, ast.Attribute) and isinstance(each.value, ast.Name):
                    qualified = f"{each.value.id}.{each.attr}"
                elif isinstance(each, ast.Name):
                    qualified = imported.get(each.id, "")
                else:
                    continue
                module, _, name = qualified.rpartition(".")
                if module in _MODULES and name in _STARTS:
                    found.append(f"{_shown(path)}:{node.lineno} {qualified}")
    return found


def _constants(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets if isinstance(target, ast.Name)
    }


def unnamed_thread_starts(sources: Iterator[Path]) -> list[str]:
    """Every start of a thread of ours whose name is not a string the code
    spells out (or a module constant, or one of core/threads.py's loop names),
    or says nothing past the package's prefix."""
    loops = {name: value for name, value in vars(threads).items() if name.endswith("_LOOP")}
    found = []
    for path in sources:
        if _shown(path) in {Path("core/threads.py"), Path("core/loop_thread.py"), Path("plugin/background.py")}:
            continue  # the executors themselves pass on the name they are given
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        constants = _constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called not in _NAMED_STARTS or (called in ("start", "pool", "timer") and not _is_threads(node.func)):
                continue
            position, keyword = _NAMED_STARTS[called]
            given = node.args[position] if len(node.args) > position else next(
                (k.value for k in node.keywords if k.arg == keyword), None)
            name = _spelled(given, constants, loops)
            full = name if called != "in_background" or name is None else threads.PREFIX + name
            if full is None or not full.startswith(threads.PREFIX) or not full[len(threads.PREFIX):].strip():
                found.append(f"{_shown(path)}:{node.lineno} {called}({ast.unparse(given) if given else ''})")
    return found


def _is_threads(function: ast.expr) -> bool:
    return isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and function.value.id == "threads"


def _spelled(given: ast.expr | None, constants: dict[str, str], loops: dict[str, str]) -> str | None:
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        return given.value
    if isinstance(given, ast.Name):
        return constants.get(given.id)
    if isinstance(given, ast.Attribute) and isinstance(given.value, ast.Name) and given.value.id == "threads":
        return loops.get(given.attr)
    return None


def test_no_module_but_the_executors_starts_a_thread() -> None:
    found = thread_starts_outside_the_executors(_package_sources())
    assert found == []


def test_every_thread_of_ours_is_named_for_what_it_does() -> None:
    assert unnamed_thread_starts(_package_sources()) == []


def test_the_scans_find_a_thread_started_aside_and_one_without_a_name(tmp_path: Path) -> None:
    aside = tmp_path / "aside.py"
    aside.write_text(
        "import asyncio, threading\nfrom concurrent.futures import ThreadPoolExecutor as Pool\n"
        "threading.Thread(target=print).start()\nPool(2)\nthreading.Timer(1, print).start()\n"
        "class Mine(threading.Thread):\n    pass\nasyncio.new_event_loop()\n"
    )
    assert len(thread_starts_outside_the_executors(iter([aside]))) == 5
    unnamed = tmp_path / "unnamed.py"
    unnamed.write_text(
        "from .core import threads\nfrom .background import in_background\nWHAT = 'diagnose'\n"
        "threads.start(what, print)\nthreads.start('QwenCompanion ', print)\nthreads.pool('rewind', 2)\n"
        "in_background(print, WHAT)\nthreads.start(threads.CHAT_LOOP, print)\n"
    )
    assert [line.split(" ", 1)[1] for line in unnamed_thread_starts(iter([unnamed]))] == [
        "start(what)", "start('QwenCompanion ')", "pool('rewind')"
    ]


def test_start_and_pool_refuse_a_name_that_does_not_say_what_the_thread_does() -> None:
    for name in ("file read", "QwenCompanion ", ""):
        with pytest.raises(ValueError, match="named"):
            threads.start(name, lambda: None)
        with pytest.raises(ValueError, match="named"):
            threads.pool(name)
        with pytest.raises(ValueError, match="named"):
            threads.timer(name, 1.0, lambda: None)


# --- the markers ----------------------------------------------------------------------------------


class Referee:
    """Sublime's main thread is the test's; its worker, one named below."""

    def __init__(self) -> None:
        self.main = threading.current_thread()
        self.worker: threading.Thread | None = None
        self.wrong: list[tuple[str, tuple[str, ...], str]] = []

    def sublime_thread(self) -> Literal["main", "worker"] | None:
        current = threading.current_thread()
        return "main" if current is self.main else "worker" if current is self.worker else None

    def wrong_thread(self, function: str, wanted: tuple[str, ...], running: str) -> None:
        self.wrong.append((function.rsplit(".", 1)[-1], wanted, running))


@pytest.fixture
def referee() -> Iterator[Referee]:
    installed = Referee()
    threads.install_referee(installed)
    try:
        yield installed
    finally:
        threads.install_referee(None)


@threads.on_main
def paint() -> str:
    return "painted"


@threads.on_worker
def refresh() -> str:
    return "refreshed"


@threads.may_block
def read() -> str:
    return "read"


@threads.on_chat_loop
async def turn() -> str:
    return "turned"


def on_thread(work: object, name: str = "QwenCompanion marker test", place: str = threads.OURS) -> None:
    assert callable(work)
    threads.start(name, work, place=place).join(5)


def test_marked_calls_on_their_threads_pass_and_others_are_reported(referee: Referee) -> None:
    assert paint() == "painted"  # the test's thread is this referee's main
    worker = referee.worker = threading.Thread(target=lambda: (refresh(), paint()), name="sublime-worker-like")
    worker.start()
    worker.join(5)
    on_thread(lambda: (read(), refresh()))
    assert referee.wrong == [
        ("paint", (threads.MAIN,), threads.WORKER),
        ("refresh", (threads.WORKER,), threads.OURS),
    ]
    referee.wrong.clear()
    read()  # may_block on the main thread
    assert referee.wrong == [("read", (threads.OURS,), threads.MAIN)]


def test_a_coroutine_is_checked_on_the_loop_it_runs_on_not_where_it_was_made(referee: Referee) -> None:
    chat = LoopThread(threads.CHAT_LOOP)
    other = LoopThread("QwenCompanion other loop")
    chat.start()
    other.start()
    try:
        assert chat.run(turn()) == "turned"  # made on the test's thread, run on the chat's loop
        assert referee.wrong == []
        assert other.run(turn()) == "turned"
        assert referee.wrong == [("turn", (threads.CHAT_LOOP,), "QwenCompanion other loop")]
    finally:
        chat.stop()
        other.stop()


def test_work_a_loop_hands_to_a_thread_runs_on_a_named_pool_of_ours(referee: Referee) -> None:
    loop = LoopThread("QwenCompanion pool test")
    loop.start()
    try:
        async def blocking() -> str:
            return await asyncio.to_thread(lambda: f"{threading.current_thread().name} {read()}")

        assert loop.run(blocking()).startswith("QwenCompanion pool test blocking")
        assert referee.wrong == []
    finally:
        loop.stop()


def test_without_a_referee_nothing_is_checked() -> None:
    on_thread(lambda: (paint(), refresh()))  # nobody to tell: the calls just run
    assert paint() == "painted"
