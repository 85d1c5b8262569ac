"""The rewind model: the session's prompts and the turns their writes belong
to, what qwen is asked (by index when the package holds every change, else by
promptId with its file history), its answer read as hostile input, the files
to restore since a prompt, and the transcript cut at the prompt's turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.chat.chat_state import ChatState
from qwencompanion_src.core.chat.history.rewind import (
    PromptLog,
    RewindOutcome,
    RewindRefused,
    RewindTarget,
    changes_since,
    covers,
    files_of,
    is_qwen,
    prompt_id_of,
    refusal,
    rewind,
)
from qwencompanion_src.core.chat.history.turn_changes import CHECKPOINT_BUDGET, REVERTED, TurnChanges
from qwencompanion_src.core.chat.transcript.transcript import Transcript
from tests.unit.test_turn_changes import agent_writes


def qwen_state(agent: str = "ready") -> ChatState:
    return ChatState(agent_status=agent, session_id="s1", agent_name="qwen-code 0.24.4")


def test_prompts_remember_their_transcript_turn_and_the_turn_their_writes_go_to() -> None:
    prompts = PromptLog()
    prompts.sent("one", [], layout_turn=1)
    prompts.turn_ended()
    prompts.turn_ended()  # a turn that failed before its prompt reached the agent still ends one
    prompts.sent("two", [{"type": "image"}], layout_turn=3)
    assert [(p.layout_turn, p.changes_turn) for p in (prompts.get(0), prompts.get(1))] == [(1, 1), (3, 3)]
    assert prompts.index_at_turn(2) == 0 and prompts.index_at_turn(7) == 1 and prompts.index_at_turn(0) is None
    prompts.replayed("rel", layout_turn=9)
    prompts.replayed("oaded", layout_turn=9)  # pieces of one replayed prompt join
    assert prompts.texts() == ["one", "two", "reloaded"] and prompts.get(2).changes_turn is None
    prompts.cut(1)
    assert prompts.texts() == ["one"]
    with pytest.raises(RewindRefused, match="there is no prompt 1 "):
        prompts.get(1)


def test_rewinding_is_refused_while_a_turn_runs_or_waits_and_for_agents_other_than_qwen() -> None:
    assert refusal(qwen_state(), queued=0) is None
    assert "a turn is running" in str(refusal(qwen_state("busy"), queued=0))
    assert "queued" in str(refusal(qwen_state(), queued=1))
    other = ChatState(agent_status="ready", session_id="s1", agent_name="gemini-cli 0.30")
    assert not is_qwen(other) and "gemini-cli 0.30 cannot rewind" in str(refusal(other, queued=0))
    assert not is_qwen(ChatState(agent_name="qwen-code-fork 1.0"))


def test_qwens_answers_are_read_as_hostile_input() -> None:
    snapshots = {"snapshots": [{"promptId": "s1########1", "turnIndex": 0}, {"promptId": 7, "turnIndex": 1},
                               "junk", {"promptId": "s1########4", "turnIndex": 2}]}
    assert prompt_id_of(snapshots, 0) == "s1########1" and prompt_id_of(snapshots, 2) == "s1########4"
    assert prompt_id_of(snapshots, 1) is None and prompt_id_of({"snapshots": "no"}, 0) is None
    assert prompt_id_of(None, 0) is None
    assert files_of({"success": True, "filesChanged": ["/a", 3, None], "filesFailed": "x"}) == (["/a"], [])
    assert files_of({"success": True, "filesChanged": ["/f"] * 5000})[0] == ["/f"] * 1000
    for answer in ({"success": "yes"}, [], None, {"filesChanged": ["/a"]}):
        with pytest.raises(ValueError, match="did not confirm"):
            files_of(answer)


def test_the_files_since_a_prompt_go_back_to_their_first_checkpoint(tmp_path: Path) -> None:
    kept, made, ours = tmp_path / "kept.txt", tmp_path / "made.txt", tmp_path / "ours.txt"
    kept.write_bytes(b"before\r\n")
    ours.write_text("mine\n")
    turns = TurnChanges()
    agent_writes(turns, ours, "turn 1\n")  # turn 1: before the prompt rewound to
    turns.end_turn()
    agent_writes(turns, kept, "turn 2\n")
    turns.end_turn()
    agent_writes(turns, kept, "turn 3\n")
    agent_writes(turns, made, "new\n")
    turns.changed_outside(str(tmp_path / "built.txt"))
    found = changes_since(turns, 2)
    assert [(c.path, c.before and c.before.data, c.after) for c in found.changes] == [
        (str(kept), b"before\r\n", "turn 3\n"), (str(made), None, "new\n")]
    assert found.outside == [str(tmp_path / "built.txt")] and found.unknown == []
    assert covers(turns, 2) and not covers(turns, None)
    turns.mark(3, str(kept), REVERTED)  # Undo Turn of turn 3: it holds turn 2's text again
    assert changes_since(turns, 2).changes[0].after == "turn 2\n"


def test_a_checkpoint_past_the_budget_leaves_the_rewind_to_qwen(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 200)
    turns = TurnChanges(budget=100)
    agent_writes(turns, big, "y")
    found = changes_since(turns, 1)
    assert found.changes == [] and found.unknown == [str(big)] and not covers(turns, 1)
    assert "was not kept" in found.not_restored()[0]
    assert CHECKPOINT_BUDGET > 100


def test_transcript_truncate_drops_the_block_and_all_after_it() -> None:
    transcript = Transcript()
    for block, text in [("t1.user", "## You\n\none\n\n"), ("t1.agent1", "answer\n\n"), ("t2.note", "> note\n\n"),
                        ("t3.user", "## You\n\ntwo\n\n"), ("t3.agent1", "more\n\n")]:
        transcript.append(block, text)
    assert transcript.block_at(0) == "t1.user" and transcript.block_at(len("## You\n\none\n\n")) == "t1.agent1"
    assert transcript.block_at(10_000) == "t3.agent1"
    cut_at = len(transcript.text()) - len("## You\n\ntwo\n\nmore\n\n")
    edit = transcript.truncate("t3.user")
    assert (edit.offset, edit.erase, edit.text) == (cut_at, len("## You\n\ntwo\n\nmore\n\n"), "")
    assert transcript.text().endswith("> note\n\n") and transcript.block("t3.user") == ""
    transcript.append("t4.user", "three")
    assert transcript.text().endswith("> note\n\nthree")
    assert transcript.truncate("t9.user").erase == 0  # no such block: nothing goes


class Files:
    def __init__(self, covered: bool, agent_may_restore: bool = True) -> None:
        self.covered = covered
        self.agent_may_restore = agent_may_restore
        self.restored_since: list[int] = []

    def covers(self, since: int | None) -> bool:
        return self.covered

    async def restore(self, since: int) -> RewindOutcome:
        self.restored_since.append(since)
        return RewindOutcome(["/ours", "/both"], ["/theirs: changed since"])


def target(state: ChatState, answers: dict[str, Any],
           notes: list[str] | None = None) -> tuple[RewindTarget, list[tuple[str, Any]], list[Any]]:
    asked: list[tuple[str, Any]] = []
    resent: list[Any] = []
    cuts: list[int] = []
    prompts = PromptLog()
    for turn, text in enumerate(["one", "two", "three"], start=1):
        prompts.sent(text, [{"type": "resource_link", "name": text}], layout_turn=turn * 2)
        prompts.turn_ended()

    async def request(method: str, params: Any) -> Any:
        asked.append((method, params))
        return answers[method]

    chat = RewindTarget(state, prompts, lambda: 0, request, cuts.append, lambda t, c: resent.append((t, c)),
                        (notes if notes is not None else []).append)
    return chat, asked, resent


def test_a_covered_rewind_asks_qwen_by_index_and_restores_the_files_itself() -> None:
    chat, asked, resent = target(qwen_state(), {"rewindSession": {"success": True, "filesChanged": []}})
    files = Files(covered=True)
    outcome = asyncio.run(rewind(chat, 1, "two, edited", files))
    assert asked == [("rewindSession", {"sessionId": "s1", "targetTurnIndex": 1, "rewindFiles": False})]
    assert files.restored_since == [2] and outcome.files_restored == ["/ours", "/both"]
    assert chat.prompts.texts() == ["one"] and resent == [("two, edited", [{"type": "resource_link", "name": "two"}])]


def test_an_uncovered_rewind_lets_qwen_restore_by_promptid_and_lists_each_file_once() -> None:
    answers = {"qwen/status/session/rewind_snapshots": {"snapshots": [{"promptId": "s1########7", "turnIndex": 2}]},
               "rewindSession": {"success": True, "filesChanged": ["/both", "/qwen"], "filesFailed": ["/gone"]}}
    chat, asked, resent = target(qwen_state(), answers)
    outcome = asyncio.run(rewind(chat, 2, None, Files(covered=False)))
    assert asked[-1] == ("rewindSession", {"sessionId": "s1", "promptId": "s1########7", "rewindFiles": True})
    assert outcome.files_restored == ["/both", "/qwen", "/ours"]
    assert outcome.not_restored == ["/gone: the agent could not restore it", "/theirs: changed since"]
    assert resent == [] and chat.prompts.texts() == ["one", "two"]


def test_nothing_is_asked_or_restored_while_a_turn_runs_or_when_qwen_does_not_confirm() -> None:
    chat, asked, _ = target(qwen_state("busy"), {})
    files = Files(covered=True)
    with pytest.raises(RewindRefused, match="a turn is running"):
        asyncio.run(rewind(chat, 0, None, files))
    assert asked == [] and files.restored_since == [] and chat.prompts.texts() == ["one", "two", "three"]
    chat, asked, _ = target(qwen_state(), {"rewindSession": {"success": False}})
    with pytest.raises(RewindRefused, match="did not confirm"):
        asyncio.run(rewind(chat, 0, "again", files))
    assert files.restored_since == [] and chat.prompts.texts() == ["one", "two", "three"]


def test_a_rewind_qwen_refuses_changes_nothing_here() -> None:
    chat, _, resent = target(qwen_state(), {})

    async def refusing(method: str, params: Any) -> Any:
        raise RuntimeError("rewindSession: Invalid params: Cannot rewind to the requested turn.")

    chat.request = refusing
    files = Files(covered=True)
    with pytest.raises(RuntimeError, match="Cannot rewind"):
        asyncio.run(rewind(chat, 2, "three, edited", files))
    assert files.restored_since == [] and resent == [] and chat.prompts.texts() == ["one", "two", "three"]


def test_the_oldest_prompts_attachments_go_past_the_budget() -> None:
    image = {"type": "image", "mimeType": "image/png", "data": "A" * 600}
    prompts = PromptLog(context_budget=1000)
    prompts.sent("one", [image], layout_turn=1)
    prompts.sent("two", [{"type": "resource_link", "uri": "file:///a.py", "name": "a.py"}], layout_turn=2)
    assert prompts.get(0).context == [image]
    prompts.sent("three", [image], layout_turn=3)  # 1,200+ bytes: the first prompt's image goes
    assert prompts.get(0).context == [] and prompts.get(1).context and prompts.get(2).context == [image]
    assert prompts.texts() == ["one", "two", "three"]


def test_qwen_restores_no_file_unless_the_user_lets_it() -> None:
    chat, asked, _ = target(qwen_state(), {"rewindSession": {"success": True, "filesChanged": []}})
    asyncio.run(rewind(chat, 0, None, Files(covered=False, agent_may_restore=False)))
    assert asked == [("rewindSession", {"sessionId": "s1", "targetTurnIndex": 0, "rewindFiles": False})]


def test_a_files_only_rewind_keeps_the_conversation_and_notes_the_files_for_the_next_prompt() -> None:
    notes: list[str] = []
    chat, asked, resent = target(qwen_state(), {}, notes)
    files = Files(covered=True)
    outcome = asyncio.run(rewind(chat, 1, None, files, scope="files"))
    assert asked == [] and files.restored_since == [2]  # qwen is asked nothing: its history stays whole
    assert chat.prompts.texts() == ["one", "two", "three"] and resent == []
    assert outcome.files_restored == ["/ours", "/both"]
    assert len(notes) == 1 and "before their prompt 2" in notes[0] and "/ours, /both" in notes[0]


def test_a_files_only_rewind_without_the_editors_copies_is_refused_and_changes_nothing() -> None:
    notes: list[str] = []
    chat, asked, _ = target(qwen_state(), {}, notes)
    files = Files(covered=False)
    with pytest.raises(RewindRefused, match="no copy"):
        asyncio.run(rewind(chat, 1, None, files, scope="files"))
    assert asked == [] and files.restored_since == [] and notes == [] and chat.prompts.texts() == ["one", "two", "three"]


def test_a_conversation_only_rewind_restores_no_file_and_asks_qwen_for_none() -> None:
    chat, asked, _ = target(qwen_state(), {"rewindSession": {"success": True, "filesChanged": []}})
    files = Files(covered=False)
    outcome = asyncio.run(rewind(chat, 1, None, files, scope="conversation"))
    assert asked == [("rewindSession", {"sessionId": "s1", "targetTurnIndex": 1, "rewindFiles": False})]
    assert files.restored_since == [] and outcome.files_restored == [] and chat.prompts.texts() == ["one"]


def test_an_unknown_rewind_scope_is_refused() -> None:
    chat, asked, _ = target(qwen_state(), {})
    with pytest.raises(RewindRefused, match="no such rewind scope"):
        asyncio.run(rewind(chat, 1, None, Files(covered=True), scope="everything"))
    assert asked == []
