"""Windows: layout, groups, focus, panels, dialogs, projects."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import PROBE_SOURCE, write_package

TWO_COLUMNS = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}
THREE_COLUMNS = {"cols": [0.0, 0.33, 0.66, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1], [2, 0, 3, 1]]}
SINGLE = {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]}


def test_layout_changes_move_views_to_the_last_group(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    a = window.new_file()
    window.set_layout(THREE_COLUMNS)
    assert window.num_groups() == 3 and window.layout() == THREE_COLUMNS
    window.focus_group(1)
    b = window.new_file()
    window.run_command("focus_group", {"group": 2})
    c = window.new_file()
    assert [window.get_view_index(v) for v in (a, b, c)] == [(0, 0), (1, 0), (2, 0)]
    assert window.active_group() == 2 and window.active_view() == c
    window.run_command("set_layout", TWO_COLUMNS)
    assert window.num_groups() == 2
    assert window.views_in_group(1) == [b, c] and window.views_in_group(0) == [a]
    assert window.active_group() == 1 and window.active_view_in_group(1) in (b, c)
    window.set_layout(SINGLE)
    assert window.views_in_group(0) == [a, b, c] and window.views() == [a, b, c]
    window.set_view_index(c, 0, 0)
    assert window.views() == [c, a, b] and window.get_view_index(c) == (0, 0)
    assert [s.view() for s in window.sheets()] == [c, a, b]
    assert window.get_view_index(window.create_output_panel("p")) == (-1, -1)


def test_group_counts_tell_views_from_other_sheets(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    window.new_file()
    window.new_html_sheet("notes", "<p>hi</p>", group=0)
    window.focus_group(1)
    window.new_file()
    window.focus_group(0)
    window.new_file()
    assert [window.num_views_in_group(g) for g in (0, 1)] == [2, 1]
    assert [window.num_sheets_in_group(g) for g in (0, 1)] == [3, 1]
    assert window.num_views_in_group(5) == 0


def test_move_to_group_and_focus_follow(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    view = window.new_file()
    window.run_command("move_to_group", {"group": 1})
    assert window.get_view_index(view) == (1, 0) and window.active_group() == 1
    other = sublime.run_command("new_window") or sublime.active_window()
    assert other != window and sublime.active_window() == other
    assert other.active_view() is None and window.active_view() == view
    sim_host.user.focus(view)
    assert sublime.active_window() == window


def test_activation_and_window_events(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Probe", {"probe.py": PROBE_SOURCE})
    sim_host.load_package("Probe")
    probe = sys.modules["Probe.probe"]
    a = sim_host.user.new_file()
    b = sim_host.user.new_file()
    sim_host.wait_idle()
    probe.EVENTS.clear()
    sim_host.user.focus(a)
    sim_host.wait_idle()
    sync = [(n, v) for n, v, _ in probe.EVENTS if not n.endswith("_async")]
    assert sync == [("on_deactivated", b.id()), ("on_activated", a.id())]
    probe.EVENTS.clear()
    window = sim_host.user.new_window()
    sim_host.user.close_window(window)
    sim_host.wait_idle()
    assert [n for n in probe.names(window.id()) if not n.endswith("_async")] == ["on_new_window", "on_pre_close_window"]
    assert "on_new_window_async" in probe.names(window.id())
    assert not window.is_valid()


def test_output_panels(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    panel = window.create_output_panel("results")
    assert panel.element() == "output:output" and panel.sheet() is None and panel.window() == window
    assert window.create_output_panel("results") == panel
    assert window.find_output_panel("results") == panel and window.find_output_panel("nope") is None
    assert "output.results" in window.panels()
    window.create_output_panel("hidden", unlisted=True)
    assert "output.hidden" not in window.panels()
    assert window.active_panel() is None
    window.run_command("show_panel", {"panel": "output.results"})
    assert window.active_panel() == "output.results"
    window.run_command("show_panel", {"panel": "output.results", "toggle": True})
    assert window.active_panel() is None
    window.run_command("show_panel", {"panel": "output.results"})
    window.run_command("hide_panel", {"panel": "output.other"})
    assert window.active_panel() == "output.results"
    window.destroy_output_panel("results")
    assert window.active_panel() is None and not panel.is_valid()
    assert window.views() == []


def test_a_shown_output_panel_takes_focus_and_gets_activation_events(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Probe", {"probe.py": PROBE_SOURCE})
    sim_host.load_package("Probe")
    probe = sys.modules["Probe.probe"]
    window = sim_host.window
    tab = sim_host.user.new_file()
    panel = window.create_output_panel("term")
    window.focus_view(panel)  # hidden: focus stays in the tab
    sim_host.wait_idle()
    probe.EVENTS.clear()
    window.run_command("show_panel", {"panel": "output.term"})
    window.focus_view(panel)
    sim_host.wait_idle()
    assert [(n, v) for n, v, _ in probe.EVENTS if not n.endswith("_async")] == [
        ("on_deactivated", tab.id()), ("on_activated", panel.id())
    ]
    assert window.active_view() == tab  # the editing area's view is still the active one

    probe.EVENTS.clear()
    other = window.new_file()  # a new tab takes focus from the panel
    sim_host.wait_idle()
    sync = [(n, v) for n, v, _ in probe.EVENTS if n in ("on_activated", "on_deactivated")]
    assert sync == [("on_deactivated", panel.id()), ("on_activated", other.id())]

    window.focus_view(panel)
    window.set_view_index(other, 0, 0)  # moving a tab leaves focus in the panel
    sim_host.wait_idle()
    probe.EVENTS.clear()
    window.run_command("hide_panel", {"panel": "output.term"})
    sim_host.wait_idle()
    assert [(n, v) for n, v, _ in probe.EVENTS if not n.endswith("_async")] == [
        ("on_deactivated", panel.id()), ("on_activated", other.id())
    ]


def test_the_input_panel_widget_takes_focus_and_gives_it_back(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Probe", {"probe.py": PROBE_SOURCE})
    sim_host.load_package("Probe")
    probe = sys.modules["Probe.probe"]
    window = sim_host.window
    tab = sim_host.user.new_file()
    sim_host.wait_idle()
    probe.EVENTS.clear()
    widget = sim_host.run_on_main(lambda: window.show_input_panel("Name:", "", None, None, None))
    sim_host.wait_idle()
    assert widget.element() == "input:input" and widget.settings().get("is_widget")
    assert [(n, v) for n, v, _ in probe.EVENTS if not n.endswith("_async")] == [
        ("on_deactivated", tab.id()), ("on_activated", widget.id())
    ]
    probe.EVENTS.clear()
    sim_host.user.submit_input_panel("done")
    sim_host.wait_idle()
    assert [(n, v) for n, v, _ in probe.EVENTS if n in ("on_activated", "on_deactivated")] == [
        ("on_deactivated", widget.id()), ("on_activated", tab.id())
    ]


def test_quick_and_input_panels(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    window = sim_host.window
    picked: list[object] = []
    window.show_quick_panel(["alpha", ["beta", "detail"], sublime.QuickPanelItem("gamma")], picked.append)
    assert sim_host.quick_panels[-1].items[0] == "alpha"
    window.show_quick_panel(["x"], picked.append)  # refused while the first is open (test_sim_quick_panels.py)
    sim_host.wait_idle()
    assert picked == [] and len(sim_host.quick_panels) == 1
    sim_host.user.cancel_quick_panel()
    window.show_quick_panel(["x"], picked.append)
    sim_host.user.choose_quick_panel("x")
    assert picked == [-1, 0]
    sim_host.answers.quick_panel = lambda items: len(items) - 1
    window.show_quick_panel(["a", "b"], lambda i, event: picked.append((i, event)), sublime.WANT_EVENT)
    sim_host.wait_idle()
    assert picked[-1] == (1, {"modifier_keys": {}})

    done: list[str] = []
    changes: list[str] = []
    view = window.show_input_panel("Name:", "init", done.append, changes.append, lambda: done.append("<cancel>"))
    assert view.element() == "input:input" and view.substr(sublime.Region(0, view.size())) == "init"
    assert window.active_panel() == "input"
    sim_host.user.submit_input_panel("typed")
    assert done == ["typed"] and changes == ["typed"] and window.active_panel() is None
    window.show_input_panel("Again:", "", done.append, None, lambda: done.append("<cancel>"))
    sim_host.user.cancel_input_panel()
    assert done == ["typed", "<cancel>"]


@pytest.mark.parametrize(("platform", "primary"), [("linux", "ctrl"), ("windows", "ctrl"), ("osx", "super")])
def test_modifier_keys_held_with_enter_reach_only_a_panel_that_wants_the_event(
        tmp_path: Path, platform: str, primary: str) -> None:
    packages = tmp_path / "Packages"
    packages.mkdir()
    host = SimulatedHost(packages, platform=platform)
    try:
        window, picked = host.window, []
        window.show_quick_panel(["a", "b"], lambda i, event: picked.append((i, event)), host.sublime.WANT_EVENT)
        host.user.choose_quick_panel(1, modifiers=("primary",))  # Ctrl+Enter (Cmd+Enter on macOS)
        assert picked == [(1, {"modifier_keys": {"primary": True, primary: True}})]
        window.show_quick_panel(["a"], lambda i, event: picked.append((i, event)), host.sublime.WANT_EVENT)
        host.user.choose_quick_panel(0, modifiers=(primary, "shift"))  # the platform's primary key is "primary" too
        assert picked[-1] == (0, {"modifier_keys": {"primary": True, primary: True, "shift": True}})
        window.show_quick_panel(["a"], picked.append)  # no WANT_EVENT: the index alone, the keys are lost
        host.user.choose_quick_panel(0, modifiers=("primary",))
        assert picked[-1] == 0
        window.show_quick_panel(["a"], picked.append)
        with pytest.raises(ValueError, match="not a modifier key"):
            host.user.choose_quick_panel(0, modifiers=("cmd",))  # Sublime says "super"
    finally:
        host.close()


def test_dialogs_are_recorded_and_answered(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    sublime.error_message("bad")
    sublime.message_dialog("fyi")
    assert sublime.ok_cancel_dialog("sure?") is True
    sim_host.answers.push("ok_cancel", False)
    assert sublime.ok_cancel_dialog("really?", "Go") is False
    assert sublime.yes_no_cancel_dialog("save?") == sublime.DIALOG_CANCEL
    sim_host.answers.yes_no_cancel = sublime.DIALOG_YES
    assert sublime.yes_no_cancel_dialog("save?") == sublime.DIALOG_YES
    got: list[object] = []
    sim_host.answers.folder_paths = "/tmp"
    sublime.select_folder_dialog(got.append)
    sim_host.wait_idle()
    assert got == ["/tmp"]
    assert [(d.kind, d.message, d.answer) for d in sim_host.dialogs][:4] == [
        ("error", "bad", None), ("message", "fyi", None), ("ok_cancel", "sure?", True), ("ok_cancel", "really?", False)]
    sublime.status_message("hello")
    sim_host.window.status_message("window hello")
    assert sim_host.status_messages == ["hello", "window hello"]


def test_folders_and_project_data(sim_host: SimulatedHost, tmp_path: Path) -> None:
    window = sim_host.window
    assert window.folders() == [] and window.project_data() is None
    sim_host.user.add_folder(tmp_path / "one")
    sim_host.user.add_folder(tmp_path / "two")
    assert window.folders() == [str(tmp_path / "one"), str(tmp_path / "two")]
    sim_host.user.remove_folder(tmp_path / "one")
    assert window.folders() == [str(tmp_path / "two")]
    window.set_project_data({"folders": [{"path": str(tmp_path)}], "settings": {"x": 1}})
    assert window.folders() == [str(tmp_path)] and window.project_data()["settings"] == {"x": 1}
    project = tmp_path / "p.sublime-project"
    project.write_text('{"folders": [{"path": "src"},], // relative to the project\n}')
    sim_host.user.open_project(project)
    assert window.project_file_name() == str(project) and window.folders() == [str(tmp_path / "src")]
    variables = window.extract_variables()
    assert variables["folder"] == str(tmp_path / "src") and variables["project_base_name"] == "p"


def test_edit_settings_opens_base_and_user(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Pkg", {"Pkg.sublime-settings": '{"a": 1}'})
    sim_host.window.run_command("edit_settings", {"base_file": "${packages}/Pkg/Pkg.sublime-settings", "default": "{\n\t$0\n}\n"})
    window = sim_host.sublime.active_window()
    assert window != sim_host.windows()[0] and window.num_groups() == 2
    base, user = window.views_in_group(0)[0], window.views_in_group(1)[0]
    sim_host.wait_for(lambda: not base.is_loading())
    assert base.is_read_only() and base.file_name() == str(packages_dir / "Pkg" / "Pkg.sublime-settings")
    assert user.file_name() == str(packages_dir / "User" / "Pkg.sublime-settings")
    assert window.active_view() == user and user.settings().get("edit_settings_view") == "user"


def test_a_layout_sublime_cannot_draw_is_refused(sim_host: SimulatedHost) -> None:
    import pytest

    window = sim_host.window
    for bad in ({"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 2, 1]]},  # past the separators
                {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 1, 1]]},  # empty
                {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 2, 1], [1, 0, 2, 1]]},  # overlapping
                {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": []}):
        with pytest.raises(ValueError):
            window.set_layout(bad)
    assert window.layout() == SINGLE and window.num_groups() == 1


def test_visible_views_are_each_groups_selected_tab_and_the_shown_output_panel(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    a = window.new_file()
    b = window.new_file()
    window.set_layout(TWO_COLUMNS)
    window.focus_group(1)
    c = window.new_file()
    assert sim_host.visible_views(window) == [b, c]  # a is a tab behind b
    panel = window.create_output_panel("out")
    assert sim_host.visible_views(window) == [b, c]  # created, not shown
    window.run_command("show_panel", {"panel": "output.out"})
    assert sim_host.visible_views(window) == [b, c, panel]
    assert window.active_view() == c  # showing an output panel leaves the focus where it was
    window.focus_view(a)
    window.run_command("hide_panel")
    assert sim_host.visible_views(window) == [a, c]


def test_switching_to_another_application_and_back(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Probe", {"probe.py": PROBE_SOURCE})
    sim_host.load_package("Probe")
    probe = sys.modules["Probe.probe"]
    a = sim_host.user.new_file()
    b = sim_host.user.new_file()
    sim_host.wait_idle()
    probe.EVENTS.clear()
    sim_host.user.leave_app()
    sim_host.user.leave_app()  # already away: nothing more
    sim_host.wait_idle()
    sync = [(n, v) for n, v, _ in probe.EVENTS if n in ("on_activated", "on_deactivated")]
    assert sync == [("on_deactivated", b.id())]
    assert sim_host.sublime.active_window() == sim_host.window and sim_host.window.active_view() == b
    probe.EVENTS.clear()
    sim_host.user.return_to_app()
    sim_host.wait_idle()
    assert [(n, v) for n, v, _ in probe.EVENTS if n in ("on_activated", "on_deactivated")] == [("on_activated", b.id())]
    sim_host.user.leave_app()
    probe.EVENTS.clear()
    sim_host.user.focus(a)  # clicking a tab brings Sublime back
    sim_host.wait_idle()
    sync = [(n, v) for n, v, _ in probe.EVENTS if n in ("on_activated", "on_deactivated")]
    assert sync == [("on_activated", b.id()), ("on_deactivated", b.id()), ("on_activated", a.id())]


def test_dialogs_take_sublimes_signatures_and_give_its_answers(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    # ok_cancel_dialog(msg, ok_title="", title=""): True only for OK.
    sim_host.answers.push("ok_cancel", False)  # Cancel, or the dialog closed
    assert sublime.ok_cancel_dialog("Rewind?", "Rewind", "Qwen Code") is False
    assert sim_host.dialogs[-1].details == {"ok_title": "Rewind", "title": "Qwen Code"}
    # yes_no_cancel_dialog(msg, yes_title="", no_title="", title=""): a DialogResult.
    sim_host.answers.push("yes_no_cancel", sublime.DialogResult.NO)
    answer = sublime.yes_no_cancel_dialog("Restore?", "Restore", "Keep", "Qwen Code")
    assert answer == sublime.DialogResult.NO and isinstance(answer, sublime.DialogResult)
    assert sim_host.dialogs[-1].details == {"yes_title": "Restore", "no_title": "Keep", "title": "Qwen Code"}
    assert sublime.yes_no_cancel_dialog("Again?", title="T") == sublime.DialogResult.CANCEL  # the default: nothing lost
    try:
        sublime.ok_cancel_dialog("m", "ok", "title", "one too many")  # type: ignore[call-arg]
    except TypeError:
        pass
    else:
        raise AssertionError("ok_cancel_dialog takes three arguments, as Sublime's")


def test_a_projects_settings_apply_to_every_view_of_its_window(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    code = window.new_file()
    window.set_project_data({"folders": [], "settings": {"tab_size": 7, "qwen_chat.view": "composer"}})
    assert code.settings().get("tab_size") == 7 and code.settings().get("qwen_chat.view") == "composer"
    later = window.open_file(__file__)
    assert later.settings().get("qwen_chat.view") == "composer"  # a file opened since, too
    code.settings().set("tab_size", 2)  # the view's own setting wins
    assert code.settings().get("tab_size") == 2 and later.settings().get("tab_size") == 7
    other = sim_host.user.new_window()
    assert other.new_file().settings().get("qwen_chat.view") is None  # another window: not its project
    window.set_project_data({"folders": []})
    assert later.settings().get("qwen_chat.view") is None
