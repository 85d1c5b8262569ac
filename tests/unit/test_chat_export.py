"""A chat exported (core/chat/history/export.py and core/chat/history/history.py, pure): the
formats, the last answer, what excluded files gave left out, and the history
list's bounds."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from qwencompanion_src.core.chat.history.export import LEFT_OUT, LINE_LEFT_OUT, VALUE_LEFT_OUT, answer, export
from qwencompanion_src.core.chat.history.history import entry_of, filtered, list_folder, newest_first
from qwencompanion_src.core.companion.ide_context import ContextOptions

EXCLUDES = ContextOptions.from_settings({}).excludes  # the default patterns: .env, *.pem, …
SECRET = "API_KEY=sk-live-0123456789"


def transcript() -> list[tuple[str, str]]:
    """Blocks as the chat writes them: a prompt, a tool call reading `.env` (its
    output the secret), one reading a.py, a permission, the answer quoting the
    secret, the usage line; then a second turn."""
    return [
        ("t1.user", "## You\n\nwhat is in .env?\n\n"),
        ("tool.c1", "✓ read `ReadFile .env` .env:1 — completed\n    " + SECRET + "\n    DEBUG=1\n\n"),
        ("tool.c2", "✓ read `ReadFile a.py` a.py — completed\n    print('hello world')\n\n"),
        ("perm1", "**Permission** (edit): Edit a.py\nFiles: a.py\n```\n+ x = 2\n```\n[1] Allow  [2] Reject\n\n"),
        ("t1.agent1", f"## Qwen\n\nThe file holds\n{SECRET}\nand a flag.\n\n"),
        ("t1.footer", "*12 in / 5 out*\n\n"),
        ("t2.user", "## You\n\nthanks <b>\n\n"),
        ("t2.agent1", "## Qwen\n\nYou are welcome.\n\n"),
    ]


def test_markdown_reads_as_the_transcript_without_what_excluded_files_gave() -> None:
    text = export(transcript(), "markdown", "My chat", "s1", EXCLUDES)
    assert text.startswith("# My chat\n\n## You\n\nwhat is in .env?")
    assert SECRET not in text and "DEBUG=1" not in text
    assert "✓ read `ReadFile .env` .env:1 — completed\n" + LEFT_OUT in text
    assert f"The file holds\n{LINE_LEFT_OUT}\nand a flag." in text  # the answer's quote of it goes too
    assert "    print('hello world')" in text and "**Permission** (edit): Edit a.py\nFiles: a.py\n```\n+ x = 2" in text
    assert "*12 in / 5 out*" in text


def test_nothing_is_left_out_when_no_pattern_matches() -> None:
    text = export(transcript(), "markdown", "My chat", "s1", lambda path: False)
    assert text.count(SECRET) == 2 and LEFT_OUT not in text


def test_json_lines_hold_one_block_each_with_its_kind_and_turn() -> None:
    lines = [json.loads(line) for line in export(transcript(), "jsonl", "My chat", "s1", EXCLUDES).splitlines()]
    assert lines[0] == {"kind": "chat", "title": "My chat", "sessionId": "s1"}
    assert [(line["kind"], line["turn"]) for line in lines[1:]] == [
        ("user", 1), ("tool", 1), ("tool", 1), ("permission", 1), ("agent", 1), ("usage", 1), ("user", 2), ("agent", 2)]
    assert SECRET not in json.dumps(lines)


def test_html_escapes_every_text() -> None:
    page = export(transcript(), "html", "<My> chat", "s1", EXCLUDES)
    assert "<title>&lt;My&gt; chat</title>" in page and "thanks &lt;b&gt;" in page and "<b>" not in page
    assert SECRET not in page


def test_the_answer_is_the_agents_words_of_a_turn() -> None:
    assert answer(transcript(), None, EXCLUDES) == "You are welcome."
    assert answer(transcript(), 1, EXCLUDES) == f"The file holds\n{LINE_LEFT_OUT}\nand a flag."
    assert answer([("t1.user", "## You\n\nhi\n\n")], None, EXCLUDES) == ""


def test_a_session_entry_is_bounded_and_needs_an_id() -> None:
    entry = entry_of({"sessionId": "s", "title": "x" * 10_000, "_meta": {"preview": "  first\n prompt " * 1000}})
    assert entry is not None and len(entry.title) == 200 and len(entry.first_prompt) == 200
    assert entry.first_prompt.startswith("first prompt first")
    assert entry_of({"title": "no id"}) is None and entry_of("junk") is None
    assert entry_of({"sessionId": "s", "_meta": {"messageCount": 7}}).messages == 7  # type: ignore[union-attr]


def test_sessions_merge_newest_first_once_each_and_filter_on_every_word() -> None:
    older = entry_of({"sessionId": "a", "title": "Fix the parser", "updatedAt": "2026-01-01T00:00:00Z"})
    newer = entry_of({"sessionId": "b", "title": "Docs", "updatedAt": "2026-02-01T00:00:00Z",
                      "_meta": {"preview": "write the README"}})
    undated = entry_of({"sessionId": "c", "title": "Undated"})
    assert older and newer and undated
    merged = newest_first([[undated, older], [newer, older]])
    assert [e.session_id for e in merged] == ["b", "a", "c"]
    assert [e.session_id for e in filtered(merged, "readme DOCS")] == ["b"]
    assert filtered(merged, "  ") == merged


def test_a_list_that_pages_forever_stops_at_a_repeated_cursor_and_at_the_cap() -> None:
    asked: list[str | None] = []

    async def same_cursor(cwd: str, cursor: str | None) -> Any:
        asked.append(cursor)
        return {"sessions": [{"sessionId": f"s{len(asked)}"}], "nextCursor": "7"}

    assert len(asyncio.run(list_folder(same_cursor, "/w"))) == 2 and asked == [None, "7"]

    async def endless(cwd: str, cursor: str | None) -> Any:
        start = int(cursor or 0)
        return {"sessions": [{"sessionId": f"s{n}"} for n in range(start, start + 300)], "nextCursor": str(start + 300)}

    assert len(asyncio.run(list_folder(endless, "/w", limit=1000))) == 1000


def test_a_value_or_long_word_of_an_excluded_file_is_left_out_wherever_it_is_quoted() -> None:
    env = ("✓ read `ReadFile .env` .env:1 — completed\n    API_KEY=sk-live-0123456789\n    export PASSWORD='hunter2'\n"
           "    DEBUG=1\n    # Staging db at db.internal.example\n\n")
    said = ("## Qwen\n\nYour API key is sk-live-0123456789 and the password is hunter2 (not hunter22);"
            " the database is db.internal.example, DEBUG is 1.\n\n")
    raw = [("t1.user", "## You\n\nwhat is in .env?\n\n"), ("tool.c1", env), ("t1.agent1", said)]
    for fmt in ("markdown", "html", "jsonl"):
        text = export(raw, fmt, "chat", "s1", EXCLUDES)
        assert "sk-live" not in text and "0123456789" not in text and "db.internal" not in text, fmt
        assert "hunter2 " not in text and "hunter22" in text, fmt  # a value as a word; not inside another word
        assert "DEBUG is 1." in text, fmt  # a value this short is too common to hunt
    assert answer(raw, 1, EXCLUDES) == (f"Your API key is {VALUE_LEFT_OUT} and the password is {VALUE_LEFT_OUT}"
                                        f" (not hunter22); the database is {VALUE_LEFT_OUT}, DEBUG is 1.")
