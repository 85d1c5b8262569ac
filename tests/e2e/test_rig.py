"""The real-CLI test rig works: the real Qwen Code CLI talks to the fake model
in the TUI (through tmux) and in ``-p`` mode, and runs a tool round trip."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from tests.rig.fake_model import FakeModel, read_file, tool_results, user_texts
from tests.rig.qwen_cli import QwenCli, cli_env, make_home, run_prompt

from .conftest import StartTui


@pytest.mark.e2e
def test_tui_prompt_reaches_model_and_answer_shows(start_tui: StartTui, fake_model: FakeModel) -> None:
    fake_model.queue("Rig answer: forty-two.")
    tui = start_tui()

    tui.submit("hello from the rig")
    tui.wait_for(r"Rig answer: forty-two\.", timeout=30)

    body = fake_model.wait_for_requests(1, timeout=10)[-1]
    assert any(t.endswith("hello from the rig") for t in user_texts(body)), (
        f"typed text not in the model request: {user_texts(body)!r}\nscreen:\n{tui.screen()}"
    )
    assert body.get("stream") is True and body["stream_options"]["include_usage"] is True

    # No companion is running, so the CLI saw no IDE at startup.
    status = tui.ide_status()
    assert status.startswith("✕") and "not supported" in status, f"{status!r}\n{tui.screen()}"


@pytest.mark.e2e
def test_prompt_mode_prints_scripted_answer(
    qwen_cli: QwenCli, workspace: Path, qwen_env: dict[str, str], fake_model: FakeModel
) -> None:
    fake_model.queue("Scripted answer number 7.")

    result = run_prompt(qwen_cli, "say the answer", workspace, qwen_env, timeout=60)

    assert result.returncode == 0, result.describe()
    assert "Scripted answer number 7." in result.stdout, result.describe()
    assert any(t.endswith("say the answer") for t in user_texts(fake_model.requests[-1]))


@pytest.mark.e2e
def test_tool_call_round_trip(start_tui: StartTui, fake_model: FakeModel, workspace: Path) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("the secret word is marmalade\n")
    fake_model.queue(read_file(str(notes)), "The file says marmalade.")
    tui = start_tui()

    tui.submit("what does notes.txt say?")
    tui.wait_for(r"The file says marmalade\.", timeout=30)

    first, second = fake_model.wait_for_requests(2, timeout=10)[:2]
    results = tool_results(second)
    assert results, f"no tool result in the 2nd request\nscreen:\n{tui.screen()}"
    text = json.dumps(results[-1]["content"])
    assert "the secret word is marmalade" in text, f"{results!r}\nscreen:\n{tui.screen()}"
    # The result answers the call the model made.
    calls = [m for m in second["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]
    assert calls and calls[-1]["tool_calls"][0]["id"] == results[-1]["tool_call_id"], second["messages"][-2:]
    assert not tool_results(first)


# -- rig pieces that need no CLI ------------------------------------------------


def test_cli_env_is_built_from_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CI=true changes the TUI's rendering; a proxy would catch loopback traffic.
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CI_JOB_ID", "1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    cli = QwenCli(tmp_path / "cache")
    env = cli_env(cli, make_home(tmp_path), "http://127.0.0.1:1/v1", ide_port=4242)
    assert not [k for k in env if k == "CI" or k.startswith("CI_") or ("PROXY" in k.upper() and k != "NO_PROXY")]
    assert env["QWEN_CODE_IDE_SERVER_PORT"] == "4242"
    assert env["QWEN_CODE_NO_RELAUNCH"] == "true"
    settings = json.loads((tmp_path / "home" / ".qwen" / "settings.json").read_text())
    assert settings["ide"] == {"enabled": True, "hasSeenNudge": True}
    assert settings["tools"]["approvalMode"] == "default"


def test_fake_model_streams_tool_calls() -> None:
    with FakeModel() as model:
        model.queue(read_file("/some/file"))
        request = urllib.request.Request(
            model.base_url + "/chat/completions",
            data=json.dumps(
                {"stream": True, "stream_options": {"include_usage": True}, "tools": [{}], "messages": []}
            ).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            events = [line[6:] for line in response.read().decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    deltas = [c["choices"][0] for c in chunks[:-1]]
    assert deltas[0]["delta"]["role"] == "assistant"
    assert deltas[-1]["finish_reason"] == "tool_calls"
    calls = [tc for d in deltas for tc in d["delta"].get("tool_calls", [])]
    assert calls[0]["id"] and calls[0]["function"]["name"] == "read_file"
    arguments = "".join(tc["function"]["arguments"] for tc in calls)
    assert json.loads(arguments) == {"file_path": "/some/file"}
