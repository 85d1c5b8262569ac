"""The package's one place of wiring (`plugin/wiring.py`), with the BUILT
package in the simulated editor: every registration is made once however
often the package is reloaded (as Sublime does on an upgrade: plugin_unloaded,
import, plugin_loaded), and undone when it is unloaded."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.sublime_sim import SimulatedHost
from tests.support.editor import PACKAGE, Editor, open_editor, wait_for_package_threads

SETTINGS_FILES = ("QwenCompanion.sublime-settings", "Preferences.sublime-settings")


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch) as editor:
        yield editor


def module(name: str) -> ModuleType:
    return sys.modules[f"{PACKAGE}.plugin.{name}"]


def on_change_callbacks(host: SimulatedHost, base_name: str) -> int:
    """How many callbacks Sublime's settings object of `base_name` calls on a change."""
    app = host.app
    with app.lock:
        record = app.settings[app.named_settings[base_name]]
        return sum(len(callbacks) for callbacks in record.callbacks.values())


def assert_registered_once(host: SimulatedHost) -> None:
    for hooks, hook in module("wiring")._hooks():
        assert hooks.count(hook) == 1, hook
    for base_name in SETTINGS_FILES:
        assert on_change_callbacks(host, base_name) == 1, base_name


def test_reloading_makes_each_registration_once(editor: Editor) -> None:
    host = editor.host
    assert_registered_once(host)
    first = module("wiring")
    first_hooks = first._hooks()
    for _ in range(3):
        host.reload_package(PACKAGE)
    wait_for_package_threads(host, "start", "stop")
    host.wait_idle()
    assert module("wiring") is not first
    assert_registered_once(host)
    # The unloaded package's hooks are gone from its objects too.
    assert all(hook not in hooks for hooks, hook in first_hooks)

    # A second plugin_loaded without an unload adds nothing.
    host.run_on_main(module("wiring").register_all)
    assert_registered_once(host)

    # A settings change reaches each listener once.
    calls: list[str] = []
    module("settings").change_listeners.append(lambda: calls.append("changed"))
    editor.settings({"status_bar": False})
    host.wait_idle()
    assert calls == ["changed"]
    host.assert_no_errors()


def test_unloading_undoes_every_registration(editor: Editor) -> None:
    host = editor.host
    hooks = module("wiring")._hooks()
    host.unload_package(PACKAGE)
    wait_for_package_threads(host, "stop")
    assert all(hook not in registered for registered, hook in hooks)
    for base_name in SETTINGS_FILES:
        assert on_change_callbacks(host, base_name) == 0, base_name
    host.assert_no_errors()
