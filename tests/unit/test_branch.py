"""Branch from Here (pure part): the branch point of each prompt, from the
prompt's answer or, for a replayed prompt, from qwen's transcript (shapes as
qwen 0.24.4 sends them), what qwen is asked, its answer read as hostile input,
and the refusals (a turn running, no session, an agent other than qwen)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from qwencompanion_src.core.chat.agent.agents import TITLE_MAX_CHARS
from qwencompanion_src.core.chat.chat_state import ChatState
from qwencompanion_src.core.chat.history.branch import (
    BRANCH_METHOD,
    TRANSCRIPT_METHOD,
    Branch,
    BranchRefused,
    branch,
    branch_of,
    branch_point_of,
    refusal,
    transcript_branch_point,
)
from qwencompanion_src.core.chat.history.rewind import PromptLog


def qwen_state(agent: str = "ready") -> ChatState:
    return ChatState(agent_status=agent, session_id="s1", agent_name="qwen-code 0.24.4")


def chunk(kind: str, text: str, branch_record: str | None = None) -> dict[str, Any]:
    """An event of qwen's transcript: a user or agent chunk, an answer's last chunk with its branch point."""
    transcript: dict[str, Any] = {"sourceRecordIds": ["r"]}
    if branch_record is not None:
        transcript["branchRecordId"] = branch_record
    return {"v": 1, "type": "session_update",
            "data": {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "_meta": {"qwenTranscript": transcript}}}


TRANSCRIPT = {"v": 1, "sessionId": "s1", "hasMore": False, "events": [
    chunk("user_message_chunk", "P0"),
    chunk("agent_message_chunk", ""),
    chunk("agent_message_chunk", "A0", "cp-0"),
    chunk("user_message_chunk", "P1 first piece"),
    chunk("user_message_chunk", "P1 second piece"),  # one prompt in two chunks
    chunk("tool_call", "", None),
    chunk("agent_message_chunk", "A1", "cp-1"),
    chunk("user_message_chunk", "P2 (cancelled)"),
    chunk("agent_message_chunk", "partial"),
    chunk("user_message_chunk", "P3"),
    chunk("agent_message_chunk", "A3", "cp-3"),
]}


def test_the_branch_point_of_a_prompts_answer() -> None:
    meta = {"qwen.branchPoint": {"assistantRecordUuid": "a-1", "checkpointUuid": "cp-1"}}
    assert branch_point_of(meta) == "cp-1"  # the checkpoint, not the answer's record: qwen refuses that one
    assert branch_point_of(None) is None and branch_point_of({"qwen.branchPoint": "cp"}) is None
    assert branch_point_of({"qwen.branchPoint": {"checkpointUuid": "x" * 101}}) is None


def test_the_branch_point_of_each_prompt_in_qwens_transcript() -> None:
    assert [transcript_branch_point(TRANSCRIPT, index) for index in range(5)] == ["cp-0", "cp-1", None, "cp-3", None]
    assert transcript_branch_point({"events": "no"}, 0) is None and transcript_branch_point(None, 0) is None
    hostile = {"events": [chunk("user_message_chunk", "P"), {"data": None}, 7,
                          chunk("agent_message_chunk", "A", "y" * 500)]}
    assert transcript_branch_point(hostile, 0) is None


def test_branching_is_refused_while_a_turn_runs_and_for_agents_other_than_qwen() -> None:
    assert refusal(qwen_state(), queued=0) is None
    assert "a turn is running" in str(refusal(qwen_state("busy"), queued=0))
    assert "queued" in str(refusal(qwen_state(), queued=2))
    assert "no conversation" in str(refusal(ChatState(agent_status="ready", agent_name="qwen-code 0.24.4"), queued=0))
    other = ChatState(agent_status="ready", session_id="s1", agent_name="gemini-cli 0.30")
    assert "gemini-cli 0.30 cannot branch" in str(refusal(other, queued=0))


def test_qwens_answer_is_read_as_hostile_input() -> None:
    assert branch_of({"newSessionId": "n1", "title": " P0(1)\n"}) == Branch("n1", "P0(1)")
    assert branch_of({"newSessionId": "n1"}) == Branch("n1", "")
    assert branch_of({"newSessionId": "n1", "title": "t" * 10_000}).title == "t" * (TITLE_MAX_CHARS - 1) + "…"
    assert branch_of({"newSessionId": "n1", "title": "\u202eevil\x1b[2J\x00"}).title == "evil[2J"
    for answer in ({"newSessionId": ""}, {"newSessionId": 5}, {"success": True}, None, {"newSessionId": "x" * 10_000}):
        with pytest.raises(BranchRefused, match="did not give the branch's session"):
            branch_of(answer)


class Agent:
    """qwen's side: the calls asked, answered from a script."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.calls.append((method, params))
        return TRANSCRIPT if method == TRANSCRIPT_METHOD else {"newSessionId": "n1", "title": "P0(1)"}


def test_a_live_prompt_branches_at_the_point_its_answer_gave() -> None:
    prompts = PromptLog()
    for index in range(2):
        prompts.sent(f"P{index}", [], layout_turn=index + 1)
        prompts.turn_ended(f"live-{index}")
    agent = Agent()
    made = asyncio.run(branch(qwen_state(), prompts, 0, agent.request, 0, "/project"))
    assert made == Branch("n1", "P0(1)")
    assert agent.calls == [(BRANCH_METHOD, {"sessionId": "s1", "atRecordId": "live-0"})]


def test_a_replayed_prompt_branches_at_the_point_of_qwens_transcript() -> None:
    prompts = PromptLog()
    for index in range(4):
        prompts.replayed(f"P{index}", layout_turn=index + 1)
    agent = Agent()
    asyncio.run(branch(qwen_state(), prompts, 0, agent.request, 1, "/project"))
    assert agent.calls == [(TRANSCRIPT_METHOD, {"sessionId": "s1", "cwd": "/project"}),
                           (BRANCH_METHOD, {"sessionId": "s1", "atRecordId": "cp-1"})]
    with pytest.raises(BranchRefused, match="no branch point for prompt 3"):
        asyncio.run(branch(qwen_state(), prompts, 0, agent.request, 2, "/project"))  # cancelled: none
    with pytest.raises(BranchRefused, match="there is no prompt 4"):
        asyncio.run(branch(qwen_state(), prompts, 0, agent.request, 4, "/project"))


def test_a_live_prompt_whose_turn_did_not_end_normally_is_refused_without_asking() -> None:
    prompts = PromptLog()
    prompts.sent("P0", [], layout_turn=1)
    prompts.turn_ended()  # cancelled: qwen gave no branch point
    agent = Agent()
    with pytest.raises(BranchRefused, match="no branch point for prompt 1"):
        asyncio.run(branch(qwen_state(), prompts, 0, agent.request, 0, "/project"))
    with pytest.raises(BranchRefused, match="a turn is running"):
        asyncio.run(branch(qwen_state("busy"), prompts, 0, agent.request, 0, "/project"))
    assert agent.calls == []


def test_where_answers_give_no_branch_points_a_live_prompt_asks_the_transcript() -> None:
    """qwen serve: a turn's end carries no branch point, so qwen's transcript gives it."""
    prompts = PromptLog()
    for index in range(2):
        prompts.sent(f"P{index}", [], layout_turn=index + 1)
        prompts.turn_ended()
    agent = Agent()
    asyncio.run(branch(qwen_state(), prompts, 0, agent.request, 1, "/project", live_points=False))
    assert agent.calls[0] == (TRANSCRIPT_METHOD, {"sessionId": "s1", "cwd": "/project"})
    assert agent.calls[1][0] == BRANCH_METHOD and agent.calls[1][1]["atRecordId"] is not None
