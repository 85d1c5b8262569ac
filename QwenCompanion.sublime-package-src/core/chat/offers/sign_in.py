"""Sign In and Sign Out, as the agent announces them (pure).

qwen 0.24.4 (read in its bundle, seen in `initialize`): one auth method,
`{id: "openai", name: "Use OpenAI API key", description: "Requires setting
the OPENAI_API_KEY environment variable", _meta: {type: "terminal", args:
["--auth-type=openai"]}}`: run qwen in a terminal with those args and sign in
there. Its `type` and `args` sit under `_meta`; ACP's stable terminal auth
method has them at the top level: both are read. A session/new without a
sign-in fails -32000 "Authentication required: Use Qwen Code CLI to
authenticate first."; `authenticate` then reads only the settings the agent
started with, so a sign-in made in the terminal reaches the chat once its
agent starts again. qwen 0.24.4 announces no `logout`
(`agentCapabilities.auth.logout`) and its `qwen auth` subcommands are
removed: it offers no sign-out an editor can send.

The args are the agent's data: only qwen's own long options of plain
characters are taken (`--name` or `--name=value`), never a word a shell or
Terminus would read otherwise."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...display_text import display_text

MAX_ARGS = 8
ARG = re.compile(r"--[a-z][a-z0-9-]{0,40}(=[A-Za-z0-9._:/@+-]{1,200})?")
NAME_CHARS = 80


@dataclass(frozen=True)
class TerminalSignIn:
    method_id: str
    name: str  # as the user reads it
    args: list[str]  # after the agent's own command


def _terminal_args(method: dict[str, Any]) -> list[str] | None:
    meta = method.get("_meta")
    where = (method if method.get("type") == "terminal"
             else meta if isinstance(meta, dict) and meta.get("type") == "terminal" else None)
    args = where.get("args", []) if where is not None else None
    if not isinstance(args, list) or len(args) > MAX_ARGS:
        return None
    if not all(isinstance(arg, str) and ARG.fullmatch(arg) for arg in args):
        return None
    return list(args)


def terminal_sign_in(auth_methods: list[Any]) -> TerminalSignIn | None:
    """The first auth method the user completes in a terminal, with args fit
    to run; None when the agent announces none."""
    for method in auth_methods[:MAX_ARGS]:
        raw = method.model_dump(by_alias=True) if hasattr(method, "model_dump") else method
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            continue
        args = _terminal_args(raw)
        if args is not None:
            return TerminalSignIn(raw["id"], display_text(raw.get("name"), NAME_CHARS) or raw["id"], args)
    return None


def offers_logout(agent_capabilities: Any) -> bool:
    """ACP's `logout`, where the agent announces `auth.logout`."""
    auth = getattr(agent_capabilities, "auth", None)
    return getattr(auth, "logout", None) is not None
