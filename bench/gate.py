"""The bench's gate: every row of a run against the committed results.

A row is compared by what cancels the machine's noise: with a peer, our p50
over the peer's (both measured in the same run, interleaved); a time without
a peer, over the floor (a fixed piece of Python work timed in the same run,
before and after the row's part); memory and counts as they are, the machine's
speed does not change them. A row more than `LIMIT` times worse than in the
committed `bench/results.json` is a regression: `make bench` lists it in a
REGRESSIONS block (on screen and in RESULTS.md) and exits non-zero, so that a
new miss is fixed or explained when the results are committed, never carried.

A row flagged once is not trusted yet: the run measures its part again by
itself, `RECHECKS` times, and the row stays flagged only if the median of
those re-runs is still more than `LIMIT` times worse (`recheck`). A figure
that is the difference of two readings (the package's run less the same
command run by hand, RSS after less RSS before) is compared from its `noise`
floor up: below it the difference is the readings' noise, not the package.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

LIMIT = 1.5
RECHECKS = 3
TIME_UNITS = {"µs", "ms", "s"}
RESULTS_JSON = "bench/results.json"  # beside RESULTS.md, from the repository's root


@dataclass(frozen=True)
class Result:
    """One row of a run, as the gate keeps it."""

    key: str  # the row's number and metric
    unit: str
    goal: str
    ours: float  # p50
    peer: float | None = None  # p50
    floor: float | None = None  # ms of the floor's work in the row's part
    basis: str = ""  # "raw": compared as measured (a timer's wait, not work); "": chosen by the unit
    noise: float | None = None  # in `unit`: a difference of two readings below this is their noise

    def score(self) -> tuple[float, str] | None:
        """The figure compared across runs and what it is relative to; None if none can be."""
        ours, peer = self.ours, self.peer
        if self.noise is not None:
            ours, peer = max(ours, self.noise), None if peer is None else max(peer, self.noise)
        if peer:
            return ours / peer, "the peer"
        if self.unit in TIME_UNITS and self.basis != "raw":
            return (ours / self.floor, "the floor") if self.floor else None
        return ours, "as measured"

    @property
    def higher_is_better(self) -> bool:
        return self.goal.startswith("≥")


@dataclass(frozen=True)
class Regression:
    key: str
    basis: str
    before: float
    now: float
    factor: float  # how many times worse

    def __str__(self) -> str:
        return f"{self.key}: {self.before:.3g} → {self.now:.3g} relative to {self.basis} ({self.factor:.2f}× worse)"


def compare(previous: list[Result], current: list[Result], limit: float = LIMIT) -> list[Regression]:
    """The rows of `current` more than `limit` times worse than in `previous`.
    A row new in this run, or whose basis changed, has nothing to be compared with;
    a zero (below the clock's resolution) has no ratio."""
    before = {result.key: result for result in previous}
    regressions = []
    for result in current:
        old = before.get(result.key)
        factor = None if old is None else factor_worse(old, result)
        if old is not None and factor is not None and factor > limit:
            then, now = old.score(), result.score()
            assert then is not None and now is not None  # factor_worse compared them
            regressions.append(Regression(result.key, now[1], then[0], now[0], factor))
    return regressions


@dataclass(frozen=True)
class Recheck:
    """A flagged row's re-runs, each its part measured again by itself."""

    flagged: Regression
    factors: list[float]  # how many times worse each re-run was than the committed figure
    median: Result | None  # the re-run whose factor is the median (None: no re-run gave the row)

    @property
    def factor(self) -> float | None:
        return statistics.median(self.factors) if self.factors else None

    @property
    def confirmed(self) -> bool:
        """Still a regression: the re-runs' median is worse than the limit too (or nothing re-ran it)."""
        return self.factor is None or self.factor > LIMIT

    def __str__(self) -> str:
        runs = ", ".join(f"{factor:.2f}×" for factor in self.factors) or "none"
        verdict = "still worse: a regression" if self.confirmed else "not worse on its own: not flagged"
        return f"{self.flagged.key}: {self.flagged.factor:.2f}× in the run; re-run alone: {runs} → {verdict}"


def factor_worse(before: Result, now: Result) -> float | None:
    """How many times worse `now` is than `before`; None when they cannot be
    compared. A noise floor is the row's, so both sides are held to it (a
    baseline written before the row had one has none of its own)."""
    noise = max((floor for floor in (before.noise, now.noise) if floor is not None), default=None)
    then, current = replace(before, noise=noise).score(), replace(now, noise=noise).score()
    if then is None or current is None or then[1] != current[1] or then[0] <= 0 or current[0] <= 0:
        return None
    return then[0] / current[0] if now.higher_is_better else current[0] / then[0]


def recheck(previous: list[Result], flagged: list[Regression], reruns: dict[str, list[Result]]) -> list[Recheck]:
    """Each flagged row judged again on `reruns` (its results from its part run
    alone, by key): the median of their factors decides."""
    before = {result.key: result for result in previous}
    checks = []
    for regression in flagged:
        measured = [(factor, result) for result in reruns.get(regression.key, [])
                    if (factor := factor_worse(before[regression.key], result)) is not None]
        measured.sort(key=lambda pair: pair[0])
        median = measured[(len(measured) - 1) // 2][1] if measured else None
        checks.append(Recheck(regression, [factor for factor, _ in measured], median))
    return checks


def floor_ms(repeats: int = 15) -> float:
    """ms of a fixed piece of Python work (JSON and strings, as a server's): the
    fastest of `repeats`, this machine's speed at the moment. The fastest, not
    the median: under another process's load the median of a wall-clock floor
    grew 2-3x while the rows timed in CPU did not, and every such row looked
    better than it was (the baseline of one loaded run flagged 15 rows of the
    next quiet one)."""
    data = {"items": [{"name": f"item {i}", "value": i * 1.5, "tags": ["a", "b", "ü"]} for i in range(2000)]}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(5):
            text = json.dumps(data)
            json.loads(text)
            text.replace("item", "row").split(",")
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def dump(results: list[Result], header: dict[str, str]) -> str:
    return json.dumps({**header, "rows": [asdict(result) for result in results]}, ensure_ascii=False, indent=1) + "\n"


def load(text: str) -> list[Result]:
    return [Result(**row) for row in json.loads(text)["rows"]]


def committed(root: Path) -> tuple[str, list[Result]] | None:
    """(commit, results) of the results file in the repository's HEAD; None before the first."""
    run = subprocess.run(["git", "show", f"HEAD:{RESULTS_JSON}"], cwd=root, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        return None
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                            check=False).stdout.strip()
    return commit, load(run.stdout)


def report(checks: list[Recheck], against: str | None, compared: int) -> str:
    if against is None:
        return f"Gate: no committed {RESULTS_JSON} to compare with; this run's results are the first.\n"
    lines = []
    if checks:
        lines.append(f"Gate re-runs: {len(checks)} rows were more than {LIMIT}× worse in the run; each part run "
                     f"again alone {RECHECKS} times (the median decides):")
        lines += [*(f"- {check}" for check in checks), ""]
    regressions = [check.flagged for check in checks if check.confirmed]
    if not regressions:
        lines.append(f"Gate: no row more than {LIMIT}× worse than the committed results ({against}; {compared} rows).")
    else:
        lines.append(f"REGRESSIONS: {len(regressions)} rows more than {LIMIT}× worse than the committed results "
                     f"({against}), in the run and in the median of their re-runs:")
        lines += [f"- {regression}" for regression in regressions]
    return "\n".join(lines) + "\n"
