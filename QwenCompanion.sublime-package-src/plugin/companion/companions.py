"""One companion server per Sublime window, started and stopped with it.

Starting imports aiohttp and pydantic and binds sockets, and stopping waits
for the servers to close: both run on threads of ours ("QwenCompanion start",
"QwenCompanion stop", "QwenCompanion window"), never on Sublime's main thread
or its one worker thread shared by every package.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import sublime

from ...core import threads
from ...core.cli.path_maps import PathTranslator, parse_path_maps, wsl_maps
from ...core.companion import gemini_discovery, lockfile, reservation
from ...core.dependencies import host_python_message, missing_dependency_message, startup_problem
from ...core.files.paths import path_style
from ...core.loop_thread import LoopThread
from ..background import in_background
from ..ide_tools.knowledge import SublimeCodeKnowledge
from ..settings import userprefs

if TYPE_CHECKING:
    from ...core.companion.companion import Companion
    from ...core.companion.reservation import Reservation
    from ...core.json_types import JsonObject

log = logging.getLogger(__name__)

# Sublime fires no event when a plugin or a project edit changes a window's
# folders, so they are also compared on this period (a cheap call per window).
FOLDER_POLL_MS = 1000
START_WAIT_SECONDS = 10

SessionsListener = Callable[[int, int], None]
"""(window id, connected CLI count); called on the server thread."""
StartedListener = Callable[[sublime.Window, "Companion"], None]
"""Called on a thread of ours once a window's companion is listening."""


def _previous_lifecycle_threads() -> list[threading.Thread]:
    """The start and stop threads of an earlier load of the package (a reload)."""
    me = threading.current_thread()
    names = (threads.PREFIX + "start", threads.PREFIX + "stop", threads.PREFIX + "preload")
    return [t for t in threading.enumerate() if t is not me and t.name in names and t.is_alive()]


def gemini_directory() -> Path | None:
    """gemini-cli's discovery folder when the `companion_clis` setting serves
    gemini, else None (read when the server starts)."""
    if "gemini" not in userprefs().companion_clis:
        return None
    return gemini_discovery.discovery_dir()


def mcp_config_directory() -> Path | None:
    """Where a window's server writes the terminal's `--mcp-config` file, which
    also turns its IDE tools on; None when the `ide_tools` setting is false
    (read when the server starts)."""
    if not userprefs().ide_tools:
        return None
    return Path(sublime.cache_path(), "QwenCompanion", "ide-tools")


def remote_translator() -> Callable[[list[str]], PathTranslator] | None:
    """The window's folders -> their paths for a CLI elsewhere, from the
    `path_maps` and `wsl_distro` settings; None when neither is set (no
    remote endpoint). Read when a window's server starts."""
    settings = userprefs()
    style = path_style(sublime.platform())
    maps, problems = parse_path_maps(settings.path_maps, style)
    for problem in problems:
        log.warning("%s", problem)
    distro = settings.wsl_distro.strip() if style == "windows" else ""
    if not maps and not distro:
        return None

    def translator(folders: list[str]) -> PathTranslator:
        return PathTranslator([*maps, *(wsl_maps(folders, distro) if distro else [])], folders, style)

    return translator


def remote_directory() -> Path:
    """Where the remote endpoints' lock files wait for a connect command to hand them over."""
    return Path(sublime.cache_path(), "QwenCompanion", "remote")


class Companions:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._starting = threading.Lock()
        # Window work asked for while the first start runs, done in order once
        # it has ended (servers up or not); None from then on.
        self._after_start_lock = threading.Lock()
        self._waiting_for_start: list[Callable[[], object]] | None = []
        # Windows Sublime is closing: no server starts for them any more, whichever
        # thread asks, so a start or restart that comes after the close's stop
        # cannot leave a server and a lock file behind (Sublime never reuses an id).
        self._closing_windows: set[int] = set()
        self._by_window: dict[int, Companion] = {}
        self._thread: LoopThread | None = None
        self._running = False
        self._closed = False  # set once by stop_all; a reload creates a new instance
        self.startup_error: str | None = None
        self.sessions_listeners: list[SessionsListener] = []
        self.started_listeners: list[StartedListener] = []

    # --- lifecycle (threads of ours) ----------------------------------------

    def start_soon(self, preload: Callable[[], None], then: Callable[[], None]) -> None:
        """Start every window's server on a thread of ours (any thread may call
        this), run `preload` (imports) there too, then hand `then` to the worker thread."""

        def start() -> None:
            try:
                self.start()
            finally:
                self._start_ended()
            try:
                preload()
            except Exception:
                if not self._closed:
                    raise
                return  # a reload forgot the modules this import needed; the new load imports them
            if not self._closed:
                sublime.set_timeout_async(then)

        in_background(start, "start")

    @threads.may_block
    def start(self) -> None:
        """Start the server thread and a server for every open window."""
        # An earlier load's start may still be importing the modules a reload
        # just forgot, and its stop still closing servers: this load begins
        # after them, so two loads never import or sweep lock files at once.
        for previous in _previous_lifecycle_threads():
            previous.join(START_WAIT_SECONDS)
        # Held for the whole start: the stop thread waits for it, so servers
        # and lock files a start is still making are stopped and removed too.
        with self._starting:
            if self._closed:
                return
            wrong_host = host_python_message()
            if wrong_host:
                log.warning(wrong_host)
            problem = startup_problem(wrong_host, missing_dependency_message())
            if problem:
                self.startup_error = problem
                log.error(problem)
                sublime.error_message(problem)
                return
            lock_directory = lockfile.lock_dir()
            try:
                lockfile.sweep_stale_locks(lock_directory)
            except Exception:  # tidying up must never cost the user their servers
                log.exception("sweeping stale lock files in %s failed", lock_directory)
            gemini_folder = gemini_directory()
            if gemini_folder is not None:
                gemini_discovery.sweep_stale(gemini_folder)  # never raises
            lockfile.sweep_remote_locks(remote_directory())  # never raises
            # Ports and lock files first, so a qwen started now finds its window.
            windows = sublime.windows()
            claims = {w.id(): reservation.reserve(w.folders(), lock_directory) for w in windows}
            # Every heavy core module is imported here, on this thread, before
            # any server exists: later lazy imports on other threads then hit
            # the module cache instead of racing this import.
            try:
                from ...core.companion import companion, ide_context  # noqa: F401
            except Exception:
                for unused in claims.values():
                    unused.release(lock_directory)
                if not self.closed:
                    raise
                # A reload forgets the package's modules while this import of
                # the unloaded version still runs; the new load starts afresh.
                log.info("the package was unloaded while its server libraries loaded; this start ends")
                return

            with self._lock:
                if self._running or self._closed:
                    for unused in claims.values():
                        unused.release(lock_directory)
                    return
                self._thread = LoopThread(threads.SERVER_LOOP)
                self._thread.start()
                self._running = True
            for window in windows:
                claim = claims.pop(window.id())
                if self.closed:  # unloaded meanwhile: the stop thread runs next
                    claim.release(lock_directory)
                    continue
                self.ensure_window(window, claim)
            for unused in claims.values():
                unused.release(lock_directory)
        sublime.set_timeout_async(self._watch_folders, FOLDER_POLL_MS)

    def _watch_folders(self) -> None:
        if not self._running:
            return
        for window in sublime.windows():
            self.sync_folders(window)
        sublime.set_timeout_async(self._watch_folders, FOLDER_POLL_MS)

    def ensure_window(self, window: sublime.Window, claim: Reservation | None = None) -> Companion | None:
        """The window's companion, started now if it has none (from `claim` if given)."""
        from ...core.companion.companion import Companion
        from .diff_backend import SublimeDiffBackend

        with self._lock:
            closing = window.id() in self._closing_windows
            if closing or not self._running or self._thread is None or not window.is_valid():
                if claim is not None:
                    claim.release(lockfile.lock_dir())
                return None
            existing = self._by_window.get(window.id())
            if existing is not None:
                return existing
            window_id = window.id()
            companion = Companion(
                self._thread,
                folders=window.folders(),
                lock_directory=lockfile.lock_dir(),
                # The CLI's openDiff opens the review tabs; the IDE tools ask Sublime's index and LSP.
                diff_backend=SublimeDiffBackend,
                code_knowledge=SublimeCodeKnowledge(window),
                on_sessions_changed=lambda count: self._sessions_changed(window_id, count),
                reservation=claim,
                mcp_config_directory=mcp_config_directory(),
                gemini_directory=gemini_directory(),
                remote_translator=remote_translator(),
                remote_directory=remote_directory(),
            )
            try:
                companion.start()
            except Exception:
                log.exception("could not start the server for window %d", window_id)
                if claim is not None:
                    claim.release(lockfile.lock_dir())
                return None
            self._by_window[window_id] = companion
        for listener in list(self.started_listeners):
            try:
                listener(window, companion)
            except Exception:
                log.exception("a start-up hook failed for window %d", window_id)
        return companion

    def forget_window(self, window_id: int) -> None:
        with self._lock:
            companion = self._by_window.pop(window_id, None)
        if companion is not None:
            companion.stop()

    def sync_folders(self, window: sublime.Window) -> None:
        companion = None if self._closed else self.get(window)  # stopping: lock files stay removed
        if companion is not None:
            companion.set_folders(window.folders())

    def ensure_window_soon(self, window: sublime.Window) -> None:
        self._after_start(lambda: self.ensure_window(window))

    @threads.on_main
    def window_closing(self, window_id: int) -> None:
        """Sublime is closing the window: from now on nothing starts a server for
        it, and the one it has stops on a thread of ours (nothing here waits)."""
        self._closing_windows.add(window_id)  # a plain store: a start may hold _lock while it binds
        self._after_start(lambda: self.forget_window(window_id))

    def _after_start(self, work: Callable[[], object]) -> None:
        """Run `work` on a thread of ours, after the first start if it still
        runs (that start sees the windows as they were when it began)."""
        with self._after_start_lock:
            if self._waiting_for_start is not None:
                self._waiting_for_start.append(work)
                return
        in_background(work, "window")

    def _start_ended(self) -> None:
        """Do, in the order they came, the window work that waited for the first start."""
        with self._after_start_lock:
            waiting, self._waiting_for_start = self._waiting_for_start or [], None

        def run_in_order() -> None:
            for work in waiting:
                try:
                    work()
                except Exception:
                    log.exception("window work after the start failed")

        if waiting:
            in_background(run_in_order, "window")

    @threads.on_main
    def stop_soon(self) -> None:
        """For plugin_unloaded and on_exit (nothing here waits): no
        more starts; every lock file goes now (a file removal, and Sublime may
        end the process right after on_exit), the servers close on a thread of
        ours after any start still running, which removes what it added."""
        self._running = False  # plain stores: the start may hold _lock while it binds
        self._closed = True
        for companion in list(self._by_window.values()):
            companion.remove_files()
        in_background(self.stop_all, "stop")

    @threads.may_block
    def stop_all(self) -> None:
        """Stop every server and the thread; leaves no socket, thread or lock
        file (see stop_soon)."""
        with self._lock:
            self._running = False
            self._closed = True
        if not self._starting.acquire(timeout=START_WAIT_SECONDS):
            log.error("the server start did not finish in %d s; stopping anyway", START_WAIT_SECONDS)
        else:
            self._starting.release()
        with self._lock:
            companions = list(self._by_window.values())
            self._by_window.clear()
            thread, self._thread = self._thread, None
        for companion in companions:
            companion.stop()
        if thread is not None:
            thread.stop()

    # --- queries (any thread) ---------------------------------------------

    @property
    def running(self) -> bool:
        """The server thread runs (servers may be started for windows)."""
        return self._running

    @property
    def closed(self) -> bool:
        """Unloading or quitting (set by another thread while a start runs)."""
        return self._closed

    def get(self, window: sublime.Window | None) -> Companion | None:
        if window is None:
            return None
        with self._lock:
            return self._by_window.get(window.id())

    def all(self) -> dict[int, Companion]:
        with self._lock:
            return dict(self._by_window)

    def _sessions_changed(self, window_id: int, connected: int) -> None:
        if self._closed:  # stopping: listeners of an unloaded package must not run
            return
        for listener in list(self.sessions_listeners):
            listener(window_id, connected)


companions = Companions()


def ide_tools_server(window: sublime.Window) -> JsonObject | None:
    """The window's IDE tools as an entry of a chat session's `mcpServers`
    (the terminal's qwen gets them through `--mcp-config`, see
    `plugin/companion/terminal.py`); None while they are off."""
    from ...core.companion.ide_tools_mcp import acp_server

    companion = companions.get(window)
    url = companion.ide_tools_url if companion is not None else None
    if companion is None or url is None or companion.ide_tools_token is None:
        return None
    return acp_server(url, companion.ide_tools_token)
