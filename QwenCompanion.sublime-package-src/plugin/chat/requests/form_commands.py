"""Qwen Code: Answer Form… (see forms.py). Loaded at start-up: the forms'
module, which needs the runtime libraries, is imported when a form is answered."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ....core.json_types import JsonObject
from .editor_request_handler import request_handler_of

if TYPE_CHECKING:
    from .forms import OpenForm


class QwenChatAnswerFormCommand(sublime_plugin.WindowCommand):
    """Open the active chat's waiting form in panels; with `values` (every
    field's value, checked as the panels check them), `decline` or `cancel`,
    answer it at once."""

    def run(self, values: JsonObject | None = None, decline: bool = False, cancel: bool = False) -> None:
        from ....core.chat.requests.elicitation import answer
        from .forms import FormPanels

        handler = request_handler_of(self.window)
        form = handler.forms.open if handler is not None else None
        if handler is None or form is None:
            self.window.status_message("Qwen Code: no form is waiting in this chat")
        elif cancel or decline:
            form.settle(answer("cancel" if cancel else "decline"))
        elif values is not None:
            problem = handler.forms.answer_whole(values)
            if problem:
                self.window.status_message(f"Qwen Code: the form was not sent: {problem}")
        else:
            FormPanels(self.window, form).start()

    def is_enabled(self, values: JsonObject | None = None, decline: bool = False, cancel: bool = False) -> bool:
        return _open_form(self.window) is not None


def _open_form(window: sublime.Window) -> OpenForm | None:
    handler = request_handler_of(window)
    return handler.forms.open if handler is not None else None
