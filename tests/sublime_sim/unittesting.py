"""The ``unittesting`` module as the UnitTesting package gives it to test suites
that run inside Sublime Text, for the simulated host.

What a suite uses, with the semantics UnitTesting documents for its deferred
runner (README, "DeferrableTestCase"): a test method (and ``setUp`` /
``tearDown``) may be a generator, driven on the main thread by
``sublime.set_timeout``; what it yields decides when it goes on:

* an ``int``: after that many milliseconds;
* a callable: once it returns a true value, polled every 17 ms (the value is
  sent back into the generator); after ``condition_timeout`` ms (4000 by
  default) a ``TimeoutError`` is thrown into the generator instead;
* a dict with ``"condition"`` (and optional ``"period"``, ``"timeout"``,
  ``"timeout_message"``): the same with those settings;
* ``AWAIT_WORKER``: after a round trip through the worker thread
  (``set_timeout_async``), so what was queued there before has run;
* anything else (a bare ``yield``): on the next turn of the main thread.

An exception raised by a condition is thrown into the generator. Tests run one
after the other, each class's ``setUpClass`` / ``tearDownClass`` around its
tests; ``unittest``'s ``skip`` and ``expectedFailure`` decorators apply.

``run_suite`` plays the UnitTesting runner: it starts a suite on the main
thread and returns a ``DeferredRun`` to wait on from another thread.
"""

from __future__ import annotations

import sys
import threading
import time
import unittest
from collections.abc import Callable, Generator, Iterable, Iterator
from types import TracebackType
from typing import Any

from . import _runtime, sublime

AWAIT_WORKER = "AWAIT_WORKER"
DEFAULT_CONDITION_POLL_TIME = 17
DEFAULT_CONDITION_TIMEOUT = 4000

expectedFailure = unittest.expectedFailure
TestCase = unittest.TestCase

Steps = Generator[Any, Any]
ExcInfo = tuple[type[BaseException], BaseException, TracebackType] | tuple[None, None, None]


def _steps(method: Callable[[], object]) -> Steps:
    """A setUp/test/tearDown call as steps (none for a plain method)."""
    value = method()
    if isinstance(value, Generator):
        yield from value


class DeferrableTestCase(unittest.TestCase):
    """A test case whose methods may be generators (see the module doc)."""

    def run_deferred(self, result: unittest.TestResult) -> Steps:
        result.startTest(self)
        try:
            yield from self._outcome_steps(result)
        finally:
            result.stopTest(self)

    def _skip_reason(self, method: Callable[..., object]) -> str | None:
        for owner in (type(self), method):
            if getattr(owner, "__unittest_skip__", False):
                return str(getattr(owner, "__unittest_skip_why__", ""))
        return None

    def _outcome_steps(self, result: unittest.TestResult) -> Steps:
        method = getattr(self, self._testMethodName)
        reason = self._skip_reason(method)
        if reason is not None:
            result.addSkip(self, reason)
            return
        expecting_failure = getattr(method, "__unittest_expecting_failure__", False)
        try:
            yield from _steps(self.setUp)
        except unittest.SkipTest as skip:
            result.addSkip(self, str(skip))
            return
        except Exception:
            result.addError(self, sys.exc_info())
            self.doCleanups()
            return
        problem: tuple[str, ExcInfo | None] | None = None
        try:
            yield from _steps(method)
        except unittest.SkipTest as skip:
            result.addSkip(self, str(skip))
            problem = ("skipped", None)
        except self.failureException:
            problem = ("failure", sys.exc_info())
        except Exception:
            problem = ("error", sys.exc_info())
        try:
            yield from _steps(self.tearDown)
        except Exception:
            result.addError(self, sys.exc_info())
            problem = problem or ("teardown", None)
        self.doCleanups()
        self._report(result, problem, expecting_failure)

    def _report(
        self, result: unittest.TestResult, problem: tuple[str, ExcInfo | None] | None, expecting_failure: bool
    ) -> None:
        kind, info = problem or ("passed", None)
        if kind in ("skipped", "teardown"):
            return
        if expecting_failure:
            if info is not None:
                result.addExpectedFailure(self, info)
            else:
                result.addUnexpectedSuccess(self)
        elif info is None:
            result.addSuccess(self)
        elif kind == "failure":
            result.addFailure(self, info)
        else:
            result.addError(self, info)


def _flatten(tests: Iterable[Any]) -> Iterator[unittest.TestCase]:
    for test in tests:
        if isinstance(test, unittest.TestSuite):
            yield from _flatten(test)
        else:
            yield test


def _suite_steps(suite: unittest.TestSuite, result: unittest.TestResult) -> Steps:
    cases = list(_flatten(suite))
    for index, case in enumerate(cases):
        cls = type(case)
        first_of_class = index == 0 or type(cases[index - 1]) is not cls
        last_of_class = index == len(cases) - 1 or type(cases[index + 1]) is not cls
        if first_of_class:
            cls.setUpClass()
        try:
            if isinstance(case, DeferrableTestCase):
                yield from case.run_deferred(result)
            else:
                case.run(result)
        finally:
            if last_of_class:
                cls.tearDownClass()


class DeferredRun:
    """A suite being run on the main thread; ``wait`` from another thread."""

    def __init__(self, steps: Steps, result: unittest.TestResult, condition_timeout: int) -> None:
        self.result = result
        self.error: BaseException | None = None
        self._steps = steps
        self._condition_timeout = condition_timeout
        self._done = threading.Event()

    def wait(self, timeout: float) -> unittest.TestResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"the suite did not finish within {timeout} s")
        if self.error is not None:
            raise self.error
        return self.result

    def step(self, send: object = None, throw: BaseException | None = None) -> None:
        try:
            # A test case drives Sublime as the person at the keyboard would: its
            # steps are the user's actions (what the code under test starts is not).
            with _runtime.app().focus_guard.user_action():
                yielded = self._steps.throw(throw) if throw is not None else self._steps.send(send)
        except StopIteration:
            self._done.set()
            return
        except BaseException as error:  # a fault of the runner itself, not of a test
            self.error = error
            self._done.set()
            return
        self._schedule(yielded)

    def _schedule(self, yielded: object) -> None:
        if callable(yielded):
            self._poll_later(yielded, DEFAULT_CONDITION_POLL_TIME, self._condition_timeout, None, time.monotonic(), 0)
        elif isinstance(yielded, dict) and callable(yielded.get("condition")):
            self._poll_later(
                yielded["condition"],
                int(yielded.get("period", DEFAULT_CONDITION_POLL_TIME)),
                int(yielded.get("timeout", self._condition_timeout)),
                yielded.get("timeout_message"),
                time.monotonic(),
                int(yielded.get("period", DEFAULT_CONDITION_POLL_TIME)),
            )
        elif isinstance(yielded, int) and not isinstance(yielded, bool):
            sublime.set_timeout(self.step, yielded)
        elif yielded == AWAIT_WORKER:
            sublime.set_timeout_async(lambda: sublime.set_timeout(self.step, 0))
        else:
            sublime.set_timeout(self.step, 0)

    def _poll_later(
        self, condition: Callable[[], object], period: int, timeout: int, message: str | None, start: float, delay: int
    ) -> None:
        sublime.set_timeout(lambda: self._poll(condition, period, timeout, message, start), delay)

    def _poll(self, condition: Callable[[], object], period: int, timeout: int, message: str | None, start: float) -> None:
        try:
            value = condition()
        except Exception as error:
            self.step(throw=error)
            return
        if value:
            self.step(send=value)
        elif (time.monotonic() - start) * 1000 >= timeout:
            self.step(throw=TimeoutError(f"{message or 'Condition not fulfilled'} within {timeout / 1000:.2f} seconds"))
        else:
            self._poll_later(condition, period, timeout, message, start, period)


def run_suite(suite: unittest.TestSuite, condition_timeout: int = DEFAULT_CONDITION_TIMEOUT) -> DeferredRun:
    """Start ``suite`` on the simulated main thread (call from any other thread)."""
    result = unittest.TestResult()
    run = DeferredRun(_suite_steps(suite, result), result, condition_timeout)
    sublime.set_timeout(run.step, 0)
    return run
