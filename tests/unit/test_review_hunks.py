"""The review of every hunk, its pure model: hunks with three lines of
context and the line numbers of the text now, counts, keep and undo of one
hunk (refused when its lines changed since, the user's edits elsewhere
kept), binary and large files whole, the review's bound on hunks, and the
view's text (scoped lines, a hunk per line, comments at their lines)."""

from __future__ import annotations

import pytest

from qwencompanion_src.core.review_hunks.hunks import Stale, diff_hunks, keep_hunk, undo_hunk
from qwencompanion_src.core.review_hunks.review import (
    BINARY,
    LARGE,
    LARGE_FILE_BYTES,
    UNLISTED,
    ChangedFile,
    HunkReview,
)
from qwencompanion_src.core.review_hunks.review_text import NO_HUNK, Comment, render

BEFORE = "".join(f"line {n}\n" for n in range(1, 31))


def edited(text: str, changes: dict[int, str]) -> str:
    """`text` with 1-based lines replaced (an empty string removes the line)."""
    lines = text.splitlines(keepends=True)
    return "".join(changes.get(n, line) for n, line in enumerate(lines, 1))


NOW = edited(BEFORE, {5: "FIVE\n", 25: "TWENTY-FIVE\nextra\n"})


def test_two_distant_changes_are_two_hunks_with_three_lines_of_context() -> None:
    first, second = diff_hunks(BEFORE, NOW)
    assert (first.new_start, first.first_changed_line, first.added, first.removed) == (1, 4, 1, 1)
    assert [tag for tag, _ in first.rows] == [" ", " ", " ", "-", "+", " ", " ", " "]
    assert (second.first_changed_line, second.added, second.removed) == (24, 2, 1)
    assert [line for tag, line in second.rows if tag == " "][:3] == ["line 22\n", "line 23\n", "line 24\n"]


def test_changes_six_lines_apart_or_less_are_one_hunk() -> None:
    assert len(diff_hunks(BEFORE, edited(BEFORE, {5: "A\n", 12: "B\n"}))) == 1
    assert len(diff_hunks(BEFORE, edited(BEFORE, {5: "A\n", 13: "B\n"}))) == 2


def test_undo_of_one_hunk_reverses_it_alone() -> None:
    first, second = diff_hunks(BEFORE, NOW)
    assert undo_hunk(NOW, NOW, first) == edited(BEFORE, {25: "TWENTY-FIVE\nextra\n"})
    assert undo_hunk(NOW, NOW, second) == edited(BEFORE, {5: "FIVE\n"})


def test_undo_keeps_the_users_edits_above_or_below_the_hunk() -> None:
    first, second = diff_hunks(BEFORE, NOW)
    typed_above = "# the user's line\n" + NOW
    assert undo_hunk(typed_above, NOW, second) == "# the user's line\n" + edited(BEFORE, {5: "FIVE\n"})
    typed_below = NOW + "more of the user's\n"
    assert undo_hunk(typed_below, NOW, first) == edited(BEFORE, {25: "TWENTY-FIVE\nextra\n"}) + "more of the user's\n"


def test_undo_is_refused_when_the_user_changed_the_hunks_lines() -> None:
    first, _ = diff_hunks(BEFORE, NOW)
    for actual in (NOW.replace("FIVE\n", "FIVE, the user's\n", 1),  # its changed line
                   NOW.replace("line 7\n", "line seven\n"),  # a context line
                   NOW.replace("line 2\n", "") + "end\n"):  # above and below: where it stands is not known
        with pytest.raises(Stale):
            undo_hunk(actual, NOW, first)


def test_undo_is_exact_for_crlf_and_a_last_line_without_newline() -> None:
    before, now = "a\r\nb\r\nc", "a\r\nB\r\nc!"
    (hunk,) = diff_hunks(before, now)
    assert undo_hunk(now, now, hunk) == before


def test_keep_takes_the_hunk_into_the_text_compared_with() -> None:
    first, second = diff_hunks(BEFORE, NOW)
    base = keep_hunk(BEFORE, first)
    assert len(diff_hunks(base, NOW)) == 1
    assert diff_hunks(base, NOW)[0].rows == second.rows


def test_a_review_file_keeps_and_undoes_hunk_by_hunk() -> None:
    review = HunkReview([ChangedFile("/w/a.txt", BEFORE, NOW)])
    file = review.files[0]
    assert (file.added, file.removed, len(file.hunks)) == (3, 2, 2)
    file.keep(0)
    assert (len(file.hunks), file.kept) == (1, 1)
    assert file.hunks[0].first_changed_line == 24  # line numbers stay those of the text now
    written = file.undo_text(0, NOW)
    file.undone_hunk(0)
    assert written == edited(BEFORE, {5: "FIVE\n"}) and not file.hunks and file.undone == 1


def test_each_hunk_keeps_its_number_and_its_line_in_the_text_now() -> None:
    three = edited(BEFORE, {2: "TWO\n", 12: "TWELVE\nmore\nmore\n", 25: "TWENTY-FIVE\n"})
    review_file = HunkReview([ChangedFile("a.txt", BEFORE, three)]).files[0]
    assert [(e.state, e.start) for e in review_file.entries] == [("pending", 1), ("pending", 11), ("pending", 26)]
    review_file.keep(0)
    assert review_file.pending_index(0) is None and review_file.pending_index(2) == 1
    review_file.undone_hunk(0)
    assert [(e.state, e.start, e.added, e.removed) for e in review_file.entries] == [
        ("kept", 1, 1, 1), ("undone", 11, 3, 1), ("pending", 24, 1, 1)]


@pytest.mark.parametrize("steps", [("keep", 0), ("undo", 0), ("keep", 1), ("undo", 1), ("undo", 0, "keep", 0),
                                   ("keep", 1, "undo", 0, "undo", 0)])
def test_the_hunks_left_after_a_keep_or_undo_are_those_a_new_diff_gives(steps: tuple[object, ...]) -> None:
    now = edited(BEFORE, {2: "TWO\nmore\n", 12: "", 20: "TWENTY\n", 29: "a\nb\nc\n"})
    review_file = HunkReview([ChangedFile("a.txt", BEFORE, now)]).files[0]
    for action, index in zip(steps[::2], steps[1::2], strict=True):
        if action == "keep":
            review_file.keep(int(str(index)))
        else:
            review_file.undone_hunk(int(str(index)))
    assert review_file.hunks == diff_hunks(review_file.base, review_file.expected)


def test_undo_all_reverses_every_pending_hunk_or_none() -> None:
    review = HunkReview([ChangedFile("/w/a.txt", BEFORE, NOW)])
    file = review.files[0]
    assert file.undo_all_text("top\n" + NOW) == "top\n" + BEFORE
    with pytest.raises(Stale):
        file.undo_all_text(NOW.replace("FIVE", "5"))


def test_binary_and_large_files_are_whole_only() -> None:
    review = HunkReview([ChangedFile("/w/logo.png", "", "", binary=True),
                     ChangedFile("/w/big.log", "a\n", "b\n", size=LARGE_FILE_BYTES + 1)])
    assert [(f.kind, f.hunks, f.whole_only) for f in review.files] == [(BINARY, [], True), (LARGE, [], True)]
    text = render("turn 1", review, lambda path: path).text
    assert "== /w/logo.png  +0 −0  binary file changed · pending" in text
    assert "file over 8 MB changed" in text
    review.files[0].keep_all()
    assert not review.files[0].pending


def test_a_review_holds_a_bounded_number_of_hunks() -> None:
    many = "".join(f"{n}\n" for n in range(200))
    changed = "".join(f"{n}!\n" if n % 10 == 0 else f"{n}\n" for n in range(200))
    review = HunkReview([ChangedFile(f"/w/{n}.txt", many, changed) for n in range(3)], max_hunks=25)
    assert [len(f.hunks) for f in review.files] == [20, 0, 0]
    assert [f.kind for f in review.files][1:] == [UNLISTED, UNLISTED] and review.unlisted_hunks


def test_a_refresh_keeps_what_was_kept_and_undone() -> None:
    review = HunkReview([ChangedFile("/w/a.txt", BEFORE, NOW)])
    review.files[0].keep(0)
    more = NOW + "appended by the agent\n"
    fresh = review.refreshed([ChangedFile("/w/a.txt", BEFORE, more), ChangedFile("/w/b.txt", None, "new\n")])
    assert [h.first_changed_line for h in fresh.files[0].hunks] == [24]
    assert fresh.files[0].kept == 1 and fresh.files[1].hunks[0].added == 1


def test_the_view_text_maps_lines_to_hunks_and_marks_removed_and_added_lines() -> None:
    review = HunkReview([ChangedFile("/w/a.txt", BEFORE, NOW)])
    shown = render("turn 2", review, lambda path: path.rsplit("/", 1)[-1],
                   [Comment("/w/a.txt", 5, "why upper case?")])
    lines = shown.text.splitlines()
    assert lines[3] == "== a.txt  +3 −2  2 hunks pending"
    assert lines[4] == "@@ line 5  +1 −1"
    assert lines[8] == "-line 5" and lines[9] == "+FIVE" and lines[10] == "   ▸ comment: why upper case?"
    assert shown.target(9) == (0, 0) and shown.target(3) == (0, NO_HUNK) and shown.hunk_lines == [4, 14]
    assert [line for line in lines if line[:1] == "-"] == ["-line 5", "-line 25"]
    assert [line for line in lines if line[:1] == "+"] == ["+FIVE", "+TWENTY-FIVE", "+extra"]
