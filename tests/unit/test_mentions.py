"""What each composer mention sends (@symbol, @diagnostics, @diff,
@terminal, a pasted image), cut to size, and the outside tools they run:
argument lists without a shell, with a time limit and a cap on output."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.chat.prompts import mention_tools
from qwencompanion_src.core.chat.prompts.mention_tools import (
    MAX_DIFF_BYTES,
    MAX_MENTION_CHARS,
    MentionError,
    clipboard_image,
    clipboard_tools,
    git_diff,
    run_tool,
)
from qwencompanion_src.core.chat.prompts.mentions import (
    MAX_DEFINITION_LINES,
    MAX_DIAGNOSTICS,
    TERMINAL_LINES,
    TRUNCATED,
    diagnostics_mention,
    diff_mention,
    image_mention,
    symbol_mention,
    terminal_mention,
)
from qwencompanion_src.core.chat.prompts.prompt_context import MAX_IMAGE_BYTES

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
SOURCE = '''import os


class Shelf:
    """Books."""

    def add(self, book):
        self.books.append(book)

        return book


def after():
    pass
'''


def text_of(block: dict[str, Any]) -> str:
    return str(block["resource"]["text"])


# --- @symbol -------------------------------------------------------------------------------


def test_a_symbol_sends_its_whole_definition_and_its_place(tmp_path: Path) -> None:
    path = str(tmp_path / "shelf.py")
    made = symbol_mention("Shelf", path, SOURCE, 4)
    assert made.token == "symbol:Shelf"
    assert made.block["resource"]["uri"] == Path(path).as_uri() + "#L4-L10"
    text = text_of(made.block)
    assert text.startswith(f"Shelf is defined at {path}:4-10:\n\nclass Shelf:")
    assert "return book" in text and "def after" not in text
    method = symbol_mention("add", path, SOURCE, 7)
    assert text_of(method.block).endswith("        return book")


def test_a_brace_language_definition_ends_at_its_closing_brace(tmp_path: Path) -> None:
    code = "function checkout(cart) {\n  if (cart) {\n    return 1;\n  }\n}\nfunction other() {}\n"
    text = text_of(symbol_mention("checkout", str(tmp_path / "a.js"), code, 1).block)
    assert text.endswith("    return 1;\n  }\n}") and "other" not in text


def test_a_stale_index_row_past_the_end_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MentionError, match="past the end"):
        symbol_mention("gone", str(tmp_path / "a.py"), "x = 1\n", 40)


def test_a_huge_definition_is_cut(tmp_path: Path) -> None:
    long_lines = "def big():\n" + "".join(f"    x{i} = {i}\n" for i in range(5000))
    text = text_of(symbol_mention("big", str(tmp_path / "a.py"), long_lines, 1).block)
    assert text.count("\n    x") == MAX_DEFINITION_LINES - 1
    wide = "def wide():\n" + ("    y = '" + "z" * 10_000 + "'\n") * 300
    cut = text_of(symbol_mention("wide", str(tmp_path / "a.py"), wide, 1).block)
    assert len(cut) == MAX_MENTION_CHARS + len(TRUNCATED) and cut.endswith(TRUNCATED)


# --- @diagnostics --------------------------------------------------------------------------


def diagnostic(path: str, line: int, message: str, **more: Any) -> dict[str, Any]:
    return {"abspath": path, "range": {"start": {"line": line, "character": 3}, "end": {"line": line, "character": 5}},
            "severity": "Warning", "message": message, **more}


def test_diagnostics_are_one_line_each_with_their_place_and_origin(tmp_path: Path) -> None:
    path = str(tmp_path / "main.py")
    made = diagnostics_mention([diagnostic(path, 4, "unused\nvariable", source="Pyright", code="E1")],
                               "language server LSP-pyright", path, str(tmp_path))
    assert made.token == "diagnostics" and made.block["resource"]["uri"] == Path(path).as_uri() + "#diagnostics"
    assert text_of(made.block).splitlines() == [
        f"Diagnostics of {path} from language server LSP-pyright:",
        f"{path}:4:3: Warning: unused variable [Pyright E1]",  # an agent-made newline cannot forge a line
    ]
    window = diagnostics_mention([], "language server LSP-pyright", None, str(tmp_path))
    assert window.token == "diagnostics:window" and text_of(window.block).endswith("none.")


def test_hostile_diagnostics_are_capped_in_number_and_size(tmp_path: Path) -> None:
    many = [diagnostic("p.py", i, "m") for i in range(MAX_DIAGNOSTICS + 50)]
    made = diagnostics_mention(many, "s", None, str(tmp_path))
    assert text_of(made.block).endswith("... and 50 more")
    huge = [diagnostic("p.py", 1, "x" * 100_000), {"range": "not a range", "message": None}]
    text = text_of(diagnostics_mention(huge, "s", None, str(tmp_path)).block)
    assert text.endswith(TRUNCATED) and len(text) <= MAX_MENTION_CHARS + len(TRUNCATED)


# --- @diff ---------------------------------------------------------------------------------


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_the_diff_holds_staged_unstaged_and_untracked_changes(repo: Path) -> None:
    (repo / "a.txt").write_text("one\ntwo\n")
    (repo / "b.txt").write_text("new\n")
    git(repo, "add", "b.txt")
    (repo / "sub").mkdir()
    (repo / "sub" / "c.txt").write_text("untracked\n")
    root, diff, untracked, truncated = git_diff(str(repo / "sub"))
    assert os.path.samefile(root, repo) and not truncated
    assert "+two" in diff and "b/b.txt" in diff and untracked == ["sub/c.txt"]
    made = diff_mention(root, diff, untracked, truncated)
    assert made.block["resource"]["mimeType"] == "text/x-diff"
    assert made.summary == "2 changed, 1 untracked file(s)" and "Untracked files:\n  sub/c.txt" in text_of(made.block)


def test_a_clean_tree_and_a_folder_outside_a_repository_are_told(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(MentionError, match="no uncommitted changes"):
        diff_mention(*git_diff(str(repo)))
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / ".git").write_text("gitdir: nowhere\n")  # not a repository either
    with pytest.raises(MentionError, match="is not in a git repository"):
        git_diff(str(outside))


def test_a_repository_without_commits_diffs_its_index(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    _, diff, _, _ = git_diff(str(tmp_path))
    assert "+two" in diff


def test_a_huge_diff_is_capped_and_says_so(repo: Path) -> None:
    (repo / "a.txt").write_text("".join(f"line {i} {'x' * 80}\n" for i in range(20_000)))
    root, diff, untracked, truncated = git_diff(str(repo))
    assert truncated and len(diff.encode()) <= MAX_DIFF_BYTES
    assert "[TRUNCATED: the diff is larger" in text_of(diff_mention(root, diff, untracked, truncated).block)


def test_a_folder_name_is_an_argument_never_shell_text(repo: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "x; touch pwned; $(touch pwned2)"
    hostile.mkdir()
    with pytest.raises(MentionError, match="not in a git repository"):
        git_diff(str(hostile))
    assert not (Path.cwd() / "pwned").exists() and not (tmp_path / "pwned").exists()
    assert not list(tmp_path.rglob("pwned*"))


def test_a_missing_git_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mention_tools.shutil, "which", lambda name: None)
    with pytest.raises(MentionError, match="@diff needs git"):
        git_diff(str(tmp_path))
    with pytest.raises(MentionError, match="could not run"):
        git_diff(str(tmp_path), git=str(tmp_path / "no-such-git"))


# --- running tools -------------------------------------------------------------------------


def test_output_past_the_cap_is_cut_and_the_tool_ended() -> None:
    started = time.monotonic()
    flood = "import sys\nwhile True: sys.stdout.write('y' * 65536)"
    output = run_tool([sys.executable, "-c", flood], limit=100_000, timeout=30)
    assert output.truncated and len(output.stdout) == 100_000
    assert time.monotonic() - started < 20  # ended at the cap, not at the time limit


def test_a_silent_tool_is_ended_at_the_time_limit() -> None:
    with pytest.raises(MentionError, match=r"no answer within 0\.5 s"):
        run_tool([sys.executable, "-c", "import time; time.sleep(30)"], limit=10, timeout=0.5)


# --- @terminal -----------------------------------------------------------------------------


def test_the_terminal_sends_its_last_lines_without_trailing_blanks() -> None:
    tail = "".join(f"line {i}   \r\n" for i in range(1000)) + "\n\n   \n"
    made = terminal_mention(tail, "Qwen Code")
    lines = text_of(made.block).split("\n")
    assert len(lines) == TERMINAL_LINES and lines[-1] == "line 999" and lines[0] == f"line {1000 - TERMINAL_LINES}"
    assert made.block["resource"]["uri"] == "terminal:///Qwen%20Code"
    with pytest.raises(MentionError, match="shows nothing"):
        terminal_mention("\n  \n", "Qwen Code")


def test_a_terminal_of_huge_lines_is_cut() -> None:
    text = text_of(terminal_mention(("z" * 100_000 + "\n") * 5, "t").block)
    assert text.endswith(TRUNCATED) and len(text) == MAX_MENTION_CHARS + len(TRUNCATED)


# --- a pasted image ------------------------------------------------------------------------


def test_an_image_becomes_an_image_block_by_its_first_bytes() -> None:
    made = image_mention(PNG, 3)
    assert made.token == "image-3"
    assert made.block == {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()}
    assert image_mention(b"\xff\xd8\xff\xe0rest", 4).block["mimeType"] == "image/jpeg"
    with pytest.raises(MentionError, match="holds no image"):
        image_mention(b"just text", 5)
    with pytest.raises(MentionError, match="larger than 10 MiB"):
        image_mention(PNG + b"\x00" * MAX_IMAGE_BYTES, 6)


def test_each_platform_has_its_clipboard_tools() -> None:
    assert [n for n, _ in clipboard_tools("linux", {})] == ["xclip"]
    assert [n for n, _ in clipboard_tools("linux", {"WAYLAND_DISPLAY": "wayland-0"})] == ["wl-paste", "xclip"]
    assert [n for n, _ in clipboard_tools("darwin", {})] == ["pngpaste", "osascript"]
    assert [n for n, _ in clipboard_tools("win32", {})] == ["powershell"]
    assert all(isinstance(argv, list) for _, argv in clipboard_tools("win32", {}))


@pytest.mark.parametrize(("platform", "named"), [
    ("linux", "wl-paste (package wl-clipboard) on Wayland or xclip"),
    ("darwin", "pngpaste (brew install pngpaste) or osascript"),
    ("win32", "PowerShell"),
])
def test_missing_clipboard_tools_are_named(platform: str, named: str) -> None:
    with pytest.raises(MentionError, match=r"needs " + named.replace("(", r"\(").replace(")", r"\)")):
        clipboard_image(platform, {"WAYLAND_DISPLAY": "w"}, which=lambda name: None)


def fake_tool(tmp_path: Path, name: str, body: str) -> str:
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX scripts stand in for the tools")
def test_the_first_present_tool_gives_the_image(tmp_path: Path) -> None:
    xclip = fake_tool(tmp_path, "xclip", f"sys.stdout.buffer.write({PNG!r})")
    assert clipboard_image("linux", {"WAYLAND_DISPLAY": "w"}, which=lambda n: xclip if n == "xclip" else None) == PNG
    osascript = fake_tool(tmp_path, "osascript", f"print('«data PNGf' + {PNG.hex().upper()!r} + '»')")
    assert clipboard_image("darwin", {}, which=lambda n: osascript if n == "osascript" else None) == PNG
    empty = fake_tool(tmp_path, "empty", "sys.exit(1)")
    with pytest.raises(MentionError, match="holds no image"):
        clipboard_image("linux", {}, which=lambda n: empty)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX scripts stand in for the tools")
def test_a_huge_clipboard_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    flood = fake_tool(tmp_path, "xclip", "import itertools\nfor _ in itertools.count(): sys.stdout.buffer.write(b'\\0' * 65536)")
    with pytest.raises(MentionError, match="larger than 10 MiB"):
        clipboard_image("linux", {}, which=lambda n: flood)


def test_hostile_untracked_names_are_capped(tmp_path: Path) -> None:
    names = ["n" * 10_000] + [f"f{i}" for i in range(500)]
    made = diff_mention(str(tmp_path), "", names, False)
    text = text_of(made.block)
    assert text.endswith("  ... and more") and len(text) < 20_000 and made.summary == "0 changed, 200+ untracked file(s)"
