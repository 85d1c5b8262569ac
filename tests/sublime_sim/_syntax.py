"""Scope selectors and a small table of syntaxes.

A package's ``.sublime-syntax`` is loaded as Sublime does (``_syntax_engine``:
``extends`` and its version rule); one that Sublime would refuse shows an
error and is not given to the view. Points of a view in such a syntax, or in
Markdown (its structure in ``_markdown_syntax``), have the scopes the engine
lexes; in any other syntax every point has the syntax's base scope.

Selector scoring handles alternatives (``,`` ``|``), descendant paths,
exclusions (`` - ``) and dotted prefixes, enough for ``is_applicable`` checks
and key-binding ``selector`` contexts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import _markdown_syntax, _syntax_engine, _watchdog


@dataclass(frozen=True)
class SyntaxInfo:
    path: str
    name: str
    scope: str
    extensions: tuple[str, ...]
    hidden: bool = False


SYNTAXES: tuple[SyntaxInfo, ...] = (
    SyntaxInfo("Packages/Text/Plain text.tmLanguage", "Plain Text", "text.plain", ("txt",)),
    SyntaxInfo("Packages/Python/Python.sublime-syntax", "Python", "source.python", ("py", "pyi", "pyw")),
    SyntaxInfo("Packages/Markdown/Markdown.sublime-syntax", "Markdown", "text.html.markdown", ("md", "markdown")),
    SyntaxInfo("Packages/JSON/JSON.sublime-syntax", "JSON", "source.json", ("json", "sublime-settings", "sublime-keymap", "sublime-project", "sublime-commands", "sublime-menu")),
    SyntaxInfo("Packages/JavaScript/JavaScript.sublime-syntax", "JavaScript", "source.js", ("js", "mjs", "cjs")),
    SyntaxInfo("Packages/JavaScript/TypeScript.sublime-syntax", "TypeScript", "source.ts", ("ts",)),
    SyntaxInfo("Packages/ShellScript/Bash.sublime-syntax", "Bash", "source.shell.bash", ("sh", "bash")),
    SyntaxInfo("Packages/YAML/YAML.sublime-syntax", "YAML", "source.yaml", ("yaml", "yml")),
    SyntaxInfo("Packages/HTML/HTML.sublime-syntax", "HTML", "text.html.basic", ("html", "htm")),
    SyntaxInfo("Packages/Diff/Diff.sublime-syntax", "Diff", "source.diff", ("diff", "patch")),
)

PLAIN_TEXT = SYNTAXES[0]


def for_path(path: str | None) -> SyntaxInfo:
    if not path:
        return PLAIN_TEXT
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    return next((s for s in SYNTAXES if ext in s.extensions), PLAIN_TEXT)


def lookup(spec: str) -> SyntaxInfo | None:
    """Resolve a packages path, a ``scope:`` specifier or a bare name; a
    ``.sublime-syntax`` resource of an installed package is read from its
    header (``name``, ``scope``, ``hidden``, ``file_extensions``)."""
    if spec.startswith("scope:"):
        scope = spec[len("scope:") :]
        return next((s for s in SYNTAXES if s.scope == scope), None)
    known = next((s for s in SYNTAXES if s.path == spec or s.name == spec), None)
    if known is None and spec.endswith(".sublime-syntax"):
        return package_syntax(spec)
    return known


def _read_resource(path: str) -> str | None:
    from . import _runtime

    app = _runtime.maybe_app()
    if app is None:
        return None
    try:
        return app.resource_file(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def package_syntax(path: str) -> SyntaxInfo | None:
    from . import _runtime

    text = _read_resource(path)
    if text is None:
        return None
    info = parse_syntax_header(path, text)
    if info is None:
        return None
    try:
        with _watchdog.sublimes_own_work():
            _syntax_engine.load(path, _read_resource)
    except _syntax_engine.SyntaxLoadError as exc:
        app = _runtime.app()
        message = f'Error loading syntax file "{path}": {exc}'
        app.log(message)
        app.record_dialog("error", message)
        return None
    return info


_LEXERS: dict[tuple[str, str | None], _syntax_engine.Lexer] = {}


def scope_name(info: SyntaxInfo, text: str, pt: int) -> str:
    """The scopes at ``pt`` as Sublime's ``view.scope_name`` gives them."""
    source = None if info.path == _markdown_syntax.PATH else _read_resource(info.path)
    if source is None and info.path != _markdown_syntax.PATH:
        return info.scope + " "  # a syntax of the table without a definition here
    key = (info.path, source)
    with _watchdog.sublimes_own_work():  # Sublime highlights on threads of its own
        lexer = _LEXERS.get(key)
        if lexer is None:
            try:
                lexer = _syntax_engine.Lexer(_syntax_engine.load(info.path, _read_resource))
            except _syntax_engine.SyntaxLoadError:
                return info.scope + " "
            _LEXERS[key] = lexer
        return lexer.scope_at(text, pt)


def parse_syntax_header(path: str, text: str) -> SyntaxInfo | None:
    """The top-level keys Sublime shows for a syntax (no YAML library: the
    header keys are plain scalars or a flow list)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line[0].isspace() and ":" in line and not line.startswith(("#", "%", "-")):
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip().strip("'\"")
    if "scope" not in fields:
        return None
    name = fields.get("name") or os.path.splitext(os.path.basename(path))[0]
    extensions = tuple(e.strip().strip("'\"") for e in fields.get("file_extensions", "").strip("[]").split(",") if e.strip())
    return SyntaxInfo(path, name, fields["scope"], extensions, fields.get("hidden", "").lower() == "true")


def _atom_score(selector_atom: str, scope_atom: str) -> int:
    sel = selector_atom.split(".")
    scope = scope_atom.split(".")
    if len(sel) > len(scope) or scope[: len(sel)] != sel:
        return 0
    return len(sel)


def _path_score(path: list[str], scope_atoms: list[str]) -> int:
    """Match selector atoms as an ordered subsequence of the scope's atoms."""
    score, i = 0, 0
    for atom in path:
        while i < len(scope_atoms) and not _atom_score(atom, scope_atoms[i]):
            i += 1
        if i == len(scope_atoms):
            return 0
        # Deeper matches weigh more, like Sublime's scoring.
        score += _atom_score(atom, scope_atoms[i]) << (3 * i)
        i += 1
    return score


def score_selector(scope_name: str, selector: str) -> int:
    atoms = scope_name.split()
    best = 0
    for alternative in selector.replace("|", ",").replace("(", " ").replace(")", " ").split(","):
        parts = [p.split() for p in alternative.split(" - ")]
        include, excludes = parts[0], parts[1:]
        score = _path_score(include, atoms) if include else 1
        if score and not any(ex and _path_score(ex, atoms) for ex in excludes):
            best = max(best, score)
    return best
