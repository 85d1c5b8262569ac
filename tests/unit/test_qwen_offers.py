"""The bounds and shapes of qwen's answers to what the chat offers beside
it (core/chat/offers/): strings at most 64 KB, lists at most 1,000 entries,
control and bidi characters out of what is shown, a wrong shape a clear
`BadAnswer`, the qwen-only gate, and the aside thread's follow-ups."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from qwencompanion_src.core.chat.chat_state import ChatState
from qwencompanion_src.core.chat.offers.asides import KEPT, AsideThread, follow_up
from qwencompanion_src.core.chat.offers.qwen_calls import (
    MAX_QUESTION_CHARS,
    MAX_TEXT_CHARS,
    BadAnswer,
    NotOffered,
    aside_answer,
    offered,
    recap,
    recap_text,
    suggestion_of,
)
from qwencompanion_src.core.chat.offers.session_status import (
    commands,
    configured_providers,
    context_use,
    read_status,
    stats,
    status_text,
    tasks,
)

BIDI, ESCAPE = "\u202e", "\x1b[2J"


def test_an_answer_is_cut_to_64_kb_and_cleaned_line_by_line() -> None:
    answer = aside_answer({"answer": f"{BIDI}one{ESCAPE}\n\ntwo\u200b\n" + "x" * (MAX_TEXT_CHARS * 2)})
    assert len(answer) <= MAX_TEXT_CHARS
    assert answer.startswith("one[2J\n\ntwo\n")
    assert BIDI not in answer and "\x1b" not in answer and "\u200b" not in answer


@pytest.mark.parametrize(("answer", "said"), [
    (None, "has no 'answer'"), ([], "has no 'answer'"), ({"answer": 5}, "is not text"),
    ({"answer": {"text": "hi"}}, "is not text"),
])
def test_an_aside_answer_of_the_wrong_shape_is_a_bad_answer(answer: Any, said: str) -> None:
    with pytest.raises(BadAnswer, match=said):
        aside_answer(answer)


def test_a_null_answer_or_recap_is_said_in_words() -> None:
    assert "no answer" in aside_answer({"sessionId": "s", "answer": None})
    assert recap_text({"recap": None}) is None and recap_text({"recap": "  "}) is None
    with pytest.raises(NotOffered, match="no summary"):
        asyncio.run(recap(_answering({"recap": None})))


def _answering(answer: Any) -> Any:
    async def request(method: str, params: dict[str, Any]) -> Any:
        return answer(method) if callable(answer) else answer
    return request


def test_only_qwen_is_asked_and_only_with_a_conversation() -> None:
    state = ChatState(agent_name="plain-agent 1.0", session_id="s")
    with pytest.raises(NotOffered, match="not offered by this agent"):
        offered(state, "Ask Aside")
    with pytest.raises(NotOffered, match="no conversation"):
        offered(ChatState(agent_name="qwen-code 0.24.4"), "Ask Aside")
    offered(ChatState(agent_name="qwen-code 0.24.4", session_id="s"), "Ask Aside")  # no error


def test_a_suggestion_is_one_line_of_at_most_500_characters() -> None:
    assert suggestion_of({"suggestion": f"run{BIDI} the\ntests{ESCAPE}"}) == "run the tests[2J"
    assert len(suggestion_of({"suggestion": "y" * 100_000}) or "") == 500
    assert suggestion_of({"suggestion": 5}) is None and suggestion_of([]) is None
    assert suggestion_of({"suggestion": f" {BIDI}\n "}) is None


def test_the_aside_thread_keeps_the_newest_20_and_follow_ups_carry_it() -> None:
    thread = AsideThread()
    for n in range(KEPT + 5):
        aside, sent = thread.ask(f"question {n}")
        thread.answered(aside, f"answer {n}")
    kept = thread.asides()
    assert len(kept) == KEPT and kept[0].question == "question 5" and kept[-1].answer == f"answer {KEPT + 4}"
    _, sent = thread.ask("and now?")
    assert sent.endswith("and now?") and f"A: answer {KEPT + 4}" in sent and len(sent) <= MAX_QUESTION_CHARS


def test_a_follow_up_keeps_the_newest_asides_that_fit_in_qwens_limit() -> None:
    thread = AsideThread()
    for n in range(3):
        aside, _ = thread.ask(f"q{n}")
        thread.answered(aside, str(n) * 1500)
    _, sent = thread.ask("last")
    assert len(sent) <= MAX_QUESTION_CHARS and "q2" in sent and "q0" not in sent
    assert follow_up([], "alone") == "alone"
    assert len(follow_up([], "z" * 10_000)) == MAX_QUESTION_CHARS


def test_context_use_takes_whole_numbers_and_leaves_the_rest() -> None:
    use = context_use({"usage": {"totalTokens": 12.7, "contextWindowSize": -3, "modelName": f"m{BIDI}",
                                 "breakdown": {"messages": 5, "thresholds": {"warn": 1}, "tier": "safe", "flag": True,
                                               **{f"p{n}": n for n in range(2000)}}}})
    assert (use.used, use.size, use.model) == (12, 0, "m")
    assert use.parts["messages"] == 5 and "thresholds" not in use.parts and "flag" not in use.parts
    assert len(use.parts) <= 1000
    with pytest.raises(BadAnswer, match="not an object"):
        context_use({"usage": "full"})


def test_lists_are_cut_to_1000_entries_and_their_text_cleaned() -> None:
    many = {"tasks": [{"id": "t", "description": f"{BIDI}d{ESCAPE}" + "x" * 999, "status": 3}] * 4000}
    listed = tasks(many)
    assert len(listed) == 1000 and listed[0]["status"] == "" and listed[0]["description"].startswith("d[2J")
    assert len(listed[0]["description"]) <= 200
    assert len(commands({"availableCommands": [{"name": "btw"}, 7, {"name": ""}] * 1000})) == 334
    assert configured_providers({"providers": [{"id": "a", "label": "A", "existingConfig": {}}, {"id": "b"}]}) == ["A"]
    with pytest.raises(BadAnswer, match="not a list"):
        tasks({"tasks": {"a": 1}})


def test_stats_sum_the_models_and_ignore_what_is_not_a_count() -> None:
    numbers = stats({"durationMs": 65_000, "promptCount": 2, "tools": {"totalCalls": 3},
                     "models": {"a": {"api": {"totalRequests": 2}, "tokens": {"prompt": 100, "candidates": 5, "cached": 7}},
                                "b": {"api": {"totalRequests": "x"}, "tokens": {"prompt": float("nan"), "candidates": 1}},
                                "c": "broken"}})
    assert numbers == {"inputTokens": 100, "outputTokens": 6, "totalTokens": 0, "cachedTokens": 7, "requests": 2,
                       "toolCalls": 3, "prompts": 2, "durationMs": 65_000}


def test_the_status_is_read_at_once_and_shown() -> None:
    answers = {
        "qwen/status/session/context_usage": {"usage": {"totalTokens": 50, "contextWindowSize": 1000,
                                                        "breakdown": {"messages": 50}}},
        "qwen/status/session/stats": {"durationMs": 3_723_000},
        "qwen/status/session/tasks": {"tasks": [{"id": "1", "kind": "shell", "description": "npm test",
                                                 "status": "running"}]},
        "qwen/status/session/agents": {"tasks": []},
        "qwen/status/session/supported_commands": {"availableCommands": [{"name": "btw"}]},
        "qwen/providers/list": {"providers": []},
    }
    status = asyncio.run(read_status(_answering(answers.__getitem__), "fake-model"))
    text = status_text(status, "12:00:00")
    assert "Context: 50 of 1,000 tokens (5.0%)" in text and "running  shell  npm test" in text
    assert "Time: 1h 2m 3s" in text and "/btw" in text and "Model: fake-model" in text
    assert status.report()["context"] == {"used": 50, "size": 1000, "parts": {"messages": 50}}


def test_memory_answers_are_bounded_and_their_paths_checked() -> None:
    from qwencompanion_src.core.chat.offers.memory import MAX_MEMORY_TEXT_BYTES, forget, memory_paths, remember

    sent: list[dict[str, Any]] = []

    def answering(answer: Any) -> Any:
        async def request(method: str, params: dict[str, Any]) -> Any:
            sent.append(params)
            return answer
        return request

    change = asyncio.run(remember(answering({"summary": f"Done{BIDI}.", "filesTouched": ["/m/a.md", 5] * 900}),
                                  "é" * MAX_MEMORY_TEXT_BYTES))
    assert change.summary == "Done." and len(change.items) == 1000 and change.items[:2] == ["/m/a.md", "5"]
    assert len(sent[0]["content"].encode()) <= MAX_MEMORY_TEXT_BYTES
    assert asyncio.run(forget(answering({"removedEntries": []}), "x")).summary == "done"
    with pytest.raises(BadAnswer, match="not an object"):
        asyncio.run(forget(answering(["no"]), "x"))
    paths = asyncio.run(memory_paths(answering({"paths": {
        "userMemoryFile": "/home/u/.qwen/QWEN.md", "projectMemoryFile": f"/p/{BIDI}QWEN.md", "autoMemoryDir": 7}})))
    assert paths == [("your memory (every project)", "/home/u/.qwen/QWEN.md")]  # a path with a bidi character is left out
    with pytest.raises(BadAnswer):
        asyncio.run(memory_paths(answering({"paths": []})))
