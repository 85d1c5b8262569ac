"""The agent at work in the chat, in Sublime: the renderer of tool calls,
plans and thoughts (the `chats.renderer` hook; plans are shown by
plan_view.py), and the keys that answer permission prompts (1…n picks the
agent's options in its order, n+1 rejects with a reason, Esc rejects)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sublime
import sublime_plugin

from ...paths import path_display
from ..command_bases import ActiveChatCommand
from ..requests.editor_request_handler import EditorRequestHandler, request_handler_of
from ..window_chats import chat_of_view, chat_role, chats, window_by_id
from . import notify, plan_view

if TYPE_CHECKING:
    from ....core.chat.requests.permissions import PermissionPrompt
    from ....core.chat.transcript.render import UpdateRenderer
    from ....core.chat.transcript.tool_calls import PinnedPlan, ToolCallLine

PENDING_CONTEXT = "qwen_chat.permission_pending"


def work_renderer(window: sublime.Window, chat_id: int) -> UpdateRenderer:
    from ....core.chat.transcript.tool_calls import AgentWorkRenderer

    window_id = window.id()

    def tool_call(line: ToolCallLine) -> None:
        chats.tell("tool_call", {"window": window_id, "chat": chat_id, "toolCallId": line.tool_call_id,
                                 "status": line.status, "title": line.title, "kind": line.kind})
        if line.status in ("completed", "failed"):
            handler = request_handler_of(window, chat_id)
            if handler is not None:
                handler.accepted.call_ended(line.tool_call_id)

    def plan(pinned: PinnedPlan) -> None:
        # Built here, on the chat's thread; only the latest plan reaches the main thread.
        first = plan_view.plan_due(chat_id, pinned)
        if first:
            sublime.set_timeout(lambda: plan_view.show_pinned_plan(window_id, chat_id))

    return AgentWorkRenderer(on_tool_call=tool_call, on_plan=plan, display=path_display(window))


def turn_ended(event: str, details: dict[str, Any]) -> None:
    if event != "chat_turn_ended":
        return
    window_id, chat_id = int(details["window"]), int(details["chat"])
    handler = request_handler_of(window_by_id(window_id), chat_id)
    if handler is not None:
        handler.accepted.turn_ended()
    notify.turn_ended(window_id, chat_id, str(details["stopReason"]))


class QwenChatShowShellOutputCommand(ActiveChatCommand):
    """Qwen Code: Show Shell Output — what is kept of the chat's latest shell
    commands' output (their blocks show the last lines), in a tab of its own."""

    def run(self, chat: int | None = None) -> None:
        from ....core.chat.transcript.tool_calls import AgentWorkRenderer

        found = self.active_chat(chat)
        renderer = found.renderer() if found is not None else None
        outputs = renderer.shell_outputs() if isinstance(renderer, AgentWorkRenderer) else []
        if not outputs:
            self.window.status_message("Qwen Code: no shell output is kept in this chat")
            return

        def show(index: int) -> None:
            if index < 0:
                return
            title, text = outputs[index]
            view = self.window.new_file()
            view.set_scratch(True)
            view.set_name(f"Shell output: {title[:60]}")
            view.run_command("append", {"characters": text})
            view.set_read_only(True)

        if len(outputs) == 1:
            show(0)
        else:
            self.window.show_quick_panel([title for title, _ in outputs], show, placeholder="Shell output of")


class QwenChatPermissionCommand(sublime_plugin.WindowCommand):
    """Answer the oldest permission prompt: `index` (1-based, the agent's
    order) or `option` (an optionId), `reject`, or `reason` (ask why, then
    reject); with none of them, pick the answer in a quick panel."""

    def run(self, index: int | None = None, option: str | None = None, reject: bool = False, reason: bool = False) -> None:
        handler = request_handler_of(self.window)
        prompt = handler.pending.oldest() if handler is not None else None
        if handler is None or prompt is None:
            self.window.status_message("Qwen Code: no permission request is waiting")
            return
        if index is None and option is None and not reject and not reason:
            self._pick(handler, prompt)
        elif reason:
            def rejected(text: str) -> None:
                handler.reject(prompt.key, text.strip() or None)

            self.window.show_input_panel("Why reject? (sent to Qwen Code):", "", rejected, None, None)
        elif reject:
            if handler.reject(prompt.key):
                waiting = handler.pending.count()
                more = f"; {waiting} more request(s) wait, the next one is shown" if waiting else ""
                self.window.status_message(f"Qwen Code: rejected {prompt.title}{more}")
        elif option is not None:
            if not handler.choose(prompt.key, option):
                self.window.status_message(f"Qwen Code: no option {option!r} in this request")
        elif index is not None and prompt.questions:
            handler.answer_question(prompt.key, index)
        elif index is not None and 1 <= index <= len(prompt.options):
            handler.choose(prompt.key, prompt.options[index - 1].option_id)
        elif index == len(prompt.options) + 1:
            self.run(reason=True)

    def _pick(self, handler: EditorRequestHandler, prompt: PermissionPrompt) -> None:
        from ....core.chat.requests.permissions import REASON_CHOICE

        selected = -1
        if prompt.questions:
            labels = prompt.questions[len(prompt.answers)].labels
        else:
            labels = [o.name for o in prompt.options] + [REASON_CHOICE]
            # The agent orders its options: Enter on the pre-selected one refuses, never allows.
            selected = next((i for i, o in enumerate(prompt.options) if o.kind.startswith("reject")), len(prompt.options))

        def picked(choice: int) -> None:
            if choice >= 0 and handler.pending.oldest() is prompt:  # still the request shown
                self.run(index=choice + 1)

        # A consent panel: a tab an agent opens meanwhile must not close it (a -1 is no answer).
        self.window.show_quick_panel(labels, picked, sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST, selected,
                                     placeholder=f"Qwen Code asks: {prompt.title}")

    def is_enabled(self, **_: Any) -> bool:
        handler = request_handler_of(self.window)
        return handler is not None and handler.pending.oldest() is not None


class PermissionKeysListener(sublime_plugin.EventListener):
    def on_query_context(self, view: sublime.View, key: str, operator: int, operand: Any, match_all: bool) -> bool | None:
        if key != PENDING_CONTEXT:
            return None
        value = False
        # Only in the transcript, where the request is shown: the user aims a key
        # there on purpose. In the composer (or anywhere else) a digit is typing.
        chat = chat_of_view(view)
        if chat is not None and chat_role(view) == "transcript":
            handler = request_handler_of(view.window(), chat.chat_id)
            prompt = handler.pending.oldest() if handler is not None else None
            # A number operand: that key has a choice (the options, then "reject with a reason").
            keys = prompt.keys() if prompt is not None else 0
            number = operand if isinstance(operand, int) and not isinstance(operand, bool) else 1
            value = prompt is not None and number <= keys
        return value if operator == sublime.QueryOperator.EQUAL else not value

    def on_pre_close(self, view: sublime.View) -> None:
        chat = chat_of_view(view)
        if chat is not None and chat_role(view) == "transcript":
            handler = request_handler_of(view.window(), chat.chat_id)
            if handler is not None:  # the prompts are no longer shown: nobody can answer them
                handler.cancel_pending()


class ChatSeenListener(sublime_plugin.EventListener):
    """Sublime's focus, and the chat coming into sight (see notify.py)."""

    def on_activated(self, view: sublime.View) -> None:
        notify.app_focus_changed(view.id(), True)
        window = view.window()
        if window is not None:
            notify.chat_seen(window)

    def on_deactivated(self, view: sublime.View) -> None:
        notify.app_focus_changed(view.id(), False)
