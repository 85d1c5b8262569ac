"""What the transcript folds, decided from each edit's text alone (WorkFolds)."""

from __future__ import annotations

from qwencompanion_src.core.chat.transcript.folds import WorkFolds
from qwencompanion_src.core.chat.transcript.transcript import Edit, Transcript


class View:
    """A transcript view: the edits applied, the folds made."""

    def __init__(self) -> None:
        self.text = ""
        self.folds: list[str] = []
        self.work = WorkFolds()

    def apply(self, edit: Edit) -> None:
        self.text = self.text[: edit.offset] + edit.text + self.text[edit.offset + edit.erase :]
        self.folds += [self.text[a:b] for a, b in self.work.edit(edit.offset, edit.erase, edit.text)]


def test_a_streamed_thought_folds_once_something_follows_it() -> None:
    transcript, view = Transcript(), View()
    view.apply(transcript.append("t1.user", "## You\nhi\n\n"))
    view.apply(transcript.append("t1.thought", "▸ Thinking\n> "))
    view.apply(transcript.upsert("t1.thought.end", "\n\n"))
    for chunk in ["Pon", "der", "ing.\nmore"]:
        view.apply(transcript.append("t1.thought", chunk.replace("\n", "\n> ")))
    assert view.folds == []  # still streaming
    view.apply(transcript.upsert("tool.c1", "◌ read `a` — in_progress\n\n"))
    assert view.folds == ["\n> Pondering.\n> more"]
    view.apply(transcript.upsert("tool.c1", "✓ read `a` — completed\n\n"))
    view.apply(transcript.append("t1.answer", "Done."))
    assert view.folds == ["\n> Pondering.\n> more"]  # once


def test_long_finished_outputs_fold_and_short_or_running_ones_do_not() -> None:
    transcript, view = Transcript(), View()
    rows = "".join(f"    row {n}\n" for n in range(8))
    view.apply(transcript.upsert("tool.a", "◌ execute `ls` — in_progress\n" + rows + "\n"))
    view.apply(transcript.upsert("tool.b", "✓ execute `pwd` — completed\n    /\n\n"))
    view.apply(transcript.upsert("tool.a", "✓ execute `ls` — completed\n" + rows + "\n"))
    assert view.folds == ["\n" + rows[:-1]]


def test_a_whole_transcript_at_once_folds_what_has_ended() -> None:
    view = View()
    rows = "".join(f"    row {n}\n" for n in range(6))
    text = "▸ Thinking\n> a\n\n✗ read `x` — failed\n" + rows + "\n▸ Thinking\n> still"
    view.apply(Edit(0, 0, text))
    assert view.folds == ["\n> a", "\n" + rows[:-1]]
    view.apply(Edit(len(view.text), 0, "\n\n"))
    view.apply(Edit(len(view.text), 0, "answer"))
    assert view.folds[-1] == "\n> still"


def test_a_cleared_transcript_forgets_the_open_thought() -> None:
    view = View()
    view.apply(Edit(0, 0, "▸ Thinking\n> a"))
    view.apply(Edit(len(view.text), 0, "\n\n"))
    view.apply(Edit(0, len(view.text), ""))
    view.apply(Edit(0, 0, "new chat\n\nanswer"))
    assert view.folds == []
