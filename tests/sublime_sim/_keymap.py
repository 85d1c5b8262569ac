"""Key bindings: ``.sublime-keymap`` lookup and ``context`` evaluation.

Sublime's own Default bindings (``_default_keymap``) come first; then every
package's ``Default.sublime-keymap`` and ``Default (<Platform>).sublime-keymap``
anywhere in the package (a keymap may live in a subfolder, as SublimeLinter's
``keymaps/`` do), in package load order; later bindings win, as in Sublime.
A binding matches when all its context entries hold: the
built-in keys below are answered here, any other key is asked of
``on_query_context`` listeners (no answer means the entry fails).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _auto_complete, _jsonc, _syntax
from ._default_keymap import DEFAULT_BINDINGS
from ._settings import _MISSING

if TYPE_CHECKING:
    from ._app import App

MODIFIERS = ("ctrl", "alt", "altgr", "shift", "super")


@dataclass
class Binding:
    keys: list[str]
    command: str
    args: dict[str, Any] | None
    context: list[dict[str, Any]]
    source: str


def normalize_keys(keys: str | list[str], platform: str) -> list[str]:
    """``"ctrl+k, ctrl+b"`` or a list -> canonical chords (modifiers sorted)."""
    chords = [k.strip() for k in keys.split(",")] if isinstance(keys, str) else list(keys)
    out = []
    for chord in chords:
        parts = chord.split("+")
        if chord.endswith("++"):
            parts = [*parts[:-2], "+"]
        key = parts[-1]
        mods = sorted(
            {("super" if platform == "osx" else "ctrl") if m.lower() == "primary" else m.lower() for m in parts[:-1]},
            key=MODIFIERS.index,
        )
        out.append("+".join([*mods, key.lower() if len(key) > 1 else key]))
    return out


def _bindings_of(entries: Any, platform: str, source: str) -> list[Binding]:
    return [
        Binding(normalize_keys(e["keys"], platform), e["command"], e.get("args"), e.get("context") or [], source)
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict) and "keys" in e and "command" in e
    ]


def load_bindings(app: App) -> list[Binding]:
    out = _bindings_of(DEFAULT_BINDINGS, app.platform, f"Packages/Default/Default ({app.platform_label()}).sublime-keymap")
    platform_name = f"Default ({app.platform_label()}).sublime-keymap"
    resources = app.find_resources("Default.sublime-keymap") + app.find_resources(platform_name)
    order = {pkg: i for i, pkg in enumerate(app.package_names())}
    # Package load order first; in a package the all-platform file before the platform one.
    resources.sort(key=lambda r: (order.get(r.split("/")[1], len(order)), r.endswith(platform_name), r))
    for resource in resources:
        try:
            entries = _jsonc.decode_file_text(app.resource_file(resource).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            app.log(f"Error parsing keymap {resource}: {exc}")
            continue
        out.extend(_bindings_of(entries, app.platform, resource))
    return out


OPERATORS = ("equal", "not_equal", "regex_match", "not_regex_match", "regex_contains", "not_regex_contains")


def compare(value: Any, operator: str, operand: Any) -> bool:
    if operator in ("equal", "not_equal"):
        same = value == operand
        return same if operator == "equal" else not same
    text = "" if value is None else str(value)
    pattern = str(operand)
    hit = bool(re.fullmatch(pattern, text)) if "match" in operator else bool(re.search(pattern, text))
    return not hit if operator.startswith("not_") else hit


def _per_selection(app: App, vid: int, fn: Any, operator: str, operand: Any, match_all: bool) -> bool:
    spans = app.sel_get(vid)
    text = app.buffer_text(vid)
    results = [compare(fn(text, a, b), operator, operand) for a, b in spans]
    return (all(results) if match_all else any(results)) if results else False


def builtin_context(app: App, vid: int, key: str, operator: str, operand: Any, match_all: bool) -> bool | None:
    """Answer the core context keys Sublime evaluates itself; None if not one."""
    with app.lock:
        st = app.view(vid)
        win = app.window(app.active_window_id)
        settings = app.settings[st.settings_id] if st else None
        popup = bool(st and st.popup)
        read_only = bool(st and st.buffer.read_only)
        syntax = st.buffer.syntax if st else _syntax.PLAIN_TEXT
        panel = win.active_panel if win else None
        overlay = any(not q.done for q in app.quick_panels) or any(not c.done for c in app.command_inputs) or bool(app.palettes)
    if key.startswith("setting."):
        value = settings.lookup(key[len("setting.") :]) if settings else None
        return compare(None if value is _MISSING else value, operator, operand)
    if key == "selection_empty":
        return _per_selection(app, vid, lambda t, a, b: a == b, operator, operand, match_all)
    if key == "num_selections":
        return compare(len(app.sel_get(vid)), operator, operand)
    if key == "preceding_text":
        return _per_selection(app, vid, lambda t, a, b: t[t.rfind("\n", 0, min(a, b)) + 1 : min(a, b)], operator, operand, match_all)
    if key == "following_text":
        return _per_selection(app, vid, lambda t, a, b: t[max(a, b) : (t.find("\n", max(a, b)) + 1 or len(t) + 1) - 1], operator, operand, match_all)
    if key == "text":
        return _per_selection(app, vid, lambda t, a, b: t[min(a, b) : max(a, b)], operator, operand, match_all)
    if key == "selector":  # the scope at each caret
        matches = _per_selection(app, vid, lambda t, a, b: _syntax.score_selector(_syntax.scope_name(syntax, t, b), str(operand)) > 0,
                                 "equal", True, match_all)
        return matches if operator == "equal" else not matches
    if key == "panel_visible":
        return compare(panel is not None, operator, operand)
    if key == "panel":
        return compare(panel, operator, operand)
    if key == "panel_has_focus":
        return compare(panel == "input", operator, operand)
    if key == "overlay_visible":
        return compare(overlay, operator, operand)
    if key == "popup_visible":
        return compare(popup, operator, operand)
    if key == "auto_complete_visible":
        return compare(_auto_complete.is_visible(app, vid), operator, operand)
    if key == "read_only":
        return compare(read_only, operator, operand)
    if key in ("has_next_field", "has_prev_field", "is_recording_macro"):
        return compare(False, operator, operand)
    return None


def context_holds(app: App, vid: int, entry: dict[str, Any]) -> bool:
    from . import sublime_plugin as sp

    key = str(entry.get("key", ""))
    operator = str(entry.get("operator", "equal"))
    operand = entry.get("operand", True)
    match_all = bool(entry.get("match_all", False))
    if operator not in OPERATORS:
        return False
    answer = builtin_context(app, vid, key, operator, operand, match_all)
    if answer is not None:
        return answer
    return bool(sp.on_query_context(vid, key, OPERATORS.index(operator), operand, match_all))


def find_binding(app: App, vid: int, keys: list[str]) -> Binding | None:
    for binding in reversed(load_bindings(app)):
        if binding.keys == keys and all(context_holds(app, vid, c) for c in binding.context):
            return binding
    return None
