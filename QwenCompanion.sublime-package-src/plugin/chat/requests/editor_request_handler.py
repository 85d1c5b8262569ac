"""The window's answers to the agent's requests (the `chats.request_handler` hook):
reads and writes through the user's buffers, confined to the window's
folders; permissions asked in the transcript (keys 1…n, Esc rejects), edits
also shown in the same review tabs `openDiff` uses; every request answered,
pending ones "cancelled" when the turn is cancelled or the chat closes."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import sublime

from ....core import threads
from ....core.chat.requests.accepted_edits import AcceptedEdits
from ....core.files.agent_files import Refused, check_path, confine, real
from ....core.reviews import MAX_OPEN_REVIEWS, DiskFile, Review, UnreadableFile, buffer_text, read_disk_file
from ...paths import path_display
from ...reviews.review_tabs import reviews
from ...settings import fallback_encoding
from ..offers import always_rules
from ..transcript import notify
from ..transcript.chat_views import open_chat
from ..window_chats import WindowChat, chats
from .agent_fs import AgentFiles
from .buffers import on_main, open_paths, open_view

if TYPE_CHECKING:
    from acp import schema

    from ....core.chat.requests.permissions import PendingPermissions, PermissionPrompt
    from ....core.chat.requests.request_handler import AgentRequestHandler
    from .forms import ChatForms

log = logging.getLogger(__name__)


class EditorRequestHandler:
    """One chat's answers: its prompts, accepted edits and turn checkpoints are its own."""

    def __init__(self, window: sublime.Window, chat_id: int) -> None:
        from ....core.chat.requests.permissions import PendingPermissions
        from .forms import ChatForms

        self.window = window
        self.window_id = window.id()
        self.chat_id = chat_id
        self.pending: PendingPermissions = PendingPermissions()
        self.accepted = AcceptedEdits()  # the user's own texts for the agent's writes
        self._reviews: dict[str, Review] = {}  # prompt key -> its open review
        self._reviewing: set[str] = set()  # prompt keys given a review (chat thread)
        worktree = chats.worktree_of(chat_id)
        # A worktree chat's agent reads and writes in its worktree only: never the
        # main tree's files, nor a main-tree file open in the window (an unsaved buffer).
        self.worktree = worktree.path if worktree is not None else None
        self.files = AgentFiles(window, self.worktree, chat_id)
        self.forms: ChatForms = ChatForms(window, chat_id)

    def _chat(self) -> WindowChat | None:
        return chats.by_id(self.chat_id)

    def _where(self) -> tuple[list[str], list[str]]:
        """The folders the agent may use and the files open in the window it may
        use too (main thread)."""
        if self.worktree is not None:
            return [self.worktree], []
        return (self.window.folders() if self.window.is_valid() else []), open_paths(self.window)

    # --- files -----------------------------------------------------------

    async def _locate(self, path: str) -> tuple[str, sublime.View | None]:
        """The real path the agent may use and the window's view of it, or a refusal."""
        from acp import RequestError


        try:
            check_path(path)
        except Refused as refused:
            raise RequestError.invalid_params({"path": path, "reason": str(refused)}) from refused

        def find() -> tuple[list[str], list[str], sublime.View | None]:
            return *self._where(), open_view(self.window, real(path))

        folders, opened, view = await on_main(find)
        try:
            return confine(path, folders, opened), view
        except Refused as refused:
            log.warning("chat: refused the agent's access to %s (%s)", path, refused)
            raise RequestError.invalid_params({"path": path, "reason": str(refused)}) from refused

    async def read_text_file(self, request: schema.ReadTextFileRequest) -> schema.ReadTextFileResponse:
        from acp.schema import ReadTextFileResponse

        resolved, view = await self._locate(request.path)
        content = await self.files.read(request.path, resolved, view, request.line, request.limit)
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, request: schema.WriteTextFileRequest) -> schema.WriteTextFileResponse | None:
        resolved, view = await self._locate(request.path)
        accepted = self.accepted.take(resolved)
        content = request.content if accepted is None else accepted
        await self.files.write(request.path, resolved, view, content)
        return None

    # --- permissions -------------------------------------------------------

    async def request_permission(
        self, request: schema.RequestPermissionRequest
    ) -> schema.RequestPermissionResponse:
        from ....core.chat.requests.permissions import cancelled, prompt_of, render_answer, render_prompt

        prompt = prompt_of(self.pending.next_key(), request, path_display(self.window))
        turn = self.accepted.turn
        chat = self._chat()
        # After session/cancel nothing more is asked of the user: a late request is answered "cancelled".
        late = chat is not None and chat.turn_cancelled
        disk = await self._review_file(prompt) if prompt.diff is not None and chat is not None and not late else None
        # Asked before anyone can answer: the answer waits for this read (always_rules).
        rules_before = always_rules.rules_before(chat, prompt) if chat is not None and not late else None
        future = self.pending.add(prompt)
        if chat is None:
            self.pending.cancel_all()
        else:
            if late:
                self.pending.answer(prompt.key, cancelled())
            chat.show_block(f"{prompt.key}", render_prompt(prompt))
        chats.tell("permission_requested", prompt.event(self.window_id, self.chat_id))
        sublime.set_timeout(lambda: self._show(prompt, disk, turn))
        try:
            answer = await future
        finally:
            self.pending.discard(prompt.key)
            self._reviewing.discard(prompt.key)
            review = self._reviews.pop(prompt.key, None)
            if review is not None:
                sublime.set_timeout(lambda: _close_review(review))
        if chat is not None:
            chat.upsert(prompt.key, render_answer(prompt, answer))
            await always_rules.note_rules_made(chat, rules_before, answer)
        return answer

    @threads.on_chat_loop
    async def _review_file(self, prompt: PermissionPrompt) -> DiskFile | None:
        """The file an edit request would change, read off the main thread, if
        it may have a review: a regular file of bounded size inside the window's
        folders (or open in it), while fewer than MAX_OPEN_REVIEWS are open. Else
        None, and the prompt says why."""
        assert prompt.diff is not None
        path = prompt.diff.path

        folders, opened = await on_main(self._where)
        try:
            resolved = confine(path, folders, opened)
            disk = await asyncio.to_thread(read_disk_file, resolved, fallback_encoding())
        except (Refused, UnreadableFile) as error:
            log.warning("chat: no review for the agent's edit of %r: %s", path, error)
            prompt.note = f"No review opened: {error}"
            return None
        # Counted and taken with no wait between: requests come all at once.
        if len(self._reviewing) >= MAX_OPEN_REVIEWS:
            prompt.note = (f"No review opened: {MAX_OPEN_REVIEWS} edits already wait in reviews. "
                           "Answer those first, or answer this one here.")
            return None
        self._reviewing.add(prompt.key)
        return disk

    @threads.on_main
    def _show(self, prompt: PermissionPrompt, disk: DiskFile | None, turn: int) -> None:
        """Bring the prompt to the user's sight, never to their keys: the chat in
        view with focus left where the user has it, the diff in a review."""
        chat = self._chat()
        if chat is None or not self.window.is_valid() or self.pending.get(prompt.key) is None:
            return
        kind, asked = ("question", prompt.questions[0].text) if prompt.questions else ("permission", prompt.title)
        if chats.get(self.window) is chat:
            self.window.status_message(f"Qwen Code asks: {prompt.title} (answer it in the chat's transcript)")
            notify.waiting(self.window, chat, kind, f"asks: {asked}", lambda: open_chat(self.window, chat, focus=False))
        else:  # another chat is in front: the user's tab stays; the asking chat is named
            self.window.status_message(f"Qwen Code asks in the chat “{chat.title}”: {prompt.title} "
                                       "(Qwen Code: Switch Chat… to answer)")
            notify.waiting(self.window, chat, kind, f"asks in “{chat.title}”: {asked}", lambda: None)
        if prompt.diff is not None and disk is not None:
            self._open_review(prompt, disk, turn)

    def _open_review(self, prompt: PermissionPrompt, disk: DiskFile, turn: int) -> None:
        diff = prompt.diff
        assert diff is not None
        review, replaced = reviews.propose(diff.path, diff.new_text, PromptReview(self, prompt, turn), disk)
        self._reviews[prompt.key] = review
        reviews.show(review, replaced)

    def choose(self, key: str, option_id: str) -> bool:
        """Answer the prompt `key` with the agent's option `option_id` (any thread)."""
        from ....core.chat.requests.permissions import selected

        prompt = self.pending.get(key)
        if prompt is None or not any(o.option_id == option_id for o in prompt.options):
            return False
        # It grants what the agent's tool call does, nothing to the fs methods: they stay confined.
        return self.pending.answer(key, selected(option_id))

    def answer_question(self, key: str, index: int) -> bool:
        """Pick option `index` (1-based) of the prompt's next question; the
        last answer submits them all (any thread)."""
        from ....core.chat.requests.permissions import answered, render_questions

        prompt = self.pending.get(key)
        if prompt is None or not prompt.questions or not 1 <= index <= prompt.keys():
            return False
        prompt.answers.append(prompt.questions[len(prompt.answers)].labels[index - 1])
        if len(prompt.answers) < len(prompt.questions):
            chat = self._chat()
            if chat is not None:
                chat.upsert_soon(prompt.key, render_questions(prompt))
            return True
        option = prompt.option("allow_once") or prompt.option("allow_always")
        return option is not None and self.pending.answer(key, answered(prompt, option.option_id))

    def reject(self, key: str, reason: str | None = None, shown: str | None = None) -> bool:
        """Reject the prompt (its reject_once option, else "cancelled"); a
        reason goes to the agent as the next prompt, before those queued
        (`shown` in the transcript instead, when given)."""
        from ....core.chat.requests.permissions import cancelled, selected

        prompt = self.pending.get(key)
        if prompt is None:
            return False
        option = prompt.option("reject_once") or prompt.option("reject_always")
        answered = self.pending.answer(key, selected(option.option_id) if option else cancelled())
        chat = self._chat()
        if answered and reason and chat is not None:
            chat.send(reason, first=True, shown=shown)
        return answered

    @threads.on_main
    def accepted_in_review(self, prompt: PermissionPrompt, text: str, turn: int) -> None:
        """The user accepted `text` in the review of the prompt asked in `turn`;
        an edited text is what the tool call's write will write."""
        from ....core.chat.requests.permissions import cancelled

        assert prompt.diff is not None
        if text != buffer_text(prompt.diff.new_text):
            self.accepted.keep(prompt.tool_call_id, real(prompt.diff.path), text, turn)
        option = prompt.option("allow_once") or prompt.option("allow_always")
        if option is None:
            self.pending.answer(prompt.key, cancelled())
        else:
            self.choose(prompt.key, option.option_id)

    def cancel_pending(self) -> None:
        """The turn was cancelled or the chat is closing: answer every prompt."""
        self.files.refuse_questions()
        self.forms.cancel()
        count = self.pending.cancel_all()
        if count:
            log.info("chat: %d pending permission request(s) answered cancelled", count)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        from .forms import ELICITATION_CREATE

        if method == ELICITATION_CREATE:
            return await self.forms.create(params)
        log.debug("chat: the agent asked %s; not known here", method)
        raise RequestError.method_not_found(method)


class PromptReview:
    """The owner of an edit request's review (a `ReviewOwner`): its Accept and
    Reject answer the chat's permission prompt."""

    note = None  # the notes about the file on disk say what Accept does

    def __init__(self, handler: EditorRequestHandler, prompt: PermissionPrompt, turn: int) -> None:
        self._handler = handler
        self._prompt = prompt
        self._turn = turn

    @property
    def alive(self) -> bool:
        return self._handler.pending.get(self._prompt.key) is not None

    def accepted(self, text: str) -> None:
        self._handler.accepted_in_review(self._prompt, text, self._turn)

    def rejected(self) -> None:
        self._handler.reject(self._prompt.key)

    @property
    def chat_id(self) -> int:
        return self._handler.chat_id

    def rejected_with(self, reason: str, shown: str) -> bool:
        """Reject the permission with `reason`, the agent's next prompt (review
        comments on the proposal), `shown` in the transcript."""
        return self._handler.reject(self._prompt.key, reason, shown)


def _close_review(review: Review) -> None:
    reviews.registry.abandon(review)  # the prompt has its answer
    reviews.dismiss(review.id, "Answered in the chat.", "closed")


def editor_request_handler(window: sublime.Window, chat_id: int) -> AgentRequestHandler:
    return EditorRequestHandler(window, chat_id)


def request_handler_of(window: sublime.Window | None, chat_id: int | None = None) -> EditorRequestHandler | None:
    """The answers of chat `chat_id`, or of the window's active chat."""
    chat = chats.by_id(chat_id) if chat_id is not None else chats.get(window)
    if chat is None:
        return None
    handler = chat.request_handler()
    return handler if isinstance(handler, EditorRequestHandler) else None
