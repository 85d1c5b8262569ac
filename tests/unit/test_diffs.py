"""The review registry: replace semantics, decisions told to the review's owner,
the CLI's owner and closeDiff answers, line endings."""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qwencompanion_src.core import reviews
from qwencompanion_src.core.companion.diff_tools import CliReviewOwner, close_answer, text_for_cli
from qwencompanion_src.core.companion.ide_messages import (
    DIFF_ACCEPTED,
    DIFF_REJECTED,
    DiffAccepted,
    DiffRejected,
    Outgoing,
)
from qwencompanion_src.core.files.line_endings import CRLF, line_ending_of
from qwencompanion_src.core.reviews import (
    DiffRegistry,
    DiskFile,
    ReviewState,
    UnreadableFile,
    buffer_text,
    first_change,
    path_key,
    read_disk_file,
)

NEW_FILE = DiskFile(exists=False)


def lf_file(text: str = "a\n") -> DiskFile:
    return DiskFile(exists=True, text=text, line_ending=line_ending_of(text))


CRLF_FILE = DiskFile(exists=True, text="a\nb\n", line_ending=CRLF)


@dataclass
class Owner:
    """A review owner that writes down what it hears."""

    heard: list[tuple[str, ...]] = field(default_factory=list)
    alive: bool = True
    note: str | None = None

    def accepted(self, text: str) -> None:
        self.heard.append(("accepted", text))

    def rejected(self) -> None:
        self.heard.append(("rejected",))


@dataclass
class Companion:
    """What the CLI's owner uses of a companion: its notifications, by session."""

    sessions: set[str] = field(default_factory=lambda: {"s1"})
    running: bool = True
    sent: list[tuple[str, Outgoing, str | None]] = field(default_factory=list)

    def has_session(self, session_id: str) -> bool:
        return session_id in self.sessions

    def notify(self, method: str, params: Outgoing, session_id: str | None = None) -> None:
        self.sent.append((method, params, session_id))


# --- line endings -------------------------------------------------------------


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
    assert text_for_cli(new_content, buffer) == sent
    registry = DiffRegistry()
    companion = Companion()
    # The disk's line endings play no part: the CLI converts when it writes.
    owner = CliReviewOwner(companion, "s1", "/w/f.txt", new_content)
    review, _ = registry.open("/w/f.txt", new_content, owner, CRLF_FILE)
    assert registry.accept(review, buffer)
    assert companion.sent == [(DIFF_ACCEPTED, DiffAccepted(filePath="/w/f.txt", content=sent), "s1")]


def test_other_owners_get_the_buffer_text_itself() -> None:
    registry = DiffRegistry()
    owner = Owner()
    review, _ = registry.open("/w/f.txt", "a\r\nb\r\n", owner, CRLF_FILE)
    assert registry.accept(review, "a\nB\n")
    assert owner.heard == [("accepted", "a\nB\n")]


def test_the_cli_owner_is_alive_while_its_session_is() -> None:
    companion = Companion()
    owner = CliReviewOwner(companion, "s1", "/w/f.txt", "x\n")
    assert owner.alive and owner.note is None
    companion.sessions.clear()
    assert not owner.alive
    companion.sessions.add("s1")
    companion.running = False
    assert not owner.alive


def test_an_emptied_proposal_is_refused() -> None:
    registry = DiffRegistry()
    review, _ = registry.open("/w/f.txt", "a\n", Owner(), lf_file())
    assert review.refusal("") is not None and "empty" in (review.refusal("") or "")
    assert review.refusal("\n") is None and review.refusal("b") is None
    empty, _ = registry.open("/w/g.txt", "", Owner(), lf_file())
    assert empty.refusal("") is None  # the CLI itself proposed an empty file


def test_review_shows_the_proposal_with_lf_and_knows_when_it_was_edited() -> None:
    registry = DiffRegistry()
    review, _ = registry.open("/w/f.txt", "a\r\nb\r\n", Owner(), CRLF_FILE)
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
    registry = DiffRegistry()
    companion = Companion(sessions={"session-a", "session-b"})
    review, replaced = registry.open("/w/a.py", "x\n", CliReviewOwner(companion, "session-a", "/w/a.py", "x\n"), lf_file())
    assert replaced is None and companion.sent == []
    assert registry.find("/w/a.py") is review
    assert registry.accept(review, "y\n")
    assert companion.sent == [(DIFF_ACCEPTED, DiffAccepted(filePath="/w/a.py", content="y\n"), "session-a")]
    assert review.state is ReviewState.ACCEPTED
    assert registry.find("/w/a.py") is None


def test_a_decided_review_cannot_be_decided_again() -> None:
    registry = DiffRegistry()
    companion = Companion()
    review, _ = registry.open("/w/a.py", "x\n", CliReviewOwner(companion, "s1", "/w/a.py", "x\n"), lf_file())
    assert registry.reject(review)
    assert companion.sent == [(DIFF_REJECTED, DiffRejected(filePath="/w/a.py"), "s1")]
    assert not registry.accept(review, "x\n")
    assert not registry.reject(review)
    assert not registry.close(review, suppress=False)
    assert review.state is ReviewState.REJECTED
    assert len(companion.sent) == 1  # the owner heard one decision


def test_a_second_open_diff_for_the_same_file_replaces_the_first() -> None:
    registry = DiffRegistry()
    companion = Companion(sessions={"session-a", "session-b"})
    first, _ = registry.open("/w/a.py", "one\n", CliReviewOwner(companion, "session-a", "/w/a.py", "one\n"), lf_file())
    second_owner = CliReviewOwner(companion, "session-b", "/w/./a.py", "two\n")
    second, replaced = registry.open("/w/./a.py", "two\n", second_owner, lf_file())
    assert replaced is first
    assert first.state is ReviewState.REPLACED
    # The first CLI hears a rejection under the path it sent.
    assert companion.sent == [(DIFF_REJECTED, DiffRejected(filePath="/w/a.py"), "session-a")]
    assert registry.find("/w/a.py") is second
    assert not registry.accept(first, "one\n")
    assert second.file_path == "/w/./a.py"


def test_close_diff_finds_a_review_by_its_spelling_without_resolving_it(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = DiffRegistry()
    review, _ = registry.open("/w/a.py", "x\n", Owner(), lf_file())
    resolved: list[str] = []
    monkeypatch.setattr(reviews, "path_key", lambda path: resolved.append(path) or path_key(path))
    assert registry.find("/w/a.py") is review
    assert resolved == []
    assert registry.find("/w/sub/../a.py") is review  # another spelling is resolved
    assert resolved == ["/w/sub/../a.py"]


def test_a_spelling_leads_only_to_an_open_review() -> None:
    registry = DiffRegistry()
    _first, _ = registry.open("/w/a.py", "one\n", Owner(), lf_file())
    second, _ = registry.open("/w/./a.py", "two\n", Owner(), lf_file())  # replaces the first
    assert registry.find("/w/a.py") is second
    registry.close(second, suppress=True)
    assert registry.find("/w/a.py") is None and registry.find("/w/./a.py") is None
    # Nothing decided stays reachable (a 10 MB proposal would be kept alive).
    assert registry._spelled == {} and registry._open == {}


def test_reviews_of_different_files_live_side_by_side() -> None:
    registry = DiffRegistry()
    a, _ = registry.open("/w/a.py", "a\n", Owner(), lf_file())
    b, replaced = registry.open("/w/b.py", "b\n", Owner(), lf_file())
    assert replaced is None
    assert registry.open_reviews() == [a, b]


def test_close_with_and_without_a_notification() -> None:
    registry = DiffRegistry()
    companion = Companion()
    review, _ = registry.open("/w/a.py", "x\n", CliReviewOwner(companion, "s1", "/w/a.py", "x\n"), lf_file())
    assert registry.close(review, suppress=True)
    assert review.state is ReviewState.CLOSED
    assert companion.sent == []

    review, _ = registry.open("/w/a.py", "x\n", CliReviewOwner(companion, "s1", "/w/a.py", "x\n"), lf_file())
    assert registry.close(review, suppress=False)
    assert companion.sent == [(DIFF_REJECTED, DiffRejected(filePath="/w/a.py"), "s1")]


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
    registry = DiffRegistry()
    owner = Owner()
    review, _ = registry.open("/w/a.py", "x\n", owner, lf_file())
    results: list[object] = []
    barrier = threading.Barrier(8)

    def decide(i: int) -> None:
        barrier.wait()
        if i % 2:
            results.append(registry.accept(review, "x\n"))
        else:
            results.append(registry.close(review, suppress=False))

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for r in results if r) == 1
    assert len(owner.heard) == 1  # the owner hears the one decision


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
    monkeypatch.setattr(reviews, "MAX_REVIEW_BYTES", 10)
    (tmp_path / "big.txt").write_text("x" * 11)
    with pytest.raises(UnreadableFile, match="too large to review"):
        read_disk_file(str(tmp_path / "big.txt"))
    with pytest.raises(UnreadableFile, match="too large to review"):
        read_disk_file("/proc/self/status")  # no size on paper: bounded while read


def test_a_stat_tells_whether_the_file_changed_when_it_can(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    before = read_disk_file(str(path))
    assert reviews.changed_by_stamp(str(path), before) is False
    os.utime(path, ns=(1, 1))
    assert reviews.changed_by_stamp(str(path), before) is None  # only the time: compare the text
    path.write_text("longer\n")
    assert reviews.changed_by_stamp(str(path), before) is True
    path.unlink()
    assert reviews.changed_by_stamp(str(path), before) is True
    missing = read_disk_file(str(path))
    assert reviews.changed_by_stamp(str(path), missing) is False
    path.write_text("")
    assert reviews.changed_by_stamp(str(path), missing) is True


def test_an_abandoned_review_tells_its_owner_nothing() -> None:
    registry = DiffRegistry()
    companion = Companion()
    review, _ = registry.open("/w/a.py", "x\n", CliReviewOwner(companion, "s1", "/w/a.py", "x\n"), lf_file())
    assert registry.abandon(review)
    assert review.state is ReviewState.REJECTED and registry.find("/w/a.py") is None
    assert not registry.abandon(review) and not registry.accept(review, "x\n")
    assert companion.sent == []  # the session that asked is gone: nothing is sent to it
