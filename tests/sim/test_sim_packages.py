"""Package loading, reloading, unloading; listeners; several hosts; quitting."""

from __future__ import annotations

import gc
import logging
import sys
import weakref
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

# A throwaway package: two plugin modules, a subpackage, resources and a log
# file outside sys.modules so the test can see what plugin_unloaded did.
MAIN = '''
import sublime
import sublime_plugin

from .lib.helpers import shout, LOG_FILE
from .lib import state

VERSION = {version!r}


def plugin_loaded():
    state.events.append("plugin_loaded " + VERSION)
    settings = sublime.load_settings("Tiny.sublime-settings")
    state.events.append("greeting " + settings.get("greeting"))


def plugin_unloaded():
    with open(LOG_FILE, "a") as f:
        f.write("plugin_unloaded " + VERSION + "\\n")


class TinyShoutCommand(sublime_plugin.TextCommand):
    def run(self, edit):
        self.view.insert(edit, 0, shout(VERSION))


class TinyMarkdownListener(sublime_plugin.ViewEventListener):
    @classmethod
    def is_applicable(cls, settings):
        return settings.get("syntax", "").endswith("Markdown.sublime-syntax")

    def on_modified(self):
        state.events.append("vel modified %d" % self.view.id())
'''

OTHER = '''
import sublime_plugin

from .lib import state


def plugin_loaded():
    state.events.append("other loaded")


class TinyWindowCommand(sublime_plugin.WindowCommand):
    def run(self):
        state.events.append("window command")


class _Hidden(sublime_plugin.EventListener):
    def on_new(self, view):
        state.events.append("hidden saw it")


class Seen(sublime_plugin.EventListener):
    def on_new(self, view):
        state.events.append(f"on_new {view.id()}")

    def on_exit(self):
        with open(state.LOG_FILE, "a") as f:
            f.write("on_exit\\n")
'''


def make_tiny(packages_dir: Path, log_file: Path, version: str = "1") -> None:
    write_package(
        packages_dir,
        "Tiny",
        {
            "main.py": MAIN.replace("{version!r}", repr(version)),
            "other.py": OTHER,
            "lib/__init__.py": "",
            "lib/helpers.py": f"LOG_FILE = {str(log_file)!r}\n\ndef shout(text):\n    return text.upper() + '!'\n",
            "lib/state.py": f"LOG_FILE = {str(log_file)!r}\nevents = []\n",
            "Tiny.sublime-settings": '{"greeting": "hello",}',
        },
    )


def test_load_reload_unload(sim_host: SimulatedHost, packages_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    make_tiny(packages_dir, log)
    assert sim_host.load_package("Tiny") == ["Tiny.main", "Tiny.other"]
    main = sys.modules["Tiny.main"]
    package = sys.modules["Tiny"]
    assert package.__path__ == [str(packages_dir / "Tiny")]
    state = sys.modules["Tiny.lib.state"]
    # At start-up every plugin module is imported before any plugin_loaded runs.
    assert state.events == ["plugin_loaded 1", "greeting hello", "other loaded"]
    assert "Tiny.sublime-settings" in " ".join(sim_host.sublime.find_resources("*.sublime-settings"))
    assert sim_host.sublime.load_resource("Packages/Tiny/Tiny.sublime-settings").startswith("{")

    view = sim_host.window.new_file()
    assert f"on_new {view.id()}" in state.events and "hidden saw it" not in state.events
    view.run_command("tiny_shout")
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "1!"
    sim_host.window.run_command("tiny_window")
    assert state.events[-1] == "window command"

    make_tiny(packages_dir, log, version="two")
    sim_host.reload_package("Tiny")
    assert log.read_text() == "plugin_unloaded 1\n"
    # Sublime's reload_plugin: the plugin module is re-executed in place, its
    # submodules stay cached exactly as they were.
    assert sys.modules["Tiny.main"] is main and main.VERSION == "two"
    assert sys.modules["Tiny.lib.state"] is state
    view.run_command("tiny_shout")
    assert view.substr(sim_host.sublime.Region(0, view.size())).startswith("TWO!")

    sim_host.unload_package("Tiny")
    assert log.read_text() == "plugin_unloaded 1\nplugin_unloaded two\n"
    assert not [m for m in sys.modules if m == "Tiny" or m.startswith("Tiny.")]
    size = view.size()
    view.run_command("tiny_shout")  # gone: a silent no-op
    assert view.size() == size and sim_host.unknown_commands[-1].name == "tiny_shout"
    assert sim_host.loaded_packages == []
    sim_host.assert_no_errors()


def test_view_event_listener_follows_applicability(sim_host: SimulatedHost, packages_dir: Path, tmp_path: Path) -> None:
    make_tiny(packages_dir, tmp_path / "log.txt")
    sim_host.load_package("Tiny")
    state = sys.modules["Tiny.lib.state"]
    sp = sim_host.sublime_plugin
    cls = sys.modules["Tiny.main"].TinyMarkdownListener
    view = sim_host.window.new_file()
    assert sp.find_view_event_listener(view, cls) is None
    view.assign_syntax("scope:text.html.markdown")  # the syntax setting changes: listener created
    vel = sp.find_view_event_listener(view, cls)
    assert vel is not None and vel.view == view
    sim_host.user.type(view, "# title")
    assert f"vel modified {view.id()}" in state.events
    view.assign_syntax("Packages/Python/Python.sublime-syntax")
    assert sp.find_view_event_listener(view, cls) is None


def test_broken_plugin_is_reported_and_others_load(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(
        packages_dir,
        "Broken",
        {
            "a_bad.py": "raise ImportError('nope')\n",
            "b_good.py": "import sublime_plugin\n\nclass GoodCommand(sublime_plugin.WindowCommand):\n    def run(self):\n        pass\n",
            "c_loaded.py": "def plugin_loaded():\n    raise RuntimeError('loaded went wrong')\n",
        },
    )
    assert sim_host.load_package("Broken") == ["Broken.b_good", "Broken.c_loaded"]
    assert [e.where for e in sim_host.errors] == ["loading plugin Broken.a_bad", "Broken.c_loaded.plugin_loaded"]
    with pytest.raises(FileNotFoundError):
        sim_host.load_package("Missing")


def test_hosts_follow_each_other(packages_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    make_tiny(packages_dir, log)
    before = sys.modules.get("sublime")
    for round_ in range(2):
        with SimulatedHost(packages_dir) as host:
            with pytest.raises(RuntimeError):
                SimulatedHost(packages_dir)  # one at a time
            host.load_package("Tiny")
            assert sys.modules["sublime"] is host.sublime
            assert len(host.sublime.windows()) == 1 and host.window.views() == []
            host.window.new_file()
            assert sys.modules["Tiny.lib.state"].events[:1] == ["plugin_loaded 1"]
        assert "Tiny.main" not in sys.modules and sys.modules.get("sublime") is before
        assert log.read_text().count("plugin_unloaded") == round_ + 1


def test_quit_calls_on_exit_not_plugin_unloaded(packages_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    make_tiny(packages_dir, log)
    host = SimulatedHost(packages_dir)
    try:
        host.load_package("Tiny")
        fired: list[int] = []
        host.sublime.set_timeout(lambda: fired.append(1), 50)
        host.user.quit()
        assert log.read_text() == "on_exit\n"
        assert not host.main_thread.is_alive() and not host.worker_thread.is_alive()
        assert fired == []  # the API shut down: pending timeouts never run
    finally:
        host.close()
    assert log.read_text() == "on_exit\n"
    assert "Tiny.main" not in sys.modules


# A package that logs to the editor, as ours does (plugin/log.py): its handler
# calls the API. It forgets it in plugin_unloaded, which a quit never calls.
LOGGING_MAIN = '''
import logging

import sublime


class ToEditor(logging.Handler):
    def emit(self, record):
        with open(sublime.packages_path() + "/../reached.txt", "a") as f:
            f.write(record.getMessage() + "\\n")
        sublime.set_timeout(lambda: None)


def plugin_loaded():
    logging.getLogger("Chatty").addHandler(ToEditor())
    logging.getLogger("Chatty").propagate = False
'''


def test_a_quit_hosts_log_handlers_end_with_it(packages_dir: Path, tmp_path: Path) -> None:
    """The plugin host's process ends after on_exit, and its loggers with it:
    a record logged after the host (a package thread ending late) or in the
    next one must not reach the old package's handler."""
    write_package(packages_dir, "Chatty", {"main.py": LOGGING_MAIN})
    reached = packages_dir.parent / "reached.txt"
    with SimulatedHost(packages_dir) as host:
        host.load_package("Chatty")
        logging.getLogger("Chatty.core").warning("while it runs")
        host.user.quit()
    assert reached.read_text() == "while it runs\n"  # the handler works while its host does
    logger = logging.getLogger("Chatty.core")
    logger.warning("a late record, with no host")  # the old handler raised: no SimulatedHost running
    with SimulatedHost(packages_dir):
        logger.warning("a record in the next host")
    assert reached.read_text() == "while it runs\n", "the quit host's log handler outlived it"
    assert logging.getLogger("Chatty").handlers == [] and logging.getLogger("Chatty").propagate


# on_init after a run-time load reaches only listeners whose class belongs to
# the plugin module being loaded (sublime_plugin.plugin_module_for_obj).
INIT_MAIN = '''
import sublime_plugin

from .lib import state
from .lib.deep import DeepListener


class TopListener(sublime_plugin.EventListener):
    def on_init(self, views):
        state.events.append("top init")
'''

INIT_DEEP = '''
import sublime_plugin

from . import state


class DeepListener(sublime_plugin.EventListener):
    def on_init(self, views):
        state.events.append("deep init")
'''


def test_on_init_at_run_time_reaches_only_the_loaded_modules_own_listeners(
    sim_host: SimulatedHost, packages_dir: Path
) -> None:
    write_package(
        packages_dir,
        "Inits",
        {"main.py": INIT_MAIN, "lib/__init__.py": "", "lib/state.py": "events = []\n", "lib/deep.py": INIT_DEEP},
    )
    sim_host.load_package("Inits")  # start-up: every listener
    state = sys.modules["Inits.lib.state"]
    assert sorted(state.events) == ["deep init", "top init"]

    state.events.clear()
    sim_host.reload_package("Inits")
    assert state.events == ["top init"]
    sim_host.assert_no_errors()


def test_disable_keeps_submodules_cached_and_enable_reimports_only_the_plugin(
    sim_host: SimulatedHost, packages_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.txt"
    make_tiny(packages_dir, log)
    sim_host.load_package("Tiny")
    state = sys.modules["Tiny.lib.state"]

    sim_host.disable_package("Tiny")
    assert log.read_text() == "plugin_unloaded 1\n"
    assert "Tiny.main" not in sys.modules and "Tiny.other" not in sys.modules
    assert sys.modules["Tiny.lib.state"] is state
    view = sim_host.window.new_file()
    view.run_command("tiny_shout")
    assert view.size() == 0

    make_tiny(packages_dir, log, version="two")  # an upgrade replaces the files meanwhile
    sim_host.enable_package("Tiny")
    assert sys.modules["Tiny.main"].VERSION == "two"
    assert sys.modules["Tiny.lib.state"] is state  # still the first version's module
    view.run_command("tiny_shout")
    assert sim_host.sublime.Region(0, view.size()).size() == len("TWO!")

    sim_host.restart_package("Tiny")
    assert sys.modules["Tiny.lib.state"] is not state
    sim_host.assert_no_errors()


def test_a_cache_folder_and_packages_folder_outlive_the_host(tmp_path: Path) -> None:
    """Like Sublime's data folders: what a package caches is there after a restart."""
    cache, packages = tmp_path / "cache" / "Cache", tmp_path / "Packages"
    source = write_package(tmp_path / "src", "Tiny", {"x.txt": "x"})
    for run in range(2):
        host = SimulatedHost(packages, cache_dir=cache)
        try:
            host.install_package(source, "Tiny")  # kept from the first run: no error
            assert host.sublime.cache_path() == str(cache.resolve())
            note = Path(host.sublime.cache_path()) / "note.txt"
            assert note.exists() == (run == 1)
            note.write_text("kept")
            assert host.sublime.find_resources("x.txt") == ["Packages/Tiny/x.txt"]
        finally:
            host.close()
    assert (cache / "note.txt").read_text() == "kept"


# A package whose classes land in process-wide caches: typing's subscription
# caches (`Box[int]`) and pydantic's parametrised models (`Page[int]`).
CACHED = '''
from typing import Generic, TypeVar

from pydantic import BaseModel

from . import helper

T = TypeVar("T")


class Box(Generic[T]):
    def unpack(self) -> str:
        return helper.NAME  # the class holds this module's globals


class Page(BaseModel, Generic[T]):
    items: list[T]


IntBox = Box[int]
IntPage = Page[int]
'''


def test_a_closed_host_frees_its_packages_modules(packages_dir: Path) -> None:
    # Each test loads a fresh copy of the package; one that outlived its host
    # grew a suite's process by megabytes a test.
    write_package(packages_dir, "Cached", {"cached.py": CACHED, "helper.py": "NAME = 'helper'\n"})
    with SimulatedHost(packages_dir) as host:
        host.load_package("Cached")
        helper = weakref.ref(sys.modules["Cached.helper"])
        model = weakref.ref(sys.modules["Cached.cached"].Page)
    gc.collect()
    assert helper() is None and model() is None


def test_a_host_forgets_the_modules_of_a_package_it_disabled_when_it_closes(packages_dir: Path, tmp_path: Path) -> None:
    """Sublime keeps a disabled package's modules imported; a closed host
    must not hand them to the next test (a stand-in LSP left in `sys.modules`
    made a later test see LSP installed)."""
    make_tiny(packages_dir, tmp_path / "log.txt")
    with SimulatedHost(packages_dir) as host:
        host.load_package("Tiny")
        host.disable_package("Tiny")
        assert "Tiny.lib.state" in sys.modules
    assert not [name for name in sys.modules if name == "Tiny" or name.startswith("Tiny.")]


def test_a_package_loads_afresh_whatever_an_earlier_host_left_in_sys_modules(packages_dir: Path, tmp_path: Path) -> None:
    """A thread of an earlier test's package can import a module after its host
    forgot the package; the next load must not pick that stale module up."""
    make_tiny(packages_dir, tmp_path / "log.txt")
    stale = type(sys)("Tiny.lib.state")
    sys.modules["Tiny.lib.state"] = stale
    try:
        with SimulatedHost(packages_dir) as host:
            host.load_package("Tiny")
            assert sys.modules["Tiny.lib.state"] is not stale
    finally:
        sys.modules.pop("Tiny.lib.state", None)
