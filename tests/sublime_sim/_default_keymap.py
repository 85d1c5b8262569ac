"""The bindings of Sublime's own ``Default`` package that a package's keys meet.

Facts from Sublime Text's ``Default (<Platform>).sublime-keymap`` (the same
on every platform for these keys), written out here: the built-in package is
not in a simulated ``Packages`` folder, yet it is always loaded first, so a
package binding for Esc, Enter, Tab, Up or Down competes with these.

* Esc: ``single_selection`` with several carets, ``clear_fields`` inside a
  snippet's fields, ``hide_panel`` / ``hide_overlay`` / ``hide_auto_complete``
  while one is shown (Sublime closes a popup on Esc itself).
* Enter commits the completion while the auto-complete popup is shown
  (unless ``auto_complete_commit_on_tab``); otherwise it is typed.
* Tab: ``insert_best_completion`` always, ``commit_completion`` with the popup
  and ``auto_complete_commit_on_tab``, ``next_field`` inside fields.
* Up/Down move by lines.
* primary+c / primary+x / primary+v: ``copy`` / ``cut`` / ``paste`` (a
  package sees Paste as the ``paste`` text command, e.g. in ``on_text_command``).
* The incremental diff: ctrl+. / ctrl+, go to the next / previous
  modification; primary+k then primary+z reverts the hunk, primary+/ toggles
  its inline diff, primary+; toggles it hiding all others (Sublime's
  "Incremental Diff" documentation; primary is ctrl, or super on macOS).
"""

from __future__ import annotations

from typing import Any


def _when(key: str, operand: Any = True, operator: str = "equal") -> dict[str, Any]:
    return {"key": key, "operator": operator, "operand": operand}


DEFAULT_BINDINGS: list[dict[str, Any]] = [
    {"keys": ["ctrl+."], "command": "next_modification"},
    {"keys": ["ctrl+,"], "command": "prev_modification"},
    {"keys": ["primary+k", "primary+z"], "command": "revert_hunk"},
    {"keys": ["primary+k", "primary+/"], "command": "toggle_inline_diff"},
    {"keys": ["primary+k", "primary+;"], "command": "toggle_inline_diff", "args": {"prefer_hide": True}},
    {"keys": ["primary+c"], "command": "copy"},
    {"keys": ["primary+x"], "command": "cut"},
    {"keys": ["primary+v"], "command": "paste"},
    {"keys": ["up"], "command": "move", "args": {"by": "lines", "forward": False}},
    {"keys": ["down"], "command": "move", "args": {"by": "lines", "forward": True}},
    {"keys": ["escape"], "command": "single_selection", "context": [_when("num_selections", 1, "not_equal")]},
    {"keys": ["escape"], "command": "clear_fields", "context": [_when("has_next_field")]},
    {"keys": ["escape"], "command": "clear_fields", "context": [_when("has_prev_field")]},
    {"keys": ["escape"], "command": "hide_panel", "args": {"cancel": True}, "context": [_when("panel_visible")]},
    {"keys": ["escape"], "command": "hide_overlay", "context": [_when("overlay_visible")]},
    {"keys": ["escape"], "command": "hide_auto_complete", "context": [_when("auto_complete_visible")]},
    {"keys": ["tab"], "command": "insert_best_completion", "args": {"default": "\t", "exact": True}},
    {"keys": ["tab"], "command": "next_field", "context": [_when("has_next_field")]},
    {"keys": ["tab"], "command": "commit_completion",
     "context": [_when("auto_complete_visible"), _when("setting.auto_complete_commit_on_tab")]},
    {"keys": ["enter"], "command": "commit_completion",
     "context": [_when("auto_complete_visible"), _when("setting.auto_complete_commit_on_tab", False)]},
]
