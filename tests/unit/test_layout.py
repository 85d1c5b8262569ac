"""The layout arithmetic of placement (core/layout.py): a group split off
beside the code and given back, other groups keeping their numbers."""

from __future__ import annotations

from qwencompanion_src.core.layout import SINGLE, Layout, merge_back, same_layout, split_beside

CHAT: Layout = {"cols": [0.0, 0.6, 1.0], "rows": [0.0, 0.78, 1.0], "cells": [[0, 0, 1, 2], [1, 0, 2, 1], [1, 1, 2, 2]]}


def test_a_single_group_becomes_two_columns_and_back() -> None:
    split = split_beside(SINGLE, 0)
    assert split == {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}
    assert merge_back(split, 1) == (SINGLE, 0)
    assert SINGLE == {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]}  # not changed in place


def test_the_chats_column_keeps_its_groups_and_place() -> None:
    split = split_beside(CHAT, 0)
    assert split["cols"] == [0.0, 0.3, 0.6, 1.0]
    assert split["cells"] == [[0, 0, 1, 2], [2, 0, 3, 1], [2, 1, 3, 2], [1, 0, 2, 2]]
    back = merge_back(split, 3)
    assert back is not None and same_layout(back[0], CHAT) and back[1] == 0


def test_a_cell_over_several_columns_splits_at_a_separator_it_spans() -> None:
    wide: Layout = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 0.5, 1.0], "cells": [[0, 0, 2, 1], [0, 1, 1, 2], [1, 1, 2, 2]]}
    split = split_beside(wide, 0)
    assert split["cols"] == [0.0, 0.5, 1.0]
    assert split["cells"][0] == [0, 0, 1, 1] and split["cells"][3] == [1, 0, 2, 1]
    assert merge_back(split, 3) == (wide, 0)


def test_the_divider_dragged_still_merges_back() -> None:
    split = split_beside(SINGLE, 0)
    split["cols"][1] = 0.7
    assert merge_back(split, 1) == (SINGLE, 0)


def test_groups_rearranged_by_the_user_are_left_alone() -> None:
    stacked: Layout = {"cols": [0.0, 1.0], "rows": [0.0, 0.5, 1.0], "cells": [[0, 0, 1, 1], [0, 1, 1, 2]]}
    assert merge_back(stacked, 1) is None  # one above the other: nothing beside it
    column: Layout = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 0.5, 1.0], "cells": [[0, 0, 1, 1], [0, 1, 1, 2], [1, 0, 2, 2]]}
    assert merge_back(column, 2) is None  # as tall as two groups: none takes its place alone
    assert merge_back(SINGLE, 0) is None
    assert merge_back(split_beside(SINGLE, 0), 5) is None


def test_a_group_split_twice_gives_each_back_to_its_neighbour_in_any_order() -> None:
    twice = split_beside(split_beside(SINGLE, 0), 0)  # code | second | first
    assert twice["cells"] == [[0, 0, 1, 1], [2, 0, 3, 1], [1, 0, 2, 1]]
    first_gone = merge_back(twice, 1)
    assert first_gone is not None and first_gone[1] == 1  # the second group took its place, now number 1
    assert merge_back(first_gone[0], 1) == (SINGLE, 0)
    second_gone = merge_back(twice, 2)
    assert second_gone is not None and merge_back(second_gone[0], 1) == (SINGLE, 0)


def test_same_layout_ignores_float_noise_only() -> None:
    split = split_beside(SINGLE, 0)
    noisy: Layout = {**split, "cols": [0.0, 0.5000000001, 1.0]}
    assert same_layout(split, noisy)
    assert not same_layout(split, SINGLE)
