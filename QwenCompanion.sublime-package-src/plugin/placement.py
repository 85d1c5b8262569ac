"""Where the package's views open, by one rule: the code the user works on
stays visible. Answers and reviews go beside the code (a group split off
the code's cell, given back when they close), the chat keeps its column,
and the code keeps the focus unless the user asked for what opens."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sublime
import sublime_plugin

from ..core.layout import merge_back, split_beside

# How each owner of views (the chat, the answers, the reviews) tells its own
# views from its records: wiring.py adds them, so this module imports none of
# those owners (they place their views through it).
package_view_recognisers: list[Callable[[sublime.View], bool]] = []


def is_package_view(view: sublime.View) -> bool:
    """A chat, answer or review tab of ours, from the package's own records
    (never from view settings, which a project sets on every view)."""
    return any(is_ours(view) for is_ours in package_view_recognisers)


def _is_package_group(window: sublime.Window, group: int) -> bool:
    views = window.views_in_group(group)
    return bool(views) and all(is_package_view(view) for view in views)


def code_group(window: sublime.Window, code: sublime.View | None = None) -> int:
    """The group of the code the user works on: `code`'s, else the active
    group, else the first group that is not the package's (the chat's column)."""
    if code is not None and code.is_valid() and not is_package_view(code):
        group, _ = window.get_view_index(code)
        if group >= 0:
            return group
    candidates = [window.active_group(), *range(window.num_groups())]
    return next((group for group in candidates if not _is_package_group(window, group)), 0)


def open_beside(window: sublime.Window, group: int) -> int:
    """Split a new group off `group`'s cell, on its right; its number."""
    layout = split_beside(window.layout(), group)
    window.set_layout(layout)
    return len(layout["cells"]) - 1


# view id -> the group made for that view: our record. A project's settings reach
# every view, so the view setting is only trusted on a scratch tab with no file
# (one an earlier load of the package made), never on the user's files.
_own_groups: dict[int, int] = {}
BESIDE_GROUP = "qwen_placement.own_group"


def _group_made_for(view: sublime.View) -> int | None:
    made = _own_groups.get(view.id())
    if made is None and view.is_scratch() and not view.file_name():  # left by an earlier load
        label = view.settings().get(BESIDE_GROUP)
        made = label if isinstance(label, int) and not isinstance(label, bool) else None
    return made


def new_view_beside(window: sublime.Window, code: sublime.View | None) -> sublime.View:
    """A new view in a group of its own beside the code's; the group is
    given back when the view closes (`PlacementListener`)."""
    group = open_beside(window, code_group(window, code))
    view = window.new_file()
    window.set_view_index(view, group, 0)
    _own_groups[view.id()] = group
    view.settings().set(BESIDE_GROUP, group)  # for the next load of the package
    return view


def give_back(window: sublime.Window, group: int) -> None:
    """Close a group `new_view_beside` made, its cell to the group beside it;
    views the user put there move along. Nothing changes when the user has
    rearranged the groups since (the layout stays theirs)."""
    if not window.is_valid() or group >= window.num_groups():
        return
    merged = merge_back(window.layout(), group)
    if merged is None:
        return
    layout, into = merged
    neighbour = into + 1 if into >= group else into  # its number while `group` is still there
    with keys_kept(window):
        for view in window.views_in_group(group):
            window.set_view_index(view, neighbour, window.num_views_in_group(neighbour))
        # Sublime's set_layout keeps views by group number (the last group's join
        # the new last): the views of each group after `group` move down one
        # number first, so they stay in their cells.
        for later in range(group + 1, window.num_groups()):
            for view in window.views_in_group(later):
                window.set_view_index(view, later - 1, window.num_views_in_group(later - 1))
        window.set_layout(layout)
    for view in window.views():  # the groups after it moved down one number
        made = _group_made_for(view)
        if made is not None and made > group:
            _own_groups[view.id()] = made - 1
            view.settings().set(BESIDE_GROUP, made - 1)


class PlacementListener(sublime_plugin.EventListener):
    def on_pre_close(self, view: sublime.View) -> None:
        made = _group_made_for(view)
        _own_groups.pop(view.id(), None)
        window = view.window()
        if made is not None and window is not None:
            sublime.set_timeout(lambda: give_back(window, made))  # once the view is gone from its group


@contextmanager
def keys_kept(window: sublime.Window, holder: sublime.View | None = None) -> Iterator[None]:
    """Open or move tabs for what the user did not ask for (an agent's review,
    a permission) and leave the keys where they were: `new_file`, `open_file`
    and `set_layout` take them, focusing the user's view again gives them back.
    `holder`: the view with the keys when Sublime cannot tell (a panel's)."""
    view = holder if holder is not None else window.active_view()
    group = window.active_group()
    try:
        yield
    finally:
        if window.is_valid():
            if view is not None and view.is_valid() and view.window() == window:
                window.focus_view(view)
            elif 0 <= group < window.num_groups():
                window.focus_group(group)


def show_without_focus(window: sublime.Window, view: sublime.View, keep: sublime.View | None) -> None:
    """Make `view` the visible one of its group; the focus stays in `keep`
    (`focus_view` is Sublime's only way to bring a tab to the front)."""
    window.focus_view(view)
    if keep is not None and keep.is_valid() and keep.window() == window:
        window.focus_view(keep)
