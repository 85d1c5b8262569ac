"""The review registry: replace semantics, decisions, closeDiff answers, line endings."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from qwencompanion_src.core.companion import diffs
from qwencompanion_src.core.companion.diffs import (
    CRLF,
    LF,
    DiffRegistry,
    DiskFile,
    ReviewState,
    UnreadableFile,
    buffer_text,
    close_answer,
    first_change,
    line_ending_of,
    path_key,
    read_disk_file,
)
from qwencompanion_src.core.companion.ide_messages import DIFF_ACCEPTED, DIFF_REJECTED, DiffAccepted, DiffRejected

NEW_FILE = DiskFile(exists=False)


def lf_file(text: str = "a\n") -> DiskFile:
    return DiskFile(exists=True, text=text, line_ending=line_ending_of(text))


CRLF_FILE = DiskFile(exists=True, text="a\nb\n", line_ending=CRLF)


# --- line endings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("no break", None),
        ("a\nb\n", LF),
        ("a\r\nb\r\n", CRLF),
        ("a\r\nb\r\nc\n", CRLF),  # most breaks win
        ("a\nb\nc\r\n", LF),
        ("a\rb", None),  # a lone CR is not a line break we convert
    ],
)
def test_line_ending_of(text: str, expected: str | None) -> None:
    assert line_ending_of(text) == expected


def test_buffer_text_turns_crlf_pairs_into_lf_only() -> None:
    assert buffer_text("a\r\nb\rc\n") == "a\nb\rc\n"


@pytest.mark.parametrize(
    ("new_content", "buffer", "sent"),
    [
        # Unedited: exactly what the CLI sent, whatever its line endings.
        ("a\nb\n", "a\nb\n", "a\nb\n"),
        ("a\r\nb\r\n", "a\nb\n", "a\r\nb\r\n"),
        ("a\r\nb\nc", "a\nb\nc", "a\r\nb\nc"),
        # Edited: the proposal's (main) line ending; the final newline as in the buffer.
        ("a\nb\n", "a\nB\n", "a\nB\n"),
        ("a\nb", "a\nB", "a\nB"),
        ("a\nb\n", "a\nb", "a\nb"),
        ("a\r\nb", "a\nB", "a\r\nB"),
        ("a\r\nb\r\n", "a\nb\n\n", "a\r\nb\r\n\r\n"),
        ("x", "x\ny", "x\ny"),
        ("é\n", "€ ✓ 日本 🎉\n", "€ ✓ 日本 🎉\n"),
        ("", "", ""),
    ],
)
def test_accepted_text(new_content: str, buffer: str, sent: str) -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    # The disk's line endings play no part: the CLI converts when it writes.
    review, _, _ = registry.open("/w/f.txt", new_content, "s1", "owner", CRLF_FILE)
    notice = registry.accept(review, buffer)
    assert notice is not None
    assert notice.params == DiffAccepted(filePath="/w/f.txt", content=sent)


def test_an_emptied_proposal_is_refused() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, _, _ = registry.open("/w/f.txt", "a\n", "s1", "owner", lf_file())
    assert review.refusal("") is not None and "empty" in (review.refusal("") or "")
    assert review.refusal("\n") is None and review.refusal("b") is None
    empty, _, _ = registry.open("/w/g.txt", "", "s1", "owner", lf_file())
    assert empty.refusal("") is None  # the CLI itself proposed an empty file


def test_review_shows_the_proposal_with_lf_and_knows_when_it_was_edited() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, _, _ = registry.open("/w/f.txt", "a\r\nb\r\n", "s1", "owner", CRLF_FILE)
    assert review.proposed == "a\nb\n"
    assert not review.edited("a\nb\n")
    assert review.edited("a\nb")


# --- disk ----------------------------------------------------------------------


def test_read_disk_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n\xff")
    disk = read_disk_file(str(path))
    assert disk == DiskFile(exists=True, text="one\ntwo\n\ufffd", line_ending=CRLF)
    assert read_disk_file(str(tmp_path / "missing.txt")) == DiskFile(exists=False)


@pytest.mark.parametrize("size", [0, 1, 4096, 3_000_001])
def test_read_disk_file_reads_the_whole_file(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.txt"
    text = ("abc\n" * (size // 4 + 1))[:size]
    path.write_text(text)
    assert read_disk_file(str(path)).text == text


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc here")
def test_read_disk_file_reads_a_file_that_reports_no_size() -> None:
    assert Path("/proc/self/status").stat().st_size == 0
    text = read_disk_file("/proc/self/status").text
    assert text.startswith("Name:") and text.endswith("\n") and "VmRSS" in text


def test_read_disk_file_refuses_directories_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="is a directory"):
        read_disk_file(str(tmp_path))
    # A link to itself: no one can open it, root included (ELOOP).
    locked = tmp_path / "locked.txt"
    locked.symlink_to(locked)
    with pytest.raises(UnreadableFile, match="cannot read"):
        read_disk_file(str(locked))


# --- the registry -------------------------------------------------------------


def test_decisions_go_to_the_session_that_opened_the_review() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, replaced, notice = registry.open("/w/a.py", "x\n", "session-a", "window-1", lf_file())
    assert (replaced, notice) == (None, None)
    assert registry.find("/w/a.py") is review
    accepted = registry.accept(review, "y\n")
    assert accepted is not None
    assert (accepted.method, accepted.session_id, accepted.owner) == (DIFF_ACCEPTED, "session-a", "window-1")
    assert review.state is ReviewState.ACCEPTED
    assert registry.find("/w/a.py") is None


def test_a_decided_review_cannot_be_decided_again() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, _, _ = registry.open("/w/a.py", "x\n", "s", "o", lf_file())
    rejected = registry.reject(review)
    assert rejected is not None
    assert (rejected.method, rejected.params) == (DIFF_REJECTED, DiffRejected(filePath="/w/a.py"))
    assert registry.accept(review, "x\n") is None
    assert registry.reject(review) is None
    assert registry.close(review, suppress=False) == (False, None)
    assert review.state is ReviewState.REJECTED


def test_a_second_open_diff_for_the_same_file_replaces_the_first() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    first, _, _ = registry.open("/w/a.py", "one\n", "session-a", "o", lf_file())
    second, replaced, notice = registry.open("/w/./a.py", "two\n", "session-b", "o", lf_file())
    assert replaced is first
    assert first.state is ReviewState.REPLACED
    assert notice is not None
    # The first CLI hears a rejection under the path it sent.
    assert (notice.method, notice.session_id, notice.params) == (
        DIFF_REJECTED, "session-a", DiffRejected(filePath="/w/a.py")
    )
    assert registry.find("/w/a.py") is second
    assert registry.accept(first, "one\n") is None
    assert second.file_path == "/w/./a.py"


def test_close_diff_finds_a_review_by_its_spelling_without_resolving_it(monkeypatch: pytest.MonkeyPatch) -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, _, _ = registry.open("/w/a.py", "x\n", "s", "o", lf_file())
    resolved: list[str] = []
    monkeypatch.setattr(diffs, "path_key", lambda path: resolved.append(path) or path_key(path))
    assert registry.find("/w/a.py") is review
    assert resolved == []
    assert registry.find("/w/sub/../a.py") is review  # another spelling is resolved
    assert resolved == ["/w/sub/../a.py"]


def test_a_spelling_leads_only_to_an_open_review() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    _, _, _ = registry.open("/w/a.py", "one\n", "s", "o", lf_file())
    second, _, _ = registry.open("/w/./a.py", "two\n", "s", "o", lf_file())  # replaces the first
    assert registry.find("/w/a.py") is second
    registry.close(second, suppress=True)
    assert registry.find("/w/a.py") is None and registry.find("/w/./a.py") is None
    # Nothing decided stays reachable (a 10 MB proposal would be kept alive).
    assert registry._spelled == {} and registry._open == {}


def test_reviews_of_different_files_live_side_by_side() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    a, _, _ = registry.open("/w/a.py", "a\n", "s1", "o", lf_file())
    b, replaced, _ = registry.open("/w/b.py", "b\n", "s2", "o", lf_file())
    assert replaced is None
    assert registry.open_reviews() == [a, b]


def test_close_with_and_without_a_notification() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, _, _ = registry.open("/w/a.py", "x\n", "s", "o", lf_file())
    assert registry.close(review, suppress=True) == (True, None)
    assert review.state is ReviewState.CLOSED

    review, _, _ = registry.open("/w/a.py", "x\n", "s", "o", lf_file())
    was_open, notice = registry.close(review, suppress=False)
    assert was_open and notice is not None
    assert (notice.method, notice.params) == (DIFF_REJECTED, DiffRejected(filePath="/w/a.py"))


def test_close_answer_is_the_json_the_cli_parses() -> None:
    assert json.loads(str(close_answer("a\r\nü\n"))) == {"content": "a\r\nü\n"}
    assert json.loads(str(close_answer(None))) == {"content": None}


@pytest.mark.parametrize("content", ["", "plain", 'quote " back \\ slash', "tab\tnl\ncr\r\x00\x1f", "café \u2028 \U0001f600"])
def test_close_answer_is_what_json_dumps_writes(content: str) -> None:
    assert str(close_answer(content)) == json.dumps({"content": content})


def test_close_answer_leaves_no_utf8_copy_in_the_proposal() -> None:
    proposal = "".join(["café ", "\u2014 ", "x\n"]) * 1000  # noqa: FLY002  (built at run time: not interned)
    size = sys.getsizeof(proposal)
    answer = str(close_answer(proposal))
    assert sys.getsizeof(proposal) == size  # CPython counts a cached UTF-8 copy in the size
    assert answer.isascii() and json.loads(answer) == {"content": proposal}


def test_only_one_thread_decides_a_review() -> None:
    registry: DiffRegistry[str] = DiffRegistry()
    review, _, _ = registry.open("/w/a.py", "x\n", "s", "o", lf_file())
    results: list[object] = []
    barrier = threading.Barrier(8)

    def decide(i: int) -> None:
        barrier.wait()
        if i % 2:
            results.append(registry.accept(review, "x\n"))
        else:
            results.append(registry.close(review, suppress=True)[0] or None)

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for r in results if r) == 1


def test_path_key_normalises_spelling() -> None:
    assert path_key("/w/sub/../a.py") == path_key("/w/a.py")


@pytest.mark.parametrize(
    ("original", "proposed", "offset"),
    [
        ("a\nb\nc\n", "a\nB\nc\n", 2),
        ("a\nb\n", "a\nb\nc\n", 4),  # a line added at the end
        ("a\nb\nc\n", "a\nb\n", 2),  # the last line removed: the line left before it
        ("a\nb", "a\nb\n", 2),  # only the final newline differs
        ("", "new\n", 0),
        ("old\n", "", 0),
        ("same\n", "same\n", 0),
        ("x" * 9000 + "\ny\n", "x" * 9000 + "\nz\n", 9001),  # past the first blocks compared
        ("ab\x0cc\nd\n", "ab\x0cC\nd\n", 0),  # only \n ends a line, as in Sublime
    ],
)
def test_first_change(original: str, proposed: str, offset: int) -> None:
    assert first_change(original, proposed) == offset


def test_read_disk_file_refuses_what_is_no_regular_file_or_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp_path / "fifo")  # opened without blocking: nothing waits for a writer
    with pytest.raises(UnreadableFile, match="not a regular file"):
        read_disk_file(str(tmp_path / "fifo"))
    with pytest.raises(UnreadableFile, match="not a regular file"):
        read_disk_file("/dev/zero")
    with pytest.raises(UnreadableFile, match="cannot read"):
        read_disk_file(str(tmp_path / "a\0b"))
    monkeypatch.setattr(diffs, "MAX_REVIEW_BYTES", 10)
    (tmp_path / "big.txt").write_text("x" * 11)
    with pytest.raises(UnreadableFile, match="too large to review"):
        read_disk_file(str(tmp_path / "big.txt"))
    with pytest.raises(UnreadableFile, match="too large to review"):
        read_disk_file("/proc/self/status")  # no size on paper: bounded while read


def test_a_stat_tells_whether_the_file_changed_when_it_can(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    before = read_disk_file(str(path))
    assert diffs.changed_by_stamp(str(path), before) is False
    os.utime(path, ns=(1, 1))
    assert diffs.changed_by_stamp(str(path), before) is None  # only the time: compare the text
    path.write_text("longer\n")
    assert diffs.changed_by_stamp(str(path), before) is True
    path.unlink()
    assert diffs.changed_by_stamp(str(path), before) is True
    missing = read_disk_file(str(path))
    assert diffs.changed_by_stamp(str(path), missing) is False
    path.write_text("")
    assert diffs.changed_by_stamp(str(path), missing) is True
