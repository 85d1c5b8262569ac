"""What of the editor may leave it, for the CLI's context and a chat's prompt
alike: the user's privacy settings (files never named, whether the selected
text goes along) and how a long selection is cut.

Pure: no Sublime, no protocol models.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

# A selected text longer than this (in UTF-8) is cut, for the CLI and a chat alike.
MAX_SELECTED_TEXT_BYTES = 16 * 1024

DEFAULT_DEBOUNCE_MS = 50
MAX_DEBOUNCE_MS = 5000
DEFAULT_EXCLUDED_PATTERNS: tuple[str, ...] = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass",
)
# The CLI's own truncation marker, so the model knows the selection goes on.
TRUNCATION_MARKER = "... [TRUNCATED]"


@dataclass(frozen=True)
class ContextOptions:
    """The user's privacy settings for what leaves the editor."""

    send_selected_text: bool = True
    excluded_patterns: tuple[str, ...] = DEFAULT_EXCLUDED_PATTERNS
    trusted: bool | None = None  # None: `isTrusted` is left out

    @classmethod
    def from_settings(cls, values: Mapping[str, object]) -> ContextOptions:
        """Read the settings, falling back to the default for a value of the wrong type."""
        send = values.get("send_selected_text", True)
        patterns = values.get("excluded_file_patterns", DEFAULT_EXCLUDED_PATTERNS)
        trusted = values.get("workspace_trusted")
        return cls(
            send_selected_text=send if isinstance(send, bool) else True,
            excluded_patterns=(
                tuple(p for p in patterns if isinstance(p, str) and p)
                if isinstance(patterns, (list, tuple))
                else DEFAULT_EXCLUDED_PATTERNS
            ),
            trusted=trusted if isinstance(trusted, bool) else None,
        )

    def excludes(self, path: str) -> bool:
        """True when a pattern matches the file's name or its full path.

        Case-insensitive: for a privacy filter, hiding `ID_RSA` too is the safe side.
        """
        either = excluded_regex(self.excluded_patterns)
        if either is None:
            return False
        full = path.replace("\\", "/").lower()
        name = full.rsplit("/", 1)[-1]
        return either.match(name) is not None or either.match(full) is not None


@functools.lru_cache(maxsize=16)
def excluded_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """The patterns, lowered, as one regex: matching it is `fnmatchcase` of
    any of them (each translation is anchored at both ends), in one call, for
    searches that ask of thousands of files."""
    lowered = [pattern.replace("\\", "/").lower() for pattern in patterns]
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in lowered)) if lowered else None


def debounce_ms(value: object) -> int:
    """The debounce setting, clamped to [0, MAX_DEBOUNCE_MS]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DEFAULT_DEBOUNCE_MS
    return int(min(max(value, 0), MAX_DEBOUNCE_MS))


def selection_read_end(begin: int, end: int, max_bytes: int = MAX_SELECTED_TEXT_BYTES) -> int:
    """Where to stop reading a selection out of the buffer.

    Points count code points and each takes at least one UTF-8 byte, so
    `max_bytes` points always hold enough text for the cut, and one more tells
    it that the selection goes on: selecting all of a huge file never copies
    more than that out of the buffer.
    """
    return min(end, begin + max_bytes + 1)


def cut_selected_text(text: str, max_bytes: int = MAX_SELECTED_TEXT_BYTES) -> str:
    """`text` when it fits in `max_bytes` of UTF-8, else its longest prefix that
    fits together with TRUNCATION_MARKER (never splitting a character)."""
    if len(text) * 4 <= max_bytes or len(text.encode("utf-8")) <= max_bytes:
        return text
    budget = max_bytes - len(TRUNCATION_MARKER.encode("utf-8"))
    prefix = text.encode("utf-8")[:budget].decode("utf-8", "ignore")
    return prefix + TRUNCATION_MARKER
