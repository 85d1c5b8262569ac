"""The main/worker threads, waiting, and error recording."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import SOURCE
from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

THREADS_SOURCE = SOURCE / "core" / "threads.py"


def test_timeouts_run_on_their_threads_in_due_order(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    seen: list[tuple[str, str]] = []

    def rec(tag: str) -> None:
        seen.append((tag, threading.current_thread().name))

    sublime.set_timeout(lambda: rec("main-20"), 20)
    sublime.set_timeout(lambda: rec("main-0a"))
    sublime.set_timeout(lambda: rec("main-0b"), 0)
    sublime.set_timeout_async(lambda: rec("worker"))
    sim_host.wait_idle()
    assert [t for t, _ in seen if t.startswith("main")] == ["main-0a", "main-0b", "main-20"]
    assert dict(seen) == {"main-0a": "sublime-main", "main-0b": "sublime-main", "main-20": "sublime-main", "worker": "sublime-worker"}


def test_run_on_main_returns_and_reraises(sim_host: SimulatedHost) -> None:
    assert sim_host.run_on_main(lambda: threading.current_thread().name) == "sublime-main"
    assert sim_host.run_on_worker(lambda: sim_host.is_worker_thread()) is True
    with pytest.raises(ZeroDivisionError):
        sim_host.run_on_main(lambda: 1 / 0)
    assert sim_host.errors == []  # re-raised to the caller, not recorded


def busy_for(seconds: float) -> None:
    """Keep the thread busy without waiting (the watchdog counts a sleep as a wait)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_wait_idle_ignores_far_timers_and_waits_for_near_ones(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    done: list[int] = []
    sublime.set_timeout(lambda: done.append(1), 60_000)
    sublime.set_timeout_async(lambda: (busy_for(0.05), sublime.set_timeout(lambda: done.append(2), 10)))
    start = time.monotonic()
    sim_host.wait_idle(timeout=2)
    assert done == [2]
    assert time.monotonic() - start < 1.5
    with pytest.raises(TimeoutError):
        sim_host.wait_idle(timeout=0.05, horizon_ms=120_000)
    sim_host.advance_clock(60_000)
    sim_host.wait_idle()
    assert done == [2, 1]


def test_exceptions_in_callbacks_are_recorded(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime

    def boom() -> None:
        raise RuntimeError("kaboom")

    sublime.set_timeout(boom)
    sublime.set_timeout_async(boom)
    sim_host.wait_idle()
    errors = sim_host.errors
    assert {e.thread for e in errors} == {"sublime-main", "sublime-worker"}
    assert all("kaboom" in e.traceback for e in errors)
    with pytest.raises(AssertionError, match="kaboom"):
        sim_host.assert_no_errors()
    sim_host.clear_errors()
    sim_host.assert_no_errors()


def test_api_usable_from_any_thread(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    view = sim_host.window.new_file()
    results: list[int] = []

    def worker(n: int) -> None:
        for _ in range(20):
            view.run_command("append", {"characters": str(n)})
        results.append(n)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sim_host.wait_idle()
    assert view.size() == 80 and sorted(results) == [0, 1, 2, 3]
    assert sublime.active_window().active_view() == view
    sim_host.assert_no_errors()


def test_wait_idle_refuses_plugin_threads(sim_host: SimulatedHost) -> None:
    with pytest.raises(RuntimeError):
        sim_host.run_on_main(sim_host.wait_idle)


# --- the thread referee: functions marked for a thread (the package's core/threads.py) -------------
MARKED_PLUGIN = '''
import sublime

from .threads import CHAT_LOOP, PREFIX, may_block, on_chat_loop, on_main, start

RAN = []


@on_main
def paint(tag):
    RAN.append(("paint", tag))


@may_block
def read_disk(tag):
    RAN.append(("read_disk", tag))


@on_chat_loop
def on_loop(tag):
    RAN.append(("on_loop", tag))


def on_a_thread_of_ours(work):
    start(PREFIX + "referee test", work)


def on_the_chat_loop(work):
    start(CHAT_LOOP, work, place=CHAT_LOOP)
'''


def load_marked(host: SimulatedHost) -> ModuleType:
    """A package with the package's thread markers (core/threads.py, copied as it is)."""
    write_package(host.packages_dir, "Marked", {"threads.py": THREADS_SOURCE.read_text(encoding="utf-8"), "marked.py": MARKED_PLUGIN})
    host.load_package("Marked")
    return sys.modules["Marked.marked"]


def wait_for(ran: list[tuple[str, str]], count: int) -> None:
    deadline = time.monotonic() + 5
    while len(ran) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_function_marked_for_the_main_thread_fails_the_run_when_a_worker_calls_it(sim_host: SimulatedHost) -> None:
    marked = load_marked(sim_host)
    sim_host.sublime.set_timeout_async(lambda: marked.paint("from the worker"))
    sim_host.wait_idle()
    assert marked.RAN == [("paint", "from the worker")]  # reported, not stopped: the run goes on as in Sublime
    wrong = sim_host.thread_referee.take()
    assert [(w.function, w.wanted, w.running, w.thread) for w in wrong] == [
        ("Marked.marked.paint", ("Sublime's main thread",), "Sublime's worker thread", "sublime-worker")
    ]
    sim_host.sublime.set_timeout_async(lambda: marked.paint("again"))
    sim_host.wait_idle()
    with pytest.raises(AssertionError, match=r"Marked\.marked\.paint is marked for Sublime's main thread but ran on Sublime's worker"):
        sim_host.thread_referee.check()  # what the host's close does


def test_marked_functions_on_their_own_threads_pass(sim_host: SimulatedHost) -> None:
    marked = load_marked(sim_host)
    sim_host.sublime.set_timeout(lambda: marked.paint("main"))
    marked.on_a_thread_of_ours(lambda: marked.read_disk("ours"))
    marked.on_the_chat_loop(lambda: (marked.on_loop("chat loop"), marked.read_disk("chat loop")))
    wait_for(marked.RAN, 4)
    sim_host.wait_idle()
    assert sorted(marked.RAN) == [("on_loop", "chat loop"), ("paint", "main"), ("read_disk", "chat loop"), ("read_disk", "ours")]
    assert sim_host.thread_referee.take() == []


def test_blocking_work_on_sublimes_threads_and_loop_work_elsewhere_are_reported(sim_host: SimulatedHost) -> None:
    marked = load_marked(sim_host)
    sim_host.sublime.set_timeout(lambda: marked.read_disk("main"))
    marked.on_a_thread_of_ours(lambda: marked.on_loop("a thread of ours"))
    wait_for(marked.RAN, 2)
    sim_host.wait_idle()
    wrong = {(w.function, w.running) for w in sim_host.thread_referee.take()}
    assert wrong == {("Marked.marked.read_disk", "Sublime's main thread"), ("Marked.marked.on_loop", "a thread of ours")}


def test_the_referee_leaves_the_package_when_the_host_closes(packages_dir: Path) -> None:
    host = SimulatedHost(packages_dir)
    try:
        marked = load_marked(host)
        threads = sys.modules["Marked.threads"]
        assert threads._referee is host.thread_referee
    finally:
        host.close()
    assert threads._referee is None
    marked.paint("no host")  # nobody checks any more


def test_a_host_that_does_not_check_threads_gives_the_package_no_referee(packages_dir: Path) -> None:
    """The bench's host: a marked function costs what it costs in Sublime."""
    host = SimulatedHost(packages_dir, check_threads=False)
    try:
        load_marked(host)
        assert sys.modules["Marked.threads"]._referee is None
    finally:
        host.close()
