"""Quick actions against the real `qwen` (0.24.4) in stream-json mode and the
fake model: the built package in the simulated editor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rig.fake_model import FakeModel, Reply, tool_call, user_texts
from tests.rig.qwen_cli import QwenCli
from tests.support.actions import ActionsUser
from tests.support.editor import PACKAGE, Editor, open_editor
from tests.support.processes import alive, descendants

pytestmark = pytest.mark.e2e
WAIT = 90.0
SOURCE = "import math\n\n\ndef area(r):\n    return 3.14 * r * r\n\n\ndef unused_marker():\n    pass\n"
SELECTED = "def area(r):\n    return 3.14 * r * r\n"


class RealActions(ActionsUser):
    def __init__(self, editor: Editor, model: FakeModel, workspace: Path) -> None:
        super().__init__(editor, WAIT)
        self.model, self.workspace = model, workspace
        self.watch()
        self.path = workspace / "geometry.py"
        self.path.write_text(SOURCE)
        self.view = self.host.user.open_file(self.path)
        begin = SOURCE.index(SELECTED)
        self.host.user.set_selection(self.view, [(begin, begin + len(SELECTED))])

    def last_request(self) -> str:
        return json.dumps(self.model.agent_requests[-1].get("messages", []), ensure_ascii=False)


@pytest.fixture
def real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qwen_env: dict[str, str], qwen_cli: QwenCli,
         fake_model: FakeModel, workspace: Path) -> Iterator[RealActions]:
    for key, value in qwen_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("QWEN_HOME", raising=False)
    with open_editor(tmp_path, monkeypatch, home=Path(qwen_env["HOME"]), workspace=workspace, load=False) as editor:
        monkeypatch.delenv("QWEN_HOME", raising=False)
        editor.load([workspace], {"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)], "actions_language": "zh"})
        yield RealActions(editor, fake_model, workspace)


def test_explain_streams_the_models_answer_and_sends_the_selection_and_places(real: RealActions) -> None:
    answer = "This computes the area of a circle. " * 20
    real.model.queue(Reply(text=answer, chunk_size=9, delay=0.01))
    real.run("explain")
    assert real.finished() == ["answered"]
    assert answer.strip() in real.answer()
    job = sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions.jobs[real.host.window.id()]
    assert job.stream.updates > 3  # streamed in pieces, not shown at the end
    assert "4:1-6:1 · `fake-model`" in real.answer()  # the header names the model the CLI used
    body = real.last_request()
    assert "return 3.14 * r * r" in body and "(4:1-6:1)" in body  # the selection and its place
    assert "def unused_marker" in body and "(1:1-" in body  # the visible text and its place
    assert "请用简体中文回答" in body  # actions_language "zh"


@pytest.mark.parametrize("action", ["docstring", "optimize", "fix"])
def test_a_proposal_opens_the_review_and_accept_changes_the_tab_exactly(real: RealActions, action: str) -> None:
    fixed = "def area(r):\n    return math.pi * r * r\n"
    real.model.queue(f"Use math.pi.\n\n```python\n{fixed}```")
    real.run(action)
    assert real.finished() == ["proposed"]
    proposed = real.host.wait_for(
        lambda: next((v for v in real.host.window.views() if "(Qwen Code proposal)" in v.name()), None), timeout=WAIT)
    assert real.editor.text(proposed) == SOURCE.replace(SELECTED, fixed)
    real.host.user.focus(proposed)
    real.host.user.run_command("qwen_accept_diff")
    real.host.wait_idle()
    assert real.editor.text(real.view) == SOURCE.replace(SELECTED, fixed)
    assert real.path.read_text() == SOURCE  # the tab changed; saving stays the user's


def test_a_model_trying_to_edit_is_refused_and_the_file_is_unchanged(real: RealActions) -> None:
    real.model.queue(
        tool_call("edit", {"file_path": str(real.path), "old_string": "3.14", "new_string": "math.pi"}),
        tool_call("write_file", {"file_path": str(real.path), "content": "gone\n"}),
        tool_call("web_fetch", {"url": "http://127.0.0.1:9/", "prompt": "read it"}),
        "I could not change the file.",
    )
    real.run("explain")
    assert real.finished() == ["answered"]
    assert real.path.read_text() == SOURCE
    assert real.editor.text(real.view) == SOURCE
    assert "I could not change the file." in real.answer()
    # The CLI refuses the excluded editing tools itself; a tool that asks
    # (web_fetch) reaches the package, which denies it.
    results = json.dumps(real.model.agent_requests[-1]["messages"])
    assert results.count("requires permission") == 2 and "[Operation Cancelled]" in results
    assert "Refused (quick actions are read-only): web_fetch" in real.answer()


def test_cancel_mid_stream_ends_the_process(real: RealActions) -> None:
    real.model.queue(Reply(text="slow words " * 400, chunk_size=5, delay=0.05))
    real.run("explain")
    real.host.wait_for(lambda: "slow words" in real.answer(), timeout=WAIT)
    job = sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions.jobs[real.host.window.id()]
    pid = job.run.pid
    real.host.user.run_command("qwen_cancel_action")
    assert real.finished() == ["cancelled"]
    assert real.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def test_a_second_action_cancels_the_first(real: RealActions) -> None:
    real.model.queue(Reply(text="first answer " * 400, chunk_size=5, delay=0.05), "The second answer.")
    real.run("explain")
    real.host.wait_for(lambda: "first answer" in real.answer(), timeout=WAIT)
    first = sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions.jobs[real.host.window.id()]
    real.host.user.focus(real.view)  # the answer view has the focus now
    real.run("ask", question="And briefly?")
    assert sorted(real.finished(2)) == ["answered", "cancelled"]
    assert real.host.wait_for(lambda: not alive(first.run.pid), timeout=WAIT)
    assert "The second answer." in real.answer()
    assert any("And briefly?" in text for text in user_texts(real.model.agent_requests[-1]))


def test_the_file_reference_send_selection_types_is_one_the_cli_reads(
    qwen_env: dict[str, str], qwen_cli: QwenCli, fake_model: FakeModel, workspace: Path, real: RealActions
) -> None:
    """The same at-command code reads `-p` prompts and the TUI's: the
    package's `@path lines a-b` reads the file; the CLI has no range syntax,
    so `@path:a-b` names a file that does not exist and reads nothing."""
    mention = sys.modules[f"{PACKAGE}.core.actions.mention"].file_mention
    nested = workspace / "src" / "shapes.py"
    nested.parent.mkdir()
    nested.write_text(SOURCE)
    typed = mention(str(nested), str(workspace), 4, 5, windows=False)
    assert typed == "@src/shapes.py lines 4-5 "
    for prompt, read in ((typed + "what does it do?", True), ("@src/shapes.py:4-5 what does it do?", False)):
        fake_model.queue("It computes an area.")
        subprocess.run([str(qwen_cli.node), str(qwen_cli.entry), "-p", prompt], cwd=workspace, env=qwen_env,
                       capture_output=True, timeout=WAIT, check=True)
        assert ("def unused_marker" in json.dumps(fake_model.agent_requests[-1])) is read, prompt


def test_unit_tests_recommend_cases_then_propose_the_test_file(real: RealActions) -> None:
    cases = ["radius 0 gives 0", "radius 2 gives 12.56"]
    tests = "from geometry import area\n\n\ndef test_zero():\n    assert area(0) == 0\n"
    real.model.queue("Cases:\n```json\n" + json.dumps(cases) + "\n```", f"```python\n{tests}```")
    real.run("unit_tests")
    assert real.finished() == ["answered"]
    assert "Function area 4:1-" in real.last_request() and "def unused_marker" in real.last_request()
    panel = real.host.wait_for(lambda: [q for q in real.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert panel.items[1:] == [f"☑ {case}" for case in cases]
    real.host.user.choose_quick_panel(0)
    assert real.finished(2) == ["answered", "proposed"]
    assert "- radius 0 gives 0\\n- radius 2 gives 12.56" in real.last_request()
    proposed = next(v for v in real.host.window.views() if v.name() == "test_geometry.py (Qwen Code proposal)")
    assert real.editor.text(proposed) == tests
    real.host.user.focus(proposed)
    real.host.user.run_command("qwen_accept_diff")
    real.host.wait_idle()
    target = real.workspace / "tests" / "test_geometry.py"
    tab = real.host.wait_for(lambda: real.host.window.find_open_file(str(target)), timeout=WAIT)
    assert real.editor.text(tab) == tests and not target.exists()


def test_choose_model_lists_the_models_the_cli_offers(real: RealActions) -> None:
    settings_file = Path(os.environ["HOME"]) / ".qwen" / "settings.json"  # the CLI's, read when it starts
    settings = json.loads(settings_file.read_text())
    provider = {"baseUrl": os.environ["OPENAI_BASE_URL"], "envKey": "OPENAI_API_KEY"}
    settings["modelProviders"] = {"openai": [{"id": "fake-model", "name": "Fake", **provider},
                                             {"id": "fake-coder", "name": "Fake Coder", **provider}]}
    settings_file.write_text(json.dumps(settings))
    real.host.user.run_command("qwen_choose_action_model")
    panel = real.host.wait_for(lambda: [q for q in real.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [item.trigger for item in panel.items] == ["The CLI's default model", "fake-model", "fake-coder"]
    real.host.user.choose_quick_panel(2)
    real.host.wait_idle()
    real.model.queue("An answer.")
    real.run("explain")
    assert real.finished() == ["answered"], real.answer()
    assert real.model.agent_requests[-1]["model"] == "fake-coder"
    assert "· `fake-coder`" in real.answer()


def test_cancel_ends_the_node_the_qwen_launcher_started_too(real: RealActions, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without QWEN_CODE_NO_RELAUNCH (as users run it) the CLI starts itself
    again in a child node with a bigger heap; ending the process group ends
    both (the SDK's close() ends only its direct child: the node stays)."""
    monkeypatch.delenv("QWEN_CODE_NO_RELAUNCH")
    real.model.queue(Reply(text="slow words " * 400, chunk_size=5, delay=0.05))
    real.run("explain")
    real.host.wait_for(lambda: "slow words" in real.answer(), timeout=WAIT)
    job = sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions.jobs[real.host.window.id()]
    started = [pid for pid in descendants(job.run.pid) if alive(pid)]
    assert started  # the relaunched CLI
    real.host.user.run_command("qwen_cancel_action")
    assert real.finished() == ["cancelled"]
    assert real.host.wait_for(lambda: not any(alive(pid) for pid in [job.run.pid, *started]), timeout=WAIT)


def test_without_credentials_the_clis_reason_is_in_the_answer_view(
    real: RealActions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    real.run("explain")
    assert real.finished() == ["failed"]
    failure = real.answer().split("**Failed:**", 1)[1].strip()
    assert failure.startswith("Missing API key for OpenAI-compatible auth.") and "OPENAI_API_KEY" in failure
