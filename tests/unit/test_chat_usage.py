"""A chat's usage, read from what the agent reports (hostile input): per
request, per turn and per session, the context's fullness, and how it is shown."""

from __future__ import annotations

from typing import Any

import pytest

from qwencompanion_src.core.chat.agent.usage import (
    MAX_TOKENS,
    ChatUsage,
    Tokens,
    short_count,
    status_text,
    token_count,
    tokens_of,
    turn_text,
)
from qwencompanion_src.core.chat.chat_state import ChatState
from qwencompanion_src.core.chat.transcript.folds import WorkFolds


def qwen_meta(inputs: Any = 1200, outputs: Any = 80, cached: Any = None) -> dict[str, Any]:
    """`_meta` of qwen 0.24.4's usage chunk (createTranscriptUsageUpdate)."""
    usage: dict[str, Any] = {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": 1280}
    if cached is not None:
        usage["cachedReadTokens"] = cached
    return {"usage": usage, "durationMs": 812}


def test_a_turn_of_two_requests_adds_up_per_turn_and_per_session() -> None:
    usage = ChatUsage()
    usage.start_turn()
    assert usage.add_request(qwen_meta(1000, 50, cached=600))
    assert usage.add_request(qwen_meta(1100, 30))
    assert usage.set_context(1100, 131072)
    assert usage.turn == Tokens(2100, 80, 600) and usage.requests == 2
    usage.start_turn()
    usage.add_request(qwen_meta(1200, 10))
    assert usage.turn == Tokens(1200, 10, 0)
    assert usage.session == Tokens(3300, 90, 600)
    assert usage.report() == {
        "inputTokens": 3300, "outputTokens": 90, "cachedTokens": 600, "contextUsed": 1210, "contextSize": 131072,
        "turn": {"inputTokens": 1200, "outputTokens": 10, "cachedTokens": 0, "requests": 1},
    }


def test_a_subagents_request_counts_its_tokens_but_not_its_context() -> None:
    usage = ChatUsage()
    usage.start_turn()
    usage.add_request(qwen_meta(1000, 50))
    subagent = {**qwen_meta(300, 30), "parentToolCallId": "call_7", "subagentType": "general-purpose"}
    assert usage.add_request(subagent)
    assert usage.turn == Tokens(1300, 80) and usage.context_used == 1050


def test_a_replayed_session_counts_for_the_session_not_the_turn() -> None:
    usage = ChatUsage()
    usage.add_request(qwen_meta(500, 5), replaying=True)
    assert usage.session == Tokens(500, 5) and usage.turn == Tokens() and usage.requests == 0
    assert turn_text(usage) == ""  # no turn ran: no line
    usage.new_session()
    assert usage.report() == {}


def test_a_new_session_forgets_the_old_sessions_context_fullness() -> None:
    """Defect guarded: after /clear the status bar kept the old session's
    context fullness (the new session's context is empty until it is told)."""
    usage = ChatUsage()
    usage.set_context_size(10_000)
    usage.start_turn()
    usage.add_request(qwen_meta(7000, 500))
    assert usage.context_percent() == 75 and status_text(usage).startswith("75% context")
    usage.new_session()
    assert usage.context_percent() is None and "context" not in status_text(usage)


@pytest.mark.parametrize("bad", [-1, -10**6, MAX_TOKENS + 1, 10**30, 1.5, float("nan"), float("inf"), "12", None,
                                 True, [3], {"n": 3}])
def test_hostile_counts_are_dropped_without_a_crash(bad: Any) -> None:
    assert token_count(bad) is None
    usage = ChatUsage()
    assert not usage.add_request(qwen_meta(bad, bad, cached=bad))
    assert not usage.set_context(bad, bad)
    usage.set_context_size(bad)
    assert usage.report() == {} and status_text(usage) == ""


@pytest.mark.parametrize("meta", [None, "usage", 3, [], {"usage": None}, {"usage": "lots"}, {"usage": [1, 2]},
                                  {"usage": {}}, {"other": {"inputTokens": 3}}])
def test_meta_without_usage_is_no_usage(meta: Any) -> None:
    assert tokens_of(meta) is None
    assert not ChatUsage().add_request(meta)


def test_one_bad_count_keeps_the_good_ones() -> None:
    assert tokens_of(qwen_meta(100, -5, cached="x")) == Tokens(100, 0, 0)
    assert tokens_of({"usage": {"inputTokens": 7.0, "outputTokens": 2, "cachedTokens": 3}}) == Tokens(7, 2, 3)


def test_context_over_its_size_shows_full_not_more() -> None:
    usage = ChatUsage()
    usage.set_context(300_000, 131_072)
    assert usage.context_percent() == 100
    usage.set_context(10, 0)  # a zero size keeps the one known
    assert usage.context_size == 131_072


def test_the_status_shows_context_and_session_tokens() -> None:
    usage = ChatUsage()
    usage.add_request(qwen_meta(12_345, 678))
    usage.set_context(12_345, 131_072)
    assert status_text(usage) == "9% context · 12.3k in / 678 out"
    assert [short_count(n) for n in (999, 1000, 1500, 2_000_000, 3 * 10**9)] == ["999", "1k", "1.5k", "2M", "3G"]


def test_the_turn_line_folds_its_details_under_it() -> None:
    usage = ChatUsage()
    usage.start_turn()
    usage.add_request(qwen_meta(2000, 40, cached=1500))
    usage.set_context(2000, 100_000)
    text = turn_text(usage)
    head, _, rest = text.partition("\n")
    assert head == "> Tokens: 2,000 in (1,500 cached) · 40 out · 2% context"
    assert "session: 2,000 in (1,500 cached) · 40 out" in rest and "context: 2,000 of 100,000 tokens" in rest
    transcript = "## Qwen\nDone.\n\n" + text
    folds = WorkFolds().edit(0, 0, transcript)
    assert [transcript[a:b] for a, b in folds] == [text[len(head):].rstrip("\n")]


def test_the_chat_state_reads_qwens_updates_through_the_parser() -> None:
    from acp.schema import UsageUpdate

    state = ChatState()
    state.adopt_session({"models": {"currentModelId": "m", "availableModels": [
        {"modelId": "m", "name": "m", "_meta": {"contextLimit": -4}}]}})
    assert state.context_size is None  # a negative window is ignored
    assert state.adopt_update(UsageUpdate(session_update="usage_update", used=50, size=1000))
    assert (state.context_used, state.context_size) == (50, 1000)
    assert state.adopt_usage(qwen_meta(10, 1)) and state.usage.session == Tokens(10, 1)


def test_mode_model_and_command_names_from_a_hostile_agent_are_cut_when_adopted() -> None:
    from qwencompanion_src.core.chat.chat_state import DESCRIPTION_MAX_CHARS, NAME_MAX_CHARS

    huge = "n" * 1_000_000
    state = ChatState()
    state.adopt_session({
        "modes": {"currentModeId": "plan", "availableModes": [{"id": "plan", "name": huge, "description": huge}]},
        "models": {"currentModelId": "$runtime|openai|" + huge, "availableModels": [{"modelId": "m", "name": huge}]},
    })
    cut = "n" * (NAME_MAX_CHARS - 1) + "…"
    assert state.mode_name() == cut
    assert state.modes[0].id == "plan" and len(state.modes[0].description) == DESCRIPTION_MAX_CHARS
    assert state.model_name() in (cut, "n" * NAME_MAX_CHARS)  # read out of an id the list does not name
    assert len(state.models[0].name) == NAME_MAX_CHARS
