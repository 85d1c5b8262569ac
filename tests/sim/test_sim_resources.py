"""``find_resources`` answers from an index of the package folders that is
walked again only when a folder changed, and never misses a file written
just before the lookup, whatever the clock's resolution."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._resources import ResourceIndex


def settled(root: Path) -> None:
    """Every folder under `root` (itself included) last changed a minute ago."""
    old = time.time() - 60
    for folder in [root, *(path for path in root.rglob("*") if path.is_dir())]:
        os.utime(folder, (old, old))


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the package folders were walked."""
    count = [0]
    walked = ResourceIndex._walked

    def counted(self: ResourceIndex) -> object:
        count[0] += 1
        return walked(self)

    monkeypatch.setattr(ResourceIndex, "_walked", counted)
    return count


def test_a_settled_index_is_not_walked_again_and_sees_each_change(
    sim_host: SimulatedHost, packages_dir: Path, walks: list[int]
) -> None:
    find = sim_host.sublime.find_resources
    (packages_dir / "Pkg" / "deep").mkdir(parents=True)
    (packages_dir / "Pkg" / "deep" / "One.sublime-settings").write_text("{}")
    settled(packages_dir)
    assert find("*.sublime-settings") == ["Packages/Pkg/deep/One.sublime-settings"]
    assert find("*.sublime-settings") == ["Packages/Pkg/deep/One.sublime-settings"]
    assert find("One.*") == ["Packages/Pkg/deep/One.sublime-settings"]
    assert walks == [1]

    (packages_dir / "Pkg" / "deep" / "Two.sublime-settings").write_text("{}")
    assert find("*.sublime-settings") == ["Packages/Pkg/deep/One.sublime-settings", "Packages/Pkg/deep/Two.sublime-settings"]
    (packages_dir / "Pkg" / "deep" / "One.sublime-settings").unlink()
    (packages_dir / "Another").mkdir()
    (packages_dir / "Another" / "Three.sublime-settings").write_text("{}")
    assert find("*.sublime-settings") == ["Packages/Another/Three.sublime-settings", "Packages/Pkg/deep/Two.sublime-settings"]


def test_a_file_written_in_the_same_clock_tick_as_the_last_walk_is_found(
    sim_host: SimulatedHost, packages_dir: Path, walks: list[int]
) -> None:
    folder = packages_dir / "Pkg"
    folder.mkdir()
    (folder / "One.sublime-keymap").write_text("[]")
    tick = folder.stat().st_mtime_ns
    assert sim_host.sublime.find_resources("*.sublime-keymap") == ["Packages/Pkg/One.sublime-keymap"]
    (folder / "Two.sublime-keymap").write_text("[]")
    os.utime(folder, ns=(tick, tick))  # a coarse clock: the folder's time did not move
    assert sim_host.sublime.find_resources("*.sublime-keymap") == [
        "Packages/Pkg/One.sublime-keymap", "Packages/Pkg/Two.sublime-keymap"]
    assert walks == [2]
