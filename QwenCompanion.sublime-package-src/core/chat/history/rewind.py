"""Rewind to Here and Edit and Resend: the conversation goes back to before
one of the user's prompts (that prompt and everything after leave the agent's
history and the transcript), and the files the agent changed since go back
to what they held before that prompt. Edit and Resend then sends the new text
in the prompt's place.

Only qwen can rewind (its `rewindSession` method; `is_qwen` is the one check).
The files: the package's own checkpoints (turn_changes.py) win for what was
written through the editor: they are byte-exact, go back into open views as
one undo step, keep unsaved text and refuse a file changed since the agent
wrote it. qwen's own file history restores blindly on disk (it overwrites a
file the user changed since, under an open buffer) and drops files first
changed after the target prompt, so it is asked to restore files
(`rewindFiles`) only when the package has no record of some rewound prompt
(a conversation reloaded after a restart), and the user agreed (the editor
asks); the package then restores what it knows and skips a file qwen
already put back (it holds the checkpoint's text).

A rewind has a scope: `all` (the conversation and the files), `files` (the
files alone: the conversation stays, and the next prompt carries a note
naming the files put back, so the model knows) or `conversation` (the
conversation alone: the files stay as they are).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ... import threads
from ...json_types import JsonObject
from ..agent.agents import QWEN_AGENT_NAME
from .turn_changes import CHANGED, OUTSIDE, REVERTED, FileChange, TurnChanges

if TYPE_CHECKING:  # the ACP models it imports load on the chat's thread, never at start-up
    from ..chat_state import ChatState

REWIND_METHOD = "rewindSession"  # qwen's wire name: no "_" prefix (`_rewindSession` answers -32601)
SNAPSHOTS_METHOD = "qwen/status/session/rewind_snapshots"  # [{promptId, turnIndex, ...}]: the only way to a promptId
MAX_LISTED_FILES = 1000  # what is taken of an agent's list of files
# The prompts' attachments kept for Edit and Resend (images, embedded files);
# past it the oldest prompts' go, and those are resent without them.
CONTEXT_BUDGET = 16 * 1024 * 1024
SCOPES = ("all", "files", "conversation")
NOTE_LISTED_FILES = 50  # files a files-only rewind's note names


class RewindRefused(Exception):
    """The rewind cannot be done (no such prompt, not qwen), or not now (`for_now`: a turn runs)."""

    def __init__(self, message: str, for_now: bool = False) -> None:
        super().__init__(message)
        self.for_now = for_now


def is_qwen(state: ChatState) -> bool:
    """Whether the chat's agent is qwen, the one agent whose methods here may be
    sent: its agentInfo, as `agents.speaks_qwen` reads it (the state keeps it as "name version")."""
    return state.agent_name.split(" ", 1)[0] == QWEN_AGENT_NAME


@dataclass
class SentPrompt:
    text: str
    context: list[JsonObject]
    layout_turn: int  # its turn in the transcript (`t<layout_turn>.user`)
    changes_turn: int | None  # its turn in the chat's TurnChanges; None: replayed from a reloaded session
    context_bytes: int = 0  # about what its attachments hold
    branch_point: str | None = None  # where qwen can branch after its turn (branch.py); None: not given


class PromptLog:
    """The user's prompts of the session, in order (chat thread; read from any)."""

    def __init__(self, context_budget: int = CONTEXT_BUDGET) -> None:
        self._lock = threading.Lock()
        self._prompts: list[SentPrompt] = []
        self._context_budget = context_budget
        # TurnChanges begins a turn per chat_turn_ended event: counting the same
        # events names the turn a prompt's writes are checkpointed in.
        self._turns_ended = 0

    def sent(self, text: str, context: list[JsonObject], layout_turn: int) -> None:
        with self._lock:
            size = context_size(context)
            self._prompts.append(SentPrompt(text, list(context), layout_turn, self._turns_ended + 1, size))
            self._trim_contexts()

    def _trim_contexts(self) -> None:
        """The oldest prompts' attachments go while they hold more than the budget."""
        total = sum(prompt.context_bytes for prompt in self._prompts)
        for prompt in self._prompts:
            if total <= self._context_budget:
                return
            total -= prompt.context_bytes
            prompt.context, prompt.context_bytes = [], 0

    def replayed(self, text: str, layout_turn: int) -> None:
        """A piece of a prompt a reloaded session replays (pieces of one turn join)."""
        with self._lock:
            last = self._prompts[-1] if self._prompts else None
            if last is not None and last.layout_turn == layout_turn:
                last.text += text
            else:
                self._prompts.append(SentPrompt(text, [], layout_turn, None))

    def turn_ended(self, branch_point: str | None = None) -> None:
        """The last prompt's turn ended; qwen gives a branch point for one that ended normally."""
        with self._lock:
            self._turns_ended += 1
            if branch_point is not None and self._prompts:
                self._prompts[-1].branch_point = branch_point

    def clear(self) -> None:
        with self._lock:
            self._prompts.clear()

    def texts(self) -> list[str]:
        with self._lock:
            return [prompt.text for prompt in self._prompts]

    def get(self, index: int) -> SentPrompt:
        with self._lock:
            if not 0 <= index < len(self._prompts):
                count = len(self._prompts)
                raise RewindRefused(f"there is no prompt {index} (the chat has {count} prompt{'s' * (count != 1)})")
            return self._prompts[index]

    def index_at_turn(self, layout_turn: int) -> int | None:
        """The prompt whose transcript turn is `layout_turn`, or the last one before it."""
        with self._lock:
            found = None
            for index, prompt in enumerate(self._prompts):
                if prompt.layout_turn <= layout_turn:
                    found = index
            return found

    def cut(self, index: int) -> None:
        """Forget prompt `index` and every later one."""
        with self._lock:
            del self._prompts[index:]


def context_size(context: list[JsonObject]) -> int:
    """About the bytes an attachment list holds (its strings: text, base64 data)."""
    def size(value: object) -> int:
        if isinstance(value, str):
            return len(value)
        if isinstance(value, dict):
            return sum(size(item) for item in value.values())
        if isinstance(value, list):
            return sum(size(item) for item in value)
        return 0

    return size(context)


def refusal(state: ChatState, queued: int, scope: str = "all") -> str | None:
    """Why the chat cannot rewind now, or None (a files-only rewind needs no agent's method)."""
    if state.agent_status == "busy":
        return "a turn is running (a permission may be waiting): cancel it or wait for its end, then rewind"
    if queued:
        return "prompts are queued: cancel them or wait for them, then rewind"
    if scope == "files":
        return None
    if state.session_id is None:
        return "the chat has no session yet"
    if not is_qwen(state):
        name = state.agent_name or "this agent"
        return f"{name} cannot rewind a conversation (only qwen offers it)"
    return None


def prompt_id_of(answer: object, index: int) -> str | None:
    """The promptId qwen's snapshots give prompt `index`, if any (hostile input: checked)."""
    snapshots = answer.get("snapshots") if isinstance(answer, dict) else None
    for snapshot in snapshots if isinstance(snapshots, list) else []:
        if isinstance(snapshot, dict) and snapshot.get("turnIndex") == index:
            prompt_id = snapshot.get("promptId")
            return prompt_id if isinstance(prompt_id, str) else None
    return None


def rewind_params(session_id: str, index: int, prompt_id: str | None, agent_restores: bool) -> JsonObject:
    """`rewindSession`'s params. qwen restores files only when given a promptId
    (by targetTurnIndex alone it never does)."""
    if agent_restores and prompt_id is not None:
        return {"sessionId": session_id, "promptId": prompt_id, "rewindFiles": True}
    return {"sessionId": session_id, "targetTurnIndex": index, "rewindFiles": False}


def files_of(answer: object) -> tuple[list[str], list[str]]:
    """(filesChanged, filesFailed) of qwen's answer; an answer without
    `success: true` is an error (hostile input: only strings are taken)."""
    if not isinstance(answer, dict) or answer.get("success") is not True:
        raise ValueError(f"the agent did not confirm the rewind: {str(answer)[:200]}")

    def strings(key: str) -> list[str]:
        value = answer.get(key)
        return [item for item in value if isinstance(item, str)][:MAX_LISTED_FILES] if isinstance(value, list) else []

    return strings("filesChanged"), strings("filesFailed")


@dataclass(frozen=True)
class RewindOutcome:
    files_restored: list[str]
    not_restored: list[str] = field(default_factory=list)  # why, one line per file left as it is


@dataclass(frozen=True)
class SinceChanges:
    """What the turns from one on changed, for a rewind to before them."""

    changes: list[FileChange]  # each file once: from its text before those turns to what it should hold now
    outside: list[str]  # changed by a command in those turns: never overwritten
    unknown: list[str]  # written through the editor, its earlier text not kept (past the budget)

    def not_restored(self) -> list[str]:
        return ([f"{path}: changed outside the editor (by a command); left as it is" for path in self.outside]
                + [f"{path}: its text before that prompt was not kept; left as it is" for path in self.unknown])


def changes_since(turns: TurnChanges, since: int) -> SinceChanges:
    """Each file the turns from `since` on changed through the editor, as one
    change from its text before turn `since` to the text the agent's last
    change left."""
    first: dict[str, FileChange] = {}
    last: dict[str, FileChange] = {}
    outside: set[str] = set()
    for turn in range(since, turns.current + 1):
        for path in turns.paths(turn):
            change = turns.change(turn, path)
            if change is not None:
                first.setdefault(path, change)
                last[path] = change
                if change.state == OUTSIDE:
                    outside.add(path)
    result = SinceChanges([], [], [])
    for path, earliest in first.items():
        if path in outside:
            result.outside.append(path)
        elif earliest.before is None:
            result.unknown.append(path)
        else:
            result.changes.append(FileChange(path, earliest.before, _expected(last[path]), CHANGED, written=True))
    return result


def _expected(latest: FileChange) -> str | None:
    """The text the file holds after the agent's last change (None: absent)."""
    if latest.state == REVERTED and latest.before is not None:
        return latest.before.text() if latest.before.data is not None else None
    return latest.after


def covers(turns: TurnChanges, since: int | None) -> bool:
    """Whether the package can restore every file changed through the editor
    from turn `since` on (it saw those turns and kept their checkpoints)."""
    return since is not None and not changes_since(turns, since).unknown


class FileRestorer(Protocol):
    """Puts the files changed from a TurnChanges turn on back (the editor's side)."""

    agent_may_restore: bool  # the user's word: qwen's history may restore what the package did not see

    def covers(self, since: int | None) -> bool: ...

    async def restore(self, since: int) -> RewindOutcome: ...


@dataclass
class RewindTarget:
    """What a rewind needs of its chat (chat thread)."""

    state: ChatState
    prompts: PromptLog
    queued: Callable[[], int]
    request: Callable[[str, JsonObject], Coroutine[Any, Any, Any]]  # to the running agent
    cut_transcript: Callable[[int], None]  # from a transcript turn on
    resend: Callable[[str, list[JsonObject]], bool]  # queues a prompt (False: the queue is full)
    note_next_prompt: Callable[[str], None]  # what the next prompt tells the model first


def files_note(index: int, paths: list[str]) -> str:
    """What the prompt after a files-only rewind tells the model first."""
    named = ", ".join(paths[:NOTE_LISTED_FILES]) + (f" and {len(paths) - NOTE_LISTED_FILES} more"
                                                    if len(paths) > NOTE_LISTED_FILES else "")
    return (f"[Note: the user put these files back to what they held before their prompt {index + 1} of this "
            f"conversation; the conversation was kept, so read them again before relying on earlier edits: {named}]")


@threads.on_chat_loop
async def rewind(chat: RewindTarget, index: int, text: str | None, files: FileRestorer | None,
                 scope: str = "all") -> RewindOutcome:
    """Rewind `chat` to before its prompt `index` (its files, its
    conversation or both: `scope`); with `text`, send it in that prompt's
    place. `RewindRefused` when it cannot."""
    if scope not in SCOPES:
        raise RewindRefused(f"no such rewind scope: {scope!r} (one of {', '.join(SCOPES)})")
    why = refusal(chat.state, chat.queued(), scope)
    if why is not None:
        raise RewindRefused(why, for_now=chat.state.agent_status == "busy" or chat.queued() > 0)
    target = chat.prompts.get(index)
    if scope == "files":
        return await _files_only(chat, index, target, files)
    if scope == "conversation":
        files = None
    session_id = chat.state.session_id or ""
    since = target.changes_turn
    agent_restores = scope == "all" and (files is None or (not files.covers(since) and files.agent_may_restore))
    prompt_id = None
    if agent_restores:
        prompt_id = prompt_id_of(await chat.request(SNAPSHOTS_METHOD, {"sessionId": session_id}), index)
    answer = await chat.request(REWIND_METHOD, rewind_params(session_id, index, prompt_id, agent_restores))
    try:
        by_agent, failed = files_of(answer)
    except ValueError as error:
        raise RewindRefused(str(error)) from error
    chat.prompts.cut(index)
    chat.cut_transcript(target.layout_turn)
    ours = await files.restore(since) if files is not None and since is not None else RewindOutcome([])
    restored = list(dict.fromkeys([*by_agent, *ours.files_restored]))
    not_restored = [f"{path}: the agent could not restore it" for path in failed] + ours.not_restored
    if text is not None:
        chat.resend(text, target.context)
    return RewindOutcome(restored, not_restored)


async def _files_only(chat: RewindTarget, index: int, target: SentPrompt, files: FileRestorer | None) -> RewindOutcome:
    """The files alone, from the package's own checkpoints (qwen's history
    restores only with the conversation); the prompts and transcript stay."""
    since = target.changes_turn
    if files is None or since is None or not files.covers(since):
        raise RewindRefused("the editor kept no copy of the files from before that prompt "
                            "(it came before Sublime restarted): only files and conversation together can go back")
    outcome = await files.restore(since)
    if outcome.files_restored:
        chat.note_next_prompt(files_note(index, outcome.files_restored))
    return outcome
