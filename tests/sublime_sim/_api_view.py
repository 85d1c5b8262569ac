"""``sublime.View``: a handle on a view id, answering from the application state.

As in Sublime, a closed (invalid) view answers with neutral values instead
of raising.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from . import _minihtml, _runtime, _syntax, _text, _viewport
from ._api_objects import Buffer, Edit, Selection, Sheet, SymbolRegion, Syntax, make_sheet
from ._constants import PhantomLayout, PointClassification, RegionFlags, SymbolType
from ._region import Region, adjust_span, span_of
from ._rope import EMPTY
from ._settings import Settings
from ._state import PhantomRecord, PopupRecord, RegionsRecord, ViewState

if TYPE_CHECKING:
    from ._api_window import Window


T = TypeVar("T")


def _to_syntax(info: _syntax.SyntaxInfo) -> Syntax:
    return Syntax(info.path, info.name, info.hidden, info.scope)


class View:
    """A view into a text buffer."""

    def __init__(self, id: int) -> None:
        self.view_id = id
        self.selection = Selection(id)
        self.settings_object: Settings | None = None

    def __len__(self) -> int:
        return self.size()

    def __hash__(self) -> int:
        return self.view_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, View) and other.view_id == self.view_id

    def __bool__(self) -> bool:
        return self.view_id != 0

    def __repr__(self) -> str:
        return f"View({self.view_id!r})"

    # ------------------------------------------------------------- helpers
    def _read(self, fn: Callable[[ViewState], T], default: Any = None) -> T:
        app = _runtime.app()
        with app.lock:
            st = app.view(self.view_id)
            return fn(st) if st is not None else default

    def _text(self) -> str:
        return _runtime.app().buffer_text(self.view_id)

    def _write(self, fn: Callable[[ViewState], object]) -> None:
        app = _runtime.app()
        with app.lock:
            st = app.view(self.view_id)
            if st is not None:
                fn(st)

    # ------------------------------------------------------------ identity
    def id(self) -> int:
        return self.view_id

    def buffer_id(self) -> int:
        return self._read(lambda st: st.buffer.id, 0)

    def buffer(self) -> Buffer:
        return Buffer(self.buffer_id())

    def sheet_id(self) -> int:
        return self._read(lambda st: st.sheet_id, 0)

    def sheet(self) -> Sheet | None:
        sid = self.sheet_id()
        return make_sheet(sid) if sid else None

    def element(self) -> str | None:
        return self._read(lambda st: st.element)

    def is_valid(self) -> bool:
        return self._read(lambda st: True, False)

    def is_primary(self) -> bool:
        return self._read(lambda st: st.buffer.view_ids[0] == st.id, True)

    def window(self) -> Window | None:
        from ._api_window import Window

        app = _runtime.app()
        with app.lock:
            st = app.view(self.view_id)
            return Window(st.window_id) if st and app.window(st.window_id) else None

    def clones(self) -> list[View]:
        return self._read(lambda st: [View(v) for v in st.buffer.view_ids if v != st.id], [])

    def file_name(self) -> str | None:
        return self._read(lambda st: st.buffer.file_name)

    def close(self, on_close: Callable[[bool], None] = lambda did_close: None) -> bool:
        app = _runtime.app()
        closed = app.close_view(self.view_id)
        app.call_plugin("View.close on_close", on_close, closed)
        return closed

    def retarget(self, new_fname: str) -> None:
        import os

        def go(st: ViewState) -> None:
            st.buffer.file_name = os.path.abspath(new_fname)

        self._write(go)

    def name(self) -> str:
        return self._read(lambda st: st.buffer.name, "")

    def set_name(self, name: str) -> None:
        self._write(lambda st: setattr(st.buffer, "name", name))

    def reset_reference_document(self) -> None:
        self._write(lambda st: setattr(st.buffer, "reference_document", None))

    def set_reference_document(self, reference: str) -> None:
        """The text the buffer's incremental diff (gutter, inline diff, Revert
        Hunk) compares against; shared by the buffer's clones."""
        if not isinstance(reference, str):  # the C++ API takes only a str
            raise TypeError(f"set_reference_document() takes a str, not {type(reference).__name__}")
        self._write(lambda st: setattr(st.buffer, "reference_document", reference))

    # ----------------------------------------------------------- buffer state
    def is_loading(self) -> bool:
        return self._read(lambda st: st.buffer.loading, False)

    def is_dirty(self) -> bool:
        return _runtime.app().is_dirty(self.view_id)

    def is_read_only(self) -> bool:
        return self._read(lambda st: st.buffer.read_only, False)

    def set_read_only(self, read_only: bool) -> None:
        self._write(lambda st: setattr(st.buffer, "read_only", bool(read_only)))

    def is_scratch(self) -> bool:
        return self._read(lambda st: st.buffer.scratch, False)

    def set_scratch(self, scratch: bool) -> None:
        self._write(lambda st: setattr(st.buffer, "scratch", bool(scratch)))

    def encoding(self) -> str:
        return self._read(lambda st: st.buffer.encoding, "Undefined")

    def set_encoding(self, encoding_name: str) -> None:
        self._write(lambda st: setattr(st.buffer, "encoding", encoding_name))

    def line_endings(self) -> str:
        return self._read(lambda st: st.buffer.line_endings, "Unix")

    def set_line_endings(self, line_ending_name: str) -> None:
        name = {"windows": "Windows", "unix": "Unix", "cr": "CR"}.get(line_ending_name.lower())
        if name:
            self._write(lambda st: setattr(st.buffer, "line_endings", name))

    def size(self) -> int:
        return self._read(lambda st: len(st.buffer.rope), 0)

    # ----------------------------------------------------------------- edits
    def begin_edit(self, edit_token: int, cmd: str, args: Any = None) -> Edit:
        _runtime.app().begin_edit(self.view_id, edit_token)
        return Edit(edit_token)

    def end_edit(self, edit: Edit) -> None:
        _runtime.app().end_edit(self.view_id, edit.edit_token)

    def is_in_edit(self) -> bool:
        return _runtime.app().is_in_edit(self.view_id)

    def _token(self, edit: Edit) -> int:
        if not isinstance(edit, Edit):
            raise TypeError("an Edit object is required")
        return edit.edit_token

    def insert(self, edit: Edit, pt: int, text: str) -> int:
        return _runtime.app().modify(self.view_id, self._token(edit), pt, pt, text)

    def erase(self, edit: Edit, region: Region) -> None:
        _runtime.app().modify(self.view_id, self._token(edit), region.begin(), region.end(), "")

    def replace(self, edit: Edit, region: Region, text: str) -> None:
        _runtime.app().modify(self.view_id, self._token(edit), region.begin(), region.end(), text)

    def change_count(self) -> int:
        return self._read(lambda st: st.buffer.change_count, 0)

    def change_id(self) -> tuple[int, int, int]:
        return self._read(lambda st: (st.buffer.id, st.buffer.change_count, 0), (0, 0, 0))

    def transform_region_from(self, region: Region, change_id: tuple[int, int, int]) -> Region:
        def go(st: ViewState) -> Region:
            span = span_of(region)
            for count, pos, removed, inserted in st.buffer.change_log:
                if count > change_id[1]:
                    span = adjust_span(span, pos, removed, inserted)
            return Region(*span)

        return self._read(go, region)

    def run_command(self, cmd: str, args: Any = None) -> None:
        _runtime.app().run_text_command(self.view_id, cmd, args)

    # ------------------------------------------------------------------ text
    def sel(self) -> Selection:
        return self.selection

    def substr(self, x: Region | int) -> str:
        rope = self._read(lambda st: st.buffer.rope, EMPTY)
        if isinstance(x, Region):
            return rope.substr(x.begin(), x.end())
        return rope.substr(x, x + 1) if 0 <= x < len(rope) else "\x00"

    def find(self, pattern: str, start_pt: int, flags: int = 0) -> Region:
        return Region(*_text.find(self._text(), pattern, start_pt, flags))

    def find_all(
        self,
        pattern: str,
        flags: int = 0,
        fmt: str | None = None,
        extractions: list[str] | None = None,
        within: Region | list[Region] | None = None,
    ) -> list[Region]:
        spans = None if within is None else [span_of(r) for r in ([within] if isinstance(within, Region) else within)]
        spans = None if spans is None else [(min(s), max(s)) for s in spans]
        return [Region(a, b) for a, b in _text.find_all(self._text(), pattern, flags, fmt, extractions, spans)]

    def settings(self) -> Settings:
        if self.settings_object is None:
            self.settings_object = Settings(self._read(lambda st: st.settings_id, 0))
        return self.settings_object

    def meta_info(self, key: str, pt: int) -> Any:
        return None

    def _scope(self) -> str:
        return self._read(lambda st: st.buffer.syntax.scope, "text.plain")

    def extract_tokens_with_scopes(self, region: Region) -> list[tuple[Region, str]]:
        return [(Region(region.begin(), region.end()), self._scope() + " ")] if region.size() else []

    def extract_scope(self, pt: int) -> Region:
        return Region(0, self.size())

    def expand_to_scope(self, pt: int, selector: str) -> Region | None:
        return Region(0, self.size()) if self.match_selector(pt, selector) else None

    def scope_name(self, pt: int) -> str:
        syntax, text = self._read(lambda st: (st.buffer.syntax, st.buffer.text), (_syntax.PLAIN_TEXT, ""))
        return _syntax.scope_name(syntax, text, pt)

    def context_backtrace(self, pt: int) -> list[Any]:
        return []

    def match_selector(self, pt: int, selector: str) -> bool:
        return self.score_selector(pt, selector) > 0

    def score_selector(self, pt: int, selector: str) -> int:
        return _syntax.score_selector(self.scope_name(pt), selector)

    def find_by_selector(self, selector: str) -> list[Region]:
        return [Region(0, self.size())] if self.size() and self.match_selector(0, selector) else []

    def style(self) -> dict[str, str]:
        return {"background": "#303841", "foreground": "#d8dee9", "caret": "#f9ae58", "selection": "#4f5b66"}

    def style_for_scope(self, scope: str) -> dict[str, Any]:
        return {"foreground": "#d8dee9", "bold": False, "italic": False, "source_line": 0, "source_column": 0, "source_file": ""}

    def indented_region(self, pt: int) -> Region:
        return Region(pt)

    def indentation_level(self, pt: int) -> int:
        text = self._text()
        a, b = _text.line_bounds(text, pt)
        line = text[a:b]
        tab = int(self.settings().get("tab_size", 4) or 4)
        width = len(line.expandtabs(tab)) - len(line.lstrip().expandtabs(tab)) if line.strip() else 0
        return width // tab

    def has_non_empty_selection_region(self) -> bool:
        return self.selection.has_non_empty_region()

    def lines(self, region: Region) -> list[Region]:
        return [Region(a, b) for a, b in _text.lines_in(self._text(), region.begin(), region.end())]

    def split_by_newlines(self, region: Region) -> list[Region]:
        if region.empty():
            return [region]
        return [Region(max(a, region.begin()), min(b, region.end())) for a, b in _text.lines_in(self._text(), region.begin(), region.end())]

    def line(self, x: Region | int) -> Region:
        text = self._text()
        b, e = (x.begin(), x.end()) if isinstance(x, Region) else (x, x)
        return Region(_text.line_bounds(text, b)[0], _text.line_bounds(text, e)[1])

    def full_line(self, x: Region | int) -> Region:
        text = self._text()
        r = self.line(x)
        return Region(r.a, _text.full_line_end(text, r.b))

    def _separators(self, separators: str = "") -> str:
        return separators or str(self.settings().get("word_separators") or _text.DEFAULT_WORD_SEPARATORS)

    def word(self, x: Region | int) -> Region:
        b, e = (x.begin(), x.end()) if isinstance(x, Region) else (x, x)
        return Region(*_text.word_bounds(self._text(), b, e, self._separators()))

    def classify(self, pt: int) -> PointClassification:
        return PointClassification(_text.classify(self._text(), pt, self._separators()))

    def find_by_class(self, pt: int, forward: bool, classes: int, separators: str = "", sub_word_separators: str = "") -> int:
        return _text.find_by_class(self._text(), pt, forward, classes, self._separators(separators))

    def expand_by_class(self, x: Region | int, classes: int, separators: str = "", sub_word_separators: str = "") -> Region:
        b, e = (x.begin(), x.end()) if isinstance(x, Region) else (x, x)
        return Region(*_text.expand_by_class(self._text(), b, e, classes, self._separators(separators)))

    def rowcol(self, tp: int) -> tuple[int, int]:
        return _text.rowcol(self._text(), tp)

    def rowcol_utf8(self, tp: int) -> tuple[int, int]:
        return _text.rowcol_units(self._text(), tp, "utf-8")

    def rowcol_utf16(self, tp: int) -> tuple[int, int]:
        return _text.rowcol_units(self._text(), tp, "utf-16")

    def text_point(self, row: int, col: int, *, clamp_column: bool = False) -> int:
        return _text.text_point(self._text(), row, col, clamp_column)

    def text_point_utf8(self, row: int, col: int, *, clamp_column: bool = False) -> int:
        return _text.text_point(self._text(), row, col, clamp_column, "utf-8")

    def text_point_utf16(self, row: int, col: int, *, clamp_column: bool = False) -> int:
        return _text.text_point(self._text(), row, col, clamp_column, "utf-16")

    def utf8_code_units(self, tp: int | None = None) -> int:
        return _text.code_units(self._text(), tp, "utf-8")

    def utf16_code_units(self, tp: int | None = None) -> int:
        return _text.code_units(self._text(), tp, "utf-16")

    # -------------------------------------------------------------- viewport
    def visible_region(self) -> Region:
        y = self._read(lambda st: st.viewport[1], 0.0)
        return Region(*_viewport.visible_span(self._read(lambda st: st.buffer.rope, EMPTY), y))

    def show(self, location: Any, show_surrounds: bool = True, keep_to_left: bool = False, animate: bool = True) -> None:
        if isinstance(location, Selection):
            regions = list(location)
            if not regions:
                return
            location = regions[0]
        span = span_of(location)

        def scroll(st: ViewState) -> None:
            st.shown.append(("show", span))
            y = _viewport.y_to_show(st.buffer.rope, st.viewport[1], min(span), max(span))
            st.viewport = (st.viewport[0], y)

        self._write(scroll)

    def show_at_center(self, location: Region | int, animate: bool = True) -> None:
        span = span_of(location)

        def scroll(st: ViewState) -> None:
            st.shown.append(("show_at_center", span))
            st.viewport = (st.viewport[0], _viewport.y_to_center(st.buffer.rope, (span[0] + span[1]) // 2))

        self._write(scroll)

    def viewport_position(self) -> tuple[float, float]:
        return self._read(lambda st: st.viewport, (0.0, 0.0))

    def set_viewport_position(self, xy: tuple[float, float], animate: bool = True) -> None:
        self._write(lambda st: setattr(st, "viewport", (max(float(xy[0]), 0.0), max(float(xy[1]), 0.0))))

    def viewport_extent(self) -> tuple[float, float]:
        return _viewport.VIEWPORT_EXTENT

    def layout_extent(self) -> tuple[float, float]:
        lines = self._text().count("\n") + 1
        return (800.0, lines * self.line_height())

    def text_to_layout(self, tp: int) -> tuple[float, float]:
        row, col = self.rowcol(tp)
        return (col * self.em_width(), row * self.line_height())

    def text_to_window(self, tp: int) -> tuple[float, float]:
        return self.layout_to_window(self.text_to_layout(tp))

    def layout_to_text(self, xy: tuple[float, float]) -> int:
        return self.text_point(int(xy[1] // self.line_height()), int(xy[0] // self.em_width()), clamp_column=True)

    def layout_to_window(self, xy: tuple[float, float]) -> tuple[float, float]:
        vx, vy = self.viewport_position()
        return (xy[0] - vx, xy[1] - vy)

    def window_to_layout(self, xy: tuple[float, float]) -> tuple[float, float]:
        vx, vy = self.viewport_position()
        return (xy[0] + vx, xy[1] + vy)

    def window_to_text(self, xy: tuple[float, float]) -> int:
        return self.layout_to_text(self.window_to_layout(xy))

    def line_height(self) -> float:
        return _viewport.LINE_HEIGHT

    def em_width(self) -> float:
        return _viewport.EM_WIDTH

    # ---------------------------------------------------------------- folding
    def is_folded(self, region: Region) -> bool:
        return self._read(lambda st: any(a <= region.begin() and region.end() <= b for a, b in st.folded), False)

    def folded_regions(self) -> list[Region]:
        return self._read(lambda st: [Region(a, b) for a, b in st.folded], [])

    def fold(self, x: Region | list[Region]) -> bool:
        spans = [(r.begin(), r.end()) for r in ([x] if isinstance(x, Region) else x)]

        def go(st: ViewState) -> bool:
            new = [s for s in spans if s not in st.folded and s[0] != s[1]]
            st.folded.extend(new)
            return bool(new)

        return self._read(go, False)

    def unfold(self, x: Region | list[Region]) -> list[Region]:
        regions = [x] if isinstance(x, Region) else x

        def go(st: ViewState) -> list[Region]:
            hit = [s for s in st.folded if any(Region(*s).intersects(r) or Region(*s) in r for r in regions)]
            st.folded = [s for s in st.folded if s not in hit]
            return [Region(*s) for s in hit]

        return self._read(go, [])

    # ---------------------------------------------------------------- regions
    def add_regions(
        self,
        key: str,
        regions: list[Region],
        scope: str = "",
        icon: str = "",
        flags: RegionFlags = RegionFlags.NONE,
        annotations: list[str] = [],  # noqa: B006 - mirrors Sublime's signature
        annotation_color: str = "",
        on_navigate: Callable[[str], None] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        rec = RegionsRecord(key, [span_of(r) for r in regions], scope, icon, int(flags), list(annotations), annotation_color, on_navigate, on_close)
        self._write(lambda st: st.regions.__setitem__(key, rec))

    def get_regions(self, key: str) -> list[Region]:
        return self._read(lambda st: [Region(a, b) for a, b in st.regions[key].regions] if key in st.regions else [], [])

    def erase_regions(self, key: str) -> None:
        self._write(lambda st: st.regions.pop(key, None))

    def add_phantom(self, key: str, region: Region, content: str, layout: PhantomLayout, on_navigate: Callable[[str], None] | None = None) -> int:
        _minihtml.check(content, "add_phantom")
        pid = _runtime.app().new_id("phantom")
        rec = PhantomRecord(pid, key, span_of(region), content, int(layout), on_navigate)
        self._write(lambda st: st.phantoms.__setitem__(pid, rec))
        return pid

    def erase_phantoms(self, key: str) -> None:
        def go(st: ViewState) -> None:
            st.phantoms = {pid: p for pid, p in st.phantoms.items() if p.key != key}

        self._write(go)

    def erase_phantom_by_id(self, pid: int) -> None:
        self._write(lambda st: st.phantoms.pop(pid, None))

    def query_phantom(self, pid: int) -> list[Region]:
        return self._read(lambda st: [Region(*st.phantoms[pid].region)] if pid in st.phantoms else [], [])

    def query_phantoms(self, pids: list[int]) -> list[Region]:
        return self._read(lambda st: [Region(*st.phantoms[p].region) if p in st.phantoms else Region(-1, -1) for p in pids], [Region(-1, -1) for _ in pids])

    # ----------------------------------------------------------------- syntax
    def assign_syntax(self, syntax: str | Syntax) -> None:
        spec = syntax.path if isinstance(syntax, Syntax) else syntax
        info = _syntax.lookup(spec)
        if info is None:
            return
        app = _runtime.app()
        with app.lock:
            st = app.view(self.view_id)
            if st is None:
                return
            st.buffer.syntax = info
            sid = st.settings_id
        app.set_view_syntax(sid, info.path)

    def set_syntax_file(self, syntax_file: str) -> None:
        self.assign_syntax(syntax_file)

    def syntax(self) -> Syntax | None:
        return self._read(lambda st: _to_syntax(st.buffer.syntax))

    def _found_symbols(self, type: SymbolType, *, listed: bool) -> list[Any]:
        from . import _symbols

        text, syntax = self._read(lambda st: (st.buffer.text, st.buffer.syntax.name), ("", ""))
        found = _symbols.definitions(text, syntax) if listed else _symbols.indexed(text, syntax, type)
        return [SymbolRegion(s.name, Region(s.begin, s.end), syntax, s.type, s.kind) for s in found]

    def symbols(self) -> list[tuple[Region, str]]:
        return [(s.region, s.name) for s in self.symbol_regions()]

    def get_symbols(self) -> list[tuple[Region, str]]:
        return self.symbols()

    def indexed_symbols(self) -> list[tuple[Region, str]]:
        return [(s.region, s.name) for s in self.indexed_symbol_regions(SymbolType.DEFINITION)]

    def indexed_references(self) -> list[tuple[Region, str]]:
        return [(s.region, s.name) for s in self.indexed_symbol_regions(SymbolType.REFERENCE)]

    def symbol_regions(self) -> list[Any]:
        return self._found_symbols(SymbolType.DEFINITION, listed=True)

    def indexed_symbol_regions(self, type: SymbolType = SymbolType.ANY) -> list[Any]:
        return self._found_symbols(type, listed=False)

    # ----------------------------------------------------------------- status
    def set_status(self, key: str, value: str) -> None:
        def go(st: ViewState) -> None:
            if value:
                st.status[key] = value
            else:
                st.status.pop(key, None)

        self._write(go)

    def get_status(self, key: str) -> str:
        return self._read(lambda st: st.status.get(key, ""), "")

    def erase_status(self, key: str) -> None:
        self._write(lambda st: st.status.pop(key, None))

    def extract_completions(self, prefix: str, tp: int = -1) -> list[str]:
        import re

        words = re.findall(r"\w+", self._text())
        seen: dict[str, None] = {}
        for w in words:
            if w.startswith(prefix) and w != prefix:
                seen.setdefault(w)
        return list(seen)

    def find_all_results(self) -> list[tuple[str, int, int]]:
        return []

    def find_all_results_with_text(self) -> list[tuple[str, int, int, str]]:
        return []

    def command_history(self, index: int, modifying_only: bool = False) -> tuple[Any, Any, int]:
        return (None, None, 0)  # undo history is not modelled

    def overwrite_status(self) -> bool:
        return self._read(lambda st: st.overwrite, False)

    def set_overwrite_status(self, value: bool) -> None:
        self._write(lambda st: setattr(st, "overwrite", bool(value)))

    # ----------------------------------------------------------------- popups
    def show_popup_menu(self, items: list[str], on_done: Callable[[int], None], flags: int = 0) -> None:
        self._write(lambda st: setattr(st, "popup_menu", (list(items), on_done)))

    def show_popup(
        self,
        content: str,
        flags: int = 0,
        location: int = -1,
        max_width: float = 320,
        max_height: float = 240,
        on_navigate: Callable[[str], None] | None = None,
        on_hide: Callable[[], None] | None = None,
    ) -> None:
        _minihtml.check(content, "show_popup")
        old = self._read(lambda st: st.popup)
        rec = PopupRecord(content, int(flags), location, max_width, max_height, on_navigate, on_hide)
        self._write(lambda st: setattr(st, "popup", rec))
        if old is not None:
            _runtime.app().call_plugin("popup on_hide", old.on_hide)

    def update_popup(self, content: str) -> None:
        _minihtml.check(content, "update_popup")
        self._write(lambda st: setattr(st.popup, "content", content) if st.popup else None)

    def is_popup_visible(self) -> bool:
        return self._read(lambda st: st.popup is not None, False)

    def hide_popup(self) -> None:
        old = self._read(lambda st: st.popup)
        self._write(lambda st: setattr(st, "popup", None))
        if old is not None:
            _runtime.app().call_plugin("popup on_hide", old.on_hide)

    def is_auto_complete_visible(self) -> bool:
        from . import _auto_complete

        app = _runtime.app()
        with app.lock:
            return _auto_complete.is_visible(app, self.view_id)

    def preserve_auto_complete_on_focus_lost(self) -> None:
        pass

    def export_to_html(
        self,
        regions: Region | list[Region] | None = None,
        minihtml: bool = False,
        enclosing_tags: bool = False,
        font_size: bool = True,
        font_family: bool = True,
    ) -> str:
        text = self._text()
        if regions is None:
            body = text
        else:
            body = "".join(self.substr(r) for r in ([regions] if isinstance(regions, Region) else regions))
        escaped = html.escape(body).replace("\n", "<br>")
        return f"<div>{escaped}</div>" if enclosing_tags else escaped

    def clear_undo_stack(self) -> None:
        self._write(lambda st: st.buffer.undo_texts.clear())
