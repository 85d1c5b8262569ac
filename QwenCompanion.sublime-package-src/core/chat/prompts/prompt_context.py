"""The editor context a prompt carries. In ACP mode qwen does not add the
IDE context to the model's prompt, so the chat sends it itself: the active
file as a `resource_link` (with the cursor), the selection as an embedded
`resource`, attached files as embedded resources (unsaved text included)."""

from __future__ import annotations

import base64
import mimetypes
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ...context_rules import ContextOptions, cut_selected_text
from ...json_types import JsonObject

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_ATTACHED_BYTES = 512 * 1024
MAX_IMAGE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class ActiveFile:
    path: str
    line: int  # 1-based
    column: int  # 1-based
    selection: str = ""
    selection_lines: tuple[int, int] = (0, 0)  # 1-based, inclusive


def file_uri(path: str) -> str:
    return Path(path).as_uri() if os.path.isabs(path) else "file://" + quote(path.replace("\\", "/"))


def active_file_blocks(active: ActiveFile | None, options: ContextOptions) -> list[JsonObject]:
    if active is None or options.excludes(active.path):
        return []
    uri = file_uri(active.path)
    blocks: list[JsonObject] = [{
        "type": "resource_link",
        "uri": uri,
        "name": os.path.basename(active.path),
        "description": f"The user's active file; cursor at line {active.line}, column {active.column}.",
    }]
    if active.selection and options.send_selected_text:
        first, last = active.selection_lines
        blocks.append({
            "type": "resource",
            "resource": {
                "uri": f"{uri}#L{first}-L{last}",
                "mimeType": "text/plain",
                "text": cut_selected_text(active.selection),
            },
        })
    return blocks


def attached_file_block(path: str, text: str | None, options: ContextOptions) -> JsonObject | None:
    """A file the user attached (`text`: its buffer, unsaved edits included;
    None reads it from disk). Images become image blocks."""
    if options.excludes(path):
        return None
    suffix = os.path.splitext(path)[1].lower()
    if text is None and suffix in IMAGE_SUFFIXES:
        data = read_head(path, MAX_IMAGE_BYTES + 1)
        if len(data) > MAX_IMAGE_BYTES:
            raise ValueError(f"{os.path.basename(path)} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
        mime = mimetypes.guess_type(path)[0] or "image/png"
        return {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode("ascii"), "uri": file_uri(path)}
    if text is None:
        raw = read_head(path, MAX_ATTACHED_BYTES + 1)
        text = raw.decode("utf-8", "replace")
    if len(text) > MAX_ATTACHED_BYTES:
        text = text[:MAX_ATTACHED_BYTES] + "\n... [TRUNCATED]"
    return {"type": "resource", "resource": {"uri": file_uri(path), "mimeType": "text/plain", "text": text}}


def read_head(path: str, limit: int) -> bytes:
    """At most `limit` bytes from the start of the regular file `path` (attaching
    runs on the main thread: a 1 GB file is not read whole, a FIFO not waited on)."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(f"{os.path.basename(path)} is not a regular file")
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)
