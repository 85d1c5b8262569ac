"""The auto-complete popup, opened and closed as Sublime does.

Facts (Sublime's settings and completions documentation):

* With ``auto_complete`` on, typing opens the popup when the scope at the
  caret matches ``auto_complete_selector`` and the typed character is part of
  a word, or when one of ``auto_complete_triggers`` holds: its ``selector``
  matches and the typed character is one of its ``characters``.
* It lists the ``on_query_completions`` answers and, unless one of them
  returns ``INHIBIT_WORD_COMPLETIONS``, the view's words, keeping those whose
  trigger fuzzy-matches the prefix (the word before the caret: its characters
  in order); with nothing to list it stays closed.
* The ``auto_complete`` command (Ctrl+Space) opens it whatever the selector.
* ``hide_auto_complete`` (Esc) closes it, ``commit_completion`` (Enter, or
  Tab with ``auto_complete_commit_on_tab``) replaces the prefix with the first
  item; typing a character that neither continues a word nor triggers closes it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import _syntax, _text
from ._constants import AutoCompleteFlags

if TYPE_CHECKING:
    from ._app import App


def _setting(app: App, vid: int, key: str) -> Any:
    from ._settings import _MISSING

    st = app.view(vid)
    value = app.settings[st.settings_id].lookup(key) if st else _MISSING
    return None if value is _MISSING else value


def _is_word_char(app: App, vid: int, char: str) -> bool:
    separators = str(_setting(app, vid, "word_separators") or _text.DEFAULT_WORD_SEPARATORS)
    return not char.isspace() and char not in separators


def _prefix(app: App, vid: int, text: str, pt: int) -> str:
    begin = pt
    while begin > 0 and _is_word_char(app, vid, text[begin - 1]):
        begin -= 1
    return text[begin:pt]


def _caret(app: App, vid: int) -> int | None:
    spans = app.sel_get(vid)
    return spans[0][1] if spans else None


def _scope_before(app: App, vid: int, text: str, pt: int) -> str:
    st = app.view(vid)
    return _syntax.scope_name(st.buffer.syntax, text, max(pt - 1, 0)) if st else ""


def _triggered(app: App, vid: int, scope: str, char: str) -> bool:
    for trigger in _setting(app, vid, "auto_complete_triggers") or []:
        if (isinstance(trigger, dict) and char in str(trigger.get("characters", "")) and char
                and _syntax.score_selector(scope, str(trigger.get("selector", ""))) > 0):
            return True
    return False


def _trigger(item: Any) -> str:
    if isinstance(item, (list, tuple)):
        return str(item[0]).split("\t")[0]
    return item if isinstance(item, str) else str(getattr(item, "trigger", ""))


def _fuzzy(prefix: str, trigger: str) -> bool:
    rest = iter(trigger.lower())
    return all(c in rest for c in prefix.lower())


def on_typed(app: App, vid: int, characters: str) -> None:
    """After the user typed ``characters`` (the ``insert`` command from a key)."""
    pt = _caret(app, vid)
    if pt is None or not characters:
        return
    text = app.buffer_text(vid)
    char = characters[-1]
    scope = _scope_before(app, vid, text, pt)
    if _triggered(app, vid, scope, char):
        show(app, vid)
    elif not _is_word_char(app, vid, char):
        hide(app, vid)
    elif _setting(app, vid, "auto_complete") and _syntax.score_selector(scope, str(_setting(app, vid, "auto_complete_selector") or "")) > 0:
        show(app, vid)
    elif is_visible(app, vid):
        show(app, vid)  # the list narrows as the word goes on


def show(app: App, vid: int) -> None:
    from . import sublime_plugin as sp

    pt = _caret(app, vid)
    if pt is None:
        return
    text = app.buffer_text(vid)
    prefix = _prefix(app, vid, text, pt)
    items, flags = sp.query_completions(vid, prefix, [pt])
    if prefix and not flags & AutoCompleteFlags.INHIBIT_WORD_COMPLETIONS:
        items = list(items) + list(dict.fromkeys(w for w in re.findall(r"\w+", text) if w != prefix))
    items = [item for item in items if _fuzzy(prefix, _trigger(item))]
    with app.lock:
        st = app.view(vid)
        if st is not None:
            st.auto_complete = list(items) or None


def is_visible(app: App, vid: int) -> bool:
    st = app.view(vid)
    return bool(st and st.auto_complete)


def hide(app: App, vid: int) -> None:
    with app.lock:
        st = app.view(vid)
        if st is not None:
            st.auto_complete = None


def first_completion(app: App, vid: int) -> tuple[str, str] | None:
    """(prefix to replace, text to insert) of the popup's first item."""
    st = app.view(vid)
    pt = _caret(app, vid)
    if st is None or not st.auto_complete or pt is None:
        return None
    item = st.auto_complete[0]
    completion = item if isinstance(item, str) else getattr(item, "completion", "") or getattr(item, "trigger", "")
    if isinstance(item, (list, tuple)):
        completion = str(item[1] if len(item) > 1 else item[0])
    return _prefix(app, vid, app.buffer_text(vid), pt), str(completion)
