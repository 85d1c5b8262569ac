"""End to end: what the user does in the editor reaches the model.

The built package runs in the simulated editor (`python -m tests.headless`);
the real CLI's TUI connects to its window and sends each prompt to the fake
model. The CLI prepends the editor context it got through `ide/contextUpdate`
to the prompt: in full on the first turn ("Active file:", "Cursor: line L,
character C", "Selected text:", "Other open files:"), as a summary of changes
later ("Active file changed:", "Files closed:", ...). Before each prompt the
test waits until `/ide status` lists the expected files, so the context has
reached the CLI.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import StartTui
from tests.rig.fake_model import FakeModel, message_text
from tests.rig.qwen_cli import TuiSession
from tests.support.headless import HeadlessSublime

pytestmark = pytest.mark.e2e

ALPHA = "first = 1\nsecond = first + 2\nthird = second * 3\nprint(third)\n"
BETA = "NAME = 'beta'\n"
# alpha.py from line 2, column 3 to line 3, column 5 (1-based): the caret ends there.
SELECTION = ("cond = first + 2\nthir", (2, 3), (3, 5))
FULL_CONTEXT = "Here is the user's current editor context."
CHANGES = "Here is a summary of changes in the user's current editor context."
IDE_ECHO = re.compile(r"^[ \t]+> /ide status[ \t]*$")
FILE_LINE = re.compile(r"^\s+- (\S+?)( \(active\))?$")


@pytest.fixture
def sublime(workspace: Path, qwen_home: Path) -> Iterator[HeadlessSublime]:
    editor = HeadlessSublime(workspace, qwen_home)
    yield editor
    editor.kill()


def act(sublime: HeadlessSublime, verb: str, **arguments: Any) -> dict[str, Any]:
    answer = sublime.do(verb, **arguments)
    assert answer.get("ok"), f"headless {verb} {arguments}: {answer}"
    return answer


def listed_files(screen: str) -> list[str]:
    """The files under "Open files:" of the last `/ide status` on the screen,
    as the CLI shows them (`name` or `name (active)`)."""
    lines = screen.splitlines()
    echoes = [i for i, line in enumerate(lines) if IDE_ECHO.match(line)]
    if not echoes:
        return []
    files: list[str] = []
    in_list = False
    for line in lines[echoes[-1] + 1 :]:
        if line.strip() == "Open files:":
            in_list = True
        elif in_list:
            found = FILE_LINE.match(line)
            if not found:
                break
            files.append(found.group(1) + (found.group(2) or ""))
    return files


def wait_for_listed_files(tui: TuiSession, expected: list[str], timeout: float = 20.0) -> None:
    """Repeat `/ide status` until it lists exactly `expected`, in that order
    (the CLI sorts by focus time, most recent first)."""
    deadline = time.monotonic() + timeout
    while True:
        status = tui.ide_status(timeout=max(1.0, deadline - time.monotonic()))
        screen = tui.screen()
        files = listed_files(screen)
        if status.startswith("✓ Connected") and files == expected:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"/ide status lists {files}, not {expected}, after {timeout}s; screen:\n{screen}")
        time.sleep(0.3)


def this_turn(body: dict[str, Any]) -> str:
    """The text of the user messages that end the request: this turn's
    context reminder and prompt (earlier turns come before an assistant message)."""
    texts: list[str] = []
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            break
        texts.insert(0, message_text(message))
    return "\n".join(texts)


def ask(tui: TuiSession, model: FakeModel, prompt: str, reply: str) -> tuple[str, str]:
    """Submit `prompt`, wait for its request and the reply on screen; returns
    (this turn's text, a failure note with the screen and the request body)."""
    count = len(model.agent_requests)
    model.queue(reply)
    tui.submit(prompt)
    try:
        body = model.wait_for_requests(count + 1, timeout=60)[count]
    except TimeoutError as error:
        raise AssertionError(f"{error}; screen:\n{tui.screen()}") from None
    tui.wait_for(re.escape(reply), timeout=30)
    turn = this_turn(body)
    note = f"\n--- this turn ---\n{turn}\n--- screen ---\n{tui.screen()}\n--- request messages (end) ---\n{json.dumps(body.get('messages'))[-4000:]}"
    assert prompt in turn, f"the prompt is not in the last request{note}"
    return turn, note


def test_the_editor_context_reaches_the_model(
    sublime: HeadlessSublime,
    start_tui: StartTui,
    qwen_env: dict[str, str],
    fake_model: FakeModel,
    workspace: Path,
    tmp_path: Path,
) -> None:
    alpha, beta = workspace / "alpha.py", workspace / "beta.py"
    alpha.write_text(ALPHA)
    beta.write_text(BETA)
    tui = start_tui(env={**qwen_env, "QWEN_CODE_IDE_SERVER_PORT": str(sublime.ready["port"])})
    tui.wait_ide_status(timeout=30)
    sublime.wait_event(lambda e: e.get("event") == "sessions" and e["connected"] >= 1)

    # 1. Two files open, a range selected in the focused one: the full context.
    selected, start, end = SELECTION
    act(sublime, "open", path=str(beta))
    act(sublime, "open", path=str(alpha))
    act(sublime, "select", path=str(alpha), start=list(start), end=list(end))
    act(sublime, "wait_idle")  # the debounced update has gone out
    wait_for_listed_files(tui, ["alpha.py (active)", "beta.py"])

    turn, note = ask(tui, fake_model, "what does the selection do?", "Reply one.")
    assert FULL_CONTEXT in turn, note
    expected = (
        "Active file:\n"
        f"  Path: {alpha}\n"
        f"  Cursor: line {end[0]}, character {end[1]}\n"
        "  Selected text:\n"
        f"```\n{selected}\n```\n"
        "\n"
        "Other open files:\n"
        f"  - {beta}\n"
    )
    assert expected in turn, f"expected context block:\n{expected}{note}"
    excerpt = turn[turn.index(FULL_CONTEXT) :]
    (tmp_path / "context-request.txt").write_text(excerpt)
    print(f"\n--- first request, last user turn ---\n{excerpt}\n---")

    # 2. Focus moves to the other file: the next turn says the active file changed.
    act(sublime, "open", path=str(beta))
    act(sublime, "wait_idle")
    wait_for_listed_files(tui, ["beta.py (active)", "alpha.py"])

    turn, note = ask(tui, fake_model, "and now?", "Reply two.")
    assert CHANGES in turn, note
    assert f"Active file changed:\n  Path: {beta}\n  Cursor: line 1, character 1\n" in turn, note
    assert "Files opened:" not in turn and "Files closed:" not in turn, note
    assert selected not in turn, note

    # 3. The other file closes: the next turn says so and no longer lists it.
    act(sublime, "close", path=str(alpha))
    act(sublime, "wait_idle")
    wait_for_listed_files(tui, ["beta.py (active)"])

    turn, note = ask(tui, fake_model, "anything else?", "Reply three.")
    assert CHANGES in turn, note
    assert f"Files closed:\n  - {alpha}\n" in turn, note
    assert "Active file changed:" not in turn and "Files opened:" not in turn, note
