"""A window's groups as Sublime lays them out (`Window.layout()`): `cols` and
`rows` are the separators from 0 to 1, each cell `[x1, y1, x2, y2]` indexes
them, and a group's number is its cell's place in `cells`.

One placement rule for everything the package shows: the code stays
visible. What goes beside the code gets a group of its own, split off the
code's cell (`split_beside`) and given back when it closes (`merge_back`);
the other groups (the chat's column) keep their places and numbers.
"""

from __future__ import annotations

import copy
from typing import Literal, TypedDict


class Layout(TypedDict):
    cols: list[float]
    rows: list[float]
    cells: list[list[int]]


SINGLE: Layout = {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]}


def split_beside(layout: Layout, group: int) -> Layout:
    """`layout` with `group`'s cell halved left and right: `group` keeps the
    left half, a new group (the last number) takes the right half."""
    out = copy.deepcopy(layout)
    cols, cells = out["cols"], out["cells"]
    x1, y1, x2, y2 = cells[group]
    inner = list(range(x1 + 1, x2))  # separators inside the cell: it already spans several columns
    if inner:
        middle = inner[len(inner) // 2]
    else:
        middle = x1 + 1
        cols.insert(middle, (cols[x1] + cols[x2]) / 2)
        for cell in cells:
            cell[0], cell[2] = (x + 1 if x >= middle else x for x in (cell[0], cell[2]))
        x2 += 1
    cells[group] = [x1, y1, middle, y2]
    cells.append([middle, y1, x2, y2])
    return out


def merge_back(layout: Layout, group: int) -> tuple[Layout, int] | None:
    """`layout` without `group`, its cell given to the group beside it (on
    its left, else its right) that spans the same rows, and that group's
    number in the new layout; None when no group sits so (the user
    rearranged them). Groups after `group` move down one number."""
    out = copy.deepcopy(layout)
    cells = out["cells"]
    if not 0 <= group < len(cells) or len(cells) == 1:
        return None
    gone = cells[group]
    rows_of = (gone[1], gone[3])
    left = next((i for i, c in enumerate(cells) if (c[1], c[3]) == rows_of and c[2] == gone[0]), None)
    right = next((i for i, c in enumerate(cells) if (c[1], c[3]) == rows_of and c[0] == gone[2]), None)
    if left is not None:
        cells[left][2] = gone[2]
    elif right is not None:
        cells[right][0] = gone[0]
    else:
        return None
    into = left if left is not None else right
    assert into is not None
    del cells[group]
    _drop_unused(out, "cols", (0, 2))
    _drop_unused(out, "rows", (1, 3))
    return out, into - (into > group)


def _drop_unused(layout: Layout, key: Literal["cols", "rows"], at: tuple[int, int]) -> None:
    """Drop the separators no cell uses, renumbering the cells."""
    lines = layout[key]
    used = sorted({cell[i] for cell in layout["cells"] for i in at})
    number = {old: new for new, old in enumerate(used)}
    layout[key] = [lines[old] for old in used]
    for cell in layout["cells"]:
        for i in at:
            cell[i] = number[cell[i]]


def same_layout(a: Layout, b: Layout) -> bool:
    """Equal but for float noise (Sublime hands back the fractions it was given)."""
    close = all(abs(x - y) < 1e-6 for x, y in zip(a["cols"] + a["rows"], b["cols"] + b["rows"], strict=False))  # lengths compared next
    return close and len(a["cols"]) == len(b["cols"]) and len(a["rows"]) == len(b["rows"]) and a["cells"] == b["cells"]
