"""The simulator's ``unittesting`` facade: UnitTesting's documented deferred
semantics (yield ms, yield a condition, a condition's timeout and error,
AWAIT_WORKER) and unittest's outcomes, run on the simulated main thread."""

from __future__ import annotations

import threading
import time
import unittest
from typing import Any

from tests.sublime_sim import SimulatedHost, sublime as sim_sublime, unittesting

WAIT = 10.0
SEEN: dict[str, Any] = {}


class Steps(unittesting.DeferrableTestCase):
    __test__ = False  # run by the facade, not collected by pytest

    def test_a_number_waits_that_many_milliseconds(self) -> Any:
        start = time.monotonic()
        yield 120
        SEEN["waited"] = time.monotonic() - start
        SEEN["thread"] = threading.current_thread().name

    def test_a_condition_is_polled_until_true_and_its_value_sent_back(self) -> Any:
        box: list[str] = []
        sim_sublime.set_timeout(lambda: box.append("ready"), 60)
        SEEN["sent"] = yield lambda: box and box[0]

    def test_a_condition_that_never_holds_throws_a_timeout(self) -> Any:
        try:
            yield {"condition": lambda: False, "timeout": 50, "timeout_message": "never"}
        except TimeoutError as error:
            SEEN["timeout"] = str(error)

    def test_a_conditions_error_is_thrown_into_the_test(self) -> Any:
        def broken() -> bool:
            raise KeyError("boom")

        try:
            yield broken
        except KeyError:
            SEEN["raised"] = True

    def test_await_worker_lets_the_worker_queue_run_first(self) -> Any:
        box: list[str] = []
        sim_sublime.set_timeout_async(lambda: box.append("worker ran"))
        yield unittesting.AWAIT_WORKER
        SEEN["worker"] = list(box)


class Outcomes(unittesting.DeferrableTestCase):
    __test__ = False

    def setUp(self) -> Any:
        yield
        SEEN.setdefault("setups", 0)
        SEEN["setups"] += 1

    def test_fails(self) -> Any:
        yield
        self.assertEqual(1, 2)

    def test_errors(self) -> Any:
        yield
        raise RuntimeError("bad")

    @unittest.expectedFailure
    def test_expected_to_fail(self) -> Any:
        yield
        self.fail("known")

    @unittest.expectedFailure
    def test_unexpectedly_passes(self) -> Any:
        yield

    @unittest.skip("not here")
    def test_skipped(self) -> None:
        raise AssertionError("must not run")

    def test_plain_method(self) -> None:
        SEEN["plain"] = True


def run(host: SimulatedHost, case: type[unittest.TestCase]) -> unittest.TestResult:
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    return unittesting.run_suite(suite, condition_timeout=2000).wait(WAIT)


def test_yielded_values_follow_unittestings_deferred_semantics(sim_host: SimulatedHost) -> None:
    SEEN.clear()
    result = run(sim_host, Steps)
    assert result.wasSuccessful(), result.errors + result.failures
    assert result.testsRun == 5
    assert SEEN["waited"] >= 0.12 and SEEN["thread"] == sim_host.main_thread.name
    assert SEEN["sent"] == "ready"
    assert SEEN["timeout"] == "never within 0.05 seconds"
    assert SEEN["raised"] is True
    assert SEEN["worker"] == ["worker ran"]


def test_failures_errors_expected_failures_and_skips_are_told_apart(sim_host: SimulatedHost) -> None:
    SEEN.clear()
    result = run(sim_host, Outcomes)
    assert result.testsRun == 6
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.failures] == ["test_fails"]
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.errors] == ["test_errors"]
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.expectedFailures] == ["test_expected_to_fail"]
    assert [t.id().rsplit(".", 1)[1] for t in result.unexpectedSuccesses] == ["test_unexpectedly_passes"]
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.skipped] == ["test_skipped"]
    assert SEEN["setups"] == 5 and SEEN["plain"] is True
    assert not result.wasSuccessful()
