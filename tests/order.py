"""The tests' order, so that a test whose result depends on what ran before
it fails the day it appears: `--order=shuffle` (a new seed each run, printed
in the header), `--order=shuffle:SEED` (that run again) or `--order=reverse`.
The default keeps pytest's own order.

Under pytest-xdist every worker must collect the tests in one order: the
controller picks the seed and hands it to each worker in its `workerinput`.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

SEED_KEY = "test_order_seed"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--order", default="file", metavar="file|reverse|shuffle[:SEED]",
                     help="run the tests in file order (default), reversed, or shuffled by SEED (a new one if none)")


def _parse(value: str) -> tuple[str, int | None]:
    kind, _, seed = value.partition(":")
    if kind not in ("file", "reverse", "shuffle") or (seed and (kind != "shuffle" or not seed.isdigit())):
        raise pytest.UsageError(f"--order takes file, reverse, shuffle or shuffle:SEED (a whole number), not {value!r}")
    return kind, int(seed) if seed else None


def _seed(config: pytest.Config) -> int | None:
    kind, seed = _parse(config.getoption("order"))
    if kind != "shuffle":
        return None
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None and SEED_KEY in workerinput:
        return int(workerinput[SEED_KEY])
    if seed is None:
        seed = config.stash.setdefault(_SEED, random.SystemRandom().randrange(10**6))
    return seed


_SEED = pytest.StashKey[int]()


def pytest_report_header(config: pytest.Config) -> str | None:
    kind, _ = _parse(config.getoption("order"))
    seed = _seed(config)
    if seed is not None:
        return f"test order: shuffled with seed {seed} (again: --order=shuffle:{seed})"
    return f"test order: {kind}" if kind != "file" else None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: every worker shuffles with its seed."""
    seed = _seed(node.config)
    if seed is not None:
        node.workerinput[SEED_KEY] = seed


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kind, _ = _parse(config.getoption("order"))
    if kind == "reverse":
        items.reverse()
    elif kind == "shuffle":
        random.Random(_seed(config)).shuffle(items)
