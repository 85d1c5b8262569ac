"""Qwen Code: Ask Aside… (qwen's `/btw`): a question about the conversation,
answered beside it in a tab of its own in the chat's column, even while a
turn runs. It never enters the transcript, and the conversation never sees
the question (core/chat/offers/). The tab comes forward only as part of the
user's command, the keys staying where they were; an answer arriving later
changes its text and nothing else."""

from __future__ import annotations

from concurrent.futures import Future

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.offers.asides import Aside, AsideThread
from ....core.chat.offers.qwen_calls import MAX_QUESTION_CHARS, ask_aside
from ...background import when_done
from ...editor import replace_text
from ...placement import keys_kept, show_without_focus
from ..command_bases import ActiveChatCommand
from ..window_chats import WindowChat, chats

ASIDE_TAB = "Aside"
MARKDOWN = "Packages/Markdown/Markdown.sublime-syntax"


def aside_thread(chat: WindowChat) -> AsideThread:
    if chat.asides is None:
        chat.asides = AsideThread()
    return chat.asides


def is_aside_view(view: sublime.View) -> bool:
    return any(chat.aside_view_id == view.id() for chat in chats.all())


def _open_tab(window: sublime.Window, chat: WindowChat) -> sublime.View:
    """The chat's aside tab, made in the chat's column (the transcript's group) if it has none."""
    found = next((v for v in window.views() if v.id() == chat.aside_view_id), None)
    if found is not None:
        return found
    transcript = chat.transcript_view
    group = window.get_view_index(transcript)[0] if transcript is not None and transcript.is_valid() else -1
    group = group if group >= 0 else window.active_group()
    with keys_kept(window):
        view = window.new_file()
        window.set_view_index(view, group, window.num_views_in_group(group))
    chat.aside_view_id = view.id()
    view.set_scratch(True)
    view.set_name(f"{ASIDE_TAB}: {chat.title}"[:80])
    view.settings().set("word_wrap", True)
    if sublime.find_syntax_by_scope("text.html.markdown"):
        view.assign_syntax(MARKDOWN)
    view.set_read_only(True)
    return view


@threads.on_main
def _show_text(chat: WindowChat, view: sublime.View | None = None) -> None:
    """The aside tab (if open) shows the chat's asides as they are now."""
    view = view or next((v for w in sublime.windows() for v in w.views() if v.id() == chat.aside_view_id),
                        None)
    if view is None or not view.is_valid():
        return
    view.set_read_only(False)
    replace_text(view, aside_thread(chat).text())
    view.set_read_only(True)


@threads.on_main
def ask(window: sublime.Window, chat: WindowChat, question: str) -> Future[str]:
    """Ask `question` aside (a follow-up of the chat's earlier asides); the tab
    comes forward now, the answer fills it in when it comes. The answer, or
    why there is none (another agent: "not offered by this agent")."""
    thread = aside_thread(chat)
    aside, text = thread.ask(question.strip()[:MAX_QUESTION_CHARS])
    view = _open_tab(window, chat)
    _show_text(chat, view)
    show_without_focus(window, view, window.active_view())
    answered: Future[str] = Future()
    when_done(chat.ask_qwen("Ask Aside", lambda request: ask_aside(request, text)),
              lambda done: _answered(window, chat, aside, done, answered))
    return answered


def _answered(window: sublime.Window, chat: WindowChat, aside: Aside, done: Future[str], answered: Future[str]) -> None:
    error = done.exception()
    answer = done.result() if error is None else f"(no answer: {error})"
    if error is not None:
        window.status_message(f"Qwen Code: {error}")
    aside_thread(chat).answered(aside, answer)
    _show_text(chat)
    answered.set_result(answer)


class QuestionInputHandler(sublime_plugin.TextInputHandler):
    def placeholder(self) -> str:
        return "A question about the conversation (it stays out of it)"

    def validate(self, text: str, event: sublime_plugin.Event | None = None) -> bool:
        return bool(text.strip())


class QwenChatAskAsideCommand(ActiveChatCommand):
    """Qwen Code: Ask Aside… — a side question about the active chat's conversation."""

    def run(self, question: str, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is not None and question.strip():
            ask(self.window, found, question)

    def input(self, args: dict[str, sublime_plugin.Value]) -> sublime_plugin.CommandInputHandler | None:
        return None if args.get("question") else QuestionInputHandler()

