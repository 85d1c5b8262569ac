"""Session Status: what qwen says of a chat's session, read from six of its
methods (qwen 0.24.4, each `{sessionId}` but the providers' list):

- `qwen/status/session/context_usage` -> `{usage: {modelName, totalTokens,
  contextWindowSize, breakdown: {systemPrompt, builtinTools, mcpTools,
  memoryFiles, skills, startupContext, messages, freeSpace, autocompactBuffer, …}}}`
- `qwen/status/session/stats` -> `{durationMs, promptCount, models: {name:
  {api: {totalRequests, …}, tokens: {prompt, candidates, total, …}}}, tools: {totalCalls, …}}`
- `qwen/status/session/tasks` -> `{tasks: [{id, kind, description, status, …}]}`
- `qwen/status/session/agents` -> `{tasks: [...]}` (the subagents, under `tasks` too)
- `qwen/status/session/supported_commands` -> `{availableCommands: [{name, description}]}`
- `qwen/providers/list` -> `{providers: [{id, label, existingConfig?}]}`: every
  provider qwen can connect; the ones set up in its settings carry `existingConfig`
  (none when the key comes from the environment).

Each answer is bounded when adopted (strings, lists: qwen_calls.py) and
cleaned for display; a wrong shape is a `BadAnswer`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ...display_text import display_text
from ..agent.session_options import Choice
from .qwen_calls import MAX_ITEMS, BadAnswer, Request

CONTEXT_METHOD = "qwen/status/session/context_usage"
STATS_METHOD = "qwen/status/session/stats"
TASKS_METHOD = "qwen/status/session/tasks"
AGENTS_METHOD = "qwen/status/session/agents"
COMMANDS_METHOD = "qwen/status/session/supported_commands"
PROVIDERS_METHOD = "qwen/providers/list"
LINE_CHARS = 200  # one item of the panel


def _object(answer: object, what: str) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise BadAnswer(f"the agent's {what} is not an object: {str(answer)[:200]}")
    return answer


def _count(value: object) -> int:
    """A token or request count: a non-negative int (a float is rounded, anything else 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return 0
    return min(int(value), 10**15)


def _items(answer: dict[str, Any], key: str, what: str) -> list[Any]:
    items = answer.get(key, [])
    if not isinstance(items, list):
        raise BadAnswer(f"the agent's {what} is not a list: {str(items)[:200]}")
    return items[:MAX_ITEMS]


def _line(value: object) -> str:
    return display_text(value[: LINE_CHARS * 4], LINE_CHARS) if isinstance(value, str) else ""


@dataclass(frozen=True)
class ContextUse:
    used: int
    size: int
    parts: dict[str, int] = field(default_factory=dict)  # where the tokens go, by qwen's names
    model: str = ""


def context_use(answer: object) -> ContextUse:
    usage = _object(_object(answer, "context usage").get("usage"), "context usage")
    breakdown = usage.get("breakdown")
    parts = {_line(name): _count(value) for name, value in list(breakdown.items())[:MAX_ITEMS]
             if isinstance(value, int | float) and not isinstance(value, bool)} if isinstance(breakdown, dict) else {}
    return ContextUse(_count(usage.get("totalTokens")), _count(usage.get("contextWindowSize")),
                      {name: count for name, count in parts.items() if name}, _line(usage.get("modelName")))


def stats(answer: object) -> dict[str, int]:
    """The session's tokens, model requests, tool calls, prompts and time."""
    body = _object(answer, "stats")
    models = body.get("models")
    totals = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0, "cachedTokens": 0, "requests": 0}
    for model in list(models.values())[:MAX_ITEMS] if isinstance(models, dict) else []:
        tokens = model.get("tokens") if isinstance(model, dict) else None
        api = model.get("api") if isinstance(model, dict) else None
        tokens = tokens if isinstance(tokens, dict) else {}
        totals["inputTokens"] += _count(tokens.get("prompt"))
        totals["outputTokens"] += _count(tokens.get("candidates"))
        totals["totalTokens"] += _count(tokens.get("total"))
        totals["cachedTokens"] += _count(tokens.get("cached"))
        totals["requests"] += _count(api.get("totalRequests") if isinstance(api, dict) else None)
    tools = body.get("tools")
    totals["toolCalls"] = _count(tools.get("totalCalls") if isinstance(tools, dict) else None)
    totals["prompts"] = _count(body.get("promptCount"))
    totals["durationMs"] = _count(body.get("durationMs"))
    return totals


def tasks(answer: object, what: str = "tasks") -> list[dict[str, str]]:
    """Running tasks (or subagents): `{id, kind, description, status}` each, cleaned."""
    listed = _items(_object(answer, what), "tasks", what)
    return [{key: _line(task.get(key)) for key in ("id", "kind", "description", "status")}
            for task in listed if isinstance(task, dict)]


def command_choices(answer: object) -> list[Choice]:
    """The session's slash commands with their descriptions (cleaned by `Choice`)."""
    listed = _items(_object(answer, "supported commands"), "availableCommands", "supported commands")
    found = (Choice(str(c.get("name")), str(c.get("name")), str(c.get("description") or ""))
             for c in listed if isinstance(c, dict) and isinstance(c.get("name"), str))
    return [choice for choice in found if choice.name]


def commands(answer: object) -> list[str]:
    """The session's slash commands, by name."""
    return [choice.name for choice in command_choices(answer)]


async def supported_commands(request: Request) -> list[Choice]:
    return command_choices(await request(COMMANDS_METHOD, {}))


def configured_providers(answer: object) -> list[str]:
    """The providers qwen's settings set up (those with `existingConfig`), by label."""
    listed = _items(_object(answer, "providers"), "providers", "providers")
    labels = (_line(p.get("label") or p.get("id")) for p in listed
              if isinstance(p, dict) and isinstance(p.get("existingConfig"), dict))
    return [label for label in labels if label]


@dataclass(frozen=True)
class SessionStatus:
    context: ContextUse
    stats: dict[str, int]
    tasks: list[dict[str, str]]
    agents: list[dict[str, str]]
    commands: list[str]
    model: str
    providers: list[str]

    def report(self) -> dict[str, Any]:
        """The headless driver's `session_status`."""
        context: dict[str, Any] = {"used": self.context.used, "size": self.context.size}
        if self.context.parts:
            context["parts"] = dict(self.context.parts)
        return {"context": context, "stats": dict(self.stats), "tasks": self.tasks, "agents": self.agents,
                "commands": self.commands, "model": self.model, "providers": self.providers}


def _percent(part: int, whole: int) -> str:
    return f" ({100 * part / whole:.1f}%)" if whole else ""


def _task_lines(listed: list[dict[str, str]]) -> list[str]:
    return [f"  {t['status'] or '?'}  {t['kind']}  {t['description'] or t['id']}" for t in listed] or ["  none"]


def status_text(status: SessionStatus, updated: str) -> str:
    """The Session Status panel."""
    context, numbers = status.context, status.stats
    lines = [f"Session Status (updated {updated})", "",
             f"Model: {status.model or '?'}",
             f"Provider: {', '.join(status.providers) or 'set by the environment (no provider in qwen settings)'}", "",
             f"Context: {context.used:,} of {context.size:,} tokens{_percent(context.used, context.size)}"]
    lines += [f"  {name:<20} {count:>10,}{_percent(count, context.size)}" for name, count in context.parts.items()]
    seconds = numbers.get("durationMs", 0) // 1000
    tokens = f"{numbers['inputTokens']:,} in ({numbers['cachedTokens']:,} cached) · {numbers['outputTokens']:,} out"
    lines += ["", f"Tokens: {tokens}", f"Model requests: {numbers['requests']:,}",
              f"Tool calls: {numbers['toolCalls']:,}", f"Prompts: {numbers['prompts']:,}",
              f"Time: {seconds // 3600}h {seconds // 60 % 60}m {seconds % 60}s", "", f"Tasks ({len(status.tasks)}):"]
    lines += _task_lines(status.tasks)
    lines += ["", f"Subagents ({len(status.agents)}):", *_task_lines(status.agents), "",
              f"Commands ({len(status.commands)}): " + " ".join(f"/{name}" for name in status.commands)]
    return "\n".join(lines) + "\n"


async def read_status(request: Request, model: str) -> SessionStatus:
    """The six answers, asked at once; `model`: the chat's model as its state names it."""
    answers = await asyncio.gather(*(request(method, {}) for method in (
        CONTEXT_METHOD, STATS_METHOD, TASKS_METHOD, AGENTS_METHOD, COMMANDS_METHOD, PROVIDERS_METHOD)))
    context = context_use(answers[0])
    return SessionStatus(context, stats(answers[1]), tasks(answers[2]), tasks(answers[3], "subagents"),
                         commands(answers[4]), model or context.model, configured_providers(answers[5]))
