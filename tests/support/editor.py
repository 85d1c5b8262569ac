"""The BUILT package (`make build` → dist/QwenCompanion) in a simulated Sublime
Text, with HOME and QWEN_HOME in the test's tmp folder: no real ~/.qwen is read
or written. `open_editor` sets it up and tears it down; `Editor` drives it."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.sublime import View, Window

from .mcp_client import WAIT, McpClient

ROOT = Path(__file__).resolve().parents[2]
BUILT_PACKAGE = ROOT / "dist" / "QwenCompanion"
PACKAGE = "QwenCompanion"
PACKAGE_THREADS = "QwenCompanion"  # how the package names its threads
SETTINGS = "QwenCompanion.sublime-settings"
DIFF_VIEW = "qwen_companion.diff_view"

Lock = dict[str, Any]


def require_built() -> None:
    if not (BUILT_PACKAGE / ".no-sublime-package").is_file():
        pytest.fail("the package is not built: run `make build` first", pytrace=False)


# A hang guard, not a timing: the start thread imports the server's and the
# chat's libraries (about 2.5 s of CPU), which took 8-9 s of wall time on a
# machine loaded by other test runs and passed the 10 s guard once in two.
THREAD_WAIT = 60.0


def wait_for_package_threads(host: SimulatedHost, *names: str) -> None:
    """Wait until the package's own threads called "QwenCompanion <name>" (any
    of them if no name is given) have ended: it starts and stops its servers
    there, not on Sublime's threads."""
    prefixes = tuple(f"{PACKAGE_THREADS} {name}" for name in names) or (PACKAGE_THREADS,)
    host.wait_for(
        lambda: not any(t.name.startswith(prefixes) and _runs_code_of(host, t) for t in threading.enumerate()
                        if t.is_alive()),
        timeout=THREAD_WAIT,
    )


def drawn_transcript(host: SimulatedHost, chat: Any, view_text: Callable[[View], str], timeout: float = WAIT) -> str:
    """A chat's transcript as its view shows it, once the view shows all the
    chat holds. Streamed text waits in the streamer for its thread (later on
    a loaded machine), so it is flushed first: unflushed, an empty view and
    an empty transcript compared equal."""
    streamer = chat.core.streamer

    def drawn() -> bool:
        streamer.flush()
        return view_text(chat.transcript_view) == streamer.transcript.text()

    host.wait_for(drawn, timeout=timeout)
    return view_text(chat.transcript_view)


def _runs_code_of(host: SimulatedHost, thread: threading.Thread) -> bool:
    """Whether `thread` runs this host's copy of the package (each test loads
    its own): a thread an earlier test left behind is that test's failure, not
    a wait for every test after it."""
    code = getattr(getattr(thread, "_target", None), "__code__", None)
    return code is None or code.co_filename.startswith(str(host.packages_dir))


def isolate_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """Point HOME, QWEN_HOME and the temp folder (where the package and the CLIs look) into `home`."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("QWEN_HOME", str(home / ".qwen"))
    temp = home / "tmp"  # gemini-cli's discovery files go under it
    temp.mkdir(exist_ok=True)
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.setenv(name, str(temp))
    return home


def read_locks(lock_dir: Path) -> dict[int, Lock]:
    """port -> lock content, for every lock file present."""
    found = {}
    for path in lock_dir.glob("*.lock"):
        try:
            found[int(path.stem)] = json.loads(path.read_text())
        except FileNotFoundError:  # removed between glob and read (a restart)
            continue
    return found


class Editor:
    """The simulated Sublime Text with QwenCompanion installed, and the CLIs connected to it."""

    def __init__(self, host: SimulatedHost, root: Path, home: Path, workspace: Path) -> None:
        self.host = host
        self.root = root  # the test's tmp folder
        self.workspace = workspace
        self.lock_dir = home / ".qwen" / "ide"
        self.gemini_dir = home / "tmp" / "gemini" / "ide"
        self.clients: list[McpClient] = []

    @property
    def sublime(self) -> Any:
        return self.host.sublime

    @property
    def user(self) -> Any:
        return self.host.user

    @property
    def window(self) -> Window:
        return self.host.window

    # --- set-up -------------------------------------------------------------------

    def load(self, folders: Sequence[Path] = (), settings: dict[str, Any] | None = None) -> Lock:
        """Load the package (after giving the window `folders` and the user `settings`);
        returns the window's lock once it is written."""
        if settings is not None:
            (self.host.packages_dir / "User" / SETTINGS).write_text(json.dumps(settings), encoding="utf-8")
        if folders:
            self.user.set_folders([str(f) for f in folders])
        self.host.load_package(PACKAGE)
        lock = self.lock_info()
        # The lock is written before the server's libraries are imported,
        # which takes seconds on a busy machine.
        self.wait_for_package_threads("start")
        self.host.wait_idle(timeout=WAIT)
        return lock

    def wait_for_package_threads(self, *names: str) -> None:
        wait_for_package_threads(self.host, *names)

    def settings(self, values: dict[str, Any]) -> None:
        """The user edits their settings file (read live by the package)."""
        self.user.edit_settings_file(SETTINGS, values)

    def folder(self, name: str, window: Window | None = None) -> Path:
        """A new folder, made the only folder of `window` (the active one by default)."""
        path = self.root / name
        path.mkdir(exist_ok=True)
        self.user.set_folders([path], window=window)
        return path

    def file(self, name: str, text: str = "hello\n") -> Path:
        path = self.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def open(self, name: str, text: str = "hello\n", window: Window | None = None) -> View:
        """Write a file into the workspace and open it."""
        view: View = self.user.open_file(self.file(name, text), window=window)
        return view

    # --- servers and CLIs -------------------------------------------------------------

    def find_lock(self, window: Window | None = None) -> Lock | None:
        """The lock file of `window`'s server (the active window's by default), if written."""
        expected = os.pathsep.join((window or self.window).folders())
        return next((info for info in read_locks(self.lock_dir).values() if info["workspacePath"] == expected), None)

    def lock_info(self, window: Window | None = None) -> Lock:
        """`find_lock`, waited for."""
        lock = self.host.wait_for(lambda: self.find_lock(window), timeout=WAIT)
        assert lock is not None
        return lock

    def cli(self, name: str = "cli", window: Window | None = None) -> McpClient:
        """A CLI connected to `window`'s server; closed at teardown."""
        info = self.lock_info(window)
        client = McpClient(info["port"], info["authToken"], name).connect()
        self.clients.append(client)
        return client

    # --- views and reviews ---------------------------------------------------------------

    def text(self, view: View) -> str:
        return str(view.substr(self.sublime.Region(0, view.size())))

    def review_views(self, window: Window | None = None) -> list[View]:
        return [v for v in (window or self.window).views() if v.settings().get(DIFF_VIEW)]

    def review(self, path: Path, window: Window | None = None) -> tuple[View, View]:
        """(original, proposed) views of the open review of `path`, once they are up."""
        name = path.name

        def find() -> tuple[View, View] | None:
            views = {v.name(): v for v in self.review_views(window)}
            left = views.get(f"{name} (original)") or views.get(f"{name} (new file)")
            right = views.get(f"{name} (Qwen Code proposal)")
            return (left, right) if left is not None and right is not None else None

        pair = self.host.wait_for(find, timeout=WAIT)
        assert pair is not None
        self.host.wait_idle()
        return pair

    def propose(self, cli: McpClient, path: Path, new_content: str, window: Window | None = None) -> tuple[View, View]:
        """`cli` calls openDiff; returns the review's (original, proposed) views."""
        cli.open_diff(path, new_content)
        return self.review(path, window)

    def banner_html(self, view: View) -> str:
        """A review tab's banner and notes (annotations beside its first line)."""
        return "".join(a for r in self.host.view_state(view).regions.values() for a in r.annotations)

    def settle(self) -> None:
        """Let the main thread and the server deliver what the last action caused."""
        self.host.wait_idle()
        time.sleep(0.05)

    def close(self) -> None:
        for client in self.clients:
            client.close()
        try:
            # A start still importing must not see the host drop its modules.
            with suppress(TimeoutError):
                self.wait_for_package_threads("start")
            self.host.close()
        finally:
            # Unloading hands its waits to the package's threads; the next test
            # starts once they have ended.
            with suppress(TimeoutError):
                self.wait_for_package_threads()


@contextmanager
def open_editor(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    home: Path | None = None,
    workspace: Path | None = None,
    load: bool = True,
    platform: str = "linux",
) -> Iterator[Editor]:
    """A host in tmp_path/Packages with the built package installed; HOME is `home`
    (tmp_path/home by default), the workspace folder `workspace` (tmp_path/workspace).
    With `load`, the package is loaded with the workspace as the window's folder
    and its lock file is written; else the test calls `Editor.load`. `platform`
    is what `sublime.platform()` answers ("linux", "osx" or "windows")."""
    require_built()
    home = isolate_home(monkeypatch, home or tmp_path / "home")
    workspace = (workspace or tmp_path / "workspace").resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    # The watchdog is on: any package callback that blocks Sublime's main or
    # worker thread fails the test.
    host = SimulatedHost(tmp_path / "Packages", platform=platform)
    editor = Editor(host, tmp_path, home, workspace)
    try:
        editor.host.install_package(BUILT_PACKAGE, PACKAGE)
        if load:
            editor.load([workspace])
        yield editor
    finally:
        editor.close()
