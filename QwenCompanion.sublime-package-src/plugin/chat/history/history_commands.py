"""Qwen Code: Chat History… — every earlier session of the window's folders,
newest first (title, time, first prompt), fetched off the main thread by the
chat's own thread. Enter resumes the picked session in a new chat tab (or
brings forward the chat that has it open; refused while qwen in a terminal
holds it); with `action` "rename" or
"delete" the picked session is renamed or deleted (delete asks first), and
"search" asks for words first and lists only the sessions whose title or
first prompt hold them all, or whose prompts and answers do (the package's
index of the chats it saw, conversation_index.py)."""

from __future__ import annotations

from concurrent.futures import Future

import sublime
import sublime_plugin

from ....core.chat.agent.agents import TITLE_MAX_CHARS, can_load, can_resume
from ....core.chat.history.history import SavedConversation, annotation, details, filtered
from ....core.chat.history.live_sessions import SessionHeld
from ....core.worktrees.worktrees import Worktree
from ...background import when_done
from ...quick_panel_items import panel_item
from ..agent.live_writers import unless_held
from ..transcript.chat_tabs import close_chat, rename_chat, select_chat
from ..transcript.chat_views import open_chat
from ..window_chats import WindowChat, chats, forget_session
from .conversation_index import sessions_matching

ACTIONS = ("resume", "rename", "delete", "search")
PLACEHOLDERS = {
    "resume": "Resume which chat? (in a new tab)",
    "rename": "Rename which chat?",
    "delete": "Delete which chat?",
}


def history_of(window: sublime.Window) -> tuple[WindowChat, Future[list[SavedConversation]]] | None:
    """The window's sessions, as its active chat's agent lists them (None while unloading)."""
    lister = chats.ensure(window)
    if lister is None:
        sublime.status_message("Qwen Code: the chat is not available while the package is unloading")
        return None
    return lister, lister.core.sessions.list_history(window.folders())


def _open_holder(window: sublime.Window, session_id: str) -> WindowChat | None:
    """The window's chat that has this session open, if one does."""
    return next((chat for chat in chats.of_window(window) if chat.session_id == session_id), None)


def resume_in_new_chat(window: sublime.Window, session_id: str, title: str, cwd: str | None,
                       agent: str | None, replay: bool = False, worktree: Worktree | None = None) -> WindowChat | None:
    """The session goes on in a new chat tab named after it (the user's own
    pick: the new chat takes the keys). One open in a chat already: that chat
    comes forward instead, as two writers on one session would fork it. With
    `replay` its conversation is shown (session/load); with `worktree` the new
    chat works in that worktree (the session's folder), confined to it."""
    holder = _open_holder(window, session_id)
    if holder is not None:
        select_chat(window, holder)
        return holder
    chat = chats.new_chat(window, agent, fresh=True, worktree=worktree)
    if chat is None:
        sublime.status_message("Qwen Code: the chat is not available while the package is unloading")
        return None
    chat.custom_title = title[:TITLE_MAX_CHARS]
    open_chat(window, chat)
    chat.core.sessions.resume_session(session_id, cwd, replay)
    return chat


def resume_unless_held(window: sublime.Window, session_id: str, title: str, cwd: str | None,
                       agent: str | None) -> Future[WindowChat | None]:
    """Chat History's Enter: `resume_in_new_chat`, refused (the status bar says
    why, the future fails with `SessionHeld`) while qwen in a terminal holds the session."""
    if _open_holder(window, session_id) is not None:
        done: Future[WindowChat | None] = Future()
        done.set_result(resume_in_new_chat(window, session_id, title, cwd, agent))
        return done
    opened = unless_held(session_id, cwd, lambda: resume_in_new_chat(window, session_id, title, cwd, agent)
                         if window.is_valid() else None)

    def refused(done: Future[WindowChat | None]) -> None:
        if isinstance(done.exception(), SessionHeld):
            window.status_message(str(done.exception()))

    when_done(opened, refused)
    return opened


def let_go_if_unused(window: sublime.Window, lister: WindowChat) -> None:
    """The chat made only to ask for the list (a window without one) is closed
    once the picked session has a chat of its own: no empty chat stays behind."""
    if lister.transcript_view is None and not lister.history and lister in chats.of_window(window):
        close_chat(window, lister)


def rename_listed(window: sublime.Window, lister: WindowChat, session_id: str, title: str) -> None:
    """Rename a session: through its open chat, else qwen's renameSession."""
    from ....core.chat.history.conversation_edits import is_qwen, rename_session

    title = title.strip()[:TITLE_MAX_CHARS]
    if not title:
        return
    holder = _open_holder(window, session_id)
    if holder is not None:
        rename_chat(window, holder, title)
        return
    connection = lister.connection
    if not is_qwen(connection.initialized):
        window.status_message("Qwen Code: this agent cannot rename its sessions")
        return

    def renamed(done: Future[bool]) -> None:
        window.status_message("Qwen Code: renamed" if _succeeded(done) else "Qwen Code: the agent did not rename it")

    when_done(rename_session(connection, session_id, title), renamed)


def delete_listed(window: sublime.Window, lister: WindowChat, session_id: str) -> None:
    """Delete a session (already confirmed): its open chat is closed first, as
    Delete Chat does; else qwen's deleteSession."""
    from ....core.chat.history.conversation_edits import delete_session, deletes_sessions

    holder = _open_holder(window, session_id)
    if holder is not None:
        window.run_command("qwen_chat_delete", {"chat": holder.chat_id, "confirmed": True})
        return
    connection = lister.connection
    if not deletes_sessions(connection.initialized):
        window.status_message("Qwen Code: this agent cannot delete its sessions")
        return

    def deleted(done: Future[bool]) -> None:
        if _succeeded(done):
            forget_session(window, session_id)
            window.status_message("Qwen Code: deleted")
        else:
            window.status_message("Qwen Code: the agent did not delete it")

    when_done(delete_session(connection, session_id), deleted)


def _succeeded(done: Future[bool]) -> bool:
    try:
        return done.result()
    except Exception:
        return False


class QwenChatSessionsCommand(sublime_plugin.WindowCommand):
    def run(self, action: str = "resume", query: str = "") -> None:
        window = self.window
        if action == "search" and not query.strip():
            window.show_input_panel("Search in conversations:", "", lambda text: self.run("resume", text), None, None)
            return
        asked = history_of(window)
        if asked is None:
            return
        lister, future = asked
        action = action if action in PLACEHOLDERS else "resume"
        if not query.strip():
            when_done(future, lambda done: self._listed(lister, done, action, query, set()))
            return

        def with_answers(done: Future[list[SavedConversation]]) -> None:  # the index's matches join the list's
            when_done(sessions_matching(query), lambda said: self._listed(
                lister, done, action, query, said.result() if said.exception() is None else set()))

        when_done(future, with_answers)

    def _listed(self, lister: WindowChat, done: Future[list[SavedConversation]], action: str, query: str,
                said: set[str]) -> None:
        """`said`: the sessions whose prompts and answers hold the query (the package's index)."""
        from ....core.chat.history.conversation_edits import is_qwen

        window = self.window
        try:
            sessions = filtered(done.result(), query, said)
        except Exception as error:
            window.status_message(f"Qwen Code: could not list the sessions: {error}")
            return
        if not window.is_valid():
            return
        if not sessions:
            window.status_message("Qwen Code: no earlier chats match" if query else "Qwen Code: no earlier chats here")
            return
        open_ids = {chat.session_id for chat in chats.of_window(window)}
        several = len(window.folders()) > 1
        items = [panel_item(entry.title, annotation=annotation(entry, entry.session_id in open_ids),
                            details=details(entry, several)) for entry in sessions]
        placeholder = PLACEHOLDERS[action]
        if action != "resume" and not is_qwen(lister.connection.initialized):
            placeholder += " (this agent cannot rename or delete its sessions)"
        initialized = lister.connection.initialized
        capabilities = initialized.agent_capabilities if initialized is not None else None
        resumable = can_resume(capabilities) or can_load(capabilities)
        if action == "resume" and not resumable:
            placeholder = "Earlier chats (this agent cannot resume or load them)"

        def picked(index: int) -> None:
            if index < 0 or not window.is_valid():
                return
            entry = sessions[index]
            if action == "rename":
                window.show_input_panel("Chat name:", entry.title,
                                        lambda text: rename_listed(window, lister, entry.session_id, text), None, None)
            elif action == "delete":
                if sublime.ok_cancel_dialog(f"Qwen Code: delete the chat “{entry.title}” and its conversation "
                                            "from the history?", "Delete"):
                    delete_listed(window, lister, entry.session_id)
            elif not resumable:
                window.status_message("Qwen Code: this agent cannot resume or load its earlier sessions")
            else:
                resumed = resume_unless_held(window, entry.session_id, entry.title, entry.cwd or None, lister.agent)

                def let_go(done: Future[WindowChat | None]) -> None:
                    if done.exception() is None and done.result() not in (None, lister):
                        let_go_if_unused(window, lister)

                when_done(resumed, let_go)

        window.show_quick_panel(items, picked, placeholder=placeholder)
