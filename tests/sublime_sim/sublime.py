"""The fake ``sublime`` module, installed as ``sys.modules["sublime"]`` by the host.

Signatures follow the API reference (build 4200 stubs). Handles (View,
Window, Sheet, Buffer, Settings) wrap ids, as in Sublime; the state behind
them lives in the running ``SimulatedHost``'s application.
"""

from __future__ import annotations

import html as _html
import json as _json
import re as _re
from collections.abc import Callable
from typing import Any

from . import _expand_variables, _jsonc, _runtime, _syntax
from ._api_objects import (
    Buffer as Buffer,
    CompletionItem as CompletionItem,
    CompletionList as CompletionList,
    ContextStackFrame as ContextStackFrame,
    Edit as Edit,
    HistoricPosition as HistoricPosition,
    Html as Html,
    HtmlSheet as HtmlSheet,
    ImageSheet as ImageSheet,
    ListInputItem as ListInputItem,
    Phantom as Phantom,
    PhantomSet as PhantomSet,
    QuickPanelItem as QuickPanelItem,
    Selection as Selection,
    Sheet as Sheet,
    SymbolLocation as SymbolLocation,
    SymbolRegion as SymbolRegion,
    Syntax as Syntax,
    TextChange as TextChange,
    TextSheet as TextSheet,
)
from ._api_view import View as View
from ._api_window import Window as Window
from ._constants import *  # noqa: F403 - every public constant and enum
from ._constants import DialogResult
from ._region import Region as Region
from ._settings import Settings as Settings


def _app() -> Any:
    return _runtime.app()


# ------------------------------------------------------------- environment
# These may be called at import time, as in Sublime.
def version() -> str:
    return "4205"


def platform() -> str:
    app = _runtime.maybe_app()
    return app.platform if app else "linux"


def arch() -> str:
    app = _runtime.maybe_app()
    return app.arch if app else "x64"


def channel() -> str:
    app = _runtime.maybe_app()
    return app.channel if app else "stable"


def executable_path() -> str:
    return "/opt/sublime_text/sublime_text"


def executable_hash() -> tuple[str, str, str]:
    return (version(), "sublime_sim", "0" * 32)


def packages_path() -> str:
    return str(_app().packages_dir)


def installed_packages_path() -> str:
    return str(_app().installed_packages_dir)


def cache_path() -> str:
    return str(_app().cache_dir)


# ----------------------------------------------------------------- dialogs
def status_message(msg: str) -> None:
    app = _app()
    with app.lock:
        app.status_messages.append((app.active_window_id, msg))


def error_message(msg: str) -> None:
    _app().record_dialog("error", msg)


def message_dialog(msg: str) -> None:
    _app().record_dialog("message", msg)


def ok_cancel_dialog(msg: str, ok_title: str = "", title: str = "") -> bool:
    app = _app()
    answer = bool(app.answers.take("ok_cancel", app.answers.ok_cancel))
    app.record_dialog("ok_cancel", msg, answer, ok_title=ok_title, title=title)
    return answer


def yes_no_cancel_dialog(msg: str, yes_title: str = "", no_title: str = "", title: str = "") -> DialogResult:
    app = _app()
    answer = DialogResult(app.answers.take("yes_no_cancel", app.answers.yes_no_cancel))
    app.record_dialog("yes_no_cancel", msg, answer, yes_title=yes_title, no_title=no_title, title=title)
    return answer


def _answer_later(kind: str, fallback: Any, callback: Callable[[Any], None], **details: Any) -> None:
    """File dialogs are asynchronous: the answer arrives on the main thread."""
    app = _app()
    answer = app.answers.take(kind, fallback)
    app.record_dialog(kind, details.pop("message", ""), answer, **details)
    app.set_timeout(lambda: app.call_plugin(f"{kind} dialog callback", callback, answer), 0, app.main)


def open_dialog(
    callback: Callable[[str | list[str] | None], None],
    file_types: list[tuple[str, list[str]]] = [],  # noqa: B006 - Sublime's signature
    directory: str | None = None,
    multi_select: bool = False,
    allow_folders: bool = False,
) -> None:
    _answer_later("open", _app().answers.open_paths, callback, file_types=file_types, directory=directory, multi_select=multi_select)


def save_dialog(
    callback: Callable[[str | None], None],
    file_types: list[tuple[str, list[str]]] = [],  # noqa: B006
    directory: str | None = None,
    name: str | None = None,
    extension: str | None = None,
) -> None:
    _answer_later("save", _app().answers.save_path, callback, file_types=file_types, directory=directory, name=name)


def select_folder_dialog(
    callback: Callable[[str | list[str] | None], None],
    directory: str | None = None,
    multi_select: bool = False,
) -> None:
    _answer_later("select_folder", _app().answers.folder_paths, callback, directory=directory, multi_select=multi_select)


def choose_font_dialog(callback: Callable[[Any], None], default: Any = None) -> None:
    _answer_later("font", _app().answers.font, callback, default=default)


# ----------------------------------------------------------------- commands
def run_command(cmd: str, args: Any = None) -> None:
    _app().run_application_command(cmd, args)


def format_command(cmd: str, args: Any = None) -> str:
    if not _re.fullmatch(r"[\w\-]+", cmd):
        raise ValueError(f"Invalid command name {cmd!r}")
    return cmd if args is None else f"{cmd} {_json.dumps(args)}"


def html_format_command(cmd: str, args: Any = None) -> str:
    return _html.escape(format_command(cmd, args), quote=True)


def command_url(cmd: str, args: Any = None) -> str:
    return "subl:" + html_format_command(cmd, args)


# ---------------------------------------------------------------- clipboard
def get_clipboard_async(callback: Callable[[str], None], size_limit: int = 16777216) -> None:
    app = _app()
    text = app.clipboard if len(app.clipboard) <= size_limit else ""
    app.set_timeout(lambda: app.call_plugin("get_clipboard_async callback", callback, text), 0, app.main)


def get_clipboard(size_limit: int = 16777216) -> str:
    clip = _app().clipboard
    return clip if len(clip) <= size_limit else ""


def set_clipboard(text: str) -> None:
    _app().clipboard = str(text)


# ----------------------------------------------------------------- logging
def _log_flag(name: str, flag: bool | None) -> None:
    app = _app()
    app.log_flags[name] = (not app.log_flags.get(name, False)) if flag is None else bool(flag)


def log_commands(flag: bool | None = None) -> None:
    _log_flag("commands", flag)


def get_log_commands() -> bool:
    return _app().log_flags.get("commands", False)


def log_input(flag: bool | None = None) -> None:
    _log_flag("input", flag)


def get_log_input() -> bool:
    return _app().log_flags.get("input", False)


def log_fps(flag: bool | None = None) -> None:
    _log_flag("fps", flag)


def get_log_fps() -> bool:
    return _app().log_flags.get("fps", False)


def log_result_regex(flag: bool | None = None) -> None:
    _log_flag("result_regex", flag)


def get_log_result_regex() -> bool:
    return _app().log_flags.get("result_regex", False)


def log_indexing(flag: bool | None = None) -> None:
    _log_flag("indexing", flag)


def get_log_indexing() -> bool:
    return _app().log_flags.get("indexing", False)


def log_build_systems(flag: bool | None = None) -> None:
    _log_flag("build_systems", flag)


def get_log_build_systems() -> bool:
    return _app().log_flags.get("build_systems", False)


def log_control_tree(flag: bool | None = None) -> None:
    _log_flag("control_tree", flag)


def get_log_control_tree() -> bool:
    return _app().log_flags.get("control_tree", False)


def ui_info() -> dict[str, Any]:
    return {
        "system": {"style": "dark"},
        "theme": {"value": "auto", "resolved_value": "Default Dark.sublime-theme", "style": "system"},
        "color_scheme": {"value": "Mariana.sublime-color-scheme", "resolved_value": "Mariana.sublime-color-scheme", "palette": {}},
    }


# ---------------------------------------------------------------- resources
def score_selector(scope_name: str, selector: str) -> int:
    return _syntax.score_selector(scope_name, selector)


def load_resource(name: str) -> str:
    return _app().resource_file(name).read_bytes().decode("utf-8").replace("\r\n", "\n")


def load_binary_resource(name: str) -> bytes:
    return _app().resource_file(name).read_bytes()


def find_resources(pattern: str) -> list[str]:
    return _app().find_resources(pattern)


def encode_value(value: Any, pretty: bool = False, update_text: str | None = None) -> str:
    # update_text's comment-preserving merge is not modelled: the value is re-encoded.
    return _jsonc.encode_value(value, pretty or update_text is not None)


def decode_value(data: str) -> Any:
    return _jsonc.decode_value(data)


def expand_variables(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _expand_variables.expand(value, dict(variables))
    if isinstance(value, list):
        return [expand_variables(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: expand_variables(v, variables) for k, v in value.items()}
    return value


def load_settings(base_name: str) -> Settings:
    return Settings(_app().load_settings(base_name))


def save_settings(base_name: str) -> None:
    _app().save_settings(base_name)


# ------------------------------------------------------------------ timing
def set_timeout(callback: Callable[[], object], delay: int = 0) -> None:
    app = _app()
    app.set_timeout(callback, delay, app.main)


def set_timeout_async(callback: Callable[[], object], delay: int = 0) -> None:
    app = _app()
    app.set_timeout(callback, delay, app.worker)


# ----------------------------------------------------------------- windows
def active_window() -> Window:
    return Window(_app().active_window_id)


def windows() -> list[Window]:
    app = _app()
    with app.lock:
        return [Window(w) for w in app.window_order]


def get_macro() -> list[dict[str, Any]]:
    return []


def project_history() -> list[str]:
    return []


def folder_history() -> list[str]:
    return []


def _buffers() -> list[Buffer]:
    app = _app()
    with app.lock:
        return [Buffer(b.id) for b in app.buffers.values() if b.view_ids]


# ----------------------------------------------------------------- syntaxes
def _syn(info: _syntax.SyntaxInfo) -> Syntax:
    return Syntax(info.path, info.name, info.hidden, info.scope)


def list_syntaxes() -> list[Syntax]:
    return [_syn(s) for s in _syntax.SYNTAXES]


def syntax_from_path(path: str) -> Syntax | None:
    """A built-in syntax or one a package ships, by its resource path."""
    info = next((s for s in _syntax.SYNTAXES if s.path == path), None)
    if info is None and path.endswith(".sublime-syntax"):
        info = _syntax.package_syntax(path)
    return _syn(info) if info else None


def find_syntax_by_name(name: str) -> list[Syntax]:
    return [_syn(s) for s in _syntax.SYNTAXES if s.name == name]


def find_syntax_by_scope(scope: str) -> list[Syntax]:
    return [_syn(s) for s in _syntax.SYNTAXES if s.scope == scope]


def find_syntax_for_file(path: str, first_line: str = "") -> Syntax | None:
    return _syn(_syntax.for_path(path))
