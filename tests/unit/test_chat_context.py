"""What a chat prompt carries besides its text, and how the agent is started."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from qwencompanion_src.core.chat.prompts.prompt_context import ActiveFile, active_file_blocks, attached_file_block
from qwencompanion_src.core.cli.cli_command import ACP_FLAG, CommandNotFound, agent_argv
from qwencompanion_src.core.context_rules import ContextOptions


def test_the_active_file_is_a_link_with_the_cursor_and_the_selection_is_embedded(tmp_path: Path) -> None:
    path = str(tmp_path / "a b.py")
    blocks = active_file_blocks(ActiveFile(path, 3, 7, "x = 1", (3, 3)), ContextOptions())
    uri = Path(path).as_uri()
    assert blocks == [
        {"type": "resource_link", "uri": uri, "name": "a b.py",
         "description": "The user's active file; cursor at line 3, column 7."},
        {"type": "resource", "resource": {"uri": f"{uri}#L3-L3", "mimeType": "text/plain", "text": "x = 1"}},
    ]
    assert "%20" in uri


def test_settings_decide_what_goes(tmp_path: Path) -> None:
    active = ActiveFile(str(tmp_path / "a.py"), 1, 1, "secret selection", (1, 1))
    no_selection = active_file_blocks(active, ContextOptions(send_selected_text=False))
    assert [b["type"] for b in no_selection] == ["resource_link"]
    assert active_file_blocks(ActiveFile(str(tmp_path / ".env"), 1, 1, "K=1", (1, 1)), ContextOptions()) == []
    assert active_file_blocks(None, ContextOptions()) == []


def test_a_huge_selection_is_cut_with_the_clis_marker(tmp_path: Path) -> None:
    blocks = active_file_blocks(ActiveFile(str(tmp_path / "a.py"), 1, 1, "y" * 100_000, (1, 1)), ContextOptions())
    text = blocks[1]["resource"]["text"]
    assert len(text.encode()) <= 16 * 1024 and text.endswith("... [TRUNCATED]")


def test_attached_files_text_images_and_exclusions(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.md"
    text_file.write_text("on disk")
    assert attached_file_block(str(text_file), "in the buffer", ContextOptions())["resource"]["text"] == "in the buffer"
    assert attached_file_block(str(text_file), None, ContextOptions())["resource"]["text"] == "on disk"
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nrest")
    block = attached_file_block(str(image), None, ContextOptions())
    assert block is not None and block["type"] == "image" and block["mimeType"] == "image/png"
    assert base64.b64decode(block["data"]) == image.read_bytes()
    assert attached_file_block(str(tmp_path / "id_rsa"), "key", ContextOptions()) is None
    big = attached_file_block(str(text_file), "z" * 600_000, ContextOptions())
    assert big is not None and big["resource"]["text"].endswith("[TRUNCATED]") and len(big["resource"]["text"]) < 600_000


def test_attaching_reads_only_the_head_of_a_regular_file(tmp_path: Path) -> None:
    huge = tmp_path / "huge.log"
    with huge.open("wb") as out:  # sparse: 4 GiB on paper, nothing on disk
        out.truncate(4 * 1024**3)
    block = attached_file_block(str(huge), None, ContextOptions())
    assert block is not None and block["resource"]["text"].endswith("\n... [TRUNCATED]")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ValueError, match="not a regular file"):
        attached_file_block(str(tmp_path / "pipe"), None, ContextOptions())
    with huge.open("r+b") as out:
        out.truncate(11 * 1024 * 1024)
    image = huge.rename(tmp_path / "huge.png")
    with pytest.raises(ValueError, match="larger than 10 MiB"):
        attached_file_block(str(image), None, ContextOptions())


def test_agent_argv_finds_the_program_and_adds_acp(tmp_path: Path) -> None:
    program = tmp_path / "bin" / "qwen"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    path = str(program.parent)
    assert agent_argv("qwen --yolo", windows=False, login_shell=None, path=path) == [str(program), "--yolo", ACP_FLAG]
    assert agent_argv([str(program)], windows=False, login_shell=None, path="") == [str(program), ACP_FLAG]
    with pytest.raises(CommandNotFound, match="qwen_command"):
        agent_argv("qwen", windows=False, login_shell=None, path=str(tmp_path))


def test_agent_argv_on_macos_runs_through_the_login_shell() -> None:
    assert agent_argv("qwen --yolo", windows=False, login_shell="/bin/zsh", path="") == \
        ["/bin/zsh", "-l", "-i", "-c", "qwen --yolo --acp"]
    assert agent_argv(["/opt/my qwen/qwen"], windows=False, login_shell="/bin/zsh", path="") == \
        ["/bin/zsh", "-l", "-i", "-c", "'/opt/my qwen/qwen' --acp"]


def test_agent_argv_splits_a_windows_command_with_windows_rules(tmp_path: Path) -> None:
    command = r'"C:\Program Files\nodejs\qwen.cmd" --yolo'
    assert agent_argv(command, windows=True, login_shell=None, path="") == \
        [r"C:\Program Files\nodejs\qwen.cmd", "--yolo", ACP_FLAG]  # a path: not looked up


def test_agent_argv_finds_a_qwen_installed_through_nvm_off_the_path(tmp_path: Path) -> None:
    # Sublime started from a Linux desktop: PATH lacks ~/.nvm/versions/node/<v>/bin.
    for version in ("v18.20.0", "v22.23.3"):
        bin_dir = tmp_path / ".nvm" / "versions" / "node" / version / "bin"
        bin_dir.mkdir(parents=True)
        for name in ("node", "qwen"):
            (bin_dir / name).write_text("#!/bin/sh\n")
            (bin_dir / name).chmod(0o755)
    newest = tmp_path / ".nvm" / "versions" / "node" / "v22.23.3" / "bin"
    assert agent_argv("qwen --yolo", windows=False, login_shell=None, path="/usr/bin", home=str(tmp_path)) == \
        [str(newest / "node"), str(newest / "qwen"), "--yolo", ACP_FLAG]


def test_agent_argv_says_what_to_set_when_qwen_is_nowhere(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFound) as raised:
        agent_argv("qwen", windows=False, login_shell=None, path="/usr/bin", home=str(tmp_path))
    message = str(raised.value)
    assert "npm install -g @qwen-code/qwen-code" in message
    assert "command -v qwen" in message and "qwen_command" in message
