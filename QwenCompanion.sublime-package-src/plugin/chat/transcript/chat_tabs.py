"""Several chats in a window, as tabs: New Chat, Switch Chat…, Close Chat,
Rename Chat and Delete Chat (rename and delete also reach qwen's own
session list, only when the agent is qwen), and the tab the user activates
becoming the window's active chat."""

from __future__ import annotations

import logging
from concurrent.futures import Future

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.agent.agents import TITLE_MAX_CHARS
from ...background import when_done
from ...quick_panel_items import panel_item
from ..command_bases import ActiveChatCommand
from ..window_chats import WindowChat, chat_of_view, chats, forget_session
from .chat_views import chat_views, name_tabs, open_chat

log = logging.getLogger(__name__)


def open_new_chat(window: sublime.Window, agent: str | None = None, transport: str | None = None) -> WindowChat | None:
    """A new chat in its own tabs, made the active chat; its agent (shared
    with the window's other chats of that agent) starts while the user types.
    `transport`: "stdio" or "serve" (default: the chat_transport setting)."""
    chat = chats.new_chat(window, agent, fresh=True, transport=transport)
    if chat is None:
        sublime.status_message("Qwen Code: the chat is not available while the package is unloading")
        return None
    open_chat(window, chat)
    chat.start()
    return chat


@threads.on_main
def select_chat(window: sublime.Window, chat: WindowChat, focus: bool = True) -> None:
    """Make `chat` the active chat and bring its tabs to the front."""
    chats.select(chat)
    open_chat(window, chat, focus=focus)


@threads.on_main
def close_chat(window: sublime.Window, chat: WindowChat) -> None:
    """Close the chat and its tabs; its running turn is cancelled first. The
    window's next chat comes to the front."""
    if chat.busy:
        chat.cancel()
    following = chats.close_chat(chat)
    for view in chat_views(chat):
        if view is not None:
            view.close()
    if following is not None:
        transcript, composer = chat_views(following)
        if transcript is not None and composer is not None:
            open_chat(window, following)


def chat_label(chat: WindowChat) -> str:
    state = chat.state
    queued = f", {state.queued} queued" if state.queued else ""
    return f"{state.agent_text()}{queued}"


class QwenChatSwitchCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Switch Chat… — the window's chats (title and state); the
    picked one comes to the front."""

    def run(self) -> None:
        listed = chats.of_window(self.window)
        if not listed:
            self.window.status_message("Qwen Code: this window has no chat yet (Qwen Code: New Chat)")
            return
        active = chats.get(self.window)
        items = [panel_item(chat.title, annotation=chat_label(chat),
                            details=chat.session_id or "no session yet")
                 for chat in listed]

        def picked(index: int) -> None:
            if index >= 0 and listed[index] in chats.of_window(self.window):
                select_chat(self.window, listed[index])

        selected = listed.index(active) if active in listed else 0
        self.window.show_quick_panel(items, picked, selected_index=selected, placeholder="Switch to which chat?")

    def is_enabled(self) -> bool:
        return bool(chats.of_window(self.window))


class QwenChatCloseCommand(ActiveChatCommand):
    """Qwen Code: Close Chat — the active chat (or `chat`); its conversation stays in History."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is not None:
            close_chat(self.window, found)


class QwenChatRenameCommand(ActiveChatCommand):
    """Qwen Code: Rename Chat… — its tabs' name, and with qwen its session's title."""

    def run(self, chat: int | None = None, title: str | None = None) -> None:
        found = self.active_chat(chat)
        if found is None:
            return
        if title is None:
            self.window.show_input_panel("Chat name:", found.title, lambda text: self.run(found.chat_id, text),
                                         None, None)
            return
        rename_chat(self.window, found, title.strip())


def rename_chat(window: sublime.Window, chat: WindowChat, title: str) -> None:
    from ....core.chat.history.conversation_edits import is_qwen, rename_session

    if not title:
        return
    title = title[:TITLE_MAX_CHARS]  # the tabs' name is the session's title, which qwen caps
    chat.custom_title = title
    name_tabs(chat)
    connection, session_id = chat.connection, chat.session_id
    if session_id is None or not is_qwen(connection.initialized):
        return  # the name is the editor's own: the agent has no session to name, or no method for it

    def renamed(done: Future[bool]) -> None:
        if not _succeeded(done):
            window.status_message("Qwen Code: the chat is renamed here; qwen kept its session's title")

    when_done(rename_session(connection, session_id, title), renamed)


def _succeeded(done: Future[bool]) -> bool:
    try:
        return done.result()
    except Exception as error:
        log.warning("chat: the agent refused a session method: %s", error)
        return False


class QwenChatDeleteCommand(ActiveChatCommand):
    """Qwen Code: Delete Chat — close the chat and delete its conversation from
    qwen's history (asks first)."""

    def run(self, chat: int | None = None, confirmed: bool = False) -> None:
        from ....core.chat.history.conversation_edits import delete_session, deletes_sessions

        found = self.active_chat(chat)
        if found is None:
            return
        session_id, connection = found.session_id, found.connection
        if not confirmed and not sublime.ok_cancel_dialog(
            f"Qwen Code: delete the chat “{found.title}” and its conversation from the history?", "Delete"
        ):
            return
        window = self.window
        if session_id is None or not deletes_sessions(connection.initialized):
            if session_id is not None:
                window.status_message("Qwen Code: the chat is closed; this agent cannot delete its conversation")
            close_chat(window, found)
            return
        if found.busy:
            found.cancel()  # a turn still running would write the session again

        def deleted(done: Future[bool]) -> None:
            if _succeeded(done):
                forget_session(window, session_id)
            else:
                window.status_message("Qwen Code: the chat is closed; qwen did not delete its conversation")
            close_chat(window, found)  # after: the last chat's close ends the agent

        when_done(delete_session(connection, session_id), deleted)


class ChatTabsListener(sublime_plugin.EventListener):
    def on_activated(self, view: sublime.View) -> None:
        """A chat's tab activated (a click, Ctrl+PageDown…) makes it the
        active chat, and its other view comes to the front too."""
        chat = chat_of_view(view)
        window = view.window()
        if chat is None or window is None or not chats.select(chat):
            return
        sublime.set_timeout(lambda: _front_pair(window, chat, view))


def _front_pair(window: sublime.Window, chat: WindowChat, activated: sublime.View) -> None:
    if not window.is_valid() or chats.get(window) is not chat:
        return
    for view in chat_views(chat):
        if view is not None and view != activated:
            window.focus_view(view)
    if activated.is_valid():
        window.focus_view(activated)
