"""What the agent reports while it works, besides its words and tool calls:
ACP's `notice` and `compaction_update` (one line each per turn, updated in
place) and a running shell command's output (`shell_output`, qwen's): its
tool call's block shows the last SHELL_TAIL_LINES lines, and the last
SHELL_KEPT_LINES are kept for Show Shell Output (the rest only counted).

The vendored SDK's schema predates these updates, so they arrive here as an
`UnlistedUpdate` (their JSON as sent) instead of being dropped as malformed.
Everything kept is bounded: a notice's words, the count of notices, the lines
of a shell command's output, whatever the agent sends."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from .render import one_line

# The session updates taken although the SDK's schema lacks them (see acp_lines.py).
UNLISTED_KINDS = frozenset({"notice", "compaction_update", "shell_output"})
SHELL_TAIL_LINES = 200  # a shell command's output shown in its block
SHELL_KEPT_LINES = 2_000  # kept for Show Shell Output; the earlier lines are counted
SHOW_COMMAND = "Qwen Code: Show Shell Output"
SHELL_LINE_MAX_CHARS = 500  # one line of output as kept (a 10 MB line without a newline too)
REPORT_MAX_CHARS = 300
SEVERITY_MARKS = {"info": "•", "warning": "⚠", "error": "✗"}
COMPACTION_WORDS = {
    "in_progress": "compacting the conversation's context…",
    "completed": "the conversation's context was compacted",
    "failed": "compacting the context failed",
    "cancelled": "compacting the context was cancelled",
}


@dataclass(frozen=True)
class UnlistedUpdate:
    """A session update of a kind in UNLISTED_KINDS, as sent (the JSON object)."""

    kind: str
    fields: dict[str, Any]


def words(value: object, limit: int = REPORT_MAX_CHARS) -> str:
    """A string field as one bounded line; "" for anything else."""
    return one_line(value[: limit * 4], limit) if isinstance(value, str) else ""


def notice_line(fields: dict[str, Any], earlier: int) -> str:
    """`> ⚠ title — description (3 notices this turn)`: the latest notice, one line."""
    severity = fields.get("severity")
    mark = SEVERITY_MARKS.get(severity if isinstance(severity, str) else "", "•")
    title = words(fields.get("title")) or words(fields.get("message")) or "(a notice without words)"
    detail = words(fields.get("description"))
    more = f" ({earlier + 1} notices this turn)" if earlier else ""
    return f"> {mark} {title}" + (f" — {detail}" if detail else "") + more + "\n\n"


def compaction_line(fields: dict[str, Any]) -> str:
    status = fields.get("status")
    said = COMPACTION_WORDS.get(status if isinstance(status, str) else "", COMPACTION_WORDS["in_progress"])
    error = words(fields.get("error")) if status == "failed" else ""
    return f"> ⟳ {said}" + (f": {error}" if error else "") + "\n\n"


@dataclass
class ShellTail:
    """The last SHELL_KEPT_LINES lines of a command's output, the line still
    open (bounded) and how many lines went before them."""

    lines: deque[str] = field(default_factory=lambda: deque(maxlen=SHELL_KEPT_LINES))
    open_line: str = ""
    dropped: int = 0

    def add(self, text: str) -> None:
        pieces = text.split("\n")
        if len(pieces) == 1:
            self.open_line = (self.open_line + text)[:SHELL_LINE_MAX_CHARS]
            return
        finished = [self.open_line + pieces[0], *pieces[1:-1]]
        self.open_line = pieces[-1][:SHELL_LINE_MAX_CHARS]
        # Only the lines that can stay are cut and kept: a million-line chunk costs its split, no more.
        kept = finished[-SHELL_KEPT_LINES:]
        overflow = len(self.lines) + len(kept) - SHELL_KEPT_LINES
        self.dropped += len(finished) - len(kept) + max(0, overflow)
        self.lines.extend(line[:SHELL_LINE_MAX_CHARS] for line in kept)

    def shown_lines(self, count: int) -> list[str]:
        start = max(0, len(self.lines) - count)
        return [*islice(self.lines, start, None)] + ([self.open_line] if self.open_line else [])

    def render(self) -> str:
        """The output as the tool call's block shows it (indented, as a tool's output)."""
        hidden = self.dropped + max(0, len(self.lines) - SHELL_TAIL_LINES)
        head = (f"    … {hidden} earlier line(s) not shown (the last {SHELL_TAIL_LINES}; {SHOW_COMMAND} has the last "
                f"{SHELL_KEPT_LINES:,})\n") if hidden else ""
        return head + "".join(f"    {line}\n" for line in self.shown_lines(SHELL_TAIL_LINES))

    def full_text(self) -> str:
        """All that is kept, for Show Shell Output."""
        head = f"[{self.dropped} earlier line(s) not kept]\n" if self.dropped else ""
        return head + "\n".join(self.shown_lines(SHELL_KEPT_LINES)) + "\n"


def shell_output_text(fields: dict[str, Any]) -> str:
    """The output a `shell_output` update carries (qwen's `output`; `text` or `chunk` as others name it)."""
    for key in ("output", "text", "chunk"):
        value = fields.get(key)
        if isinstance(value, str):
            return value
    return ""


def shell_output_call(fields: dict[str, Any]) -> str | None:
    """The tool call a `shell_output` update names, if it names one."""
    meta = fields.get("_meta")
    for found in (fields.get("toolCallId"), meta.get("toolCallId") if isinstance(meta, dict) else None):
        if isinstance(found, str) and found:
            return found
    return None


def shell_progress(meta: dict[str, Any] | None) -> str:
    """qwen's heartbeat for a quiet shell command (a tool_call_update's
    `_meta.shellProgress`): "running 12 s, 340 lines"; "" without one."""
    progress = meta.get("shellProgress") if isinstance(meta, dict) else None
    if not isinstance(progress, dict):
        return ""
    parts = []
    elapsed = progress.get("elapsedMs")
    if isinstance(elapsed, int | float) and elapsed >= 0:
        parts.append(f"running {int(elapsed // 1000)} s")
    lines = progress.get("totalLines")
    if isinstance(lines, int) and lines >= 0:
        parts.append(f"{lines} lines")
    return ", ".join(parts)
