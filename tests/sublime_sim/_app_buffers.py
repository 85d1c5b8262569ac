"""Buffers and views: creation, edits, selection, loading, saving, reverting."""

from __future__ import annotations

import codecs
import functools
import os
from typing import TYPE_CHECKING

from . import _syntax, _text
from ._paths import on_disk
from ._region import Span, adjust_span, selection_add, selection_subtract
from ._rope import Rope
from ._save_rewrites import rewrite_before_save
from ._state import BufferState, SheetState, ViewState

if TYPE_CHECKING:
    from ._app import App

EDIT_AFTER_RUN = "Edit objects may not be used after the TextCommand's run method has returned"

# Sublime encoding names -> Python codecs.
# Sublime's encoding names (the Reopen/Save with Encoding menus, what
# `view.encoding()` answers) and the Python codec of each.
ENCODINGS = {
    "UTF-8": "utf-8",
    "UTF-8 with BOM": "utf-8-sig",
    "UTF-16 LE": "utf-16-le",
    "UTF-16 BE": "utf-16-be",
    "UTF-16 LE with BOM": "utf-16-le",
    "UTF-16 BE with BOM": "utf-16-be",
    "Western (Windows 1252)": "cp1252",
    "Western (ISO 8859-1)": "latin-1",
    "Western (ISO 8859-3)": "iso8859-3",
    "Western (ISO 8859-15)": "iso8859-15",
    "Western (Mac Roman)": "mac-roman",
    "DOS (CP 437)": "cp437",
    "Arabic (Windows 1256)": "cp1256",
    "Arabic (ISO 8859-6)": "iso8859-6",
    "Baltic (Windows 1257)": "cp1257",
    "Baltic (ISO 8859-4)": "iso8859-4",
    "Celtic (ISO 8859-14)": "iso8859-14",
    "Central European (Windows 1250)": "cp1250",
    "Central European (ISO 8859-2)": "iso8859-2",
    "Central European (Mac)": "mac-latin2",
    "Cyrillic (Windows 1251)": "cp1251",
    "Cyrillic (Windows 866)": "cp866",
    "Cyrillic (ISO 8859-5)": "iso8859-5",
    "Cyrillic (KOI8-R)": "koi8-r",
    "Cyrillic (KOI8-U)": "koi8-u",
    "Estonian (ISO 8859-13)": "iso8859-13",
    "Greek (Windows 1253)": "cp1253",
    "Greek (ISO 8859-7)": "iso8859-7",
    "Hebrew (Windows 1255)": "cp1255",
    "Hebrew (ISO 8859-8)": "iso8859-8",
    "Nordic (ISO 8859-10)": "iso8859-10",
    "Romanian (ISO 8859-16)": "iso8859-16",
    "Turkish (Windows 1254)": "cp1254",
    "Turkish (ISO 8859-9)": "iso8859-9",
    "Vietnamese (Windows 1258)": "cp1258",
}
FALLBACK_ENCODING = "Western (Windows 1252)"
LINE_ENDINGS = {"Unix": "\n", "Windows": "\r\n", "CR": "\r"}


def _single_byte(data: bytes, codec: str) -> str:
    """A code page's text; a byte it leaves undefined (0x81 in Windows 1252)
    keeps its value, as Windows code pages map it, so nothing is lost."""
    return "".join(
        chr(ord(c) - 0xDC00) if "\udc80" <= c <= "\udcff" else c
        for c in data.decode(codec, errors="surrogateescape")
    )


def decode_file(data: bytes, fallback_encoding: str = FALLBACK_ENCODING) -> tuple[str, str, str | None]:
    """Decode file bytes the way Sublime opens them: (text, encoding, line endings).
    A byte-order mark and valid UTF-8 are detected; anything else opens in
    the `fallback_encoding` setting."""
    if data.startswith(codecs.BOM_UTF8):
        text, encoding = data[3:].decode("utf-8", "replace"), "UTF-8 with BOM"
    elif data.startswith(codecs.BOM_UTF16_LE):
        text, encoding = data[2:].decode("utf-16-le", "replace"), "UTF-16 LE with BOM"
    elif data.startswith(codecs.BOM_UTF16_BE):
        text, encoding = data[2:].decode("utf-16-be", "replace"), "UTF-16 BE with BOM"
    else:
        try:
            text, encoding = data.decode("utf-8"), "UTF-8"
        except UnicodeDecodeError:
            encoding = fallback_encoding if fallback_encoding in ENCODINGS else FALLBACK_ENCODING
            text = _single_byte(data, ENCODINGS[encoding])
    endings = "Windows" if "\r\n" in text else "CR" if "\r" in text else "Unix" if "\n" in text else None
    # The buffer always holds "\n"; the file's convention is kept for saving.
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding, endings


def encode_file(text: str, encoding: str, line_endings: str) -> bytes:
    text = text.replace("\n", LINE_ENDINGS.get(line_endings, "\n"))
    codec = ENCODINGS.get(encoding, "utf-8")
    bom = {"UTF-16 LE with BOM": codecs.BOM_UTF16_LE, "UTF-16 BE with BOM": codecs.BOM_UTF16_BE}.get(encoding, b"")
    return bom + text.encode(codec, "replace")


def _refill(buf: BufferState, text: str, encoding: str, endings: str | None) -> None:
    """A buffer takes a file's decoded content (loading it, or reverting to it)."""
    buf.text, buf.encoding = text, encoding
    if endings:
        buf.line_endings = endings


class BufferOps:
    def fallback_encoding(self: App) -> str:
        with self.lock:
            value = self.settings[self.preferences_id].lookup("fallback_encoding")
        return value if isinstance(value, str) else FALLBACK_ENCODING

    # ---------------------------------------------------------------- create
    def default_line_endings(self: App) -> str:
        with self.lock:
            value = self.settings[self.preferences_id].lookup("default_line_ending")
        if value in ("windows", "Windows"):
            return "Windows"
        if value in ("cr", "CR", "mac"):
            return "CR"
        if value in ("unix", "Unix"):
            return "Unix"
        return "Windows" if self.platform == "windows" else "Unix"

    def make_view(
        self: App,
        wid: int,
        *,
        text: str = "",
        file_name: str | None = None,
        element: str | None = None,
        panel_name: str | None = None,
        sheet: bool = True,
        group: int = -1,
        transient: bool = False,
        syntax: _syntax.SyntaxInfo | None = None,
        loading: bool = False,
        widget: bool = False,
    ) -> int:
        """Create a buffer and its view (and sheet); events are the caller's job."""
        line_endings = self.default_line_endings()
        with self.lock:
            buf = BufferState(self.new_id("buffer"), Rope.of(text), file_name=file_name, loading=loading)
            buf.line_endings = line_endings
            buf.syntax = syntax or _syntax.for_path(file_name)
            self.buffers[buf.id] = buf
            settings_id = self.new_settings(parent=self.preferences_id)
            self.settings[settings_id].user["syntax"] = buf.syntax.path
            self.settings[settings_id].layers = self.syntax_settings_layers(buf.syntax.path)
            if widget:
                self.settings[settings_id].user["is_widget"] = True
            st = ViewState(self.new_id("view"), buf, settings_id, window_id=wid, element=element, panel_name=panel_name)
            self.settings[settings_id].project = functools.partial(self.project_settings_of_view, st.id)
            buf.view_ids.append(st.id)
            self.views[st.id] = st
            if sheet:
                sh = SheetState(self.new_id("sheet"), "text", wid, view_id=st.id, transient=transient)
                self.sheets[sh.id] = sh
                st.sheet_id = sh.id
                self.place_sheet(wid, sh.id, group)
            return st.id

    def attach_listeners(self: App, vid: int) -> None:
        """Create ViewEventListeners / TextChangeListeners, as Sublime does for a new view."""
        from . import sublime_plugin as sp

        with self.lock:
            st = self.view(vid)
            bid = st.buffer.id if st else 0
        if st is not None:

            def attach() -> None:
                sp.attach_view(vid)
                sp.attach_buffer(bid)

            self.on_main(attach)

    def discard_view(self: App, vid: int) -> None:
        """Invalidate a closed view and its buffer's settings; caller fires events."""
        from . import sublime_plugin as sp

        with self.lock:
            st = self.views.get(vid)
            if st is None or not st.valid:
                return
            st.valid = False
            # What Sublime drops with a view: its phantoms (and their callbacks), regions, popups.
            st.phantoms.clear()
            st.regions.clear()
            st.popup = None
            st.popup_menu = None
            st.pending_changes.clear()
            st.buffer.view_ids.remove(vid)
            self.settings[st.settings_id].valid = False
            bid = st.buffer.id
            last = not st.buffer.view_ids
            if last:
                # Sublime frees a buffer with its last view: nothing reads a closed view's text.
                st.buffer.text = ""
                st.buffer.reference_document = None
                st.buffer.change_log.clear()
        sp.detach_view(vid)
        if last:
            sp.detach_buffer(bid)

    # ----------------------------------------------------------------- edits
    def begin_edit(self: App, vid: int, token: int) -> None:
        with self.lock:
            st = self.views.get(vid)
            if st is not None:
                st.edit_tokens.add(token)

    def end_edit(self: App, vid: int, token: int) -> None:
        with self.lock:
            st = self.views.get(vid)
            if st is not None:
                st.edit_tokens.discard(token)

    def is_in_edit(self: App, vid: int) -> bool:
        with self.lock:
            st = self.views.get(vid)
            return bool(st and st.edit_tokens)

    def modify(self: App, vid: int, token: int | None, begin: int, end: int, text: str, force: bool = False) -> int:
        """Replace [begin, end) by ``text`` under an edit token; returns chars inserted."""
        with self.lock:
            st = self.view(vid)
            if st is None:
                return 0
            if token is not None and token not in st.edit_tokens:
                raise ValueError(EDIT_AFTER_RUN)
            buf = st.buffer
            if buf.read_only and not force:
                return 0  # read-only buffers silently refuse edits
            n = len(buf.rope)
            begin, end = sorted((_text.clamp(begin, n), _text.clamp(end, n)))
            if begin == end and not text:
                return 0
            self._record_text_change(st, begin, end, text)
            buf.rope = buf.rope.replace(begin, end, text)
            buf.change_count += 1
            buf.change_log.append((buf.change_count, begin, end - begin, len(text)))
            removed, inserted = end - begin, len(text)
            for other_id in buf.view_ids:
                other = self.views[other_id]
                self._adjust_view(other, begin, removed, inserted)
            return inserted

    def _adjust_view(self: App, st: ViewState, pos: int, removed: int, inserted: int) -> None:
        st.sel = self._normalise([adjust_span(s, pos, removed, inserted) for s in st.sel])
        for rec in st.regions.values():
            rec.regions = [adjust_span(s, pos, removed, inserted) for s in rec.regions]
        for ph in st.phantoms.values():
            # An empty phantom region where text is inserted: Sublime documents no
            # rule, so it stays before the text, and a package that needs it after
            # must draw it again.
            if not (ph.region == (pos, pos) and not removed):
                ph.region = adjust_span(ph.region, pos, removed, inserted)
        st.folded = [s for s in (adjust_span(f, pos, removed, inserted) for f in st.folded) if s[0] != s[1]]
        st.inline_diffs = [adjust_span(s, pos, removed, inserted) for s in st.inline_diffs]

    def _record_text_change(self: App, st: ViewState, begin: int, end: int, text: str) -> None:
        if not st.buffer.text_listeners:
            return
        old = st.buffer.rope

        def pos(pt: int) -> tuple[int, int, int, int, int]:
            row = old.newlines_before(pt)
            before = old.substr(old.row_start(row), pt)  # the line up to pt
            return (pt, row, len(before), _text.code_units(before, None, "utf-16"), _text.code_units(before, None, "utf-8"))

        removed = old.substr(begin, end)
        st.pending_changes.append(
            (pos(begin), pos(end), len(removed.encode("utf-16-le", "surrogatepass")) // 2, len(removed.encode("utf-8", "surrogatepass")), text)
        )

    def snapshot(self: App, vid: int) -> tuple[int, list[Span]]:
        with self.lock:
            st = self.view(vid)
            return (st.buffer.change_count, list(st.sel)) if st else (0, [])

    def flush_modifications(self: App, vid: int, before: tuple[int, list[Span]]) -> None:
        """Fire what an edit that just finished causes: text changes, modified, selection."""
        with self.lock:
            st = self.view(vid)
            if st is None:
                return
            modified = st.buffer.change_count != before[0]
            sel_changed = st.sel != before[1]
            changes, st.pending_changes = st.pending_changes, []
            bid = st.buffer.id
        if changes:
            self.emit("buffer", "on_text_changed", bid, changes)
        if modified:
            self.emit("view", "on_modified", vid)
        if sel_changed:
            self.emit("view", "on_selection_modified", vid)

    # ------------------------------------------------------------- selection
    def _normalise(self: App, spans: list[Span]) -> list[Span]:
        out: list[Span] = []
        for s in spans:
            out = selection_add(out, s)
        return out

    def sel_get(self: App, vid: int) -> list[Span]:
        with self.lock:
            st = self.view(vid)
            return list(st.sel) if st else []

    def sel_update(self: App, vid: int, op: str, span: Span | None = None, index: int = 0) -> None:
        with self.lock:
            st = self.view(vid)
            if st is None:
                return
            n = len(st.buffer.rope)
            if span is not None:
                span = (_text.clamp(span[0], n), _text.clamp(span[1], n))
            if op == "clear":
                st.sel = []
            elif op == "add" and span is not None:
                st.sel = selection_add(st.sel, span)
            elif op == "subtract" and span is not None:
                st.sel = selection_subtract(st.sel, span)
            elif op == "delete":
                del st.sel[index]

    def sel_set(self: App, vid: int, spans: list[Span]) -> None:
        with self.lock:
            st = self.view(vid)
            if st is not None:
                n = len(st.buffer.rope)
                st.sel = self._normalise([(_text.clamp(a, n), _text.clamp(b, n)) for a, b in spans])

    # ------------------------------------------------------------------ files
    def finish_load(self: App, vid: int) -> None:
        """The main thread finishing an asynchronous file load: then on_load."""
        with self.lock:
            st = self.view(vid)
            if st is None or not st.buffer.loading:
                return
            path = st.buffer.file_name or ""
        try:
            with open(on_disk(path, self.platform), "rb") as f:
                text, encoding, endings = decode_file(f.read(), self.fallback_encoding())
        except FileNotFoundError:
            text, encoding, endings = "", "UTF-8", None  # opening a new path gives an empty view
        syntax = _syntax.for_path(path)
        with self.lock:
            st = self.view(vid)
            if st is None:
                return
            buf = st.buffer
            _refill(buf, text, encoding, endings)
            buf.syntax = syntax
            buf.loading = False
            buf.saved_change_count = buf.change_count
            buf.saved_rope = buf.rope
            pt = 0
            if st.pending_position is not None:
                pt = _text.text_point(text, st.pending_position[0], st.pending_position[1], True)
                st.pending_position = None
            st.sel = [(pt, pt)]
            sid = st.settings_id
        self.set_view_syntax(sid, syntax.path)
        self.emit("view", "on_load", vid)

    def save_view(self: App, vid: int, path: str | None = None) -> bool:
        """The ``save`` command: pre_save, write (honouring encoding/line endings), post_save."""
        with self.lock:
            st = self.view(vid)
            if st is None:
                return False
            target = path or st.buffer.file_name
            name = st.buffer.name or "untitled"
        if not target:
            target = self.answers.take("save", self.answers.save_path)
            self.record_dialog("save", f"Save {name}", target, view_id=vid)
            if not target:
                return False
        target = os.path.abspath(target)
        with self.lock:
            st = self.view(vid)
            if st is None:
                return False
            new_name = st.buffer.file_name != target
            st.buffer.file_name = target
            bid = st.buffer.id
        if new_name:
            self.emit("buffer", "on_associate_buffer", bid)
        rewrite_before_save(self, vid)  # Sublime's own (Default's settings), then the packages'
        self.emit("view", "on_pre_save", vid)
        with self.lock:
            st = self.view(vid)
            if st is None:
                return False
            data = encode_file(st.buffer.text, st.buffer.encoding, st.buffer.line_endings)
            count, written_text = st.buffer.change_count, st.buffer.rope
        written = on_disk(target, self.platform)
        os.makedirs(os.path.dirname(written), exist_ok=True)
        with open(written, "wb") as f:
            f.write(data)
        with self.lock:
            st = self.view(vid)
            if st is None:
                return True
            st.buffer.saved_change_count = count
            st.buffer.saved_rope = written_text
            if st.buffer.syntax is _syntax.PLAIN_TEXT:
                st.buffer.syntax = _syntax.for_path(target)
            if target not in self.file_history:
                self.file_history.append(target)
        self.emit("view", "on_post_save", vid)
        return True

    def revert_view(self: App, vid: int) -> None:
        with self.lock:
            st = self.view(vid)
            path = st.buffer.file_name if st else None
        if not path:
            return
        try:
            with open(on_disk(path, self.platform), "rb") as f:
                text, encoding, endings = decode_file(f.read(), self.fallback_encoding())
        except OSError:
            return
        with self.lock:
            st = self.view(vid)
            if st is None:
                return
            buf = st.buffer
            _refill(buf, text, encoding, endings)
            buf.change_count += 1
            buf.saved_change_count = buf.change_count
            buf.saved_rope = buf.rope
            n = len(text)
            st.sel = self._normalise([(min(a, n), min(b, n)) for a, b in st.sel])
            bid = buf.id
        # A revert is not a text change (see TextChangeListener.on_revert).
        self.emit("view", "on_revert", vid)
        self.emit("buffer", "on_revert", bid)

    def buffer_text(self: App, vid: int) -> str:
        with self.lock:
            st = self.view(vid)
            return st.buffer.text if st else ""
