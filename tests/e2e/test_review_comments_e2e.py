"""Send Review against the real `qwen --acp` (0.24.4) and the fake model: the
user's comments reach the model in one prompt, each with its file's path
relative to the folder, its lines, their quote and the comment; an excluded
file's lines never do."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, user_texts
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e


def comments() -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.comments.comment_commands"]


def test_a_review_reaches_the_model_with_file_lines_quote_and_comment(real_chat: RealChat, workspace: Path) -> None:
    (workspace / "src").mkdir()
    source, secret = workspace / "src" / "calc.py", workspace / ".env"
    source.write_text("def add(a, b):\n    return a - b\n\n\ndef twice(x):\n    return x * 3\n")
    secret.write_text("TOKEN=never-leaves-the-editor\n")
    real_chat.host.user.run_command("qwen_chat")
    chat = real_chat.host.wait_for(lambda: (c := real_chat.chat()) and c.core.state.session_id and c, timeout=WAIT)
    real_chat.model.queue(Reply(text="Fixed both."))
    window, module = real_chat.host.window, comments()
    for path, line, end, text in [(source, 1, 2, "add subtracts"), (source, 6, None, "twice triples"),
                                  (secret, 1, None, "rotate it")]:
        real_chat.host.run_on_main(lambda p=path, li=line, e=end, t=text: module.add_comment(window, chat, str(p), li, e, t))
    sent = real_chat.host.run_on_main(lambda: module.send_review(window, chat, "Please fix these.")).result(timeout=WAIT)
    assert sent == 3
    assert real_chat.ended(1)[-1] == "end_turn"
    prompt = user_texts(real_chat.model.agent_requests[-1])[-1]
    assert "Review: 3 comments on 2 files" in prompt and "Please fix these." in prompt
    assert "1. src/calc.py, lines 1-2:\n```\ndef add(a, b):\n    return a - b\n```\nadd subtracts" in prompt
    assert "2. src/calc.py, line 6:\n```\n    return x * 3\n```\ntwice triples" in prompt
    assert "3. .env, line 1:\n(the quote is withheld" in prompt and "never-leaves-the-editor" not in prompt
    transcript = real_chat.transcript()
    assert "Review: 3 comments on 2 files" in transcript and "- src/calc.py:1-2: add subtracts" in transcript
    assert "Fixed both." in transcript
    real_chat.host.wait_for(lambda: module.book.of_chat(chat.chat_id) == [], timeout=WAIT)  # cleared after the turn
