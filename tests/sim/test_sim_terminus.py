"""The simulator's `sublime.expand_variables` and the stand-in Terminus
(tests/support/terminus.py) do what real Sublime Text and Terminus do: a
`$name` the window does not know becomes "", `\\$` is a `$`, `\\\\` one
backslash; Terminus expands the command it builds (a `shell_cmd` too), the
folder and the title, never `env`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.support.terminus import install_terminus, terminus_calls, terminus_records

WAIT = 15.0


def test_unknown_variables_become_empty_and_known_ones_their_value(sim_host: SimulatedHost) -> None:
    expand = sim_host.sublime.expand_variables
    variables = {"folder": "/w", "name": "Foo"}
    assert expand("cd $folder && echo $HOME ${QWEN_HOME} $1", variables) == "cd /w && echo   "
    assert expand("d=${QWEN_HOME:-$HOME/.qwen}/ide", variables) == "d=-/.qwen/ide"  # a shell default, mangled
    assert expand("${project_path:${folder}}/x ${name:dflt} ${nope:dflt}", variables) == "/w/x Foo dflt"
    assert expand("price: $ 5, ${ open", variables) == "price: $ 5, ${ open"  # no name: left as written
    assert expand({"k": ["$name", 3]}, variables) == {"k": ["Foo", 3]}


def test_a_backslash_escapes_only_a_dollar_or_another_backslash(sim_host: SimulatedHost) -> None:
    expand = sim_host.sublime.expand_variables
    assert expand("\\$HOME \\${folder}", {"folder": "/w"}) == "$HOME ${folder}"
    # sublime_text#1878: n backslashes give ceil(n / 2)
    assert [len(expand("\\" * n, {})) for n in range(1, 10)] == [1, 1, 2, 2, 3, 3, 4, 4, 5]
    assert expand("C:\\Users\\me \\\\server\\share", {}) == "C:\\Users\\me \\server\\share"
    assert expand("\\\\$folder", {"folder": "/w"}) == "\\/w"


def test_a_field_substitutes_its_value_with_a_regex(sim_host: SimulatedHost) -> None:
    expand = sim_host.sublime.expand_variables
    variables = {"file": "/w/a.php", "file_name": "a.b.c"}
    assert expand("${file/\\.php/\\.txt/}", variables) == "/w/a.txt"
    assert expand("${file_name/\\./_/g} ${file_name/\\./_/}", variables) == "a_b_c a_b.c"
    assert expand("${file/(\\w+)\\.php$/$1.md/}", variables) == "/w/a.md"


@pytest.fixture
def terminus(sim_host: SimulatedHost, tmp_path: Path) -> Iterator[tuple[SimulatedHost, Path]]:
    record = tmp_path / "terminus.jsonl"
    install_terminus(sim_host, record)
    yield sim_host, record


def opened(host: SimulatedHost, record: Path, args: dict[str, Any]) -> dict[str, Any]:
    host.run_on_main(lambda: host.window.run_command("terminus_open", args))
    return dict(host.wait_for(lambda: (terminus_records(record) or [None])[-1], timeout=WAIT))


def test_the_stand_in_runs_a_shell_cmd_through_bash_with_the_variables_expanded(
        terminus: tuple[SimulatedHost, Path], tmp_path: Path) -> None:
    host, record = terminus
    call = opened(host, record, {"shell_cmd": "echo $HOME \\$HOME ${platform}", "cwd": str(tmp_path),
                                 "title": "$HOME · \\$x", "env": {"A": "$HOME"}, "tag": "t"})
    assert call["run"] == {"cmd": ["/usr/bin/env", "bash", "-c", "echo  $HOME Linux"], "cwd": str(tmp_path),
                           "title": " · $x"}
    assert call["env"] == {"A": "$HOME"}  # Terminus passes env on as it is


def test_the_stand_in_expands_each_word_of_a_cmd_and_the_folder(terminus: tuple[SimulatedHost, Path]) -> None:
    host, record = terminus
    call = opened(host, record, {"cmd": ["sh", "-lc", 'd="$d"; \\$d \\\\n'], "cwd": "${packages}"})
    assert call["run"]["cmd"] == ["sh", "-lc", 'd=""; $d \\n']
    assert call["run"]["cwd"] == str(host.packages_dir)


def test_the_stand_in_refuses_both_a_cmd_and_a_shell_cmd(terminus: tuple[SimulatedHost, Path]) -> None:
    host, record = terminus
    host.run_on_main(lambda: host.window.run_command("terminus_open", {"cmd": ["a"], "shell_cmd": "b"}))
    host.wait_idle()
    assert terminus_calls(record) == []
    assert any("both `cmd` are `shell_cmd`" in str(error) for error in host.errors)
    host.clear_errors()


@pytest.mark.real_platform("win32")
def test_on_windows_a_shell_cmd_is_split_as_terminus_splits_it_and_run_by_cmd_exe(
        packages_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMSPEC", "C:\\Windows\\system32\\cmd.exe")
    host = SimulatedHost(packages_dir, platform="windows")
    try:
        record = tmp_path / "terminus.jsonl"
        install_terminus(host, record)
        call = opened(host, record, {"shell_cmd": 'qwen --mcp-config "C:\\\\Users\\\\me\\\\a b.json" %X% $y'})
        assert call["run"]["cmd"] == ["C:\\Windows\\system32\\cmd.exe", "/c", "qwen", "--mcp-config",
                                      "C:\\Users\\me\\a b.json", "%X%", ""]
    finally:
        host.close()
