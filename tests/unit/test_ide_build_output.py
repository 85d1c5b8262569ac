"""`get_build_output`'s parsing as Sublime's build panel finds errors, its
bounds against a hostile build, and `open_file`'s rate limit."""

from __future__ import annotations

from qwencompanion_src.core.ide_tools.build_output import MAX_ERRORS, MAX_LINES, build_output
from qwencompanion_src.core.ide_tools.rate_limit import RateLimit

# Default's Python build system: file_regex "^[ ]*File \"(...*?)\", line ([0-9]*)"
PYTHON_FILE_REGEX = r'^[ ]*File "(...*?)", line ([0-9]*)'
GCC_FILE_REGEX = r"^(..[^:]*):([0-9]+):?([0-9]+)?:? (.*)$"


def test_errors_are_read_with_the_build_systems_file_regex_and_base_dir() -> None:
    output = "src/main.c:3:5: error: expected ';'\nlib/x.c:10: warning: unused\nok\n[Finished in 0.1s]\n"
    answer = build_output(output, GCC_FILE_REGEX, None, "/home/ada/project")
    assert answer["errors"] == [
        {"abspath": "/home/ada/project/src/main.c", "line": 3, "column": 5, "message": "error: expected ';'"},
        {"abspath": "/home/ada/project/lib/x.c", "line": 10, "column": None, "message": "warning: unused"},
    ]
    assert answer["output"] == output.rstrip("\n") and "note" not in answer


def test_a_line_regex_takes_the_file_named_above() -> None:
    output = "In /abs/file.ts\n  12,4 bad type\n  14,1 worse\n"
    answer = build_output(output, r"^In (\S+)$", r"^\s+(\d+),(\d+) (.*)$", "")
    assert [(e["abspath"], e["line"], e["column"], e["message"]) for e in answer["errors"]] == [
        ("/abs/file.ts", None, None, ""), ("/abs/file.ts", 12, 4, "bad type"), ("/abs/file.ts", 14, 1, "worse"),
    ]


def test_python_tracebacks() -> None:
    output = 'Traceback (most recent call last):\n  File "/p/app.py", line 7, in <module>\nNameError: x\n'
    [error] = build_output(output, PYTHON_FILE_REGEX, None, "/p")["errors"]
    assert (error["abspath"], error["line"]) == ("/p/app.py", 7)


def test_a_hostile_build_is_bounded() -> None:
    lines = [f"f{i}.c:{i}:1: error {'x' * 2000}" for i in range(5000)]
    answer = build_output("\n".join(lines), GCC_FILE_REGEX, None, "/b")
    assert len(answer["errors"]) == MAX_ERRORS
    assert len(answer["output"]) <= 48 * 1024
    assert answer["output"].endswith("…") and "lines are left out" in answer["note"]
    assert f"the first {5000 - MAX_LINES} lines" in answer["note"]


def test_a_catastrophic_file_regex_is_not_run() -> None:
    answer = build_output("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n", r"^(a+)+$", None, "")
    assert answer["errors"] == [] and "file_regex was not used" in answer["note"]


def test_open_file_is_limited_to_ten_a_minute() -> None:
    now = [0.0]
    limit = RateLimit(10, 60.0, clock=lambda: now[0])
    assert [limit.take() for _ in range(10)] == [None] * 10
    now[0] = 30.0
    assert limit.take() == 30.0  # refused: the first one leaves the window in 30 s
    now[0] = 60.0
    assert limit.take() is None
