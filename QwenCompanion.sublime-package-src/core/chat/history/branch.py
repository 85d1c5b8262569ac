"""Branch from Here: a new session that holds a chat's prompts up to one turn
and their answers, the original left as it is.

qwen 0.24.4 branches over ACP with its own `qwen/control/session/branch
{sessionId, atRecordId?}` -> `{newSessionId, title, displayName}`: it copies
the session's record up to the branch point into a new session file (the
source file is not written) and refuses with -32009 a record that is not a
branch point, with -32602 while a prompt runs. A branch point is the
`checkpointUuid` of a turn that ended normally: qwen gives it in the prompt's
answer (`_meta["qwen.branchPoint"]`), and for earlier turns in its transcript
(`qwen/status/session/transcript`, the answer's `_meta.qwenTranscript.branchRecordId`);
a session/load replay does not carry it. Other agents have no such method:
`refusal` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import threads
from ...display_text import display_text
from ..agent.agents import TITLE_MAX_CHARS
from ..agent.session_ids import session_id_or_none
from .rewind import PromptLog, RewindRefused, is_qwen

if TYPE_CHECKING:
    from ..chat_state import ChatState

BRANCH_METHOD = "qwen/control/session/branch"
TRANSCRIPT_METHOD = "qwen/status/session/transcript"
BRANCH_POINT_META = "qwen.branchPoint"
MAX_RECORD_ID_CHARS = 100  # qwen's record ids are UUIDs; a longer one is not sent back
MAX_TRANSCRIPT_EVENTS = 100_000  # a hostile transcript is read this far


class BranchRefused(Exception):
    """The branch cannot be made (not qwen, no such turn, no branch point), or not now (a turn runs)."""


@dataclass(frozen=True)
class Branch:
    session_id: str
    title: str


def _record_id(value: object) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_RECORD_ID_CHARS else None


def branch_point_of(meta: object) -> str | None:
    """The branch point a prompt's answer gives (its `_meta`), if any."""
    point = meta.get(BRANCH_POINT_META) if isinstance(meta, dict) else None
    return _record_id(point.get("checkpointUuid")) if isinstance(point, dict) else None


def transcript_branch_point(answer: object, index: int) -> str | None:
    """The branch point of prompt `index` (0-based) in qwen's transcript: the
    last one given between that prompt and the next. A prompt is a run of
    user chunks; an answer chunk between two ends it."""
    events = answer.get("events") if isinstance(answer, dict) else None
    prompt = -1
    in_prompt = False
    found: str | None = None
    for event in events[:MAX_TRANSCRIPT_EVENTS] if isinstance(events, list) else []:
        data = event.get("data") if isinstance(event, dict) else None
        kind = data.get("sessionUpdate") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(kind, str):
            continue
        if kind == "user_message_chunk":
            if not in_prompt:
                if prompt == index:
                    return found
                prompt, in_prompt = prompt + 1, True
            continue
        in_prompt = False
        meta = data.get("_meta")
        transcript = meta.get("qwenTranscript") if isinstance(meta, dict) else None
        point = _record_id(transcript.get("branchRecordId")) if isinstance(transcript, dict) else None
        if prompt == index and point is not None:
            found = point
    return found if prompt == index else None


def branch_of(answer: object) -> Branch:
    """The new session of qwen's answer (hostile input: checked)."""
    session_id = session_id_or_none(answer.get("newSessionId")) if isinstance(answer, dict) else None
    if session_id is None:
        raise BranchRefused(f"the agent did not give the branch's session: {str(answer)[:200]}")
    title = answer.get("title") if isinstance(answer, dict) else None
    return Branch(session_id, display_text(title, TITLE_MAX_CHARS))


def refusal(state: ChatState, queued: int) -> str | None:
    """Why the chat cannot branch now, or None."""
    if state.agent_status == "busy" or queued:
        return "a turn is running or prompts are queued: wait for them or cancel them, then branch"
    if state.session_id is None:
        return "the chat has no conversation yet"
    if not is_qwen(state):
        return f"{state.agent_name or 'this agent'} cannot branch a conversation (only qwen offers it)"
    return None


@threads.on_chat_loop
async def branch(state: ChatState, prompts: PromptLog, queued: int,
                 request: Callable[[str, dict[str, Any]], Coroutine[Any, Any, Any]], index: int, cwd: str,
                 live_points: bool = True) -> Branch:
    """A new session holding prompts 0..`index` of the chat and their answers.
    `live_points`: the agent's prompt answers give their branch point (qwen
    over stdio), so a live turn without one has none; otherwise (qwen serve)
    qwen's transcript is asked for every prompt. `BranchRefused` when it cannot be made."""
    why = refusal(state, queued)
    if why is not None:
        raise BranchRefused(why)
    try:
        target = prompts.get(index)
    except RewindRefused as error:
        raise BranchRefused(str(error)) from error
    session_id = state.session_id or ""
    point = target.branch_point
    if point is None and (target.changes_turn is None or not live_points):  # replayed: qwen's transcript knows it
        point = transcript_branch_point(await request(TRANSCRIPT_METHOD, {"sessionId": session_id, "cwd": cwd}), index)
    if point is None:
        raise BranchRefused(f"qwen gave no branch point for prompt {index + 1} (a turn that did not end normally "
                            "has none)")
    return branch_of(await request(BRANCH_METHOD, {"sessionId": session_id, "atRecordId": point}))
