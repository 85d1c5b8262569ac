"""Syntaxes that packages ship: views get them by resource path, as in Sublime."""

from __future__ import annotations

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

SYNTAX = """%YAML 1.2
---
# a comment
name: Chat Log
scope: text.html.markdown.chat-log
hidden: true
file_extensions: [chatlog, 'clog']
extends: Packages/Markdown/Markdown.sublime-syntax
contexts:
  main:
    - match: x
      scope: keyword
"""


def test_a_package_syntax_is_found_by_its_resource_path(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "Tiny", {"syntax/ChatLog.sublime-syntax": SYNTAX})
    path = "Packages/Tiny/syntax/ChatLog.sublime-syntax"
    window = sim_host.window
    view = sim_host.run_on_main(lambda: window.new_file(syntax=path))
    syntax = view.syntax()
    assert syntax is not None
    assert (syntax.path, syntax.name, syntax.scope, syntax.hidden) == (path, "Chat Log", "text.html.markdown.chat-log", True)
    assert view.settings().get("syntax") == path
    assert sim_host.sublime.score_selector(view.scope_name(0), "text.html.markdown") > 0
    other = sim_host.run_on_main(window.new_file)
    other.assign_syntax(path)
    assert other.syntax() == syntax
    assert sim_host.sublime.syntax_from_path(path) == syntax
    assert sim_host.sublime.syntax_from_path("Packages/Tiny/syntax/Missing.sublime-syntax") is None


def test_a_missing_or_headerless_syntax_leaves_the_view_as_it_was(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "Tiny", {"Broken.sublime-syntax": "%YAML 1.2\n---\nname: No Scope\n"})
    window = sim_host.window
    view = sim_host.run_on_main(window.new_file)
    before = view.syntax()
    view.assign_syntax("Packages/Tiny/Missing.sublime-syntax")
    view.assign_syntax("Packages/Tiny/Broken.sublime-syntax")
    assert view.syntax() == before
