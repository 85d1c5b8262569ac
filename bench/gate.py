"""The bench's gate: every row of a run against the committed results.

A row is compared by what cancels the machine's noise: with a peer, our p50
over the peer's (both measured in the same run, interleaved); a time without
a peer, over the floor (a fixed piece of Python work timed in the same run,
before and after the row's part); memory and counts as they are, the machine's
speed does not change them. A row more than `LIMIT` times worse than in the
committed `bench/results.json` is a regression: `make bench` lists it in a
REGRESSIONS block (on screen and in RESULTS.md) and exits non-zero, so that a
new miss is fixed or explained when the results are committed, never carried.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

LIMIT = 1.5
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

    def score(self) -> tuple[float, str] | None:
        """The figure compared across runs and what it is relative to; None if none can be."""
        if self.peer:
            return self.ours / self.peer, "the peer"
        if self.unit in TIME_UNITS and self.basis != "raw":
            return (self.ours / self.floor, "the floor") if self.floor else None
        return self.ours, "as measured"

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
        if old is None:
            continue
        then, now = old.score(), result.score()
        if then is None or now is None or then[1] != now[1] or then[0] <= 0 or now[0] <= 0:
            continue
        factor = then[0] / now[0] if result.higher_is_better else now[0] / then[0]
        if factor > limit:
            regressions.append(Regression(result.key, now[1], then[0], now[0], factor))
    return regressions


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


def report(regressions: list[Regression], against: str | None, compared: int) -> str:
    if against is None:
        return f"Gate: no committed {RESULTS_JSON} to compare with; this run's results are the first.\n"
    if not regressions:
        return f"Gate: no row more than {LIMIT}× worse than the committed results ({against}; {compared} rows).\n"
    lines = [f"REGRESSIONS: {len(regressions)} rows more than {LIMIT}× worse than the committed results ({against}):"]
    lines += [f"- {regression}" for regression in regressions]
    return "\n".join(lines) + "\n"
