"""The agent's permission requests as the user sees them: the full command or
input (never cut), the options in the agent's order with keys 1…n, and the
answers sent back with the agent's own option ids. Pending requests are kept
so that closing or cancelling answers every one of them "cancelled"."""

from __future__ import annotations

import asyncio
import difflib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    FileEditToolCallContent,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
)

from ..transcript.tool_calls import PathDisplay, content_text

REASON_CHOICE = "Reject with a reason…"  # the key after the agent's options
# Keys answer only where the user aims them: in the transcript, the oldest request first.
KEYS_HINT = "keys {keys} or Esc to reject, in this transcript; oldest request first"
EDIT_PREVIEW_LINES = 8  # changed lines an edit's prompt shows; the review has them all


@dataclass(frozen=True)
class Diff:
    path: str
    old_text: str
    new_text: str


@dataclass(frozen=True)
class Question:
    """One of Qwen's `ask_user_question` questions: its text and option labels."""

    text: str
    labels: list[str]


class AnsweredPermission(RequestPermissionResponse):
    """Qwen's `ask_user_question` reads the user's answers from `answers`,
    beside `outcome`: the chosen option's label by question index ("0", "1"…)."""

    answers: dict[str, str] | None = None


@dataclass
class PermissionPrompt:
    key: str
    tool_call_id: str
    kind: str
    title: str
    detail: str  # the full command / input
    options: list[PermissionOption]
    locations: list[str] = field(default_factory=list)
    diff: Diff | None = None
    questions: list[Question] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # labels chosen so far, question by question
    note: str = ""  # why the edit has no review, when it has none
    files: list[str] = field(default_factory=list)  # every path the request names, as the user reads it

    def keys(self) -> int:
        """How many number keys choose something now."""
        if self.questions:
            return len(self.questions[len(self.answers)].labels) if len(self.answers) < len(self.questions) else 0
        return len(self.options) + 1  # then "reject with a reason"

    def option(self, kind: str) -> PermissionOption | None:
        return next((o for o in self.options if o.kind == kind), None)

    def event(self, window: int, chat: int) -> dict[str, Any]:
        """The headless driver's `permission_requested` event."""
        return {
            "window": window,
            "chat": chat,
            "toolCall": {"toolCallId": self.tool_call_id, "kind": self.kind, "title": self.title,
                         "locations": [{"path": p} for p in self.locations]},
            "options": [{"optionId": o.option_id, "kind": o.kind, "name": o.name} for o in self.options],
        }


def detail_of(raw_input: Any, content_summary: str) -> str:
    """What the tool will do, whole: a shell command as it is, questions as a
    numbered list, any other input as JSON."""
    if isinstance(raw_input, dict):
        command = raw_input.get("command")
        if isinstance(command, str):
            return command
        questions = raw_input.get("questions")
        if isinstance(questions, list):
            return questions_text(questions)
    if raw_input not in (None, {}, ""):
        return json.dumps(raw_input, indent=2, ensure_ascii=False)
    return content_summary


def edit_summary(diff: Diff, display: PathDisplay = str) -> str:
    """What an edit changes, instead of the tool's raw input: the file, how
    many lines go and come, and the first changed lines."""
    changes = [
        line for line in difflib.unified_diff(diff.old_text.splitlines(), diff.new_text.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    added = sum(1 for line in changes if line.startswith("+"))
    removed = len(changes) - added
    shown = changes[:EDIT_PREVIEW_LINES]
    more = f"\n… {len(changes) - len(shown)} more changed line(s): the review tab shows them all" if len(changes) > len(shown) else ""
    return "\n".join([f"{display(diff.path)}: +{added} −{removed} line(s)", *shown]) + more


def questions_text(questions: list[Any]) -> str:
    lines: list[str] = []
    for question in questions:
        if not isinstance(question, dict):
            continue
        lines.append(str(question.get("question", "")))
        for number, option in enumerate(question.get("options") or [], 1):
            if isinstance(option, dict):
                description = option.get("description")
                lines.append(f"  {number}. {option.get('label', '')}" + (f" — {description}" if description else ""))
    return "\n".join(lines)


def questions_of(raw_input: Any) -> list[Question]:
    questions = raw_input.get("questions") if isinstance(raw_input, dict) else None
    found: list[Question] = []
    for question in questions if isinstance(questions, list) else []:
        if isinstance(question, dict):
            labels = [str(o.get("label", "")) for o in question.get("options") or [] if isinstance(o, dict)]
            if labels:
                found.append(Question(str(question.get("question", "")), labels))
    return found


def prompt_of(key: str, request: RequestPermissionRequest, display: PathDisplay = str) -> PermissionPrompt:
    """`display` shows a path as the user reads it (relative to the window's folder)."""
    call = request.tool_call
    content = call.content or []
    diff = next(
        (Diff(c.path, c.old_text or "", c.new_text) for c in content if isinstance(c, FileEditToolCallContent)),
        None,
    )
    return PermissionPrompt(
        key=key,
        tool_call_id=call.tool_call_id,
        kind=str(call.kind or "other"),
        title=call.title or call.tool_call_id,
        detail=edit_summary(diff, display) if diff is not None else detail_of(call.raw_input, content_text(content, display)),
        options=list(request.options),
        locations=[loc.path for loc in call.locations or []],
        diff=diff,
        questions=questions_of(call.raw_input),
        files=named_files(call.locations or [], diff, display),
    )


def named_files(locations: list[Any], diff: Diff | None, display: PathDisplay) -> list[str]:
    """Every path a request names (its locations, its diff's file), once each and
    shown as the user reads them; one with a newline or NUL quoted, so it cannot
    pass for other lines of the prompt."""
    named = dict.fromkeys([*(loc.path for loc in locations), *([diff.path] if diff is not None else [])])
    return [shown if shown.isprintable() else repr(shown) for shown in map(display, named)]


def render_prompt(prompt: PermissionPrompt) -> str:
    """The inline prompt: title, the whole input in a code block, numbered options."""
    if prompt.questions:
        return render_questions(prompt)
    fence = "````" if "```" in prompt.detail else "```"
    names = [o.name for o in prompt.options] + [REASON_CHOICE]
    choices = "  ".join(f"[{n}] {name}" for n, name in enumerate(names, 1))
    keys = f"1–{len(names)}"
    files = f"Files: {', '.join(prompt.files)}\n" if prompt.files else ""
    note = f"*{prompt.note}*\n" if prompt.note else ""
    return (
        f"**Permission** ({prompt.kind}): {prompt.title}\n"
        f"{files}{note}"
        f"{fence}\n{prompt.detail}\n{fence}\n"
        f"{choices}   ({KEYS_HINT.format(keys=keys)})\n\n"
    )


def render_questions(prompt: PermissionPrompt) -> str:
    lines = [f"**Question**: {prompt.title}"]
    for number, question in enumerate(prompt.questions):
        lines.append(f"{number + 1}. {question.text}")
        if number < len(prompt.answers):
            lines.append(f"   → {prompt.answers[number]}")
        else:
            lines.append("   " + "  ".join(f"[{n}] {label}" for n, label in enumerate(question.labels, 1)))
    lines.append("(keys 1–9 in this transcript answer the next question, Esc cancels)")
    return "\n".join(lines) + "\n\n"


def answered(prompt: PermissionPrompt, option_id: str) -> AnsweredPermission:
    return AnsweredPermission(
        outcome=AllowedOutcome(outcome="selected", option_id=option_id),
        answers={str(n): label for n, label in enumerate(prompt.answers)},
    )


def render_answer(prompt: PermissionPrompt, answer: RequestPermissionResponse) -> str:
    outcome = answer.outcome
    if prompt.questions and isinstance(answer, AnsweredPermission) and answer.answers:
        return f"**Question**: {prompt.title} → {'; '.join(answer.answers.values())}\n\n"
    if isinstance(outcome, AllowedOutcome):
        chosen = next((o.name for o in prompt.options if o.option_id == outcome.option_id), outcome.option_id)
    else:
        chosen = "cancelled"
    return f"**Permission** ({prompt.kind}): {prompt.title} → {chosen}\n\n"


def selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))


def cancelled() -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


class PendingPermissions:
    """Permission requests waiting for the user, oldest first. `answer` and
    `cancel_all` may be called from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[PermissionPrompt, asyncio.Future[RequestPermissionResponse]]] = {}
        self._count = 0

    def next_key(self) -> str:
        with self._lock:
            self._count += 1
            return f"perm{self._count}"

    def add(self, prompt: PermissionPrompt) -> asyncio.Future[RequestPermissionResponse]:
        future: asyncio.Future[RequestPermissionResponse] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiting[prompt.key] = (prompt, future)
        return future

    def discard(self, key: str) -> None:
        with self._lock:
            self._waiting.pop(key, None)

    def oldest(self) -> PermissionPrompt | None:
        with self._lock:
            return next((prompt for prompt, _ in self._waiting.values()), None)

    def count(self) -> int:
        with self._lock:
            return len(self._waiting)

    def get(self, key: str) -> PermissionPrompt | None:
        with self._lock:
            entry = self._waiting.get(key)
        return entry[0] if entry else None

    def answer(self, key: str, response: RequestPermissionResponse) -> bool:
        with self._lock:
            entry = self._waiting.pop(key, None)
        if entry is None:
            return False
        future = entry[1]
        loop = future.get_loop()

        def resolve() -> None:
            if not future.done():
                future.set_result(response)

        if loop.is_closed():
            return False
        loop.call_soon_threadsafe(resolve)
        return True

    def cancel_all(self) -> int:
        with self._lock:
            keys = list(self._waiting)
        return sum(self.answer(key, cancelled()) for key in keys)
