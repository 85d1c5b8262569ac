"""A small ``.sublime-syntax`` engine: loading with inheritance, and scopes.

Loading follows Sublime's rules for ``extends``: the parent is loaded first
and a child of another ``version`` (1 when absent) is refused with Sublime's
own message; variables merge (the child's win); a child context replaces the
parent's of the same name unless it starts with ``meta_prepend: true`` (its
rules go first) or ``meta_append: true`` (after).

Lexing follows Sublime's matching: text is matched a line at a time from the
context on top of the stack; of all the rules (``include`` flattened), the
one matching leftmost wins, the earlier rule on a tie. ``push``, ``set`` and
``pop`` move between contexts; ``meta_scope`` covers a context's text with the
match that pushed it and the one that pops it, ``meta_content_scope`` only the
text between. Enough of Sublime for a test to ask the scope at a point; not
a complete engine (no ``branch``, ``embed`` or ``prototype``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import _markdown_syntax

MIXED_VERSIONS = "syntax inheritance does not allow for mixed versions"
Rule = dict[str, Any]


class SyntaxLoadError(Exception):
    """Sublime refuses the syntax: it shows an error and the view does not get it."""


@dataclass
class Definition:
    path: str
    scope: str
    version: int
    variables: dict[str, str]
    contexts: dict[str, list[Rule]]
    _compiled: dict[str, re.Pattern[str]] = field(default_factory=dict)

    def pattern(self, source: str) -> re.Pattern[str]:
        compiled = self._compiled.get(source)
        if compiled is None:
            compiled = re.compile(self._expand(source), re.MULTILINE)
            self._compiled[source] = compiled
        return compiled

    def _expand(self, source: str, depth: int = 0) -> str:
        if depth > 10:
            raise SyntaxLoadError(f"variables nest too deeply in {self.path}")
        expanded = re.sub(r"\{\{(\w+)\}\}", lambda m: self.variables.get(m[1], ""), source)
        return expanded if expanded == source else self._expand(expanded, depth + 1)


def _read(path: str, text: str | None) -> dict[str, Any]:
    if path == _markdown_syntax.PATH and text is None:
        return _markdown_syntax.MARKDOWN
    if text is None:
        raise SyntaxLoadError(f"Unable to read {path}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SyntaxLoadError(f"Error parsing {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), dict):
        raise SyntaxLoadError(f"{path} has no contexts")
    return data


def _merge_context(parent: list[Rule], child: list[Rule]) -> list[Rule]:
    flags = {k for rule in child for k in rule if k in ("meta_prepend", "meta_append") and rule[k]}
    own = [rule for rule in child if not ({"meta_prepend", "meta_append"} & rule.keys())]
    if "meta_prepend" in flags:
        return own + parent
    if "meta_append" in flags:
        return parent + own
    return own


def load(path: str, read_resource: Any) -> Definition:
    """The resolved definition of ``path``; ``read_resource(path)`` gives a
    package resource's text or None (Sublime's Markdown is built in here)."""
    data = _read(path, None if path == _markdown_syntax.PATH else read_resource(path))
    version = int(data.get("version", 1))
    variables = {str(k): str(v) for k, v in (data.get("variables") or {}).items()}
    contexts: dict[str, list[Rule]] = {str(k): list(v or []) for k, v in data["contexts"].items()}
    parent_path = data.get("extends")
    if isinstance(parent_path, str):
        parent = load(parent_path, read_resource)
        if parent.version != version:
            raise SyntaxLoadError(MIXED_VERSIONS)
        variables = {**parent.variables, **variables}
        merged = dict(parent.contexts)
        for name, rules in contexts.items():
            merged[name] = _merge_context(parent.contexts.get(name, []), rules)
        contexts = merged
    if "main" not in contexts:
        raise SyntaxLoadError(f"{path} has no main context")
    return Definition(path, str(data.get("scope", "")), version, variables, contexts)


@dataclass
class _Frame:
    context: str
    meta_scope: str
    meta_content_scope: str


def _meta(rules: list[Rule], key: str) -> str:
    return " ".join(str(rule[key]) for rule in rules if key in rule)


class Lexer:
    def __init__(self, definition: Definition) -> None:
        self.d = definition
        self._flat: dict[str, list[Rule]] = {}

    def rules(self, context: str) -> list[Rule]:
        if context not in self._flat:
            self._flat[context] = self._flatten(context, set())
        return self._flat[context]

    def _flatten(self, context: str, seen: set[str]) -> list[Rule]:
        if context in seen:
            return []
        seen = seen | {context}
        out: list[Rule] = []
        for rule in self.d.contexts.get(context, []):
            if "include" in rule:
                target = str(rule["include"])
                if not target.startswith("scope:") and "/" not in target:
                    out.extend(self._flatten(target, seen))
            elif "match" in rule:
                out.append(rule)
        return out

    def frame(self, context: str) -> _Frame:
        rules = self.d.contexts.get(context, [])
        return _Frame(context, _meta(rules, "meta_scope"), _meta(rules, "meta_content_scope"))

    def _targets(self, spec: Any) -> list[str]:
        names = spec if isinstance(spec, list) else [spec]
        return [str(n) for n in names if isinstance(n, str)]

    def tokens(self, text: str, stop: int | None = None) -> list[tuple[int, int, str]]:
        """(begin, end, scopes) for every span of ``text`` (up to the line of
        ``stop`` when given); captures as extra, later spans."""
        stack = [self.frame("main")]
        end_of_text = len(text) if stop is None else min(len(text), stop + 1)
        # Stacks seen at `pos` after a zero-width change of context: meeting one
        # again is a loop, which Sublime breaks by moving on one character.
        stacks_here: set[tuple[str, ...]] = set()
        out: list[tuple[int, int, str]] = []

        def scopes(frames: list[_Frame], content: bool = True) -> list[str]:
            parts = [self.d.scope]
            for i, f in enumerate(frames):
                parts.append(f.meta_scope)
                if content or i < len(frames) - 1:
                    parts.append(f.meta_content_scope)
            return [p for p in parts if p]

        pos, steps = 0, 0
        while pos < end_of_text and steps < 100_000:
            steps += 1
            line_end = text.find("\n", pos)
            line_end = len(text) if line_end < 0 else line_end + 1
            best: tuple[re.Match[str], Rule] | None = None
            for rule in self.rules(stack[-1].context):
                m = self.d.pattern(str(rule["match"])).search(text, pos, line_end)
                if m is not None and (best is None or m.start() < best[0].start()):
                    best = (m, rule)
            if best is None:
                out.append((pos, line_end, " ".join(scopes(stack))))
                pos = line_end
                stacks_here.clear()
                continue
            m, rule = best
            if m.start() > pos:
                out.append((pos, m.start(), " ".join(scopes(stack))))
                pos = m.start()
                stacks_here.clear()
            before = list(stack)
            if "pop" in rule:
                count = 1 if rule["pop"] is True else int(rule["pop"])
                matched = scopes(stack, content=False)
                del stack[max(1, len(stack) - count) :]
            elif "set" in rule:
                stack[-1:] = [self.frame(n) for n in self._targets(rule["set"])]
                matched = scopes(stack, content=False)
            elif "push" in rule:
                stack.extend(self.frame(n) for n in self._targets(rule["push"]))
                matched = scopes(stack, content=False)
            else:
                matched = scopes(stack)
            own = [str(rule["scope"])] if rule.get("scope") else []
            if m.end() > m.start():
                out.append((m.start(), m.end(), " ".join(matched + own)))
                for group, capture in (rule.get("captures") or {}).items():
                    if int(group) <= (m.re.groups or 0) and m.start(int(group)) < m.end(int(group)):
                        out.append((m.start(int(group)), m.end(int(group)), " ".join(matched + own + [str(capture)])))
                pos = m.end()
                stacks_here.clear()
            else:
                contexts = tuple(f.context for f in stack)
                if contexts == tuple(f.context for f in before) or contexts in stacks_here:
                    out.append((pos, pos + 1, " ".join(scopes(stack))))
                    pos += 1
                    stacks_here.clear()
                else:
                    stacks_here.add(contexts)
        return out

    def scope_at(self, text: str, pt: int) -> str:
        found = self.d.scope
        for begin, end, scope in self.tokens(text, pt):
            if begin <= pt < end:
                found = scope  # a capture comes after its match: the innermost wins
        return found + " "
