"""Chats in git worktrees of their own: New Chat in a Worktree (a task name,
a worktree on the branch qwen/<name> from HEAD, a chat whose session works
there), Discard Worktree (after a yes), and Worktrees… (the package's
worktrees of the window's repository: reopen a chat, open the worktree in a
new window, or discard).

Git runs on threads of ours (core/worktrees/worktrees.py through the hardened
runner); the main thread only asks, and opens the chat once git is done.
Events for the driver go to `chats.observers`: "worktree_created",
"worktree_refused", "worktree_discarded"."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable

import sublime
import sublime_plugin

from ....core.worktrees.worktree_changes import state
from ....core.worktrees.worktrees import Worktree, WorktreeRefused, create, discard, listed
from ...background import in_background
from ...companion.terminal import window_cwd
from ...paths import package_cache
from ...quick_panel_items import panel_item
from ...settings import userprefs
from ..command_bases import WorktreeChatCommand
from ..transcript.chat_tabs import close_chat, select_chat
from ..transcript.chat_views import open_chat
from ..window_chats import WindowChat, chat_imported_or_later, chats
from .worktree_git import git_then, refused
from .worktree_review import applied_saves, apply_to_my_files, forget_kept, show_changes

WORKTREES = "worktrees"
# What Worktrees… offers for one.
ACTIONS = ("Open Its Chat", "Open Worktree in New Window", "Discard Worktree…", "Worktree Changes", "Apply to My Files")


def worktrees_folder() -> str:
    """The `worktrees_folder` setting, or the package's cache folder (main thread)."""
    configured = userprefs().worktrees_folder.strip()
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    return str(package_cache() / WORKTREES)


def open_worktree_chat(window: sublime.Window, worktree: Worktree) -> WindowChat | None:
    """The window's chat in `worktree` brought to the front, or a new one (its
    session the worktree's last, if it had one) (main thread)."""
    existing = next((c for c in chats.of_window(window) if c.worktree is not None and c.worktree.path == worktree.path),
                    None)
    if existing is not None:
        select_chat(window, existing)
        return existing
    chat = chats.new_chat(window, worktree=worktree)
    if chat is None:
        sublime.status_message("Qwen Code: the chat is not available while the package is unloading")
        return None
    open_chat(window, chat)
    chat.note(
        f"This chat works in the worktree {worktree.name} (branch {worktree.branch}) at {worktree.path}. "
        "Its agent reads and writes files there only: your files and their unsaved changes are not read, "
        "and the editor's selection is not sent.")
    chat.start()
    return chat


class QwenChatNewWorktreeCommand(sublime_plugin.WindowCommand):
    """Qwen Code: New Chat in a Worktree — asks for a task name; the chat's agent
    works in a new worktree of the window's repository, not in the user's files."""

    def run(self, name: str | None = None) -> None:
        if name is None:
            self.window.show_input_panel("Worktree task name (letters, digits, . _ -):", "",
                                         lambda text: self.run(text.strip()), None, None)
            return
        window, folder, store = self.window, window_cwd(self.window), worktrees_folder()
        # The chat opens as the user's doing: they asked for it.
        git_then(window, lambda: create(folder, name, store), lambda worktree: self._made(window, worktree))

    @staticmethod
    def _made(window: sublime.Window, worktree: Worktree) -> None:
        def open_it() -> None:
            chat = open_worktree_chat(window, worktree)
            chats.tell("worktree_created", {"window": window.id(), "chat": chat.chat_id if chat else None,
                                            "worktree": {"path": worktree.path, "branch": worktree.branch}})

        if window.is_valid() and chat_imported_or_later(open_it):
            open_it()


def open_in_new_window(window: sublime.Window, worktree: Worktree) -> None:
    """A new window on the worktree's folder, for a closer look (main thread)."""
    window.run_command("new_window")
    opened = sublime.active_window()
    if opened.id() != window.id():
        opened.set_project_data({"folders": [{"path": worktree.path}]})


def discard_worktree(window: sublime.Window, worktree: Worktree, then: Callable[[], None] | None = None) -> None:
    """After a yes: close the window's chat in it, then remove the worktree and
    its branch on a thread of ours (main thread)."""
    if not sublime.ok_cancel_dialog(
        f"Discard the worktree {worktree.name}?\n\nIts folder {worktree.path} and the branch {worktree.branch} "
        "are deleted, with every change in them. Your own files are not touched.",
        "Discard Worktree",
    ):
        return
    for chat in chats.of_window(window):
        if chat.worktree is not None and chat.worktree.path == worktree.path:
            close_chat(window, chat)

    def remove() -> None:
        try:
            discard(worktree)
        except WorktreeRefused as problem:
            message = str(problem)
            sublime.set_timeout(lambda: refused(window, message))
            return
        sublime.set_timeout(lambda: forget_kept(worktree))
        chats.tell("worktree_discarded", {"window": window.id(), "worktree": {"path": worktree.path,
                                                                               "branch": worktree.branch}})
        sublime.set_timeout(lambda: sublime.status_message(f"Qwen Code: worktree {worktree.name} discarded"))
        if then is not None:
            sublime.set_timeout(then)

    in_background(remove, "worktree")


class QwenWorktreeDiscardCommand(WorktreeChatCommand):
    """Qwen Code: Discard Worktree — the active chat's (or open chat `chat`'s) worktree and branch, after a yes."""

    after_close = False

    def run(self, chat: int | None = None) -> None:
        worktree = self.chat_worktree(chat)
        if worktree is not None:
            discard_worktree(self.window, worktree)


class QwenWorktreesCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Worktrees… — the package's worktrees of the window's
    repository with their states (listed by git on a thread of ours): open
    its chat, review or apply its changes, or discard it."""

    def run(self) -> None:
        window, folder, store = self.window, window_cwd(self.window), worktrees_folder()
        # The panel and what is chosen in it are the user's doing.
        git_then(window, lambda: with_states(listed(folder, store)), lambda found: self._show(window, found))

    @staticmethod
    def _show(window: sublime.Window, found: list[tuple[Worktree, str]]) -> None:
        if not window.is_valid():
            return
        if not found:
            sublime.status_message("Qwen Code: no worktrees of this repository (New Chat in a Worktree makes one)")
            return
        open_paths = {c.worktree.path for c in chats.of_window(window) if c.worktree is not None}
        items = [panel_item(w.name, annotation=" · ".join(
                     [each for each in ("chat open" if w.path in open_paths else "", status) if each]),
                            details=f"{w.branch} · {w.path}") for w, status in found]

        def chosen(index: int) -> None:
            if index < 0:
                return
            worktree = found[index][0]
            # Shown once the first panel has closed (Sublime closes it after this callback).
            then = contextvars.copy_context()
            sublime.set_timeout(lambda: then.run(window.show_quick_panel, list(ACTIONS),
                                                 lambda action: act(worktree, action)))

        def act(worktree: Worktree, action: int) -> None:
            def reopen() -> None:
                open_worktree_chat(window, worktree)

            if action == 0 and chat_imported_or_later(reopen):
                reopen()
            elif action == 1:
                open_in_new_window(window, worktree)
            elif action == 2:
                discard_worktree(window, worktree)
            elif action == 3:
                show_changes(window, worktree)
            elif action == 4:
                apply_to_my_files(window, worktree)

        window.show_quick_panel(items, chosen)


def with_states(found: list[Worktree]) -> list[tuple[Worktree, str]]:
    """Each worktree with its state (git: a thread of ours); one that cannot be read says why."""
    states = []
    for worktree in found:
        try:
            states.append((worktree, state(worktree, saved=applied_saves.of(worktree.path))))
        except WorktreeRefused as problem:
            states.append((worktree, f"unreadable: {problem}"))
    return states
