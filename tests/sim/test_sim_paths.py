"""The simulator's path modes: how Sublime on Linux, macOS and Windows
matches an open file and finds it on disk (tests/sublime_sim/_paths.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost


@pytest.fixture(params=["linux", "osx", "windows"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimulatedHost]:
    packages = tmp_path / "Packages"
    packages.mkdir()
    sim = SimulatedHost(packages, platform=request.param)
    try:
        yield sim
    finally:
        sim.close()


def text(host: SimulatedHost, view: object) -> str:
    return str(view.substr(host.sublime.Region(0, view.size())))  # type: ignore[attr-defined]


def test_another_case_is_the_same_open_file_where_the_file_system_ignores_case(host: SimulatedHost, tmp_path: Path) -> None:
    folder = tmp_path / "Proj"
    folder.mkdir()
    (folder / "Main.py").write_text("print(1)\n")
    view = host.user.open_file(folder / "Main.py")
    other_spelling = tmp_path / "proj" / "MAIN.py"

    found = host.window.find_open_file(str(other_spelling))
    if host.app.platform == "linux":
        assert found is None
    else:
        assert found == view
        assert host.user.open_file(other_spelling) == view  # focuses it, no second tab
        assert host.window.views() == [view]


def test_a_file_opened_with_another_case_loads_what_the_disk_holds(host: SimulatedHost, tmp_path: Path) -> None:
    (tmp_path / "Proj").mkdir()
    (tmp_path / "Proj" / "Main.py").write_text("print(1)\n")
    view = host.user.open_file(tmp_path / "proj" / "main.PY")
    assert view.file_name() == str(tmp_path / "proj" / "main.PY")  # kept as it was opened
    if host.app.platform == "linux":
        assert text(host, view) == ""  # another file, not there yet
        return
    assert text(host, view) == "print(1)\n"
    host.user.type(view, "# edited\n")
    host.user.save(view)
    assert (tmp_path / "Proj" / "Main.py").read_text() == "# edited\nprint(1)\n"
    assert sorted(p.name for p in (tmp_path / "Proj").iterdir()) == ["Main.py"]


def test_a_symlinked_spelling_is_another_tab_on_every_platform(host: SimulatedHost, tmp_path: Path) -> None:
    # macOS's /var → /private/var, a symlinked project: Sublime does not resolve them.
    real = tmp_path / "private" / "var" / "proj"
    real.mkdir(parents=True)
    (tmp_path / "var").symlink_to(tmp_path / "private" / "var")
    (real / "a.txt").write_text("a\n")
    view = host.user.open_file(real / "a.txt")
    linked = tmp_path / "var" / "proj" / "a.txt"
    assert host.window.find_open_file(str(linked)) is None
    other = host.user.open_file(linked)
    assert other != view and other.file_name() == str(linked)
    assert text(host, other) == "a\n"
