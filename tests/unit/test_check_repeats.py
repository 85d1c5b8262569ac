"""tools/check_repeats.py: the repeated-block check `make lint` runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCK = """\
def handle(request):
    name = request["name"]
    value = compute(name)
    if value is None:
        raise LookupError(name)
    log(name, value)
    return value
"""


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qwen_tools_check_repeats", ROOT / "tools" / "check_repeats.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


check_repeats = _load()


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, list[str]]:
    status = check_repeats.main([str(tmp_path / path) for path in paths], root=tmp_path)
    return status, capsys.readouterr().out.splitlines()


def write(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_block_in_two_files_fails_and_names_both_places(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "src/a.py", "x = 1\n\n" + BLOCK)
    write(tmp_path, "src/b.py", BLOCK)
    status, out = run(tmp_path, capsys, "src")
    assert status == 1
    assert out[0] == "src/a.py:3-9 ~ src/b.py:1-7 (7 lines)"  # one row at the run's full length
    assert len(out) == 2 and "1 block(s)" in out[1]


def test_five_shared_lines_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    five = "".join(BLOCK.splitlines(keepends=True)[:5])
    write(tmp_path, "src/a.py", five + "a = 1\n")
    write(tmp_path, "src/b.py", five + "b = 2\n")
    assert run(tmp_path, capsys, "src") == (0, [])


def test_blank_lines_comments_and_whitespace_neither_hide_a_repeat_nor_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spread = BLOCK.replace("    value = compute(name)\n", "\n    # worked out here\n    value  =  compute(name)\n\n")
    write(tmp_path, "src/a.py", BLOCK)
    write(tmp_path, "src/b.py", spread)
    status, out = run(tmp_path, capsys, "src")
    assert status == 1 and out[0] == "src/a.py:1-7 ~ src/b.py:1-10 (7 lines)"


def test_imports_and_lone_punctuation_do_not_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shared = (
        "import os\nimport sys\nfrom typing import (\n    Any,\n    Callable,\n)\nfrom json import loads\n"
        "CALLS = [\n    (\n        1,\n    ),\n]\n"
    )
    write(tmp_path, "src/a.py", shared + "a = 1\n")
    write(tmp_path, "src/b.py", shared + "b = 2\n")
    assert run(tmp_path, capsys, "src") == (0, [])  # two lines count: `CALLS = [` and `1,`


def test_a_block_twice_in_one_file_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "src/a.py", BLOCK + "\n" + BLOCK.replace("handle", "handle_again"))
    status, out = run(tmp_path, capsys, "src")
    assert status == 1 and out[0] == "src/a.py:2-7 ~ src/a.py:10-15 (6 lines)"


def test_a_run_of_equal_lines_is_no_repeat_of_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "src/a.py", "count += 1\n" * 11)
    assert run(tmp_path, capsys, "src") == (0, [])
    write(tmp_path, "src/a.py", "count += 1\n" * 12)
    assert run(tmp_path, capsys, "src")[0] == 1


def test_by_default_the_tests_and_the_vendored_libraries_are_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("QwenCompanion.sublime-package-src/_vendor/lib/a.py", "tests/a.py", "tests/b.py"):
        write(tmp_path, name, BLOCK)
    write(tmp_path, "QwenCompanion.sublime-package-src/core/a.py", BLOCK)
    assert run(tmp_path, capsys) == (0, [])
    write(tmp_path, "bench/b.py", BLOCK)
    write(tmp_path, "tools/c.py", BLOCK)
    status, out = run(tmp_path, capsys)
    assert status == 1
    assert out[:3] == [
        "QwenCompanion.sublime-package-src/core/a.py:1-7 ~ bench/b.py:1-7 (7 lines)",
        "QwenCompanion.sublime-package-src/core/a.py:1-7 ~ tools/c.py:1-7 (7 lines)",
        "bench/b.py:1-7 ~ tools/c.py:1-7 (7 lines)",
    ]
