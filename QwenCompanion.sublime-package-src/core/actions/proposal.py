"""What an action's answer proposes: the replacement a proposing action ends
with (its last fenced code block: ``` or ~~~, any length, with or without a
language tag), the test cases Generate Unit Tests recommends, and where the
tests go."""

from __future__ import annotations

import json
import os
import re

OPENING = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[^`\n]*$")


def last_code_block(answer: str) -> str | None:
    """The text of the answer's last complete fenced code block; None if none."""
    lines = answer.split("\n")
    found: str | None = None
    index = 0
    while index < len(lines):
        opening = OPENING.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening.group("fence")
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        for end in range(index + 1, len(lines)):
            if closing.match(lines[end]):
                found = "\n".join(lines[index + 1 : end])
                index = end + 1
                break
        else:
            break  # an unclosed fence runs to the end: not a complete block
    return found


def replacement_for(selection: str, block: str) -> str:
    """`block` shaped like the selection it replaces: the selection's trailing
    newline kept or left off the same way."""
    if selection.endswith("\n") and not block.endswith("\n"):
        return block + "\n"
    if not selection.endswith("\n") and block.endswith("\n"):
        return block.rstrip("\n")
    return block


def test_cases(answer: str) -> list[str]:
    """The recommended cases: the last code block's JSON array (of strings,
    or of objects whose first string value is taken), else the answer's
    bulleted or numbered lines."""
    block = last_code_block(answer)
    if block is not None:
        try:
            parsed = json.loads(block)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            cases = [_case_text(item) for item in parsed]
            return [case for case in cases if case]
    bullets = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+?)\s*$")
    return [m.group(1) for line in answer.split("\n") if (m := bullets.match(line))]


def _case_text(item: object) -> str:
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        texts = [str(value).strip() for value in item.values() if isinstance(value, str) and value.strip()]
        return " — ".join(texts[:2])
    return ""


def test_file_for(source: str, folders: list[str]) -> str:
    """Where the tests of `source` go, by the language's usual layout:
    Python `tests/test_<module>.py` in the project's folder, JavaScript and
    TypeScript `<name>.test.<ext>` beside it, Go `<name>_test.go` beside it,
    others `tests/test_<name><ext>` in the project's folder."""
    directory, name = os.path.split(source)
    stem, extension = os.path.splitext(name)
    root = next((f for f in folders if source.startswith(f.rstrip("/\\") + os.sep)), directory)
    if extension in (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs"):
        return os.path.join(directory, f"{stem}.test{extension}")
    if extension == ".go":
        return os.path.join(directory, f"{stem}_test.go")
    return os.path.join(root, "tests", f"test_{stem}{extension}")
