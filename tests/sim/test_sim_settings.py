"""Settings objects, load_settings merging, on_change callbacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package


def test_get_set_erase_and_on_change(sim_host: SimulatedHost) -> None:
    s = sim_host.window.settings()
    calls: list[str] = []
    s.add_on_change("a", lambda: calls.append("a"))
    s.add_on_change("b", lambda: calls.append("b"))
    s.set("x", [1, 2])
    assert s.get("x") == [1, 2] and s["x"] == [1, 2] and s.has("x") and "x" in s
    s.get("x").append(3)  # values are copies
    assert s.get("x") == [1, 2]
    assert calls == ["a", "b"]
    s.set("x", [1, 2])  # no change, no callback
    assert calls == ["a", "b"]
    s.clear_on_change("a")
    s.erase("x")
    assert calls == ["a", "b", "b"]
    assert s.get("x") is None and s.get("x", 5) == 5
    with pytest.raises(KeyError):
        s["x"]
    s.update({"p": 1}, q=2)
    assert s.to_dict() == {"p": 1, "q": 2}
    assert s.setdefault("p", 9) == 1 and s.setdefault("r", 3) == 3
    with pytest.raises(ValueError):
        s.set("bad", object())


def test_load_settings_merges_package_and_user(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(
        packages_dir,
        "Pkg",
        {
            "Pkg.sublime-settings": """
                // defaults, with comments and trailing commas as Sublime allows
                {
                    "a": 1, /* block */
                    "b": {"nested": true,},
                    "url": "http://example.com//not-a-comment",
                }
            """,
        },
    )
    (packages_dir / "User" / "Pkg.sublime-settings").write_text('{"a": 2, // mine\n}')
    sublime = sim_host.sublime
    s = sublime.load_settings("Pkg.sublime-settings")
    assert s.get("a") == 2 and s.get("b") == {"nested": True}
    assert s.get("url") == "http://example.com//not-a-comment"
    assert sublime.load_settings("Pkg.sublime-settings").settings_id == s.settings_id
    s.set("c", "new")
    sublime.save_settings("Pkg.sublime-settings")
    saved = json.loads((packages_dir / "User" / "Pkg.sublime-settings").read_text())
    assert saved == {"a": 2, "c": "new"}  # only the user layer is written
    s.erase("a")
    assert s.get("a") == 1  # the package default shows through


def test_user_file_edit_fires_on_change(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Pkg", {"Pkg.sublime-settings": '{"level": "info"}'})
    s = sim_host.sublime.load_settings("Pkg.sublime-settings")
    threads: list[str] = []
    s.add_on_change("t", lambda: threads.append(s.get("level")))
    sim_host.user.edit_settings_file("Pkg.sublime-settings", {"level": "debug"})
    assert threads == ["debug"]
    sim_host.user.edit_settings_file("Pkg.sublime-settings", "{}")
    assert threads == ["debug", "info"]


def test_view_settings_inherit_preferences(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    view = sim_host.window.new_file()
    prefs = sublime.load_settings("Preferences.sublime-settings")
    assert view.settings().get("tab_size") == 4
    calls: list[int] = []
    view.settings().add_on_change("t", lambda: calls.append(1))
    prefs.set("tab_size", 2)
    assert view.settings().get("tab_size") == 2 and calls == [1]
    view.settings().set("tab_size", 8)
    prefs.set("tab_size", 3)  # shadowed by the view's own value: no change
    assert view.settings().get("tab_size") == 8 and calls == [1, 1]
    assert view.settings().get("syntax") == "Packages/Text/Plain text.tmLanguage"


def test_decode_and_expand_helpers(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    assert sublime.decode_value('[1, 2, // c\n]') == [1, 2]
    with pytest.raises(ValueError):
        sublime.decode_value("{nope")
    assert json.loads(sublime.encode_value({"a": [1]})) == {"a": [1]}
    variables = {"name": "Foo", "file": "/x/y.py"}
    assert sublime.expand_variables("Hi ${name} $name ${missing:dflt} \\$name", variables) == "Hi Foo Foo dflt $name"
    assert sublime.expand_variables({"k": ["${file}"]}, variables) == {"k": ["/x/y.py"]}
    assert sublime.score_selector("source.python meta.string", "source.python") > 0
    assert sublime.score_selector("source.python", "text, source") > 0
    assert sublime.score_selector("source.python", "source - source.python") == 0
    assert sublime.score_selector("source.python", "text.plain") == 0
