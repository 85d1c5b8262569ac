"""The fake ``sublime_plugin`` module, installed as ``sys.modules["sublime_plugin"]``.

Behaviour follows Sublime's plugin host: classes found in a plugin module
(honouring ``__all__``, else every public name, so imported classes count)
are registered; an ``EventListener`` is instantiated once and subscribed to
each callback it defines; ``ViewEventListener`` instances exist per view
for which ``is_applicable`` holds (re-checked when the view's settings
change); every handler runs trapped, so one failing handler is recorded and
the others still run.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from . import _runtime, sublime

api_ready = True  # the simulation loads plugins once the API is up

CALLBACK_NAMES = (
    "on_init", "on_new", "on_clone", "on_load", "on_revert", "on_reload", "on_pre_close",
    "on_close", "on_pre_save", "on_post_save", "on_pre_move", "on_post_move", "on_modified",
    "on_selection_modified", "on_activated", "on_deactivated", "on_query_context",
    "on_query_completions", "on_hover", "on_text_command", "on_window_command",
    "on_post_text_command", "on_post_window_command", "on_modified_async",
    "on_selection_modified_async", "on_pre_save_async", "on_post_save_async",
    "on_post_move_async", "on_activated_async", "on_deactivated_async", "on_new_async",
    "on_load_async", "on_revert_async", "on_reload_async", "on_clone_async", "on_new_buffer",
    "on_new_buffer_async", "on_associate_buffer", "on_associate_buffer_async",
    "on_close_buffer", "on_close_buffer_async", "on_new_project", "on_new_project_async",
    "on_load_project", "on_load_project_async", "on_pre_save_project", "on_post_save_project",
    "on_post_save_project_async", "on_pre_close_project", "on_new_window",
    "on_new_window_async", "on_pre_close_window", "on_exit",
)
TEXT_CHANGE_CALLBACKS = frozenset(
    {"on_text_changed", "on_text_changed_async", "on_revert", "on_revert_async", "on_reload", "on_reload_async"}
)

application_command_classes: list[type] = []
window_command_classes: list[type] = []
text_command_classes: list[type] = []
all_command_classes = [application_command_classes, window_command_classes, text_command_classes]
view_event_listener_classes: list[type] = []
view_event_listeners: dict[int, list[Any]] = {}
text_change_listener_classes: list[type] = []
text_change_listeners: dict[int, list[Any]] = {}
all_callbacks: dict[str, list[Any]] = {name: [] for name in CALLBACK_NAMES}

# Command objects live as long as their window/view, like Sublime's.
_instances: dict[tuple[str, int], dict[type, Any]] = {}
_lock = threading.RLock()


def reset() -> None:
    """Forget every plugin (a new host starts from nothing)."""
    with _lock:
        for lst in all_command_classes:
            lst.clear()
        view_event_listener_classes.clear()
        view_event_listeners.clear()
        text_change_listener_classes.clear()
        text_change_listeners.clear()
        for lst in all_callbacks.values():
            lst.clear()
        _instances.clear()


def _where(obj: Any, method: str) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}.{method}"


def _safe(where: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        _runtime.report_exception(where, exc)
        return None


# ------------------------------------------------------------------ naming
def _split_identifier(s: str) -> list[str]:
    """Split CamelCase: ``HTTPServerFoo`` -> HTTP, Server, Foo; digits stay attached."""
    parts: list[str] = []
    word = ""
    for i, c in enumerate(s):
        if c in " \t_-":
            if word:
                parts.append(word)
            word = ""
            continue
        if word and c.isupper():
            prev = word[-1]
            nxt = s[i + 1] if i + 1 < len(s) else ""
            # a new word starts after a lower/digit, or at the last capital of a run
            if not prev.isupper() or nxt.islower():
                parts.append(word)
                word = ""
        word += c
    if word:
        parts.append(word)
    return parts


@functools.cache  # Sublime reads a command's name once, when it makes the command, not at each run
def _derive_name(clsname: str, suffix: str) -> str:
    name = "_".join(p.lower() for p in _split_identifier(clsname))
    return name.removesuffix(suffix)


# ------------------------------------------------------------ input handlers
class CommandInputHandler:
    def name(self) -> str:
        return _derive_name(type(self).__name__, "_input_handler")

    def placeholder(self) -> str:
        return ""

    def initial_text(self) -> str:
        return ""

    def initial_selection(self) -> list[tuple[int, int]]:
        return []

    def preview(self, text: Any) -> Any:
        return ""

    def validate(self, text: Any, event: Any = None) -> bool:
        return True

    def cancel(self) -> None:
        pass

    def confirm(self, text: Any, event: Any = None) -> None:
        pass

    def next_input(self, args: dict[str, Any]) -> CommandInputHandler | None:
        return None

    def want_event(self) -> bool:
        return False


class BackInputHandler(CommandInputHandler):
    def name(self) -> str:
        return "_Back"


class TextInputHandler(CommandInputHandler):
    def description(self, text: str) -> str:
        return text


class ListInputHandler(CommandInputHandler):
    def list_items(self) -> Any:
        return []

    def description(self, value: Any, text: str) -> str:
        return text


# ---------------------------------------------------------------- commands
class Command:
    def name(self) -> str:
        return _derive_name(type(self).__name__, "_command")

    def filter_args(self, args: dict[str, Any] | None) -> dict[str, Any] | None:
        if args and "event" in args and not self.want_event():
            args = {k: v for k, v in args.items() if k != "event"}
        return args

    def _ask(self, method: str, args: dict[str, Any] | None, default: bool) -> bool:
        fn = getattr(self, method)
        args = self.filter_args(args)
        try:
            ret = fn(**args) if args else fn()
        except TypeError:
            ret = fn()
        if not isinstance(ret, bool):
            raise ValueError(f"{method} must return a bool", self)
        return ret

    def is_enabled_(self, args: dict[str, Any] | None) -> bool:
        return self._ask("is_enabled", args, True)

    def is_visible_(self, args: dict[str, Any] | None) -> bool:
        return self._ask("is_visible", args, True)

    def is_checked_(self, args: dict[str, Any] | None) -> bool:
        return self._ask("is_checked", args, False)

    def description_(self, args: dict[str, Any] | None) -> str:
        args = self.filter_args(args)
        try:
            res = self.description(**args) if args else self.description()
        except TypeError:
            return ""
        return res or ""

    def is_enabled(self) -> bool:
        return True

    def is_visible(self) -> bool:
        return True

    def is_checked(self) -> bool:
        return False

    def description(self) -> str | None:
        return ""

    def want_event(self) -> bool:
        return False

    def input(self, args: dict[str, Any]) -> CommandInputHandler | None:
        return None

    def input_description(self) -> str:
        return ""

    def create_input_handler_(self, args: dict[str, Any] | None) -> CommandInputHandler | None:
        return self.input(args or {})

    def _missing_args(self, exc: TypeError, args: dict[str, Any] | None, window: sublime.Window | None) -> bool:
        """A command lacking arguments that has an input handler opens the palette."""
        # As Sublime's own run_: only a missing positional argument opens the input.
        if "required positional argument" not in str(exc):
            return False
        if self.input(dict(args or {})) is None or window is None:
            return False
        window.run_command("show_overlay", {"overlay": "command_palette", "command": self.name(), "args": args or {}})
        return True

    def _call_run(self, first: tuple[Any, ...], args: dict[str, Any] | None, window: sublime.Window | None) -> Any:
        run = self.run
        try:
            return run(*first, **args) if args else run(*first)
        except TypeError as exc:
            if self._missing_args(exc, args, window):
                return None
            raise


class ApplicationCommand(Command):
    """A command instantiated once."""

    def run_(self, edit_token: int, args: dict[str, Any] | None) -> Any:
        return self._call_run((), self.filter_args(args), sublime.active_window())

    def run(self) -> None:
        pass


class WindowCommand(Command):
    """A command instantiated once per window; ``self.window`` is that window."""

    def __init__(self, window: sublime.Window) -> None:
        self.window = window

    def run_(self, edit_token: int, args: dict[str, Any] | None) -> Any:
        return self._call_run((), self.filter_args(args), self.window)

    def run(self) -> None:
        pass


class TextCommand(Command):
    """A command instantiated once per view; ``run`` gets an Edit valid during the call."""

    def __init__(self, view: sublime.View) -> None:
        self.view = view

    def run_(self, edit_token: int, args: dict[str, Any] | None) -> Any:
        args = self.filter_args(args)
        edit = self.view.begin_edit(edit_token, self.name(), args)
        try:
            return self._call_run((edit,), args, self.view.window())
        finally:
            self.view.end_edit(edit)

    def run(self, edit: sublime.Edit) -> None:
        pass


# --------------------------------------------------------------- listeners
class EventListener:
    """Subclasses define any of the ``on_*`` methods listed in CALLBACK_NAMES."""


class ViewEventListener:
    """Event handling bound to one view; see ``is_applicable``."""

    @classmethod
    def is_applicable(cls, settings: sublime.Settings) -> bool:
        return True

    @classmethod
    def applies_to_primary_view_only(cls) -> bool:
        return True

    def __init__(self, view: sublime.View) -> None:
        self.view = view


class TextChangeListener:
    """Receives detailed text changes of one buffer."""

    @classmethod
    def is_applicable(cls, buffer: sublime.Buffer) -> bool:
        return True

    def __init__(self) -> None:
        self.__key: int | None = None
        self.buffer: sublime.Buffer | None = None

    def attach(self, buffer: sublime.Buffer) -> None:
        if not isinstance(buffer, sublime.Buffer):
            raise TypeError("Must be a buffer")
        if self.__key is not None:
            raise ValueError("TextChangeListener is already attached")
        self.buffer = buffer
        self.__key = buffer.buffer_id
        with _lock:
            text_change_listeners.setdefault(buffer.buffer_id, []).append(self)
        app = _runtime.app()
        with app.lock:
            buf = app.buffers.get(buffer.buffer_id)
            if buf is not None:
                buf.text_listeners.append(self)

    def detach(self) -> None:
        if self.__key is None or self.buffer is None:
            raise ValueError("TextChangeListener is not attached")
        bid = self.buffer.buffer_id
        with _lock:
            text_change_listeners[bid] = [tcl for tcl in text_change_listeners.get(bid, []) if tcl is not self]
        app = _runtime.maybe_app()
        if app is not None:
            with app.lock:
                buf = app.buffers.get(bid)
                if buf is not None and self in buf.text_listeners:
                    buf.text_listeners.remove(self)
        self.__key = None

    def is_attached(self) -> bool:
        return self.__key is not None


def find_view_event_listener(view: sublime.View, cls: type) -> Any:
    with _lock:
        return next((vel for vel in view_event_listeners.get(view.view_id, []) if type(vel) is cls), None)


# ------------------------------------------------------- module (un)loading
def _is_plugin(t: Any, base: type) -> bool:
    return isinstance(t, type) and issubclass(t, base) and t is not base


@dataclass
class LoadedModule:
    """What registering a plugin module added, for the catch-up steps after it."""

    module: ModuleType
    listeners: list[Any] = field(default_factory=list)
    vel_classes: list[type] = field(default_factory=list)
    tcl_classes: list[type] = field(default_factory=list)


def register_module(m: ModuleType) -> LoadedModule:
    """Register a plugin module's command and listener classes (no plugin_loaded yet)."""
    exports = getattr(m, "__all__", None)
    allowed = set(exports) if exports is not None else None
    objects = [o for name, o in list(m.__dict__.items()) if (name in allowed if allowed is not None else not name.startswith("_"))]
    loaded = LoadedModule(m)
    plugins: list[Any] = []
    with _lock:
        for t in objects:
            if _is_plugin(t, ApplicationCommand):
                application_command_classes.append(t)
            elif _is_plugin(t, WindowCommand):
                window_command_classes.append(t)
            elif _is_plugin(t, TextCommand):
                text_command_classes.append(t)
            elif _is_plugin(t, EventListener):
                obj = _safe(_where(t, "__init__"), t)
                if obj is None:
                    continue
                for name in CALLBACK_NAMES:
                    if hasattr(t, name):
                        all_callbacks[name].append(obj)
                plugins.append(obj)
                loaded.listeners.append(obj)
                continue
            elif _is_plugin(t, ViewEventListener):
                view_event_listener_classes.append(t)
                loaded.vel_classes.append(t)
            elif _is_plugin(t, TextChangeListener):
                text_change_listener_classes.append(t)
                loaded.tcl_classes.append(t)
            else:
                continue
            plugins.append(t)
    if plugins:
        m.__plugins__ = plugins  # type: ignore[attr-defined]
    return loaded


def plugin_module_for_obj(obj: object) -> str:
    """The plugin module an object belongs to, as Sublime reckons it: the first
    two labels of its class's module (``Pkg.plugin.sub.mod`` → ``Pkg.plugin``)."""
    name = type(obj).__module__
    if name.count(".") > 2:
        name = ".".join(name.split(".", 2)[0:2])
    return name


def start_modules(modules: list[LoadedModule], init_module: str | None = None) -> None:
    """``plugin_loaded`` of each module, then listeners for existing views, on_init, on_activated.

    ``init_module``: at run time Sublime sends ``on_init`` only to listeners
    whose class belongs to that plugin module (see ``plugin_module_for_obj``);
    at start-up (None) every listener gets it.
    """
    for lm in modules:
        plugin_loaded = getattr(lm.module, "plugin_loaded", None)
        if plugin_loaded is not None:
            _safe(f"{lm.module.__name__}.plugin_loaded", plugin_loaded)
    listeners = [el for lm in modules for el in lm.listeners]
    vel_classes = [c for lm in modules for c in lm.vel_classes]
    tcl_classes = [c for lm in modules for c in lm.tcl_classes]
    views = [v for w in sublime.windows() for v in w.views(include_transient=True)]
    for v in views:
        _create_view_event_listeners(vel_classes, v)
    if tcl_classes:
        for b in sublime._buffers():
            for cls in tcl_classes:
                if _safe(_where(cls, "is_applicable"), cls.is_applicable, b):  # type: ignore[attr-defined]
                    tcl = _safe(_where(cls, "__init__"), cls)
                    if tcl is not None:
                        tcl.attach(b)
    _on_init(listeners, vel_classes, views, init_module)
    _synthesize_activated(listeners, vel_classes)


def load_module(m: ModuleType) -> None:
    """Sublime's run-time (re)load of one plugin module: register, then start it."""
    start_modules([register_module(m)], init_module=m.__name__)


def unload_plugin(modulename: str) -> None:
    """Sublime's ``unload_plugin`` (a package disabled): only the plugin module
    leaves ``sys.modules``; the package's other modules stay cached."""
    module = sys.modules.pop(modulename, None)
    if module is not None:
        unload_module(module)


def reload_plugin(modulename: str) -> ModuleType:
    """Sublime's ``reload_plugin`` (a plugin file saved, a package enabled or
    upgraded): only the plugin module is re-imported; submodules stay cached."""
    module = sys.modules.get(modulename)
    if module is not None:
        unload_module(module)
        module = importlib.reload(module)
    else:
        module = importlib.import_module(modulename)
    load_module(module)
    return module


def _on_init(
    listeners: list[Any], vel_classes: list[type], views: list[sublime.View], init_module: str | None
) -> None:
    def wanted(obj: object) -> bool:
        return init_module is None or plugin_module_for_obj(obj) == init_module

    loaded = [v for v in views if not v.is_loading()]
    for el in listeners:
        if hasattr(el, "on_init") and wanted(el):
            _safe(_where(el, "on_init"), el.on_init, loaded)
    for v in loaded:
        for vel in list(view_event_listeners.get(v.view_id, [])):
            if type(vel) in vel_classes and hasattr(vel, "on_init") and wanted(vel):
                _safe(_where(vel, "on_init"), vel.on_init)


def _synthesize_activated(listeners: list[Any], vel_classes: list[type]) -> None:
    """A freshly loaded listener hears on_activated for the already focused view."""
    view = sublime.active_window().active_view()
    if view is None:
        return
    for el in listeners:
        if hasattr(el, "on_activated"):
            _safe(_where(el, "on_activated"), el.on_activated, view)
    for cls in vel_classes:
        vel = find_view_event_listener(view, cls)
        if vel is not None and hasattr(vel, "on_activated"):
            _safe(_where(vel, "on_activated"), vel.on_activated)

    def later() -> None:
        for el in listeners:
            if hasattr(el, "on_activated_async") and view.is_valid():
                _safe(_where(el, "on_activated_async"), el.on_activated_async, view)
        for cls in vel_classes:
            vel = find_view_event_listener(view, cls)
            if vel is not None and hasattr(vel, "on_activated_async"):
                _safe(_where(vel, "on_activated_async"), vel.on_activated_async)

    sublime.set_timeout_async(later)


def unload_module(m: ModuleType) -> None:
    """``plugin_unloaded`` then forget the module's commands and listeners."""
    plugin_unloaded = getattr(m, "plugin_unloaded", None)
    if plugin_unloaded is not None:
        _safe(f"{m.__name__}.plugin_unloaded", plugin_unloaded)
    plugins = m.__dict__.pop("__plugins__", None) or []
    with _lock:
        for vid, listeners in view_event_listeners.items():
            view_event_listeners[vid] = [vel for vel in listeners if type(vel) not in plugins]
        tcls = [tcl for lst in text_change_listeners.values() for tcl in lst if type(tcl) in plugins]
        for p in plugins:
            for lst in all_command_classes:
                if p in lst:
                    lst.remove(p)
            for lst in all_callbacks.values():
                if p in lst:
                    lst.remove(p)
            if p in view_event_listener_classes:
                view_event_listener_classes.remove(p)
            if p in text_change_listener_classes:
                text_change_listener_classes.remove(p)
        for cache in _instances.values():
            for cls in [c for c in cache if c in plugins]:
                del cache[cls]
    for tcl in tcls:
        if tcl.is_attached():
            tcl.detach()


# ------------------------------------------------- view/buffer attachment
def _applicable(cls: type, view: sublime.View) -> bool:
    if not _safe(_where(cls, "is_applicable"), cls.is_applicable, view.settings()):  # type: ignore[attr-defined]
        return False
    return not (_safe(_where(cls, "applies_to_primary_view_only"), cls.applies_to_primary_view_only) and not view.is_primary())  # type: ignore[attr-defined]


def _create_view_event_listeners(classes: Iterable[type], view: sublime.View) -> None:
    for cls in classes:
        if _applicable(cls, view):
            vel = _safe(_where(cls, "__init__"), cls, view)
            if vel is not None:
                with _lock:
                    view_event_listeners.setdefault(view.view_id, []).append(vel)


def check_view_event_listeners(view: sublime.View) -> None:
    with _lock:
        classes = list(view_event_listener_classes)
        current = list(view_event_listeners.get(view.view_id, []))
    for cls in classes:
        instance = next((vel for vel in current if type(vel) is cls), None)
        want = _applicable(cls, view)
        if want and instance is None:
            _create_view_event_listeners([cls], view)
        elif instance is not None and not want:
            with _lock:
                view_event_listeners[view.view_id].remove(instance)


def attach_view(view_id: int) -> None:
    view = sublime.View(view_id)
    check_view_event_listeners(view)
    view.settings().add_on_change("check_view_event_listeners", lambda: check_view_event_listeners(view))


def detach_view(view_id: int) -> None:
    with _lock:
        view_event_listeners.pop(view_id, None)
        _instances.pop(("text", view_id), None)


def attach_buffer(buffer_id: int) -> None:
    buf = sublime.Buffer(buffer_id)
    with _lock:
        classes = list(text_change_listener_classes)
    for cls in classes:
        if _safe(_where(cls, "is_applicable"), cls.is_applicable, buf):  # type: ignore[attr-defined]
            tcl = _safe(_where(cls, "__init__"), cls)
            if tcl is not None:
                tcl.attach(buf)


def check_text_change_listeners(buffer_id: int) -> None:
    """As Sublime does when a buffer takes a file (``on_associate_buffer``):
    each class is asked again, attached if it now applies and detached if
    it no longer does."""
    buf = sublime.Buffer(buffer_id)
    with _lock:
        classes = list(text_change_listener_classes)
        listeners = list(text_change_listeners.get(buffer_id, []))
    for cls in classes:
        instance = next((tcl for tcl in listeners if type(tcl) is cls), None)
        want = _safe(_where(cls, "is_applicable"), cls.is_applicable, buf)  # type: ignore[attr-defined]
        if want and instance is None:
            tcl = _safe(_where(cls, "__init__"), cls)
            if tcl is not None:
                tcl.attach(buf)
        elif instance is not None and not want:
            _safe(_where(cls, "detach"), instance.detach)


def detach_buffer(buffer_id: int) -> None:
    with _lock:
        listeners = list(text_change_listeners.pop(buffer_id, []))
    for tcl in listeners:
        if tcl.is_attached():
            tcl.detach()


def drop_window(window_id: int) -> None:
    with _lock:
        _instances.pop(("window", window_id), None)


# ------------------------------------------------------------ commands API
def _classes(kind: str) -> list[type]:
    return {"text": text_command_classes, "window": window_command_classes, "application": application_command_classes}[kind]


def _instantiate(kind: str, target: int, cls: type) -> Any:
    if kind == "text":
        return cls(sublime.View(target))
    if kind == "window":
        return cls(sublime.Window(target))
    return cls()


def find_command(kind: str, target: int, name: str) -> Command | None:
    with _lock:
        classes = list(_classes(kind))
        cache = _instances.setdefault((kind, target), {})
    for cls in classes:
        inst = cache.get(cls)
        if inst is None:
            try:
                inst = _instantiate(kind, target, cls)
            except Exception as exc:
                rex = RuntimeError(f"unable to instantiate '{cls.__module__}.{cls.__name__}'")
                rex.__cause__ = exc
                _runtime.report_exception(_where(cls, "__init__"), rex)
                continue
            with _lock:
                cache[cls] = inst
        if _safe(_where(inst, "name"), inst.name) == name:
            return inst
    return None


def command_enabled(cmd: Command, args: dict[str, Any] | None) -> bool:
    return bool(_safe(_where(cmd, "is_enabled"), cmd.is_enabled_, args))


def run_command_object(cmd: Command, edit_token: int, args: dict[str, Any] | None) -> None:
    _safe(_where(cmd, "run"), cmd.run_, edit_token, args)  # type: ignore[attr-defined]


# -------------------------------------------------------------- dispatching
def dispatch(kind: str, name: str, target: int, *args: Any, el_only: bool = False) -> None:
    if kind == "view":
        run_view_callbacks(name, target, *args, el_only=el_only)
    elif kind == "window":
        run_window_callbacks(name, target, *args)
    elif kind == "buffer" and name in TEXT_CHANGE_CALLBACKS:
        run_text_change_callbacks(name, target, *args)
    elif kind == "buffer":
        if name == "on_associate_buffer":
            check_text_change_listeners(target)
        buf = sublime.Buffer(target)
        for el in list(all_callbacks.get(name, [])):
            _safe(_where(el, name), getattr(el, name), buf)
    elif kind == "app":
        for el in list(all_callbacks.get(name, [])):
            _safe(_where(el, name), getattr(el, name), *args)


def run_view_callbacks(name: str, view_id: int, *args: Any, el_only: bool = False) -> None:
    view = sublime.View(view_id)
    for el in list(all_callbacks.get(name, [])):
        _safe(_where(el, name), getattr(el, name), view, *args)
    if el_only:
        return
    for vel in list(view_event_listeners.get(view_id, [])):
        method = getattr(vel, name, None)
        if method is not None:
            _safe(_where(vel, name), method, *args)


def run_window_callbacks(name: str, window_id: int, *args: Any) -> None:
    window = sublime.Window(window_id)
    for el in list(all_callbacks.get(name, [])):
        _safe(_where(el, name), getattr(el, name), window, *args)


def _text_changes(raw: list[Any]) -> list[sublime.TextChange]:
    return [sublime.TextChange(sublime.HistoricPosition(*a), sublime.HistoricPosition(*b), l16, l8, s) for a, b, l16, l8, s in raw]


def run_text_change_callbacks(name: str, buffer_id: int, *args: Any) -> None:
    if name.startswith("on_text_changed"):
        args = (_text_changes(args[0]),)
    for tcl in list(text_change_listeners.get(buffer_id, [])):
        method = getattr(tcl, name, None)
        if method is not None and tcl.is_attached():
            _safe(_where(tcl, name), method, *args)


def _rewrite(res: Any) -> tuple[str, Any] | None:
    if isinstance(res, tuple):
        return (res[0], res[1] if len(res) > 1 else None)
    if res:
        return (str(res), None)
    return None


def on_text_command(view_id: int, name: str, args: Any) -> tuple[str, Any] | None:
    """View listeners first, then global ones; the first rewrite wins."""
    view = sublime.View(view_id)
    for vel in list(view_event_listeners.get(view_id, [])):
        if hasattr(vel, "on_text_command"):
            res = _rewrite(_safe(_where(vel, "on_text_command"), vel.on_text_command, name, args))
            if res:
                return res
    for el in list(all_callbacks["on_text_command"]):
        res = _rewrite(_safe(_where(el, "on_text_command"), el.on_text_command, view, name, args))
        if res:
            return res
    return None


def on_window_command(window_id: int, name: str, args: Any) -> tuple[str, Any] | None:
    window = sublime.Window(window_id)
    for el in list(all_callbacks["on_window_command"]):
        res = _rewrite(_safe(_where(el, "on_window_command"), el.on_window_command, window, name, args))
        if res:
            return res
    return None


def on_query_context(view_id: int, key: str, operator: int, operand: Any, match_all: bool) -> bool | None:
    """True if any listener says so; None if no listener knew the key."""
    view = sublime.View(view_id)
    op = sublime.QueryOperator(operator)
    answered = False
    for el in list(all_callbacks["on_query_context"]):
        val = _safe(_where(el, "on_query_context"), el.on_query_context, view, key, op, operand, match_all)
        if val:
            return True
        answered = answered or val is not None
    for vel in list(view_event_listeners.get(view_id, [])):
        if hasattr(vel, "on_query_context"):
            val = _safe(_where(vel, "on_query_context"), vel.on_query_context, key, op, operand, match_all)
            if val:
                return True
            answered = answered or val is not None
    return False if answered else None


PENDING_COMPLETIONS_S = 10.0


def until_set(pending: list[Any]) -> list[Any]:
    """The items of CompletionLists made with `completions=None`: nothing
    shows until `set_completions` is called (from any thread; API
    reference); the user waits for them, a bounded while, as the popup
    does. Called off the main thread, which the lists must not block."""
    deadline = time.monotonic() + PENDING_COMPLETIONS_S
    while any(each.completions is None for each in pending) and time.monotonic() < deadline:
        time.sleep(0.01)
    return [item for each in pending for item in each.completions or []]


def on_query_completions(view_id: int, prefix: str, locations: list[int]) -> list[Any]:
    return query_completions(view_id, prefix, locations)[0]


def query_completions(view_id: int, prefix: str, locations: list[int],
                      pending: list[Any] | None = None) -> tuple[list[Any], int]:
    """Every listener's completions and the union of their flags (``INHIBIT_*``);
    the lists still to be set go to `pending` (`until_set`)."""
    view = sublime.View(view_id)
    results: list[Any] = []
    flags = 0

    def add(res: Any) -> None:
        nonlocal flags
        if isinstance(res, sublime.CompletionList):
            if res.completions is None and pending is not None:
                pending.append(res)
            results.extend(res.completions or [])
            flags |= int(res.flags)
        elif isinstance(res, tuple):
            results.extend(res[0])
            flags |= int(res[1]) if len(res) > 1 else 0
        elif isinstance(res, list):
            results.extend(res)

    for el in list(all_callbacks["on_query_completions"]):
        add(_safe(_where(el, "on_query_completions"), el.on_query_completions, view, prefix, locations))
    for vel in list(view_event_listeners.get(view_id, [])):
        if hasattr(vel, "on_query_completions"):
            add(_safe(_where(vel, "on_query_completions"), vel.on_query_completions, prefix, locations))
    return results, flags


def on_exit() -> None:
    for el in list(all_callbacks["on_exit"]):
        _safe(_where(el, "on_exit"), el.on_exit)
