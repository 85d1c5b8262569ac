"""``SimulatedHost``: a Sublime Text plugin host for tests.

A host owns the fake editor (windows, views, settings, resources from a
``Packages`` folder), the plugin host's two threads and the loaded packages::

    host = SimulatedHost(tmp_path / "Packages")
    host.install_package("QwenCompanion.sublime-package-src", "QwenCompanion")  # or put it there yourself
    host.load_package("QwenCompanion")        # import plugins, then plugin_loaded()
    view = host.user.open_file("/tmp/a.py")   # waits for on_load(_async)
    host.wait_idle()                          # both threads quiet
    host.assert_no_errors()
    host.close()

Threads: ``set_timeout`` callbacks and blocking events run on the "main"
thread (``sublime-main``), ``set_timeout_async`` callbacks and ``*_async``
events on the single "worker" thread (``sublime-worker``). The API can be
called from any thread. A command runs on the thread that called
``run_command``; the blocking events it causes run on the main thread while
the caller waits (Sublime blocks the caller the same way).

The watchdog (``_watchdog``, on by default, ``host.watchdog``): a callback on
either thread that waits (a Future, a process, a thread, a socket, a sleep) or
runs more than ``watchdog_ms`` (200) of CPU time fails the test when the host
closes.

The thread referee (``_thread_referee``, ``host.thread_referee``): a function
a package marks for one thread (QwenCompanion's ``core/threads.py``) that runs
on another fails the test when the host closes; ``check_threads=False`` leaves
the package unchecked, as in Sublime (the bench measures that).

The focus guard (``_focus_guard``, ``host.app.focus_guard``): a focus change
(a view, sheet, group or window) not made by the user or a continuation of
their command fails the test when the host closes.

Exceptions in callbacks, event handlers and commands are caught, recorded in
``host.errors`` (and echoed to stderr, Sublime's console) and do not reach the
caller, as in Sublime.

Choices where Sublime's behaviour is not documented:

* ``rowcol``/``text_point`` count code points (Python ``str`` indices), which
  is what Sublime calls "Unicode characters"; ``*_utf8``/``*_utf16`` variants
  convert.
* Selection regions that overlap or touch are merged; the merged region keeps
  the direction of the region being added (or of the existing non-empty one
  when a caret is added). ``xpos`` is not kept in the selection.
* Regions, phantoms and carets track edits: carets and region starts move
  past text inserted at them, region ends do not (regions do not grow at
  their edges).
* Closing a view: save prompt (if dirty) -> ``on_pre_close`` ->
  ``on_deactivated`` (if it had focus) -> ``on_close`` (the view has no window
  any more but still answers file_name/settings) -> ``on_activated`` of the
  next view (most recently used in the group).
* Opening a file: view created and focused (``on_activated``) while
  ``is_loading()``; the main queue then reads it and fires ``on_load`` /
  ``on_load_async``. A missing path opens an empty view.
* ``on_query_context``: a key no listener answers counts as not matching.
* Saving (``_save_rewrites``): Default's ``trim_trailing_white_space_on_save``
  (with ``trim_only_modified_white_space``) and ``ensure_newline_at_eof_on_save``
  rewrite the buffer first (Default is the first package loaded), then every
  package's ``on_pre_save`` runs in load order; what they leave is written.
* Quitting: no close prompts and no ``on_pre_close``/``on_close`` (hot exit);
  the API shuts down (pending and new timeouts are dropped), ``on_exit`` runs,
  and ``plugin_unloaded`` is NOT called, as in Sublime.

Not modelled:

* Syntax highlighting and scopes: each view's scope is its syntax's base scope
  for every point; syntax is picked from the file extension from a small table.
  ``find_by_selector``, ``extract_scope``, ``meta_info``, symbols and the
  symbol index return trivial values.
* Undo/redo, macros, command history (``command_history`` is empty).
* Clones (``clone_file``, ``FORCE_CLONE``): one view per buffer; ``on_clone``
  never fires; ``is_primary()`` is always true.
* Geometry: no text layout or fonts and no word wrap. The viewport is a fixed
  number of rows (``_viewport``): ``visible_region``, ``show``/``show_at_center``
  (also recorded in ``ViewState.shown``) and ``user.scroll_wheel`` move it and
  never the caret; plugin edits do not scroll.
* Auto-complete UI (``on_query_completions`` runs only via
  ``user.query_completions``), hover popups' positioning, minihtml rendering
  (links are found by ``href`` in the HTML text).
* Command palette and input handlers (``show_overlay`` is recorded; a command
  missing arguments that has ``input()`` records a ``show_overlay``).
* Panel focus: ``window.active_view()`` is always the active sheet's view, never
  an output/input panel; no activation events for panels; destroying an output
  panel fires no close events. ``create_io_panel``'s input box.
* Multiple sheet selection (``select_sheets`` focuses the last one),
  semi-transient sheets, image sheets, ``move_sheets_to_group`` selection.
* Layout changes fire no move events; ``set_view_index`` fires
  ``on_pre_move``/``on_post_move``.
* The incremental diff's default reference (the file on disk, or git's HEAD
  or index with ``mini_diff``): only a reference set through
  ``set_reference_document`` gives hunks (``_diff_hunks``); gutter marks and
  inline diffs are state, not drawn.
* File watching: edits on disk are not noticed (no ``on_reload``); settings
  files are re-read only through ``user.edit_settings_file``.
* Project events other than ``on_load_project`` (``user.open_project``) and
  ``on_pre_close_project`` (``user.close_project``): no ``on_new_project``,
  ``on_pre_save_project``/``on_post_save_project``; workspaces are not kept.
* ``on_new_buffer``/``on_close_buffer`` (``on_associate_buffer`` fires when a
  file is opened or first saved under a name, and asks each
  ``TextChangeListener`` class's ``is_applicable`` again, as Sublime does).
* ``encode_value(update_text=...)`` does not preserve comments/formatting.
* Sublime-package archives (``.sublime-package`` zips), ``Installed Packages``,
  ``ignored_packages``, dependencies/libraries, the ``.python-version`` choice.
* Start-up versus run-time loading is approximated: ``load_package`` (default
  ``at_startup=True``) imports all plugin modules, then runs every
  ``plugin_loaded``, then creates listeners for open views, ``on_init`` and a
  synthesized ``on_activated``; ``at_startup=False`` starts each module right
  after importing it. ``reload_package`` / ``disable_package`` /
  ``enable_package`` do what Sublime's ``reload_plugin`` / ``unload_plugin`` do:
  only plugin modules are (re-)imported, submodules stay cached, and ``on_init``
  reaches only the loaded module's own listeners; ``restart_package`` forgets
  every module of the package, as a Sublime restart does. Sublime's own packages
  (Default, ...) are not present unless a test puts them in ``Packages``.
* API calls made inside ``on_exit`` still answer from the (frozen) state
  instead of failing.
* Mouse/keyboard details: typing inserts the whole string with one ``insert``
  command; no auto-indent, auto-pairing, tab translation or drag-select events.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from . import _runtime, _watchdog, sublime, sublime_plugin, sublime_types
from ._api_view import View
from ._api_window import Window
from ._app import App
from ._loader import PackageLoader
from ._records import CommandRecord, DialogAnswers, DialogRecord, ErrorRecord
from ._state import InputPanelRecord, QuickPanelRecord, ViewState, WindowState
from ._thread_referee import ThreadReferee
from ._user import User
from ._watchdog import DEFAULT_LIMIT_MS, Watchdog

T = TypeVar("T")

FAKE_MODULES: dict[str, ModuleType] = {
    "sublime": sublime,
    "sublime_plugin": sublime_plugin,
    "sublime_types": sublime_types,
}


def install_modules() -> None:
    """Make ``import sublime`` / ``sublime_plugin`` / ``sublime_types`` get the fakes."""
    sys.modules.update(FAKE_MODULES)


class SimulatedHost:
    """A running simulated Sublime Text with its plugin host threads (see module doc)."""

    def __init__(
        self,
        packages_dir: str | Path,
        *,
        platform: str = "linux",
        arch: str = "x64",
        channel: str = "stable",
        cache_dir: str | Path | None = None,
        watchdog_ms: float | None = DEFAULT_LIMIT_MS,
        check_threads: bool = True,
    ) -> None:
        if _runtime.maybe_app() is not None:
            raise RuntimeError("another SimulatedHost is still running: close() it first")
        self.packages_dir = Path(packages_dir).resolve()
        (self.packages_dir / "User").mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix="sublime-sim-"))
        # `cache_dir` (sublime.cache_path()) outlives the host, like Sublime's
        # own Cache folder; by default a temporary one is used.
        cache = Path(cache_dir).resolve() if cache_dir is not None else self._tmp / "Cache"
        cache.mkdir(parents=True, exist_ok=True)
        (self._tmp / "Installed Packages").mkdir()
        self.watchdog = Watchdog(watchdog_ms)
        _watchdog.install(self.watchdog)
        self.app = App(self.packages_dir, self._tmp / "Installed Packages", cache, platform, arch, channel, self.watchdog)
        self._saved_modules = {name: sys.modules.get(name) for name in FAKE_MODULES}
        sublime_plugin.reset()
        install_modules()
        _runtime.install(self.app)
        self.thread_referee = ThreadReferee(self.app.main.is_current, self.app.worker.is_current)
        # Off (the bench): the package's markers cost what they cost in Sublime.
        self.loader = PackageLoader(self.packages_dir, self.thread_referee.adopt) if check_threads \
            else PackageLoader(self.packages_dir)
        self.user = User(self)
        self._closed = False
        self.has_quit = False
        self.app.start()
        self.run_on_main(self.app.create_window)  # Sublime starts with one empty window

    # ---------------------------------------------------------------- modules
    @property
    def sublime(self) -> ModuleType:
        return sublime

    @property
    def sublime_plugin(self) -> ModuleType:
        return sublime_plugin

    # --------------------------------------------------------------- packages
    def install_package(self, source: str | Path, name: str | None = None, *, copy: bool = False) -> Path:
        """Put a package folder into ``Packages`` (a symlink unless ``copy``)."""
        source = Path(source).resolve()
        target = self.packages_dir / (name or source.name)
        if target.is_symlink() and target.resolve() == source:
            return target  # already there (a Packages folder kept across runs)
        if copy:
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.symlink_to(source, target_is_directory=True)
        return target

    def load_package(self, name: str, *, at_startup: bool = True) -> list[str]:
        """Import ``Packages/<name>``'s plugins on the main thread; returns module names.

        By default as at Sublime's start-up: all plugin modules are imported,
        then each ``plugin_loaded`` runs. ``at_startup=False`` starts each module
        right after importing it, as a run-time install does.
        """
        return self._run_as_sublime(lambda: self._loading(lambda: self.loader.load(name, at_startup)))

    def unload_package(self, name: str) -> None:
        self._run_as_sublime(lambda: self.loader.unload(name))

    def reload_package(self, name: str) -> list[str]:
        """As Sublime reloads a package at run time: only its plugin modules are
        re-imported (``sublime_plugin.reload_plugin``); submodules stay cached."""

        def go() -> list[str]:
            self._loading(lambda: self.loader.reload_plugins(name))
            return list(self.loader.loaded[name])

        return self._run_as_sublime(go)

    def disable_package(self, name: str) -> None:
        """Add it to ``ignored_packages``: ``unload_plugin`` of its plugin modules."""
        self._run_as_sublime(lambda: self.loader.disable(name))

    def enable_package(self, name: str) -> list[str]:
        """Take it out of ``ignored_packages``: ``reload_plugin`` of its plugin modules."""
        return self.reload_package(name)

    def restart_package(self, name: str) -> list[str]:
        """The package as after a Sublime restart: every module of it forgotten
        and imported anew (what no run-time reload does)."""

        def go() -> list[str]:
            self.loader.unload(name)
            return self._loading(lambda: self.loader.load(name, at_startup=False))

        return self._run_as_sublime(go)

    def _loading(self, load: Callable[[], T]) -> T:
        with self.watchdog.loading():
            return load()

    @property
    def loaded_packages(self) -> list[str]:
        return list(self.loader.loaded)

    # ---------------------------------------------------------------- threads
    @property
    def main_thread(self) -> threading.Thread:
        return self.app.main.thread

    @property
    def worker_thread(self) -> threading.Thread:
        return self.app.worker.thread

    def is_main_thread(self) -> bool:
        return self.app.main.is_current()

    def is_worker_thread(self) -> bool:
        return self.app.worker.is_current()

    def run_on_main(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        """Run ``fn`` on the main thread, wait, return its result or re-raise its
        error. From the test's thread it runs as the user's own action (the
        focus guard lets it move the keys)."""
        if self.app.focus_guard.on_driver():
            fn = self.app.focus_guard.as_user(fn)  # type: ignore[assignment]
        return self.app.main.call_and_wait(fn, timeout)  # type: ignore[no-any-return]

    def _run_as_sublime(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        """Run ``fn`` on the main thread as Sublime itself (loading, unloading,
        quitting a package): nothing the user did."""
        return self.app.main.call_and_wait(fn, timeout)  # type: ignore[no-any-return]

    def run_on_worker(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        return self.app.worker.call_and_wait(fn, timeout)  # type: ignore[no-any-return]

    def wait_idle(self, timeout: float = 5.0, horizon_ms: float = 50) -> None:
        """Wait until neither thread runs a callback or has one due within ``horizon_ms``.

        Callbacks scheduled further ahead (timers, polling loops) are ignored.
        """
        if self.is_main_thread() or self.is_worker_thread():
            raise RuntimeError("wait_idle() would deadlock on a plugin thread")
        deadline = time.monotonic() + timeout
        horizon = horizon_ms / 1000.0
        with self.app.cond:
            while self.app.main.due_within(horizon) or self.app.worker.due_within(horizon):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"not idle after {timeout}s; main: {self.app.main.pending()}; worker: {self.app.worker.pending()}")
                self.app.cond.wait(min(left, 0.005))

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0, interval: float = 0.005) -> T:
        """Poll ``predicate`` (from the calling thread) until truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout}s")
            time.sleep(interval)

    def advance_clock(self, ms: float) -> None:
        """Make pending timeouts due ``ms`` sooner (the plugin's own clocks are untouched)."""
        with self.app.cond:
            self.app.clock.offset += ms / 1000.0
            self.app.cond.notify_all()

    # ---------------------------------------------------------------- records
    @property
    def errors(self) -> list[ErrorRecord]:
        with self.app.lock:
            return list(self.app.errors)

    def clear_errors(self) -> None:
        with self.app.lock:
            self.app.errors.clear()

    def assert_no_errors(self) -> None:
        errors = self.errors
        if errors:
            raise AssertionError("plugin errors:\n" + "\n".join(str(e) for e in errors))

    @property
    def console(self) -> list[str]:
        with self.app.lock:
            return list(self.app.console)

    @property
    def dialogs(self) -> list[DialogRecord]:
        with self.app.lock:
            return list(self.app.dialogs)

    @property
    def answers(self) -> DialogAnswers:
        return self.app.answers

    @property
    def commands(self) -> list[CommandRecord]:
        with self.app.lock:
            return list(self.app.commands)

    @property
    def unknown_commands(self) -> list[CommandRecord]:
        return [c for c in self.commands if not c.handled and c.handler == ""]

    @property
    def status_messages(self) -> list[str]:
        with self.app.lock:
            return [msg for _, msg in self.app.status_messages]

    @property
    def quick_panels(self) -> list[QuickPanelRecord]:
        with self.app.lock:
            return list(self.app.quick_panels)

    @property
    def input_panels(self) -> list[InputPanelRecord]:
        with self.app.lock:
            return list(self.app.input_panels)

    @property
    def opened_urls(self) -> list[str]:
        with self.app.lock:
            return list(self.app.opened_urls)

    # ------------------------------------------------------------------ state
    @property
    def window(self) -> Window:
        """The active window (``sublime.active_window()``)."""
        return Window(self.app.active_window_id)

    def windows(self) -> list[Window]:
        return sublime.windows()

    def drawn_phantoms(self, view: View) -> list[tuple[int, str, str]]:
        """Where Sublime draws each phantom of ``view``: ``(row, place, content)``.

        An INLINE phantom sits in its region's row, at the region; BELOW and
        BLOCK phantoms take the space below the row of their region's start:
        Sublime has no layout above a line, so a block phantom at 0 is drawn
        between the first line and the second."""
        from . import _text

        with self.app.lock:
            st = self.view_state(view)
            text = st.buffer.text
            records = sorted(st.phantoms.values(), key=lambda p: p.id)
        out = []
        for p in records:
            row = _text.rowcol(text, min(p.region))[0]
            out.append((row, "inline" if p.layout == int(sublime.LAYOUT_INLINE) else "below", p.content))
        return out

    def view_state(self, view: View) -> ViewState:
        """The recorded state behind a view (regions, phantoms, popup, ...); read only."""
        st = self.app.views.get(view.view_id)
        if st is None:
            raise LookupError(f"unknown {view!r}")
        return st

    def visible_views(self, window: Window) -> list[View]:
        """What the user sees of `window`: the selected view of every group
        (one tab a group is drawn) and the view of the shown output panel."""
        app = self.app
        with app.lock:
            win = app.windows.get(window.window_id)
            if win is None:
                return []
            ids = [app.sheets[sid].view_id for sid in win.selected if sid and app.sheets[sid].view_id]
            panel = win.active_panel or ""
            if panel.startswith("output.") and win.panels.get(panel[len("output."):]):
                ids.append(win.panels[panel[len("output."):]])
        return [View(vid) for vid in ids]

    def window_state(self, window: Window) -> WindowState:
        st = self.app.windows.get(window.window_id)
        if st is None:
            raise LookupError(f"unknown {window!r}")
        return st

    # -------------------------------------------------------------- lifecycle
    def quit(self) -> None:
        """Quit Sublime: the API shuts down, ``on_exit`` runs, threads stop."""
        if self.has_quit or self._closed:
            return

        def go() -> None:
            self.app.api_shut_down = True
            self.app.main.clear()
            self.app.worker.clear()
            sublime_plugin.on_exit()

        self._run_as_sublime(go)
        self.has_quit = True
        self.app.stop()

    def close(self) -> None:
        """Unload packages (``plugin_unloaded``), stop the threads, forget this host."""
        if self._closed:
            return
        try:
            if not self.has_quit:
                for name in reversed(list(self.loader.loaded)):
                    try:
                        self._run_as_sublime(lambda name=name: self.loader.unload_plugins(name))  # type: ignore[misc]
                    except Exception as exc:
                        self.app.report_error(f"unloading {name}", exc)
        finally:
            # Threads first: a callback still running must not see its modules vanish.
            self.app.stop()
            for name in set(self.loader.loaded) | self.loader.imported:  # a disabled package's too
                self.loader.drop_modules(name, keep_libraries=True)
                _forget_loggers(name)
            self._closed = True
            sublime_plugin.reset()
            _runtime.install(None)
            for name, module in self._saved_modules.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
            shutil.rmtree(self._tmp, ignore_errors=True)
            for folder in [f for f in sys.path_importer_cache if f.startswith(str(self._tmp))]:
                del sys.path_importer_cache[folder]  # finders of folders that are gone
            _watchdog.uninstall()
            self.thread_referee.release()
        self.watchdog.check()
        self.app.focus_guard.check()
        self.thread_referee.check()

    def __enter__(self) -> SimulatedHost:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _forget_loggers(package: str) -> None:
    """The plugin host's process ends with the host: what the package left on
    its loggers (`name` and `name.*`) goes too. After a quit (no
    plugin_unloaded) a package's handler stayed, and the next test's records
    reached it: its `sublime.set_timeout` ran into another host, or none."""
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and (name == package or name.startswith(package + ".")):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)
            logger.propagate, logger.disabled = True, False
