"""End to end: the real CLI (0.24.4) calls the IDE tools, with the fake
model asking for `get_document_symbols` and `find_def_locations` on a small
Python project. In the TUI started exactly as Open in Terminal starts it
(`--mcp-config`), and in a chat session (`mcpServers`)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_open_terminal_e2e import editor, record, terminus_tui  # noqa: F401  (fixtures)
from tests.rig.fake_model import FakeModel, Reply, ToolCall, is_agent_request, message_text
from tests.rig.qwen_cli import QwenCli
from tests.sim.test_ide_tools import MAIN, SHELF
from tests.support.editor import Editor
from tests.support.terminus import terminus_calls, terminus_records

pytestmark = pytest.mark.e2e

def write_project(workspace: Path) -> None:
    (workspace / "shelf.py").write_text(SHELF)
    (workspace / "main.py").write_text(MAIN)


def deferred_name(body: dict[str, Any], tool: str) -> str | None:
    """The name the CLI gives our tool: 0.24.4 defers MCP tools, reachable
    through tool_search and tool_call. The TUI lists them by name in a
    startup reminder; a chat session's tools are found by tool_search."""
    found = re.search(rf"mcp__sublime-ide-tools__{tool}", json.dumps(body.get("messages", [])))
    return found.group(0) if found else None


def this_turns_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results since the user's last prompt."""
    messages = body.get("messages", [])
    last_prompt = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    return [m for m in messages[last_prompt:] if m.get("role") == "tool"]


def symbols_then_definition(workspace: Path) -> Any:
    """The model's turns, as a model uses deferred tools: find and review the
    two schemas (tool_search), outline shelf.py and find where main.py's
    `Shelf` is defined (tool_call), then answer."""

    def respond(body: dict[str, Any]) -> Reply | None:
        if not is_agent_request(body):
            return None
        done = len(this_turns_results(body))
        if done == 0:
            return Reply(tool_calls=[ToolCall("tool_search", {"query": "+sublime document symbols definition"})])
        symbols, definitions = deferred_name(body, "get_document_symbols"), deferred_name(body, "find_def_locations")
        if symbols is None or definitions is None:
            return Reply(text="NO IDE TOOLS")
        if done == 1:
            return Reply(tool_calls=[ToolCall("tool_call", {
                "name": symbols, "arguments": {"abspath": str(workspace / "shelf.py")}})])
        if done == 2:
            # main.py line 5 is `    shelf = Shelf()`; character 13 is on `Shelf`
            return Reply(tool_calls=[ToolCall("tool_call", {
                "name": definitions, "arguments": {"abspath": str(workspace / "main.py"), "line": 5, "character": 13}})])
        return Reply(text="Shelf is a class in shelf.py.")

    return respond


def received(model: FakeModel) -> list[Any]:
    """What our two tools answered, as the model received it (the JSON inside each tool result)."""
    last = [body for body in model.requests if is_agent_request(body)][-1]
    results = [message_text(message) for message in this_turns_results(last)][1:]
    answers = []
    for text in results:
        start = text.index("{")
        answers.append(json.JSONDecoder().raw_decode(text[start:])[0])
    return answers


def assert_right_answers(model: FakeModel, workspace: Path) -> None:
    symbols, definition = received(model)
    shelf, count = symbols["symbols"]
    assert (count["name"], count["kind"], count["range"]["start"]["line"]) == ("count", "Function", 9)
    assert (shelf["name"], shelf["kind"], shelf["range"]["start"]["line"], shelf["range"]["end"]["line"]) == ("Shelf", "Class", 1, 6)
    assert [(m["name"], m["kind"], m["range"]["start"]["line"]) for m in shelf["children"]] == [
        ("__init__", "Method", 2), ("add", "Method", 5),
    ]
    assert definition["locations"] == [{
        "abspath": str(workspace / "shelf.py"),
        "range": {"start": {"line": 1, "character": 7}, "end": {"line": 1, "character": 12}},
    }]


def test_the_terminal_qwen_calls_the_ide_tools(
    editor: Editor,  # noqa: F811  (the fixture imported above)
    record: Path,  # noqa: F811  (the fixture imported above)
    qwen_cli: QwenCli,
    tmux_bin: str,
    workspace: Path,
    qwen_env: dict[str, str],
    fake_model: FakeModel,
    tmp_path: Path,
) -> None:
    write_project(workspace)
    editor.load([workspace])
    editor.host.user.run_command("qwen_open_terminal")
    editor.host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    [args] = terminus_records(record)
    assert args["shell_cmd"].startswith("qwen --mcp-config ")

    fake_model.set_responder(symbols_then_definition(workspace))
    tui = terminus_tui(args, qwen_env, qwen_cli, tmp_path, tmux_bin)
    try:
        tui.start()
        tui.wait_ready(60)
        tui.submit("Where is Shelf defined?")
        tui.wait_for("Shelf is a class in shelf.py.", timeout=WAIT)
    finally:
        tui.close()
    assert_right_answers(fake_model, workspace)


def test_a_chat_session_calls_the_ide_tools(real_chat: RealChat, workspace: Path) -> None:
    write_project(workspace)
    real_chat.model.set_responder(symbols_then_definition(workspace))

    def allow_what_is_asked(turns: int) -> bool:
        pending = real_chat.chat().request_handler().pending.oldest()
        if pending is not None:
            allow = next(o for o in pending.options if o.kind == "allow_once")
            real_chat.host.user.run_command("qwen_chat_permission", {"option": allow.option_id})
        return len(real_chat.ended_so_far()) >= turns

    # 0.24.4 connects a session's MCP servers in the background: a prompt
    # sent at once may come before the tools are registered; ask again then.
    for turn in range(1, 6):
        real_chat.send("Where is Shelf defined?")
        real_chat.host.wait_for(functools.partial(allow_what_is_asked, turn), timeout=WAIT)
        if "NO IDE TOOLS" not in real_chat.transcript().rsplit("## You", 1)[-1]:
            break
        time.sleep(1)
    assert real_chat.ended_so_far()[-1] == "end_turn"
    assert "Shelf is a class in shelf.py." in real_chat.transcript()
    assert_right_answers(real_chat.model, workspace)


def search_then_answer(query: str) -> Any:
    """The model finds search_project (tool_search), searches the project
    for `query` (tool_call), then answers."""

    def respond(body: dict[str, Any]) -> Reply | None:
        if not is_agent_request(body):
            return None
        done = len(this_turns_results(body))
        if done == 0:
            return Reply(tool_calls=[ToolCall("tool_search", {"query": "+sublime search project text"})])
        search = deferred_name(body, "search_project")
        if search is None:
            return Reply(text="NO IDE TOOLS")
        if done == 1:
            return Reply(tool_calls=[ToolCall("tool_call", {"name": search, "arguments": {"query": query}})])
        return Reply(text="Searched the project.")

    return respond


def test_search_project_sees_unsaved_text_and_never_an_excluded_file(real_chat: RealChat, workspace: Path) -> None:
    write_project(workspace)
    (workspace / ".env").write_text("API_KEY=MARKER_in_the_secret_file\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)  # git grep answers for the saved files
    view = real_chat.host.user.open_file(workspace / "main.py")
    real_chat.host.user.replace(view, (0, 0), "# MARKER_typed_not_saved\n")
    real_chat.model.set_responder(search_then_answer("MARKER_"))

    def allow_what_is_asked(turns: int) -> bool:
        pending = real_chat.chat().request_handler().pending.oldest()
        if pending is not None:
            allow = next(o for o in pending.options if o.kind == "allow_once")
            real_chat.host.user.run_command("qwen_chat_permission", {"option": allow.option_id})
        return len(real_chat.ended_so_far()) >= turns

    for turn in range(1, 6):  # the session's MCP servers connect in the background (see above)
        real_chat.send("Find the markers")
        real_chat.host.wait_for(functools.partial(allow_what_is_asked, turn), timeout=WAIT)
        if "NO IDE TOOLS" not in real_chat.transcript().rsplit("## You", 1)[-1]:
            break
        time.sleep(1)
    assert "Searched the project." in real_chat.transcript()
    last = [body for body in real_chat.model.requests if is_agent_request(body)][-1]
    [_, searched] = [message_text(message) for message in this_turns_results(last)]
    assert "main.py:1:3: # MARKER_typed_not_saved" in searched
    assert "MARKER_in_the_secret_file" not in searched and ".env" not in searched
    assert view.is_dirty() and "MARKER" not in (workspace / "main.py").read_text()
