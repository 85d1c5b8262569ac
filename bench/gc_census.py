"""What the cyclic garbage collector walks, and how long it stops the
process: a full collection visits every gc-tracked object, so its pause is
set by all of them, the package's and the simulator's alike.

- `GcPauses` records each collection's generation and wall time (through
  `gc.callbacks`), so a timed span can leave out the collections inside it;
- `census()` counts the tracked objects by owner: an object of a class of
  ours belongs to the module's top package (QwenCompanion, tests.sublime_sim,
  acp, pydantic, asyncio…), and plain containers (dict, list, tuple, set…)
  belong to the owner of the object that holds them, found by a walk from
  every owned object through plain containers only."""

from __future__ import annotations

import gc
import threading
import time
from collections import Counter
from typing import Any

PLAIN = (dict, list, tuple, set, frozenset)


class GcPauses:
    """Every collection while installed: (generation, CPU seconds, when it
    ended by perf_counter, the thread that ran it)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float, float, int]] = []
        self._started = 0.0

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        # CPU time of the collecting thread, as the updates are timed: a loaded
        # machine's descheduling is not the collector's
        cpu = time.thread_time()
        if phase == "start":
            self._started = cpu
        else:
            self.pauses.append((info["generation"], cpu - self._started, time.perf_counter(), threading.get_ident()))

    def within(self, start: float, end: float) -> float:
        """Seconds of collection this thread ran that ended inside [start, end]
        (perf_counter): another thread's stalls this one but not on its CPU clock."""
        me = threading.get_ident()
        return sum(seconds for _, seconds, ended, thread in self.pauses if start <= ended <= end and thread == me)

    def full(self) -> list[float]:
        """Milliseconds of each full (generation 2) collection."""
        return [seconds * 1000 for generation, seconds, _, _ in self.pauses if generation == 2]


UNOWNED = "unowned (module globals, functions, frames…)"
OWNERS = ("QwenCompanion", "tests.sublime_sim", "acp", "pydantic", "asyncio")


def owner_of(kind: type) -> str:
    module = kind.__dict__.get("__module__")
    if not isinstance(module, str):  # `type` itself: its __module__ is a descriptor
        return "builtins"
    for owner in OWNERS:
        if module == owner or module.startswith(owner + ".") or f".{owner}." in f".{module}.":
            return owner
    return module.split(".")[0] or "?"


def census() -> dict[str, dict[str, int]]:
    """Tracked objects by owner (the listed ones, the rest summed), then by
    type name, a plain container with the class of its holder (the 6 commonest).
    A container reached from two owners counts for the first walked."""
    objects = gc.get_objects()
    owners: dict[int, tuple[str, str]] = {}  # a plain container's id -> owner, class of its holder
    todo: list[tuple[Any, str, str]] = []
    for obj in objects:
        kind = type(obj)
        owner = owner_of(kind)
        if owner == "builtins":
            continue
        todo.append((obj, owner, kind.__name__))
    while todo:
        obj, owner, holder = todo.pop()
        for referent in gc.get_referents(obj):
            if type(referent) in PLAIN and gc.is_tracked(referent) and id(referent) not in owners:
                owners[id(referent)] = owner, holder
                todo.append((referent, owner, holder))
    by_owner: dict[str, Counter[str]] = {}
    for obj in objects:
        kind = type(obj)
        if kind in PLAIN:
            owner, holder = owners.get(id(obj), (UNOWNED, "?"))
            by_owner.setdefault(owner, Counter())[f"{kind.__name__} in {holder}"] += 1
        else:
            owner = owner_of(kind)
            by_owner.setdefault(UNOWNED if owner == "builtins" else owner, Counter())[kind.__name__] += 1
    del objects
    ranked = sorted(by_owner.items(), key=lambda item: -sum(item[1].values()))
    rest = sum(sum(kinds.values()) for owner, kinds in ranked if owner not in OWNERS and owner != UNOWNED)
    return {**{owner: {"total": sum(kinds.values()), **dict(kinds.most_common(6))}
               for owner, kinds in ranked if owner in OWNERS or owner == UNOWNED},
            "other modules (stdlib, typing, aiohttp…)": {"total": rest}}
