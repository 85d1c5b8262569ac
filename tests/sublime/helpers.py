"""What the in-Sublime tests share: a window of their own on a temporary
folder with the scripted `qwen` as `qwen_command`, a CLI session played off
the main thread, and the package's loaded modules.

Runs inside Sublime Text (UnitTesting) and in the simulated host alike: only
the `sublime` API, the package's own modules and the standard library.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import sublime
import sublime_plugin

from .mcp_client import McpClient

PACKAGE = "QwenCompanion"
SETTINGS = "QwenCompanion.sublime-settings"
DIFF_VIEW = "qwen_companion.diff_view"
# The assembled test package keeps the scripted CLIs in rig/ beside tests/.
RIG = Path(__file__).resolve().parent.parent / "rig"
AGENT_ANSWER = "Hello from the scripted agent."
ACTION_ANSWER = "It computes the area of a circle."

Steps = Generator[Any, Any, Any]


def package_module(name: str) -> Any:
    """A module of the loaded package, e.g. "plugin.chat.window_chats"."""
    return sys.modules[f"{PACKAGE}.{name}"]


def scripts_python() -> str:
    """The Python that runs the scripted CLIs. In Sublime `sys.executable` is
    the plugin host, so QWEN_TEST_PYTHON (set by CI and the simulator) or the
    PATH's Python is used."""
    found = os.environ.get("QWEN_TEST_PYTHON") or shutil.which("python3") or shutil.which("python")
    if not found:
        raise RuntimeError("no Python for the scripted qwen: set QWEN_TEST_PYTHON")
    return found


class Background:
    """`work()` on a thread of its own: a CLI's request may need Sublime's main
    thread to be answered, so it must never block that thread. Yield the object
    itself to wait until it is done."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(work,), daemon=True).start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.value = work()
        except BaseException as error:
            self.error = error
        finally:
            self._done.set()

    def __call__(self) -> bool:
        return self._done.is_set()

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class Workspace:
    """A new window whose one folder is a temporary workspace; the scripted qwen
    (agent turns, quick-action steps) is the user's `qwen_command` meanwhile."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="qwen-suite-")).resolve()
        self.folder = self.root / "workspace"
        self.folder.mkdir()
        self.window: sublime.Window | None = None
        self.clients: list[McpClient] = []
        self._settings = sublime.load_settings(SETTINGS)
        self._saved_command = self._settings.get("qwen_command")

    def open(self) -> Steps:
        script = self.root / "script.json"
        script.write_text(json.dumps({
            "turns": [[{"chunks": ["Hello from ", "the scripted agent."]}]],
            "state": str(self.root / "agent-state"),
            "steps": [{"text": ACTION_ANSWER, "chunks": 3}],
        }), encoding="utf-8")
        self._settings.set("qwen_command", [scripts_python(), str(RIG / "scripted_qwen.py"), str(script)])
        sublime.run_command("new_window")
        self.window = sublime.active_window()
        self.window.set_project_data({"folders": [{"path": str(self.folder)}]})
        yield lambda: self.lock() is not None or self.touch()

    def touch(self) -> bool:
        """Focus a view of the window: the package picks up changed folders then."""
        window = self.require_window()
        view = window.active_view() or window.new_file()
        view.set_scratch(True)
        window.focus_view(view)
        return False

    def require_window(self) -> sublime.Window:
        assert self.window is not None, "open() first"
        return self.window

    def lock(self) -> dict[str, Any] | None:
        """The lock file of this window's server, once written."""
        lock_dir = package_module("core.companion.lockfile").lock_dir()
        # The lock names the window's folders as Sublime spells them.
        expected = os.pathsep.join(self.require_window().folders())
        for path in Path(lock_dir).glob("*.lock"):
            try:
                info = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if expected and info.get("workspacePath") == expected:
                info["file"] = path
                return dict(info)
        return None

    def cli(self) -> Background:
        """A CLI session connecting to this window's server (yield it, then `.result()`)."""
        lock = self.lock()
        assert lock is not None

        def connect() -> McpClient:
            client = McpClient(lock["port"], lock["authToken"], "suite").connect()
            self.clients.append(client)
            return client

        return Background(connect)

    def file(self, name: str, text: str) -> Path:
        path = self.folder / name
        path.write_text(text, encoding="utf-8")
        return path

    def open_file(self, name: str, text: str) -> Steps:
        view = self.require_window().open_file(str(self.file(name, text)))
        yield lambda: not view.is_loading()
        return view

    def review(self, path: Path) -> tuple[sublime.View, sublime.View] | None:
        """(original, proposed) views of the open review of `path`, once both are up."""
        views = {v.name(): v for v in self.require_window().views() if v.settings().get(DIFF_VIEW)}
        left = views.get(f"{path.name} (original)")
        right = views.get(f"{path.name} (Qwen Code proposal)")
        return (left, right) if left is not None and right is not None else None

    def review_views(self) -> list[sublime.View]:
        return [v for v in self.require_window().views() if v.settings().get(DIFF_VIEW)]

    def close(self) -> None:
        for client in self.clients:
            Background(client.close)
        if self.window is not None and self.window.is_valid():
            self.window.run_command("close_window")
        if self._saved_command is None:
            self._settings.erase("qwen_command")
        else:
            self._settings.set("qwen_command", self._saved_command)
        shutil.rmtree(self.root, ignore_errors=True)


def text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def query_context(view: sublime.View, key: str, operator: str, operand: Any) -> bool | None:
    """What the loaded plugins answer for a key binding's context entry, asked
    the way Sublime asks them (global listeners, then the view's listeners)."""
    op = {"equal": sublime.QueryOperator.EQUAL, "not_equal": sublime.QueryOperator.NOT_EQUAL}[operator]
    listeners = list(sublime_plugin.all_callbacks.get("on_query_context", []))
    listeners += [v for v in sublime_plugin.view_event_listeners.get(view.id(), []) if hasattr(v, "on_query_context")]
    for listener in listeners:
        if type(listener).__module__.startswith(PACKAGE + "."):
            answer = listener.on_query_context(view, key, op, operand, False)
            if answer is not None:
                return bool(answer)
    return None
