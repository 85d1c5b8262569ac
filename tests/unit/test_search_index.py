"""Search in Conversations' index: a session matches when its prompts and
answers together hold every word (any case); the file stays bounded (the
oldest turns go first); lines it cannot read (a crash's cut line, a huge
one, not an object) are skipped; a turn is indexed without what an export
leaves out of it (what tool calls on excluded files gave)."""

from __future__ import annotations

import json
from pathlib import Path

from qwencompanion_src.core.chat.history.export import LINE_LEFT_OUT
from qwencompanion_src.core.chat.history.search_index import MAX_LINE_BYTES, TEXT_MAX_CHARS, SearchIndex, indexed_text


def test_a_session_matches_on_the_words_of_its_prompts_and_answers(tmp_path: Path) -> None:
    index = SearchIndex(str(tmp_path / "cache" / "index.jsonl"))
    assert index.sessions_matching("anything") == set()  # no index yet
    index.add("s1", "How do I parse TOML?", "Use tomllib.")
    index.add("s1", "And write it?", "With tomli-w, a package of its own.")
    index.add("s2", "Parse JSON", "json.loads")
    assert index.sessions_matching("TOMLLIB package") == {"s1"}  # words of two answers of one session
    assert index.sessions_matching("parse") == {"s1", "s2"}
    assert index.sessions_matching("tomllib json") == set() and index.sessions_matching("  ") == set()


def test_each_text_is_cut_and_the_file_keeps_the_newest_turns_within_its_budget(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    index = SearchIndex(str(path), max_bytes=20_000)
    index.add("long", "p" * (TEXT_MAX_CHARS * 3), "a" * (TEXT_MAX_CHARS * 3) + " TAIL")
    assert len(json.loads(path.read_text())["answer"]) == TEXT_MAX_CHARS and index.sessions_matching("tail") == set()
    for number in range(400):
        index.add(f"s{number}", f"prompt {number}", f"answer word{number}")
        assert path.stat().st_size <= 20_000
    assert index.sessions_matching("word399") == {"s399"} and index.sessions_matching("word0") == set()
    assert not (tmp_path / "index.jsonl.tmp").exists()


def test_lines_it_cannot_read_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    path.write_text("\n".join([
        '{"session": "s1", "prompt": "cut by a cra',
        json.dumps({"session": "s2", "prompt": "x" * MAX_LINE_BYTES, "answer": "needle"}),
        json.dumps(["needle"]),
        json.dumps({"session": 5, "prompt": "needle"}),
        json.dumps({"session": "s3", "prompt": "the needle", "answer": None}),
    ]) + "\n")
    assert SearchIndex(str(path)).sessions_matching("needle") == {"s3"}
    assert SearchIndex(str(path)).sessions_matching("none") == set()  # a missing answer is no text


def test_a_turn_is_indexed_without_what_its_tool_calls_on_excluded_files_gave() -> None:
    turn = [("t3.user", "## You\n\nwhat is in .env?\n\n"),
            ("tool.r1", "ReadFile .env ✓\nAPI_KEY=sk-live-0123456789\nDEBUG=1\n\n"),
            ("tool.r2", "ReadFile notes.txt ✓\nshopping list\n\n"),
            ("t3.agent1", "## Qwen\n\nYour key is ...\n\n")]
    answer = "Your key is\nAPI_KEY=sk-live-0123456789\nand your shopping list is short."
    prompt, kept = indexed_text("is API_KEY=sk-live-0123456789 mine?", answer, turn, lambda path: path.endswith(".env"))
    assert prompt == LINE_LEFT_OUT
    assert kept == f"Your key is\n{LINE_LEFT_OUT}\nand your shopping list is short."  # a kept file's words stay
    nothing_excluded = indexed_text("a question", answer, turn, lambda path: False)
    assert nothing_excluded == ("a question", answer)
