"""Shared test set-up: the package source is importable as `qwencompanion_src`.

The built package is loaded by the simulated host as `QwenCompanion`; the
source gets another name so the two never meet in `sys.modules`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "QwenCompanion.sublime-package-src"
SOURCE_PACKAGE = "qwencompanion_src"


def _register_source_package() -> None:
    if SOURCE_PACKAGE in sys.modules:
        return
    spec = importlib.util.spec_from_loader(SOURCE_PACKAGE, loader=None, is_package=True)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__path__ = [str(SOURCE)]
    sys.modules[SOURCE_PACKAGE] = module


_register_source_package()
