"""Mentions in the composer: `@symbol:NAME`, `@diagnostics`,
`@diagnostics:window`, `@diff`, `@terminal` and a pasted image.

A mention is made when it is picked (completion popup, the `@` picker,
Qwen Code: Mention…, the driver): what it sends is read then, on a thread of
our own (the index, LSP's answer, git and the clipboard tool may take a
while), kept in `WindowChat.attachments` under the token the composer shows,
and summed up in the status bar; Enter sends it with the prompt."""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Callable
from typing import Any

import sublime

from ....core import threads
from ....core.chat.prompts.mention_tools import MentionError, clipboard_image, git_diff
from ....core.chat.prompts.mentions import (
    Mention,
    diagnostics_mention,
    diff_mention,
    image_mention,
    symbol_mention,
    terminal_mention,
)
from ....core.cli.terminal import terminal_tag
from ....core.context_rules import ContextOptions
from ....core.files.agent_files import Refused, read_text
from ....core.files.paths import deepest_root
from ....core.ide_tools.answers import ToolRefusal
from ...background import in_background, when_done
from ...companion.terminal import live_terminal
from ...editor import find_open_view, view_text
from ...ide_tools.knowledge import SublimeCodeKnowledge
from ...ide_tools.language_servers import lsp_plugin_api
from ...settings import userprefs
from ..window_chats import WindowChat, chats

# What the completion popup, the `@` picker and Mention… offer: token -> what it sends.
MENTIONS = {
    "symbol:": "a definition from Sublime's index (type its name)",
    "diagnostics": "the active file's errors and warnings (LSP)",
    "diagnostics:window": "every file's errors and warnings (LSP)",
    "diff": "the uncommitted changes (git)",
    "terminal": "the last lines of the qwen terminal",
}
PASTE_IMAGE = "paste image"
# A mention just completed in the composer: the text before the caret.
COMPLETED = re.compile(r"@(symbol:[^\s@]+|diagnostics:window|diagnostics|diff|terminal)$")
TYPED_MENTION = re.compile(r"(?:^|\s)@([\w:.-]*)$")
MAX_SYMBOL_COMPLETIONS = 500
TERMINAL_TAIL_CHARS = 256 * 1024  # what is read of the terminal's end, for its last lines
NO_LSP = "the LSP package is not installed (or is disabled), so there are no diagnostics to attach"

_image_serials = itertools.count(1)
log = logging.getLogger(__name__)


def _excluded(path: str) -> bool:
    return bool(ContextOptions.from_settings(userprefs().context_values()).excludes(path))


# --- what each mention reads --------------------------------------------------------------------


def symbol_builder(window: sublime.Window, name: str) -> Callable[[], Mention]:
    """The open files' definitions first, with their buffers' text (unsaved
    edits move rows); else the index's, whose rows are those of the disk."""

    @threads.may_block
    def build() -> Mention:
        found = []
        for source in (sublime.SymbolSource.OPEN_FILES, sublime.SymbolSource.INDEX):
            found = window.symbol_locations(name, source, sublime.SymbolType.DEFINITION)
            places = [f for f in found if not _excluded(f.path)]
            if places:
                place = places[0]
                view = find_open_view(place.path) if source == sublime.SymbolSource.OPEN_FILES else None
                try:
                    text = view_text(view) if view is not None else read_text(place.path)
                except (Refused, OSError) as error:
                    raise MentionError(f"cannot read {place.path}: {error}") from None
                return symbol_mention(name, place.path, text, place.row)
        raise MentionError(f"Sublime's index has no definition of {name!r}" + (
            " outside excluded_file_patterns" if found else ""))

    return build


def diagnostics_builder(window: sublime.Window, whole_window: bool, editor_file: str | None) -> Callable[[], Mention]:
    path = None if whole_window else editor_file
    folder = (window.folders() or [os.path.expanduser("~")])[0]

    @threads.may_block
    def build() -> Mention:
        if lsp_plugin_api() is None:
            raise MentionError(NO_LSP)
        if not whole_window and path is None:
            raise MentionError("the active tab is not a saved file; @diagnostics:window has the window's")
        if path is not None and _excluded(path):
            raise MentionError(f"{os.path.basename(path)} is excluded from what is sent (excluded_file_patterns)")
        try:
            answer = SublimeCodeKnowledge(window).diagnostics(path)
        except ToolRefusal as refusal:
            raise MentionError(str(refusal)) from None
        if "source" not in answer:
            raise MentionError(f"no language server answered: {answer.get('note', '')}".strip())
        found = [d for d in answer["diagnostics"] if not _excluded(str(d.get("abspath", "")))]
        return diagnostics_mention(found, str(answer["source"]), path, folder)

    return build


def diff_builder(window: sublime.Window, active: str | None) -> Callable[[], Mention]:
    folders = window.folders()

    @threads.may_block
    def build() -> Mention:  # resolving paths touches the disk
        folder, boundary = diff_folder(active, folders)
        if folder is None or boundary is None:
            raise MentionError("this window has no folder, so there is no repository to diff")
        return diff_mention(*git_diff(folder, boundary=boundary))

    return build


def diff_folder(active: str | None, folders: list[str]) -> tuple[str | None, str | None]:
    """(where git looks for the repository, the window folder the diff stays
    in): the active file's folder when a window folder holds the file (its
    innermost one), else the first window folder."""
    index = deepest_root(active, folders) if active else None
    if active is not None and index is not None:
        return os.path.dirname(active), folders[index]
    first = folders[0] if folders else None
    return first, first


def terminal_builder(window: sublime.Window) -> Callable[[], Mention]:
    @threads.may_block
    def build() -> Mention:
        live = live_terminal(window, terminal_tag(window.id()), serials=True)
        if live is None:
            raise MentionError("this window has no running qwen terminal (Qwen Code: Open in Terminal starts one)")
        view = live[0]
        size = view.size()
        tail = view.substr(sublime.Region(max(0, size - TERMINAL_TAIL_CHARS), size))
        return terminal_mention(tail, view.name() or "qwen")

    return build


def image_builder() -> Callable[[], Mention]:
    @threads.may_block
    def build() -> Mention:
        return image_mention(clipboard_image(), next(_image_serials))

    return build


def builder(window: sublime.Window, kind: str, name: str | None, editor: sublime.View | None) -> Callable[[], Mention]:
    """What makes mention `kind`; `editor` is the user's active code tab (not the chat's)."""
    editor_file = editor.file_name() if editor is not None else None
    if kind == "symbol":
        if not name or any(c.isspace() or c == "@" for c in name):
            raise MentionError(f"@symbol needs a symbol's name (no spaces), not {name!r}")
        return symbol_builder(window, name)
    if kind in ("diagnostics", "diagnostics:window"):
        return diagnostics_builder(window, kind.endswith(":window") or name == "window", editor_file)
    if kind == "diff":
        return diff_builder(window, editor_file)
    if kind == "terminal":
        return terminal_builder(window)
    raise MentionError(f"no mention {kind!r} (symbol, diagnostics, diff, terminal)")


# --- making one ----------------------------------------------------------------------------


def make_mention(chat: WindowChat, build: Callable[[], Mention], insert: str) -> None:
    """Build on a thread of our own, then attach on the main thread. `insert`:
    "@" puts `@token ` at the composer's caret, "token" the token alone (the
    user typed the `@`), "" nothing (the composer already shows it)."""

    def work() -> None:
        try:
            made = build()
        except Exception as error:  # a MentionError says why; anything else must not leave the user waiting
            if not isinstance(error, MentionError):
                log.exception("a mention failed")
            message = str(error) if isinstance(error, MentionError) else f"the mention failed: {error!r}"
            sublime.set_timeout(lambda: refuse(chat, message))
            return
        sublime.set_timeout(lambda: attach(chat, made, insert))

    in_background(work, "mention")


def attach(chat: WindowChat, mention: Mention, insert: str) -> None:
    chat.attachments[mention.token] = mention.block
    composer = chat.composer_view
    if insert and composer is not None and composer.is_valid():
        text = f"@{mention.token} " if insert == "@" else f"{mention.token} "
        composer.run_command("insert", {"characters": text})
    sublime.status_message(f"Qwen Code: @{mention.token} will send {mention.summary}")
    chats.tell("mention_added", {"window": chat.window_id, "chat": chat.chat_id, "token": mention.token,
                                 "summary": mention.summary})


def refuse(chat: WindowChat, message: str) -> None:
    sublime.status_message(f"Qwen Code: {message}")
    chats.tell("mention_failed", {"window": chat.window_id, "chat": chat.chat_id, "message": message})


def mention(window: sublime.Window, chat: WindowChat, kind: str, name: str | None, insert: str,
            editor: sublime.View | None) -> None:
    if kind == "image":
        paste_image(chat, insert)
        return
    try:
        build = builder(window, kind, name, editor)
    except MentionError as error:
        refuse(chat, str(error))
        return
    make_mention(chat, build, insert)


def paste_image(chat: WindowChat, insert: str) -> None:
    """Only for an agent whose promptCapabilities accept images (started first when it has not)."""
    accepts = chat.state.accepts_images
    if accepts is None:
        sublime.status_message("Qwen Code: starting the agent…")

        def started(done: Any) -> None:
            if chat.state.accepts_images is None:
                refuse(chat, f"the agent did not start: {done.exception() or 'unknown error'}")
            else:
                paste_image(chat, insert)

        when_done(chat.start(), started)
    elif not accepts:
        refuse(chat, "the agent does not take images (its promptCapabilities.image is false)")
    else:
        make_mention(chat, image_builder(), insert)


# --- the pickers and the completion popup ------------------------------------------------


def pick(window: sublime.Window, chat: WindowChat, choice: str, insert: str, editor: sublime.View | None) -> None:
    """A picker's choice: a symbol's name is asked for (the word at the caret offered)."""
    if choice == PASTE_IMAGE:
        paste_image(chat, insert)
    elif choice == "symbol:":
        word = editor.substr(editor.word(editor.sel()[0])) if editor is not None and len(editor.sel()) else ""
        window.show_input_panel("Symbol:", word.strip() if word.strip().isidentifier() else "",
                                lambda name: mention(window, chat, "symbol", name.strip(), insert, editor), None, None)
    else:
        mention(window, chat, choice, None, insert, editor)


def mention_completions(view: sublime.View, point: int) -> list[sublime.CompletionValue] | None:
    """After `@` in the composer: the mentions; after `@symbol:`, the symbols of the open files."""
    line = view.substr(sublime.Region(view.line(point).begin(), point))
    typed = TYPED_MENTION.search(line)
    if typed is None:
        return None
    kind = (sublime.KindId.NAVIGATION, "@", "mention")
    if not typed[1].startswith("symbol:"):
        return [sublime.CompletionItem(token, annotation=about[:60], completion=token, kind=kind)
                for token, about in MENTIONS.items()]
    window = view.window()
    names: dict[str, str] = {}
    for other in window.views() if window is not None else []:
        if len(names) >= MAX_SYMBOL_COMPLETIONS:
            break
        for symbol in other.symbol_regions():
            names.setdefault(symbol.name, os.path.basename(other.file_name() or other.name() or ""))
    return [sublime.CompletionItem(name, annotation=where, completion=name, kind=(sublime.KindId.FUNCTION, "s", "symbol"))
            for name, where in sorted(names.items())[:MAX_SYMBOL_COMPLETIONS]]
