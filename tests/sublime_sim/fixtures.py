"""pytest fixtures and helpers for tests running on the simulated host.

Import them from a ``conftest.py``::

    from tests.sublime_sim.fixtures import packages_dir, sim_host  # noqa: F401
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .host import SimulatedHost

# A plugin recording every event it receives with the thread it ran on.
# After ``write_package(..., "Probe", {"probe.py": PROBE_SOURCE})`` and
# ``host.load_package("Probe")``, read ``sys.modules["Probe.probe"].EVENTS``:
# a list of ``(event_name, view_or_window_id, thread_name)``.
PROBE_SOURCE = '''
import threading

import sublime
import sublime_plugin

EVENTS = []
VIEW_EVENTS = (
    "on_new", "on_new_async", "on_load", "on_load_async", "on_activated", "on_activated_async",
    "on_deactivated", "on_deactivated_async", "on_modified", "on_modified_async",
    "on_selection_modified", "on_selection_modified_async", "on_pre_save", "on_pre_save_async",
    "on_post_save", "on_post_save_async", "on_pre_close", "on_close", "on_revert",
    "on_pre_move", "on_post_move", "on_post_move_async",
)
WINDOW_EVENTS = (
    "on_new_window", "on_new_window_async", "on_pre_close_window",
    "on_load_project", "on_load_project_async", "on_pre_close_project",
)


def _record(name):
    def handler(self, target, *args):
        EVENTS.append((name, target.id(), threading.current_thread().name))
    return handler


class EventProbe(sublime_plugin.EventListener):
    def on_exit(self):
        EVENTS.append(("on_exit", 0, threading.current_thread().name))


for _name in VIEW_EVENTS + WINDOW_EVENTS:
    setattr(EventProbe, _name, _record(_name))


def names(view_id=None):
    return [e[0] for e in EVENTS if view_id is None or e[1] == view_id]
'''


def write_package(packages_dir: Path, name: str, files: dict[str, str]) -> Path:
    """Write an unpacked package (``.no-sublime-package`` included); sources are dedented."""
    root = packages_dir / name
    root.mkdir(parents=True, exist_ok=True)
    (root / ".no-sublime-package").write_text("")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture
def packages_dir(tmp_path: Path) -> Path:
    path = tmp_path / "Packages"
    (path / "User").mkdir(parents=True)
    return path


@pytest.fixture
def sim_host(packages_dir: Path) -> Iterator[SimulatedHost]:
    host = SimulatedHost(packages_dir)
    try:
        yield host
    finally:
        host.close()
