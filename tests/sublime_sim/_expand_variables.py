"""`sublime.expand_variables` as Sublime Text does it (its snippet syntax).

What real Sublime does, and this does too:
- `$name` and `${name}` become the variable's value, and a name the
  dictionary lacks becomes "" (the reason Terminus loses a shell's `$HOME`,
  sublime_text#5303; SublimeLinter escapes `$` before expanding);
- `${name:default}` becomes `default` (itself expanded) when the variable
  is missing or empty (build systems' `${project_path:${folder}}`);
- `${name/regex/format/options}` is the value with `regex` replaced by
  `format` (`$1`, `${1}` its groups; option `g` every match, `i` any case);
- a backslash escapes only a `$` or another backslash (`\\$` is `$`, `\\\\`
  one backslash; sublime_text#1878 measured `len(expand("\\\\" * n))` =
  ceil(n / 2)), and inside `${…}` also `}` and `/`; before any other
  character it stays;
- a `$` that starts neither a name nor a closed `${…}` stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAME = re.compile(r"\w+")


def expand(text: str, variables: Mapping[str, str], escapable: str = "\\$") -> str:
    """`text` with its variables expanded; a backslash escapes the characters in `escapable`."""
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        following = text[position + 1] if position + 1 < len(text) else ""
        if char == "\\" and following and following in escapable:
            out.append(following)
            position += 2
            continue
        if char == "$":
            name = _NAME.match(text, position + 1)
            if name is not None:
                out.append(str(variables.get(name.group(), "")))
                position = name.end()
                continue
            if following == "{":
                end = _closing_brace(text, position + 2)
                field = _field(text[position + 2:end], variables) if end is not None else None
                if end is not None and field is not None:
                    out.append(field)
                    position = end + 1
                    continue
        out.append(char)
        position += 1
    return "".join(out)


def _closing_brace(text: str, start: int) -> int | None:
    """Where the `${` that opened before `start` closes (nested `${…}` and `\\}` passed over)."""
    depth = 0
    position = start
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == "$" and text.startswith("{", position + 1):
            depth += 1
            position += 2
            continue
        if char == "}":
            if depth == 0:
                return position
            depth -= 1
        position += 1
    return None


def _field(body: str, variables: Mapping[str, str]) -> str | None:
    """A `${…}`'s text (None: not a field, left as written)."""
    name = _NAME.match(body)
    if name is None:
        return None
    value = str(variables.get(name.group(), ""))
    rest = body[name.end():]
    if not rest:
        return value
    if rest[0] == ":":
        return value or expand(rest[1:], variables, "\\$}")
    if rest[0] == "/":
        parts = _split_unescaped(rest[1:], "/")
        if len(parts) != 3:
            return None
        pattern, template, options = parts
        flags = re.IGNORECASE if "i" in options else 0
        try:
            return re.sub(pattern, _python_template(template), value, count=0 if "g" in options else 1, flags=flags)
        except re.error:
            return None
    return None


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts = [""]
    position = 0
    while position < len(text):
        char = text[position]
        if char == "\\" and text.startswith(separator, position + 1):
            parts[-1] += separator
            position += 2
            continue
        if char == separator:
            parts.append("")
        else:
            parts[-1] += char
        position += 1
    return parts


def _python_template(template: str) -> str:
    """A format (Boost's, as snippets use it) as `re.sub`'s template: `$1` and
    `${1}` a group, `\\x` the character x, everything else literal."""
    out: list[str] = []
    for piece in re.split(r"(\$\{\d+\}|\$\d+|\\.)", template):
        if re.fullmatch(r"\$\{\d+\}|\$\d+", piece):
            out.append(f"\\g<{piece.strip('${}')}>")
        else:
            literal = piece[1] if len(piece) == 2 and piece[0] == "\\" else piece
            out.append(literal.replace("\\", "\\\\"))
    return "".join(out)
