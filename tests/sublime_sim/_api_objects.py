"""Public value and handle types of ``sublime`` other than View and Window."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from . import _runtime
from ._constants import (
    KIND_AMBIGUOUS,
    KIND_SNIPPET,
    AutoCompleteFlags,
    CompletionFormat,
    CompletionItemFlags,
    PhantomLayout,
    SymbolType,
)
from ._region import Region, span_of

if TYPE_CHECKING:
    from ._api_view import View
    from ._api_window import Window


class Edit:
    """A grouping of buffer modifications, valid only while its TextCommand runs."""

    def __init__(self, token: int) -> None:
        self.edit_token = token

    def __repr__(self) -> str:
        return f"Edit({self.edit_token!r})"


class HistoricPosition:
    def __init__(self, pt: int, row: int, col: int, col_utf16: int, col_utf8: int) -> None:
        self.pt, self.row, self.col, self.col_utf16, self.col_utf8 = pt, row, col, col_utf16, col_utf8

    def __repr__(self) -> str:
        return f"HistoricPosition(pt={self.pt}, row={self.row}, col={self.col})"


class TextChange:
    def __init__(self, pa: HistoricPosition, pb: HistoricPosition, len_utf16: int, len_utf8: int, s: builtins.str) -> None:
        self.a, self.b, self.len_utf16, self.len_utf8, self.str = pa, pb, len_utf16, len_utf8, s

    def __repr__(self) -> str:
        return f"TextChange({self.a!r}, {self.b!r}, {self.str!r})"


class Selection:
    """The sorted, non-overlapping regions selected in a view."""

    def __init__(self, id: int) -> None:
        self.view_id = id

    def _spans(self) -> list[tuple[int, int]]:
        return _runtime.app().sel_get(self.view_id)

    def __iter__(self) -> Iterator[Region]:
        return iter([Region(a, b) for a, b in self._spans()])

    def __len__(self) -> int:
        return len(self._spans())

    def __getitem__(self, index: int) -> Region:
        spans = self._spans()
        if not -len(spans) <= index < len(spans):
            raise IndexError
        return Region(*spans[index])

    def __delitem__(self, index: int) -> None:
        if not -len(self) <= index < len(self):
            raise IndexError
        _runtime.app().sel_update(self.view_id, "delete", index=index)

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, Selection) and self._spans() == rhs._spans()

    __hash__ = None  # type: ignore[assignment]

    def __lt__(self, rhs: Selection | None) -> bool:
        return rhs is not None and list(self) < list(rhs)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return f"Selection({list(self)!r})"

    def is_valid(self) -> bool:
        return _runtime.app().view(self.view_id) is not None

    def clear(self) -> None:
        _runtime.app().sel_update(self.view_id, "clear")

    def add(self, x: Region | int) -> None:
        _runtime.app().sel_update(self.view_id, "add", span_of(x))

    def add_all(self, regions: Iterable[Region | int]) -> None:
        for r in regions:
            self.add(r)

    def subtract(self, region: Region) -> None:
        _runtime.app().sel_update(self.view_id, "subtract", span_of(region))

    def contains(self, region: Region) -> bool:
        return any(region in r for r in self)

    def has_empty_region(self) -> bool:
        return any(a == b for a, b in self._spans())

    def has_non_empty_region(self) -> bool:
        return any(a != b for a, b in self._spans())

    def has_multiple_non_empty_regions(self) -> bool:
        return sum(a != b for a, b in self._spans()) > 1


class Sheet:
    """A tab: holds a View, an image or HTML."""

    def __init__(self, id: int) -> None:
        self.sheet_id = id

    def __hash__(self) -> int:
        return self.sheet_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sheet) and other.sheet_id == self.sheet_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sheet_id!r})"

    def id(self) -> int:
        return self.sheet_id

    def window(self) -> Window | None:
        from ._api_window import Window

        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            return Window(sh.window_id) if sh and app.window(sh.window_id) else None

    def view(self) -> View | None:
        from ._api_view import View

        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            return View(sh.view_id) if sh and sh.view_id else None

    def file_name(self) -> str | None:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            if sh is None:
                return None
            st = app.view(sh.view_id)
            return st.buffer.file_name if st else sh.file_name

    def is_semi_transient(self) -> bool:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            return bool(sh and sh.semi_transient)

    def is_transient(self) -> bool:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            return bool(sh and sh.transient)

    def is_selected(self) -> bool:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            win = app.window(sh.window_id) if sh else None
            return bool(win and self.sheet_id in win.selected)

    def group(self) -> int | None:
        g, _ = _runtime.app().sheet_location(self.sheet_id)
        return g if g >= 0 else None

    def close(self, on_close: Callable[[bool], None] = lambda did_close: None) -> None:
        closed = _runtime.app().close_sheet(self.sheet_id)
        _runtime.app().call_plugin("Sheet.close on_close", on_close, closed)


class TextSheet(Sheet):
    def set_name(self, name: str) -> None:
        view = self.view()
        if view is not None:
            view.set_name(name)


class ImageSheet(Sheet):
    pass


class HtmlSheet(Sheet):
    def set_name(self, name: str) -> None:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            if sh is not None:
                sh.name = name

    def set_contents(self, contents: str) -> None:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(self.sheet_id)
            if sh is not None:
                sh.contents = contents


def make_sheet(sid: int) -> Sheet | None:
    app = _runtime.app()
    with app.lock:
        sh = app.sheet(sid)
        kind = sh.kind if sh else None
    return {"text": TextSheet, "html": HtmlSheet, "image": ImageSheet}[kind](sid) if kind else None


class Buffer:
    def __init__(self, id: int) -> None:
        self.buffer_id = id

    def __hash__(self) -> int:
        return self.buffer_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Buffer) and other.buffer_id == self.buffer_id

    def __repr__(self) -> str:
        return f"Buffer({self.buffer_id!r})"

    def id(self) -> int:
        return self.buffer_id

    def file_name(self) -> str | None:
        app = _runtime.app()
        with app.lock:
            buf = app.buffers.get(self.buffer_id)
            return buf.file_name if buf else None

    def views(self) -> list[View]:
        from ._api_view import View

        app = _runtime.app()
        with app.lock:
            buf = app.buffers.get(self.buffer_id)
            return [View(v) for v in buf.view_ids] if buf else []

    def primary_view(self) -> View:
        from ._api_view import View

        views = self.views()
        return views[0] if views else View(0)


class ContextStackFrame:
    def __init__(self, context_name: str, source_file: str, source_location: tuple[int, int]) -> None:
        self.context_name, self.source_file, self.source_location = context_name, source_file, source_location


class Phantom:
    """HTML shown in a view; added through a PhantomSet."""

    def __init__(
        self,
        region: Region,
        content: str,
        layout: PhantomLayout,
        on_navigate: Callable[[str], None] | None = None,
    ) -> None:
        self.region, self.content, self.layout, self.on_navigate = region, content, layout, on_navigate
        self.id: int | None = None

    def __eq__(self, rhs: object) -> bool:
        # The id is not compared: PhantomSet.update relies on that.
        return (
            isinstance(rhs, Phantom)
            and self.region == rhs.region
            and self.content == rhs.content
            and self.layout == rhs.layout
            and self.on_navigate == rhs.on_navigate
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Phantom({self.region!r}, {self.content!r}, {self.layout!r})"

    def to_tuple(self) -> tuple[tuple[int, int], str, PhantomLayout, Callable[[str], None] | None]:
        return (self.region.to_tuple(), self.content, self.layout, self.on_navigate)


class PhantomSet:
    """Keeps a view's phantoms for one key in step with a list of Phantom objects."""

    def __init__(self, view: View, key: str = "") -> None:
        self.view, self.key = view, key
        self.phantoms: list[Phantom] = []

    def __del__(self) -> None:
        try:
            for p in self.phantoms:
                if p.id is not None:
                    self.view.erase_phantom_by_id(p.id)
        except Exception:
            pass  # the host may be gone already

    def update(self, phantoms: Iterable[Phantom]) -> None:
        new_phantoms = list(phantoms)
        regions = self.view.query_phantoms([p.id for p in self.phantoms if p.id is not None])
        # Phantoms move with the text: compare against where they are now.
        current = [p for p in self.phantoms if p.id is not None]
        for p, r in zip(current, regions, strict=True):
            p.region = r
        kept: set[int] = set()
        for p in new_phantoms:
            match = next((old for old in current if old == p and old.id not in kept), None)
            if match is not None:
                p.id = match.id
                kept.add(match.id)  # type: ignore[arg-type]
            else:
                p.id = self.view.add_phantom(self.key, p.region, p.content, p.layout, p.on_navigate)
        for old in current:
            if old.id not in kept:
                self.view.erase_phantom_by_id(old.id)  # type: ignore[arg-type]
        self.phantoms = new_phantoms


class Html:
    def __init__(self, data: str) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"Html({self.data!r})"


class CompletionList:
    def __init__(self, completions: Sequence[Any] | None = None, flags: AutoCompleteFlags = AutoCompleteFlags.NONE) -> None:
        self.target: int | None = None
        self.completions = completions
        self.flags = flags

    def set_completions(self, completions: Sequence[Any], flags: AutoCompleteFlags = AutoCompleteFlags.NONE) -> None:
        self.completions, self.flags = completions, flags


class CompletionItem:
    def __init__(
        self,
        trigger: str,
        annotation: str = "",
        completion: str = "",
        completion_format: CompletionFormat = CompletionFormat.TEXT,
        kind: tuple[Any, str, str] = KIND_AMBIGUOUS,
        details: str = "",
        flags: CompletionItemFlags = CompletionItemFlags.NONE,
    ) -> None:
        self.trigger, self.annotation, self.completion = trigger, annotation, completion
        self.completion_format, self.kind, self.details, self.flags = completion_format, kind, details, flags

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, CompletionItem) and vars(self) == vars(rhs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CompletionItem({self.trigger!r}, {self.annotation!r}, {self.completion!r})"

    @classmethod
    def snippet_completion(cls, trigger: str, snippet: str, annotation: str = "", kind: tuple[Any, str, str] = KIND_SNIPPET, details: str = "") -> CompletionItem:
        return cls(trigger, annotation, snippet, CompletionFormat.SNIPPET, kind, details)

    @classmethod
    def command_completion(
        cls,
        trigger: str,
        command: str,
        args: Any = None,
        annotation: str = "",
        kind: tuple[Any, str, str] = KIND_AMBIGUOUS,
        details: str = "",
    ) -> CompletionItem:
        from .sublime import format_command

        return cls(trigger, annotation, format_command(command, args), CompletionFormat.COMMAND, kind, details)


class Syntax:
    def __init__(self, path: str, name: str, hidden: bool, scope: str) -> None:
        self.path, self.name, self.hidden, self.scope = path, name, hidden, scope

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Syntax) and self.path == other.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Syntax({self.path!r}, {self.name!r}, {self.hidden!r}, {self.scope!r})"


class QuickPanelItem:
    def __init__(self, trigger: str, details: str | list[str] | tuple[str] = "", annotation: str = "", kind: tuple[Any, str, str] = KIND_AMBIGUOUS) -> None:
        self.trigger, self.details, self.annotation, self.kind = trigger, details, annotation, kind

    def __repr__(self) -> str:
        return f"QuickPanelItem({self.trigger!r})"


class ListInputItem[T]:
    def __init__(self, text: str, value: T, details: str | list[str] | tuple[str] = "", annotation: str = "", kind: tuple[Any, str, str] = KIND_AMBIGUOUS) -> None:
        self.text, self.value, self.details, self.annotation, self.kind = text, value, details, annotation, kind

    def __repr__(self) -> str:
        return f"ListInputItem({self.text!r}, {self.value!r})"


class SymbolRegion:
    def __init__(self, name: str, region: Region, syntax: str, type: SymbolType, kind: tuple[Any, str, str]) -> None:
        self.name, self.region, self.syntax, self.type, self.kind = name, region, syntax, type, kind


class SymbolLocation:
    def __init__(self, path: str, display_name: str, row: int, col: int, syntax: str, type: SymbolType, kind: tuple[Any, str, str]) -> None:
        self.path, self.display_name, self.row, self.col = path, display_name, row, col
        self.syntax, self.type, self.kind = syntax, type, kind

    def path_encoded_position(self) -> str:
        return f"{self.path}:{self.row}:{self.col}"
