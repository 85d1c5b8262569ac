"""Symbols as Sublime's default syntaxes define them, for the symbol list of a
view and the project's symbol index.

Modelled for Python and JavaScript from their default packages' symbol
rules: definitions are the names scoped `entity.name.class` and
`entity.name.function` (Python `class` / `def` / `async def`; JavaScript
`class`, `function`, methods in a class body and functions assigned to a
`const`/`let`/`var`), with the kinds Sublime shows in Goto Symbol ("Class",
"Function"). References are calls (`name(`), which the default syntaxes
index as `meta.function-call`. Rows and columns of locations are 1-based, as
`SymbolLocation` reports them; regions are the symbol's name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ._constants import KindId, SymbolSource, SymbolType

CLASS = (KindId.TYPE, "c", "Class")
FUNCTION = (KindId.FUNCTION, "f", "Function")

_IDENT = r"[A-Za-z_$][\w$]*"
_RULES: dict[str, list[tuple[re.Pattern[str], tuple[KindId, str, str]]]] = {
    "Python": [
        (re.compile(rf"^[ \t]*class[ \t]+({_IDENT})", re.MULTILINE), CLASS),
        (re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+({_IDENT})", re.MULTILINE), FUNCTION),
    ],
    "JavaScript": [
        (re.compile(rf"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?class[ \t]+({_IDENT})", re.MULTILINE), CLASS),
        (re.compile(rf"^[ \t]*(?:export[ \t]+)?(?:async[ \t]+)?function\*?[ \t]+({_IDENT})", re.MULTILINE), FUNCTION),
        (re.compile(rf"^[ \t]*(?:export[ \t]+)?(?:const|let|var)[ \t]+({_IDENT})[ \t]*=[ \t]*(?:async[ \t]+)?(?:function\b|\([^)]*\)[ \t]*=>|{_IDENT}[ \t]*=>)", re.MULTILINE), FUNCTION),
        (re.compile(rf"^[ \t]+(?:static[ \t]+)?(?:async[ \t]+)?(?!(?:if|for|while|switch|catch|function|return)\b)({_IDENT})[ \t]*\([^)]*\)[ \t]*\{{", re.MULTILINE), FUNCTION),
    ],
}
_CALL = re.compile(rf"({_IDENT})[ \t]*\(")
_KEYWORDS = {"if", "for", "while", "switch", "catch", "function", "return", "def", "class", "print", "super"}


@dataclass(frozen=True)
class FoundSymbol:
    name: str
    begin: int
    end: int
    type: SymbolType
    kind: tuple[KindId, str, str]


def has_symbols(syntax_name: str) -> bool:
    return syntax_name in _RULES


def definitions(text: str, syntax_name: str) -> list[FoundSymbol]:
    found = [
        FoundSymbol(match.group(1), match.start(1), match.end(1), SymbolType.DEFINITION, kind)
        for pattern, kind in _RULES.get(syntax_name, [])
        for match in pattern.finditer(text)
    ]
    return sorted(found, key=lambda symbol: symbol.begin)


def references(text: str, syntax_name: str) -> list[FoundSymbol]:
    if syntax_name not in _RULES:
        return []
    defined = {symbol.begin for symbol in definitions(text, syntax_name)}
    return [
        FoundSymbol(match.group(1), match.start(1), match.end(1), SymbolType.REFERENCE, FUNCTION)
        for match in _CALL.finditer(text)
        if match.start(1) not in defined and match.group(1) not in _KEYWORDS
    ]


def indexed(text: str, syntax_name: str, type: SymbolType) -> list[FoundSymbol]:
    found: list[FoundSymbol] = []
    if type in (SymbolType.ANY, SymbolType.DEFINITION):
        found += definitions(text, syntax_name)
    if type in (SymbolType.ANY, SymbolType.REFERENCE):
        found += references(text, syntax_name)
    return sorted(found, key=lambda symbol: symbol.begin)


def project_files(folders: list[str]) -> list[str]:
    """Files under the folders whose syntax has symbols (what Sublime indexes)."""
    from ._syntax import for_path

    files = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            files += [os.path.join(root, n) for n in sorted(names) if has_symbols(for_path(n).name)]
    return files


def wanted(source: SymbolSource, is_open: bool) -> bool:
    return source == SymbolSource.ANY or (source == SymbolSource.OPEN_FILES) == is_open
