"""What a save does to the buffer before it is written: Default's two on-save
settings (`trim_trailing_white_space_on_save` with `trim_only_modified_white_space`,
`ensure_newline_at_eof_on_save`), then every package's `on_pre_save` in load
order; what they leave is what lands on disk, and the view is clean after."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package


def preferences(host: SimulatedHost, **values: Any) -> None:
    host.user.edit_settings_file("Preferences.sublime-settings", values)


def opened(host: SimulatedHost, path: Path, text: str) -> Any:
    path.write_text(text)
    return host.user.open_file(path)


def text_of(host: SimulatedHost, view: Any) -> str:
    return host.run_on_main(lambda: view.substr(host.sublime.Region(0, view.size())))


def saved(host: SimulatedHost, view: Any, path: Path) -> str:
    """Saved as the user saves; the view is clean and holds what is on disk."""
    host.user.save(view)
    host.wait_idle()
    assert not view.is_dirty() and text_of(host, view) == path.read_text()
    return path.read_text()


def test_by_default_a_save_writes_the_buffer_as_it_is(sim_host: SimulatedHost, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    view = opened(sim_host, path, "one  \n")
    sim_host.user.set_selection(view, [6])
    sim_host.user.type(view, "two\t ")
    assert saved(sim_host, view, path) == "one  \ntwo\t "


def test_ensure_newline_at_eof_ends_a_buffer_that_is_not_empty(sim_host: SimulatedHost, tmp_path: Path) -> None:
    preferences(sim_host, ensure_newline_at_eof_on_save=True)
    path = tmp_path / "a.txt"
    view = opened(sim_host, path, "")
    sim_host.user.type(view, "last line")
    assert saved(sim_host, view, path) == "last line\n"
    empty = opened(sim_host, tmp_path / "empty.txt", "")
    empty.set_scratch(False)
    sim_host.run_on_main(lambda: empty.run_command("save"))
    assert (tmp_path / "empty.txt").read_text() == ""


def test_trimming_by_default_touches_only_the_lines_changed_since_the_last_save(sim_host: SimulatedHost,
                                                                                  tmp_path: Path) -> None:
    preferences(sim_host, trim_trailing_white_space_on_save="all")
    path = tmp_path / "a.txt"
    view = opened(sim_host, path, "theirs  \nmine\n")
    sim_host.user.set_selection(view, [13])  # the end of "mine"
    sim_host.user.type(view, " \t")
    sim_host.user.set_selection(view, [0])
    assert saved(sim_host, view, path) == "theirs  \nmine\n"
    preferences(sim_host, trim_trailing_white_space_on_save="all", trim_only_modified_white_space=False)
    sim_host.user.type(view, "x")
    assert saved(sim_host, view, path) == "xtheirs\nmine\n"


def test_a_buffer_never_saved_has_every_line_trimmed(sim_host: SimulatedHost, tmp_path: Path) -> None:
    preferences(sim_host, trim_trailing_white_space_on_save=True)  # the older form of "all"
    view = sim_host.user.new_file()
    sim_host.user.type(view, "a \nb\t\n")
    path = tmp_path / "new.txt"
    sim_host.user.save(view, path)
    assert path.read_text() == "a\nb\n" and text_of(sim_host, view) == "a\nb\n"


def test_not_on_caret_keeps_the_white_space_a_caret_stands_in_or_after(sim_host: SimulatedHost,
                                                                        tmp_path: Path) -> None:
    preferences(sim_host, trim_trailing_white_space_on_save="not_on_caret", trim_only_modified_white_space=False)
    path = tmp_path / "a.txt"
    view = opened(sim_host, path, "one  \ntwo  \nthree  \n")
    sim_host.user.set_selection(view, [5, 7 + 3])  # after "one  " and inside "two  "; none in "three  "
    assert saved(sim_host, view, path) == "one  \ntwo  \nthree\n"
    sim_host.user.set_selection(view, [3])  # at the start of "one"'s white space: erasing it moves no caret
    preferences(sim_host, trim_trailing_white_space_on_save="not_on_caret", trim_only_modified_white_space=False)
    assert saved(sim_host, view, path) == "one\ntwo\nthree\n"


@pytest.mark.parametrize("value", [False, "none", "sometimes"])
def test_other_values_trim_nothing(sim_host: SimulatedHost, tmp_path: Path, value: Any) -> None:
    preferences(sim_host, trim_trailing_white_space_on_save=value, trim_only_modified_white_space=False)
    view = sim_host.user.new_file()
    sim_host.user.type(view, "a \n")
    sim_host.user.save(view, tmp_path / "a.txt")
    assert (tmp_path / "a.txt").read_text() == "a \n"


def test_a_view_setting_overrides_the_preferences(sim_host: SimulatedHost, tmp_path: Path) -> None:
    preferences(sim_host, ensure_newline_at_eof_on_save=True)
    path = tmp_path / "a.txt"
    view = opened(sim_host, path, "")
    sim_host.run_on_main(lambda: view.settings().set("ensure_newline_at_eof_on_save", False))
    sim_host.user.type(view, "x")
    assert saved(sim_host, view, path) == "x"


def test_defaults_own_commands(sim_host: SimulatedHost, tmp_path: Path) -> None:
    view = opened(sim_host, tmp_path / "a.txt", "a \nb\t")
    sim_host.run_on_main(lambda: view.run_command("trim_trailing_white_space"))
    sim_host.run_on_main(lambda: view.run_command("ensure_newline_at_eof"))
    assert text_of(sim_host, view) == "a\nb\n" and view.is_dirty()


FORMATTERS = {
    "Alpha": '''
        import sublime_plugin

        SEEN = []


        class AlphaUpperCommand(sublime_plugin.TextCommand):
            def run(self, edit):
                import sublime
                whole = sublime.Region(0, self.view.size())
                self.view.replace(edit, whole, self.view.substr(whole).upper())


        class AlphaOnSave(sublime_plugin.EventListener):
            def on_pre_save(self, view):
                import sublime
                SEEN.append(("alpha", view.substr(sublime.Region(0, view.size()))))
                view.run_command("alpha_upper")
    ''',
    "Beta": '''
        import sublime_plugin

        SEEN = []


        class BetaStampCommand(sublime_plugin.TextCommand):
            def run(self, edit):
                self.view.insert(edit, self.view.size(), "# formatted\\n")


        class BetaOnSave(sublime_plugin.ViewEventListener):
            def on_pre_save(self):
                import sublime
                SEEN.append(("beta", self.view.substr(sublime.Region(0, self.view.size()))))
                self.view.run_command("beta_stamp")
    ''',
}


def test_every_packages_on_pre_save_rewrites_the_buffer_in_load_order_after_defaults(
        sim_host: SimulatedHost, packages_dir: Path, tmp_path: Path) -> None:
    for name, source in FORMATTERS.items():
        write_package(packages_dir, name, {f"{name.lower()}.py": source})
        sim_host.load_package(name)
    preferences(sim_host, trim_trailing_white_space_on_save="all", ensure_newline_at_eof_on_save=True)
    path = tmp_path / "a.txt"
    view = opened(sim_host, path, "")
    sim_host.user.type(view, "x = 1  ")
    assert saved(sim_host, view, path) == "X = 1\n# formatted\n"
    alpha, beta = sys.modules["Alpha.alpha"].SEEN, sys.modules["Beta.beta"].SEEN
    assert alpha == [("alpha", "x = 1\n")]  # Default's settings ran first
    assert beta == [("beta", "X = 1\n")]  # then the packages, in load order
    sim_host.assert_no_errors()
