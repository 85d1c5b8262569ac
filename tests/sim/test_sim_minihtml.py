"""The simulator's minihtml as Sublime's: a quick panel's details are shown
as minihtml (an unescaped `<` swallows what follows up to `>`, an `<a href>`
is a link), and CSS that Sublime would ignore (`opacity`, `transform`…) in a
phantom's or a popup's <style> or style="" fails the call."""

from __future__ import annotations

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._minihtml import render, unsupported_properties


def test_tags_are_swallowed_entities_decoded_and_links_found() -> None:
    assert render("Vec<u8> and &lt;u8&gt; &amp; <b>bold</b>").text == "Vec and <u8> & bold"
    shown = render('see <a href="https://evil.example/">here</a><br>next  line<style>a {}</style>')
    assert shown.text == "see here\nnext line" and shown.links == ["https://evil.example/"]


def test_a_quick_panels_details_are_shown_as_minihtml(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    items = [sublime.QuickPanelItem("a", details="Vec<u8>"), sublime.QuickPanelItem("b", details=["x &lt;y&gt;", "<i>z</i>"]),
             sublime.QuickPanelItem("c")]
    sim_host.run_on_main(lambda: sim_host.window.show_quick_panel(items, lambda index: None))
    [panel] = [q for q in sim_host.quick_panels if not q.done]
    assert [panel.details_shown(i).text for i in range(3)] == ["Vec", "x <y>\nz", ""]


@pytest.mark.parametrize("content", [
    '<body><style>span.dim { color: var(--foreground); opacity: 0.6; }</style><span class="dim">x</span></body>',
    '<body><div style="transform: rotate(1deg)">x</div></body>',
])
def test_a_property_minihtml_ignores_fails_the_phantom_and_the_popup(sim_host: SimulatedHost, content: str) -> None:
    view = sim_host.window.new_file()
    sublime = sim_host.sublime
    with pytest.raises(ValueError, match="minihtml has no CSS property"):
        view.add_phantom("k", sublime.Region(0), content, sublime.PhantomLayout.BLOCK)
    with pytest.raises(ValueError, match="minihtml has no CSS property"):
        view.show_popup(content)


def test_the_documented_properties_and_variables_pass() -> None:
    content = ('<body id="x"><style>/* dimmed */ body { color: color(var(--foreground) alpha(0.6)); --mine: 1px; '
               'margin: 0; padding-left: 4px; border-bottom-width: 1px; font-weight: bold; }</style>'
               '<div style="background-color: red; white-space: pre-wrap">x</div></body>')
    assert unsupported_properties(content) == []
