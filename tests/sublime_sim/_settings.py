"""Settings hierarchies and the public ``Settings`` wrapper.

A settings object is a stack: read-only layers (built-in defaults, then each
package's file in load order) under a writable top layer (the User file plus
whatever the API set), optionally inheriting from a parent (view settings
inherit from Preferences, as in Sublime).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import _runtime

_MISSING = object()


def to_value(value: Any) -> Any:
    """Copy a value into the JSON value space settings store, or refuse it."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): to_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_value(v) for v in value]
    raise ValueError(f"value must be a JSON type, not {type(value).__name__}")


class SettingsState:
    def __init__(
        self,
        id: int,
        layers: list[dict[str, Any]] | None = None,
        parent: SettingsState | None = None,
        base_name: str | None = None,
    ) -> None:
        self.id = id
        self.layers = layers or []
        self.user: dict[str, Any] = {}
        self.parent = parent
        self.base_name = base_name
        self.callbacks: dict[str, list[Callable[[], None]]] = {}
        self.valid = True
        # A view's: the "settings" of its window's project, under the syntax
        # specific layers and above Preferences, as in Sublime's order.
        self.project: Callable[[], dict[str, Any]] | None = None

    def _project_layer(self) -> dict[str, Any]:
        return self.project() if self.project is not None else {}

    def lookup(self, key: str) -> Any:
        if key in self.user:
            return self.user[key]
        for layer in reversed(self.layers):
            if key in layer:
                return layer[key]
        project = self._project_layer()
        if key in project:
            return project[key]
        if self.parent is not None:
            return self.parent.lookup(key)
        return _MISSING

    def effective(self) -> dict[str, Any]:
        out = self.parent.effective() if self.parent is not None else {}
        out.update(self._project_layer())
        for layer in self.layers:
            out.update(layer)
        out.update(self.user)
        return out

    def depends_on(self, other: SettingsState) -> bool:
        node: SettingsState | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


class Settings:
    """A ``dict``-like object over a settings hierarchy (see module doc)."""

    def __init__(self, id: int) -> None:
        self.settings_id = id

    def __repr__(self) -> str:
        return f"Settings({self.settings_id})"

    def _get(self, key: str) -> Any:
        app = _runtime.app()
        with app.lock:
            st = app.settings.get(self.settings_id)
            found = st.lookup(key) if st is not None else _MISSING
            return found if found is _MISSING else copy.deepcopy(found)

    def __getitem__(self, key: str) -> Any:
        value = self._get(key)
        if value is _MISSING:
            raise KeyError(repr(key))
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        self.erase(key)

    def __contains__(self, key: str) -> bool:
        return self._get(key) is not _MISSING

    def to_dict(self) -> dict[str, Any]:
        app = _runtime.app()
        with app.lock:
            st = app.settings.get(self.settings_id)
            return copy.deepcopy(st.effective()) if st is not None else {}

    def setdefault(self, key: str, value: Any) -> Any:
        current = self._get(key)
        if current is not _MISSING:
            return current
        self.set(key, value)
        return self._get(key)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        items: Iterable[tuple[str, Any]]
        if isinstance(other, Settings):
            items = other.to_dict().items()
        elif isinstance(other, Mapping):
            items = other.items()
        elif hasattr(other, "keys"):
            items = ((k, other[k]) for k in other)
        else:
            items = other
        changes = {str(k): to_value(v) for k, v in items}
        changes.update({k: to_value(v) for k, v in kwargs.items()})
        _runtime.app().settings_write(self.settings_id, changes, [])

    def get(self, key: str, default: Any = None) -> Any:
        value = self._get(key)
        return default if value is _MISSING else value

    def has(self, key: str) -> bool:
        return key in self

    def set(self, key: str, value: Any) -> None:
        _runtime.app().settings_write(self.settings_id, {key: to_value(value)}, [])

    def erase(self, key: str) -> None:
        _runtime.app().settings_write(self.settings_id, {}, [key])

    def add_on_change(self, tag: str, callback: Callable[[], None]) -> None:
        app = _runtime.app()
        with app.lock:
            st = app.settings.get(self.settings_id)
            if st is not None:
                st.callbacks.setdefault(tag, []).append(callback)

    def clear_on_change(self, tag: str) -> None:
        app = _runtime.app()
        with app.lock:
            st = app.settings.get(self.settings_id)
            if st is not None:
                st.callbacks.pop(tag, None)
