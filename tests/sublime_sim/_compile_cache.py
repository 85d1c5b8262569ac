"""Compiled modules kept for the next host that imports the same source.

Every test's host loads the package afresh from a folder of its own and
writes no bytecode (a quick same-size edit must not reuse a stale .pyc), so
every test compiled every module of the package again: a large part of each
load. The code is kept by the source's bytes, so a changed source compiles
again whatever its size or time, and is given the importing file's name, as
``compile()`` would have (tracebacks and ``co_filename`` name that file).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
from types import CodeType
from typing import Any

_compiled: dict[tuple[bytes, int], CodeType] = {}
_original: Any = None


def _renamed(code: CodeType, filename: str) -> CodeType:
    consts = tuple(_renamed(const, filename) if isinstance(const, CodeType) else const for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _source_to_code(self: Any, data: bytes | str, path: str, *, _optimize: int = -1) -> CodeType:
    source = data if isinstance(data, bytes) else data.encode()
    key = (hashlib.sha256(source).digest(), _optimize)
    code = _compiled.get(key)
    if code is None:
        code = _original(self, data, path, _optimize=_optimize)
        _compiled[key] = code
    return code if code.co_filename == path else _renamed(code, path)


def install() -> None:
    """Compile each source file of this process once (idempotent)."""
    global _original
    if _original is None:
        _original = importlib.machinery.SourceFileLoader.source_to_code
        importlib.machinery.SourceFileLoader.source_to_code = _source_to_code  # type: ignore[method-assign]
