"""What an action is about, read from the view on the main thread: the
selection (or the function or class around the caret), the visible text,
the file's path and language."""

from __future__ import annotations

from dataclasses import replace

import sublime

from ...core.actions.prompt import ActionContext, span_of
from ...core.files.text_positions import Lines
from ...core.ide_tools.symbols import SymbolNode, symbol_tree
from ..editor import view_text
from ..ide_tools.knowledge import flat_symbols

NOTHING_SELECTED = "Select some code first: there is no function or class around the cursor."


class NoSelection(Exception):
    pass


def action_context(view: sublime.View, action: str, answer_language: str, question: str = "") -> ActionContext:
    """The action's context; `NoSelection` when there is nothing to act on."""
    text = view_text(view)
    selected = next((region for region in view.sel() if not region.empty()), None)
    # Sublime's symbols, as a tree, only when something needs them (read once).
    lines, tree = Lines(""), []
    if selected is None or action == "unit_tests":
        lines, tree = Lines(text), symbol_tree(text, flat_symbols(view.symbol_regions()))
    took = ""
    if selected is not None:
        begin, end = selected.begin(), selected.end()
    else:
        caret = view.sel()[0].b if len(view.sel()) else 0
        found = _enclosing(lines, tree, caret)
        if found is None:
            raise NoSelection(NOTHING_SELECTED)
        node, begin, end = found
        took = f"the {node.kind.lower()} {node.name} around the cursor"
    visible = view.visible_region()
    syntax = view.syntax()
    context = ActionContext(
        action=action,
        path=view.file_name() or view.name() or "untitled",
        language=syntax.name if syntax is not None else "Plain Text",
        selection=span_of(text, begin, end),
        visible=span_of(text, visible.begin(), visible.end()),
        answer_language=answer_language,
        question=question,
        took=took,
    )
    if action == "unit_tests":
        context = replace(context, whole=text, symbols=_symbols_within(lines, tree, begin, end))
    return context


def _symbols_within(lines: Lines, tree: list[SymbolNode], begin: int, end: int) -> str:
    """The definitions inside `begin`…`end`, one "Kind name place" line each."""
    first, last = lines.position(begin).line, lines.position(max(begin, end - 1)).line
    found: list[str] = []

    def walk(nodes: list[SymbolNode], depth: int) -> None:
        for node in nodes:
            if first <= node.selection.start.line <= last:
                start, stop = node.range.start, node.range.end
                found.append(f"{'  ' * depth}{node.kind} {node.name} "
                             f"{start.line}:{start.character}-{stop.line}:{stop.character}")
            walk(node.children, depth + 1)

    walk(tree, 0)
    return "\n".join(found)


def _enclosing(lines: Lines, tree: list[SymbolNode], caret: int) -> tuple[SymbolNode, int, int] | None:
    """The innermost definition whose lines hold the caret, with its offsets
    (from the start of its first line to the end of its last)."""
    row = lines.position(caret).line
    best: SymbolNode | None = None
    nodes = tree
    while nodes:
        inside = [n for n in nodes if n.range.start.line <= row <= n.range.end.line]
        if not inside:
            break
        best = inside[0]
        nodes = best.children
    if best is None:
        return None
    begin = lines.starts[best.range.start.line - 1]
    end = lines.offset(best.range.end)
    return best, begin, end
