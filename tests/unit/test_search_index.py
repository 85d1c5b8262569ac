"""Search in Conversations' index: a session matches when its prompts and
answers together hold every word (any case); the file stays bounded (the
oldest turns go first); lines it cannot read (a crash's cut line, a huge
one, not an object) are skipped; a turn is indexed without what an export
leaves out of it (what tool calls on excluded files gave)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from qwencompanion_src.core.chat.history.export import LINE_LEFT_OUT, VALUE_LEFT_OUT
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


def test_a_value_of_an_excluded_file_quoted_inside_a_sentence_is_not_indexed() -> None:
    turn = [("tool.r1", "ReadFile .env ✓\nAPI_KEY=sk-live-0123456789\n\n")]
    prompt, kept = indexed_text("is sk-live-0123456789 mine?", "Your API key is sk-live-0123456789, keep it safe.",
                                turn, lambda path: path.endswith(".env"))
    assert (prompt, kept) == (f"is {VALUE_LEFT_OUT} mine?", f"Your API key is {VALUE_LEFT_OUT}, keep it safe.")


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_the_index_and_its_temporary_file_are_the_users_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              common_umask: None) -> None:
    folder = tmp_path / "cache" / "QwenCompanion"
    index = SearchIndex(str(folder / "index.jsonl"), max_bytes=2_000)
    index.add("s1", "a prompt", "an answer")
    assert (mode(folder), mode(folder / "index.jsonl")) == (0o700, 0o600)
    modes_while_trimmed: list[int] = []
    real_replace = os.replace

    def replace(source: str, target: str) -> None:
        modes_while_trimmed.append(mode(Path(source)))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    while not modes_while_trimmed:
        index.add("s1", "a prompt", "an answer")
    assert modes_while_trimmed == [0o600] and mode(folder / "index.jsonl") == 0o600


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_an_index_an_older_version_left_readable_is_made_the_users_alone(tmp_path: Path, common_umask: None) -> None:
    folder = tmp_path / "QwenCompanion"
    folder.mkdir(mode=0o755)
    (folder / "index.jsonl").write_text(json.dumps({"session": "s0", "prompt": "old", "answer": "turn"}) + "\n")
    (folder / "index.jsonl.tmp").write_text("")  # a trim cut short
    os.chmod(folder, 0o755)
    os.chmod(folder / "index.jsonl", 0o644)
    os.chmod(folder / "index.jsonl.tmp", 0o644)
    index = SearchIndex(str(folder / "index.jsonl"), max_bytes=400)
    index.add("s1", "a prompt", "an answer")
    assert (mode(folder), mode(folder / "index.jsonl")) == (0o700, 0o600)
    while (folder / "index.jsonl.tmp").exists():
        index.add("s1", "a prompt", "an answer")  # until a trim has written the temporary file again
    assert mode(folder / "index.jsonl") == 0o600 and index.sessions_matching("prompt") == {"s1"}


def test_past_its_budget_the_index_keeps_its_newer_half_and_is_not_rewritten_at_every_turn(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    budget = 20_000
    index = SearchIndex(str(path), max_bytes=budget)
    sizes_rewritten: list[int] = []
    for number in range(600):
        before = path.stat().st_ino if path.exists() else None
        index.add(f"s{number}", f"prompt {number}", f"answer word{number}")
        if before is not None and path.stat().st_ino != before:  # written anew, not appended to
            sizes_rewritten.append(path.stat().st_size)
    line = len(json.dumps({"session": "s100", "prompt": "prompt 100", "answer": "answer word100"})) + 1
    assert 1 <= len(sizes_rewritten) <= 600 * line // (budget // 2)  # once per half a budget of turns
    assert max(sizes_rewritten) <= budget // 2


@pytest.fixture
def common_umask() -> Iterator[None]:
    """The umask most desktops start an editor with (files 0644, folders 0755 unless asked otherwise)."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)
