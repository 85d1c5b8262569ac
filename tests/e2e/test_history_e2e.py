"""Chat History and Export Chat against the real `qwen --acp` (0.24.4) and the
fake model: the list (newest first, filtered), Enter resuming a session in a
new chat tab whose next prompt continues it (the model's request holds the
earlier prompt), the Markdown export of a turn with a tool call and a
permission, and Continue in Terminal (the TUI resumes the chat's session)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import StartTui
from tests.e2e.test_chat_agent_e2e import answer, asked, option_of
from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_open_terminal_e2e import terminus_tui
from tests.rig.fake_model import Reply, tool_call, user_texts
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE
from tests.support.terminus import install_terminus, terminus_calls, terminus_records

pytestmark = pytest.mark.e2e


def open_panel(real_chat: RealChat) -> list[str]:
    panel = real_chat.host.wait_for(lambda: [q for q in real_chat.host.quick_panels if not q.done], timeout=WAIT)[0]
    return [str(getattr(item, "trigger", item)) for item in panel.items]


def test_history_lists_filters_and_resumes_a_session_in_a_new_tab_that_continues_it(real_chat: RealChat) -> None:
    real_chat.model.queue("Answer about apples.", "Answer about pears.", "Apples are red or green.")
    real_chat.send("Tell me about apples")
    real_chat.ended()
    apples = real_chat.chat().core.state.session_id
    real_chat.host.user.run_command("qwen_chat_new")
    real_chat.host.wait_for(lambda: real_chat.chat().core.state.session_id not in (None, apples), timeout=WAIT)
    pears_chat = real_chat.chat()
    real_chat.send("Tell me about pears")
    real_chat.ended(2)
    pears = pears_chat.core.state.session_id

    # The apples chat is closed: Enter opens a new tab on its session.
    first_chat = next(c for c in real_chat.chats.of_window(real_chat.host.window) if c is not pears_chat)
    real_chat.host.run_on_main(lambda: real_chat.host.window.run_command("qwen_chat_close", {"chat": first_chat.chat_id}))
    real_chat.host.wait_idle()
    real_chat.host.user.run_command("qwen_chat_sessions")
    listed = open_panel(real_chat)
    assert len(listed) == 2 and "pears" in listed[0] and "apples" in listed[1]  # newest first
    real_chat.host.user.cancel_quick_panel()
    real_chat.host.user.run_command("qwen_chat_sessions", {"action": "search"})
    real_chat.host.wait_for(lambda: [p for p in real_chat.host.app.input_panels if not p.done], timeout=WAIT)
    real_chat.host.user.submit_input_panel("APPLES")
    assert open_panel(real_chat) == [listed[1]]
    real_chat.host.user.choose_quick_panel(0)
    resumed = real_chat.host.wait_for(
        lambda: next((c for c in real_chat.chats.of_window(real_chat.host.window)
                      if c.core.state.session_id == apples and c.core.state.agent_status == "ready"), None), timeout=WAIT)
    assert resumed is real_chat.chat() and resumed is not pears_chat
    assert listed[1] in resumed.transcript_view.name()
    real_chat.send("What colour are they?")
    real_chat.ended(3)
    prompts = user_texts(real_chat.model.agent_requests[-1])
    assert prompts[-1].endswith("What colour are they?") and any("Tell me about apples" in p for p in prompts)
    assert not any("pears" in p for p in prompts)
    assert pears_chat.core.state.session_id == pears


def test_the_markdown_export_of_a_turn_with_a_tool_call_and_a_permission(real_chat: RealChat) -> None:
    real_chat.model.queue(tool_call("run_shell_command", {"command": "echo exported-word > said.txt", "description": "write it"}),
                          Reply(text="It said exported-word."))
    real_chat.send("Run echo")
    event = asked(real_chat)[0]
    answer(real_chat, option_of(event, "allow_once"))
    assert real_chat.ended() == ["end_turn"]
    chat = real_chat.chat()
    commands = sys.modules[f"{PACKAGE}.plugin.chat.history.export_commands"]
    text = real_chat.host.run_on_main(lambda: commands.exported(chat, "markdown")).result(timeout=WAIT)
    assert text.startswith("# Run echo\n\n## You\n\nRun echo")
    assert "**Permission** (execute): " in text and " → Allow" in text
    assert "✓ execute `Shell` — completed\n    Command: echo exported-word > said.txt" in text
    assert "It said exported-word." in text
    assert text.index("## You") < text.index("**Permission**") < text.index("It said exported-word.")


def session_file(home: str, session_id: str) -> Path:
    """The session's record as qwen keeps it (`~/.qwen/projects/<project>/chats/<id>.jsonl`)."""
    [found] = Path(home, ".qwen", "projects").glob(f"*/chats/{session_id}.jsonl")
    return found


def test_branch_from_here_continues_from_the_turn_and_leaves_the_original_untouched(
        real_chat: RealChat, real_env: dict[str, str]) -> None:
    real_chat.model.queue("Answer ALPHA.", "Answer BETA.", "Answer GAMMA.", "Branch answer.", "Original answer.")
    for word in ("ALPHA", "BETA", "GAMMA"):
        real_chat.send(f"Prompt {word}")
    assert real_chat.ended(3) == ["end_turn"] * 3
    original = real_chat.chat()
    source = original.core.state.session_id
    recorded = session_file(real_env["HOME"], source).read_bytes()

    real_chat.host.user.run_command("qwen_chat_branch", {"turn": 1})
    branched = real_chat.host.wait_for(
        lambda: next((c for c in real_chat.chats.of_window(real_chat.host.window)
                      if c is not original and c.core.state.agent_status == "ready"), None), timeout=WAIT)
    assert real_chat.chat() is branched and branched.core.state.session_id not in (None, source)
    shown = real_chat.transcript()  # the branch's conversation, replayed up to the turn
    assert "Prompt ALPHA" in shown and "Answer BETA." in shown and "GAMMA" not in shown
    assert session_file(real_env["HOME"], source).read_bytes() == recorded  # qwen copied it, wrote nothing there

    real_chat.send("BRANCH-NEXT")
    real_chat.ended(4)
    prompts = [p.rsplit(">", 1)[-1] for p in user_texts(real_chat.model.agent_requests[-1])]
    assert prompts == ["Prompt ALPHA", "Prompt BETA", "BRANCH-NEXT"]

    tabs = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_tabs"]
    real_chat.host.run_on_main(lambda: tabs.select_chat(real_chat.host.window, original))
    real_chat.send("ORIGINAL-NEXT")
    real_chat.ended(5)
    prompts = [p.rsplit(">", 1)[-1] for p in user_texts(real_chat.model.agent_requests[-1])]
    assert prompts == ["Prompt ALPHA", "Prompt BETA", "Prompt GAMMA", "ORIGINAL-NEXT"]
    assert original.core.state.session_id == source


def test_branch_from_a_reloaded_conversation_takes_the_turn_from_qwens_transcript(real_chat: RealChat) -> None:
    real_chat.model.queue("Answer ALPHA.", "Answer BETA.", "Branch answer.")
    for word in ("ALPHA", "BETA"):
        real_chat.send(f"Prompt {word}")
    real_chat.ended(2)
    original = real_chat.chat()
    original.core.sessions.restart().result(WAIT)  # session/load replays it: no prompt answer gave its branch point
    assert original.core.prompts.texts() == ["Prompt ALPHA", "Prompt BETA"]
    assert original.core.prompts.get(0).branch_point is None

    real_chat.host.user.run_command("qwen_chat_branch", {"turn": 0})
    branched = real_chat.host.wait_for(
        lambda: next((c for c in real_chat.chats.of_window(real_chat.host.window)
                      if c is not original and c.core.state.agent_status == "ready"), None), timeout=WAIT)
    real_chat.send("BRANCH-NEXT")
    real_chat.ended(3)
    prompts = [p.rsplit(">", 1)[-1] for p in user_texts(real_chat.model.agent_requests[-1])]
    assert prompts == ["Prompt ALPHA", "BRANCH-NEXT"] and real_chat.chat() is branched


@pytest.mark.skipif(sys.platform != "linux", reason="replays Terminus's Linux command line")
def test_continue_in_terminal_resumes_the_chats_session_in_the_tui(
        real_chat: RealChat, qwen_cli: QwenCli, tmux_bin: str, qwen_env: dict[str, str], tmp_path: Path) -> None:
    record = tmp_path / "terminus-calls.jsonl"
    install_terminus(real_chat.host, record)
    real_chat.model.queue("Answer in the chat.", "Answer in the terminal.")
    real_chat.send("CHAT-PROMPT about apples")
    real_chat.ended()
    session = real_chat.chat().core.state.session_id
    real_chat.host.user.run_command("qwen_chat_continue_in_terminal")
    [args] = real_chat.host.wait_for(lambda: terminus_records(record), timeout=WAIT)
    assert real_chat.chat() is None
    tui = terminus_tui(args, qwen_env, qwen_cli, tmp_path, tmux_bin)
    try:
        tui.start()
        tui.wait_ready(60)
        tui.wait_for("CHAT-PROMPT about apples", timeout=30)  # the TUI shows the chat's conversation
        tui.submit("TERMINAL-PROMPT")
        real_chat.model.wait_for_requests(2)
        prompts = user_texts(real_chat.model.agent_requests[-1])
        assert prompts[-1].endswith("TERMINAL-PROMPT") and any("CHAT-PROMPT about apples" in p for p in prompts)
    finally:
        tui.close()
    assert session is not None


HELD = "open in qwen in a terminal"


@pytest.mark.skipif(sys.platform != "linux", reason="the TUI runs in tmux")
def test_a_session_qwen_holds_in_a_terminal_is_not_written_by_a_second_writer(
        real_chat: RealChat, real_env: dict[str, str], start_tui: StartTui, tmp_path: Path) -> None:
    record = tmp_path / "terminus-calls.jsonl"
    install_terminus(real_chat.host, record)
    real_chat.model.queue("Answer in the chat.", "Answer after the terminal quit.")
    real_chat.send("HELD-PROMPT")
    real_chat.ended()
    chat = real_chat.chat()
    session = chat.core.state.session_id
    tui = start_tui(args=["--resume", session])  # the user's own terminal on the chat's conversation

    # qwen's registry says so, with the start token the package computes for the TUI's process
    live = sys.modules[f"{PACKAGE}.core.chat.history.live_sessions"]
    lockfile = sys.modules[f"{PACKAGE}.core.companion.lockfile"]
    registered = [json.loads(p.read_text()) for p in Path(real_env["HOME"], ".qwen", "sessions").glob("*.json")]
    [terminal] = [r for r in registered if r["kind"] == "tui"]
    assert terminal["sessionId"] == session and terminal["procStart"] == live.linux_proc_start(terminal["pid"])

    # Continue in Terminal: refused, the chat stays, no second terminal
    real_chat.host.user.run_command("qwen_chat_continue_in_terminal")
    real_chat.host.wait_for(lambda: any(HELD in m for m in real_chat.host.status_messages), timeout=WAIT)
    real_chat.host.wait_idle()
    assert real_chat.chat() is chat and terminus_calls(record) == []

    # Its chat closed, the window's next chat (which reopens the folder's last conversation) starts a new one
    real_chat.host.run_on_main(lambda: real_chat.host.window.run_command("qwen_chat_close", {"chat": chat.chat_id}))
    real_chat.host.wait_idle()
    real_chat.host.user.run_command("qwen_chat")
    other = real_chat.host.wait_for(lambda: real_chat.chat() if real_chat.chat() is not None
                                    and real_chat.chat().core.state.agent_status == "ready" else None, timeout=WAIT)
    assert other.core.state.session_id not in (None, session)
    assert HELD in other.core.streamer.transcript.text()

    # Chat History's Enter on it: refused, no chat opens it
    before = len(real_chat.host.status_messages)
    real_chat.host.user.run_command("qwen_chat_sessions")
    open_panel(real_chat)
    real_chat.host.user.choose_quick_panel(0)
    real_chat.host.wait_for(lambda: any(HELD in m for m in real_chat.host.status_messages[before:]), timeout=WAIT)
    real_chat.host.wait_idle()
    assert not [c for c in real_chat.chats.all() if c.core.state.session_id == session]

    # qwen in the terminal quit: Enter resumes it
    tui.close()
    real_chat.host.wait_for(lambda: not live.is_running(terminal["pid"], terminal["procStart"], lockfile.pid_alive), timeout=WAIT)
    real_chat.host.user.run_command("qwen_chat_sessions")
    open_panel(real_chat)
    real_chat.host.user.choose_quick_panel(0)
    resumed = real_chat.host.wait_for(
        lambda: next((c for c in real_chat.chats.all() if c.core.state.session_id == session
                      and c.core.state.agent_status == "ready"), None), timeout=WAIT)
    assert resumed is real_chat.chat()
