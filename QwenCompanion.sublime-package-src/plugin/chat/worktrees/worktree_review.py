"""A worktree's changes reviewed in Sublime's own diff, and applied to the
user's files.

"Qwen Code: Worktree Changes" lists the branch's changes against the
commit the worktree was made from (lines added/removed); a file opens with
that base as its reference document (as a turn's changes do), and Keep
(reviewed: its reference becomes its own text) or Drop (the worktree's file
back to its base, in the worktree only) take one file. "Qwen Code: Apply
to My Files" merges them into the user's files (core/worktrees/worktree_changes.py):
a file open with unsaved edits is refused, one open and clean is updated in
its view as one undo step, then saved; the `worktree_apply_conflicts`
setting leaves conflict markers or refuses the apply whole. What happened
to each file is written into the worktree's chat and told to observers
("worktree_applied").

Git and the files are handled on threads of ours; the main thread only
collects the open views and puts merged text into them."""

from __future__ import annotations

import contextvars
import os
from dataclasses import asdict
from typing import Any

import sublime

from ....core import threads
from ....core.files.agent_files import Refused, decode, read_text
from ....core.worktrees.applied_saves import AppliedSaves
from ....core.worktrees.worktree_changes import (
    ApplyReport,
    ChangedFile,
    Dropping,
    Outcome,
    ViewWrite,
    apply,
    base_bytes,
    changes,
    drop,
    plan_drop,
    record_save,
    worktree_file,
)
from ....core.worktrees.worktrees import Worktree, WorktreeRefused
from ...editor import view_text
from ...settings import fallback_encoding, userprefs
from ...view_writes import write_merged
from ..command_bases import WorktreeChatCommand
from ..history.turn_review import open_with_reference
from ..window_chats import chats
from .worktree_git import git_then

KEPT, CHANGED = "kept", "changed"  # a file's review state
FILE_ACTIONS = ("Open with its base as reference", "Keep", "Drop (back to its base, in the worktree)")
# Files reviewed as kept, by worktree folder (for this Sublime session, or until the worktree is discarded).
_kept: dict[str, set[str]] = {}
# What saves made of applies into open views (for this Sublime session).
applied_saves = AppliedSaves()


def forget_kept(worktree: Worktree) -> None:
    """The worktree is gone: so is its review."""
    _kept.pop(worktree.path, None)


def review_state(worktree: Worktree, path: str) -> str:
    return KEPT if path in _kept.get(worktree.path, set()) else CHANGED


def listing(worktree: Worktree, files: list[ChangedFile]) -> list[dict[str, Any]]:
    """The driver's and the observers' form of the changes."""
    return [{"path": f.path, "added": f.added, "removed": f.removed, "state": review_state(worktree, f.path),
             "kind": f.kind, **({"why_not": f.why_not} if f.why_not else {})} for f in files]


@threads.on_main
def show_changes(window: sublime.Window, worktree: Worktree) -> None:
    """The worktree's changes in a quick panel (listed by git on a thread of ours)."""
    git_then(window, lambda: changes(worktree), lambda files: _panel(window, worktree, files))


def _panel(window: sublime.Window, worktree: Worktree, files: list[ChangedFile]) -> None:
    if not window.is_valid():
        return
    if not files:
        window.status_message(f"Qwen Code: the worktree {worktree.name} changed nothing")
        return
    items = [[file.path, _label(worktree, file)] for file in files]
    items.append(["Apply to My Files", "merge every change into your files (conflicts per the settings)"])

    def chosen(index: int) -> None:
        if 0 <= index < len(files):
            file = files[index]
            # Shown once the first panel has closed (Sublime closes it after this callback), as the user's doing.
            then = contextvars.copy_context()
            sublime.set_timeout(lambda: then.run(window.show_quick_panel, list(FILE_ACTIONS),
                                                 lambda action: act(file, action), placeholder=file.path))
        elif index == len(files):
            apply_to_my_files(window, worktree)

    def act(file: ChangedFile, action: int) -> None:
        if action == 0:
            open_changed_file(window, worktree, file)
        elif action == 1:
            keep(window, worktree, file.path)
        elif action == 2:
            drop_file(window, worktree, file.path)

    window.show_quick_panel(items, chosen, placeholder=f"Qwen Code: worktree {worktree.name}'s changes")


def _label(worktree: Worktree, file: ChangedFile) -> str:
    if file.why_not:
        return f"{file.kind} · {file.why_not}"
    state = " · kept" if review_state(worktree, file.path) == KEPT else ""
    return f"+{file.added} −{file.removed} · {file.kind}{state}"


def _named_views(window: sublime.Window) -> list[tuple[str, sublime.View]]:
    """The window's views of files, by name as Sublime gives it (main thread: no path is resolved here)."""
    return [(name, view) for view in window.views() if (name := view.file_name())] if window.is_valid() else []


def _views_of(full: str, named: list[tuple[str, sublime.View]]) -> list[sublime.View]:
    """Those of `named` that show the file `full` (a thread of ours: resolving a path reads the disk)."""
    real = os.path.realpath(full)
    return [view for name, view in named if os.path.realpath(name) == real]


@threads.on_main
def open_changed_file(window: sublime.Window, worktree: Worktree, file: ChangedFile) -> None:
    """The worktree's file at its first change, its base as reference (a
    deleted file: its base in a view of its own is not made; it is listed only).
    Whether it is still there is asked on a thread of ours."""
    encoding = fallback_encoding()
    full = worktree_file(worktree, file.path)

    def opened(there: bool) -> None:
        if not there:
            window.status_message(f"Qwen Code: {file.path} was deleted in the worktree")
            return

        def texts() -> tuple[str, str] | None:
            try:
                base = base_bytes(worktree, file)
                return (decode(base, encoding).text if base is not None else "", read_text(full, encoding))
            except (WorktreeRefused, Refused, OSError):
                return None

        open_with_reference(window, full, texts)

    git_then(window, lambda: os.path.isfile(full), opened)


@threads.on_main
def keep(window: sublime.Window, worktree: Worktree, path: str) -> None:
    """The file is reviewed: listed as kept; its open view's reference becomes
    its own text (the view found on a thread of ours)."""
    _kept.setdefault(worktree.path, set()).add(path)
    named = _named_views(window)

    def kept(views: list[sublime.View]) -> None:
        for view in views:
            if view.is_valid():
                view.set_reference_document(view_text(view))

    git_then(window, lambda: _views_of(worktree_file(worktree, path), named), kept)


@threads.on_main
def drop_file(window: sublime.Window, worktree: Worktree, path: str) -> None:
    """The worktree's file back to its base: its views found and the file and
    its base read on a thread of ours; refused while it is open with unsaved
    edits, as seen on the main thread when it is written: a clean open view
    gets the base through the write path's buffer side, else the file on disk."""
    named = _named_views(window)
    encoding = fallback_encoding()

    def read() -> tuple[list[sublime.View], Dropping] | str:
        try:
            return _views_of(worktree_file(worktree, path), named), plan_drop(worktree, path)
        except (Refused, OSError) as error:
            return str(error)

    def write(read_then: tuple[list[sublime.View], Dropping] | str) -> None:
        if isinstance(read_then, str):
            done(read_then)
            return
        views, dropping = read_then
        views = [view for view in views if view.is_valid()]
        if any(view.is_dirty() for view in views):
            window.status_message(f"Qwen Code: {path} has unsaved edits in the worktree: not dropped")
            return
        if not views or dropping.base is None or dropping.now is None:
            git_then(window, lambda: _dropped_on_disk(worktree, dropping), done)
            return
        try:
            write_merged(views[0], decode(dropping.base, encoding).text, decode(dropping.now, encoding).text)
        except Refused as why_not:
            done(str(why_not))
            return
        done(None)

    def done(why_not: str | None) -> None:
        _kept.get(worktree.path, set()).discard(path)
        chats.tell("worktree_dropped", {"window": window.id(), "worktree": worktree.path, "path": path,
                                        "why": why_not})
        window.status_message(f"Qwen Code: {path} not dropped: {why_not}" if why_not
                              else f"Qwen Code: {path} is back to its base in the worktree {worktree.name}")

    git_then(window, read, write)


def _dropped_on_disk(worktree: Worktree, dropping: Dropping) -> str | None:
    """Drop of a file open in no view (or removed: a view keeps its text), on a thread of ours: None, or why not."""
    try:
        drop(worktree, dropping)
    except (Refused, OSError) as error:
        return str(error)
    return None


@threads.on_main
def apply_to_my_files(window: sublime.Window, worktree: Worktree, files: list[str] | None = None) -> None:
    """Merge the worktree's changes (or `files`) into the user's files; the
    open views (of every window: a file open with unsaved edits in another
    window is not written under it either) are looked at here, the merge runs
    on a thread of ours."""
    # Only the views' names and states here; their paths are resolved on a thread of ours.
    opened = [(name, view, view.is_dirty()) for open_window in sublime.windows() for view in open_window.views()
              if (name := view.file_name())]
    policy = userprefs().worktree_apply_conflicts
    encoding = fallback_encoding()

    def work() -> tuple[ApplyReport, list[tuple[ViewWrite, str, str]], dict[str, sublime.View]]:
        unsaved: set[str] = set()
        clean: dict[str, sublime.View] = {}
        top = os.path.realpath(worktree.repository)
        for name, view, dirty in opened:
            try:
                relative = os.path.relpath(os.path.realpath(name), top)
            except ValueError:  # another drive on Windows
                continue
            if relative.split(os.sep)[0] != os.pardir:
                key = relative.replace(os.sep, "/")
                if dirty:
                    unsaved.add(key)
                else:
                    clean[key] = view
        report = apply(worktree, files, policy=policy, unsaved=unsaved, in_views=set(clean) - unsaved,
                       saved=applied_saves.of(worktree.path))
        # The views get texts: (the write, the text merged from, the merged text), decoded as Sublime decodes files.
        texts = [(write, decode(write.ours, encoding).text, decode(write.new, encoding).text)
                 for write in report.in_views]
        return report, texts, clean

    git_then(window, work, lambda done: _into_views(window, worktree, encoding, *done))


def _into_views(window: sublime.Window, worktree: Worktree, encoding: str, report: ApplyReport,
                texts: list[tuple[ViewWrite, str, str]], clean: dict[str, sublime.View]) -> None:
    """The merges into their views; what a save rewrote of one is recorded (on a
    thread of ours: it reads the file) as the applied result before it is told."""
    rewritten: list[tuple[ViewWrite, str]] = []
    for write, ours, new in texts:
        view = clean[write.path]
        try:
            if not view.is_valid():
                raise Refused("closed while it was merged: nothing was written")
            saved = write_merged(view, new, ours)
        except Refused as why_not:
            report.applied = [o for o in report.applied if o.path != write.path]
            report.conflicts = [o for o in report.conflicts if o.path != write.path]
            report.refused.append(Outcome(write.path, str(why_not)))
            continue
        if saved != new and not view.is_dirty():
            rewritten.append((write, saved))
    if not rewritten:
        _tell(window, worktree, report)
        return

    def record() -> None:
        for write, saved in rewritten:
            record_save(applied_saves, worktree, write, saved, encoding)

    git_then(window, record, lambda _: _tell(window, worktree, report))


def _tell(window: sublime.Window, worktree: Worktree, report: ApplyReport) -> None:
    """What happened to each file: in the worktree's chat, the status bar and to observers."""
    lines = [f"Apply to My Files from the worktree {worktree.name}:"]
    lines += [f"  applied: {o.path}" + (f" ({o.why})" if o.why else "") for o in report.applied]
    lines += [f"  conflict: {o.path} ({o.why}; resolve the markers in your file)" for o in report.conflicts]
    lines += [f"  refused: {o.path} ({o.why})" for o in report.refused]
    chat = next((c for c in chats.of_window(window) if c.worktree is not None and c.worktree.path == worktree.path),
                None)
    if chat is not None:
        chat.note("\n".join(lines))
    if window.is_valid():
        window.status_message(f"Qwen Code: {len(report.applied)} applied, {len(report.conflicts)} with conflicts, "
                              f"{len(report.refused)} refused")
    chats.tell("worktree_applied", {"window": window.id(), "worktree": {"path": worktree.path,
                                                                         "branch": worktree.branch},
                                    **{kind: [asdict(o) for o in getattr(report, kind)]
                                       for kind in ("applied", "conflicts", "refused")}})


class QwenWorktreeChangesCommand(WorktreeChatCommand):
    """Qwen Code: Worktree Changes — the active chat's (or chat `chat`'s)
    worktree changes against its base: open, keep or drop each, or apply them."""

    def run(self, chat: int | None = None) -> None:
        worktree = self.chat_worktree(chat)
        if worktree is not None:
            show_changes(self.window, worktree)


class QwenWorktreeApplyCommand(WorktreeChatCommand):
    """Qwen Code: Apply to My Files — the active chat's (or chat `chat`'s)
    worktree changes (or only `files`) merged into the user's files."""

    def run(self, chat: int | None = None, files: list[str] | None = None) -> None:
        worktree = self.chat_worktree(chat)
        if worktree is not None:
            apply_to_my_files(self.window, worktree, files)

