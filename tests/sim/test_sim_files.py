"""Opening, loading, saving and closing files, with the events Sublime fires."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import PROBE_SOURCE, write_package


@pytest.fixture
def probe(sim_host: SimulatedHost, packages_dir: Path) -> Any:
    write_package(packages_dir, "Probe", {"probe.py": PROBE_SOURCE})
    sim_host.load_package("Probe")
    module = sys.modules["Probe.probe"]
    module.EVENTS.clear()
    return module


def test_open_file_loads_asynchronously(sim_host: SimulatedHost, probe: Any, tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("print('hi')\n")
    window = sim_host.window

    def open_and_look() -> tuple[Any, bool, int]:
        view = window.open_file(str(path))
        return view, view.is_loading(), view.size()

    # Within the same main-thread task the file is not loaded yet.
    view, loading, size = sim_host.run_on_main(open_and_look)
    assert loading and size == 0 and view.file_name() == str(path)
    sim_host.wait_for(lambda: not view.is_loading())
    sim_host.wait_idle()
    assert view.substr(view.line(0)) == "print('hi')"
    assert view.syntax().name == "Python"
    events = [(n, t) for n, vid, t in probe.EVENTS if vid == view.id()]
    names = [n for n, _ in events]
    # Blocking events in order on the main thread; each async twin after it, on the worker.
    assert [n for n in names if not n.endswith("_async")] == ["on_activated", "on_load"]
    assert sorted(n for n in names if n.endswith("_async")) == ["on_activated_async", "on_load_async"]
    assert names.index("on_load") < names.index("on_load_async")
    assert {t for n, t in events if n.endswith("_async")} == {"sublime-worker"}
    assert {t for n, t in events if not n.endswith("_async")} == {"sublime-main"}
    # An already open file is focused, not opened again.
    other = sim_host.user.new_file()
    again = window.open_file(str(path))
    assert again == view and window.active_view() == view and len(window.views()) == 2
    assert other.is_valid()
    assert window.find_open_file(str(path)) == view
    assert window.file_history()[0] == str(path)


def test_encoded_position_and_transient(sim_host: SimulatedHost, tmp_path: Path) -> None:
    sublime = sim_host.sublime
    path = tmp_path / "b.txt"
    path.write_text("one\ntwo\nthree\n")
    view = sim_host.window.open_file(f"{path}:3:2", sublime.ENCODED_POSITION | sublime.TRANSIENT)
    sim_host.wait_for(lambda: not view.is_loading())
    assert view.rowcol(view.sel()[0].b) == (2, 1)
    assert sim_host.window.views() == [] and sim_host.window.views(include_transient=True) == [view]
    assert view.sheet().is_transient()
    sim_host.window.open_file(str(path))  # opening it for real promotes it
    assert sim_host.window.views() == [view]


def test_crlf_file_is_normalised_and_saved_back(sim_host: SimulatedHost, tmp_path: Path) -> None:
    path = tmp_path / "win.txt"
    path.write_bytes(b"alpha\r\nbeta\r\n")
    view = sim_host.user.open_file(path)
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "alpha\nbeta\n"
    assert view.line_endings() == "Windows" and view.encoding() == "UTF-8"
    sim_host.user.type(view, "gamma\n")
    assert view.is_dirty()
    sim_host.user.save(view)
    assert path.read_bytes() == b"gamma\r\nalpha\r\nbeta\r\n"
    assert not view.is_dirty()
    view.set_line_endings("Unix")
    view.run_command("save")
    assert path.read_bytes() == b"gamma\nalpha\nbeta\n"


def test_a_file_that_is_not_utf8_opens_in_the_fallback_encoding(sim_host: SimulatedHost, tmp_path: Path) -> None:
    # Sublime detects byte-order marks and UTF-8; anything else opens in
    # `fallback_encoding` ("Western (Windows 1252)" by default).
    region = sim_host.sublime.Region
    western = tmp_path / "western.txt"
    western.write_bytes("café €\n".encode("cp1252") + b"\x81\n")  # 0x81: undefined in Windows 1252
    view = sim_host.user.open_file(western)
    assert view.encoding() == "Western (Windows 1252)"
    assert view.substr(region(0, view.size())) == "café €\n\x81\n"

    sim_host.sublime.load_settings("Preferences.sublime-settings").set("fallback_encoding", "Cyrillic (Windows 1251)")
    cyrillic = tmp_path / "cyrillic.txt"
    cyrillic.write_bytes("привет\n".encode("cp1251"))
    view = sim_host.user.open_file(cyrillic)
    assert view.encoding() == "Cyrillic (Windows 1251)"
    assert view.substr(region(0, view.size())) == "привет\n"
    sim_host.user.type(view, "да ")
    sim_host.user.save(view)
    assert cyrillic.read_bytes() == "да привет\n".encode("cp1251")


def test_save_events_and_unnamed_view(sim_host: SimulatedHost, probe: Any, tmp_path: Path) -> None:
    view = sim_host.user.new_file()
    sim_host.user.type(view, "text")
    view.run_command("save")  # no file name: the save dialog is cancelled by default
    assert sim_host.dialogs[-1].kind == "save" and view.file_name() is None
    target = tmp_path / "out" / "new.md"
    sim_host.user.save(view, target)
    sim_host.wait_idle()
    assert target.read_text() == "text" and view.file_name() == str(target)
    names = probe.names(view.id())
    assert names.index("on_pre_save") < names.index("on_post_save")
    assert {"on_pre_save_async", "on_post_save_async"} <= set(names)
    assert view.syntax().name == "Markdown"


def test_close_order_and_dirty_prompt(sim_host: SimulatedHost, probe: Any) -> None:
    sublime = sim_host.sublime
    first = sim_host.user.new_file()
    second = sim_host.user.new_file()
    sim_host.user.type(second, "unsaved")
    sim_host.wait_idle()
    probe.EVENTS.clear()

    sim_host.answers.yes_no_cancel = sublime.DIALOG_CANCEL
    assert sim_host.user.close(second) is False
    assert second.is_valid() and sim_host.dialogs[-1].kind == "yes_no_cancel"
    assert "before closing" in sim_host.dialogs[-1].message
    assert probe.names() == []

    sim_host.answers.push("yes_no_cancel", sublime.DIALOG_NO)
    assert sim_host.user.close(second) is True
    sim_host.wait_idle()
    assert not second.is_valid()
    assert [n for n in probe.names() if not n.endswith("_async")] == ["on_pre_close", "on_deactivated", "on_close", "on_activated"]
    assert [e[1] for e in probe.EVENTS if e[0] == "on_activated"] == [first.id()]
    assert sim_host.window.active_view() == first
    # A scratch buffer is never dirty and closes without asking.
    first.set_scratch(True)
    sim_host.user.type(first, "x")
    dialogs = len(sim_host.dialogs)
    assert first.close() is True and len(sim_host.dialogs) == dialogs


def test_revert_and_read_only(sim_host: SimulatedHost, tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("disk")
    view = sim_host.user.open_file(path)
    sim_host.user.type(view, "edit ")
    view.run_command("revert")
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "disk" and not view.is_dirty()
    view.set_read_only(True)
    sim_host.user.type(view, "nope")
    view.run_command("append", {"characters": "!"})
    assert view.size() == 4
    view.run_command("append", {"characters": "!", "force": True})
    assert view.size() == 5
