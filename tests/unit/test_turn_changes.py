"""A turn's checkpoints: byte-exact before-texts, the files a turn changed with
their counts and states, and undo that never overwrites a later change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qwencompanion_src.core.chat.history.turn_changes import (
    CHANGED,
    KEPT,
    OUTSIDE,
    Before,
    FileSummary,
    TurnChanges,
    changed_on_disk,
    checkpoint_of,
    line_counts,
    restore_on_disk,
)
from qwencompanion_src.core.chat.requests.file_rules import SeenTexts
from qwencompanion_src.core.files.agent_files import MAX_FILE_BYTES, Refused, write_text


def agent_writes(changes: TurnChanges, path: Path, text: str) -> None:
    """What the editor's write path does: checkpoint on the first write, write, record."""
    where = str(path)
    if changes.needs_checkpoint(where):
        changes.checkpoint(where, checkpoint_of(where))
    write_text(where, text)
    changes.wrote(where, text)


def test_undo_restores_the_bytes_exactly_crlf_bom_and_all(tmp_path: Path) -> None:
    crlf_bom = tmp_path / "win.txt"
    original = b"\xef\xbb\xbfone\r\ntwo\r\nthree"  # BOM, CRLF, no final newline
    crlf_bom.write_bytes(original)
    os.chmod(crlf_bom, 0o640)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9\n")
    changes = TurnChanges()
    agent_writes(changes, crlf_bom, "one\nTWO\nthree\nfour\n")
    agent_writes(changes, crlf_bom, "one\nTWO\nthree\nfour\nfive\n")  # the second write keeps the first checkpoint
    agent_writes(changes, latin, "the\n")
    assert changes.end_turn() == (1, {}) and changes.last_changed_turn() == 1
    assert changes.files(1) == [FileSummary(str(crlf_bom), 3, 1, CHANGED), FileSummary(str(latin), 1, 1, CHANGED)]
    for path in changes.paths(1):
        change = changes.change(1, path)
        assert change is not None
        restore_on_disk(change)
    assert crlf_bom.read_bytes() == original and latin.read_bytes() == b"caf\xe9\n"
    assert os.stat(crlf_bom).st_mode & 0o777 == 0o640


def test_a_file_the_agent_made_is_removed_by_undo(tmp_path: Path) -> None:
    made = tmp_path / "new" / "made.py"
    changes = TurnChanges()
    agent_writes(changes, made, "x = 1\n")
    changes.end_turn()
    assert changes.files(1) == [FileSummary(str(made), 1, 0, CHANGED)]
    change = changes.change(1, str(made))
    assert change is not None
    restore_on_disk(change)
    assert not made.exists()


def test_undo_refuses_a_file_changed_since_the_agent_wrote_it(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"before\n")
    changes = TurnChanges()
    agent_writes(changes, path, "agent\n")
    path.write_bytes(b"the user's own edit\n")
    change = changes.change(1, str(path))
    assert change is not None
    with pytest.raises(Refused, match="changed since"):
        restore_on_disk(change)
    assert path.read_bytes() == b"the user's own edit\n"
    path.unlink()  # deleted since: not made again either
    with pytest.raises(Refused, match="changed since"):
        restore_on_disk(change)
    assert not path.exists()


def test_undo_refuses_when_the_path_now_leads_elsewhere(tmp_path: Path) -> None:
    inside, outside = tmp_path / "w", tmp_path / "secret"
    inside.mkdir()
    outside.mkdir()
    (outside / "a.txt").write_bytes(b"agent\n")  # what the agent wrote, now behind a link
    path = inside / "a.txt"
    path.write_bytes(b"before\n")
    changes = TurnChanges()
    agent_writes(changes, path, "agent\n")
    path.unlink()
    path.symlink_to(outside / "a.txt")  # a command swapped in a link to a file outside the folder
    change = changes.change(1, str(path))
    assert change is not None
    with pytest.raises(Refused, match="leads elsewhere"):
        restore_on_disk(change)
    assert (outside / "a.txt").read_bytes() == b"agent\n"


def test_a_file_changed_by_a_command_is_listed_outside_and_never_restored(tmp_path: Path) -> None:
    changes = TurnChanges()
    path = str(tmp_path / "built.txt")
    changes.changed_outside(path)
    changes.end_turn()
    assert changes.has_changes(1) and changes.files(1) == [FileSummary(path, 0, 0, OUTSIDE)]
    changes.mark(1, path, KEPT)  # an outside file keeps its state
    change = changes.change(1, path)
    assert change is not None and change.state == OUTSIDE
    with pytest.raises(Refused, match="not kept"):
        restore_on_disk(change)


def test_a_refused_write_lists_nothing(tmp_path: Path) -> None:
    changes = TurnChanges()
    path = str(tmp_path / "a.txt")
    changes.checkpoint(path, checkpoint_of(path))  # the write after it was refused: wrote() never came
    changes.end_turn()
    assert not changes.has_changes(1) and changes.files(1) == [] and changes.last_changed_turn() is None


def test_turns_are_separate_and_states_are_marked(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    changes = TurnChanges()
    agent_writes(changes, path, "two\n")
    changes.end_turn()
    changes.end_turn()  # a turn that changed nothing
    assert not changes.has_changes(2)
    agent_writes(changes, path, "three\n")
    changes.end_turn()
    assert changes.last_changed_turn() == 3
    second = changes.change(3, str(path))
    assert second is not None and second.before is not None and second.before.data == b"two\n"
    changes.mark(1, str(path), KEPT)
    assert [f.state for f in changes.files(1)] == [KEPT] and [f.state for f in changes.files(3)] == [CHANGED]


def test_checkpoints_past_the_budget_are_dropped_oldest_turn_first(tmp_path: Path) -> None:
    changes = TurnChanges(budget=3000)
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_bytes(b"a" * 1000)
    second.write_bytes(b"b" * 1000)
    agent_writes(changes, first, "x\n")
    changes.end_turn()
    agent_writes(changes, second, "y\n")
    agent_writes(changes, tmp_path / "third.txt", "z" * 2000)  # over the budget: not undoable
    old, new = changes.change(1, str(first)), changes.change(2, str(second))
    third = changes.change(2, str(tmp_path / "third.txt"))
    assert old is not None and old.before is None  # the oldest turn went first
    assert new is not None and new.before is not None and new.before.data == b"b" * 1000
    assert third is not None and third.before is None
    with pytest.raises(Refused, match="not kept"):
        restore_on_disk(third)
    big = tmp_path / "big.txt"
    big.write_bytes(b"c" * 4000)  # its checkpoint alone is past the budget
    changes.checkpoint(str(big), checkpoint_of(str(big)))
    kept = changes.change(2, str(big))
    assert kept is not None and kept.before is None


def test_a_hostile_flood_of_files_is_bounded(tmp_path: Path) -> None:
    changes = TurnChanges(files_per_turn=3)
    for name in "abc":
        changes.checkpoint(str(tmp_path / name), Before(None))
    with pytest.raises(Refused, match="already changed 3"):
        changes.checkpoint(str(tmp_path / "d"), Before(None))
    changes.checkpoint(str(tmp_path / "a"), Before(b"ignored"))  # a known file is no new one
    change = changes.change(1, str(tmp_path / "a"))
    assert change is not None and change.before == Before(None)


def test_a_hostile_flood_of_reads_is_bounded(tmp_path: Path) -> None:
    """Defect guarded: every file the agent read in a turn was remembered (a
    million reads) and all re-read at its end to find changes by commands."""
    changes = TurnChanges(files_per_turn=3)
    for number in range(10):
        changes.saw(str(tmp_path / f"read-{number}"), "text\n")
    _, read = changes.end_turn()
    assert sorted(read) == [str(tmp_path / f"read-{number}") for number in range(3)]


def test_the_texts_the_agent_saw_are_remembered_for_a_bounded_number_of_files() -> None:
    """Defect guarded (of the same kind): the fingerprint of every file the
    agent ever read was kept; the oldest go first, and a forgotten file's
    unsaved buffer is never written over."""
    seen = SeenTexts(remembered=3)
    for number in range(5):
        seen.saw(f"/p/{number}", f"text {number}\n")
    for number in (2, 3, 4):
        seen.check(f"/p/{number}", "f", f"text {number}\n", unsaved=True)  # remembered: the write may land
    for number in (0, 1):
        with pytest.raises(Refused, match="not read"):
            seen.check(f"/p/{number}", "f", f"text {number}\n", unsaved=True)


def test_a_file_too_large_to_rewrite_gets_no_checkpoint(tmp_path: Path) -> None:
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(Refused, match="more than"):
        checkpoint_of(str(huge))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(Refused, match="not a regular file"):
        checkpoint_of(str(fifo))


def test_the_buffer_text_is_the_before_text_of_a_write_into_an_open_view(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"saved\n")
    before = checkpoint_of(str(path), buffer_text="saved\nunsaved\n")
    assert before.data == b"saved\n" and before.text() == "saved\nunsaved\n"


def test_line_counts() -> None:
    assert line_counts("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)
    assert line_counts("", "") == (0, 0)
    assert line_counts("x\n" * 5, "x\n" * 6) == (1, 0)
    assert line_counts("a\n", "") == (0, 1)


def test_files_the_agent_read_and_a_command_changed_are_found(tmp_path: Path) -> None:
    changes = TurnChanges()
    same, edited, removed, written = (tmp_path / name for name in ("same", "edited", "removed", "written"))
    for path in (same, edited, removed, written):
        path.write_bytes(b"caf\xe9\r\n")  # read as Latin-1 with CRLF: the agent saw "caf\u00e9\n"
        changes.saw(str(path), "caf\u00e9\n")
    agent_writes(changes, written, "by the editor\n")
    edited.write_bytes(b"by a command\n")
    changes.saw(str(edited), "by a command\n")  # read again after the command: the first read counts
    removed.unlink()
    turn, read = changes.end_turn()
    assert sorted(read) == sorted([str(same), str(edited), str(removed)])  # written through the editor: not a candidate
    outside = [path for path, mark in read.items() if changed_on_disk(path, mark)]
    assert sorted(outside) == sorted([str(edited), str(removed)])
    for path in outside:
        changes.changed_outside(path, turn)
    files = changes.files(turn)
    assert (files[0].path, files[0].state) == (str(written), CHANGED)
    assert {(f.path, f.state) for f in files[1:]} == {(str(edited), OUTSIDE), (str(removed), OUTSIDE)}
    assert changes.end_turn() == (turn + 1, {})  # reads belong to their turn


def test_the_latest_turn_stays_undoable_however_many_turns_came_before(tmp_path: Path) -> None:
    changes = TurnChanges(budget=5000)
    path = tmp_path / "a.txt"
    for number in range(1, 11):
        path.write_bytes(b"b" * 1000)
        agent_writes(changes, path, "a" * 1000)  # 1000 bytes kept + 2000 of the agent's text per turn
        changes.end_turn()
        latest = changes.change(number, str(path))
        assert latest is not None and latest.before is not None, f"turn {number}"
    first = changes.files(1)
    assert first == [FileSummary(str(path), 1, 1, CHANGED)]  # an old turn keeps its counts
