"""The chat in the simulated editor, with the BUILT package and the scripted
ACP agent (tests/rig/fake_acp_agent.py) as `qwen_command`: the views, the
composer's keys, queueing, following the end, history, the mode and model
pickers, slash completions, reload, and no agent left after a window closes."""

from __future__ import annotations

import importlib.abc
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.sublime_sim._watchdog import DEFAULT_LIMIT_MS
from tests.support.editor import PACKAGE, Editor, drawn_transcript, open_editor
from tests.support.processes import alive

FAKE_AGENT = Path(__file__).resolve().parents[1] / "rig" / "fake_acp_agent.py"
WAIT = 15.0


class ChatRig:
    def __init__(self, editor: Editor, tmp: Path) -> None:
        self.editor = editor
        self.host = editor.host
        self.tmp = tmp
        self.log = tmp / "agent-log.jsonl"
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.script_extras: dict[str, Any] = {}  # more keys of the agent's script (e.g. "grandchild")

    def load(self, turns: list[list[dict[str, Any]]] | None = None, **settings: Any) -> None:
        script = self.tmp / "script.json"
        script.write_text(json.dumps({"turns": turns or [], "state": str(self.tmp / "agent-state"), "log": str(self.log),
                                      **self.script_extras}))
        self.editor.load([self.editor.workspace], {"qwen_command": [sys.executable, str(FAKE_AGENT), str(script)], **settings})
        self.watch()

    def watch(self) -> None:
        self.chats.observers.append(lambda event, details: self.events.append((event, details)))

    @property
    def chats(self) -> Any:
        return sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats

    def chat(self) -> Any:
        return self.chats.get(self.host.window)

    def open(self) -> tuple[Any, Any]:
        self.host.user.run_command("qwen_chat")
        self.host.wait_idle()
        chat = self.chat()
        return chat.transcript_view, chat.composer_view

    def send(self, text: str) -> None:
        _, composer = self.open()
        self.host.user.type(composer, text)
        self.host.user.press_key("enter")

    def ended(self, count: int = 1) -> list[str]:
        self.host.wait_for(lambda: len([e for e in self.events if e[0] == "chat_turn_ended"]) >= count, timeout=WAIT)
        return [d["stopReason"] for e, d in self.events if e == "chat_turn_ended"]

    def transcript(self) -> str:
        self.host.wait_idle()
        return drawn_transcript(self.host, self.chat(), self.editor.text, WAIT)

    def received(self, method: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [m for m in map(json.loads, self.log.read_text().splitlines()) if m.get("method") == method]

    def answered(self, method: str, count: int = 1) -> list[Any]:
        """The editor's answers to the agent's `method` requests, once `count` are logged."""
        def logged() -> list[Any] | None:
            lines = map(json.loads, self.log.read_text().splitlines()) if self.log.exists() else iter(())
            found = [m["answer"] for m in lines if m.get("answer_to") == method]
            return found if len(found) >= count else None

        found: list[Any] = self.host.wait_for(logged, timeout=WAIT)
        return found


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ChatRig(editor, tmp_path)


def test_chat_opens_a_transcript_and_composer_beside_the_code(rig: ChatRig) -> None:
    rig.load()
    code = rig.editor.open("a.py", "x = 1\n")
    transcript, composer = rig.open()
    window = rig.host.window
    assert window.num_groups() == 3
    assert window.get_view_index(transcript)[0] == 1 and window.get_view_index(composer)[0] == 2
    assert window.get_view_index(code)[0] == 0
    assert transcript.is_read_only() and transcript.is_scratch() and composer.is_scratch()
    assert transcript.settings().get("syntax", "").endswith("QwenChat.sublime-syntax") or "QwenChat" in str(transcript.syntax())
    assert window.active_view() == composer


def test_enter_sends_and_the_answer_streams_into_the_transcript(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["Hello ", "from ", "the agent."]}]])
    rig.send("hi there")
    assert rig.ended() == ["end_turn"]
    text = rig.transcript()
    assert "## You\n\nhi there" in text and "Hello from the agent." in text
    _, composer = rig.open()
    assert rig.editor.text(composer) == ""
    assert rig.received("session/prompt")[0]["params"]["prompt"][0] == {"type": "text", "text": "hi there"}


def test_shift_enter_is_a_newline_and_up_recalls_earlier_prompts(rig: ChatRig) -> None:
    rig.load()
    _, composer = rig.open()
    rig.host.user.type(composer, "line one")
    rig.host.user.press_key("shift+enter")
    rig.host.user.type(composer, "line two")
    assert rig.editor.text(composer) == "line one\nline two"
    rig.host.user.press_key("enter")
    rig.ended()
    rig.send("second")
    rig.ended(2)
    rig.host.user.press_key("up")
    assert rig.editor.text(composer) == "second"
    rig.host.user.press_key("up")
    assert rig.editor.text(composer) == "line one\nline two"
    rig.host.user.press_key("down")
    assert rig.editor.text(composer) == "second"


def test_prompts_typed_while_busy_are_queued_and_sent_in_order(rig: ChatRig) -> None:
    rig.load([[{"stall": 0.5}, {"chunks": ["one done"]}], [{"chunks": ["two done"]}]])
    rig.send("one")
    rig.send("two")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    assert [p["params"]["prompt"][0]["text"] for p in rig.received("session/prompt")] == ["one", "two"]
    text = rig.transcript()
    assert text.index("one done") < text.index("## You\n\ntwo") < text.index("two done")


def test_escape_cancels_the_turn(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["working"]}, {"stall": 30}]])
    rig.send("go")
    rig.host.wait_for(lambda: "working" in rig.chat().core.streamer.transcript.text(), timeout=WAIT)
    rig.host.user.press_key("escape")
    assert rig.ended() == ["cancelled"]
    assert "> cancelled" in rig.transcript()


def test_the_active_file_and_selection_go_with_the_prompt_unless_excluded(rig: ChatRig) -> None:
    rig.load()
    code = rig.editor.open("a.py", "first\nsecond line\nthird\n")
    rig.host.user.set_selection(code, [rig.host.sublime.Region(6, 17)])
    rig.send("explain")
    rig.ended()
    rig.host.assert_no_errors()
    blocks = rig.received("session/prompt")[0]["params"]["prompt"]
    uri = (rig.editor.workspace / "a.py").as_uri()
    assert blocks[1]["type"] == "resource_link" and blocks[1]["uri"] == uri
    assert "line 2" in blocks[1]["description"]
    assert blocks[2]["resource"] == {"uri": f"{uri}#L2-L2", "mimeType": "text/plain", "text": "second line"}
    secret = rig.editor.open(".env", "KEY=1\n")
    rig.host.user.focus(secret)
    rig.send("and this?")
    rig.ended(2)
    assert rig.received("session/prompt")[1]["params"]["prompt"] == [{"type": "text", "text": "and this?"}]


def test_a_multibyte_selection_under_16384_characters_goes_cut_to_16_kib(rig: ChatRig) -> None:
    rig.load()
    text = "汉字" * 3000  # 6,000 characters, 18,000 bytes of UTF-8
    code = rig.editor.open("zh.txt", text)
    rig.host.user.set_selection(code, [rig.host.sublime.Region(0, len(text))])
    rig.send("translate")
    rig.ended()
    selection = rig.received("session/prompt")[0]["params"]["prompt"][2]["resource"]["text"]
    assert len(selection.encode("utf-8")) <= 16 * 1024 and selection.endswith("... [TRUNCATED]")
    assert text.startswith(selection[: -len("... [TRUNCATED]")])


def test_the_transcript_follows_new_text_only_while_the_caret_is_at_the_end(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["first answer\n\n"]}], [{"chunks": ["second answer"]}]])
    rig.send("one")
    rig.ended()
    transcript, _ = rig.open()
    rig.transcript()
    assert transcript.sel()[0].b == transcript.size()
    rig.host.user.set_selection(transcript, [0])
    rig.send("two")
    rig.ended(2)
    rig.transcript()
    assert transcript.sel()[0].b == 0


def test_slash_completions_and_local_commands(rig: ChatRig) -> None:
    rig.load()
    chat = rig.chat
    rig.host.user.run_command("qwen_chat")
    rig.host.wait_idle()
    rig.chat().core.start().result(WAIT)
    rig.host.wait_for(lambda: rig.chat().core.state.commands, timeout=WAIT)
    _, composer = rig.open()
    rig.host.user.type(composer, "/")
    names = [item.trigger for item in rig.host.user.query_completions(composer, "")]
    assert {"clear", "help", "status", "compress", "memory"} <= set(names)
    rig.host.user.type(composer, "status")
    # As in Sublime, Enter first picks the highlighted completion, then sends.
    assert rig.host.user.press_key("enter").command == "commit_completion"  # type: ignore[union-attr]
    assert rig.editor.text(composer) == "/status"
    rig.host.user.press_key("enter")
    text = rig.host.wait_for(lambda: "Session:" in rig.transcript() and rig.transcript(), timeout=WAIT)
    assert f"Session: {rig.chat().core.state.session_id}" in text and "Pid: " in text
    assert rig.received("session/prompt") == []
    first = rig.chat().core.state.session_id
    rig.send("/clear")
    rig.host.wait_for(lambda: rig.chat().core.state.session_id != first, timeout=WAIT)
    assert chat is not None


def test_mode_and_model_pickers_and_the_status_bar(rig: ChatRig) -> None:
    rig.load()
    rig.open()
    rig.chat().core.start().result(WAIT)
    rig.host.user.run_command("qwen_chat_mode")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in panel.items] == ["Plan", "Default", "YOLO"]
    rig.host.user.choose_quick_panel(0)
    rig.host.wait_for(lambda: rig.chat().core.state.mode_id == "plan", timeout=WAIT)
    rig.host.user.run_command("qwen_chat_model")
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(1)
    rig.host.wait_for(lambda: rig.chat().core.state.model_id == "$runtime|openai|other-model(openai)", timeout=WAIT)
    rig.host.wait_idle()
    _, composer = rig.open()
    status = composer.get_status("qwen_chat")
    assert "Plan" in status and "other-model" in status
    rig.host.user.press_key("shift+tab")
    rig.host.wait_for(lambda: rig.chat().core.state.mode_id == "default", timeout=WAIT)


def test_closing_the_chat_views_keeps_the_session_and_reopening_shows_it(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["kept answer"]}]])
    rig.send("remember")
    rig.ended()
    transcript, composer = rig.open()
    session = rig.chat().core.state.session_id
    rig.host.user.close(transcript)
    rig.host.user.close(composer)
    transcript, _ = rig.open()
    assert "kept answer" in rig.transcript()
    assert rig.chat().core.state.session_id == session


def test_closing_the_window_ends_its_agent(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}]])
    rig.send("go")
    pid = rig.host.wait_for(lambda: rig.chat().core.pid, timeout=WAIT)
    assert alive(pid)
    rig.host.user.close_window(rig.host.window)
    rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)


def test_reloading_the_package_ends_the_agent_and_the_chat_comes_back(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["before reload"]}]])
    rig.send("one")
    rig.ended()
    pid = rig.chat().core.pid
    session = rig.chat().core.state.session_id
    rig.host.reload_package(PACKAGE)
    rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    rig.watch()
    rig.host.user.run_command("qwen_chat")  # right after the reload: the chat imports off the main thread
    rig.editor.wait_for_package_threads("start", "preload")
    rig.host.wait_idle()
    rig.chat().core.start().result(WAIT)
    assert rig.chat().core.state.session_id == session
    assert "before reload" in rig.chat().core.streamer.transcript.text()


class _SlowStart(importlib.abc.MetaPathFinder):
    """Holds the companion's start thread before its first module runs, until
    `until()` (as a busy machine can), and notes which thread first imports
    aiohttp. It holds in the loader: a finder runs under the global import
    lock, which would hold every thread's imports."""

    def __init__(self, until: Callable[[], bool]) -> None:
        self.until = until
        self.held = False
        self.aiohttp_importer: str | None = None

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> ModuleSpec | None:
        thread = threading.current_thread().name
        if name == f"{PACKAGE}._vendor.aiohttp" and self.aiohttp_importer is None:
            self.aiohttp_importer = thread
        if thread != f"{PACKAGE} start" or self.held or not name.startswith(f"{PACKAGE}."):
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return None
        self.held = True
        spec.loader = _HeldLoader(spec.loader, self.until)
        return spec


class _HeldLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, until: Callable[[], bool]) -> None:
        self.loader = loader
        self.until = until

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        deadline = time.monotonic() + WAIT
        while not self.until() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.loader.exec_module(module)


def test_a_chat_opened_while_the_server_starts_imports_aiohttp_off_the_main_thread(
    rig: ChatRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig.load()
    slow = _SlowStart(until=lambda: rig.chat() is not None)
    monkeypatch.setattr(sys, "meta_path", [slow, *sys.meta_path])
    rig.host.reload_package(PACKAGE)  # the package imports its libraries anew
    rig.host.user.run_command("qwen_chat")
    rig.host.wait_for(lambda: rig.chat() is not None, timeout=WAIT)
    rig.editor.wait_for_package_threads("start", "preload")
    rig.host.wait_idle()
    assert slow.held
    # The chat's own thread imports it before the chat opens on the main thread.
    assert slow.aiohttp_importer == f"{PACKAGE} preload"
    assert rig.host.watchdog.take() == []


def test_quitting_ends_the_agent(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}]])
    rig.send("go")
    chat = rig.chat().core
    pid = rig.host.wait_for(lambda: chat.pid, timeout=WAIT)
    rig.host.quit()
    assert not alive(pid) or rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    # The package reads its exit status (soon after the kill, on its own loop):
    # no "still running" process object is left to the garbage collector.
    assert rig.host.wait_for(lambda: chat.pid is None, timeout=WAIT)


def test_prestart_starts_the_agent_with_the_window(rig: ChatRig) -> None:
    rig.load(chat_prestart=True)
    rig.host.wait_for(lambda: rig.chat() is not None and rig.chat().core.state.agent_status == "ready", timeout=WAIT)
    assert rig.received("session/new")[0]["params"]["cwd"] == str(rig.editor.workspace)


def test_add_selection_attaches_it_to_the_next_prompt(rig: ChatRig) -> None:
    rig.load()
    code = rig.editor.open("b.py", "alpha\nbeta\ngamma\n")
    rig.host.user.set_selection(code, [rig.host.sublime.Region(6, 16)])
    rig.host.user.run_command("qwen_chat_add_selection")
    rig.host.wait_idle()
    _, composer = rig.open()
    assert rig.editor.text(composer) == "@b.py:2-3 "
    rig.host.user.type(composer, "what is this?")
    rig.host.user.press_key("enter")
    rig.ended()
    blocks = rig.received("session/prompt")[0]["params"]["prompt"]
    uri = (rig.editor.workspace / "b.py").as_uri()
    assert {"type": "resource", "resource": {"uri": f"{uri}#L2-L3", "mimeType": "text/plain", "text": "beta\ngamma"}} in blocks
    assert "*Attached:" in rig.transcript()


def test_at_attaches_an_open_file_with_its_unsaved_text(rig: ChatRig) -> None:
    rig.load()
    rig.editor.file("sub/c.txt", "on disk\n")
    open_view = rig.editor.open("d.txt", "saved\n")
    rig.host.user.type(open_view, "unsaved ")
    _, composer = rig.open()
    rig.host.user.press_key("@")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    names = [str(getattr(i, "trigger", i)) for i in panel.items]
    assert names[0] == "@symbol:" and names[6] == "d.txt" and "sub/c.txt" in names  # the mentions come first
    rig.host.user.choose_quick_panel("d.txt")
    rig.host.wait_idle()
    assert rig.editor.text(composer) == "@d.txt "
    rig.host.user.press_key("enter")
    rig.ended()
    blocks = rig.received("session/prompt")[0]["params"]["prompt"]
    attached = [b for b in blocks if b["type"] == "resource" and b["resource"]["uri"].endswith("/d.txt")]
    assert attached and attached[0]["resource"]["text"] == "unsaved saved\n"


def test_show_agent_log_and_diagnose_report_the_agent(rig: ChatRig) -> None:
    rig.load()
    rig.open()
    rig.chat().core.start().result(WAIT)
    rig.host.user.run_command("qwen_chat_show_agent_log")
    rig.host.wait_idle()
    panel = rig.host.window.find_output_panel("Qwen Agent Log")
    assert "fake agent" in rig.editor.text(panel) and "ready" in rig.editor.text(panel)
    rig.host.user.run_command("qwen_diagnose_connection", {"folder": str(rig.editor.workspace)})
    report = rig.host.wait_for(
        lambda: next((v for v in rig.host.window.views() if v.name() == "Qwen Code: Diagnose Connection"
                      and "Chat (qwen)" in rig.editor.text(v)), None), timeout=WAIT)
    text = rig.editor.text(report)
    assert "Chat agents (the chat_agents setting)" in text
    assert "qwen (default): runs " in text and "  gemini:" in text
    assert f"session:        {rig.chat().core.state.session_id}" in text
    assert f"pid:            {rig.chat().core.pid}" in text


def test_a_missing_qwen_is_reported_with_the_fix(rig: ChatRig) -> None:
    rig.editor.load([rig.editor.workspace], {"qwen_command": "no-such-qwen-here"})
    rig.watch()
    rig.send("hi")
    assert rig.ended() == ["error"]
    message = next(d["message"] for e, d in rig.events if e == "chat_error")
    assert "no-such-qwen-here" in message and "qwen_command" in message
    assert "no-such-qwen-here" in rig.transcript()


def test_an_agent_deaf_to_cancel_is_offered_a_restart_that_reloads_the_chat(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["stuck"]}, {"deaf": 60}]])
    rig.send("go")
    rig.host.wait_for(lambda: "stuck" in rig.chat().core.streamer.transcript.text(), timeout=WAIT)
    core = rig.chat().core
    pid, turn = core.pid, core.layout.turn
    rig.host.answers.push("ok_cancel", True)
    binding = rig.host.user.press_key("escape")
    assert binding is not None and binding.command == "qwen_chat_cancel", binding
    try:
        rig.host.wait_for(lambda: [d for d in rig.host.dialogs if d.kind == "ok_cancel"], timeout=WAIT)
    except TimeoutError:  # which of the question's conditions failed
        raise AssertionError(f"no restart question: agent {core.state.agent_status}, turn {turn} -> {core.layout.turn}, "
                             f"cancelled {core.turn_cancelled}, dialogs {rig.host.dialogs}") from None
    assert "did not stop" in rig.host.dialogs[-1].message
    rig.host.wait_for(lambda: len(rig.received("session/load")) == 1, timeout=WAIT)
    rig.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert rig.chat().core.pid not in (None, pid)
    assert rig.ended() == ["cancelled"]
    # The transcript is rebuilt from the reloaded session, then told why.
    note = "> The agent was restarted and the conversation reloaded.\n\n"
    rig.host.wait_for(lambda: rig.chat().core.streamer.transcript.text().endswith(note), timeout=WAIT)
    text = rig.transcript()
    assert text.endswith(note)
    assert "## You\n\ngo" in text and "The agent exited" not in text


def test_the_transcript_stays_where_the_wheel_left_it(rig: ChatRig) -> None:
    """Issue 23, defect 8: the wheel moves the viewport, not the caret; following
    is decided by whether the end is on screen."""
    long_answer = "".join(f"answer line {n}\n" for n in range(80))
    rig.load([[{"chunks": [long_answer]}], [{"chunks": ["second answer"]}]])
    rig.send("one")
    rig.ended()
    transcript, _ = rig.open()
    rig.transcript()
    assert transcript.visible_region().contains(transcript.size())  # followed the answer
    rig.host.user.scroll_wheel(transcript, -40)  # the user reads further up
    top = transcript.visible_region().begin()
    assert transcript.sel()[0].b == transcript.size()  # the caret did not move
    rig.send("two")
    rig.ended(2)
    rig.transcript()
    assert transcript.visible_region().begin() == top


def test_the_pickers_never_block_sublimes_threads(rig: ChatRig) -> None:
    """Issue 23, defect 6: the mode picker and Chat History used to wait up to
    60 s on the shared worker thread for the agent to start."""
    started = rig.tmp / "agent-may-start"  # the agent answers initialize once the test opens it
    rig.script_extras["start_gate"] = str(started)
    rig.load()
    rig.open()
    rig.host.wait_idle()
    rig.host.watchdog.take()
    # The defect was a wait, which the watchdog reports by what it is (Future.result, Event.wait, join...)
    # however short; a limit on a callback's CPU time, which a loaded machine stretches, is not this test's.
    rig.host.watchdog.limit_ms = math.inf
    try:
        rig.host.user.run_command("qwen_chat_mode")  # the agent has not started yet
        rig.host.wait_idle()
        assert not rig.chat().core.state.session_id and rig.host.watchdog.take() == []
        started.touch()
        panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
        assert [str(getattr(i, "trigger", i)) for i in panel.items] == ["Plan", "Default", "YOLO"]
        rig.host.user.cancel_quick_panel()
        rig.host.user.run_command("qwen_chat_sessions")
        rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done] or rig.host.status_messages, timeout=WAIT)
        rig.host.wait_idle()
        assert rig.host.watchdog.take() == []
    finally:
        rig.host.watchdog.limit_ms = DEFAULT_LIMIT_MS


def test_a_reload_adopts_the_chat_tabs_instead_of_opening_more(rig: ChatRig) -> None:
    """Issue 23, defect 9: after a reload, an upgrade or a restart the window's
    chat takes its transcript and composer back."""
    rig.load([[{"chunks": ["before reload"]}], [{"chunks": ["after reload"]}]])
    rig.send("one")
    rig.ended()
    rig.host.reload_package(PACKAGE)
    rig.watch()
    rig.host.wait_for(lambda: rig.chat() is not None and rig.chat().transcript_view is not None, timeout=WAIT)
    rig.host.user.run_command("qwen_chat")
    rig.host.wait_idle()
    names = [view.name() for view in rig.host.window.views()]
    assert names.count("Qwen Chat") == 1 and names.count("Qwen Chat: message") == 1
    rig.send("two")
    rig.ended(2)  # the events before the reload are still listed
    assert "after reload" in rig.transcript()


def test_adopted_chat_tabs_take_the_syntax_from_where_this_version_keeps_it(rig: ChatRig) -> None:
    # Earlier builds kept the syntax in the package's `chat/` folder; a
    # restart after the upgrade brings the tabs back with that path.
    rig.load()
    transcript, composer = rig.open()
    syntax = transcript.settings().get("syntax")
    for view in (transcript, composer):
        view.settings().set("syntax", f"Packages/{PACKAGE}/chat/QwenChat.sublime-syntax")
    rig.host.reload_package(PACKAGE)
    rig.host.wait_for(lambda: rig.chat() is not None and rig.chat().transcript_view is not None, timeout=WAIT)
    rig.host.wait_idle()
    assert syntax.endswith("/QwenChat.sublime-syntax")
    assert [view.settings().get("syntax") for view in (transcript, composer)] == [syntax, syntax]


def test_with_two_groups_the_chat_gets_a_column_of_its_own(rig: ChatRig) -> None:
    """Issue 23, defect 12: with two groups both chat views landed as tabs of
    the second group, the transcript hidden behind the composer."""
    rig.load()
    rig.host.window.set_layout({"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]})
    code = rig.editor.open("a.py", "x = 1\n")
    transcript, composer = rig.open()
    window = rig.host.window
    groups = {window.get_view_index(transcript)[0], window.get_view_index(composer)[0]}
    assert groups == {2, 3} and window.num_groups() == 4
    assert window.get_view_index(code)[0] in (0, 1)
    rig.host.user.run_command("qwen_chat")  # again: the same column, no new one
    assert window.num_groups() == 4
