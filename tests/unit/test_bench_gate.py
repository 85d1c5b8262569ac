"""The bench's gate (bench/gate.py): a row more than 1.5× worse than in the
committed results is a regression, judged by what cancels the machine's
noise (the peer, the floor), never by a noisy absolute time."""

from __future__ import annotations

from bench.gate import Result, compare, dump, load

CLOSE = "3 closeDiff answered with the proposal's text, 10 MB"
MAIN = "3 main-thread time per 10 MB openDiff"
RSS = "6 RSS kept after the 10 reviews closed"
RATE = "7 chat: session/update handled per second"
UPDATES = "9 action: answer-view updates a second"
DEBOUNCE = "2 selection → ide/contextUpdate at the client (50 ms debounce)"


def before() -> list[Result]:
    return [
        Result(CLOSE, "ms", "≤ 0.6× peer", ours=40.0, peer=120.0, floor=10.0),
        Result(MAIN, "ms", "≤ 50 ms", ours=12.0, floor=10.0),
        Result(RSS, "MiB", "≤ 20 MiB", ours=4.0, floor=10.0),
        Result(RATE, "/s", "≥ 1.0× peer", ours=80_000.0, peer=60_000.0, floor=10.0),
        Result(UPDATES, "/s", "≤ 30/s", ours=20.0, floor=10.0),
        Result(DEBOUNCE, "ms", "≤ 52 ms", ours=52.0, floor=10.0, basis="raw"),
    ]


def keys(previous: list[Result], current: list[Result]) -> list[str]:
    return [regression.key for regression in compare(previous, current)]


def test_the_same_results_on_a_machine_twice_as_slow_are_no_regression() -> None:
    slower = [Result(r.key, r.unit, r.goal, r.ours * (0.5 if r.unit == "/s" else 2), r.peer and r.peer * (0.5 if r.unit == "/s" else 2),
                     (r.floor or 0) * 2, r.basis) for r in before() if r.key not in (RSS, UPDATES, DEBOUNCE)]
    assert keys(before(), slower) == []


def test_a_row_worse_against_its_peer_or_floor_is_a_regression() -> None:
    injected = [
        Result(CLOSE, "ms", "≤ 0.6× peer", ours=80.0, peer=110.0, floor=10.0),  # 0.33× → 0.73× the peer
        Result(MAIN, "ms", "≤ 50 ms", ours=20.0, floor=10.0),  # 1.2 → 2.0 floors: 1.67×
    ]
    regressions = compare(before(), injected)
    assert [r.key for r in regressions] == [CLOSE, MAIN]
    assert regressions[0].basis == "the peer" and round(regressions[0].factor, 2) == 2.18
    assert regressions[1].basis == "the floor" and round(regressions[1].factor, 2) == 1.67


def test_at_most_one_and_a_half_times_worse_is_within_the_noise() -> None:
    assert keys(before(), [Result(MAIN, "ms", "≤ 50 ms", ours=17.9, floor=10.0)]) == []
    assert keys(before(), [Result(MAIN, "ms", "≤ 50 ms", ours=18.1, floor=10.0)]) == [MAIN]


def test_memory_and_timer_waits_are_compared_as_measured_whatever_the_floor() -> None:
    injected = [
        Result(RSS, "MiB", "≤ 20 MiB", ours=6.5, floor=3.0),  # 1.6×: the machine's speed does not explain memory
        Result(DEBOUNCE, "ms", "≤ 52 ms", ours=80.0, floor=20.0, basis="raw"),  # a timer's wait: not the machine's speed
    ]
    assert keys(before(), injected) == [RSS, DEBOUNCE]


def test_the_goal_says_which_way_is_worse() -> None:
    fewer_handled = Result(RATE, "/s", "≥ 1.0× peer", ours=40_000.0, peer=60_000.0, floor=10.0)
    more_updates = Result(UPDATES, "/s", "≤ 30/s", ours=31.0, floor=10.0)
    assert keys(before(), [fewer_handled, more_updates]) == [RATE, UPDATES]
    more_handled = Result(RATE, "/s", "≥ 1.0× peer", ours=200_000.0, peer=60_000.0, floor=10.0)
    fewer_updates = Result(UPDATES, "/s", "≤ 30/s", ours=5.0, floor=10.0)
    assert keys(before(), [more_handled, fewer_updates]) == []


def test_new_rows_zeros_and_a_changed_basis_are_not_compared() -> None:
    new_row = Result("3 closeDiff right after openDiff", "ms", "≤ 0.6× peer", ours=500.0, peer=1.0)
    zero = Result(MAIN, "ms", "≤ 50 ms", ours=0.0, floor=10.0)
    peer_gone = Result(CLOSE, "ms", "≤ 0.6× peer", ours=4000.0, floor=10.0)  # the peer did not run
    assert keys(before(), [new_row, zero, peer_gone]) == []


def test_results_survive_the_committed_file() -> None:
    assert load(dump(before(), {"date": "today"})) == before()
