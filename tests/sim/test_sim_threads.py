"""The main/worker threads, waiting, and error recording."""

from __future__ import annotations

import threading
import time

import pytest

from tests.sublime_sim import SimulatedHost


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
