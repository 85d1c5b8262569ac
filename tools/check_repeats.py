"""Fails when a block of six or more lines appears twice outside the tests.

    python tools/check_repeats.py [--min-lines N] [PATH ...]

Reads the Python files below each PATH (by default the package source, the
bench and tools; the vendored libraries left out) and prints each pair of
places that share a run of at least N lines, both places named, then exits 1;
exits 0 when there is none. Lines are compared with their whitespace folded;
blank lines, comments, import statements and lines of lone punctuation are
passed over, so they neither make a repeat nor hide one. Only the same lines
count: code of the same shape with other names is not flagged.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("QwenCompanion.sublime-package-src", "bench", "tools")
LEFT_OUT_DIRS = frozenset({"_vendor", "__pycache__"})
MIN_LINES = 6
LONE_PUNCTUATION = re.compile(r"[()\[\]{},:;.]*")
IMPORT = re.compile(r"(import|from)\s")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the file
    text: str  # whitespace folded


@dataclass(frozen=True)
class Repeat:
    """Lines first..last of one file stand again at again_first..again_last."""

    path: Path
    first: int
    last: int
    again_path: Path
    again_first: int
    again_last: int
    length: int  # the lines compared (what was passed over not counted)

    def describe(self, root: Path) -> str:
        return (f"{_shown(self.path, root)}:{self.first}-{self.last} ~ "
                f"{_shown(self.again_path, root)}:{self.again_first}-{self.again_last} ({self.length} lines)")


def compared_lines(source: str) -> list[Line]:
    """The lines of `source` that count, whitespace folded."""
    kept: list[Line] = []
    in_import = False
    for number, raw in enumerate(source.splitlines(), start=1):
        text = " ".join(raw.split())
        if in_import:
            in_import = ")" not in text
            continue
        if IMPORT.match(text):
            # A parenthesised import goes on to its closing parenthesis.
            in_import = text.endswith("(")
            continue
        if not text or text.startswith("#") or LONE_PUNCTUATION.fullmatch(text):
            continue
        kept.append(Line(number, text))
    return kept


def find_repeats(files: dict[Path, list[Line]], min_lines: int = MIN_LINES) -> list[Repeat]:
    """Every pair of places sharing at least `min_lines` compared lines, each
    run once at its full length."""
    places: dict[tuple[str, ...], list[tuple[Path, int]]] = defaultdict(list)
    for path, lines in files.items():
        for start in range(len(lines) - min_lines + 1):
            places[tuple(line.text for line in lines[start:start + min_lines])].append((path, start))
    pairs: set[tuple[Path, int, Path, int]] = set()
    for found in places.values():
        for index, (path, start) in enumerate(found):
            for again_path, again_start in found[index + 1:]:
                if path != again_path or again_start - start >= min_lines:  # a run overlapping itself is no repeat
                    pairs.add((path, start, again_path, again_start))
    repeats = []
    for path, start, again_path, again_start in sorted(pairs):
        if (path, start - 1, again_path, again_start - 1) in pairs:
            continue  # inside a run that starts earlier
        windows = 1
        while (path, start + windows, again_path, again_start + windows) in pairs:
            windows += 1
        length = windows + min_lines - 1
        lines, again_lines = files[path], files[again_path]
        repeats.append(Repeat(path, lines[start].number, lines[start + length - 1].number, again_path,
                              again_lines[again_start].number, again_lines[again_start + length - 1].number, length))
    return repeats


def python_files(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        candidates = [path] if path.is_file() else sorted(path.rglob("*.py"))
        found.extend(file for file in candidates if not LEFT_OUT_DIRS & set(file.parts))
    return found


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def main(argv: Sequence[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-lines", type=int, default=MIN_LINES)
    parser.add_argument("paths", nargs="*", type=Path, default=[root / name for name in DEFAULT_PATHS])
    options = parser.parse_args(argv)
    files = {path: compared_lines(path.read_text(encoding="utf-8")) for path in python_files(options.paths)}
    repeats = find_repeats(files, options.min_lines)
    for repeat in repeats:
        print(repeat.describe(root))
    if repeats:
        print(f"{len(repeats)} block(s) of {options.min_lines} or more lines repeated in {len(files)} files: "
              "make one piece of code serve both places.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
