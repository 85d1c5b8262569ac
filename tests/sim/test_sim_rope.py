"""The simulator's buffer: a rope whose edits do not copy the document, and
that reads exactly like the plain string it stands for."""

from __future__ import annotations

import random
import tracemalloc

from tests.sublime_sim._rope import LEAF, Rope


def row_start(text: str, row: int) -> int:
    start = 0
    for _ in range(row):
        newline = text.find("\n", start)
        if newline < 0:
            break
        start = newline + 1
    return start


def test_random_edits_read_like_a_string() -> None:
    rng = random.Random(7)
    text, rope = "", Rope.of("")
    for _ in range(1500):
        begin = rng.randint(0, len(text))
        end = rng.randint(begin, min(len(text), begin + rng.choice([0, 3, 50, 2000])))
        insert = "".join(rng.choice("ab\n€") for _ in range(rng.choice([0, 1, 7, 300, 1500])))
        text = text[:begin] + insert + text[end:]
        rope = rope.replace(begin, end, insert)
        assert len(rope) == len(text)
        a = rng.randint(0, len(text))
        b = rng.randint(a, len(text))
        assert rope.substr(a, b) == text[a:b]
        assert rope.newlines_before(a) == text.count("\n", 0, a)
        row = rng.randint(0, text.count("\n") + 2)
        assert rope.row_start(row) == row_start(text, row)
    assert str(rope) == text
    assert rope.height <= 3 * max(len(text) // LEAF, 1).bit_length() + 3  # balanced


def test_a_snapshot_is_unchanged_by_later_edits() -> None:
    before = Rope.of("one\ntwo\n")
    after = before.replace(4, 7, "2")
    assert (str(before), str(after)) == ("one\ntwo\n", "one\n2\n")


def test_an_edit_allocates_what_it_adds_not_the_document() -> None:
    rope = Rope.of("x" * 20_000_000)
    tracemalloc.start()
    try:
        for number in range(100):
            rope = rope.replace(10_000_000, 10_000_000, f"edit {number}\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # copying the text once would take 20 MB
    assert rope.substr(10_000_000, 10_000_008) == "edit 99\n"


def test_a_text_filled_whole_is_neither_copied_nor_cut_into_leaves() -> None:
    text = "line\n" * 2_000_000
    tracemalloc.start()
    try:
        rope = Rope.of(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10_000  # 10,000 leaves of 1 KB would take 10 MB; a copy, as much
    assert str(rope) is text and len(rope) == len(text) and rope.newlines == 2_000_000


def test_random_edits_and_row_lookups_in_a_text_filled_whole_read_like_a_string() -> None:
    # Every edit and lookup starts inside the part of the text not split yet.
    rng = random.Random(11)
    text = "".join(rng.choice("ab\n€") for _ in range(60 * LEAF + 17))
    rope = Rope.of(text)
    for _ in range(400):
        a = rng.randint(0, len(text))
        assert rope.newlines_before(a) == text.count("\n", 0, a)
        row = rng.randint(0, text.count("\n") + 2)
        assert rope.row_start(row) == row_start(text, row)
        b = rng.randint(a, min(len(text), a + rng.choice([0, 5, 3000])))
        assert rope.substr(a, b) == text[a:b]
        insert = "".join(rng.choice("xy\n") for _ in range(rng.choice([0, 2, 900, 2500])))
        begin = rng.randint(0, len(text))
        end = rng.randint(begin, min(len(text), begin + rng.choice([0, 4, 5000])))
        text = text[:begin] + insert + text[end:]
        rope = rope.replace(begin, end, insert)
        assert len(rope) == len(text) and rope.newlines == text.count("\n")
    assert str(rope) == text
    assert rope.height <= 3 * max(len(text) // LEAF, 1).bit_length() + 3  # balanced
