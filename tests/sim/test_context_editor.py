"""Editor context end to end: the built package in the simulated editor, and
CLIs connected to its MCP servers over real HTTP (spec section 4).

Each test loads dist/QwenCompanion (``make build``) into a temporary Packages
folder with HOME and QWEN_HOME in a temporary directory, finds the server in
the lock file and reads `ide/contextUpdate` notifications from the SSE stream
as the CLI does.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim.sublime import Region, View
from tests.support.editor import Editor, open_editor
from tests.support.mcp_client import open_files

MAX_TEXT = 16 * 1024


def paths(files: list[dict[str, Any]]) -> list[str]:
    return [f["path"] for f in files]


def active(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((f for f in files if f.get("isActive")), None)


def check_shape(files: list[dict[str, Any]]) -> None:
    """The rules every payload keeps, whatever happened."""
    assert len(files) <= 10
    assert len(set(paths(files))) == len(files)
    stamps = [f["timestamp"] for f in files]
    assert stamps == sorted(stamps, reverse=True)
    assert all(abs(s - time.time() * 1000) < 600_000 for s in stamps)  # unix ms, not seconds
    for i, f in enumerate(files):
        assert os.path.isabs(f["path"]) and os.path.isfile(f["path"])
        if f.get("isActive"):
            assert i == 0
        else:
            assert set(f) == {"path", "timestamp"}
        if "selectedText" in f:
            assert len(f["selectedText"].encode("utf-8")) <= MAX_TEXT


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    """Files are written to tmp_path/work, outside any window folder; the test loads the package."""
    with open_editor(tmp_path, monkeypatch, workspace=tmp_path / "project", load=False) as editor:
        yield editor
        editor.host.assert_no_errors()


# --- when the context is sent ---------------------------------------------------


def test_current_context_is_pushed_when_the_stream_opens(editor: Editor) -> None:
    editor.load()
    editor.open("a.py")
    b = editor.open("b.py")
    editor.host.wait_idle()
    cli = editor.cli()
    files = open_files(cli.next_context())
    check_shape(files)
    assert paths(files) == [str(b.file_name()), str(editor.workspace / "a.py")]
    assert files[0]["isActive"] is True and files[0]["cursor"] == {"line": 1, "character": 1}


def test_views_open_before_the_server_starts_are_sent_at_once(editor: Editor) -> None:
    a = editor.open("a.py")
    b = editor.open("b.py")
    editor.user.focus(a)
    editor.load()
    cli = editor.cli()
    files = open_files(cli.next_context())  # the very first push already knows them
    check_shape(files)
    assert paths(files) == [a.file_name(), b.file_name()]
    assert active(files) == files[0]


def test_every_session_gets_every_change_and_identical_ones_are_not_resent(editor: Editor) -> None:
    editor.load()
    view = editor.open("a.py", "one\ntwo\n")
    first, second = editor.cli(), editor.cli()
    for cli in (first, second):
        cli.wait_files(lambda fs: bool(fs) and fs[0]["cursor"] == {"line": 1, "character": 1})
    editor.user.click(view, 5)
    for cli in (first, second):
        cli.wait_files(lambda fs: fs[0]["cursor"] == {"line": 2, "character": 2})
    editor.user.click(view, 5)  # same place
    editor.user.focus(view)  # already focused
    assert first.contexts_within(0.3) == [] and second.contexts_within(0) == []


def test_a_burst_of_cursor_moves_becomes_one_notification(editor: Editor) -> None:
    editor.load()
    view = editor.open("a.py", "x" * 200 + "\n")
    cli = editor.cli()
    cli.wait_files(lambda fs: bool(fs))
    assert cli.contexts_within(0.2) == []
    moments = []
    for point in range(1, 101):
        editor.user.click(view, point)
        moments.append(time.monotonic())
    last_click = {"line": 1, "character": 101}
    updates = [open_files(cli.next_context())]
    while updates[-1][0]["cursor"] != last_click:  # up to the last click's, however late a loaded machine sends it
        updates.append(open_files(cli.next_context()))
    updates += [open_files(c) for c in cli.contexts_within(0.3)]  # and none after it
    for files in updates:
        check_shape(files)
    assert updates[-1][0]["cursor"] == last_click
    # The 50 ms debounce: one update, unless the machine stalled a move by nearly that long.
    stalls = sum(1 for a, b in itertools.pairwise(moments) if b - a > 0.04)
    assert len(updates) <= 1 + stalls, f"{len(updates)} updates, {stalls} stalls"


def test_debounce_is_a_live_setting(editor: Editor) -> None:
    editor.load()
    view = editor.open("a.py", "abcdef\n")
    cli = editor.cli()
    cli.wait_files(lambda fs: bool(fs))
    editor.settings({"context_debounce_ms": 600})
    editor.user.click(view, 3)
    started = time.monotonic()
    files = open_files(cli.next_context())
    assert time.monotonic() - started >= 0.5
    assert files[0]["cursor"] == {"line": 1, "character": 4}


# --- the payload ---------------------------------------------------------------


def test_files_are_ordered_by_last_focus(editor: Editor) -> None:
    editor.load()
    a, b, c = (editor.open(n) for n in ("a.py", "b.py", "c.py"))
    cli = editor.cli()
    editor.user.focus(a)
    files = cli.wait_files(lambda fs: paths(fs)[:1] == [a.file_name()])
    check_shape(files)
    assert paths(files) == [a.file_name(), c.file_name(), b.file_name()]
    editor.user.focus(b)
    files = cli.wait_files(lambda fs: paths(fs)[:1] == [b.file_name()])
    assert paths(files) == [b.file_name(), a.file_name(), c.file_name()]
    check_shape(files)
    assert files[0]["timestamp"] > files[1]["timestamp"] > files[2]["timestamp"]


def test_at_most_ten_files_most_recent_first(editor: Editor) -> None:
    editor.load()
    views = [editor.open(f"f{i:02}.py") for i in range(12)]
    cli = editor.cli()
    files = open_files(cli.next_context())
    check_shape(files)
    assert paths(files) == [v.file_name() for v in reversed(views[2:])]


def test_positions_are_one_based_in_utf16_units_with_tabs_as_one(editor: Editor) -> None:
    editor.load()
    text = "first\n\tä😀x = 1\n"
    view = editor.open("u.py", text)
    cli = editor.cli()
    after_x = text.index("x")  # a code point offset, as Sublime counts points
    editor.user.click(view, after_x + 1)
    files = cli.wait_files(lambda fs: fs[0]["cursor"]["line"] == 2)
    # \t, ä, 😀 (a surrogate pair in JavaScript) and x: 5 UTF-16 units, 1-based: 6.
    assert files[0]["cursor"] == {"line": 2, "character": 6}
    editor.user.click(view, text.index("\t"))
    files = cli.wait_files(lambda fs: fs[0]["cursor"] == {"line": 2, "character": 1})
    assert "selectedText" not in files[0]


def test_the_first_selection_region_is_the_cursor_and_selection(editor: Editor) -> None:
    editor.load()
    view = editor.open("m.py", "alpha beta\ngamma delta\n")
    cli = editor.cli()
    # Drag from "gamma"'s end back to its start (caret at the start), plus two more regions.
    editor.user.set_selection(view, [(16, 11), (17, 22), (0, 5)])
    files = cli.wait_files(lambda fs: "selectedText" in fs[0])
    check_shape(files)
    assert files[0]["selectedText"] == "alpha"  # sel()[0] is the first region by position
    assert files[0]["cursor"] == {"line": 1, "character": 6}
    editor.user.set_selection(view, [(16, 11), (17, 22)])
    files = cli.wait_files(lambda fs: fs[0].get("selectedText") == "gamma")
    assert files[0]["cursor"] == {"line": 2, "character": 1}


def test_a_huge_selection_is_cut_to_16_kib_without_reading_it_all(
    editor: Editor, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor.load()
    line = "0123456789abcdé€😀\n"
    text = line * (8 * 1024 * 1024 // len(line))
    view = editor.open("big.txt", text)
    cli = editor.cli()
    cli.wait_files(lambda fs: bool(fs))
    read_sizes: list[int] = []
    original = View.substr

    def counting(self: View, x: Region | int) -> str:
        read_sizes.append(x.size() if isinstance(x, Region) else 1)
        return original(self, x)

    monkeypatch.setattr(View, "substr", counting)
    editor.user.set_selection(view, [(0, view.size())])
    files = cli.wait_files(lambda fs: "selectedText" in fs[0])
    check_shape(files)
    selected = files[0]["selectedText"]
    assert selected.endswith("... [TRUNCATED]")
    body = selected[: -len("... [TRUNCATED]")]
    assert text.startswith(body) and len(body.encode("utf-8")) > MAX_TEXT - 64
    assert read_sizes and max(read_sizes) <= MAX_TEXT + 1


def test_a_multibyte_selection_under_16384_characters_is_cut_by_its_bytes(editor: Editor) -> None:
    editor.load()
    text = "汉字" * 3000  # 6,000 characters, 18,000 bytes of UTF-8
    view = editor.open("zh.txt", text)
    cli = editor.cli()
    cli.wait_files(lambda fs: bool(fs))
    editor.user.set_selection(view, [(0, view.size())])
    files = cli.wait_files(lambda fs: "selectedText" in fs[0])
    check_shape(files)
    selected = files[0]["selectedText"]
    assert selected.endswith("... [TRUNCATED]")
    assert text.startswith(selected[: -len("... [TRUNCATED]")])


# --- privacy -------------------------------------------------------------------------


def test_selected_text_can_be_turned_off_live(editor: Editor) -> None:
    editor.load()
    view = editor.open("a.py", "secret words\n")
    cli = editor.cli()
    editor.user.set_selection(view, [(0, 6)])
    cli.wait_files(lambda fs: fs[0].get("selectedText") == "secret")
    editor.settings({"send_selected_text": False})
    files = cli.wait_files(lambda fs: "selectedText" not in fs[0])
    assert files[0]["cursor"] == {"line": 1, "character": 7}
    editor.user.set_selection(view, [(0, 12)])
    files = cli.wait_files(lambda fs: fs[0]["cursor"]["character"] == 13)
    assert "selectedText" not in files[0]


def test_excluded_files_never_appear(editor: Editor, monkeypatch: pytest.MonkeyPatch) -> None:
    editor.load()
    code = editor.open("app.py")
    cli = editor.cli()
    secrets = [editor.open(name, "TOKEN=hunter2\n") for name in (".env", "server.pem", "tls.key", "id_rsa")]
    read_from: list[int] = []
    original = View.substr

    def spying(self: View, x: Region | int) -> str:
        read_from.append(self.id())
        return original(self, x)

    monkeypatch.setattr(View, "substr", spying)
    for secret in secrets:
        editor.user.set_selection(secret, [(0, 5)])
    editor.host.wait_idle()
    editor.user.focus(code)
    editor.user.set_selection(code, [(0, 5)])
    files = cli.wait_files(lambda fs: fs[0].get("selectedText") == "hello")
    assert paths(files) == [code.file_name()]
    assert not {s.id() for s in secrets} & set(read_from)
    seen = [open_files(c) for c in cli.contexts_within(0.2)]
    # A user pattern, matched against the full path, hides app.py as well.
    editor.settings({"excluded_file_patterns": ["*/project/app.*"]})
    files = cli.wait_files(lambda fs: code.file_name() not in paths(fs))
    assert set(paths(files)) == {s.file_name() for s in secrets}
    assert active(files) is None
    for files in seen:
        assert paths(files) == [code.file_name()]


def test_views_that_are_no_files_on_disk_are_left_out(editor: Editor) -> None:
    editor.load()
    real = editor.open("real.py")
    cli = editor.cli()
    window = editor.host.window
    untitled = editor.user.new_file()
    untitled.run_command("insert", {"characters": "draft"})
    scratch = window.new_file()
    scratch.retarget(str(editor.file("scratch.txt")))
    scratch.set_scratch(True)
    terminal = window.new_file()
    terminal.settings().set("terminus_view", True)
    terminal.retarget(str(editor.file("terminal.txt")))
    diff = window.new_file()
    diff.settings().set("qwen_companion.diff_view", True)
    diff.retarget(str(editor.file("diffed.py")))
    not_saved = window.open_file(str(editor.workspace / "missing.py"))
    panel = window.create_output_panel("exec")
    panel.run_command("append", {"characters": "build output"})
    window.run_command("show_panel", {"panel": "output.exec"})
    for view in (untitled, scratch, terminal, diff, not_saved):
        editor.user.focus(real)
        cli.wait_files(lambda fs: active(fs) is not None)
        editor.user.focus(view)  # the user looks at it: no file is active, none is added
        files = cli.wait_files(lambda fs: active(fs) is None)
        assert paths(files) == [real.file_name()]


# --- close, save as, delete and rename on disk ------------------------------------------


def test_closed_files_leave_the_list(editor: Editor) -> None:
    editor.load()
    a, b = editor.open("a.py"), editor.open("b.py")
    cli = editor.cli()
    cli.wait_files(lambda fs: len(fs) == 2)
    editor.user.close(b)
    files = cli.wait_files(lambda fs: len(fs) == 1)
    assert files[0]["path"] == a.file_name() and files[0]["isActive"] is True
    editor.user.close(a)
    assert cli.wait_files(lambda fs: not fs) == []


def test_saving_under_a_new_name(editor: Editor) -> None:
    editor.load()
    other = editor.open("other.py")
    cli = editor.cli()
    untitled = editor.user.new_file()
    untitled.run_command("insert", {"characters": "new text"})
    cli.wait_files(lambda fs: active(fs) is None)
    target = editor.workspace / "saved.py"
    editor.user.save(untitled, target)
    files = cli.wait_files(lambda fs: paths(fs)[:1] == [str(target)])
    assert files[0]["isActive"] is True and files[0]["cursor"] == {"line": 1, "character": 9}
    assert paths(files) == [str(target), other.file_name()]
    # Save As on a named file (the sim has no dialog for it: the app's save with a path).
    renamed = editor.workspace / "renamed.py"
    editor.host.run_on_main(lambda: editor.host.app.save_view(untitled.id(), str(renamed)))
    files = cli.wait_files(lambda fs: paths(fs)[:1] == [str(renamed)])
    assert paths(files) == [str(renamed), other.file_name()]


def test_files_deleted_or_renamed_on_disk(editor: Editor) -> None:
    editor.load()
    a, b, c = editor.open("a.py"), editor.open("b.py"), editor.open("c.py")
    cli = editor.cli()
    cli.wait_files(lambda fs: len(fs) == 3)
    # Sublime notices changes on disk when a view or the window gets the focus.
    os.remove(str(b.file_name()))
    editor.user.focus(a)
    files = cli.wait_files(lambda fs: paths(fs)[:1] == [a.file_name()])
    assert paths(files) == [a.file_name(), c.file_name()]
    new_name = str(editor.workspace / "c-renamed.py")
    os.rename(str(c.file_name()), new_name)
    c.retarget(new_name)  # what Sublime does when it notices a rename
    editor.user.focus(c)
    files = cli.wait_files(lambda fs: paths(fs)[:1] == [new_name])
    assert paths(files) == [new_name, a.file_name()]
    check_shape(files)


# --- windows ---------------------------------------------------------------------------


def test_each_window_sees_only_its_own_files(editor: Editor) -> None:
    first = editor.host.window
    editor.folder("one", first)
    editor.load()
    in_first = editor.open("first.py", window=first)
    second = editor.user.new_window()
    editor.folder("two", second)
    cli_one, cli_two = editor.cli(window=first), editor.cli(window=second)
    assert open_files(cli_two.next_context()) == []
    in_second = editor.open("second.py", "x\n", window=second)
    files_two = cli_two.wait_files(lambda fs: paths(fs) == [in_second.file_name()])
    assert files_two[0]["isActive"] is True
    editor.user.click(in_second, 1)
    cli_two.wait_files(lambda fs: fs[0]["cursor"]["character"] == 2)
    files_one = [open_files(c) for c in cli_one.contexts_within(0.3)]
    assert all(paths(fs) == [in_first.file_name()] for fs in files_one)
    # Focus goes back to the first window: only its CLIs hear about it.
    editor.user.click(in_first, 3)
    files = cli_one.wait_files(lambda fs: fs[0]["cursor"]["character"] == 4)
    assert paths(files) == [in_first.file_name()]
    assert all(paths(open_files(c)) == [in_second.file_name()] for c in cli_two.contexts_within(0.3))
