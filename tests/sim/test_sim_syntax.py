"""Syntaxes that packages ship: views get them by resource path, as in Sublime."""

from __future__ import annotations

import pytest

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
version: 2
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


CHILD = """%YAML 1.2
---
name: Chat Log
scope: text.html.markdown.chat-log
extends: Packages/Markdown/Markdown.sublime-syntax
{version}
contexts:
  {context}:
    - meta_prepend: true
    - match: ^(##) (Me)$\\n?
      scope: markup.heading.chat-log
      captures:
        2: entity.name.me
"""


def _chat_log(sim_host: SimulatedHost, version: str = "version: 2", context: str = "markdown") -> object:
    write_package(sim_host.packages_dir, "Tiny", {"ChatLog.sublime-syntax": CHILD.format(version=version, context=context),
                                                  "ChatLog.sublime-settings": '{"result_file_regex": "^x"}'})
    return sim_host.run_on_main(lambda: sim_host.window.new_file(syntax="Packages/Tiny/ChatLog.sublime-syntax"))


def test_markdown_headings_and_paragraphs_have_markdowns_scopes(sim_host: SimulatedHost) -> None:
    view = sim_host.run_on_main(lambda: sim_host.window.new_file(syntax="Packages/Markdown/Markdown.sublime-syntax"))
    sim_host.user.type(view, "Intro\n\n## Title\n")
    assert view.scope_name(0) == "text.html.markdown meta.paragraph.markdown "
    assert view.scope_name(7) == "text.html.markdown markup.heading.2.markdown punctuation.definition.heading.begin.markdown "
    assert view.scope_name(10) == "text.html.markdown markup.heading.2.markdown entity.name.section.markdown "


def test_a_child_of_another_version_is_refused_as_sublime_refuses_it(sim_host: SimulatedHost) -> None:
    view = _chat_log(sim_host, version="")
    assert view.syntax().name == "Plain Text"  # type: ignore[attr-defined]
    assert view.settings().get("result_file_regex") is None
    assert any("syntax inheritance does not allow for mixed versions" in d.message for d in sim_host.app.dialogs)


def test_rules_prepended_to_markdown_scope_the_childs_headings_and_its_settings_apply(sim_host: SimulatedHost) -> None:
    view = _chat_log(sim_host)
    sim_host.user.type(view, "Intro\n\n## Me\n\n## Other\n")
    assert view.scope_name(10).split() == ["text.html.markdown.chat-log", "markup.heading.chat-log", "entity.name.me"]
    assert "markup.heading.2.markdown" in view.scope_name(sim_host.app.buffer_text(view.id()).index("Other"))
    assert view.settings().get("result_file_regex") == "^x"
    assert not sim_host.app.dialogs


def test_rules_prepended_to_main_only_apply_at_the_start_of_the_file(sim_host: SimulatedHost) -> None:
    view = _chat_log(sim_host, context="main")
    sim_host.user.type(view, "## Me\n\n## Me\n")
    assert "entity.name.me" in view.scope_name(3)
    assert "entity.name.me" not in view.scope_name(10) and "markup.heading.2.markdown" in view.scope_name(10)


LOOPING = """%YAML 1.2
---
name: Looping
scope: source.looping
version: 2
contexts:
  main:
    - match: (?=a)
      push: inner
  inner:
    - match: (?=a)
      pop: true
    - match: b
      scope: keyword.b
"""


def test_zero_width_matches_that_go_round_in_a_circle_move_on_one_character() -> None:
    """A lookahead that pushes a context whose lookahead pops it again would
    match forever at one place; Sublime moves on instead, and scoping the
    text costs a step or two per character, not a hundred thousand."""
    from tests.sublime_sim import _syntax_engine

    lexer = _syntax_engine.Lexer(_syntax_engine.load("Packages/Loop/Looping.sublime-syntax", lambda path: LOOPING))
    tokens = lexer.tokens("xxab\n")
    assert len(tokens) <= 2 * len("xxab\n")
    assert [(begin, end) for begin, end, _ in tokens][:2] == [(0, 2), (2, 3)]
    assert lexer.scope_at("xxab\n", 1) == "source.looping "


@pytest.mark.parametrize(("path", "scope"), [("Packages/Markdown/Markdown.sublime-syntax", "text.html.markdown"),
                                             ("Packages/HTML/HTML.sublime-syntax", "text.html.basic"),
                                             ("Packages/JSON/JSON.sublime-syntax", "source.json")])
def test_the_syntaxes_sublime_ships_for_exports_are_known(sim_host: SimulatedHost, path: str, scope: str) -> None:
    view = sim_host.run_on_main(sim_host.window.new_file)
    view.assign_syntax(path)
    assert view.syntax().path == path and view.syntax().scope == scope
    assert sim_host.sublime.score_selector(view.scope_name(0), scope) > 0
