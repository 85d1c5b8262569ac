"""Mentions in the composer with the BUILT package and the scripted ACP
agent: the completion popup and the `@` picker offer them, what each will
send is attached (and named in the status bar) before Enter, and it reaches
the agent's prompt; missing tools (LSP, git, a terminal, a clipboard tool)
are told. The main-thread watchdog fails any test whose mention waits on
Sublime's threads (git, the index, LSP, the clipboard tool)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.support.editor import PACKAGE, open_editor
from tests.support.lsp import install_lsp

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 64
SHELF = '''class Shelf:
    """Books on a shelf."""

    def add(self, book):
        self.books.append(book)


def unrelated():
    pass
'''


class MentionRig(ChatRig):
    def mentioned(self, count: int = 1) -> dict[str, Any]:
        """The `count`th mention event (added or failed)."""
        def found() -> list[dict[str, Any]] | None:
            events = [dict(d, event=e) for e, d in self.events if e in ("mention_added", "mention_failed")]
            return events if len(events) >= count else None

        return self.host.wait_for(found, timeout=WAIT)[count - 1]  # type: ignore[no-any-return]

    def mention(self, kind: str, name: str | None = None, count: int = 1) -> dict[str, Any]:
        self.open()
        self.host.user.run_command("qwen_chat_mention", {"kind": kind, **({"name": name} if name else {})})
        return self.mentioned(count)

    def composer_text(self) -> str:
        self.host.wait_idle()
        return self.editor.text(self.chat().composer_view)

    def prompt(self, text: str = "look") -> list[dict[str, Any]]:
        _, composer = self.open()
        self.host.user.focus(composer)
        self.host.user.type(composer, text)
        self.host.user.press_key("enter")
        self.ended()
        blocks: list[dict[str, Any]] = self.received("session/prompt")[-1]["params"]["prompt"]
        return blocks

    @property
    def mentions_module(self) -> Any:
        return sys.modules[f"{PACKAGE}.plugin.chat.prompts.mentions"]


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MentionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = MentionRig(editor, tmp_path)
        rig.host.watchdog.limit_ms = 200
        yield rig


def resources(blocks: list[dict[str, Any]]) -> dict[str, str]:
    return {b["resource"]["uri"]: b["resource"]["text"] for b in blocks if b["type"] == "resource"}


# --- @symbol -------------------------------------------------------------------------------


def test_a_symbol_from_the_index_sends_its_definition_and_place(rig: MentionRig) -> None:
    rig.load()
    path = rig.editor.file("lib/shelf.py", SHELF)  # closed: found through the index
    event = rig.mention("symbol", "Shelf")
    assert event["event"] == "mention_added" and event["token"] == "symbol:Shelf"
    assert event["chat"] == rig.chat().chat_id
    assert rig.composer_text() == "@symbol:Shelf "
    assert "@symbol:Shelf will send Shelf, shelf.py lines 1-5" in rig.host.status_messages[-1]
    sent = resources(rig.prompt("what is it?"))
    text = sent[f"{path.as_uri()}#L1-L5"]
    assert text.startswith(f"Shelf is defined at {path}:1-5:") and "self.books.append(book)" in text
    assert "unrelated" not in text
    assert "*Attached:" in rig.transcript()


def test_an_open_files_symbol_comes_from_its_unsaved_text(rig: MentionRig) -> None:
    rig.load()
    view = rig.editor.open("shelf.py", SHELF)
    rig.host.user.type(view, "# unsaved\n\n")  # at the start: the class moves down two lines
    rig.mention("symbol", "Shelf")
    sent = resources(rig.prompt())
    text = sent[f"{(rig.editor.workspace / 'shelf.py').as_uri()}#L3-L7"]
    assert "shelf.py:3-7:\n\nclass Shelf:" in text and text.endswith("self.books.append(book)")


def test_an_unknown_symbol_is_told(rig: MentionRig) -> None:
    rig.load()
    event = rig.mention("symbol", "Nowhere")
    assert event == {"event": "mention_failed", "window": rig.chat().window_id, "chat": rig.chat().chat_id,
                     "message": "Sublime's index has no definition of 'Nowhere'"}
    # The composer's `@token` ends at a space: a name with one could never be sent.
    assert rig.mention("symbol", "two words", count=2)["message"] == "@symbol needs a symbol's name (no spaces), not 'two words'"
    assert rig.composer_text() == ""


@pytest.mark.parametrize("opened", [True, False], ids=["open-tab", "index"])
def test_a_symbol_found_only_in_an_excluded_file_is_never_sent(rig: MentionRig, opened: bool) -> None:
    """Defect guarded: a symbol whose definition lies in a file matching
    excluded_file_patterns was sent with an `@symbol` mention."""
    rig.load(excluded_file_patterns=["secret_*.py"])
    secret = SHELF.replace("Books on a shelf.", "TOKEN=hunter2")
    if opened:
        rig.editor.open("keys/secret_shelf.py", secret)
    else:
        rig.editor.file("keys/secret_shelf.py", secret)
    event = rig.mention("symbol", "Shelf")
    assert event["event"] == "mention_failed"
    assert event["message"] == "Sublime's index has no definition of 'Shelf' outside excluded_file_patterns"
    assert "hunter2" not in json.dumps(rig.prompt("what is it?"))


def test_the_popup_offers_the_mentions_and_the_open_files_symbols(rig: MentionRig) -> None:
    rig.load()
    rig.editor.open("shelf.py", SHELF)
    _, composer = rig.open()
    rig.host.user.type(composer, "see @sy")
    names = [item.trigger for item in rig.host.user.query_completions(composer, "sy")]
    assert names == ["symbol:", "diagnostics", "diagnostics:window", "diff", "terminal"]
    rig.host.run_on_main(lambda: composer.run_command("auto_complete"))  # Ctrl+Space
    rig.host.user.press_key("enter")
    assert rig.composer_text() == "see @symbol:"  # and the names are listed
    popup = rig.host.wait_for(lambda: rig.host.app.view(composer.id()).auto_complete, timeout=WAIT)
    assert [item.trigger for item in popup] == ["Shelf", "add", "unrelated"]
    rig.host.user.press_key("escape")
    rig.host.user.type(composer, " x @symbol:")  # `:` opens the popup
    popup = rig.host.wait_for(lambda: rig.host.app.view(composer.id()).auto_complete, timeout=WAIT)
    assert [item.trigger for item in popup] == ["Shelf", "add", "unrelated"]
    rig.host.user.type(composer, "Sh")
    assert rig.host.user.press_key("enter").command == "commit_completion"  # type: ignore[union-attr]
    event = rig.mentioned()
    assert event["token"] == "symbol:Shelf" and rig.composer_text() == "see @symbol: x @symbol:Shelf"
    assert "symbol:Shelf" in rig.chat().attachments


def test_prose_with_colons_opens_no_popup(rig: MentionRig) -> None:
    rig.load()
    _, composer = rig.open()
    rig.host.user.type(composer, "note:")
    rig.host.wait_idle()
    assert not rig.host.app.view(composer.id()).auto_complete


def test_the_at_picker_lists_the_mentions_before_the_files(rig: MentionRig) -> None:
    rig.load()
    rig.editor.open("d.txt", "text\n")
    rig.open()
    rig.host.user.press_key("@")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    names = [str(getattr(i, "trigger", i)) for i in panel.items]
    assert names[:7] == ["@symbol:", "@diagnostics", "@diagnostics:window", "@diff", "@terminal", "@paste image", "d.txt"]
    rig.host.user.choose_quick_panel("@diff")
    event = rig.mentioned()
    assert event["event"] == "mention_failed" and "is not in a git repository" in event["message"]
    assert rig.composer_text() == "@"


# --- @diff ---------------------------------------------------------------------------------


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def test_the_diff_of_the_working_tree_goes_with_the_prompt(rig: MentionRig) -> None:
    workspace = rig.editor.workspace
    git(workspace, "init", "-q")
    rig.editor.file("a.txt", "one\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-q", "-m", "first")
    rig.editor.file("a.txt", "one\nchanged line\n")
    rig.load()
    event = rig.mention("diff")
    assert event["token"] == "diff" and event["summary"] == "1 changed, 0 untracked file(s)"
    assert rig.composer_text() == "@diff "
    diff = next(text for uri, text in resources(rig.prompt("review")).items() if uri.endswith("#uncommitted.diff"))
    assert "+changed line" in diff


def test_the_diff_never_runs_the_repositorys_external_diff(rig: MentionRig, tmp_path: Path) -> None:
    workspace = rig.editor.workspace
    git(workspace, "init", "-q")
    rig.editor.file("a.txt", "one\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-q", "-m", "first")
    external = tmp_path / "external.sh"
    external.write_text(f'#!/bin/sh\ntouch "{tmp_path}/ran"\n')
    external.chmod(0o755)
    git(workspace, "config", "diff.external", str(external))
    rig.editor.file("a.txt", "one\nchanged line\n")
    rig.load()
    assert rig.mention("diff")["summary"] == "1 changed, 0 untracked file(s)"
    assert not (tmp_path / "ran").exists()


def test_a_repository_layout_planted_in_the_project_runs_nothing_when_diffed(rig: MentionRig, tmp_path: Path) -> None:
    """Finding 1 as a hostile project: sub/HEAD, sub/config (not bare,
    worktree ".", an fsmonitor), sub/objects/, sub/refs/; @diff in sub/notes.md."""
    sub = rig.editor.workspace / "sub"
    (sub / "objects").mkdir(parents=True)
    (sub / "refs" / "heads").mkdir(parents=True)
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    monitor = tmp_path / "monitor.sh"
    monitor.write_text(f'#!/bin/sh\ntouch "{tmp_path}/ran"\n')
    monitor.chmod(0o755)
    (sub / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = {monitor}\n")
    rig.load()
    rig.host.user.open_file(rig.editor.file("sub/notes.md", "notes\n"))
    event = rig.mention("diff")
    assert not (tmp_path / "ran").exists()
    assert event["event"] == "mention_failed" and "not in a git repository" in event["message"]


def test_the_diff_is_of_the_window_folder_not_of_a_sibling_folder_that_starts_alike(rig: MentionRig) -> None:
    """The active file is in `<folder>-other`, a repository of its own beside
    the window's folder: the window folder's repository is diffed."""
    workspace = rig.editor.workspace
    other = workspace.parent / f"{workspace.name}-other"
    for root, line in ((workspace, "in the folder"), (other, "in the sibling")):
        root.mkdir(exist_ok=True)
        git(root, "init", "-q")
        (root / "a.txt").write_text("one\n")
        git(root, "add", "a.txt")
        git(root, "commit", "-q", "-m", "first")
        (root / "a.txt").write_text(f"one\n{line}\n")
    rig.load()
    rig.host.user.open_file(other / "a.txt")
    rig.mention("diff")
    diff = next(text for uri, text in resources(rig.prompt("review")).items() if uri.endswith("#uncommitted.diff"))
    assert "+in the folder" in diff and "in the sibling" not in diff


# --- @diagnostics --------------------------------------------------------------------------


def test_diagnostics_without_lsp_say_so(rig: MentionRig) -> None:
    rig.load()
    rig.editor.open("main.py", "import os\n")
    event = rig.mention("diagnostics")
    assert event["message"] == rig.mentions_module.NO_LSP


def test_diagnostics_of_the_active_file_and_of_the_window_from_lsp(rig: MentionRig) -> None:
    rig.load()
    main = rig.editor.workspace / "main.py"
    other = rig.editor.file("other.py", "x = 1\n")
    rig.editor.open("main.py", "import os\n")
    lsp = install_lsp(rig.host)
    bad = {"range": {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 9}},
           "severity": 2, "message": "unused import", "source": "Pyright"}
    lsp.SERVERS.append(lsp.FakeServer(name="LSP-pyright", suffix=".py", capabilities=set(), diagnostics={
        lsp.filename_to_uri(str(main)): [bad],
        lsp.filename_to_uri(str(other)): [dict(bad, message="other's")],
    }))
    event = rig.mention("diagnostics")
    assert event["token"] == "diagnostics" and event["summary"] == "1 in main.py"
    event = rig.mention("diagnostics:window", count=2)
    assert event["token"] == "diagnostics:window" and event["summary"] == "2 in the window"
    sent = resources(rig.prompt("fix them"))
    assert sent[main.as_uri() + "#diagnostics"].splitlines()[1] == f"{main}:1:8: Warning: unused import [Pyright]"
    assert "other's" in sent[rig.editor.workspace.as_uri() + "#diagnostics"]


def test_diagnostics_of_excluded_files_are_never_sent(rig: MentionRig) -> None:
    """Defect guarded (of the same kind as an excluded file's @symbol): the
    diagnostics of a file matching excluded_file_patterns were sent, for the
    active file or among the window's."""
    rig.load(excluded_file_patterns=["secret_*.py"])
    secret = rig.editor.workspace / "secret_keys.py"
    main = rig.editor.file("main.py", "import os\n")
    rig.editor.open("secret_keys.py", "TOKEN = 1\n")
    lsp = install_lsp(rig.host)
    bad = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}},
           "severity": 2, "message": "in main", "source": "Pyright"}
    lsp.SERVERS.append(lsp.FakeServer(name="LSP-pyright", suffix=".py", capabilities=set(), diagnostics={
        lsp.filename_to_uri(str(main)): [bad],
        lsp.filename_to_uri(str(secret)): [dict(bad, message="TOKEN=hunter2")],
    }))
    event = rig.mention("diagnostics")
    assert event["event"] == "mention_failed"
    assert event["message"] == "secret_keys.py is excluded from what is sent (excluded_file_patterns)"
    event = rig.mention("diagnostics:window", count=2)
    assert event["token"] == "diagnostics:window" and event["summary"] == "1 in the window"
    sent = resources(rig.prompt("fix them"))
    assert "in main" in sent[rig.editor.workspace.as_uri() + "#diagnostics"]
    assert "hunter2" not in json.dumps(sent)


# --- @terminal -----------------------------------------------------------------------------


def test_the_terminal_sends_its_last_lines_and_its_absence_is_told(rig: MentionRig) -> None:
    rig.load()
    assert "no running qwen terminal" in rig.mention("terminal")["message"]
    tag = sys.modules[f"{PACKAGE}.core.cli.terminal"].terminal_tag(rig.host.window.id())
    terminal = rig.host.user.new_file()
    rig.host.run_on_main(lambda: (terminal.settings().set("terminus_view.tag", tag), terminal.set_name("Qwen Code")))
    rig.host.user.type(terminal, "".join(f"output {i}\n" for i in range(500)))
    event = rig.mention("terminal", count=2)
    assert event["summary"] == "200 lines of Qwen Code"
    text = resources(rig.prompt("why did it fail?"))["terminal:///Qwen%20Code"]
    assert text.splitlines()[0] == "output 300" and text.endswith("output 499")


# --- a pasted image ------------------------------------------------------------------------


def test_paste_with_an_image_on_the_clipboard_attaches_it(rig: MentionRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load()
    monkeypatch.setattr(rig.mentions_module, "clipboard_image", lambda: PNG)
    _, composer = rig.open()
    rig.chat().core.start().result(WAIT)
    rig.host.sublime.set_clipboard("")
    rig.host.user.focus(composer)
    rig.host.user.press_key("primary+v")  # no text on the clipboard: its image
    event = rig.mentioned()
    assert event["event"] == "mention_added" and event["token"].startswith("image-")
    assert rig.composer_text() == f"@{event['token']} "
    images = [b for b in rig.prompt("what is this?") if b["type"] == "image"]
    assert images and images[0]["mimeType"] == "image/png"
    rig.host.sublime.set_clipboard("words")
    rig.host.user.press_key("primary+v")  # text pastes as text
    assert rig.composer_text() == "words"


def test_a_text_paste_over_16_mib_pastes_the_text_not_an_image(rig: MentionRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load()
    asked_for_image: list[bool] = []
    monkeypatch.setattr(rig.mentions_module, "clipboard_image", lambda: asked_for_image.append(True) or PNG)
    _, composer = rig.open()
    big = "x" * (16 * 1024 * 1024 + 1)  # one character past get_clipboard's default limit
    rig.host.sublime.set_clipboard(big)
    rig.host.watchdog.limit_ms = None  # the simulated buffer takes its time over 16 MiB; waits still count
    rig.host.user.focus(composer)
    rig.host.user.press_key("primary+v")
    rig.host.wait_for(lambda: composer.size() == len(big), timeout=WAIT)
    rig.host.wait_idle()
    assert asked_for_image == [] and rig.chat().attachments == {}


def test_an_agent_refusing_images_and_a_missing_tool_are_told(rig: MentionRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load()
    tools = sys.modules[f"{PACKAGE}.core.chat.prompts.mention_tools"]
    monkeypatch.setattr(tools.shutil, "which", lambda name: None)
    monkeypatch.setattr(tools.sys, "platform", "linux")
    rig.open()
    rig.host.user.run_command("qwen_chat_paste_image")  # the agent starts first
    assert "pasting an image needs wl-paste" in rig.mentioned()["message"]
    rig.chat().core.state.accepts_images = False
    rig.host.user.run_command("qwen_chat_paste_image")
    assert rig.mentioned(2)["message"] == "the agent does not take images (its promptCapabilities.image is false)"


def test_mention_from_the_palette_asks_for_the_symbol_offering_the_word_at_the_caret(rig: MentionRig) -> None:
    rig.load()
    code = rig.editor.open("shelf.py", SHELF)
    rig.host.user.set_selection(code, [SHELF.index("add") + 1])
    rig.open()
    rig.host.user.focus(code)
    rig.host.user.run_command("qwen_chat_mention")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in panel.items][-1] == "Paste image"
    rig.host.user.choose_quick_panel("@symbol:")
    asked = rig.host.wait_for(lambda: [p for p in rig.host.input_panels if not p.done], timeout=WAIT)[0]
    assert asked.initial_text == "add"
    rig.host.user.submit_input_panel()
    assert rig.mentioned()["token"] == "symbol:add"
    assert rig.composer_text() == "@symbol:add "


def test_an_unexpected_failure_is_told_not_left_waiting(rig: MentionRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load()

    def broken() -> bytes:
        raise RuntimeError("tool exploded")

    monkeypatch.setattr(rig.mentions_module, "clipboard_image", broken)
    rig.open()
    rig.chat().core.start().result(WAIT)
    rig.host.user.run_command("qwen_chat_paste_image")
    assert rig.mentioned()["message"] == "the mention failed: RuntimeError('tool exploded')"
