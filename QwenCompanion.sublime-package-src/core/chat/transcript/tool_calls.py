"""The agent at work, as transcript blocks: one status line per tool call
(updated in place, a running shell command's output under it), the plan as
one checklist ("Plan 2/5") and as the pinned plan the chat keeps in sight,
thoughts in a "Thinking" block, notices and compaction as one line each (see
work_reports.py). Each update rewrites only its own block, so hundreds of
updates in a turn stay cheap."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
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
from .work_reports import (
    ShellTail,
    UnlistedUpdate,
    compaction_line,
    notice_line,
    shell_output_call,
    shell_output_text,
    shell_progress,
)

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
    progress: str = ""  # qwen's heartbeat of a quiet shell command: "running 12 s, 340 lines"

    def updated(self, update: ToolCallStart | ToolCallProgress, display: PathDisplay = str) -> ToolCallLine:
        status = str(update.status) if update.status else self.status
        return ToolCallLine(
            self.tool_call_id,
            title=update.title or self.title,
            kind=str(update.kind) if update.kind else self.kind,
            status=status,
            locations=tuple((display(loc.path), loc.line) for loc in update.locations)
            if update.locations else self.locations,
            output=content_text(update.content, display) if update.content else self.output,
            progress=(shell_progress(update.field_meta) or self.progress) if status == "in_progress" else "",
        )

    def render(self) -> str:
        mark = STATUS_MARKS.get(self.status, "·")
        where = "".join(f" {path}" + (f":{line}" if line else "") for path, line in self.locations)
        progress = f" ({self.progress})" if self.progress else ""
        text = f"{mark} {self.kind} `{one_line(self.title or self.tool_call_id, 160)}`{where} — {self.status}{progress}\n"
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
PLAN_MAX_LINES = 200  # a plan's steps written into the transcript; the rest are counted
PLAN_STEP_MAX_CHARS = 200
PINNED_STEPS = 7  # the steps the pinned plan shows: the current one and those around it


def step_text(content: str) -> str:
    return one_line(content[: PLAN_STEP_MAX_CHARS * 4], PLAN_STEP_MAX_CHARS)


def render_plan(update: AgentPlanUpdate) -> tuple[str, PlanProgress]:
    done = sum(1 for entry in update.entries if entry.status == "completed")
    progress = PlanProgress(done, len(update.entries))
    lines = [f"- {PLAN_MARKS.get(str(e.status), '[ ]')} {step_text(e.content)}" for e in update.entries[:PLAN_MAX_LINES]]
    if len(update.entries) > PLAN_MAX_LINES:
        lines.append(f"- … {len(update.entries) - PLAN_MAX_LINES} more step(s) not shown")
    return f"**{progress.label()}**\n" + "\n".join(lines) + "\n\n", progress


class PlanStep(NamedTuple):
    content: str
    status: str  # pending | in_progress | completed
    current: bool  # the step the agent is on (the first in progress, else the first pending)


@dataclass(frozen=True)
class PinnedPlan:
    """The plan as the chat keeps it in sight: at most PINNED_STEPS steps
    around the current one, how many are above and below them, and the
    progress; collapsed to one line once every step is done."""

    steps: tuple[PlanStep, ...]
    progress: PlanProgress
    above: int = 0
    below: int = 0
    session_id: str = ""  # the session it is the plan of: another session's chat no longer shows it

    @property
    def finished(self) -> bool:
        return self.progress.total > 0 and self.progress.done == self.progress.total

    def lines(self) -> list[str]:
        """The pinned plan as plain lines (the status bar's and the driver's view of it)."""
        if self.finished:
            return [f"✓ {self.progress.label()}: all steps done"]
        lines = [self.progress.label()]
        if self.above:
            lines.append(f"  … {self.above} step(s) above")
        for step in self.steps:
            pointer = "▶" if step.current else " "
            lines.append(f"{pointer} {STATUS_MARKS.get(step.status, '○')} {step.content}")
        if self.below:
            lines.append(f"  … {self.below} more step(s)")
        return lines


def pinned_plan(update: AgentPlanUpdate, session_id: str = "") -> PinnedPlan:
    entries = update.entries
    statuses = [str(entry.status) for entry in entries]
    done = statuses.count("completed")
    current = next((i for i, status in enumerate(statuses) if status == "in_progress"),
                   next((i for i, status in enumerate(statuses) if status == "pending"), -1))
    start = max(0, min(current - PINNED_STEPS // 2, len(entries) - PINNED_STEPS)) if current >= 0 else 0
    shown = entries[start:start + PINNED_STEPS]
    steps = tuple(PlanStep(step_text(entry.content), statuses[start + i], start + i == current)
                  for i, entry in enumerate(shown))
    return PinnedPlan(steps, PlanProgress(done, len(entries)), above=start, below=len(entries) - start - len(shown),
                      session_id=session_id)


ToolCallListener = Callable[[ToolCallLine], None]
PlanListener = Callable[[PinnedPlan], None]
SHELL_RENDER_INTERVAL = 0.1  # a streaming command's block is rewritten at most this often
SHELL_TAILS_KEPT = 8  # the commands whose output is kept (the most recent ones)


class AgentWorkRenderer:
    """The chat's `UpdateRenderer` for tool calls, plans, thoughts and the
    reports of work (notices, compaction, shell output)."""

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
        self.pinned: PinnedPlan | None = None
        self._notices: tuple[int, int] = (-1, 0)  # (turn, notices seen in it)
        self._shells: OrderedDict[str, ShellTail] = OrderedDict()  # block id -> its command's output
        self._shells_lock = threading.Lock()  # Show Shell Output reads them from the main thread
        self._running_shell = ""  # the latest execute call still running: where unnamed output goes
        self._shell_rendered: dict[str, float] = {}
        self._shell_due: set[str] = set()

    def call(self, tool_call_id: str) -> ToolCallLine | None:
        kept = self._calls.get(tool_call_id)
        return None if kept is None else ToolCallLine._make(kept)

    def render(self, out: TranscriptWriter, session_id: str, update: Any) -> None:
        if isinstance(update, ToolCallStart | ToolCallProgress):
            self._tool_call(out, update)
        elif isinstance(update, AgentPlanUpdate):
            text, self.plan = render_plan(update)
            self.pinned = pinned_plan(update, session_id)
            out.upsert(f"t{out.turn}.plan", text)
            if self._on_plan is not None:
                self._on_plan(self.pinned)
        elif isinstance(update, AgentThoughtChunk):
            self._thought(out, chunk_text(update.content))
        elif isinstance(update, UnlistedUpdate):
            self._report(out, update)

    def _tool_call(self, out: TranscriptWriter, update: ToolCallStart | ToolCallProgress) -> None:
        key = update.tool_call_id
        before = self.call(key) or ToolCallLine(key)
        line = before.updated(update, self._display)
        self._calls[key] = tuple(line)
        if line.kind == "execute" and line.status in ("pending", "in_progress"):
            self._running_shell = key
        elif self._running_shell == key:
            self._running_shell = ""
        with self._shells_lock:
            tail = self._shells.get(f"tool.{key}")
            shell_output = tail.render() if tail is not None else None
        out.upsert(f"tool.{key}", self._tool_text(line, shell_output))
        if self._on_tool_call is not None and (before.status != line.status or isinstance(update, ToolCallStart)):
            self._on_tool_call(line)

    def _tool_text(self, line: ToolCallLine, shell_output: str | None) -> str:
        if shell_output is None or line.output:  # the call's own result, once it has one, says it all
            return line.render()
        return line.render()[:-1] + shell_output + "\n"

    def _thought(self, out: TranscriptWriter, text: str) -> None:
        block_id = f"t{out.turn}.thought"
        if self._thought_turn != out.turn:
            self._thought_turn = out.turn
            out.append(block_id, THINKING_HEADER + "> ")
            out.upsert(block_id + ".end", "\n\n")  # a block of its own: stays after the thought text
        out.append(block_id, text.replace("\n", "\n> "))

    # --- reports of work ---------------------------------------------------

    def _report(self, out: TranscriptWriter, update: UnlistedUpdate) -> None:
        if update.kind == "notice":
            turn, seen = self._notices
            seen = seen + 1 if turn == out.turn else 1
            self._notices = (out.turn, seen)
            out.upsert(f"t{out.turn}.notice", notice_line(update.fields, seen - 1))
        elif update.kind == "compaction_update":  # the turn's latest, whatever ids an agent makes up
            out.upsert(f"t{out.turn}.compaction", compaction_line(update.fields))
        elif update.kind == "shell_output":
            self._shell_output(out, update.fields)

    def _shell_output(self, out: TranscriptWriter, fields: dict[str, Any]) -> None:
        named = shell_output_call(fields)
        call = named if named is not None and named in self._calls else self._running_shell
        block_id = f"tool.{call}" if call else f"t{out.turn}.shell"
        with self._shells_lock:
            tail = self._shells.get(block_id)
            if tail is None:
                tail = self._shells[block_id] = ShellTail()
                while len(self._shells) > SHELL_TAILS_KEPT:
                    dropped, _ = self._shells.popitem(last=False)
                    self._shell_rendered.pop(dropped, None)
            tail.add(shell_output_text(fields))
        self._render_shell_soon(out, block_id)

    def shell_outputs(self) -> list[tuple[str, str]]:
        """The kept output of the latest commands, newest first: (title, text). Any thread."""
        with self._shells_lock:
            kept = [(block_id, tail.full_text()) for block_id, tail in self._shells.items()]
        titled = []
        for block_id, text in reversed(kept):
            line = self.call(block_id.removeprefix("tool.")) if block_id.startswith("tool.") else None
            titled.append((one_line(line.title, 160) if line is not None and line.title else "Shell output", text))
        return titled

    def _render_shell_soon(self, out: TranscriptWriter, block_id: str) -> None:
        """Rewrite the command's block now, or once SHELL_RENDER_INTERVAL has
        passed since the last time: a flood of chunks is a few view edits."""
        waited = time.monotonic() - self._shell_rendered.get(block_id, 0.0)
        if waited >= SHELL_RENDER_INTERVAL:
            self._render_shell(out, block_id)
        elif block_id not in self._shell_due:
            self._shell_due.add(block_id)
            try:
                asyncio.get_running_loop().call_later(SHELL_RENDER_INTERVAL - waited, self._render_shell, out, block_id)
            except RuntimeError:  # not on an event loop (a caller of its own): now
                self._render_shell(out, block_id)

    def _render_shell(self, out: TranscriptWriter, block_id: str) -> None:
        self._shell_due.discard(block_id)
        with self._shells_lock:
            tail = self._shells.get(block_id)
            rendered = tail.render() if tail is not None else None
        if rendered is None:
            return
        self._shell_rendered[block_id] = time.monotonic()
        line = self.call(block_id.removeprefix("tool.")) if block_id.startswith("tool.") else None
        if line is not None:
            out.upsert(block_id, self._tool_text(line, rendered))
        else:
            out.upsert(block_id, "Shell output:\n" + rendered + "\n")
