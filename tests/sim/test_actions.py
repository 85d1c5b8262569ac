"""Quick actions in the simulated editor with the BUILT package and a
scripted stream-json CLI (tests/rig/fake_stream_cli.py) as `qwen_command`:
the commands and menus, the prompt the CLI gets, the answer view,
proposals in the shared review (accept = one undo step, reject, a changed
tab), cancel, the pool, denied tools, a dying CLI and the timeout."""

from __future__ import annotations

import json
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.actions import ActionsUser
from tests.support.editor import PACKAGE, Editor, open_editor
from tests.support.processes import alive
from tests.support.terminus import install_terminus, terminus_calls, terminus_sent

FAKE_CLI = Path(__file__).resolve().parents[1] / "rig" / "fake_stream_cli.py"
WAIT = 15.0
AREA = '''\
import math


def area(r):
    return 3.14 * r * r


def unused():
    pass
'''
MIB = 1024 * 1024
LINE_BYTES = 96 * MIB  # a stream-json line three times the 32 MiB limit
FIXED = "def area(r):\n    return math.pi * r * r\n"


class ActionRig(ActionsUser):
    def __init__(self, editor: Editor, tmp: Path) -> None:
        super().__init__(editor, WAIT)
        self.log = tmp / "cli-log.jsonl"
        self.script = tmp / "script.json"
        self.script_extras: dict[str, Any] = {}  # more keys of the CLI's script (e.g. "grandchild")

    def load(self, steps: list[dict[str, Any]], **settings: Any) -> None:
        self.steps(steps)
        self.editor.load([self.editor.workspace], {"qwen_command": [sys.executable, str(FAKE_CLI), str(self.script)],
                                                   **settings})
        self.watch()

    def steps(self, steps: list[dict[str, Any]]) -> None:
        self.script.write_text(json.dumps({"steps": steps, "log": str(self.log), **self.script_extras}))

    def open_area(self, select: str | None = "def area(r):\n    return 3.14 * r * r\n") -> Any:
        view = self.editor.open("geometry.py", AREA)
        if select is not None:
            begin = AREA.index(select)
            self.host.user.set_selection(view, [(begin, begin + len(select))])
        return view

    def received(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def decide(self, command: str) -> None:
        """The user answers the open proposal's review from its tab (accept or reject)."""
        proposed = next(v for v in self.host.window.views() if "(Qwen Code proposal)" in v.name())
        self.host.user.focus(proposed)
        self.host.user.run_command(command)
        self.host.wait_idle()

    def prompt(self) -> str:
        user = next(m for m in self.received() if m.get("type") == "user")
        return str(user["message"]["content"])


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ActionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ActionRig(editor, tmp_path)


def test_explain_streams_into_the_answer_view(rig: ActionRig) -> None:
    rig.load([{"text": "It computes the **area** of a circle.", "chunks": 5}])
    rig.open_area()
    rig.run("explain")
    assert rig.finished() == ["answered"]
    answer = rig.answer()
    assert answer.startswith("# Explain Selection\n")
    assert "geometry.py` 4:1-6:1" in answer
    assert "It computes the **area** of a circle." in answer
    assert [e for e, _ in rig.events] == ["action_started", "action_finished"]


def test_the_cli_is_read_only_and_gets_the_selection_the_visible_text_and_their_places(rig: ActionRig) -> None:
    rig.load([{"text": "ok"}], actions_language="zh")
    rig.open_area()
    rig.run("explain")
    rig.finished()
    argv = rig.received()[0]["argv"]
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[argv.index("--input-format") + 1] == "stream-json"
    assert "--include-partial-messages" in argv
    excluded = argv[argv.index("--exclude-tools") + 1].split(",")
    assert {"edit", "write_file", "run_shell_command"} <= set(excluded)
    prompt = rig.prompt()
    assert "geometry.py (Python)" in prompt
    assert "The selected code (4:1-6:1)" in prompt and "    return 3.14 * r * r" in prompt
    assert "What the editor shows around it (1:1-" in prompt and "def unused():" in prompt
    assert "请用简体中文回答" in prompt
    assert rig.received()[1]["request"]["subtype"] == "initialize"


def test_with_nothing_selected_the_function_around_the_caret_is_taken(rig: ActionRig) -> None:
    rig.load([{"text": "ok"}])
    view = rig.open_area(select=None)
    caret = AREA.index("3.14")
    rig.host.user.set_selection(view, [(caret, caret)])
    rig.run("explain")
    rig.finished()
    assert "this is the function area around the cursor" in rig.prompt()
    assert "def unused" not in rig.prompt().split("The selected code")[1].split("What the editor")[0]


def test_nothing_to_act_on_is_said_and_runs_nothing(rig: ActionRig) -> None:
    rig.load([{"text": "ok"}])
    view = rig.editor.open("notes.txt", "just words\n")
    rig.host.user.set_selection(view, [(0, 0)])
    rig.run("explain")
    rig.host.wait_idle()
    assert rig.events == [] and not rig.log.exists()


def test_ask_takes_the_users_question(rig: ActionRig) -> None:
    rig.load([{"text": "Because pi."}])
    rig.open_area()
    rig.run("ask", question="Why 3.14?")
    rig.finished()
    assert "Why 3.14?" in rig.prompt()
    assert "> Why 3.14?" in rig.answer()


def test_fix_proposes_the_replacement_in_the_review_and_accept_is_one_undo_step(rig: ActionRig) -> None:
    rig.load([{"text": f"Use math.pi.\n\n```python\n{FIXED}```\n", "chunks": 4}])
    view = rig.open_area()
    reviews = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"].reviews
    opened: list[dict[str, Any]] = []
    reviews.observers.append(lambda event, details: opened.append({"event": event, **details}))
    rig.run("fix")
    assert rig.finished() == ["proposed"]
    diff = next(d for d in opened if d["event"] == "diff_opened")
    proposed = next(v for v in rig.host.window.views() if v.id() == diff["proposed_view"])
    assert rig.editor.text(proposed) == AREA.replace("3.14", "math.pi")
    assert (rig.editor.workspace / "geometry.py").read_text() == AREA  # nothing written
    assert "Accept applies this to the tab as one undo step" in rig.editor.banner_html(proposed)
    rig.host.user.focus(proposed)
    rig.host.user.run_command("qwen_accept_diff")
    rig.host.wait_idle()
    assert rig.editor.text(view) == AREA.replace("3.14", "math.pi")
    assert (rig.editor.workspace / "geometry.py").read_text() == AREA  # saving stays the user's
    rig.host.run_on_main(lambda: view.run_command("undo"))
    assert rig.editor.text(view) == AREA


def test_accept_of_a_fix_leaves_a_tab_typed_in_since_as_the_user_left_it(rig: ActionRig) -> None:
    """The one write path: an accepted proposal never replaces what the user
    typed after the proposal was made."""
    rig.load([{"text": f"```python\n{FIXED}```"}])
    view = rig.open_area()
    rig.run("fix")
    assert rig.finished() == ["proposed"]
    rig.host.user.set_selection(view, [(0, 0)])
    rig.host.user.type(view, "# mine\n")
    rig.decide("qwen_accept_diff")
    assert rig.editor.text(view) == "# mine\n" + AREA
    assert any("changed since the proposal was made; nothing was applied" in m for m in rig.host.status_messages)


def test_reject_changes_nothing(rig: ActionRig) -> None:
    rig.load([{"text": f"```\n{FIXED}```"}])
    view = rig.open_area()
    rig.run("optimize")
    assert rig.finished() == ["proposed"]
    rig.decide("qwen_reject_diff")
    assert rig.editor.text(view) == AREA


def test_a_tab_edited_after_the_proposal_is_not_changed(rig: ActionRig) -> None:
    rig.load([{"text": f"```\n{FIXED}```"}])
    view = rig.open_area()
    rig.run("docstring")
    assert rig.finished() == ["proposed"]
    rig.host.user.replace(view, (0, 0), "# mine\n")
    rig.decide("qwen_accept_diff")
    assert rig.editor.text(view) == "# mine\n" + AREA


def test_an_answer_without_a_code_block_proposes_nothing(rig: ActionRig) -> None:
    rig.load([{"text": "I would not change it."}])
    rig.open_area()
    rig.run("fix")
    assert rig.finished() == ["answered"]
    assert "No code block in the answer" in rig.answer()


def test_cancel_ends_the_run_and_its_process(rig: ActionRig) -> None:
    rig.load([{"text": "thinking"}, {"stall": 30}])
    rig.open_area()
    rig.run("explain")
    job = rig.host.wait_for(lambda: rig.actions.jobs.get(rig.host.window.id()), timeout=WAIT)
    pid = rig.host.wait_for(lambda: job.run is not None and job.run.pid, timeout=WAIT)
    rig.host.wait_for(lambda: "thinking" in rig.answer(), timeout=WAIT)
    rig.host.user.run_command("qwen_cancel_action")
    assert rig.finished() == ["cancelled"]
    assert "*Cancelled.*" in rig.answer()
    assert rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def test_esc_in_the_answer_view_cancels(rig: ActionRig) -> None:
    rig.load([{"stall": 30}])
    rig.open_area()
    rig.run("explain")
    rig.host.wait_for(lambda: rig.actions.jobs.get(rig.host.window.id()) is not None, timeout=WAIT)
    rig.host.wait_idle()
    answer = next(v for v in rig.host.window.views() if v.settings().get("qwen_actions.answer"))
    rig.host.user.focus(answer)
    rig.host.user.press_key("escape")
    assert rig.finished() == ["cancelled"]


def test_a_second_action_cancels_the_first(rig: ActionRig) -> None:
    rig.load([{"stall": 30}])
    rig.open_area()
    rig.run("explain")
    first = rig.host.wait_for(lambda: rig.actions.jobs.get(rig.host.window.id()), timeout=WAIT)
    pid = rig.host.wait_for(lambda: first.run is not None and first.run.pid, timeout=WAIT)
    rig.host.wait_for(lambda: any(m.get("type") == "user" for m in rig.received()), timeout=WAIT)  # script read
    rig.steps([{"text": "second"}])
    rig.open_area()
    rig.run("explain")
    assert sorted(rig.finished(2)) == ["answered", "cancelled"]
    assert rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert "second" in rig.answer()


def test_a_tool_asking_permission_is_denied(rig: ActionRig) -> None:
    rig.load([{"tool": "edit", "input": {"file_path": "geometry.py"}}, {"text": "could not edit"}])
    rig.open_area()
    rig.run("explain")
    assert rig.finished() == ["answered"]
    denial = next(m for m in rig.received() if m.get("type") == "control_response")
    assert denial["response"]["response"]["behavior"] == "deny"
    assert "Refused (quick actions are read-only): edit" in rig.answer()


def test_a_cli_dying_mid_stream_fails_with_its_stderr(rig: ActionRig) -> None:
    rig.load([{"text": "half an ans"}, {"die": 3}])
    rig.open_area()
    rig.run("explain")
    assert rig.finished() == ["failed"]
    assert "exit code 3" in rig.answer() and "dying" in rig.answer()


def test_a_run_past_the_timeout_is_stopped(rig: ActionRig) -> None:
    rig.load([{"stall": 30}], actions_timeout_s=1)
    rig.open_area()
    rig.run("explain")
    assert rig.finished() == ["failed"]
    assert "stopped after 1 s" in rig.answer()


def test_a_missing_qwen_names_the_setting(rig: ActionRig) -> None:
    rig.load([])
    rig.editor.settings({"qwen_command": "no-such-qwen-here"})
    rig.open_area()
    rig.run("explain")
    rig.host.wait_idle()
    assert rig.events == []
    assert any(d.kind == "error" and "qwen_command" in d.message for d in rig.host.dialogs)


def test_the_commands_are_in_the_palette_and_menus(rig: ActionRig) -> None:
    rig.load([])
    root = rig.host.packages_dir / PACKAGE
    palette = json.loads((root / "Default.sublime-commands").read_text())
    actions = {c["args"]["action"] for c in palette if c["command"] == "qwen_action"}
    assert actions == {"explain", "docstring", "optimize", "fix", "ask", "unit_tests"}
    others = {"qwen_cancel_action", "qwen_choose_action_model", "qwen_send_selection_to_terminal"}
    assert others <= {c["command"] for c in palette}
    main_menu = (root / "Main.sublime-menu").read_text()
    assert all(f'"action": "{action}"' in main_menu for action in actions)
    assert all(f'"{command}"' in main_menu for command in others)
    context = json.loads((root / "Context.sublime-menu").read_text())[1]["children"]
    assert {c["args"]["action"] for c in context if c.get("command") == "qwen_action"} == actions
    assert any(c.get("command") == "qwen_send_selection_to_terminal" for c in context)


def test_the_context_menu_shows_the_actions_only_over_selected_text(rig: ActionRig) -> None:
    rig.load([])
    view = rig.open_area()
    action = sys.modules[f"{PACKAGE}.plugin.actions.action_commands"].QwenActionCommand(view)
    send = sys.modules[f"{PACKAGE}.plugin.actions.send_to_terminal"].QwenSendSelectionToTerminalCommand(view)

    def visible() -> list[bool]:
        return list(rig.host.run_on_main(lambda: [
            action.is_visible(action="fix", only_with_selection=True), send.is_visible(only_with_selection=True),
            action.is_visible(action="fix"),
        ]))

    assert visible() == [True, True, True]
    rig.host.user.set_selection(view, [(3, 3)])
    assert visible() == [False, False, True]


def test_unit_tests_recommend_cases_then_propose_a_test_file_that_accept_opens_unsaved(rig: ActionRig) -> None:
    cases = ["area of radius 0 is 0", "area of radius 2", "negative radius raises"]
    rig.load([{"text": "Cases:\n```json\n" + json.dumps(cases) + "\n```"}])
    rig.open_area()
    rig.run("unit_tests")
    assert rig.finished() == ["answered"]
    first_prompt = rig.prompt()
    assert "Function area 4:1-" in first_prompt  # the symbols of the code under test
    assert "def unused():" in first_prompt.split("The whole file:")[1]
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert panel.items[0] == "Generate tests for the 3 chosen cases"
    assert panel.items[1:] == [f"☑ {case}" for case in cases]
    tests = "from geometry import area\n\n\ndef test_zero():\n    assert area(0) == 0\n"
    rig.log.unlink()
    rig.steps([{"text": f"```python\n{tests}```"}])
    rig.host.user.choose_quick_panel(2)  # unchoose "area of radius 2"
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert panel.items[0] == "Generate tests for the 2 chosen cases" and panel.items[2].startswith("☐")
    rig.host.user.choose_quick_panel(0)
    assert rig.finished(2) == ["answered", "proposed"]
    second_prompt = rig.prompt()
    assert "- area of radius 0 is 0\n- negative radius raises" in second_prompt
    assert "area of radius 2" not in second_prompt
    target = rig.editor.workspace / "tests" / "test_geometry.py"
    proposed = next(v for v in rig.host.window.views() if v.name() == "test_geometry.py (Qwen Code proposal)")
    assert rig.editor.text(proposed) == tests
    rig.host.user.focus(proposed)
    rig.host.user.run_command("qwen_accept_diff")
    rig.host.wait_idle()
    tab = rig.host.wait_for(lambda: rig.host.window.find_open_file(str(target)), timeout=WAIT)
    assert rig.editor.text(tab) == tests and tab.is_dirty()
    assert not target.exists()  # saving stays the user's
    assert "Qwen Code: the tests are in tests/test_geometry.py (not saved yet)" in rig.host.status_messages


def test_accept_of_a_test_file_leaves_its_tab_typed_in_since_as_the_user_left_it(rig: ActionRig) -> None:
    rig.load([{"text": "Cases:\n```json\n[\"area of radius 0 is 0\"]\n```"}])
    tab = rig.editor.open("tests/test_geometry.py", "import geometry\n")
    rig.open_area()
    rig.run("unit_tests")
    assert rig.finished() == ["answered"]
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.steps([{"text": "```python\ndef test_zero():\n    pass\n```"}])
    rig.host.user.choose_quick_panel(0)
    assert rig.finished(2) == ["answered", "proposed"]
    rig.host.user.set_selection(tab, [(0, 0)])
    rig.host.user.type(tab, "# mine\n")
    rig.decide("qwen_accept_diff")
    assert rig.editor.text(tab) == "# mine\nimport geometry\n"
    assert any("changed since the proposal was made" in m for m in rig.host.status_messages)


def test_the_header_names_the_model_the_cli_reports(rig: ActionRig) -> None:
    rig.load([{"text": "ok"}])
    rig.script.write_text(json.dumps({"steps": [{"text": "ok"}], "log": str(rig.log), "model": "qwen-reported"}))
    rig.open_area()
    rig.run("explain")
    rig.finished()
    assert rig.answer().split("\n")[2].endswith("· `qwen-reported`")


def test_the_chosen_model_is_passed_to_the_cli(rig: ActionRig) -> None:
    rig.load([{"text": "ok"}], actions_model="chosen-model")
    rig.open_area()
    rig.run("explain")
    rig.finished()
    argv = rig.received()[0]["argv"]
    assert argv[argv.index("--model") + 1] == "chosen-model"


def running_pid(rig: ActionRig, window: Any) -> int:
    job = rig.host.wait_for(lambda: rig.actions.jobs.get(window.id()), timeout=WAIT)
    pid: int = rig.host.wait_for(lambda: job.run is not None and job.run.pid, timeout=WAIT)
    rig.host.wait_for(lambda: any(m.get("type") == "user" for m in rig.received()), timeout=WAIT)
    return pid


def test_closing_the_window_cancels_its_action_and_ends_the_process(rig: ActionRig) -> None:
    rig.load([{"stall": 30}])
    rig.open_area()
    rig.run("explain")
    pid = running_pid(rig, rig.host.window)
    rig.host.user.close_window(rig.host.window)
    assert rig.finished() == ["cancelled"]
    assert rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def test_unloading_the_package_ends_the_process(rig: ActionRig) -> None:
    rig.load([{"stall": 30}])
    rig.open_area()
    rig.run("explain")
    pid = running_pid(rig, rig.host.window)
    rig.host.unload_package(PACKAGE)
    assert rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def test_beyond_actions_max_running_an_action_waits_for_a_place(rig: ActionRig) -> None:
    rig.load([{"stall": 30}], actions_max_running=1)
    first_window = rig.host.window
    rig.open_area()
    rig.run("explain")
    pid = running_pid(rig, first_window)
    second_window = rig.host.user.new_window()
    rig.host.user.set_folders([rig.editor.workspace], window=second_window)
    view = rig.host.user.open_file(rig.editor.workspace / "geometry.py", window=second_window)
    rig.host.user.set_selection(view, [(0, 11)])
    rig.steps([{"text": "second window's answer"}])
    rig.run("explain")
    rig.host.wait_idle()
    assert "Qwen Code: Explain Selection waits for another action to end" in rig.host.status_messages
    assert [e for e, _ in rig.events] == ["action_started"]  # only the first runs
    rig.host.user.focus_window(first_window)
    rig.host.user.run_command("qwen_cancel_action")
    assert rig.finished(2) == ["cancelled", "answered"]
    assert [d["window"] for e, d in rig.events if e == "action_finished"] == [first_window.id(), second_window.id()]
    assert rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def test_choose_model_lists_the_clis_models_and_remembers_the_choice(rig: ActionRig) -> None:
    models = [{"id": "qwen3-coder-plus", "label": "Qwen3 Coder Plus"}, {"id": "qwen3-max", "label": "qwen3-max"}]
    rig.load([{"text": "ok"}])
    rig.script.write_text(json.dumps({"steps": [{"text": "ok"}], "log": str(rig.log), "models": models}))
    rig.host.user.run_command("qwen_choose_action_model")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [item.trigger for item in panel.items] == ["The CLI's default model", "qwen3-coder-plus", "qwen3-max"]
    assert panel.items[1].details == "Qwen3 Coder Plus" and panel.items[0].annotation == "current"
    rig.host.user.choose_quick_panel(2)
    rig.host.wait_idle()
    user_settings = json.loads((rig.host.packages_dir / "User" / "QwenCompanion.sublime-settings").read_text())
    assert user_settings["actions_model"] == "qwen3-max"
    rig.log.unlink()
    rig.open_area()
    rig.run("explain")
    rig.finished()
    argv = rig.received()[0]["argv"]
    assert argv[argv.index("--model") + 1] == "qwen3-max"
    assert "· `qwen3-max`" in rig.answer()


def test_send_selection_to_terminal_types_the_file_reference_into_the_windows_qwen(rig: ActionRig) -> None:
    record = rig.editor.root / "terminus.jsonl"
    install_terminus(rig.host, record)
    rig.load([])
    rig.open_area()
    rig.host.user.run_command("qwen_send_selection_to_terminal")
    rig.host.wait_idle()
    assert terminus_sent(record) == []
    assert "Qwen Code: no qwen runs in a terminal of this window; start one with Open in Terminal" in rig.host.status_messages
    rig.host.user.run_command("qwen_open_terminal")
    rig.host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    rig.host.wait_idle()
    nested = rig.editor.open("src/shapes.py", AREA)
    rig.host.user.set_selection(nested, [(AREA.index("def area"), AREA.index("def unused"))])
    rig.host.user.run_command("qwen_send_selection_to_terminal")
    rig.host.wait_idle()
    tag = f"qwen-code-window-{rig.host.window.id()}"
    assert terminus_sent(record) == [{"string": "@src/shapes.py lines 4-7 ", "tag": tag}]
    assert rig.host.window.active_panel() == "output.Qwen Code"


def test_the_elapsed_time_is_in_the_status_bar_while_the_action_runs(rig: ActionRig) -> None:
    rig.load([{"text": "thinking"}, {"stall": 30}])
    view = rig.open_area()
    rig.run("explain")
    rig.host.wait_for(lambda: "thinking" in rig.answer(), timeout=WAIT)
    answer = next(v for v in rig.host.window.views() if v.settings().get("qwen_actions.answer"))
    rig.host.wait_for(lambda: answer.get_status("qwen_action") == "Qwen: Explain Selection… 1 s", timeout=WAIT)
    assert view.get_status("qwen_action").startswith("Qwen: Explain Selection…")
    rig.host.user.run_command("qwen_cancel_action")
    rig.finished()
    assert answer.get_status("qwen_action") == view.get_status("qwen_action") == ""


def test_a_prompt_template_in_packages_user_replaces_the_packages(rig: ActionRig) -> None:
    rig.load([{"text": "ok"}])
    mine = rig.host.packages_dir / "User" / PACKAGE / "prompts" / "explain.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("Explain like a pirate, in $answer_language terms:\n$selection")
    rig.open_area()
    rig.run("explain")
    rig.finished()
    assert rig.prompt() == "Explain like a pirate, in Answer in English. terms:\ndef area(r):\n    return 3.14 * r * r\n"


def test_a_message_past_the_line_limit_and_endless_stderr_fail_the_run_in_bounded_memory(rig: ActionRig) -> None:
    """Issue 24, item 9: a stream-json line over the limit stops the run with a
    clear message while stderr pours out one line without end; the package
    keeps what the limits allow, and the CLI is ended."""
    rig.load([{"stderr": 0}, {"line": LINE_BYTES}, {"stall": 30}])
    limit = sys.modules[f"{PACKAGE}.core.actions.process"].MAX_LINE_BYTES
    assert limit < LINE_BYTES
    rig.open_area()
    tracemalloc.start()
    try:
        rig.run("explain")
        job = rig.host.wait_for(lambda: rig.actions.jobs.get(rig.host.window.id()), timeout=WAIT)
        pid = rig.host.wait_for(lambda: job.run is not None and job.run.pid, timeout=WAIT)
        outcome = rig.host.wait_for(lambda: rig.outcomes(), timeout=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome == ["failed"]
    assert f"qwen sent a message longer than {limit:,} bytes; the run was stopped" in rig.answer()
    assert peak < 2 * limit + 16 * MIB  # the line is kept up to the limit, stderr a few cut lines
    assert rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
