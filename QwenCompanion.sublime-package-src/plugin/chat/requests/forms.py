"""The agent's forms (ACP `elicitation/create`) in the window. A form never
opens by itself: a panel that popped up while the user types would take
their next keys (Enter picks an option) as answers. Like a permission, it is
shown in the chat's transcript and told (status bar, notification); the
user opens it with Qwen Code: Answer Form…, a sequence of quick panels
(booleans, choices) and input panels (texts, numbers, the default filled
in). A value the schema refuses is asked again with the reason. The quick
panels stay open while the user looks at another application
(KEEP_OPEN_ON_FOCUS_LOST). Esc in a field closes its panel and keeps the
answers given so far: Answer Form… goes on from that field. Esc on the
form's first panel answers "cancel", Decline "decline". A link is opened in
the browser only on the user's yes, and only an http(s) one. One form at a
time per chat: a second one while the first waits is refused."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import sublime

from ....core import threads
from ....core.chat.requests.elicitation import (
    Form,
    FormAnswers,
    FormField,
    FormRefused,
    Invalid,
    UrlRequest,
    answer,
    content_of,
    read_request,
    render_form,
    shown,
)
from ....core.json_types import JsonObject
from ..transcript import notify
from ..transcript.chat_views import open_chat
from ..window_chats import chats

log = logging.getLogger(__name__)

ELICITATION_CREATE = "elicitation/create"
OUTCOMES = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}


class OpenForm:
    """One form waiting for the user; `settle` may be called from any thread, once."""

    def __init__(self, key: str, request: Form | UrlRequest, loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self.request = request
        self._loop = loop
        self.future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._lock = threading.Lock()
        self.settled = False
        self.problem = ""  # why the last answer given whole was refused
        # The user's answers so far (main thread): kept when a field's panel is
        # closed, so Answer Form… goes on from there.
        self.answers = FormAnswers(request) if isinstance(request, Form) else None

    def settle(self, result: dict[str, Any]) -> bool:
        with self._lock:
            if self.settled:
                return False
            self.settled = True

        def resolve() -> None:
            if not self.future.done():
                self.future.set_result(result)

        self._loop.call_soon_threadsafe(resolve)
        return True

    def event(self, window_id: int, chat_id: int) -> dict[str, Any]:
        """The headless driver's `elicitation_requested` event."""
        request = self.request
        if isinstance(request, UrlRequest):
            return {"window": window_id, "chat": chat_id, "mode": "url", "message": request.message,
                    "url": request.url}
        return {"window": window_id, "chat": chat_id, "mode": "form", "message": request.message,
                "fields": [{"name": f.name, "type": f.kind, "title": f.title, "required": f.required,
                            "default": f.default, "choices": [c.value for c in f.choices]}
                           for f in request.fields]}


def refused(reason: str) -> Exception:
    """The agent's answer for a form that is not asked: the CLI shows it only the message."""
    from acp import RequestError

    return RequestError(-32602, f"Refused: {reason}", {"reason": reason})


class ChatForms:
    """A chat's form, if one waits (asked on the chat's thread, answered from the main thread)."""

    def __init__(self, window: sublime.Window, chat_id: int) -> None:
        self.window = window
        self.chat_id = chat_id
        self._lock = threading.Lock()
        self._open: OpenForm | None = None
        self._count = 0

    @property
    def open(self) -> OpenForm | None:
        return self._open

    async def create(self, params: JsonObject) -> dict[str, Any]:
        """Ask the form or link of an `elicitation/create` request; its answer."""
        try:
            request = read_request(params)
        except FormRefused as error:
            log.warning("chat: refused the agent's form: %s", error)
            raise refused(str(error)) from None
        chat = chats.by_id(self.chat_id)
        if chat is None or chat.turn_cancelled:  # nobody is asked after session/cancel
            return answer("cancel")
        with self._lock:
            if self._open is not None:
                raise refused("a form is already open in this chat; it is answered or cancelled first")
            self._count += 1
            form = self._open = OpenForm(f"form{self._count}", request, asyncio.get_running_loop())
        try:
            chat.show_block(form.key, render_form(request))
            chats.tell("elicitation_requested", form.event(self.window.id(), self.chat_id))
            sublime.set_timeout(lambda: self._show(form))
            result = await form.future
        finally:
            with self._lock:
                self._open = None
        chat.upsert(form.key, render_form(request, OUTCOMES.get(result.get("action", ""), "answered")))
        return result

    def cancel(self) -> None:
        """The turn was cancelled or the chat is closing (any thread)."""
        form = self._open
        if form is not None and form.settle(answer("cancel")):
            log.info("chat: the open form was answered cancelled")

    def answer_whole(self, values: JsonObject) -> str:
        """Accept the open form with `values` (the driver's way), each checked;
        the reason if they were refused, else ""."""
        form = self._open
        if form is None or isinstance(form.request, UrlRequest):
            return "no form is waiting"
        try:
            content = content_of(form.request, values)
        except Invalid as error:
            form.problem = str(error)
            return form.problem
        form.settle(answer("accept", content))
        return ""

    @threads.on_main
    def _show(self, form: OpenForm) -> None:
        """Tell the user a form waits, never taking their keys (see the module's doc)."""
        chat = chats.by_id(self.chat_id)
        if chat is None or not self.window.is_valid() or form.settled:
            return
        kind, what = ("link", "open a link") if isinstance(form.request, UrlRequest) else ("form", "fill in a form")
        asked = shown(form.request.message, 120)
        if chats.get(self.window) is chat:
            self.window.status_message(f"Qwen Code asks you to {what}: {asked} (Qwen Code: Answer Form…)")
            notify.waiting(self.window, chat, kind, f"asks: {asked}", lambda: open_chat(self.window, chat, focus=False))
        else:
            self.window.status_message(f"Qwen Code asks in the chat “{chat.title}”: {asked} "
                                       "(Qwen Code: Switch Chat…, then Answer Form…)")
            notify.waiting(self.window, chat, kind, f"asks in “{chat.title}”: {asked}", lambda: None)


# The form's quick panels stay open while the user looks elsewhere (a browser
# for what to answer): without it Sublime closes them, which read as Esc.
KEEP_OPEN = sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST


class FormPanels:
    """The user's way through one open form, panel after panel (main thread)."""

    def __init__(self, window: sublime.Window, form: OpenForm) -> None:
        self.window = window
        self.form = form
        self.answers = form.answers
        self._picked: list[str] = []  # a multi-select's choices so far

    def start(self) -> None:
        request = self.form.request
        if isinstance(request, UrlRequest):
            first = ["Open the link in the browser", shown(request.url, 200)]
        elif self.answers is not None and self.answers.position:
            first = [f"Go on with the form (field {self.answers.position + 1} of {len(request.fields)})",
                     "The answers given so far are kept; Esc here cancels the form"]
        else:
            first = [f"Fill in the form ({len(request.fields)} field{'s' if len(request.fields) != 1 else ''})",
                     request.title or "Esc in a field keeps the answers so far; Esc here cancels"]
        items = [first, ["Decline", "Tell Qwen Code no"]]
        self.window.show_quick_panel(items, self._started, KEEP_OPEN, placeholder=shown(request.message, 200))

    def _started(self, index: int) -> None:
        if index < 0:
            self._settle("cancel")
        elif index == 1:
            self._settle("decline")
        elif isinstance(self.form.request, UrlRequest):
            if self._settle("accept"):
                self.window.run_command("open_url", {"url": self.form.request.url})
        else:
            self._next()

    def _closed(self) -> None:
        """A field's panel closed without an answer: the form waits, its answers kept."""
        if not self.form.settled:
            self.window.status_message("Qwen Code: the form waits, your answers so far kept "
                                       "(Qwen Code: Answer Form… to go on)")

    def _settle(self, action: str, content: dict[str, Any] | None = None) -> bool:
        return self.form.settle(answer(action, content))  # type: ignore[arg-type]  # one of the three

    def _next(self) -> None:
        """Ask the next field, or send the form when none is left."""
        assert self.answers is not None
        if self.form.settled:  # cancelled meanwhile (the turn, the chat)
            return
        current = self.answers.current
        if current is None:
            self._settle("accept", self.answers.values)
            return
        allowed = [choice.value for choice in current.choices]
        self._picked = [v for v in current.default or () if v in allowed] if current.kind == "choices" else []
        sublime.set_timeout(lambda: self._ask(current, None, current.prefill()))

    def _ask(self, field: FormField, problem: str | None, text: str) -> None:
        if self.form.settled:
            return
        if field.kind in ("boolean", "choice"):
            self._ask_one_of(field, problem)
        elif field.kind == "choices":
            self._ask_many_of(field, problem, 0)
        else:
            hint = field.hint()
            why = f"✗ {problem}. " if problem else ""
            about = f" ({shown(field.description, 120)})" if field.description else ""
            caption = f"{why}{field.label}{about}{' — ' + hint if hint else ''}:"
            self.window.show_input_panel(caption, text, lambda typed: self._typed(field, typed), None,
                                         self._closed)

    def _typed(self, field: FormField, text: str) -> None:
        assert self.answers is not None
        try:
            value = field.check_text(text)
        except Invalid as error:
            problem = str(error)  # `error` is gone once the except block ends
            sublime.set_timeout(lambda: self._ask(field, problem, text))
            return
        self.answers.give(value)
        self._next()

    def _ask_one_of(self, field: FormField, problem: str | None) -> None:
        if field.kind == "boolean":
            values: list[Any] = [True, False]
            items = [["Yes", field.description], ["No", field.description]]
        else:
            values = [choice.value for choice in field.choices]
            items = [[choice.title, field.description] for choice in field.choices]
        if not field.required:
            values.append(None)
            items.append(["Leave it out", "(optional)"])
        selected = values.index(field.default) if field.default in values else 0

        def picked(index: int) -> None:
            assert self.answers is not None
            if index < 0:
                self._closed()
                return
            self.answers.give(values[index])
            self._next()

        placeholder = f"✗ {problem}. {field.label}" if problem else field.label
        self.window.show_quick_panel(items, picked, KEEP_OPEN, selected_index=selected, placeholder=placeholder)

    def _ask_many_of(self, field: FormField, problem: str | None, selected: int) -> None:
        done = f"Done: {len(self._picked)} chosen"
        items = [[done, field.description]] + [
            [("☑ " if choice.value in self._picked else "☐ ") + choice.title, ""] for choice in field.choices]

        def picked(index: int) -> None:
            assert self.answers is not None
            if index < 0:
                self._closed()
            elif index == 0:
                try:
                    value = field.check_choices(self._picked)
                except Invalid as error:
                    problem = str(error)  # `error` is gone once the except block ends
                    sublime.set_timeout(lambda: self._ask_many_of(field, problem, 0))
                    return
                self.answers.give(value or None)
                self._next()
            else:
                choice = field.choices[index - 1].value
                self._picked = ([v for v in self._picked if v != choice] if choice in self._picked
                                else [*self._picked, choice])
                sublime.set_timeout(lambda: self._ask_many_of(field, None, index))

        placeholder = f"✗ {problem}. {field.label}" if problem else f"{field.label}: pick, then Done"
        self.window.show_quick_panel(items, picked, KEEP_OPEN, selected_index=selected, placeholder=placeholder)

