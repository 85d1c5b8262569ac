"""Package loading the way Sublime's plugin host does it.

``Packages/<Name>/`` becomes the Python package ``<Name>`` (``__path__`` is
that folder; an ``__init__.py`` is executed if present), every top-level
``*.py`` file is imported as the plugin module ``<Name>.<stem>`` in sorted
order, and each is handed to ``sublime_plugin.load_module``. Subfolders are
ordinary subpackages that plugin modules import relatively.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path

from . import _compile_cache, _runtime, _vendor_cache, sublime_plugin

_compile_cache.install()
_vendor_cache.install()


class PackageLoader:
    def __init__(self, packages_dir: Path, imported: Callable[[str], None] = lambda package: None) -> None:
        self.packages_dir = packages_dir
        self._on_import = imported  # a plugin module of the package was imported, before it starts
        self.loaded: dict[str, list[str]] = {}  # package -> plugin module names
        # Every package this host imported, disabled ones too (their modules stay
        # imported, as in Sublime): the host forgets them all when it closes.
        self.imported: set[str] = set()

    def _package_module(self, name: str, folder: Path) -> types.ModuleType:
        init = folder / "__init__.py"
        if init.is_file():
            spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        module = importlib.util.module_from_spec(spec)
        module.__path__ = [str(folder)]
        sys.modules[name] = module
        return module

    def plugin_files(self, name: str) -> list[Path]:
        folder = self.packages_dir / name
        return sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")

    def load(self, name: str, at_startup: bool = True) -> list[str]:
        """Import the package's plugins (on the main thread); returns their module names.

        ``at_startup``: as when Sublime starts with the package installed, every
        plugin module is imported and registered first and ``plugin_loaded``
        runs afterwards for all of them. Otherwise each module is imported and
        started in turn, as when a package is installed or reloaded at run time.
        """
        folder = self.packages_dir / name
        if not folder.is_dir():
            raise FileNotFoundError(f"no package folder {folder}")
        if name in self.loaded:
            raise RuntimeError(f"package {name!r} is already loaded")
        # A package loads afresh, as at Sublime's start: a module of it that an
        # earlier host's thread imported after that host forgot the package
        # would otherwise stand in for the new one's (`from . import diffs`
        # finds the stale submodule and never sets it on the new parent).
        for modname in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[modname]
        importlib.invalidate_caches()
        # No bytecode: a quick same-size edit of a plugin must not reuse a stale .pyc.
        previous = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        names: list[str] = []
        registered: list[sublime_plugin.LoadedModule] = []
        self.loaded[name] = names
        self.imported.add(name)
        try:
            try:
                self._package_module(name, folder)
            except Exception as exc:
                _runtime.report_exception(f"importing package {name}", exc)
                return names
            for path in self.plugin_files(name):
                modname = f"{name}.{path.stem}"
                try:
                    module = importlib.import_module(modname)
                except Exception as exc:
                    _runtime.report_exception(f"loading plugin {modname}", exc)
                    continue
                names.append(modname)
                self._on_import(name)
                if at_startup:
                    registered.append(sublime_plugin.register_module(module))
                else:
                    sublime_plugin.load_module(module)
        finally:
            sys.dont_write_bytecode = previous
        sublime_plugin.start_modules(registered)
        return names

    def unload_plugins(self, name: str) -> None:
        """``plugin_unloaded`` and unregistering, for each plugin module of the package."""
        for modname in self.loaded.get(name, []):
            module = sys.modules.get(modname)
            if module is not None:
                sublime_plugin.unload_module(module)

    def drop_modules(self, name: str, keep_libraries: bool = False) -> None:
        """Forget the package: every ``sys.modules`` entry ``name`` and ``name.*``
        (its vendored libraries kept for the next host when the host closes)."""
        if keep_libraries:
            _vendor_cache.CACHE.keep(name)
        self.loaded.pop(name, None)
        for modname in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[modname]
            typing._overload_registry.pop(modname, None)  # type: ignore[attr-defined]
        # typing's subscription caches (`Generic[...]`, 128 entries a function)
        # hold classes of the dropped modules, and through them every module of
        # that copy of the package: megabytes a test, gigabytes a suite. The
        # plugin host never frees a package this way; its process ends instead.
        for clear_cache in typing._cleanups:  # type: ignore[attr-defined]
            clear_cache()
        _forget_generic_models(name)
        importlib.invalidate_caches()

    def unload(self, name: str) -> None:
        self.unload_plugins(name)
        self.drop_modules(name)

    def reload_plugins(self, name: str) -> None:
        """As Sublime reloads a package at run time (a plugin saved, the package
        enabled again or upgraded): ``reload_plugin`` of each plugin module, which
        re-imports that module only. Every other module of the package stays in
        ``sys.modules`` as it was."""
        importlib.invalidate_caches()
        previous = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            for path in self.plugin_files(name):
                modname = f"{name}.{path.stem}"
                try:
                    sublime_plugin.reload_plugin(modname)
                except Exception as exc:
                    _runtime.report_exception(f"reloading plugin {modname}", exc)
                    continue
                if modname not in self.loaded.setdefault(name, []):
                    self.loaded[name].append(modname)
        finally:
            sys.dont_write_bytecode = previous

    def disable(self, name: str) -> None:
        """As Sublime disables a package (``ignored_packages``): ``unload_plugin``
        of each plugin module; the package's submodules stay cached."""
        for modname in self.loaded.pop(name, []):
            sublime_plugin.unload_plugin(modname)


def _forget_generic_models(package: str) -> None:
    """Drop pydantic's parametrised models (`Request[Params, Method]`) of the
    package: its cache keys hold the generic classes strongly, and they keep
    that copy of the package's models alive after its modules are dropped."""
    generics = sys.modules.get("pydantic._internal._generics")
    cache = getattr(generics, "_GENERIC_TYPES_CACHE", None)
    if cache is None:
        return
    marker = f"{package}."
    for key in [key for key in list(cache.keys()) if marker in repr(key)]:
        cache.pop(key, None)
