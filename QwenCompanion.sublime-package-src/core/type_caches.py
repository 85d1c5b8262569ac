"""Letting go of an unloaded copy of the package: caches of the Python
runtime and of pydantic (shared by every package of the plugin host) hold our
classes, and through them every module of that copy.

Sublime's reload, disable and Package Control's upgrade import the package
anew in the same plugin host; without this, each one kept the previous
copy's vendored ACP schema and everything it reaches (~35,000 objects), and
every full garbage collection after it walked them again.
"""

from __future__ import annotations

import sys
import typing


def forget_types_of(package: str) -> None:
    """Drop what `typing` and pydantic cache of `package`'s classes (any thread)."""
    # `typing`'s subscription caches (List[X], Union[...], Literal[...]) are
    # functools.lru_caches with no per-entry removal: each is cleared whole,
    # which costs the other packages a re-subscription at most.
    for clear_cache in getattr(typing, "_cleanups", ()):
        clear_cache()
    _forget_generic_models(package)


def _forget_generic_models(package: str) -> None:
    """pydantic's parametrised models (`Request[Params]`): its cache is weak in
    its values only, and its keys hold the generic classes they came from."""
    generics = sys.modules.get("pydantic._internal._generics")
    cache = getattr(generics, "_GENERIC_TYPES_CACHE", None)
    if cache is None:
        return
    marker = f"{package}."
    for _ in range(3):  # another thread may add a model meanwhile: read the keys again
        try:
            ours = [key for key in list(cache.keys()) if marker in repr(key)]
        except RuntimeError:
            continue
        for key in ours:
            cache.pop(key, None)
        return
