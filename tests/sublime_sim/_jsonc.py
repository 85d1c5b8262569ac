"""JSON as Sublime reads it: ``//`` and ``/* */`` comments and trailing commas.

Sublime's settings, keymaps and project files are "sublime JSON"; plain
``json.loads`` rejects them, so they are first reduced to strict JSON here.
"""

from __future__ import annotations

import json
from typing import Any


def _strip(text: str) -> str:
    """Drop comments and trailing commas, leaving string literals untouched."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated comment")
            i = j + 2
        elif c == ",":
            # A comma followed (after blanks/comments) by a closer is trailing.
            j = i + 1
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    k = text.find("\n", j)
                    j = n if k < 0 else k
                elif text.startswith("/*", j):
                    k = text.find("*/", j + 2)
                    j = n if k < 0 else k + 2
                else:
                    break
            if j >= n or text[j] not in "]}":
                out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def decode_value(data: str) -> Any:
    """Decode sublime JSON; raises ``ValueError`` like ``sublime.decode_value``."""
    stripped = _strip(data)
    if not stripped.strip():
        raise ValueError("empty JSON document")
    return json.loads(stripped)


def decode_file_text(data: str) -> Any:
    """Like :func:`decode_value` but an empty file reads as ``{}`` (settings)."""
    stripped = _strip(data.lstrip("\ufeff"))
    return json.loads(stripped) if stripped.strip() else {}


def encode_value(value: Any, pretty: bool = False) -> str:
    if pretty:
        return json.dumps(value, indent="\t", ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
