"""Qwen Code: Chat and its commands, keys and listeners."""

from __future__ import annotations

import contextvars
import logging
import os
import re
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import sublime
import sublime_plugin

from ..background import in_background, when_done
from ..companion.terminal import window_cwd
from ..editor import view_text
from ..settings import userprefs
from . import prompt_edits
from .agents import agent_rows
from .chat_tabs import open_new_chat, select_chat
from .chat_views import open_chat, refresh_status, uptime
from .chats import (
    WindowChat,
    chat_imported_or_later,
    chat_of_view,
    chat_role,
    chats,
    is_chat_view,
    prestart_enabled,
)
from .mentions import MENTIONS, PASTE_IMAGE, mention_completions, pick

if TYPE_CHECKING:
    from acp.schema import SessionInfo

    from ...core.json_types import JsonObject

log = logging.getLogger(__name__)

LOCAL_COMMANDS = {
    "clear": "start a new conversation",
    "help": "list the commands",
    "status": "the agent's state, session, mode, model, pid and uptime",
}
AGENT_LOG_PANEL = "Qwen Agent Log"
MAX_PROJECT_FILES = 5000
SKIPPED_FOLDERS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".hg", ".svn", "dist", "build"})
ATTACHMENT = re.compile(r"@(\S+)")

# window id -> recently active views, newest last. A chat view is activated
# before it is marked as one, so the editor view is found when it is needed.
_recent_views: dict[int, list[int]] = {}
RECENT_VIEWS = 8

# The keymap's context for "which tab of a chat is this" ("transcript", "composer", null):
# answered from the package's record, not `setting.qwen_chat.view`, which a project can set.
CHAT_VIEW_CONTEXT = "qwen_chat.view"


def chat_for(window: sublime.Window | None, *, show: bool = False) -> WindowChat | None:
    if window is None:
        return None
    chat = chats.ensure(window)
    if chat is None:
        sublime.status_message("Qwen Code: the chat is not available while the package is unloading")
    elif show:
        open_chat(window, chat)
    return chat


def editor_view(window: sublime.Window) -> sublime.View | None:
    for view_id in reversed(_recent_views.get(window.id(), [])):
        view = sublime.View(view_id)
        host = view.window()
        if view.is_valid() and host is not None and host.id() == window.id() and not is_chat_view(view):
            return view
    active = window.active_view()
    return active if active is not None and not is_chat_view(active) else None


def context_options() -> Any:
    from ...core.companion.ide_context import ContextOptions

    return ContextOptions.from_settings(userprefs().context_values())


def active_context(window: sublime.Window) -> list[JsonObject]:
    """The active file, cursor and selection as prompt blocks (main thread, bounded)."""
    from ...core.chat.prompt_context import ActiveFile, active_file_blocks
    from ...core.companion.ide_context import selection_read_end

    view = editor_view(window)
    if view is None or not view.file_name() or not userprefs().chat_send_context:
        return []
    selection = view.sel()
    if len(selection) == 0:
        return []
    region = selection[0]
    row, col = view.rowcol(region.b)
    selected = ""
    lines = (0, 0)
    if not region.empty():
        selected = view.substr(sublime.Region(region.begin(), selection_read_end(region.begin(), region.end())))
        lines = (view.rowcol(region.begin())[0] + 1, view.rowcol(region.end())[0] + 1)
    active = ActiveFile(str(view.file_name()), row + 1, col + 1, selected, lines)
    return active_file_blocks(active, context_options())


def _note(chat: WindowChat, text: str) -> None:
    chat.conversation.note(text)


def run_local(chat: WindowChat, name: str) -> bool:
    """/clear, /help and /status work without the agent."""
    state = chat.conversation.state
    if name == "clear":
        chat.conversation.new_session()
    elif name == "help":
        lines = [f"/{n} — {d}" for n, d in LOCAL_COMMANDS.items()]
        lines += [f"/{c.name} — {c.description}" for c in state.commands]
        _note(chat, "Commands:\n>\n> " + "\n> ".join(lines))
    elif name == "status":
        mode = state.mode_name()
        _note(chat, "\n> ".join([
            f"Agent: {state.agent}" + (f" ({state.agent_name})" if state.agent_name else ""),
            f"Session: {state.session_id or '—'}",
            f"Mode: {mode or '—'}",
            f"Model: {state.model_name() or '—'}",
            f"Pid: {chat.conversation.pid or '—'}",
            f"Uptime: {uptime(state.started_at) if chat.conversation.pid else '—'}",
        ]))
    else:
        return False
    return True


class QwenChatCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Chat — open or focus the window's chat."""

    def run(self) -> None:
        if not chat_imported_or_later(lambda: self.window.run_command("qwen_chat")):
            return
        chat = chat_for(self.window, show=True)
        if chat is not None and not self.window.folders():
            self.window.status_message(
                f"Qwen Code: this window has no folder, so qwen works in {window_cwd(self.window)}; "
                "open your project's folder (File → Open Folder…) for a chat about it"
            )
        if chat is not None and chat.conversation.state.agent == "stopped":
            chat.conversation.start()  # the agent starts, and reloads the last chat, while the user types


class QwenChatNewCommand(sublime_plugin.WindowCommand):
    """Qwen Code: New Chat — a new conversation in a tab of its own (the others stay)."""

    def run(self, agent: str = "") -> None:
        """`agent`: a name of the chat_agents setting (default: chat_agent)."""
        if not chat_imported_or_later(lambda: self.window.run_command("qwen_chat_new", {"agent": agent})):
            return
        open_new_chat(self.window, agent or None)


class QwenChatSendCommand(sublime_plugin.TextCommand):
    """Enter in the composer: send what it holds (queued while the agent works)."""

    def run(self, edit: sublime.Edit, text: str | None = None) -> None:
        window = self.view.window() or sublime.active_window()
        chat = chat_of_view(self.view) or chat_for(window)  # Enter in a chat's composer sends to that chat
        if chat is None:
            return
        body = view_text(self.view) if text is None else text
        if not body.strip():
            return
        if text is None:
            self.view.erase(edit, sublime.Region(0, self.view.size()))
        chat.history_index = len(chat.conversation.history) + 1
        local = re.fullmatch(r"\s*/(\w+)\s*", body)
        if local and run_local(chat, local[1]):
            chat.conversation.history.append(body)
            return
        blocks = active_context(window) if chat.worktree is None else []  # the main tree's text stays home
        for token in ATTACHMENT.findall(body):
            block = chat.attachments.pop(token, None)
            if block is not None:
                blocks.append(block)
        edited = prompt_edits.take(chat.chat_id)
        if edited is None:
            chat.conversation.send(body, blocks)
        else:  # Edit and Resend: the text replaces that prompt and everything after it
            window.run_command("qwen_chat_rewind", {"turn": edited, "text": body})


class QwenChatHistoryCommand(sublime_plugin.TextCommand):
    """Up/Down in the composer: earlier and later prompts."""

    def run(self, edit: sublime.Edit, step: int = -1) -> None:
        chat = chat_of_view(self.view) or chats.get(self.view.window())
        if chat is None or not chat.conversation.history:
            return
        history = chat.conversation.history
        index = max(0, min(len(history), min(chat.history_index, len(history)) + step))
        chat.history_index = index
        text = history[index] if index < len(history) else ""
        self.view.replace(edit, sublime.Region(0, self.view.size()), text)
        end = self.view.size()
        self.view.sel().clear()
        self.view.sel().add(sublime.Region(end, end))


class QwenChatCancelCommand(sublime_plugin.WindowCommand):
    def run(self) -> None:
        chat = chats.get(self.window)
        if chat is not None:
            chat.conversation.cancel()


class QwenChatSessionsCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Chat History… — the folder's sessions; picking one loads it."""

    def run(self) -> None:
        chat = chat_for(self.window, show=True)
        if chat is None:
            return
        window = self.window

        def listed(done: Future[list[SessionInfo]]) -> None:
            try:
                sessions = done.result()
            except Exception as error:
                sublime.status_message(f"Qwen Code: could not list the sessions: {error}")
                return
            if not sessions:
                sublime.status_message("Qwen Code: no earlier chats in this folder")
                return
            open_in = {c.conversation.state.session_id: c for c in chats.of_window(window)}
            items = [
                sublime.QuickPanelItem(
                    s.title or s.session_id,
                    annotation=("open · " if s.session_id in open_in else "")
                    + (s.updated_at or "")[:16].replace("T", " "),
                    details=str((s.field_meta or {}).get("preview") or "")[:200],
                )
                for s in sessions
            ]

            def picked(index: int) -> None:
                if index < 0:
                    return
                holder = open_in.get(sessions[index].session_id)
                if holder is not None and holder in chats.of_window(window):
                    select_chat(window, holder)  # open in a chat already: that chat comes to the front
                else:
                    chat.conversation.load_session(sessions[index].session_id)

            window.show_quick_panel(items, picked, placeholder="Load which chat?")

        when_done(chat.conversation.list_sessions(), listed)


class _ChoiceCommand(sublime_plugin.WindowCommand):
    kind = "mode"

    def run(self) -> None:
        chat = chat_for(self.window)
        if chat is None:
            return
        window, kind = self.window, self.kind

        def choose() -> None:
            state = chat.conversation.state
            choices = state.modes if kind == "mode" else state.models
            current = state.mode_id if kind == "mode" else state.model_id
            if not choices:
                sublime.status_message(f"Qwen Code: the agent offers no {kind}s")
                return
            items = [sublime.QuickPanelItem(c.name, annotation="current" if c.id == current else "", details=c.description)
                     for c in choices]
            selected = next((i for i, c in enumerate(choices) if c.id == current), -1)

            def picked(index: int) -> None:
                if index >= 0:
                    setter = chat.conversation.set_mode if kind == "mode" else chat.conversation.set_model
                    setter(choices[index].id)

            window.show_quick_panel(items, picked, selected_index=selected, placeholder=f"Chat {kind}")

        def started(done: Future[None]) -> None:
            error = done.exception()
            if error is not None:
                sublime.status_message(f"Qwen Code: {error}")
            elif chat.conversation.state.session_id:
                choose()
            # else the chat's transcript already says why the agent did not start

        if chat.conversation.state.session_id:
            choose()
        else:
            sublime.status_message("Qwen Code: starting the agent…")
            when_done(chat.conversation.start(), started)


class QwenChatModeCommand(_ChoiceCommand):
    kind = "mode"


class QwenChatModelCommand(_ChoiceCommand):
    kind = "model"


class QwenChatCycleModeCommand(sublime_plugin.WindowCommand):
    """Shift+Tab in the composer: the next mode."""

    def run(self) -> None:
        chat = chats.get(self.window)
        if chat is None or not chat.conversation.state.modes:
            return
        modes = [m.id for m in chat.conversation.state.modes]
        current = chat.conversation.state.mode_id
        following = modes[(modes.index(current) + 1) % len(modes)] if current in modes else modes[0]
        chat.conversation.set_mode(following)


class QwenChatAddSelectionCommand(sublime_plugin.TextCommand):
    """Qwen Code: Add Selection to Chat — attach the selection to the next prompt."""

    def run(self, edit: sublime.Edit) -> None:
        from ...core.chat.prompt_context import ActiveFile, active_file_blocks

        view, window = self.view, self.view.window()
        chat = chat_for(window)
        if window is None or chat is None:
            return
        region = next((r for r in view.sel() if not r.empty()), None)
        if region is None:
            sublime.status_message("Qwen Code: select some text to add to the chat")
            return
        path = view.file_name() or view.name() or f"untitled-{view.id()}"
        first, last = view.rowcol(region.begin())[0] + 1, view.rowcol(region.end())[0] + 1
        active = ActiveFile(path, first, 1, view.substr(region), (first, last))
        options = context_options()
        blocks = [b for b in active_file_blocks(active, options) if b["type"] == "resource"]
        if not blocks:
            sublime.status_message("Qwen Code: this file is excluded from what is sent (excluded_file_patterns)")
            return
        token = f"{os.path.basename(path)}:{first}-{last}"
        chat.attachments[token] = blocks[0]
        composer = open_chat(window, chat)
        composer.run_command("append", {"characters": f"@{token} "})


def project_files(folders: list[str]) -> list[str]:
    """Up to MAX_PROJECT_FILES files under `folders`: a walk that takes seconds
    on a big or network project, so never on Sublime's main or worker thread."""
    files: list[str] = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
            files.extend(os.path.join(root, n) for n in sorted(names))
            if len(files) >= MAX_PROJECT_FILES:
                return files[:MAX_PROJECT_FILES]
    return files


class QwenChatAttachFileCommand(sublime_plugin.WindowCommand):
    """`@` in the composer: pick an open or project file to attach."""

    def run(self, typed: bool = False) -> None:
        window = self.window
        chat = chats.get(window)
        composer = chat.composer_view if chat is not None else None
        if chat is None or composer is None or not composer.is_valid():
            return
        if typed:
            composer.run_command("insert", {"characters": "@"})
        open_views = {v.file_name(): v for v in window.views() if v.file_name() and not is_chat_view(v)}
        folders = window.folders()

        def relative(path: str) -> str:
            for folder in folders:
                if path.startswith(folder.rstrip(os.sep) + os.sep):
                    return os.path.relpath(path, folder).replace(os.sep, "/")
            return os.path.basename(path)

        def gathered() -> None:
            paths = list(dict.fromkeys([p for p in open_views if p] + project_files(folders)))
            choices = [*MENTIONS, PASTE_IMAGE]  # the mentions first, then the files
            items = [sublime.QuickPanelItem(f"@{c}", annotation=MENTIONS.get(c, "the clipboard's image")) for c in choices]
            items += [sublime.QuickPanelItem(relative(p), annotation="open" if p in open_views else "") for p in paths]

            def picked(index: int) -> None:
                if index < 0:
                    return
                if index < len(choices):
                    pick(window, chat, choices[index], "token" if typed else "@", editor_view(window))
                    return
                index -= len(choices)
                self._attach(chat, composer, paths[index], open_views.get(paths[index]), relative(paths[index]), typed)

            sublime.set_timeout(lambda: window.show_quick_panel(items, picked, placeholder="Attach which file?"))

        in_background(gathered, "attach file list")

    @staticmethod
    def _attach(chat: WindowChat, composer: sublime.View, path: str, view: sublime.View | None, name: str, typed: bool) -> None:
        """Attach the open tab's text, or the file as on disk, read on a thread of
        its own (an image of many MB is not read on the main thread)."""
        from ...core.chat.prompt_context import attached_file_block

        text = view_text(view) if view is not None and view.is_valid() else None
        options = context_options()

        def make() -> tuple[JsonObject | None, str | None]:
            try:
                return attached_file_block(path, text, options), None
            except (OSError, ValueError) as error:
                return None, f"Qwen Code: cannot attach {name}: {error}"

        def finish(block: JsonObject | None, problem: str | None) -> None:
            if problem is not None:
                sublime.status_message(problem)
            elif block is None:
                sublime.status_message(f"Qwen Code: {name} is excluded from what is sent (excluded_file_patterns)")
            else:
                chat.attachments[name] = block
                composer.run_command("insert", {"characters": f"{name} " if typed else f"@{name} "})
                composer.window() and composer.window().focus_view(composer)  # type: ignore[union-attr]

        if text is not None:
            finish(*make())
            return

        command = contextvars.copy_context()  # the keys back in the composer: part of the user's pick

        def read() -> None:
            made = make()
            sublime.set_timeout(lambda: command.run(finish, *made))

        threading.Thread(target=read, name="QwenCompanion attach", daemon=True).start()


class QwenChatShowAgentLogCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Show Agent Log — the agent's stderr (ACP traffic is in the
    package log at log_level DEBUG, text and file contents left out)."""

    def run(self) -> None:
        chat = chats.get(self.window)
        lines = chat.conversation.stderr_lines() if chat is not None else []
        panel = self.window.create_output_panel(AGENT_LOG_PANEL)
        panel.settings().update({"word_wrap": False, "gutter": False})
        panel.set_read_only(False)
        panel.run_command("append", {"characters": "\n".join(lines) + "\n" if lines else "(the agent has written nothing)\n"})
        panel.set_read_only(True)
        self.window.run_command("show_panel", {"panel": f"output.{AGENT_LOG_PANEL}"})


class ChatListener(sublime_plugin.EventListener):
    def on_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is None:
            return
        if not is_chat_view(view) and view.element() is None:
            recent = _recent_views.setdefault(window.id(), [])
            if view.id() in recent:
                recent.remove(view.id())
            recent.append(view.id())
            del recent[:-RECENT_VIEWS]
        if chats.get(window) is not None:
            refresh_status(window.id())

    def on_query_context(self, view: sublime.View, key: str, operator: int, operand: Any, match_all: bool) -> bool | None:
        if key == CHAT_VIEW_CONTEXT:  # the keys of the chat's tabs, known from our own record
            role = chat_role(view)
            if operator == sublime.QueryOperator.EQUAL:
                return bool(role == operand)
            return bool(role != operand) if operator == sublime.QueryOperator.NOT_EQUAL else None
        if key not in ("qwen_chat.caret_on_first_line", "qwen_chat.caret_on_last_line"):
            return None
        if chat_role(view) != "composer":
            return False
        selection = view.sel()
        if len(selection) != 1:
            return False
        row = view.rowcol(selection[0].b)[0]
        last_row = view.rowcol(view.size())[0]
        value = row == 0 if key.endswith("first_line") else row == last_row
        return value == bool(operand) if operator == sublime.QueryOperator.EQUAL else value != bool(operand)

    def on_query_completions(
        self, view: sublime.View, prefix: str, locations: list[int]
    ) -> sublime.CompletionList | None:
        if chat_role(view) != "composer" or not locations:
            return None
        # Only our slash commands: no words of the buffer, no .sublime-completions.
        only_ours = sublime.AutoCompleteFlags.INHIBIT_WORD_COMPLETIONS | sublime.AutoCompleteFlags.INHIBIT_EXPLICIT_COMPLETIONS
        mentions = mention_completions(view, locations[0])
        if mentions is not None:
            return sublime.CompletionList(mentions, only_ours)
        line = view.substr(sublime.Region(view.line(locations[0]).begin(), locations[0]))
        if not re.fullmatch(r"/\w*", line):
            return sublime.CompletionList([], only_ours)
        chat = chat_of_view(view)  # the composer typed in, whichever chat is active
        commands = dict(LOCAL_COMMANDS)
        if chat is not None:
            commands.update({c.name: c.description for c in chat.conversation.state.commands})
        items: list[sublime.CompletionValue] = [
            sublime.CompletionItem(name, annotation=description[:60], completion=name,
                                   kind=(sublime.KindId.KEYWORD, "/", "command"))
            for name, description in sorted(commands.items())
        ]
        return sublime.CompletionList(items, only_ours)

    def on_new_window(self, window: sublime.Window) -> None:
        in_background(lambda: prestart(window), "prestart")

    def on_pre_close_window(self, window: sublime.Window) -> None:
        window_id = window.id()
        _recent_views.pop(window_id, None)
        sublime.set_timeout_async(lambda: chats.forget_window(window_id))

    def on_exit(self) -> None:
        chats.stop_all()


def prestart(window: sublime.Window) -> None:
    """With `chat_prestart`, start the window's agent and session now (our own thread:
    the first chat imports the ACP library)."""
    if prestart_enabled() and window.folders():
        chat = chats.ensure(window)
        if chat is not None:
            chat.conversation.start()


def prestart_all() -> None:
    for window in sublime.windows():
        prestart(window)


def chat_report(window: sublime.Window) -> str:
    """The chat's part of Diagnose Connection (in the report's layout)."""

    def row(label: str, value: str) -> str:
        return f"  {label + ':' if label else '':<16}{value}"

    chat = chats.get(window)
    lines = ["", "Chat agents (the chat_agents setting)"] + [row(name, text) for name, text in agent_rows(window)]
    lines += ["", f"Chat ({chat.agent})" if chat is not None else "Chat"]
    if chat is None:
        return "\n".join([*lines, row("agent", "not started (Qwen Code: Chat starts it)"), ""])
    state, pid = chat.conversation.state, chat.conversation.pid
    lines.append(row("agent", state.agent + (f" ({state.agent_name})" if state.agent_name else "")))
    if pid:
        lines.append(row("pid", f"{pid}, up {uptime(state.started_at)}"))
    lines.append(row("session", state.session_id or "(none)"))
    count = len(chats.of_window(window))
    if count > 1:
        lines.append(row("chats", f"{count} in this window (the session above is the active chat's), one agent"))
    lines.append(row("mode", state.mode_id or "(unknown)"))
    lines.append(row("model", state.model_name() or "(unknown)"))
    tail = [line for line in chat.conversation.stderr_lines()[-5:] if line.strip()]
    if tail:
        lines.append(row("agent log", "last lines (Qwen Code: Show Agent Log has all)"))
        lines += [row("", line[:200]) for line in tail]
    return "\n".join([*lines, ""])
