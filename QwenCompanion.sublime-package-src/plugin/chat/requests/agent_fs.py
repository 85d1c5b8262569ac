"""The agent's `fs/read_text_file` and `fs/write_text_file`, in Sublime.

A file open in the window is read with its unsaved text and written as one
undo step; other files on disk, in their own encoding, on threads of a small
bounded pool (never the main thread or Sublime's worker). A write lands only
on the text the agent last saw; writes into `.git`, writes outside the
folders and reads of excluded files wait for the user's yes, asked in a
quick panel whose first (selected) choice refuses, one question at a time,
told in the transcript and the status bar (file_questions.py: a panel
Sublime refused is shown again) (`chat_guarded_files`: "ask" or "refuse")."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import sublime

from ....core import threads
from ....core.chat.history.turn_changes import Before, TurnChanges, checkpoint_of, first_changed_line
from ....core.chat.requests.file_jobs import FileBusy, FileJobs
from ....core.chat.requests.file_rules import SeenTexts, write_needs_consent
from ....core.files.agent_files import (
    MAX_FILE_BYTES,
    Refused,
    TooLarge,
    read_part,
    read_text,
    real as real_path,
    write_text,
)
from ....core.files.line_endings import lf_line_breaks
from ....core.files.text_positions import slice_lines
from ...editor import view_text
from ...placement import code_group
from ...settings import fallback_encoding, userprefs
from ...view_writes import write_view
from ..prompts.prompt_context import context_options
from ..window_chats import chats
from .buffers import on_main
from .file_questions import FileQuestion, ask

if TYPE_CHECKING:
    from acp import RequestError

log = logging.getLogger(__name__)

GUARD_SETTING = "chat_guarded_files"


def refusal(path: str, reason: str) -> RequestError:
    """An error whose message says why: the CLI shows the agent only the message."""
    from ....core.chat.requests.request_handler import refusal as core_refusal

    return core_refusal(path, reason)


@threads.on_main
def _buffer_text(view: sublime.View, line: int | None, limit: int | None) -> tuple[str, bool]:
    """(the buffer's whole text, or only the lines asked for when it is too
    large to copy; whether it is whole)."""
    size = view.size()
    if size <= MAX_FILE_BYTES:
        return view_text(view), True
    if line is None and limit is None:
        raise _view_too_large(view, size)
    rows = view.rowcol(size)[0] + 1
    first = max(line or 1, 1) - 1
    if first >= rows:
        return "", False
    start = view.text_point(first, 0)
    end = size if limit is None or first + max(limit, 0) >= rows else view.text_point(first + max(limit, 0), 0)
    if end - start > MAX_FILE_BYTES:
        raise _view_too_large(view, end - start)
    return view.substr(sublime.Region(start, end)), False


def _view_too_large(view: sublime.View, size: int) -> Exception:
    return TooLarge(f"{view.file_name()}: {size:,} characters asked for, more than the {MAX_FILE_BYTES:,} "
                    "the editor sends at once; read it in parts with line and limit")


class AgentFiles:
    """One window's file reads and writes for the agent (chat thread)."""

    def __init__(self, window: sublime.Window, worktree: str | None = None, chat_id: int = 0) -> None:
        self.window = window
        self.chat_id = chat_id  # the chat whose transcript tells its questions
        self.worktree = worktree  # a worktree chat's only folder
        self.jobs = FileJobs()
        self.seen = SeenTexts()
        self.turns = TurnChanges()  # each turn's checkpoints, taken before its first write of a file
        self._asking: asyncio.Lock | None = None
        self._questions: set[asyncio.Future[bool]] = set()
        self._asked = 0  # questions asked, for their blocks' keys in the transcript

    async def read(self, shown: str, resolved: str, view: sublime.View | None,
                   line: int | None, limit: int | None) -> str:
        content = await self._read(shown, resolved, view, line, limit)
        self._follow(resolved, max(line or 1, 1) - 1)  # once read: a FIFO is never opened in a tab
        return content

    async def _read(self, shown: str, resolved: str, view: sublime.View | None,
                    line: int | None, limit: int | None) -> str:
        from ....core.chat.requests.request_handler import read_errors_for_the_agent

        excluded = await on_main(lambda: _settings()[1].excludes(resolved))
        if excluded:
            await self._consent(shown, "read", "it matches excluded_file_patterns (keys, secrets)")
        with read_errors_for_the_agent(shown):
            if view is not None:
                buffer, whole, saved, fallback = await on_main(
                    lambda: (*_buffer_text(view, line, limit), not view.is_dirty(), fallback_encoding()))
                content = await self.jobs.run(lambda: slice_lines(buffer, line, limit) if whole else buffer, shown)
                self.seen.saw(resolved, buffer if whole else None)
                if whole and saved:  # what the file on disk holds too
                    self.turns.saw(resolved, buffer, fallback)
                return content
            fallback = await on_main(fallback_encoding)
            content, text = await self.jobs.run(lambda: read_part(resolved, line, limit, fallback), f"reading {shown}")
        self.seen.saw(resolved, text)
        if text is not None:
            self.turns.saw(resolved, text, fallback)
        return content

    async def write(self, shown: str, resolved: str, view: sublime.View | None, content: str) -> None:
        def folders_and_fallback() -> tuple[list[str], str, bool]:
            folders = self.window.folders() if self.window.is_valid() else []
            if self.worktree is not None:
                folders = [self.worktree]
            return folders, fallback_encoding(), userprefs().chat_follow_agent

        folders, fallback, following = await on_main(folders_and_fallback)
        on_disk: Before | None = None  # the file's bytes before a write into its buffer, read off the main thread
        previous: list[str] = []  # the text the write replaced, to follow the agent to its first change
        saved: list[str] = []  # a buffer's text once saved: what its on_pre_save listeners left of the agent's

        def into_buffer(view: sublime.View) -> None:
            if not view.is_valid() or view.is_loading():
                raise Refused(f"{shown} is not ready in the editor; nothing was written")
            if view.size() > MAX_FILE_BYTES:
                raise _view_too_large(view, view.size())
            buffer = view_text(view)
            self.seen.check(resolved, shown, buffer, view.is_dirty())
            previous.append(buffer)
            if on_disk is not None and self.turns.needs_checkpoint(resolved):
                self.turns.checkpoint(resolved, replace(on_disk, buffer_text=buffer))
            saved.append(write_view(view, content))

        def onto_disk() -> None:
            try:
                current: str | None = read_text(resolved, fallback)
            except FileNotFoundError:
                current = None
            self.seen.check(resolved, shown, current, unsaved=False)
            previous.append(current or "")
            if self.turns.needs_checkpoint(resolved):
                self.turns.checkpoint(resolved, checkpoint_of(resolved, fallback))
            write_text(resolved, content, fallback)

        try:
            reason = await self.jobs.run(lambda: write_needs_consent(resolved, [real_path(f) for f in folders]), shown)
            if reason is not None:
                await self._consent(shown, "write", reason)
            if view is not None:  # checked and written in one go: no keystroke falls in between
                if self.turns.needs_checkpoint(resolved):
                    on_disk = await self.jobs.run(lambda: checkpoint_of(resolved, fallback), shown)
                await on_main(lambda: into_buffer(view))
            else:
                await self.jobs.run(onto_disk, f"writing {shown}")
            written = saved[0] if saved else lf_line_breaks(content)  # what the file holds now
            self.turns.wrote(resolved, written)
            if following and previous:
                self._follow(resolved, first_changed_line(previous[0], written))
        except (Refused, FileBusy) as refused:
            raise refusal(shown, str(refused)) from refused
        except OSError as error:
            from acp import RequestError

            raise RequestError.internal_error({"path": shown, "reason": str(error)}) from error
        self.seen.saw(resolved, written)

    def _follow(self, path: str, line: int) -> None:
        """`chat_follow_agent`: show the file at `line` as the agent works (any thread)."""
        sublime.set_timeout(lambda: follow_agent(self.window, path, line))

    # --- the user's yes ---------------------------------------------------

    async def _consent(self, shown: str, access: str, reason: str) -> None:
        """Return when the user allows this one access; else the refusal."""
        mode = await on_main(lambda: _settings()[0])
        if mode == "refuse":
            raise refusal(shown, f"you may not {access} {shown}: {reason} (the user's setting {GUARD_SETTING})")
        if self._asking is None:
            self._asking = asyncio.Lock()
        async with self._asking:  # one question at a time: a second quick panel would close the first
            allowed = await self._ask(shown, access, reason)
        if not allowed:
            raise refusal(shown, f"the user did not allow you to {access} {shown} ({reason})")
        log.info("chat: the user allowed the agent to %s %s once", access, shown)

    async def _ask(self, shown: str, access: str, reason: str) -> bool:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bool] = loop.create_future()
        self._questions.add(answer)

        def chosen(index: int) -> None:
            loop.call_soon_threadsafe(_settle, answer, index == 1)

        question = FileQuestion(
            self.window,
            [[f"Refuse: Qwen Code may not {access} this file", shown],
             [f"Allow once: let Qwen Code {access} this file", f"{shown} — {reason}"]],
            f"Qwen Code asks to {access} {shown}", chosen)
        self._asked += 1
        key = f"file-question{self._asked}"
        chats.tell("file_access_requested", {"window": self.window.id(), "path": shown, "access": access,
                                             "reason": reason})
        self._tell(key, f"**File access**: Qwen Code asks to {access} `{shown}` ({reason})\n"
                        "(Qwen Code: Answer File Access… if its panel is not open)\n\n")
        sublime.set_timeout(lambda: self.window.status_message(
            f"Qwen Code asks to {access} {shown} (Qwen Code: Answer File Access…)"))
        ask(question)
        try:
            allowed = await answer
        finally:
            self._questions.discard(answer)
            question.drop()
        self._tell(key, f"**File access**: Qwen Code asked to {access} `{shown}` "
                        f"→ {'allowed once' if allowed else 'refused'}\n\n")
        return allowed

    def _tell(self, key: str, text: str) -> None:
        """A block of the chat's transcript (chat thread)."""
        chat = chats.by_id(self.chat_id)
        if chat is not None:
            chat.show_block(key, text)

    def refuse_questions(self) -> None:
        """The turn was cancelled or the chat is closing: every open question is a no (any thread)."""
        for answer in list(self._questions):
            loop = answer.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, answer, False)


def _settle(answer: asyncio.Future[bool], allowed: bool) -> None:
    if not answer.done():
        answer.set_result(allowed)


@threads.on_main
def follow_agent(window: sublime.Window, path: str, line: int) -> None:
    """Open the file at the 0-based `line` as a transient preview in the code's
    group; the focus stays where it was (the composer)."""
    if not userprefs().chat_follow_agent or not window.is_valid():
        return
    keep = window.active_view()
    window.open_file(f"{path}:{line + 1}", sublime.ENCODED_POSITION | sublime.TRANSIENT, group=code_group(window))
    if keep is not None and keep.is_valid():
        window.focus_view(keep)


@threads.on_main
def _settings() -> tuple[str, Any]:
    """(`chat_guarded_files`, the context options holding excluded_file_patterns)."""
    return userprefs().chat_guarded_files, context_options()
