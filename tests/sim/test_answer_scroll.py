"""The answer view (quick actions) in the simulated editor with the BUILT
package and the scripted CLI: it follows the streamed answer while its end
is on screen, and stays where the user scrolled up to read, as the chat's
transcript does (one shared rule, editor.end_visible)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sim.test_actions import WAIT, ActionRig
from tests.support.editor import open_editor


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ActionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ActionRig(editor, tmp_path)


def test_the_answer_view_stays_where_the_user_scrolled_while_it_streams(rig: ActionRig) -> None:
    first = "".join(f"first line {n}\n" for n in range(120))
    rest = "".join(f"later line {n}\n" for n in range(120))
    rig.load([{"text": first}, {"stall": 1.0}, {"text": rest, "chunks": 20, "delay": 0.01}])
    rig.open_area()
    rig.run("explain")
    view = rig.host.wait_for(lambda: next((v for v in rig.host.window.views()
                                           if v.settings().get("qwen_actions.answer") and "first line 119" in v.substr(
                                               rig.host.sublime.Region(0, v.size()))), None), timeout=WAIT)
    rig.host.wait_idle()
    assert view.visible_region().contains(view.size())  # it followed the answer
    rig.host.user.scroll_wheel(view, -60)  # the user reads further up
    top = view.visible_region().begin()
    assert not view.visible_region().contains(view.size())
    assert rig.finished() == ["answered"]
    rig.host.wait_idle()
    assert "later line 119" in rig.answer()
    assert view.visible_region().begin() == top  # every flush left the viewport where the wheel put it
