"""No file is read on Sublime's main thread or its shared worker thread when
a review is proposed or accepted: a chat edit request, a quick action's
proposal, Generate Unit Tests' test file and Accept's check that the file
did not change on disk (a stat; its text read off the main thread only when
only its time moved)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_actions import AREA, FIXED, ActionRig
from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import EDIT_OPTIONS, request, wait_answers
from tests.support.editor import PACKAGE, Editor, open_editor


class ReadThreads:
    """Which threads read files for reviews: ("plugin", path) for the main or worker thread."""

    def __init__(self, editor: Editor, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: list[tuple[str, str]] = []
        # Every review's read ends in its reader's one read of the bytes,
        # whichever module called `read_disk_file`.
        reviews = sys.modules[f"{PACKAGE}.core.reviews"]
        original = reviews._read_bytes
        host = editor.host

        def recorded(path: str, *args: Any) -> Any:
            on_plugin_thread = host.is_main_thread() or host.is_worker_thread()
            self.reads.append(("plugin" if on_plugin_thread else "own", path))
            return original(path, *args)

        monkeypatch.setattr(reviews, "_read_bytes", recorded)

    def on_plugin_threads(self) -> list[str]:
        return [path for where, path in self.reads if where == "plugin"]


@pytest.fixture
def action_rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ActionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ActionRig(editor, tmp_path)


def test_a_chat_edit_review_and_its_accept_read_nothing_on_the_main_thread(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = rig.editor.workspace
    path = workspace / "hello.py"
    path.write_text("print('hi')\n")
    diff = {"type": "diff", "path": str(path), "oldText": "print('hi')\n", "newText": "print('hello')\n"}
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "Edit hello.py",
                                 "locations": [{"path": str(path)}], "content": [diff]},
                       options=EDIT_OPTIONS)]])
    reads = ReadThreads(rig.editor, monkeypatch)
    rig.send("edit")
    views = rig.host.wait_for(lambda: found if len(found := rig.editor.review_views()) == 2 else None, timeout=WAIT)
    rig.host.wait_idle()
    path.write_text("print('hi')\n")  # saved again, same text: only its time moves
    rig.host.user.focus(views[-1])
    rig.host.user.run_command("qwen_accept_diff")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_once"}}]
    assert [p for _, p in reads.reads] == [str(path), str(path)]  # proposed, then compared on Accept
    assert reads.on_plugin_threads() == []


def test_accept_after_a_change_of_size_on_disk_warns_without_reading(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = rig.editor.workspace
    path = workspace / "b.py"
    path.write_text("b = 1\n")
    diff = {"type": "diff", "path": str(path), "oldText": "b = 1\n", "newText": "b = 2\n"}
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e2", "status": "pending", "kind": "edit", "title": "Edit b.py",
                                 "locations": [{"path": str(path)}], "content": [diff]},
                       options=EDIT_OPTIONS)]])
    rig.send("edit")
    views = rig.host.wait_for(lambda: found if len(found := rig.editor.review_views()) == 2 else None, timeout=WAIT)
    rig.host.wait_idle()
    reads = ReadThreads(rig.editor, monkeypatch)
    path.write_text("b = 10000\n")
    rig.host.user.focus(views[-1])
    rig.host.user.run_command("qwen_accept_diff")
    rig.host.wait_for(lambda: "changed on disk" in rig.editor.banner_html(views[-1]), timeout=WAIT)
    assert reads.reads == []
    rig.host.user.run_command("qwen_chat_cancel")
    assert rig.ended() == ["cancelled"]


def test_quick_action_proposals_read_their_files_off_the_main_thread(action_rig: ActionRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig = action_rig
    rig.load([{"text": f"```python\n{FIXED}```\n"}])
    reads = ReadThreads(rig.editor, monkeypatch)
    view = rig.open_area()
    rig.run("fix")
    assert rig.finished() == ["proposed"]
    rig.decide("qwen_accept_diff")
    assert rig.editor.text(view) == AREA.replace("3.14", "math.pi")
    assert [Path(p).name for _, p in reads.reads] == ["geometry.py"]
    assert reads.on_plugin_threads() == []


def test_the_unit_test_file_is_read_off_the_main_thread(action_rig: ActionRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig = action_rig
    rig.load([{"text": "Cases:\n```json\n" + json.dumps(["area of radius 0 is 0"]) + "\n```"}])
    reads = ReadThreads(rig.editor, monkeypatch)
    (rig.editor.workspace / "tests").mkdir()
    (rig.editor.workspace / "tests" / "test_geometry.py").write_text("import geometry\n")
    rig.open_area()
    rig.run("unit_tests")
    assert rig.finished() == ["answered"]
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.log.unlink()
    rig.steps([{"text": "```python\ndef test_zero():\n    pass\n```"}])
    rig.host.user.choose_quick_panel(0)
    assert rig.finished(2) == ["answered", "proposed"]
    proposed = next(v for v in rig.host.window.views() if v.name() == "test_geometry.py (Qwen Code proposal)")
    assert rig.editor.text(proposed) == "import geometry\n\n\ndef test_zero():\n    pass\n"
    assert [Path(p).name for _, p in reads.reads] == ["test_geometry.py"]
    assert reads.on_plugin_threads() == []


def test_attaching_a_closed_file_reads_it_off_the_main_thread(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.load()
    rig.editor.file("c.txt", "on disk\n")
    context = __import__(f"{PACKAGE}.core.chat.prompts.prompt_context", fromlist=["read_head"])
    original = context.read_head
    threads: list[bool] = []

    def recorded(path: str, limit: int) -> bytes:
        threads.append(rig.host.is_main_thread() or rig.host.is_worker_thread())
        return original(path, limit)

    monkeypatch.setattr(context, "read_head", recorded)
    _, composer = rig.open()
    rig.host.user.press_key("@")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    rig.host.user.choose_quick_panel([str(getattr(i, "trigger", i)) for i in panel.items].index("c.txt"))
    rig.host.wait_for(lambda: rig.editor.text(composer) == "@c.txt ", timeout=WAIT)
    assert threads == [False]
    rig.host.user.press_key("enter")
    rig.ended()
    blocks = rig.received("session/prompt")[0]["params"]["prompt"]
    assert [b["resource"]["text"] for b in blocks if b["type"] == "resource"] == ["on disk\n"]
