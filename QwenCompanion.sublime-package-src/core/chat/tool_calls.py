"""The agent at work, as transcript blocks: one status line per tool call
(updated in place), the plan as one checklist ("Plan 2/5"), thoughts in a
"Thinking" block. Each update rewrites only its own block, so hundreds of
updates in a turn stay cheap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallProgress,
    ToolCallStart,
)

from .render import TranscriptWriter, chunk_text, one_line

PathDisplay = Callable[[str], str]  # a path as the user reads it (relative to the window's folder)
STATUS_MARKS = {"pending": "○", "in_progress": "◐", "completed": "✓", "failed": "✗"}
THINKING_HEADER = "▸ Thinking\n"


@dataclass
class ToolCallLine:
    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    locations: list[tuple[str, int | None]] = field(default_factory=list)
    output: str = ""

    def apply(self, update: ToolCallStart | ToolCallProgress, display: PathDisplay = str) -> None:
        if update.title:
            self.title = update.title
        if update.kind:
            self.kind = str(update.kind)
        if update.status:
            self.status = str(update.status)
        if update.locations:
            self.locations = [(display(loc.path), loc.line) for loc in update.locations]
        if update.content:
            self.output = content_text(update.content, display)

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
        self._calls: dict[str, ToolCallLine] = {}
        self._thought_turn = -1
        self._on_tool_call = on_tool_call
        self._on_plan = on_plan
        self.plan: PlanProgress | None = None

    def call(self, tool_call_id: str) -> ToolCallLine | None:
        return self._calls.get(tool_call_id)

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
        line = self._calls.get(key)
        if line is None:
            line = self._calls[key] = ToolCallLine(key)
        before = line.status
        line.apply(update, self._display)
        out.upsert(f"tool.{key}", line.render())
        if self._on_tool_call is not None and (before != line.status or isinstance(update, ToolCallStart)):
            self._on_tool_call(line)

    def _thought(self, out: TranscriptWriter, text: str) -> None:
        block_id = f"t{out.turn}.thought"
        if self._thought_turn != out.turn:
            self._thought_turn = out.turn
            out.append(block_id, THINKING_HEADER + "> ")
            out.upsert(block_id + ".end", "\n\n")  # a block of its own: stays after the thought text
        out.append(block_id, text.replace("\n", "\n> "))
