"""Permission prompts: the whole input shown, options in the agent's order,
question answers, and pending prompts answered "cancelled"."""

from __future__ import annotations

import asyncio
from typing import Any

from acp.schema import RequestPermissionRequest

from qwencompanion_src.core.chat.requests.permissions import (
    AnsweredPermission,
    PendingPermissions,
    answered,
    prompt_of,
    render_answer,
    render_prompt,
    selected,
)

OPTIONS = [{"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"},
           {"optionId": "cancel", "kind": "reject_once", "name": "Reject"}]


def request(tool_call: dict[str, Any], options: list[dict[str, Any]] = OPTIONS) -> RequestPermissionRequest:
    return RequestPermissionRequest.model_validate({"sessionId": "s", "toolCall": tool_call, "options": options})


def test_a_shell_command_is_shown_whole_with_numbered_options() -> None:
    command = "echo '```' && " + "y" * 1000
    prompt = prompt_of("p1", request({"toolCallId": "t", "kind": "execute", "title": "Shell", "rawInput": {"command": command}}))
    text = render_prompt(prompt)
    assert command in text and "````\n" in text  # a fence the command cannot close
    assert "[1] Allow  [2] Reject  [3] Reject with a reason…" in text
    assert prompt.keys() == 3
    assert prompt.event(7, 3)["options"] == OPTIONS
    assert prompt.event(7, 3)["chat"] == 3


def test_an_edit_carries_its_diff_and_other_input_is_json() -> None:
    prompt = prompt_of("p", request({"toolCallId": "e", "kind": "edit", "title": "Edit a.py",
                                     "locations": [{"path": "/w/a.py"}],
                                     "content": [{"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"}]}))
    assert prompt.diff is not None and (prompt.diff.path, prompt.diff.old_text, prompt.diff.new_text) == ("/w/a.py", "a", "b")
    assert prompt.locations == ["/w/a.py"]
    fetch = prompt_of("q", request({"toolCallId": "f", "kind": "fetch", "title": "Fetch", "rawInput": {"url": "https://x"}}))
    assert '"url": "https://x"' in fetch.detail


def test_questions_are_answered_by_index_with_their_labels() -> None:
    raw = {"questions": [{"question": "Colour?", "options": [{"label": "Red"}, {"label": "Blue"}]},
                         {"question": "Size?", "options": [{"label": "S"}, {"label": "M"}, {"label": "L"}]}]}
    prompt = prompt_of("q", request({"toolCallId": "a", "kind": "think", "title": "Ask", "rawInput": raw}))
    assert prompt.keys() == 2
    prompt.answers.append("Blue")
    assert prompt.keys() == 3
    prompt.answers.append("L")
    response = answered(prompt, "proceed_once")
    assert isinstance(response, AnsweredPermission)
    assert response.model_dump(by_alias=True, exclude_none=True) == {
        "outcome": {"outcome": "selected", "optionId": "proceed_once"}, "answers": {"0": "Blue", "1": "L"}}
    assert "→ Blue; L" in render_answer(prompt, response)


def test_pending_prompts_are_answered_once_and_cancel_all_answers_the_rest() -> None:
    async def run() -> list[Any]:
        pending = PendingPermissions()
        first = prompt_of(pending.next_key(), request({"toolCallId": "1", "title": "one"}))
        second = prompt_of(pending.next_key(), request({"toolCallId": "2", "title": "two"}))
        futures = [pending.add(first), pending.add(second)]
        assert pending.oldest() is first
        assert pending.answer(first.key, selected("proceed_once"))
        assert not pending.answer(first.key, selected("cancel"))  # answered already
        assert pending.cancel_all() == 1
        assert pending.oldest() is None
        return [(await f).model_dump(by_alias=True) for f in futures]

    first, second = asyncio.run(run())
    assert first["outcome"] == {"outcome": "selected", "optionId": "proceed_once", "_meta": None}
    assert second["outcome"]["outcome"] == "cancelled"


def test_an_edit_shows_what_changes_not_the_tools_raw_input() -> None:
    old = "".join(f"line {n}\n" for n in range(30))
    new = old.replace("line 3\n", "line three\n").replace("line 20\n", "") + "".join(f"added {n}\n" for n in range(12))
    raw = {"file_path": "/w/proj/src/a.py", "old_string": "line 3", "new_string": "line three"}
    prompt = prompt_of("p", request({"toolCallId": "e", "kind": "edit", "title": "a.py", "rawInput": raw,
                                     "content": [{"type": "diff", "path": "/w/proj/src/a.py", "oldText": old, "newText": new}]}),
                       lambda path: path.removeprefix("/w/proj/"))
    lines = prompt.detail.split("\n")
    assert lines[0] == "src/a.py: +13 −2 line(s)"
    assert lines[1:4] == ["-line 3", "+line three", "-line 20"]
    assert len(lines) == 1 + 8 + 1 and lines[-1].startswith("… 7 more changed line(s)")
    assert "file_path" not in prompt.detail and "/w/proj" not in render_prompt(prompt)


def test_a_new_files_edit_shows_its_lines() -> None:
    prompt = prompt_of("p", request({"toolCallId": "e", "kind": "edit", "title": "n.py",
                                     "content": [{"type": "diff", "path": "/w/n.py", "oldText": None, "newText": "x = 1\n"}]}))
    assert prompt.detail == "/w/n.py: +1 −0 line(s)\n+x = 1"
