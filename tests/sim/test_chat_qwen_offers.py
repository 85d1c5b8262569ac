"""What qwen offers beside the chat, with the BUILT package and the scripted
agent (tests/rig/fake_acp_agent.py): the qwen-only gate (another agent is
told "not offered by this agent" and is sent none of qwen's methods),
hostile answers bounded and cleaned, a wrong shape said clearly without
breaking the chat, and an aside's later answer leaving the keys alone.
Against the real qwen: tests/e2e/test_qwen_offers_e2e.py."""

from __future__ import annotations

import json
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.support.editor import require_built
from tests.support.headless import HeadlessSublime

QWEN = {"agent_name": "qwen-code"}
BIDI, ESCAPE = "\u202e", "\x1b[31m"


def offers(module: str) -> Any:
    return sys.modules[f"QwenCompanion.plugin.chat.offers.{module}"]


def failure(future: Future[Any]) -> BaseException:
    error = future.exception(WAIT)
    assert error is not None
    return error


def started(rig: ChatRig, **script: Any) -> Any:
    rig.script_extras.update(script)
    rig.load([[{"chunks": ["First answer."]}], [{"chunks": ["Second answer."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    return rig.chat()


def test_an_agent_that_is_not_qwen_is_told_and_sent_none_of_qwens_methods(rig: ChatRig) -> None:
    chat = started(rig)
    window = rig.host.window
    answer = rig.host.run_on_main(lambda: offers("asides").ask(window, chat, "what did we say?")).result(WAIT)
    assert "not offered by this agent" in answer
    assert "not offered by this agent" in str(failure(rig.host.run_on_main(
        lambda: offers("recap_commands").summarize(window, chat))))
    assert "not offered by this agent" in str(failure(offers("status_panel").read(chat)))
    sent = {m["method"] for m in map(json.loads, rig.log.read_text().splitlines()) if "method" in m}
    assert not {method for method in sent if method.startswith("qwen/")}
    assert "what did we say?" not in rig.transcript()


def test_a_suggestion_from_another_agent_is_not_shown(rig: ChatRig) -> None:
    rig.load([[{"notify": "qwen/notify/session/prompt-suggestion", "params": {"sessionId": "", "suggestion": "do it"}},
               {"chunks": ["Done."]}]])
    rig.send("go")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_idle()
    chat = rig.chat()
    assert chat.core.state.suggestion is None
    assert rig.host.run_on_main(lambda: offers("suggestions").shown_suggestion(chat)) is None


def test_hostile_answers_are_bounded_and_cleaned(rig: ChatRig) -> None:
    hostile = f"{BIDI}evil{ESCAPE} line\n" + "x" * 200_000
    task = {"id": "t", "kind": "shell", "description": f"{BIDI}run{ESCAPE}" + "d" * 5000, "status": "running"}
    chat = started(rig, **QWEN, qwen_answers={
        "qwen/control/session/btw": {"answer": hostile},
        "qwen/control/session/recap": {"recap": hostile},
        "qwen/status/session/context_usage": {"usage": {"totalTokens": 1e30, "contextWindowSize": "big",
                                                        "modelName": f"m{BIDI}", "breakdown": {"messages": 5, "x": "y"}}},
        "qwen/status/session/stats": {"models": {"m": {"api": {"totalRequests": -4}, "tokens": {"prompt": True}}}},
        "qwen/status/session/tasks": {"tasks": [task] * 5000},
        "qwen/status/session/agents": {"tasks": []},
        "qwen/status/session/supported_commands": {"availableCommands": [{"name": f"b{BIDI}tw"}] * 3000},
        "qwen/providers/list": {"providers": [{"id": "p", "label": f"Prov{ESCAPE}", "existingConfig": {}}] + [7] * 10},
    })
    window = rig.host.window
    answer = rig.host.run_on_main(lambda: offers("asides").ask(window, chat, "q")).result(WAIT)
    assert len(answer) <= 64 * 1024 and BIDI not in answer and "\x1b" not in answer
    assert answer.startswith("evil[31m line\n")
    recap = rig.host.run_on_main(lambda: offers("recap_commands").summarize(window, chat)).result(WAIT)
    assert len(recap) <= 64 * 1024 and BIDI not in rig.transcript() and "\x1b" not in rig.transcript()
    report = offers("status_panel").read(chat).result(WAIT).report()
    assert report["context"] == {"used": 10**15, "size": 0, "parts": {"messages": 5}}
    assert report["stats"]["requests"] == 0 and report["stats"]["inputTokens"] == 0
    assert len(report["tasks"]) == 1000 and all(len(t["description"]) <= 200 for t in report["tasks"])
    assert BIDI not in report["tasks"][0]["description"] and "\x1b" not in report["tasks"][0]["description"]
    assert len(report["commands"]) == 1000 and report["commands"][0] == "btw"
    assert report["providers"] == ["Prov[31m"]


@pytest.mark.parametrize(("method", "answer", "said"), [
    ("qwen/control/session/recap", {"recap": 5}, "is not text"),
    ("qwen/control/session/recap", ["no"], "has no 'recap'"),
    ("qwen/status/session/stats", [], "is not an object"),
])
def test_an_answer_of_the_wrong_shape_is_said_and_the_chat_goes_on(rig: ChatRig, method: str, answer: Any,
                                                                    said: str) -> None:
    answers = {"qwen/control/session/recap": {"recap": "fine"}, "qwen/status/session/stats": {},
               **{m: {} for m in ("qwen/status/session/context_usage", "qwen/status/session/tasks",
                                  "qwen/status/session/agents", "qwen/status/session/supported_commands",
                                  "qwen/providers/list")}}
    chat = started(rig, **QWEN, qwen_answers={**answers, method: answer})
    window = rig.host.window
    asked = (rig.host.run_on_main(lambda: offers("recap_commands").summarize(window, chat))
             if method.endswith("recap") else offers("status_panel").read(chat))
    assert said in str(failure(asked))
    rig.send("still there?")
    assert rig.ended(2)[-1] == "end_turn"
    assert "Second answer." in rig.transcript()


def test_an_aside_answered_later_fills_its_tab_and_leaves_the_keys_alone(rig: ChatRig) -> None:
    chat = started(rig, **QWEN, qwen_answers={"qwen/control/session/btw": {"answer": "Later answer."}},
                   qwen_answer_delay=1.0)
    code = rig.editor.open("code.py", "x = 1\n")
    rig.host.user.focus(code)
    rig.host.user.run_command("qwen_chat_ask_aside", {"question": "why?"}, via="palette")
    rig.host.wait_idle()
    window = rig.host.window
    aside = rig.host.wait_for(lambda: next((v for v in window.views() if offers("asides").is_aside_view(v)), None),
                              timeout=WAIT)
    assert window.active_view() == code  # shown by the user's command, the keys kept
    assert window.get_view_index(aside)[0] == window.get_view_index(chat.transcript_view)[0]  # the chat's column
    assert "(answering…)" in rig.editor.text(aside)
    rig.host.wait_for(lambda: "Later answer." in rig.editor.text(aside), timeout=WAIT)
    assert window.active_view() == code
    assert "why?" not in rig.transcript() and "Later answer." not in rig.transcript()
    assert [(a.question, a.answer) for a in offers("asides").aside_thread(chat).asides()] == [("why?", "Later answer.")]


def test_a_suggestion_is_one_bounded_line_that_typing_dismisses(rig: ChatRig) -> None:
    suggestion = f"first{BIDI} line\nsecond line " + "y" * 2000
    rig.script_extras.update(QWEN)
    rig.load([[{"chunks": ["Done."]},
               {"notify": "qwen/notify/session/prompt-suggestion", "params": {"sessionId": "", "suggestion": suggestion}}]])
    rig.send("go")
    assert rig.ended() == ["end_turn"]
    chat = rig.chat()
    shown = rig.host.wait_for(lambda: rig.host.run_on_main(lambda: offers("suggestions").shown_suggestion(chat)),
                              timeout=WAIT)
    assert len(shown) <= 500 and "\n" not in shown and BIDI not in shown and shown.startswith("first line second line")
    composer = chat.composer_view
    ghosts = lambda: [c for _, _, c in rig.host.drawn_phantoms(composer) if "qwen-suggestion" in c]  # noqa: E731
    rig.host.wait_for(ghosts, timeout=WAIT)
    rig.host.user.type(composer, "n")
    rig.host.wait_idle()
    assert ghosts() == [] and offers("suggestions").shown_suggestion(chat) is None
    rig.host.user.backspace(composer)
    rig.host.wait_idle()
    assert ghosts() == []  # typed over: it does not come back
    rig.host.user.press_key("right")  # no suggestion shown: Right is Sublime's again
    assert rig.editor.text(composer) == ""


def test_the_driver_verbs_answer_in_their_shapes(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    script = tmp_path / "script.json"
    log = tmp_path / "agent-log.jsonl"
    script.write_text(json.dumps({**QWEN, "log": str(log), "turns": [
        [{"chunks": ["Hi."]}, {"notify": "qwen/notify/session/prompt-suggestion",
                               "params": {"sessionId": "", "suggestion": "run the tests"}}],
        [{"echo": "got: "}]],
        "qwen_answers": {
            "qwen/control/session/btw": {"answer": "Aside answer."},
            "qwen/control/session/recap": {"recap": "We said hi."},
            "qwen/status/session/context_usage": {"usage": {"totalTokens": 42, "contextWindowSize": 1000,
                                                            "breakdown": {"messages": 42}}},
            "qwen/status/session/stats": {"promptCount": 1},
            "qwen/status/session/tasks": {"tasks": []},
            "qwen/status/session/agents": {"tasks": []},
            "qwen/status/session/supported_commands": {"availableCommands": [{"name": "btw"}]},
            "qwen/providers/list": {"providers": []}}}))
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    (user / "QwenCompanion.sublime-settings").write_text(json.dumps(
        {"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)]}))
    editor = HeadlessSublime(workspace, home)
    try:
        chat = editor.do("chat", text="hello")["chat"]
        assert editor.wait_event(lambda e: e.get("event") == "chat_turn_ended")["stopReason"] == "end_turn"
        assert editor.do("aside", text="what?", chat=chat)["answer"] == "Aside answer."
        assert editor.do("asides", chat=chat)["asides"] == [{"question": "what?", "answer": "Aside answer."}]
        assert editor.do("recap", chat=chat)["text"] == "We said hi."
        status = editor.do("session_status", chat=chat)
        assert status["context"] == {"used": 42, "size": 1000, "parts": {"messages": 42}}
        assert status["stats"]["prompts"] == 1 and status["commands"] == ["btw"] and status["model"] == "fake-model"
        assert status["tasks"] == [] and status["agents"] == []
        assert editor.do("suggestion", chat=chat)["text"] == "run the tests"
        assert editor.do("suggestion_accept", chat=chat)["text"] == "run the tests"
        assert editor.do("suggestion", chat=chat)["text"] is None
        made = editor.do("chat_new", from_summary=chat)
        assert made["ok"] and made["chat"] != chat
        editor.do("chat", text="go on", chat=made["chat"])
        assert editor.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e.get("chat") == made["chat"])
        assert "got: @summary go on" in editor.do("chat_text", chat=made["chat"])["text"]
        prompts = [m["params"]["prompt"] for m in map(json.loads, log.read_text().splitlines())
                   if m.get("method") == "session/prompt"]
        assert any("We said hi." in block.get("resource", {}).get("text", "") for block in prompts[-1])
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def test_session_status_is_asked_again_while_its_panel_is_shown(rig: ChatRig) -> None:
    started(rig, **QWEN, qwen_answers={
        "qwen/status/session/context_usage": {"usage": {"totalTokens": 7, "contextWindowSize": 100}},
        **{m: {} for m in ("qwen/status/session/stats", "qwen/status/session/tasks", "qwen/status/session/agents",
                           "qwen/status/session/supported_commands", "qwen/providers/list")}})
    window = rig.host.window
    code = rig.editor.open("code.py", "x = 1\n")
    rig.host.user.focus(code)
    rig.host.user.run_command("qwen_chat_session_status", via="palette")
    panel = rig.host.wait_for(lambda: window.find_output_panel("qwen_session_status"), timeout=WAIT)
    rig.host.wait_for(lambda: "Context: 7 of 100 tokens (7.0%)" in rig.editor.text(panel), timeout=WAIT)
    assert window.active_panel() == "output.qwen_session_status" and window.active_view() == code
    rig.host.wait_for(lambda: len(rig.received("qwen/status/session/stats")) >= 2, timeout=WAIT)  # asked again
    rig.host.run_on_main(lambda: window.run_command("hide_panel"))
    rig.host.wait_for(lambda: window.id() not in offers("status_panel")._refreshing, timeout=WAIT)  # the loop ended


def test_remember_notes_what_qwen_did_and_open_memory_files_opens_the_pick(rig: ChatRig) -> None:
    memory_file = rig.tmp / "QWEN.md"
    memory_file.write_text("# Memory\n")
    chat = started(rig, **QWEN, qwen_answers={
        "qwen/control/workspace/memory/remember": {"summary": "Memory update completed.",
                                                   "filesTouched": ["/m/testing.md"], "touchedScopes": ["project"]},
        "qwen/settings/getMemoryPaths": {"paths": {"userMemoryFile": str(memory_file),
                                                   "projectMemoryFile": str(rig.tmp / "none.md")}}})
    window = rig.host.window
    rig.host.user.run_command("qwen_chat_remember", {"text": "tests run with make test"}, via="palette")
    rig.host.wait_for(lambda: "Memory (remember): Memory update completed. (/m/testing.md)" in rig.transcript(),
                      timeout=WAIT)
    assert rig.received("qwen/control/workspace/memory/remember")[0]["params"]["content"] == "tests run with make test"
    rig.host.user.run_command("qwen_chat_open_memory", via="palette")
    panel = rig.host.wait_for(lambda: next((q for q in rig.host.quick_panels if not q.done), None), timeout=WAIT)
    assert [item.trigger for item in panel.items] == ["your memory (every project)", "this project's memory"]
    rig.host.user.choose_quick_panel(0)
    rig.host.wait_idle()
    assert window.active_view().file_name() == str(memory_file)
    assert chat.core.state.agent_status == "ready"


def test_memory_is_not_asked_of_another_agent(rig: ChatRig) -> None:
    chat = started(rig)
    asked = rig.host.run_on_main(
        lambda: offers("memory_commands").change_memory(rig.host.window, chat, "forget", "x"))
    assert "not offered by this agent" in str(failure(asked))
    assert rig.received("qwen/control/workspace/memory/forget") == []
