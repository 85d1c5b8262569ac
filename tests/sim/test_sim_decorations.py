"""Phantoms, annotations, popups, status: recorded and clickable."""

from __future__ import annotations

from tests.sublime_sim import SimulatedHost


def test_phantom_link_click_calls_on_navigate(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    view = sim_host.window.new_file()
    view.run_command("append", {"characters": "line one\nline two\n"})
    clicked: list[tuple[str, str]] = []
    ps = sublime.PhantomSet(view, "review")
    ps.update([
        sublime.Phantom(sublime.Region(0), '<a href="accept">Accept</a> <a href="reject&amp;x">Reject</a>',
                        sublime.LAYOUT_BLOCK, lambda href: clicked.append(("p1", href))),
        sublime.Phantom(sublime.Region(9), '<a href="other">Other</a>', sublime.LAYOUT_BELOW),
    ])
    phantoms = sim_host.view_state(view).phantoms
    assert len(phantoms) == 2 and {p.key for p in phantoms.values()} == {"review"}
    sim_host.user.click_phantom(view, "accept")
    sim_host.user.click_phantom(view, "reject&x", key="review")
    assert clicked == [("p1", "accept"), ("p1", "reject&x")]
    first_id = ps.phantoms[0].id
    # Updating with an equal phantom keeps it; a removed one is erased.
    ps.update([sublime.Phantom(sublime.Region(0), ps.phantoms[0].content, sublime.LAYOUT_BLOCK, ps.phantoms[0].on_navigate)])
    assert list(sim_host.view_state(view).phantoms) == [first_id]
    # A phantom moves with text inserted before it; one at the very place of
    # an insertion stays before the text (test_sim_regions.py).
    view.sel().clear()
    view.sel().add(0)
    view.run_command("insert", {"characters": ">>"})
    assert view.query_phantom(first_id) == [sublime.Region(0)]
    view.erase_phantoms("review")
    assert sim_host.view_state(view).phantoms == {}
    sim_host.assert_no_errors()


def test_annotations_and_regions(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    view = sim_host.window.new_file()
    view.run_command("append", {"characters": "abc def"})
    hrefs: list[str] = []
    view.add_regions("lint", [sublime.Region(4, 7)], "region.redish", "dot", sublime.DRAW_NO_FILL | sublime.HIDDEN,
                     annotations=['<a href="fix">Fix</a>'], on_navigate=hrefs.append)
    record = sim_host.view_state(view).regions["lint"]
    assert record.scope == "region.redish" and record.flags == sublime.DRAW_NO_FILL | sublime.HIDDEN
    assert view.get_regions("lint") == [sublime.Region(4, 7)]
    sim_host.user.click_annotation(view, "fix")
    assert hrefs == ["fix"]
    view.erase_regions("lint")
    assert view.get_regions("lint") == []


def test_popup_status_and_reference_document(sim_host: SimulatedHost) -> None:
    view = sim_host.window.new_file()
    events: list[str] = []
    view.show_popup('<a href="go">Go</a>', on_navigate=events.append, on_hide=lambda: events.append("hidden"))
    assert view.is_popup_visible()
    sim_host.user.click_popup(view, "go")
    view.hide_popup()
    assert events == ["go", "hidden"] and not view.is_popup_visible()
    view.set_status("a", "A")
    view.set_status("b", "")
    assert view.get_status("a") == "A" and view.get_status("b") == ""
    view.erase_status("a")
    assert view.get_status("a") == ""
    view.set_reference_document("original")
    assert sim_host.view_state(view).buffer.reference_document == "original"
    view.reset_reference_document()
    assert sim_host.view_state(view).buffer.reference_document is None
    view.show_at_center(0)
    assert sim_host.view_state(view).shown == [("show_at_center", (0, 0))]


def test_block_and_below_phantoms_are_drawn_under_the_line_of_their_region(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    view = sim_host.user.new_file()
    sim_host.user.type(view, "one\ntwo\nthree\n")
    view.add_phantom("b", sublime.Region(0), "block", sublime.LAYOUT_BLOCK)
    view.add_phantom("w", sublime.Region(5), "below", sublime.LAYOUT_BELOW)
    view.add_phantom("i", sublime.Region(9), "inline", sublime.LAYOUT_INLINE)
    assert sim_host.drawn_phantoms(view) == [(0, "below", "block"), (1, "below", "below"), (2, "inline", "inline")]
