"""The one check a session id passes before the package adopts it (pure).

An id comes from the agent (session/new, load, resume, session/list, a
branch) or from a record on disk (the folder's last session), and later
reaches a command line (`qwen --resume=<id>` in Terminus, through cmd.exe
on Windows), URLs and the chat's records. So it is data only when it cannot
be read as anything else: qwen's ids are UUIDs, and an id is accepted only
in a conservative alphabet (ASCII letters and digits, then also `.`, `_`,
`-`), starting with a letter or digit (never an option), and short."""

from __future__ import annotations

import re

SESSION_ID_MAX_CHARS = 128
_SESSION_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{SESSION_ID_MAX_CHARS - 1}}}", re.ASCII)


def session_id_or_none(value: object) -> str | None:
    """`value` if it is an id the package may adopt, else None."""
    return value if isinstance(value, str) and _SESSION_ID.fullmatch(value) else None


def session_id_refusal(value: object) -> str:
    """The sentence that says why `value` is refused as a session id."""
    shown = repr(value)[:80]
    return (f"the agent's session id {shown} was refused: an id is at most {SESSION_ID_MAX_CHARS} ASCII "
            "letters, digits, '.', '_' or '-', starting with a letter or digit")
