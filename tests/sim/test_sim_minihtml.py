"""The simulator refuses minihtml CSS that Sublime would ignore: a property
outside the minihtml Reference's list (`opacity`, `transform`…) in a
phantom's or a popup's <style> or style="" fails the call."""

from __future__ import annotations

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._minihtml import unsupported_properties


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
