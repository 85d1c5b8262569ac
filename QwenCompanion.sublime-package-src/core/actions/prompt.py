"""What the model gets for an action: the selection and the visible text with
their places, the file's language, the answer language and the user's words,
put into the action's prompt template.

Places are 1-based lines and characters, characters counted in code points
(Python's `str` indices), not the UTF-16 units LSP uses; the prompt says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from string import Template

from ..files.text_positions import Position, position_of

ACTIONS = {
    "explain": "Explain Selection",
    "docstring": "Add Docstring",
    "optimize": "Optimize Selection",
    "fix": "Fix Selection",
    "ask": "Ask About Selection",
    "unit_tests": "Generate Unit Tests",
    "unit_tests_code": "Generate Unit Tests",
}
BACKTICKS = re.compile("`+")
PROPOSING = frozenset({"docstring", "optimize", "fix"})  # answers end with a replacement
ANSWER_LANGUAGES = {
    "en": "Answer in English.",
    "zh": "请用简体中文回答（代码、标识符和代码注释保持原样）。",
}


@dataclass(frozen=True)
class Span:
    text: str
    start: Position
    end: Position  # just past the last character

    @property
    def place(self) -> str:
        return f"{self.start}-{self.end}"


@dataclass(frozen=True)
class ActionContext:
    action: str  # a key of ACTIONS
    path: str  # the file's path, or the tab's name for an unsaved buffer
    language: str  # the syntax's name
    selection: Span
    visible: Span
    answer_language: str = "en"  # a key of ANSWER_LANGUAGES
    question: str = ""  # the user's words (Ask About Selection)
    took: str = ""  # what was taken when nothing was selected, e.g. "function area"
    # Generate Unit Tests: the whole file, the code under test and its symbols
    # ("Method add 3:5-4:20" lines), and the cases the user chose.
    whole: str = ""
    symbols: str = ""
    cases: tuple[str, ...] = ()


def span_of(text: str, begin: int, end: int) -> Span:
    """`text[begin:end]` with its 1-based places."""
    return Span(text[begin:end], position_of(text, begin), position_of(text, end))


def render(template: str, context_template: str, context: ActionContext) -> str:
    """The action's template with `$name` fields filled, `$context` being the
    context template filled (unknown fields stay as written)."""
    fields = {
        "action": ACTIONS[context.action],
        "path": context.path,
        "language": context.language,
        "selection": context.selection.text,
        "selection_place": context.selection.place,
        "visible": context.visible.text,
        "visible_place": context.visible.place,
        "answer_language": ANSWER_LANGUAGES.get(context.answer_language, ANSWER_LANGUAGES["en"]),
        "question": context.question,
        "took": f" (nothing was selected: this is {context.took})" if context.took else "",
        "fence": fence_for(context.selection.text, context.visible.text, context.whole),
        "whole": context.whole,
        "symbols": context.symbols or "(none)",
        "cases": "\n".join(f"- {case}" for case in context.cases),
    }
    fields["context"] = Template(context_template).safe_substitute(fields).strip()
    return Template(template).safe_substitute(fields)


def fence_for(*texts: str) -> str:
    """A code fence longer than any backtick run in `texts`, so quoted code
    that holds fences of its own cannot end the quote."""
    longest = max((len(run) for text in texts for run in BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)
