"""The simulator shows a quick panel's details as Sublime does, as minihtml:
an unescaped `<` swallows what follows up to `>`, and an `<a href>` is a link."""

from __future__ import annotations

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._minihtml import render


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
