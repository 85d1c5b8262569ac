"""Qwen Code: Diagnose Connection: gathers the facts (off the main thread) and
shows the report that `core.diagnose` builds from them in a scratch view."""

from __future__ import annotations

import contextvars
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ..core import threads
from ..core.cli.node_installs import qwen_command_suggestion
from ..core.cli.qwen_home import configured_qwen_home, is_relative
from ..core.cli.terminal import DEFAULT_COMMAND, command_argv
from ..core.companion import lockfile
from ..core.diagnose import (
    Facts,
    GeminiFacts,
    Refusal,
    RemoteFacts,
    SessionRow,
    approval_mode_from_command,
    build_report,
    folder_inside,
    inspect_gemini_file,
    inspect_lock,
    probe_cli,
    qwen_home,
    read_qwen_settings,
)
from ..core.files.paths import path_identity, path_style
from ..core.login_shell import probe_cli_in_login_shell
from .background import in_background
from .chat.agent.chat_report import chat_report
from .chat.agent.serve_daemon import add_stop_links
from .companion import terminal
from .companion.companions import companions
from .paths import path_display
from .placement import new_view_beside
from .settings import userprefs

if TYPE_CHECKING:
    from ..core.companion.companion import Companion

_report_views: set[int] = set()  # the ids of the report views this load of the package made
REPORT_NAME = "Qwen Code: Diagnose Connection"


def default_folder(window: sublime.Window) -> str:
    """The active file's folder, else the window's first folder."""
    view = window.active_view()
    file_name = view.file_name() if view else None
    if file_name:
        return os.path.dirname(file_name)
    folders = window.folders()
    return folders[0] if folders else ""


def gather_gemini(companion: Companion | None) -> GeminiFacts | None:
    """gemini-cli's probe and discovery file; None when `companion_clis` leaves it out (blocks)."""
    if "gemini" not in userprefs().companion_clis:
        return None
    argv = command_argv(terminal.options("gemini").command, windows=sublime.platform() == "windows") or ["gemini"]
    file = None
    if companion is not None and companion.port and companion.gemini_file is not None:
        file = inspect_gemini_file(
            companion.gemini_file, port=companion.port, token=companion.token, workspace_path=companion.workspace_path,
        )
    return GeminiFacts(probe_cli(argv[0]), file, companion.gemini_error if companion is not None else None)


def gather_remote(companion: Companion | None) -> RemoteFacts | None:
    """The window's remote endpoint; None when it has none."""
    if companion is None or not companion.remote_port:
        return None
    lock_file = companion.remote_connect_file
    written = str(lock_file) if lock_file is not None and lock_file.is_file() else None
    return RemoteFacts(companion.remote_port, written, companion.translator().remote_folders())


@threads.may_block
def gather(window: sublime.Window, folder: str | None) -> Facts:
    """Everything the report needs; blocks on `qwen --version`."""
    companion = companions.get(window)
    argv = command_argv(terminal.options().command, windows=sublime.platform() == "windows") or [DEFAULT_COMMAND]
    home = qwen_home(os.environ)
    user_settings_path = home / "settings.json"
    folder_settings = None
    if folder is not None:
        path = Path(folder) / ".qwen" / "settings.json"
        style = path_style(sublime.platform())
        # qwen reads it once when the folder is its home
        if path_identity(str(path), style) != path_identity(str(user_settings_path), style):
            folder_settings = read_qwen_settings(path)
    running = companion is not None and companion.running
    roots = companion.folders if companion is not None else window.folders()
    lock = None
    if companion is not None and companion.port:
        lock = inspect_lock(
            companion.lock_file,
            port=companion.port,
            token=companion.token,
            workspace_path=companion.workspace_path,
            ppid=companion.ppid,
        )
    configured = configured_qwen_home(os.environ)
    cli = probe_cli(argv[0])
    shell = terminal.login_shell()
    shell_cli = probe_cli_in_login_shell(argv[0], shell) if shell else None
    suggested = None
    if sublime.platform() != "windows" and (cli.path is None or cli.error) and (shell_cli is None or shell_cli.error):
        suggested = qwen_command_suggestion(os.path.expanduser("~"), os.path.basename(argv[0]))
    return Facts(
        now=time.time(),
        window_id=window.id(),
        running=running,
        port=companion.port if companion is not None else 0,
        started_at=companion.started_at if companion is not None else 0.0,
        roots=list(roots),
        lock_directory=str(companion.lock_directory if companion is not None else lockfile.lock_dir()),
        cli=cli,
        user_settings=read_qwen_settings(user_settings_path),
        startup_error=None if running else companions.startup_error,
        lock_error=companion.lock_error if companion is not None else None,
        lock=lock,
        sessions=[
            SessionRow(s.id_prefix, s.client_name, s.age_seconds, s.stream_open)
            for s in (companion.sessions() if running and companion is not None else [])
        ],
        refusals=[
            Refusal(f.at, f.reason, f.detail)
            for f in (companion.auth_failures() if companion is not None else [])
        ],
        folder=folder,
        folder_inside=folder_inside(folder, roots, path_style(sublime.platform())) if folder is not None else None,
        folder_settings=folder_settings,
        command_approval_mode=approval_mode_from_command(argv),
        terminus=terminal.terminus_installed(),
        login_shell=shell if shell_cli is not None else None,
        shell_cli=shell_cli,
        suggested_command=suggested,
        relative_qwen_home=configured if is_relative(configured) else None,
        gemini=gather_gemini(companion),
        remote=gather_remote(companion),
    )


@threads.on_main
def show_report(window: sublime.Window, text: str) -> None:
    """Show `text` in the window's report view, reusing it. The
    report view is known from our record, not its settings: a project's
    settings reach every view, and the report replaces the view's text."""
    view = next((v for v in window.views() if v.id() in _report_views), None)
    if view is None:  # beside the code, which stays visible
        view = new_view_beside(window, window.active_view())
        _report_views.add(view.id())
        view.set_scratch(True)
        view.set_name(REPORT_NAME)
        view.settings().set("word_wrap", True)
    view.set_read_only(False)
    view.run_command("qwen_replace_report", {"text": text})
    view.set_read_only(True)
    add_stop_links(view)  # the serve daemons' rows
    window.focus_view(view)


class QwenReplaceReportCommand(sublime_plugin.TextCommand):
    """Replaces the whole report view's text (a view edit needs a text command)."""

    def run(self, edit: sublime.Edit, text: str) -> None:
        self.view.replace(edit, sublime.Region(0, self.view.size()), text)
        self.view.sel().clear()
        self.view.sel().add(0)

    def is_visible(self) -> bool:
        return False


class FolderInputHandler(sublime_plugin.TextInputHandler):
    def __init__(self, initial: str) -> None:
        self._initial = initial

    def name(self) -> str:
        return "folder"

    def initial_text(self) -> str:
        return self._initial

    def placeholder(self) -> str:
        return "folder where qwen would run (empty: skip this check)"


class QwenDiagnoseConnectionCommand(sublime_plugin.WindowCommand):
    def input(self, args: dict[str, sublime_plugin.Value]) -> FolderInputHandler | None:
        return None if "folder" in args else FolderInputHandler(default_folder(self.window))

    def input_description(self) -> str:
        return "Folder"

    def run(self, folder: str = "") -> None:
        window = self.window
        chosen = os.path.abspath(os.path.expanduser(folder.strip())) if folder.strip() else None
        window.status_message("Qwen Code: diagnosing the connection…")
        command = contextvars.copy_context()  # the report shown (and focused) goes on with the user's command

        def work() -> None:
            text = build_report(gather(window, chosen), path_display(window)) + chat_report(window)
            sublime.set_timeout(lambda: command.run(show_report, window, text))

        in_background(work, "diagnose")  # it runs qwen and asks the servers
