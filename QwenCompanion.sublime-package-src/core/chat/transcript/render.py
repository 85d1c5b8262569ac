"""How session updates become transcript text (Markdown).

`UpdateRenderer` is the hook for updates that are not message text, slash
commands or modes (tool calls, plans, thoughts…): the default writes one
plain line each, updated in place by block id."""

from __future__ import annotations

from typing import Any, Protocol

from acp.schema import (
    AgentPlanUpdate,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

USER_HEADER = "## You\n\n"
AGENT_HEADER = "## Qwen\n\n"


class TranscriptWriter(Protocol):
    """Where renderers write: blocks of Markdown, by id, within the current turn."""

    turn: int

    def append(self, block_id: str, text: str) -> None: ...

    def upsert(self, block_id: str, text: str) -> None: ...


class UpdateRenderer(Protocol):
    def render(self, out: TranscriptWriter, session_id: str, update: Any) -> None: ...


def chunk_text(content: Any) -> str:
    """The text of a content block; other kinds as a short placeholder."""
    if isinstance(content, TextContentBlock):
        return content.text
    kind = getattr(content, "type", "content")
    name = getattr(content, "name", None) or getattr(getattr(content, "resource", None), "uri", None)
    return f"[{kind}: {name}]" if name else f"[{kind}]"


def one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class PlainRenderer:
    """One line per tool call (updated in place), a plan as a list, thoughts
    as a quote."""

    def __init__(self) -> None:
        self._titles: dict[str, str] = {}
        self._thoughts: set[str] = set()

    def render(self, out: TranscriptWriter, session_id: str, update: Any) -> None:
        if isinstance(update, ToolCallStart | ToolCallProgress):
            key = update.tool_call_id
            title = update.title or self._titles.get(key) or key
            self._titles[key] = title
            status = update.status or "pending"
            out.upsert(f"tool.{key}", f"- `{one_line(title, 120)}` — {status}\n\n")
        elif isinstance(update, AgentPlanUpdate):
            lines = [f"- [{'x' if e.status == 'completed' else ' '}] {one_line(e.content)}" for e in update.entries]
            out.upsert(f"t{out.turn}.plan", "Plan:\n" + "\n".join(lines) + "\n\n")
        elif isinstance(update, AgentThoughtChunk):
            block_id = f"t{out.turn}.thought"
            lead = "" if block_id in self._thoughts else "> "
            self._thoughts.add(block_id)
            out.append(block_id, lead + chunk_text(update.content).replace("\n", "\n> "))
