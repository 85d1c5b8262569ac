"""Files the agent reads and writes: confinement (`..`, symlinks, allowed
paths), byte-exact shapes (CRLF, BOM, no final newline) and atomic writes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from qwencompanion_src.core.files.agent_files import Refused, confine, read_lines, read_text, write_text


def test_paths_inside_the_folders_are_allowed_after_normalising(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    assert confine(str(tmp_path / "src" / ".." / "a.py"), [str(tmp_path)]) == os.path.realpath(tmp_path / "a.py")


def test_dot_dot_escapes_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    with pytest.raises(Refused, match="outside the window's folders"):
        confine(str(folder / ".." / "secret.txt"), [str(folder)])
    with pytest.raises(Refused):  # a sibling whose name starts the same
        confine(str(tmp_path / "project-other" / "x"), [str(folder)])


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (folder / "link").symlink_to(outside)
    with pytest.raises(Refused):
        confine(str(folder / "link" / "secret.txt"), [str(folder)])


def test_allowed_paths_and_relative_paths(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.txt"
    assert confine(str(other), [str(tmp_path / "project")], [str(other)]) == os.path.realpath(other)
    with pytest.raises(Refused, match="not an absolute path"):
        confine("a.py", [str(tmp_path)])


@pytest.mark.parametrize(
    "data",
    [b"a\r\nb\r\n", b"a\r\nb", b"a\nb", b"\xef\xbb\xbfa\nb\n", b"one line", b"a\rb\r"],
    ids=["crlf", "crlf-no-final-newline", "lf-no-final-newline", "bom", "single-line", "cr"],
)
def test_writing_back_what_was_read_is_byte_exact(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    text = read_text(str(path))
    assert "\r" not in text and "\ufeff" not in text
    write_text(str(path), text)
    assert path.read_bytes() == data


def test_a_write_keeps_crlf_and_the_missing_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\r\nb\r\n")
    write_text(str(path), "a\nB\nc")
    assert path.read_bytes() == b"a\r\nB\r\nc"


def test_new_files_get_their_folders_and_unix_newlines(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "new.txt"
    write_text(str(path), "x\ny\n")
    assert path.read_bytes() == b"x\ny\n"


def test_a_failed_write_leaves_the_file_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"old\n")
    os.chmod(path, 0o640)

    def broken(src: str, dst: str, **folders: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        write_text(str(path), "new\n")
    assert path.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
    monkeypatch.undo()
    write_text(str(path), "new\n")
    assert path.read_bytes() == b"new\n" and path.stat().st_mode & 0o777 == 0o640


def test_reading_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_text(str(tmp_path / "missing.txt"))


async def test_a_file_job_that_never_ends_costs_its_slot_and_a_clear_error_not_the_pool() -> None:
    import threading

    from qwencompanion_src.core.chat.requests.file_jobs import FileBusy, FileJobs

    jobs = FileJobs(at_once=2, timeout=0.2)
    hung = threading.Event()
    try:
        for _ in range(2):
            with pytest.raises(FileBusy, match="not done within"):
                await jobs.run(hung.wait, "reading the pipe")
        with pytest.raises(FileBusy, match="busy"):  # both slots are held: a clear error, not a wait for ever
            await jobs.run(lambda: "never started", "reading a.py")
    finally:
        hung.set()
    await asyncio.sleep(0.05)  # the hung jobs end and give their slots back
    assert await jobs.run(lambda: "read", "reading a.py") == "read"


def test_non_regular_files_and_files_too_large_are_refused(tmp_path: Path) -> None:
    from qwencompanion_src.core.files.agent_files import TooLarge, read_file, read_part

    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(Refused, match="not a regular file"):
        read_text(str(tmp_path / "pipe"))  # at once: opened without blocking
    with pytest.raises(Refused, match="not a regular file"):
        read_text(str(tmp_path))
    (tmp_path / "big.txt").write_bytes(b"a\nb\nc\n" * 10)
    with pytest.raises(TooLarge, match="read it in parts"):
        read_file(str(tmp_path / "big.txt"), limit=10)
    assert read_part(str(tmp_path / "big.txt"), 2, 2) == ("b\nc\n", "a\nb\nc\n" * 10)


def test_a_read_of_lines_gathers_no_more_than_its_bound_however_large_the_limit(tmp_path: Path) -> None:
    """Defect guarded: a read with `line`/`limit` of a file too large to read
    whole gathered every line asked for (a limit of 10**9 of a 60 MB log)."""
    log = tmp_path / "big.log"
    log.write_bytes(b"".join(b"line %05d\n" % number for number in range(1, 1001)))  # 11 bytes a line
    assert read_lines(str(log), 3, 2, most=100) == "line 00003\nline 00004\n"
    assert read_lines(str(log), 991, 10**9, most=110) == log.read_text()[-110:]  # the last ten lines: exactly the bound
    with pytest.raises(Refused, match="ask for fewer lines"):
        read_lines(str(log), 1, 10**9, most=100)
    with pytest.raises(Refused, match="ask for fewer lines"):
        read_lines(str(log), 500, None, most=100)  # no limit: to the end of the file
