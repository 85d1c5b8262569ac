"""`for_terminus`: whatever the package hands Terminus comes out of
`sublime.expand_variables` (the simulator's, tests/sublime_sim) as built."""

from __future__ import annotations

import random

from qwencompanion_src.core.cli.terminal import for_terminus, terminus_literal
from tests.sublime_sim._expand_variables import expand

VARIABLES = {"folder": "/w", "HOME": "/home/me", "file": "/w/a.py"}


def test_any_text_survives_the_expansion() -> None:
    rng = random.Random(5303)
    alphabet = "$\\{}:/ab_1\"'%"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        assert expand(terminus_literal(text), VARIABLES) == text, text


def test_only_what_terminus_expands_is_escaped() -> None:
    args = {"cmd": ["sh", "-lc", 'd="${QWEN_HOME:-$HOME/.qwen}"', 3], "shell_cmd": "echo $HOME", "cwd": "C:\\\\srv",
            "title": "$x", "env": {"A": "$HOME"}, "tag": "$t", "panel_name": "$p"}
    escaped = for_terminus(args)
    assert escaped["cmd"] == ["sh", "-lc", 'd="\\${QWEN_HOME:-\\$HOME/.qwen}"', 3]
    assert escaped["shell_cmd"] == "echo \\$HOME" and escaped["cwd"] == "C:\\\\\\\\srv" and escaped["title"] == "\\$x"
    assert {key: escaped[key] for key in ("env", "tag", "panel_name")} == {"env": {"A": "$HOME"}, "tag": "$t",
                                                                         "panel_name": "$p"}
