"""Tokens a chat spends, read from what its agent reports, for the status bar,
the line at the end of each turn and the headless driver.

qwen 0.24.4 reports each model request of a turn twice: an empty
`agent_message_chunk` whose `_meta.usage` is `{inputTokens, outputTokens,
totalTokens, thoughtTokens?, cachedReadTokens?}` (with `_meta.durationMs`),
then a `usage_update {used, size}` (the request's prompt tokens and the
model's context window). A subagent's requests (the task tool) come as the
same chunks with `_meta.parentToolCallId`: their tokens count, their context
is not the chat's. A reloaded session replays the chunks, not the updates. Everything here is the agent's word: a count that is not a whole
number from 0 to MAX_TOKENS is dropped, never trusted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_TOKENS = 10**12  # far above any context window or session: a bigger count is garbage


def token_count(value: object) -> int | None:
    """`value` as a count of tokens, or None when it cannot be one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    count = int(value)
    return count if 0 <= count <= MAX_TOKENS else None


@dataclass(frozen=True)
class Tokens:
    """One model request's tokens: prompt (of which cached) and answer."""

    input: int = 0
    output: int = 0
    cached: int = 0

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.output + other.output, self.cached + other.cached)


def tokens_of(meta: object) -> Tokens | None:
    """The tokens in a message chunk's `_meta.usage` (qwen's, or the same
    names' OpenAI-like siblings `cachedTokens`), None without a valid count."""
    usage = meta.get("usage") if isinstance(meta, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = {name: token_count(usage.get(name)) for name in ("inputTokens", "outputTokens")}
    if counts["inputTokens"] is None and counts["outputTokens"] is None:
        return None
    cached = token_count(usage.get("cachedReadTokens", usage.get("cachedTokens")))
    return Tokens(counts["inputTokens"] or 0, counts["outputTokens"] or 0, cached or 0)


@dataclass
class ChatUsage:
    """A chat's tokens: its last (or running) turn's, its session's, and how
    full the context window is (from `usage_update`, else from the last request)."""

    turn: Tokens = field(default_factory=Tokens)
    session: Tokens = field(default_factory=Tokens)
    requests: int = 0  # in the turn
    reported: bool = False  # the agent reported tokens in this session
    context_used: int | None = None
    context_size: int | None = None

    def start_turn(self) -> None:
        self.turn, self.requests = Tokens(), 0

    def new_session(self) -> None:
        """A new or reloaded session: nothing counted yet (a reload replays its counts)."""
        self.turn, self.session, self.requests, self.reported = Tokens(), Tokens(), 0, False
        self.context_used = None

    def add_request(self, meta: object, *, replaying: bool = False) -> bool:
        """A request's tokens from a chunk's `_meta`; False when it holds none.
        A replayed request counts for the session only."""
        tokens = tokens_of(meta)
        if tokens is None:
            return False
        self.session += tokens
        self.reported = True
        if not replaying:
            self.turn += tokens
            self.requests += 1
            if not (isinstance(meta, dict) and "parentToolCallId" in meta):  # a subagent's context is its own
                self.context_used = tokens.input + tokens.output  # until a usage_update says better
        return True

    def set_context(self, used: object, size: object) -> bool:
        """A `usage_update`: the tokens in the context and the window's size."""
        used_count, size_count = token_count(used), token_count(size)
        if used_count is None:
            return False
        self.context_used = used_count
        if size_count:
            self.context_size = size_count
        return True

    def set_context_size(self, size: object) -> None:
        """The model's window from the session's answer (qwen's `contextLimit`)."""
        count = token_count(size)
        if count:
            self.context_size = count

    def context_percent(self) -> int | None:
        if self.context_used is None or not self.context_size:
            return None
        return min(100, round(100 * self.context_used / self.context_size))

    def report(self) -> dict[str, Any]:
        """The headless driver's `usage`: the session's tokens and the context
        in use, as far as the agent reported them; `turn`: the last turn's."""
        answer: dict[str, Any] = {}
        if self.reported:
            answer.update(inputTokens=self.session.input, outputTokens=self.session.output,
                          cachedTokens=self.session.cached)
            answer["turn"] = {"inputTokens": self.turn.input, "outputTokens": self.turn.output,
                              "cachedTokens": self.turn.cached, "requests": self.requests}
        if self.context_used is not None:
            answer["contextUsed"] = self.context_used
        if self.context_size is not None:
            answer["contextSize"] = self.context_size
        return answer


def short_count(count: int) -> str:
    """1234 -> "1.2k", 3_400_000 -> "3.4M": a status bar's worth."""
    for limit, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if count >= limit:
            return f"{count / limit:.1f}".rstrip("0").rstrip(".") + suffix
    return str(count)


def tokens_text(tokens: Tokens) -> str:
    cached = f" ({tokens.cached:,} cached)" if tokens.cached else ""
    return f"{tokens.input:,} in{cached} · {tokens.output:,} out"


def status_text(usage: ChatUsage) -> str:
    """The chat's status item's part: context fullness and the session's tokens."""
    parts = []
    percent = usage.context_percent()
    if percent is not None:
        parts.append(f"{percent}% context")
    if usage.reported:
        parts.append(f"{short_count(usage.session.input)} in / {short_count(usage.session.output)} out")
    return " · ".join(parts)


USAGE_HEADER = "> Tokens: "  # the turn's usage line; folds.py folds its details under it


def turn_text(usage: ChatUsage) -> str:
    """The turn's usage, for the end of the turn in the transcript: one line,
    with the details (indented) folded under it; "" when nothing was reported."""
    if not usage.reported or not usage.requests:
        return ""
    percent = usage.context_percent()
    head = tokens_text(usage.turn) + (f" · {percent}% context" if percent is not None else "")
    details = [f"this turn: {tokens_text(usage.turn)} in {usage.requests} request(s)",
               f"session: {tokens_text(usage.session)}"]
    if usage.context_used is not None:
        size = f" of {usage.context_size:,}" if usage.context_size else ""
        details.append(f"context: {usage.context_used:,}{size} tokens")
    return USAGE_HEADER + head + "\n" + "".join(f"    {line}\n" for line in details) + "\n"
