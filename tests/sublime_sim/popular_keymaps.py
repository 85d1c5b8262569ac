"""Key chords of widely installed packages, at the paths their keymaps have.

Facts read from each package's published keymaps (the chords only, written
out here): a test writes them into ``Packages`` with ``write_popular_keymaps``
so ``find_binding`` answers what real Sublime would with them installed.
Packages load alphabetically, so each of these that sorts after a package
overrides that package's bindings of the same chord.
"""

from __future__ import annotations

import json
from pathlib import Path

from .fixtures import write_package

Chords = list[tuple[list[str], str]]

_LINTER_WINDOWS_LINUX: Chords = [
    (["ctrl+k", "l"], "sublime_linter_lint"),
    (["ctrl+k", "a"], "sublime_linter_panel_toggle"),
    (["ctrl+k", "n"], "sublime_linter_goto_error"),
    (["ctrl+k", "p"], "sublime_linter_goto_error"),
]
_ORIGAMI_LINUX_WINDOWS: Chords = [
    (["ctrl+k", "up"], "travel_to_pane"),
    (["ctrl+k", "shift+up"], "carry_file_to_pane"),
    (["ctrl+k", "ctrl+up"], "create_pane"),
]
_GITGUTTER_LINUX_WINDOWS: Chords = [
    (["ctrl+shift+alt+c", "c"], "git_gutter_compare_commit"),
    (["ctrl+shift+alt+j"], "git_gutter_next_change"),
    (["ctrl+shift+alt+k"], "git_gutter_prev_change"),
]

# package -> keymap path inside it -> chords; none of these has a context, so
# each holds in every view (packages whose chords carry contexts are left out).
POPULAR_KEYMAPS: dict[str, dict[str, Chords]] = {
    "SublimeLinter": {
        "keymaps/Default (Linux).sublime-keymap": _LINTER_WINDOWS_LINUX,
        "keymaps/Default (Windows).sublime-keymap": _LINTER_WINDOWS_LINUX,
        "keymaps/Default (OSX).sublime-keymap": [
            (["ctrl+super+l"], "sublime_linter_lint"),
            (["ctrl+super+a"], "sublime_linter_panel_toggle"),
            (["ctrl+super+e"], "sublime_linter_goto_error"),
        ],
    },
    "Origami": {
        "Default (Linux).sublime-keymap": _ORIGAMI_LINUX_WINDOWS,
        "Default (Windows).sublime-keymap": _ORIGAMI_LINUX_WINDOWS,
        "Default (OSX).sublime-keymap": [(["super+k", "up"], "travel_to_pane"), (["super+k", "super+up"], "create_pane")],
    },
    "GitGutter": {
        "Default (Linux).sublime-keymap": _GITGUTTER_LINUX_WINDOWS,
        "Default (Windows).sublime-keymap": _GITGUTTER_LINUX_WINDOWS,
    },
}


def write_popular_keymaps(packages_dir: Path) -> list[str]:
    """Write each package of ``POPULAR_KEYMAPS`` (keymaps only); returns their names."""
    for package, files in POPULAR_KEYMAPS.items():
        write_package(
            packages_dir,
            package,
            {path: json.dumps([{"keys": keys, "command": command} for keys, command in chords]) for path, chords in files.items()},
        )
    return list(POPULAR_KEYMAPS)
