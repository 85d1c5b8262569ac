"""The simulator's compile cache (_compile_cache): a source compiled once is
reused for the same bytes at any path, named for the file that imports it,
and never for a changed source."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

import pytest

from tests.sublime_sim import _compile_cache

SOURCE = "def outer():\n    def inner():\n        raise ValueError('from inner')\n    return inner\n\nVALUE = 'one'\n"


def imported(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as the simulator loads packages
    _compile_cache.install()


def test_the_same_source_at_two_paths_names_each_its_own_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "plugin.py", tmp_path / "b" / "plugin.py"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(SOURCE)
    one, two = imported(first, "cache_probe_a"), imported(second, "cache_probe_b")
    assert one.outer.__code__.co_filename == str(first)
    assert two.outer.__code__.co_filename == str(second)
    assert two.outer().__code__.co_filename == str(second)  # nested code too
    with pytest.raises(ValueError) as raised:
        two.outer()()
    assert traceback.extract_tb(raised.value.__traceback__)[-1].filename == str(second)


def test_a_same_size_edit_is_compiled_again(tmp_path: Path) -> None:
    path = tmp_path / "plugin.py"
    path.write_text(SOURCE)
    assert imported(path, "cache_probe_c").VALUE == "one"
    edited = SOURCE.replace("'one'", "'two'")
    assert len(edited) == len(SOURCE)
    path.write_text(edited)
    assert imported(path, "cache_probe_d").VALUE == "two"
