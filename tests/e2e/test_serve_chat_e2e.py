"""The chat on `chat_transport: "serve"` against the real `qwen serve` of
0.24.4 and the fake model, through the package loaded in the simulator: an
answer streamed into the transcript (the daemon's echo of the prompt not
shown twice), a write's permission asked through the usual question and its
answer reaching the daemon, a cancel, earlier sessions listed and loaded, a further chat back after a
reload, a rewind that leaves files alone, the daemon's models; with
`serve_keep_running: false` no process of the daemon
outliving the window's chats; a reload in the middle of a turn reattaching
and showing every line once, and another client's prompt shown as one."""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_agent_e2e import answer, asked, option_of
from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import FakeModel, Reply, write_file
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE, open_editor
from tests.support.processes import alive, descendants

pytestmark = pytest.mark.e2e


@pytest.fixture
def serve_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_env: dict[str, str], qwen_cli: QwenCli,
               fake_model: FakeModel, workspace: Path) -> Iterator[RealChat]:
    with open_editor(tmp_path, monkeypatch, home=Path(real_env["HOME"]), workspace=workspace, load=False) as editor:
        monkeypatch.delenv("QWEN_HOME", raising=False)
        editor.load([workspace], {"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                                  "chat_transport": "serve", "serve_keep_running": False})
        chat = RealChat(editor, fake_model)
        daemon = sys.modules[f"{PACKAGE}.core.serve.daemon"]  # a test may unload the package
        try:
            yield chat
        finally:
            # Sublime's cache folder (the host's, not under tmp_path): a test that
            # failed midway, or one that kept the daemon running, leaves none running.
            for record in Path(editor.host.app.cache_dir).rglob("serve/*.json"):
                found = daemon.read_record(record)
                if found is not None:
                    daemon.stop_daemon(found)


def daemon_pid(chat: RealChat) -> int:
    pid = chat.host.wait_for(lambda: chat.chat().core.pid, timeout=WAIT)
    assert isinstance(pid, int)
    return pid


def test_an_answer_streams_into_the_transcript_from_the_daemon(serve_chat: RealChat,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    reply = "Streamed by the daemon in small pieces. " * 20
    serve_chat.model.queue(Reply(text=reply, chunk_size=6))
    serve_chat.send("Say something from serve")
    assert serve_chat.ended() == ["end_turn"]
    text = serve_chat.transcript()
    assert text.count("Say something from serve") == 1  # the daemon's echo of the prompt is not shown again
    assert reply.strip() in text
    conversation = serve_chat.chat().core
    assert conversation.state.agent_name.startswith("qwen-code 0.24.4")  # the daemon's agents are qwen
    cmdline = Path(f"/proc/{daemon_pid(serve_chat)}/cmdline").read_bytes().split(b"\0")
    assert b"serve" in cmdline and b"--require-auth" in cmdline
    record = sys.modules[f"{PACKAGE}.plugin.chat.agent.serve_daemon"].window_record(serve_chat.host.window)
    assert record.pid == daemon_pid(serve_chat) and len(record.token) >= 32
    assert record.token.encode() not in b"".join(cmdline)
    assert record.token not in caplog.text and record.token not in text


def test_a_write_asks_through_the_chat_and_the_answer_reaches_the_daemon(serve_chat: RealChat,
                                                                          workspace: Path) -> None:
    allowed, refused = workspace / "allowed.txt", workspace / "refused.txt"
    serve_chat.model.queue(write_file(str(refused), "no\n"))  # 0.24.4 ends the turn on a rejection
    serve_chat.send("Write the refused file")
    event = asked(serve_chat)[0]
    assert event["toolCall"]["kind"] == "edit"
    answer(serve_chat, option_of(event, "reject_once"))
    serve_chat.ended()
    assert not refused.exists()
    serve_chat.model.queue(write_file(str(allowed), "yes\n"), Reply(text="Written."))
    serve_chat.send("Write the allowed file")
    event = asked(serve_chat, 2)[1]
    answer(serve_chat, option_of(event, "allow_once"))
    assert serve_chat.ended(2)[-1] == "end_turn"
    assert allowed.read_text() == "yes\n"
    assert "Written." in serve_chat.transcript()


def test_cancel_ends_the_daemons_turn(serve_chat: RealChat) -> None:
    serve_chat.model.queue(Reply(text="slow words " * 400, chunk_size=5, delay=0.05))
    serve_chat.send("Write slowly")
    serve_chat.host.wait_for(lambda: "slow words" in serve_chat.chat().core.streamer.transcript.text(),
                             timeout=WAIT)
    serve_chat.host.user.press_key("escape")
    assert serve_chat.ended() == ["cancelled"]
    serve_chat.model.queue("Still here.")
    serve_chat.send("Are you there?")
    assert serve_chat.ended(2)[-1] == "end_turn"
    assert "Still here." in serve_chat.transcript()


def two_sessions(serve_chat: RealChat) -> tuple[Any, str, str]:
    """The chat's conversation after "prompt one" in one session and "prompt two" in a new one: (it, first, second)."""
    serve_chat.model.queue("Answer one.")
    serve_chat.send("prompt one")
    serve_chat.ended()
    conversation = serve_chat.chat().core
    first = conversation.state.session_id
    conversation.sessions.new_session().result(WAIT)
    serve_chat.model.queue("Answer two.")
    serve_chat.send("prompt two")
    serve_chat.ended(2)
    return conversation, first, conversation.state.session_id


def test_earlier_sessions_are_listed_and_loaded_with_their_conversation_once(serve_chat: RealChat) -> None:
    conversation, first, second = two_sessions(serve_chat)
    listed = {entry.session_id: entry.title for entry in conversation.sessions.list_history([]).result(WAIT)}
    assert listed[first] == "prompt one" and listed[second] == "prompt two"
    conversation.sessions.load_session(first).result(WAIT)  # the daemon still runs it: read from its ring
    text = serve_chat.transcript()
    assert text.count("prompt one") == 1 and text.count("Answer one.") == 1 and "prompt two" not in text
    serve_chat.host.user.run_command("qwen_serve_stop")  # the next session comes back from the daemon's disk
    serve_chat.host.wait_for(lambda: conversation.pid is None, timeout=WAIT)
    conversation.sessions.load_session(second).result(WAIT)
    text = serve_chat.transcript()
    assert text.count("prompt two") == 1 and text.count("Answer two.") == 1 and "prompt one" not in text
    serve_chat.model.queue("Answer three.")
    serve_chat.send("prompt three")
    assert serve_chat.ended(3)[-1] == "end_turn"
    history = json.dumps(serve_chat.model.agent_requests[-1]["messages"])
    assert "prompt two" in history and "prompt one" not in history  # the loaded conversation went on
    text = serve_chat.transcript()
    assert text.count("Answer two.") == 1 and text.count("Answer three.") == 1


def test_a_listed_session_is_renamed_and_deleted_on_the_daemon(serve_chat: RealChat) -> None:
    conversation_edits = importlib.import_module(f"{PACKAGE}.core.chat.history.conversation_edits")  # loaded when first used
    conversation, first, _ = two_sessions(serve_chat)

    def listed() -> dict[str, str]:
        return {entry.session_id: entry.title for entry in conversation.sessions.list_history([]).result(WAIT)}

    assert conversation_edits.rename_session(conversation.connection, first, "Renamed here").result(WAIT) is True
    assert listed()[first] == "Renamed here"
    assert conversation_edits.delete_session(conversation.connection, first).result(WAIT) is True
    assert first not in listed() and conversation.state.session_id in listed()
    assert conversation_edits.delete_session(conversation.connection, "no-such-session").result(WAIT) is False


def two_chats(serve_chat: RealChat) -> tuple[Any, Any]:
    """The window's chat answered "one", then a further chat (New Chat) answered "two": (first, second)."""
    serve_chat.model.queue("First chat.")
    serve_chat.send("one")
    serve_chat.ended()
    first = serve_chat.chat()
    serve_chat.host.user.run_command("qwen_chat_new")
    serve_chat.host.wait_idle()
    second = serve_chat.host.wait_for(lambda: serve_chat.chat() is not first and serve_chat.chat(), timeout=WAIT)
    serve_chat.model.queue("Second chat.")
    serve_chat.send("two")
    serve_chat.ended(2)
    return first, second


def test_a_further_chat_comes_back_with_its_conversation_after_a_reload(serve_chat: RealChat,
                                                                       qwen_cli: QwenCli) -> None:
    serve_chat.editor.settings({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                                "chat_transport": "serve", "serve_keep_running": True})
    _, second = two_chats(serve_chat)
    session = second.core.state.session_id
    view_id = second.transcript_view.id()
    serve_chat.host.reload_package(PACKAGE)
    after = RealChat(serve_chat.editor, serve_chat.model)
    after.editor.wait_for_package_threads("start", "preload")
    after.host.wait_idle()
    again = after.host.wait_for(lambda: next((chat for chat in after.chats.all()
                                              if chat.transcript_view.id() == view_id), None), timeout=WAIT)
    again.core.start().result(WAIT)
    assert again.core.state.session_id == session  # its own session, not a new one
    after.host.wait_for(lambda: "Second chat." in again.core.streamer.transcript.text(), timeout=WAIT)
    text = again.core.streamer.transcript.text()
    assert text.count("two") == 1 and text.count("Second chat.") == 1 and "First chat." not in text


def test_a_rewind_on_serve_drops_the_turn_and_names_the_files_it_left(serve_chat: RealChat,
                                                                      workspace: Path) -> None:
    serve_chat.model.queue("Ready.")
    serve_chat.send("prompt one")
    serve_chat.ended()
    written = workspace / "written.txt"
    serve_chat.model.queue(write_file(str(written), "by the agent\n"), Reply(text="Written."))
    serve_chat.send("prompt two")
    answer(serve_chat, option_of(asked(serve_chat)[0], "allow_once"))
    assert serve_chat.ended(2)[-1] == "end_turn"
    written.write_text("the user's own words\n")  # changed since: no restore may write over it
    outcome = serve_chat.chat().core.calls.rewind(1).result(WAIT)
    assert outcome.files_restored == [] and "1 file(s)" in outcome.not_restored[0]
    assert written.read_text() == "the user's own words\n"
    text = serve_chat.transcript()
    assert "prompt two" not in text and "Written." not in text and text.count("prompt one") == 1
    serve_chat.model.queue("After the rewind.")
    serve_chat.send("prompt three")
    assert serve_chat.ended(3)[-1] == "end_turn"
    history = json.dumps(serve_chat.model.agent_requests[-1]["messages"])
    assert "prompt two" not in history and "prompt three" in history


def test_branch_from_here_on_serve_opens_a_chat_holding_the_prompts_up_to_it(serve_chat: RealChat) -> None:
    serve_chat.model.queue("Answer one.")
    serve_chat.send("prompt one")
    serve_chat.ended()
    serve_chat.model.queue("Answer two.")
    serve_chat.send("prompt two")
    serve_chat.ended(2)
    first = serve_chat.chat()
    serve_chat.host.user.run_command("qwen_chat_branch", {"turn": 0})
    branched = serve_chat.host.wait_for(lambda: serve_chat.chat() is not first and serve_chat.chat(), timeout=WAIT)
    serve_chat.host.wait_for(lambda: "Answer one." in branched.core.streamer.transcript.text(), timeout=WAIT)
    assert branched.core.state.session_id != first.core.state.session_id
    text = serve_chat.transcript()
    assert text.count("prompt one") == 1 and text.count("Answer one.") == 1 and "prompt two" not in text
    serve_chat.model.queue("Answer in the branch.")
    serve_chat.send("prompt three")
    assert serve_chat.ended(3)[-1] == "end_turn"
    history = json.dumps(serve_chat.model.agent_requests[-1]["messages"])
    assert "prompt one" in history and "prompt two" not in history and "prompt three" in history


def test_the_model_picker_lists_the_daemons_models_and_a_switch_is_taken(serve_chat: RealChat) -> None:
    serve_chat.model.queue("Ready.")
    serve_chat.send("hello")
    serve_chat.ended()
    conversation = serve_chat.chat().core
    models = [model.id for model in conversation.state.models]
    assert models and all("fake-model" in model for model in models), models
    conversation.option_setter.set_model(models[0]).result(WAIT)
    assert conversation.state.model_id == models[0]
    conversation.option_setter.set_model("no-such-model").result(WAIT)
    assert serve_chat.host.wait_for(lambda: "refused" in serve_chat.transcript(), timeout=WAIT)
    assert serve_chat.transcript().count("refused") == 1


def test_a_turns_usage_reaches_the_status_bar_on_serve(serve_chat: RealChat) -> None:
    serve_chat.model.queue(Reply(text="Counted.", usage=(1500, 30, 400)))
    serve_chat.send("Count me")
    assert serve_chat.ended() == ["end_turn"]
    report = serve_chat.chat().core.state.usage.report()
    assert report["turn"]["inputTokens"] == 1500 and report["turn"]["outputTokens"] == 30
    assert "1.5k in / 30 out" in serve_chat.host.window.active_view().get_status("qwen_chat")


def test_modes_are_set_through_the_daemons_approval_mode_route(serve_chat: RealChat) -> None:
    serve_chat.model.queue("Ready.")
    serve_chat.send("hello")
    serve_chat.ended()
    conversation = serve_chat.chat().core
    assert "plan" in [mode.id for mode in conversation.state.modes]
    conversation.option_setter.set_mode("plan").result(WAIT)
    assert conversation.state.mode_id == "plan"
    conversation.option_setter.set_mode("reckless").result(WAIT)  # the daemon's 400, said in the transcript
    # The mode is the session's config option "mode": it goes to the approval-mode route all the same.
    assert serve_chat.host.wait_for(lambda: "invalid_approval_mode" in serve_chat.transcript()
                                    or "allowed values" in serve_chat.transcript(), timeout=WAIT)
    transcript = serve_chat.transcript()
    assert transcript.count("the daemon refused") == 1 and "not on the serve transport" not in transcript
    assert conversation.state.mode_id == "plan"


def test_without_keep_running_the_daemon_ends_with_the_windows_last_chat(serve_chat: RealChat) -> None:
    serve_chat.model.queue("Here.")
    serve_chat.send("hello")
    serve_chat.ended()
    pid = daemon_pid(serve_chat)
    tree = [pid, *descendants(pid)]
    assert len(tree) > 1  # the daemon and the agent it started
    serve_chat.host.user.run_command("qwen_chat_close")
    deadline = time.monotonic() + WAIT
    while any(alive(each) for each in tree):
        assert time.monotonic() < deadline, [each for each in tree if alive(each)]
        time.sleep(0.1)


def test_status_and_stop_serve_daemon(serve_chat: RealChat) -> None:
    serve_daemon = sys.modules[f"{PACKAGE}.plugin.chat.agent.serve_daemon"]
    window = serve_chat.host.window
    serve_chat.model.queue("One.")
    serve_chat.send("hello")
    serve_chat.ended()
    pid = daemon_pid(serve_chat)
    status = serve_daemon.serve_status(window)
    assert (status.pid, status.version, status.require_auth, status.loopback) == (pid, "0.24.4", True, True)
    assert status.sessions >= 1
    report = sys.modules[f"{PACKAGE}.plugin.chat.agent.chat_report"].chat_report(window)
    assert f"pid {pid}, port {status.port}, token required, loopback" in report
    serve_chat.host.user.run_command("qwen_serve_stop")
    deadline = time.monotonic() + WAIT
    while alive(pid):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    serve_chat.host.wait_for(lambda: serve_daemon.serve_status(window) is None, timeout=WAIT)
    serve_chat.model.queue("Two.")
    serve_chat.send("again")  # the next prompt starts a daemon again
    assert serve_chat.ended(2)[-1] == "end_turn"
    assert daemon_pid(serve_chat) != pid
    assert "Two." in serve_chat.transcript()


def test_without_keep_running_unloading_the_package_ends_the_daemon(serve_chat: RealChat) -> None:
    serve_chat.model.queue("Here.")
    serve_chat.send("hello")
    serve_chat.ended()
    pid = daemon_pid(serve_chat)
    tree = [pid, *descendants(pid)]
    serve_chat.host.unload_package(PACKAGE)
    deadline = time.monotonic() + WAIT
    while any(alive(each) for each in tree):
        assert time.monotonic() < deadline, [each for each in tree if alive(each)]
        time.sleep(0.1)


def test_with_keep_running_a_reload_attaches_to_the_same_daemon(serve_chat: RealChat, qwen_cli: QwenCli) -> None:
    serve_chat.editor.settings({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                                "chat_transport": "serve", "serve_keep_running": True})
    serve_chat.model.queue("Before the reload.")
    serve_chat.send("first")
    serve_chat.ended()
    pid = daemon_pid(serve_chat)
    serve_chat.host.reload_package(PACKAGE)
    assert alive(pid)
    after = RealChat(serve_chat.editor, serve_chat.model)  # the reloaded package's chats
    after.host.user.run_command("qwen_chat")
    after.editor.wait_for_package_threads("start", "preload")
    after.host.wait_idle()
    after.chat().core.start().result(WAIT)
    assert after.chat().core.pid == pid  # found again through its record, not started anew
    after.model.queue("After the reload.")
    after.send("second")
    assert after.ended() == ["end_turn"]
    text = after.transcript()
    assert text.count("After the reload.") == 1 and text.count("second") == 1


def test_a_second_chat_gets_a_session_of_its_own_on_the_same_daemon(serve_chat: RealChat) -> None:
    first, second = two_chats(serve_chat)
    assert serve_chat.ended_so_far() == ["end_turn", "end_turn"]
    assert second.core.pid == first.core.pid  # one daemon for the window's folders
    assert second.core.state.session_id not in (None, first.core.state.session_id)
    assert "Second chat." in serve_chat.transcript()
    assert "Second chat." not in first.core.streamer.transcript.text()


def test_a_daemon_that_died_is_reported_and_the_next_prompt_starts_one(serve_chat: RealChat) -> None:
    serve_chat.model.queue("Before.")
    serve_chat.send("one")
    serve_chat.ended()
    pid = daemon_pid(serve_chat)
    os.killpg(pid, signal.SIGKILL)  # the daemon and its agents, as a crash would leave them
    serve_chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    serve_chat.send("two")
    assert serve_chat.ended(2)[-1] == "error"
    assert "The agent exited" in serve_chat.transcript()
    serve_chat.model.queue("After.")
    serve_chat.send("three")
    assert serve_chat.ended(3)[-1] == "end_turn"
    assert daemon_pid(serve_chat) != pid
    assert "After." in serve_chat.transcript()


def test_a_reload_in_the_middle_of_a_turn_reattaches_and_shows_every_line_once(
    serve_chat: RealChat, qwen_cli: QwenCli
) -> None:
    serve_chat.editor.settings({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
                                "chat_transport": "serve", "serve_keep_running": True})
    serve_chat.model.queue("Before the reload.")
    serve_chat.send("first prompt")
    serve_chat.ended()
    words = " ".join(f"w{n}" for n in range(400))
    serve_chat.model.queue(Reply(text=words, chunk_size=8, delay=0.02))
    serve_chat.send("second prompt")
    serve_chat.host.wait_for(lambda: "w20 " in serve_chat.chat().core.streamer.transcript.text(),
                             timeout=WAIT)
    pid = daemon_pid(serve_chat)
    serve_chat.host.reload_package(PACKAGE)  # the turn goes on in the daemon meanwhile
    after = RealChat(serve_chat.editor, serve_chat.model)
    after.host.user.run_command("qwen_chat")
    after.editor.wait_for_package_threads("start", "preload")
    after.host.wait_idle()
    after.chat().core.start().result(WAIT)
    assert after.chat().core.pid == pid
    after.host.wait_for(lambda: words in after.transcript(), timeout=WAIT)  # the turn ends while reattached
    text = after.transcript()
    for line in ("first prompt", "Before the reload.", "second prompt", words):
        assert text.count(line) == 1, line
    after.model.queue("After the reload.")
    after.send("third prompt")
    assert after.ended() == ["end_turn"]
    text = after.transcript()
    assert text.count("After the reload.") == 1 and text.count("third prompt") == 1 and text.count(words) == 1


def post(record: Any, path: str, body: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    """A request of another client of the daemon (as `curl` would send it)."""
    headers = {"Authorization": f"Bearer {record.token}", "Content-Type": "application/json",
               **({"X-Qwen-Client-Id": client} if client else {})}
    request = urllib.request.Request(f"http://{record.host}:{record.port}{path}", json.dumps(body).encode(),
                                     headers, method="POST")
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def test_a_prompt_another_client_sends_shows_in_the_chat_as_a_prompt_with_its_answer(
    serve_chat: RealChat, workspace: Path
) -> None:
    serve_chat.model.queue("Ready.")
    serve_chat.send("my own prompt")
    serve_chat.ended()
    record = sys.modules[f"{PACKAGE}.plugin.chat.agent.serve_daemon"].window_record(serve_chat.host.window)
    other = post(record, "/session", {"cwd": str(workspace)})
    session_id = serve_chat.chat().core.state.session_id
    assert other["sessionId"] == session_id and other["attached"] is True
    serve_chat.model.queue("Answer to the other client.")
    post(record, f"/session/{session_id}/prompt", {"prompt": [{"type": "text", "text": "sent with curl"}]},
         client=other["clientId"])
    serve_chat.host.wait_for(lambda: "Answer to the other client." in serve_chat.transcript(), timeout=WAIT)
    text = serve_chat.transcript()
    assert text.count("sent with curl") == 1 and text.count("my own prompt") == 1  # our own echo not shown again
    assert "Sent from another client" in text.split("my own prompt")[1]
    assert text.index("sent with curl") < text.index("Answer to the other client.")
