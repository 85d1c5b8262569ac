"""Which auth method Sign In runs (core/chat/offers/sign_in.py): qwen
0.24.4's (`type` and `args` under `_meta`) and ACP's stable one (at the top
level), with only plain long options taken from the agent."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from acp.schema import InitializeResponse

from qwencompanion_src.core.chat.offers.sign_in import MAX_ARGS, offers_logout, terminal_sign_in

QWEN_0_24_4 = {"id": "openai", "name": "Use OpenAI API key",
               "description": "Requires setting the `OPENAI_API_KEY` environment variable",
               "_meta": {"type": "terminal", "args": ["--auth-type=openai"]}}


def methods(*raw: dict[str, Any]) -> list[Any]:
    return list(InitializeResponse.model_validate({"protocolVersion": 1, "authMethods": list(raw)}).auth_methods)


def test_qwens_method_and_acps_stable_shape_are_both_read() -> None:
    found = terminal_sign_in(methods(QWEN_0_24_4))
    assert found is not None and (found.method_id, found.name, found.args) == ("openai", "Use OpenAI API key",
                                                                                ["--auth-type=openai"])
    stable = terminal_sign_in([{"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}])
    assert stable is not None and stable.args == ["--login"]
    assert terminal_sign_in(methods({"id": "agent", "name": "Agent"})) is None  # no terminal method


@pytest.mark.parametrize("args", [["--auth-type=$(id)"], ["--auth-type=`id`"], ["-x"], ["login"], ["--a b"],
                                  ["--auth-type=a;b"], ["--x=\u202e"], "--auth-type=openai", [7],
                                  ["--a"] * (MAX_ARGS + 1)])
def test_an_argument_no_plain_long_option_is_never_run(args: Any) -> None:
    assert terminal_sign_in([{**QWEN_0_24_4, "_meta": {"type": "terminal", "args": args}}]) is None


def test_logout_only_where_announced() -> None:
    assert not offers_logout(None) and not offers_logout(SimpleNamespace(auth=SimpleNamespace(logout=None)))
    assert offers_logout(SimpleNamespace(auth=SimpleNamespace(logout={})))
