"""The plugin threads' scheduler names what it runs without ``repr()``: a
callback holding a big argument (a `functools.partial` of a 10 MB review)
costs the scheduler the same as any other, and a violation keeps a short label.

Timings are not asserted: what made naming cost grow with the argument
(``repr()`` of the callable and everything it holds) is counted instead."""

from __future__ import annotations

import functools
import threading
import time

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._scheduler import Clock, Loop
from tests.sublime_sim._watchdog import LABEL_LIMIT

BIG = 10_000_000


class Review:
    """A 10 MB argument that counts the times it is shown with ``repr()``."""

    def __init__(self) -> None:
        self.text = "x" * BIG
        self.reprs = 0

    def __repr__(self) -> str:
        self.reprs += 1
        return f"Review({self.text!r})"


class Show:
    """A callable object (no ``__qualname__`` of its own) that counts its ``repr()``s
    and waits, so that the watchdog records a violation naming it."""

    def __init__(self) -> None:
        self.reprs = 0
        self.ran = 0

    def __call__(self, review: Review) -> None:
        self.ran += 1
        time.sleep(0.001)

    def __repr__(self) -> str:
        self.reprs += 1
        return "Show()"


def test_a_partial_holding_10_mb_is_named_without_repr_and_briefly(sim_host: SimulatedHost) -> None:
    review, show = Review(), Show()
    sim_host.sublime.set_timeout(functools.partial(show, review))
    sim_host.wait_idle()
    violations = sim_host.watchdog.take()
    assert show.ran == 1
    assert [v.callback for v in violations] == ["partial(Show instance)"]
    assert (review.reprs, show.reprs) == (0, 0)


def test_pending_callbacks_are_listed_without_repr(sim_host: SimulatedHost) -> None:
    review, show = Review(), Show()
    sim_host.sublime.set_timeout(functools.partial(show, review), 60_000)
    sim_host.sublime.set_timeout(functools.partial(functools.partial(len, review.text)), 60_000)
    pending = sim_host.app.main.pending()
    assert [entry.rsplit(" in ", 1)[0] for entry in pending] == ["partial(Show instance)", "partial(len)"]
    assert (review.reprs, show.reprs) == (0, 0)
    sim_host.app.main.clear()


def test_a_violation_keeps_at_most_200_characters_of_its_label(sim_host: SimulatedHost) -> None:
    sim_host.app.main.post(lambda: time.sleep(0.001), 0, label="load " + "deep/" * 10_000 + "file.py")
    sim_host.wait_idle()
    (violation,) = sim_host.watchdog.take()
    assert LABEL_LIMIT == 200
    assert len(violation.callback) <= LABEL_LIMIT and violation.callback.startswith("load deep/deep/")


def test_run_seconds_holds_each_callback_from_when_the_loop_takes_it(sim_host: SimulatedHost) -> None:
    loop = sim_host.app.main
    sim_host.wait_idle()
    before = loop.run_seconds
    inside: list[float] = []  # the callback's own measure of itself: less than the loop's

    def work() -> None:
        start = time.perf_counter()
        sum(range(200_000))
        inside.append(time.perf_counter() - start)

    sim_host.sublime.set_timeout(work)
    sim_host.wait_idle()
    assert loop.run_seconds - before >= inside[0] > 0


def test_a_call_waiting_for_a_loop_that_stops_is_told_so_and_never_run() -> None:
    # A plugin's thread that waits on the main thread while the host shuts down is
    # told the call will not run; left waiting, it kept the host's stop for 10 s.
    errors: list[BaseException] = []
    loop = Loop("main under test", threading.Condition(), Clock(), lambda _, error: errors.append(error))
    loop.start()
    busy, release = threading.Event(), threading.Event()
    loop.post(lambda: (busy.set(), release.wait()))  # the loop runs something long
    assert busy.wait(5.0)
    ran: list[str] = []
    outcome: list[BaseException | str] = []

    def caller() -> None:
        try:
            outcome.append(loop.call_and_wait(lambda: ran.append("ran")))
        except BaseException as error:
            outcome.append(error)

    calling = threading.Thread(target=caller)
    calling.start()
    while not loop.pending():  # the call is queued behind the running callback
        time.sleep(0.01)
    loop.stop(timeout=0)
    calling.join(5.0)
    release.set()
    loop.thread.join(5.0)
    assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError)
    assert "stopped before running the call" in str(outcome[0])
    assert ran == [] and errors == []
