"""Which agent a chat runs (the chat_agents setting) and what it may send
that agent: core/chat/agent/agents.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.schema import AgentCapabilities, Implementation

from qwencompanion_src.core.chat.agent.agents import (
    AgentEntry,
    agent_launch,
    can_list,
    can_load,
    entry_problem,
    known_agents,
    prompt_for,
    servers_for,
    session_key,
    speaks_qwen,
)
from qwencompanion_src.core.cli.cli_command import CommandNotFound


def program(folder: Path, name: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def launch(agent: str, entry: AgentEntry, path: str, **options: object) -> list[str]:
    settings: dict[str, object] = {"cli_command": agent, "windows": False, "login_shell": None, "path": path,
                                   "home": None, **options}
    return agent_launch(agent, entry, **settings).argv  # type: ignore[arg-type]


def test_qwen_and_gemini_are_built_in_and_run_their_command_with_acp(tmp_path: Path) -> None:
    qwen, gemini = program(tmp_path, "qwen"), program(tmp_path, "gemini")
    agents = known_agents({})
    assert set(agents) == {"qwen", "gemini"}
    assert launch("qwen", agents["qwen"], str(tmp_path), cli_command="qwen --yolo") == [qwen, "--yolo", "--acp"]
    # gemini-cli 0.61.0: --acp (--experimental-acp is its deprecated alias)
    assert launch("gemini", agents["gemini"], str(tmp_path)) == [gemini, "--acp"]


def test_another_agent_runs_its_own_command_as_it_is(tmp_path: Path) -> None:
    other = program(tmp_path, "other-agent")
    agents = known_agents({"other": {"command": "other-agent --stdio", "env": {"KEY": "v"}}})
    launched = agent_launch("other", agents["other"], cli_command=None, windows=False, login_shell=None,
                            path=str(tmp_path), home=None)
    assert launched.argv == [other, "--stdio"] and launched.env == {"KEY": "v"}
    # A configured qwen with a command replaces the built-in one whole.
    mine = known_agents({"qwen": {"command": ["/opt/qwen", "--acp", "--yolo"]}})["qwen"]
    assert launch("qwen", mine, "") == ["/opt/qwen", "--acp", "--yolo"]


def test_on_macos_an_agent_runs_through_the_login_shell_and_on_windows_env_names_ignore_case() -> None:
    entry = AgentEntry(["/opt/my agent/run"], {"Path": "C:\\bin", "Key": "v"})
    assert launch("other", entry, "", login_shell="/bin/zsh") == ["/bin/zsh", "-l", "-i", "-c", "'/opt/my agent/run'"]
    assert launch("gemini", AgentEntry(), "", login_shell="/bin/zsh", cli_command="gemini") == \
        ["/bin/zsh", "-l", "-i", "-c", "gemini --acp"]
    windows = agent_launch("other", AgentEntry('"C:\\Program Files\\agent\\agent.cmd" --acp', entry.env),
                           cli_command=None, windows=True, login_shell=None, path="", home=None)
    assert windows.argv == ["C:\\Program Files\\agent\\agent.cmd", "--acp"]
    assert windows.env == {"PATH": "C:\\bin", "KEY": "v"}  # os.environ's names are upper-case on Windows


def test_a_missing_program_says_which_setting_to_fix(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFound, match="gemini_command") as raised:
        launch("gemini", AgentEntry(), str(tmp_path))
    assert "npm install -g @google/gemini-cli" in str(raised.value)
    with pytest.raises(CommandNotFound, match="chat_agents") as raised:
        launch("other", AgentEntry("nowhere-agent"), str(tmp_path))
    assert "“other”" in str(raised.value) and "command -v nowhere-agent" in str(raised.value)


@pytest.mark.parametrize(("name", "raw", "problem"), [
    ("other", {}, "needs a \"command\""),
    ("other", {"command": ""}, "non-empty"),
    ("other", {"command": ["a", 3]}, "non-empty"),
    ("other", {"command": "a", "env": {"K": 1}}, "\"env\""),
    ("other", {"command": "a", "args": []}, "args"),
    ("other", "a", "an object"),
    (" ", {"command": "a"}, "a name"),
])
def test_an_unusable_entry_is_named_with_its_problem(name: str, raw: object, problem: str) -> None:
    found = entry_problem(name, raw)
    assert found is not None and problem in found


def test_usable_entries_have_no_problem() -> None:
    assert entry_problem("qwen", {}) is None and entry_problem("gemini", {"env": {"A": "b"}}) is None
    assert entry_problem("other", {"command": ["x", "--acp"], "env": {}}) is None


def test_only_an_agent_that_says_it_is_qwen_gets_qwens_own_methods() -> None:
    assert speaks_qwen(Implementation(name="qwen-code", version="0.24.4"))
    assert not speaks_qwen(Implementation(name="gemini-cli", version="0.61.0"))
    assert not speaks_qwen(None)  # naming itself nothing: never assumed


@pytest.mark.parametrize("name", ["qwen", "qwen-code-fork", "qwen-codex", "Qwen-Code", "qwen-code "])
def test_an_agent_whose_name_only_starts_like_qwens_gets_none_of_qwens_methods(name: str) -> None:
    """Defect guarded: any agent whose name merely starts with "qwen" was given
    qwen's own methods (sign-in, rename, delete, rewind)."""
    assert not speaks_qwen(Implementation(name=name, version="0.24.4"))


def capabilities(**raw: object) -> AgentCapabilities:
    return AgentCapabilities.model_validate(raw)


def test_sessions_are_loaded_and_listed_only_where_the_agent_says_so() -> None:
    assert not can_load(None) and not can_list(None)
    assert not can_load(capabilities()) and not can_list(capabilities())
    assert can_load(capabilities(loadSession=True)) and can_list(capabilities(sessionCapabilities={"list": {}}))


def test_http_and_sse_servers_go_only_to_an_agent_that_takes_them() -> None:
    servers = [{"type": "http", "name": "h"}, {"type": "sse", "name": "s"}, {"name": "stdio", "command": "x"}]
    assert servers_for(servers, capabilities()) == [servers[2]]
    assert servers_for(servers, capabilities(mcpCapabilities={"http": True})) == [servers[0], servers[2]]
    assert servers_for(servers, capabilities(mcpCapabilities={"http": True, "sse": True})) == servers


def test_a_prompt_keeps_to_the_content_the_agent_takes() -> None:
    blocks = [
        {"type": "text", "text": "look"},
        {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"},
        {"type": "resource", "resource": {"uri": "file:///a.py#L1-L1", "mimeType": "text/plain", "text": "x = 1"}},
        {"type": "image", "mimeType": "image/png", "data": "AAAA", "uri": "file:///p.png"},
    ]
    assert prompt_for(blocks, capabilities(promptCapabilities={"image": True, "embeddedContext": True})) == blocks
    fitted = prompt_for(blocks, capabilities())
    assert fitted[:2] == blocks[:2]
    assert fitted[2] == {"type": "text", "text": "file:///a.py#L1-L1:\nx = 1"}
    assert fitted[3]["type"] == "text" and "file:///p.png" in fitted[3]["text"]


def test_each_agent_remembers_its_own_sessions() -> None:
    assert session_key("project", "qwen") == "project"  # the key qwen always had
    assert session_key("project", "gemini") not in (None, "project")
    assert session_key(None, "gemini") is None
