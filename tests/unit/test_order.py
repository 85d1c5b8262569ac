"""The test-order option (tests/order.py) that `make test` shuffles with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = [f"test_{n:02d}" for n in range(20)]


def collected(tmp_path: Path, *args: str) -> tuple[list[str], str]:
    """The order the tests of a small suite run in, and pytest's header."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.order"]\n')
    (tmp_path / "test_many.py").write_text("".join(f"def {name}():\n    pass\n\n" for name in NAMES))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", *args, str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = [line.split("::")[1].split()[0] for line in done.stdout.splitlines() if "::test_" in line and "PASSED" in line]
    return ran, done.stdout


def test_reverse_runs_the_tests_last_to_first(tmp_path: Path) -> None:
    assert collected(tmp_path, "-p", "no:xdist", "--order=reverse")[0] == NAMES[::-1]


def test_a_seed_gives_one_order_again_and_another_seed_another(tmp_path: Path) -> None:
    first, header = collected(tmp_path, "-p", "no:xdist", "--order=shuffle:7")
    assert sorted(first) == NAMES and first != NAMES
    assert "shuffled with seed 7" in header
    assert collected(tmp_path, "-p", "no:xdist", "--order=shuffle:7")[0] == first
    assert collected(tmp_path, "-p", "no:xdist", "--order=shuffle:8")[0] != first


def test_every_xdist_worker_gets_the_controllers_seed(tmp_path: Path) -> None:
    """Workers that shuffled alike collect the same list; else xdist refuses the run."""
    ran, header = collected(tmp_path, "-n", "2", "--order=shuffle")
    assert sorted(ran) == NAMES and "shuffled with seed" in header


@pytest.mark.parametrize("value", ["random", "reverse:3", "shuffle:x"])
def test_a_bad_order_is_refused(tmp_path: Path, value: str) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.order"]\n')
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--order={value}", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode != 0 and "--order takes" in done.stdout + done.stderr
