"""What a mention in the composer sends: `@symbol:NAME` (the definition's
text and place), `@diagnostics` (a file's or the window's), `@diff` (the
working tree's uncommitted changes), `@terminal` (the last lines of the qwen
terminal) and a pasted image. Each becomes one prompt block, cut to a size
the model can take; qwen gives a `resource` block to the model as
`File: <uri>` followed by its text."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass

from ...files.text_positions import Lines
from ...ide_tools.symbols import definition_rows
from ...json_types import JsonObject
from .mention_tools import MAX_MENTION_CHARS, MAX_UNTRACKED, MentionError
from .prompt_context import MAX_IMAGE_BYTES, file_uri

MAX_DEFINITION_LINES = 400
MAX_DIAGNOSTICS = 300
TERMINAL_LINES = 200
MAX_NAME_CHARS = 300
TRUNCATED = "\n... [TRUNCATED]"
IMAGE_SIGNATURES = {b"\x89PNG\r\n\x1a\n": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}


@dataclass(frozen=True)
class Mention:
    token: str  # what the composer shows after "@"
    block: JsonObject
    summary: str  # what it holds, for the status bar


def cut(text: str, limit: int = MAX_MENTION_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + TRUNCATED


def _text_block(uri: str, text: str, mime: str = "text/plain") -> JsonObject:
    return {"type": "resource", "resource": {"uri": uri, "mimeType": mime, "text": text}}


def symbol_mention(name: str, path: str, text: str, row: int) -> Mention:
    """`name` defined at 1-based `row` of `path` whose text is `text`."""
    lines = Lines(text)
    if not 1 <= row <= len(lines.starts):
        raise MentionError(f"{name}: line {row} is past the end of {os.path.basename(path)}")
    first, last = definition_rows(text, row - 1)
    last = min(last, first + MAX_DEFINITION_LINES - 1)
    body = "\n".join(lines.line(r) for r in range(first, last + 1))
    place = f"{path}:{first + 1}-{last + 1}"
    block = _text_block(f"{file_uri(path)}#L{first + 1}-L{last + 1}", cut(f"{name} is defined at {place}:\n\n{body}"))
    return Mention(f"symbol:{name}", block, f"{name}, {os.path.basename(path)} lines {first + 1}-{last + 1}")


def diagnostics_mention(diagnostics: list[JsonObject], source: str, path: str | None, folder: str) -> Mention:
    """The diagnostics the IDE tools read from LSP (`abspath`, `range`,
    `severity`, `message`, `source`, `code`) as one line each."""
    rows: list[str] = []
    for found in diagnostics[:MAX_DIAGNOSTICS]:
        start = found.get("range", {}).get("start", {}) if isinstance(found.get("range"), dict) else {}
        where = f"{found.get('abspath', '?')}:{start.get('line', '?')}:{start.get('character', '?')}"
        origin = " ".join(str(found[k]) for k in ("source", "code") if found.get(k) not in (None, ""))
        message = " ".join(str(found.get("message", "")).split())
        rows.append(f"{where}: {found.get('severity', 'Error')}: {message}" + (f" [{origin}]" if origin else ""))
    if len(diagnostics) > MAX_DIAGNOSTICS:
        rows.append(f"... and {len(diagnostics) - MAX_DIAGNOSTICS} more")
    scope = os.path.basename(path) if path is not None else "the window"
    header = f"Diagnostics of {path or 'every file of the window'} from {source}:"
    text = "\n".join([header, *rows]) if rows else f"{header}\nnone."
    uri = file_uri(path if path is not None else folder) + "#diagnostics"
    token = "diagnostics" if path is not None else "diagnostics:window"
    return Mention(token, _text_block(uri, cut(text)), f"{len(diagnostics)} in {scope}")


def diff_mention(root: str, diff: str, untracked: list[str], truncated: bool) -> Mention:
    """`git diff HEAD` of the repository at `root`, and its untracked files."""
    if not diff.strip() and not untracked:
        raise MentionError(f"no uncommitted changes in {root}")
    truncated = truncated or len(diff) > MAX_MENTION_CHARS
    parts = [diff[:MAX_MENTION_CHARS].rstrip("\n")] if diff.strip() else []
    if truncated:
        parts.append("... [TRUNCATED: the diff is larger than what is sent]")
    if untracked:
        names = [f"  {name[:MAX_NAME_CHARS]}" for name in untracked[:MAX_UNTRACKED]]
        names += ["  ... and more"] if len(untracked) > MAX_UNTRACKED else []
        parts.append("Untracked files:\n" + "\n".join(names))
    files = diff.count("\ndiff --git ") + diff.startswith("diff --git ")
    block = _text_block(file_uri(root) + "#uncommitted.diff", "\n\n".join(parts), "text/x-diff")
    listed = f"{MAX_UNTRACKED}+" if len(untracked) > MAX_UNTRACKED else str(len(untracked))
    return Mention("diff", block, f"{files} changed, {listed} untracked file(s)")


def terminal_mention(tail: str, name: str) -> Mention:
    """The last `TERMINAL_LINES` lines of a terminal's text, trailing blanks dropped."""
    lines = [line.rstrip() for line in tail.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    lines = lines[-TERMINAL_LINES:]
    if not lines:
        raise MentionError(f"the terminal {name} shows nothing yet")
    block = _text_block("terminal:///" + name.replace(" ", "%20"), cut("\n".join(lines)))
    return Mention("terminal", block, f"{len(lines)} lines of {name}")


def image_mention(data: bytes, serial: int) -> Mention:
    """A pasted image (PNG, JPEG or GIF, by its first bytes) as an image block."""
    if len(data) > MAX_IMAGE_BYTES:
        raise MentionError(f"the image on the clipboard is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
    mime = next((m for signature, m in IMAGE_SIGNATURES.items() if data.startswith(signature)), None)
    if mime is None:
        raise MentionError("the clipboard holds no image (PNG, JPEG or GIF)")
    block: JsonObject = {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode("ascii")}
    return Mention(f"image-{serial}", block, f"{mime}, {len(data) // 1024} KiB")
