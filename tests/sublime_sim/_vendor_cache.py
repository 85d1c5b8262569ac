"""The package's vendored libraries, kept from one test's host for the next.

Every test's host imports the package afresh, and with it aiohttp, the ACP
SDK and mcp-types from its `_vendor` folder: about 0.8 s of each simulator
test, spent executing the same third-party modules again. When a host
closes, its vendored modules are kept here; the next host that imports one
of them (from the same folder, through a symlink to the same build) gets
the kept module objects, with their paths pointed at its own folder, instead
of running them again. The package's own modules are always imported anew.

What the tests observe stays as it was:
- nothing enters `sys.modules` before the package imports it: a library is
  handed over when it is imported, with the vendored libraries its modules
  refer to (aiohttp's yarl and multidict), never the others (the ACP SDK
  stays unloaded until the chat loads it);
- finders a test puts first on `sys.meta_path` see every import as before;
- within one host a library is handed over once: a reload (Sublime's, Package
  Control's upgrade) imports it anew, and the old copy is freed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

VENDOR = "_vendor"


class _Handover(importlib.abc.Loader):
    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        pass  # already executed, by the host that first imported it


class VendorCache(importlib.abc.MetaPathFinder):
    """Kept vendored modules, by library (`aiohttp`), for one package folder's build."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._source = ""  # the real path of the `_vendor` folder the modules came from
        self._libraries: dict[str, dict[str, ModuleType]] = {}  # "aiohttp" -> {"aiohttp.web": module}
        self._needs: dict[str, set[str]] = {}  # library -> the other libraries its modules refer to

    # --- when a host closes -------------------------------------------------

    def keep(self, package: str) -> None:
        """Keep the vendored modules of `package` now in `sys.modules` (before
        the host drops them); the libraries it did not import stay as kept."""
        prefix = f"{package}.{VENDOR}."
        vendor = sys.modules.get(f"{package}.{VENDOR}")
        paths = list(getattr(vendor, "__path__", None) or [])
        if not paths:
            return
        source = os.path.realpath(paths[0])
        found: dict[str, dict[str, ModuleType]] = {}
        for name, module in list(sys.modules.items()):
            if name.startswith(prefix) and module is not None:
                relative = name[len(prefix):]
                found.setdefault(relative.partition(".")[0], {})[relative] = module
        with self._lock:
            if source != self._source:
                self._libraries, self._needs, self._source = {}, {}, source
            self._libraries.update(found)
            for library in found:
                self._needs[library] = _referred_libraries(found[library], prefix) - {library}

    # --- when a host imports ------------------------------------------------

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        package, _, rest = fullname.partition(f".{VENDOR}.")
        if not rest or "." in rest or not path:
            return None  # only a library's top module hands the library over
        with self._lock:
            if rest not in self._libraries or os.path.realpath(path[0]) != self._source:
                return None
            handed = self._hand_over(package, rest, path[0])
        module = handed.get(rest)
        if module is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Handover(module), origin=getattr(module, "__file__", None),
                                              is_package=hasattr(module, "__path__"))

    def _hand_over(self, package: str, library: str, vendor_dir: str) -> dict[str, ModuleType]:
        """Put `library` and what it refers to into `sys.modules` (all but its
        top module, which the import itself puts there); forget them here."""
        wanted, pending = set(), [library]
        while pending:
            each = pending.pop()
            if each not in wanted and each in self._libraries:
                wanted.add(each)
                pending.extend(self._needs.get(each, ()))
        handed: dict[str, ModuleType] = {}
        for each in wanted:
            for relative, module in self._libraries.pop(each).items():
                _repoint(module, os.path.join(vendor_dir, *relative.split(".")))
                handed[relative] = module
        parent = sys.modules.get(f"{package}.{VENDOR}")
        for relative, module in sorted(handed.items()):
            name = f"{package}.{VENDOR}.{relative}"
            if relative == library or name in sys.modules:
                continue
            sys.modules[name] = module
            if "." not in relative and parent is not None:
                setattr(parent, relative, module)
        return handed


def _referred_libraries(modules: dict[str, ModuleType], prefix: str) -> set[str]:
    """The vendored libraries whose modules, classes, functions or instances
    the globals of `modules` hold."""
    libraries: set[str] = set()
    for module in modules.values():
        for value in list(vars(module).values()):
            for name in (_module_name(value), getattr(type(value), "__module__", None)):
                if isinstance(name, str) and name.startswith(prefix):
                    libraries.add(name[len(prefix):].partition(".")[0])
    return libraries


def _module_name(value: Any) -> object:
    return value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)


def _repoint(module: ModuleType, location: str) -> None:
    """Point a kept module's paths at the importing host's folder: the folder
    it was first imported from is gone with its host."""
    if hasattr(module, "__path__"):
        module.__path__ = [location]
        file = os.path.join(location, os.path.basename(getattr(module, "__file__", "") or "__init__.py"))
    else:
        file = location + os.path.splitext(getattr(module, "__file__", "") or ".py")[1]
    if getattr(module, "__file__", None):
        module.__file__ = file
    spec = getattr(module, "__spec__", None)
    if spec is not None:
        spec.origin = file
        if spec.submodule_search_locations is not None:
            spec.submodule_search_locations = [location]


CACHE = VendorCache()


def install() -> None:
    """Ask the cache before the standard finders (idempotent)."""
    if CACHE not in sys.meta_path:
        finders = sys.meta_path
        at = next((i for i, finder in enumerate(finders) if finder is importlib.machinery.PathFinder), len(finders))
        finders.insert(at, CACHE)
