"""The agent at work, as transcript blocks: one status line per tool call
(updated in place), the plan as one checklist ("Plan 2/5"), thoughts in a
"Thinking" block. Each update rewrites only its own block, so hundreds of
updates in a turn stay cheap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from acp.schema import (
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallProgress,
    ToolCallStart,
)

from .folds import THINKING_HEADER
from .render import TranscriptWriter, chunk_text, one_line

PathDisplay = Callable[[str], str]  # a path as the user reads it (relative to the window's folder)
STATUS_MARKS = {"pending": "○", "in_progress": "◐", "completed": "✓", "failed": "✗"}


class ToolCallLine(NamedTuple):
    """A tool call as its line shows it: strings and numbers only, so that
    kept as a plain tuple the garbage collector stops walking it."""

    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    locations: tuple[tuple[str, int | None], ...] = ()
    output: str = ""

    def updated(self, update: ToolCallStart | ToolCallProgress, display: PathDisplay = str) -> ToolCallLine:
        return ToolCallLine(
            self.tool_call_id,
            title=update.title or self.title,
            kind=str(update.kind) if update.kind else self.kind,
            status=str(update.status) if update.status else self.status,
            locations=tuple((display(loc.path), loc.line) for loc in update.locations)
            if update.locations else self.locations,
            output=content_text(update.content, display) if update.content else self.output,
        )

    def render(self) -> str:
        mark = STATUS_MARKS.get(self.status, "·")
        where = "".join(f" {path}" + (f":{line}" if line else "") for path, line in self.locations)
        text = f"{mark} {self.kind} `{one_line(self.title or self.tool_call_id, 160)}`{where} — {self.status}\n"
        if self.output:
            text += "".join(f"    {line}\n" for line in self.output.rstrip("\n").split("\n"))
        return text + "\n"


def content_text(content: list[Any], display: PathDisplay = str) -> str:
    """A tool call's output as plain text: text blocks, diffs as "path: +a -b"."""
    parts: list[str] = []
    for item in content:
        if isinstance(item, ContentToolCallContent):
            parts.append(chunk_text(item.content))
        elif isinstance(item, FileEditToolCallContent):
            old = (item.old_text or "").count("\n")
            new = item.new_text.count("\n")
            parts.append(f"{display(item.path)}: {new} line(s) proposed, {old} before")
        elif isinstance(item, TerminalToolCallContent):
            parts.append(f"[terminal {item.terminal_id}]")
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class PlanProgress:
    done: int
    total: int

    def label(self) -> str:
        return f"Plan {self.done}/{self.total}"


PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


def render_plan(update: AgentPlanUpdate) -> tuple[str, PlanProgress]:
    done = sum(1 for entry in update.entries if entry.status == "completed")
    progress = PlanProgress(done, len(update.entries))
    lines = [f"- {PLAN_MARKS.get(str(e.status), '[ ]')} {one_line(e.content)}" for e in update.entries]
    return f"**{progress.label()}**\n" + "\n".join(lines) + "\n\n", progress


ToolCallListener = Callable[[ToolCallLine], None]
PlanListener = Callable[[PlanProgress], None]


class AgentWorkRenderer:
    """The chat's `UpdateRenderer` for tool calls, plans and thoughts."""

    def __init__(self, on_tool_call: ToolCallListener | None = None, on_plan: PlanListener | None = None,
                 display: PathDisplay = str) -> None:
        self._display = display
        # Each call as a plain tuple of strings and numbers: the collector
        # untracks those (never a NamedTuple), so 100,000 calls add nothing to
        # its pauses in a plugin host that every package shares.
        self._calls: dict[str, tuple[Any, ...]] = {}
        self._thought_turn = -1
        self._on_tool_call = on_tool_call
        self._on_plan = on_plan
        self.plan: PlanProgress | None = None

    def call(self, tool_call_id: str) -> ToolCallLine | None:
        kept = self._calls.get(tool_call_id)
        return None if kept is None else ToolCallLine._make(kept)

    def render(self, out: TranscriptWriter, session_id: str, update: Any) -> None:
        if isinstance(update, ToolCallStart | ToolCallProgress):
            self._tool_call(out, update)
        elif isinstance(update, AgentPlanUpdate):
            text, self.plan = render_plan(update)
            out.upsert(f"t{out.turn}.plan", text)
            if self._on_plan is not None:
                self._on_plan(self.plan)
        elif isinstance(update, AgentThoughtChunk):
            self._thought(out, chunk_text(update.content))

    def _tool_call(self, out: TranscriptWriter, update: ToolCallStart | ToolCallProgress) -> None:
        key = update.tool_call_id
        before = self.call(key) or ToolCallLine(key)
        line = before.updated(update, self._display)
        self._calls[key] = tuple(line)
        out.upsert(f"tool.{key}", line.render())
        if self._on_tool_call is not None and (before.status != line.status or isinstance(update, ToolCallStart)):
            self._on_tool_call(line)

    def _thought(self, out: TranscriptWriter, text: str) -> None:
        block_id = f"t{out.turn}.thought"
        if self._thought_turn != out.turn:
            self._thought_turn = out.turn
            out.append(block_id, THINKING_HEADER + "> ")
            out.upsert(block_id + ".end", "\n\n")  # a block of its own: stays after the thought text
        out.append(block_id, text.replace("\n", "\n> "))
