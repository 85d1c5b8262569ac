"""The simulator keeps a package's vendored libraries from one test's host
for the next (tests/sublime_sim/_vendor_cache.py): what each host observes
of its imports must stay as if it had imported them itself."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

NAME = "Vended"


def vended_package(tmp_path: Path) -> tuple[Path, Path]:
    """A package whose plugin imports a vendored library that uses another;
    a third is imported only when asked. Every execution of a library module
    is written to the log."""
    log = tmp_path / "executed.txt"
    note = f"open({str(log)!r}, 'a').write(__name__ + '\\n')\n"
    source = write_package(tmp_path / "source", NAME, {
        "_vendor/__init__.py": "",
        "_vendor/base/__init__.py": note + "from . import parts\nclass Marker:\n    pass\n",
        "_vendor/base/parts.py": note + "VALUE = 1\n",
        "_vendor/uses_base/__init__.py": note + "from ..base import Marker\nMADE = Marker()\n",
        "_vendor/gated/__init__.py": note,
        "main.py": "from ._vendor import uses_base\n",
    })
    return source, log


def executed(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def host_with(source: Path, tmp_path: Path, name: str, copy: bool = False) -> SimulatedHost:
    packages = tmp_path / name / "Packages"
    (packages / "User").mkdir(parents=True)
    host = SimulatedHost(packages)
    host.install_package(source, copy=copy)
    host.load_package(NAME)
    return host


def test_the_next_host_gets_the_libraries_its_package_imports_and_only_those(tmp_path: Path) -> None:
    source, log = vended_package(tmp_path)
    first = host_with(source, tmp_path, "first")
    try:
        importlib.import_module(f"{NAME}._vendor.gated")
        assert len(executed(log)) == 4
    finally:
        first.close()
    second = host_with(source, tmp_path, "second")
    try:
        assert len(executed(log)) == 4  # handed over, not run again
        uses_base = sys.modules[f"{NAME}._vendor.uses_base"]
        assert isinstance(uses_base.MADE, sys.modules[f"{NAME}._vendor.base"].Marker)  # one copy of each
        assert sys.modules[f"{NAME}._vendor.base.parts"].VALUE == 1
        assert f"{NAME}._vendor.gated" not in sys.modules  # not imported by this host yet
        assert uses_base.__file__.startswith(str(second.packages_dir))  # its folder, not the closed host's
        assert sys.modules[f"{NAME}._vendor.base"].__path__ == [str(second.packages_dir / NAME / "_vendor" / "base")]
        importlib.import_module(f"{NAME}._vendor.gated")
        assert len(executed(log)) == 4
        second.restart_package(NAME)  # within a host a library is imported anew
        assert executed(log)[4:] == [f"{NAME}._vendor.uses_base", f"{NAME}._vendor.base", f"{NAME}._vendor.base.parts"]
        assert sys.modules[f"{NAME}._vendor.uses_base"] is not uses_base
    finally:
        second.close()


def test_a_copied_package_imports_its_own_libraries(tmp_path: Path) -> None:
    source, log = vended_package(tmp_path)
    host_with(source, tmp_path, "first").close()
    copied = host_with(source, tmp_path, "copied", copy=True)
    try:
        assert executed(log).count(f"{NAME}._vendor.uses_base") == 2
    finally:
        copied.close()
