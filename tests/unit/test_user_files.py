"""The disk side of the one write path (core/files/user_files.py): a folder on the
way swapped for a link between the check and the write (Undo Turn, Rewind,
the agent's own write) never makes the write land outside."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.chat.history import turn_changes
from qwencompanion_src.core.chat.history.turn_changes import TurnChanges, restore_on_disk
from qwencompanion_src.core.files import agent_files
from qwencompanion_src.core.files.agent_files import write_text
from qwencompanion_src.core.files.user_files import LeadsElsewhere, remove_file, replace_bytes
from tests.unit.test_turn_changes import agent_writes

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")


def swap_for_link(folder: Path, target: Path) -> None:
    """What a hostile command does between the check and the write."""
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(target, target_is_directory=True)


def after(check: Callable[..., Any], then: Callable[[], None]) -> Callable[..., Any]:
    def checked(*args: Any, **kwargs: Any) -> Any:
        result = check(*args, **kwargs)
        then()
        return result
    return checked


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(a folder of the project holding a.txt, a folder outside holding a.txt)"""
    root = tmp_path.resolve()
    inside, outside = root / "proj" / "dir", root / "outside"
    inside.mkdir(parents=True)
    outside.mkdir()
    (outside / "a.txt").write_bytes(b"outside\n")
    return inside, outside


def test_undo_never_writes_through_a_folder_swapped_after_the_check(layout: tuple[Path, Path],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    inside, outside = layout
    (inside / "a.txt").write_bytes(b"before\n")
    changes = TurnChanges()
    agent_writes(changes, inside / "a.txt", "outside\n")  # the same text as the file outside
    change = changes.change(1, str(inside / "a.txt"))
    assert change is not None
    monkeypatch.setattr(turn_changes, "_holds", after(turn_changes._holds, lambda: swap_for_link(inside, outside)))
    with pytest.raises(LeadsElsewhere, match="leads elsewhere"):
        restore_on_disk(change)
    assert (outside / "a.txt").read_bytes() == b"outside\n"
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt"]  # no temp file left there either


def test_undo_of_a_made_file_never_removes_through_a_swapped_folder(layout: tuple[Path, Path],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    inside, outside = layout
    changes = TurnChanges()
    agent_writes(changes, inside / "a.txt", "outside\n")
    change = changes.change(1, str(inside / "a.txt"))
    assert change is not None
    monkeypatch.setattr(turn_changes, "_holds", after(turn_changes._holds, lambda: swap_for_link(inside, outside)))
    with pytest.raises(LeadsElsewhere):
        restore_on_disk(change)
    assert (outside / "a.txt").read_bytes() == b"outside\n"


def test_the_agents_write_never_lands_through_a_folder_swapped_after_the_check(
        layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    inside, outside = layout
    (inside / "a.txt").write_bytes(b"mine\n")
    grandparent = inside.parent
    monkeypatch.setattr(agent_files, "file_shape",
                        after(agent_files.file_shape, lambda: swap_for_link(grandparent, outside.parent)))
    with pytest.raises(LeadsElsewhere):  # a link higher up is refused as well
        write_text(str(inside / "a.txt"), "agent\n")
    assert (outside / "a.txt").read_bytes() == b"outside\n"


def test_missing_folders_are_made_and_the_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path.resolve() / "new" / "deeper" / "f.txt"
    replace_bytes(str(path), b"one\r\n", 0o640)
    assert path.read_bytes() == b"one\r\n" and path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.txt"]
    remove_file(str(path))
    assert not path.exists()
    with pytest.raises(FileNotFoundError):
        remove_file(str(tmp_path.resolve() / "gone" / "f.txt"))
    assert not (tmp_path / "gone").exists()  # a removal makes no folders


def test_a_target_that_is_itself_a_link_out_of_the_folder_is_kept_as_the_users_link(tmp_path: Path) -> None:
    """`within=` compares the resolved path: a target that is itself a link leading
    out of the folder is refused, so the user's link stays a link (the folder walk
    never sees it: only the folders on the way are opened without following links)."""
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "theirs.txt").write_text("outside\n")
    link = inside / "link.txt"
    link.symlink_to(outside / "theirs.txt")
    refusals = []
    for write in (lambda: replace_bytes(str(link), b"written\n", None, within=str(inside)),
                  lambda: remove_file(str(link), within=str(inside))):
        try:
            write()
        except LeadsElsewhere as refused:
            refusals.append(str(refused))
        assert link.is_symlink() and os.readlink(link) == str(outside / "theirs.txt"), "the user's link was lost"
    assert (outside / "theirs.txt").read_text() == "outside\n"
    assert len(refusals) == 2 and all("is not inside" in why for why in refusals)
