"""The release asset (`make release`) installed the way Package Control installs
it into a simulated Sublime Text with a fresh HOME, and the in-Sublime suite
(tests/sublime, in UnitTesting's form) run there through the simulator's
`unittesting` facade: the smoke run (server and lock file, a review round
trip, the chat, a quick action), key bindings, the chat's scopes and the
review banner. CI runs the same suite inside real Sublime Text."""

from __future__ import annotations

import json
import subprocess
import sys
import unittest
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost, unittesting
from tests.support.editor import BUILT_PACKAGE, PACKAGE, ROOT, isolate_home, require_built
from tests.support.package_control import (
    NotInstallable,
    install_asset,
    missing_libraries,
    required_libraries,
)

sys.path.insert(0, str(ROOT / "tools"))
import sublime_test_package

SUITE_TIMEOUT = 120.0  # a hang guard for the whole suite
SUITE_TESTS = 9


@pytest.fixture
def asset(tmp_path: Path) -> Path:
    require_built()
    path = tmp_path / f"{PACKAGE}.sublime-package"
    subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), str(BUILT_PACKAGE), str(path)],
                   check=True, capture_output=True)
    return path


def declared_libraries() -> list[str]:
    declared = json.loads((BUILT_PACKAGE / "dependencies.json").read_text())
    return list(declared["*"][">=4205"])


def test_package_control_unpacks_the_asset_with_its_libraries(asset: Path, tmp_path: Path) -> None:
    installed = install_asset(asset, tmp_path / "Packages", PACKAGE)
    assert installed == tmp_path / "Packages" / PACKAGE
    assert (installed / ".no-sublime-package").is_file() and (installed / "boot.py").is_file()
    assert (installed / ".python-version").read_text().strip() == "3.14"
    assert not list(installed.rglob("__pycache__"))
    for platform in ("linux", "osx", "windows"):
        assert required_libraries(installed, platform, "x64", 4205) == declared_libraries()
    assert required_libraries(installed, "linux", "x64", 4204) == []
    assert missing_libraries(declared_libraries()) == []


def test_an_asset_without_the_marker_or_leaving_the_package_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.sublime-package"
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("boot.py", "")
    with pytest.raises(NotInstallable, match=r"no \.no-sublime-package"):
        install_asset(plain, tmp_path / "Packages", PACKAGE)
    escaping = tmp_path / "escaping.sublime-package"
    with zipfile.ZipFile(escaping, "w") as archive:
        archive.writestr(".no-sublime-package", "")
        archive.writestr("../evil.py", "")
    with pytest.raises(NotInstallable, match="outside the package"):
        install_asset(escaping, tmp_path / "Packages", PACKAGE)
    assert not (tmp_path / "evil.py").exists()


@pytest.fixture
def installed_host(asset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatedHost]:
    isolate_home(monkeypatch, tmp_path / "home")
    monkeypatch.setenv("QWEN_TEST_PYTHON", sys.executable)
    packages = tmp_path / "Packages"
    install_asset(asset, packages, PACKAGE)
    sublime_test_package.assemble(packages)
    monkeypatch.setitem(sys.modules, "unittesting", unittesting)
    monkeypatch.syspath_prepend(str(packages))
    host = SimulatedHost(packages)
    try:
        host.load_package(PACKAGE)
        host.wait_idle(timeout=30)
        yield host
    finally:
        host.close()
        for name in [m for m in sys.modules if m.split(".")[0] == sublime_test_package.TEST_PACKAGE]:
            del sys.modules[name]


def describe(problems: list[tuple[unittest.TestCase, str]]) -> str:
    return "\n".join(f"{test.id()}\n{trace}" for test, trace in problems)


def test_the_in_sublime_suite_passes_on_the_installed_release(installed_host: SimulatedHost) -> None:
    test_package = installed_host.packages_dir / sublime_test_package.TEST_PACKAGE
    settings = json.loads((test_package / "unittesting.json").read_text())
    suite = unittest.defaultTestLoader.discover(
        str(test_package / settings["tests_dir"]), settings["pattern"], top_level_dir=str(installed_host.packages_dir)
    )
    result = unittesting.run_suite(suite, settings["condition_timeout"]).wait(SUITE_TIMEOUT)
    assert result.failures == [] and result.errors == [], describe(result.failures + result.errors)
    assert result.unexpectedSuccesses == [], [t.id() for t in result.unexpectedSuccesses]
    assert result.skipped == []
    assert result.testsRun == SUITE_TESTS
    installed_host.assert_no_errors()
