"""End to end: the real gemini-cli, started as Open Gemini CLI in Terminal
would start it (the driver's `terminal_spec {cli: "gemini"}`), finds its
window through the discovery file the companion publishes and connects.

The built package runs in the headless driver (the simulated Sublime Text);
gemini runs in the rig's tmux TUI with Terminus's own variables applied after
the spec's, as Terminus applies them. No model is reached (the API key is
fake): `/ide status` is answered by gemini itself; the review round trip
points gemini at a scripted Gemini-API model (tests/rig/fake_gemini_model.py)
that asks for one `write_file`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_open_terminal_e2e import TERMINUS_ENV, Command, terminus_argv
from tests.rig.fake_gemini_model import FakeGeminiModel
from tests.rig.gemini_cli import GeminiCli, gemini_env, make_gemini_home
from tests.rig.qwen_cli import TuiError, TuiSession
from tests.support.editor import require_built
from tests.support.headless import HeadlessSublime

CONNECTED = "Connected to Sublime Text"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """One HOME (and so one temp folder) for every Sublime of the test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def sublimes(home: Path) -> Iterator[list[HeadlessSublime]]:
    require_built()
    started: list[HeadlessSublime] = []
    yield started
    for sublime in started:
        sublime.kill()


def start_sublime(sublimes: list[HeadlessSublime], workspace: Path, home: Path) -> HeadlessSublime:
    workspace.mkdir(parents=True, exist_ok=True)
    sublime = HeadlessSublime(workspace.resolve(), home)
    sublimes.append(sublime)
    return sublime


def run_gemini(gemini: GeminiCli, spec: dict[str, Any], home: Path, tmp_path: Path, tmux: str,
               drop: tuple[str, ...] = (), model: FakeGeminiModel | None = None) -> TuiSession:
    """The spec's command in its folder with its variables, then Terminus's over them."""
    extra = {name: value for name, value in spec["env"].items() if name not in drop}
    if model is not None:
        extra["GOOGLE_GEMINI_BASE_URL"] = model.base_url
    env = gemini_env(gemini, make_gemini_home(tmp_path), home / "tmp", tmp_path / "bin", {**extra, **TERMINUS_ENV})
    gemini.write_launcher(tmp_path / "bin")
    argv = terminus_argv(spec)
    return TuiSession(Command(gemini.qwen.cache_dir, tuple(argv)), Path(spec["cwd"]), env, tmux=tmux)


IDE_ANSWER = re.compile(r"(Connected to Sublime Text|Disconnected: [^\n]*|not supported[^\n]*|Connecting\.\.\.)")


def ide_status(session: TuiSession) -> str:
    """`/ide status`, once gemini's input box is there; the line it answers.
    Asked again while gemini is still connecting: that answer is printed
    once and never updated. Counted over the pane's history, as earlier
    answers scroll off its top."""
    session.wait_for(re.escape("Type your message"), timeout=60)
    deadline = time.monotonic() + 90  # a hang guard: a loaded machine answers slowly
    while True:
        before = len(IDE_ANSWER.findall(session.screen(history=True)))
        session.submit("/ide status")
        entered = time.monotonic()
        while len(answers := IDE_ANSWER.findall(session.screen(history=True))) <= before:
            if not session.alive() or time.monotonic() > deadline:
                raise TuiError(f"no /ide status answer; screen:\n{session.screen()}")
            entered = session.enter_again_if_unread(entered)
            time.sleep(0.1)
        if answers[-1] != "Connecting..." or time.monotonic() > deadline:
            return str(answers[-1])
        time.sleep(0.5)


def sessions(sublime: HeadlessSublime) -> int:
    """The CLIs connected now: a CLI that left has no open stream at once, and
    its session is only forgotten after the server's grace for a retry."""
    return len([s for s in sublime.do("state")["sessions"] if s["stream_open"]])


def wait_sessions(sublime: HeadlessSublime, count: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while sessions(sublime) != count:
        assert time.monotonic() < deadline, f"the window never had {count} CLI session(s)"
        time.sleep(0.2)


def test_gemini_from_terminal_spec_connects_to_its_window_among_two(
    gemini: GeminiCli, tmux_bin: str, sublimes: list[HeadlessSublime], home: Path, tmp_path: Path
) -> None:
    # The outer window's folder holds the inner one's: both discovery files
    # are valid for gemini's folder, and GEMINI_CLI_IDE_SERVER_PORT must pick.
    outer = start_sublime(sublimes, tmp_path / "outer", home)
    inner = start_sublime(sublimes, tmp_path / "outer" / "inner", home)
    published = sorted((home / "tmp" / "gemini" / "ide").glob("gemini-ide-server-*.json"))
    assert len(published) == 2
    for target, other in ((inner, outer), (outer, inner)):
        spec = target.do("terminal_spec", cli="gemini")
        spec["cwd"] = str((tmp_path / "outer" / "inner").resolve())  # the folder both windows hold
        with run_gemini(gemini, spec, home, tmp_path, tmux_bin) as session:
            assert ide_status(session) == CONNECTED
            wait_sessions(target, 1)
            assert sessions(other) == 0
        wait_sessions(target, 0)


def test_without_the_token_variable_gemini_reads_the_discovery_file(
    gemini: GeminiCli, tmux_bin: str, sublimes: list[HeadlessSublime], home: Path, tmp_path: Path
) -> None:
    """What Copy Gemini CLI Connect Command gives: no token in the environment."""
    sublime = start_sublime(sublimes, tmp_path / "project", home)
    spec = sublime.do("terminal_spec", cli="gemini")
    with run_gemini(gemini, spec, home, tmp_path, tmux_bin, drop=("GEMINI_CLI_IDE_AUTH_TOKEN",)) as session:
        assert ide_status(session) == CONNECTED
        wait_sessions(sublime, 1)
    assert sublime.do("state")["auth_failures"] == []


def test_a_refused_discovery_folder_leaves_gemini_the_terminals_variables(
    gemini: GeminiCli, tmux_bin: str, sublimes: list[HeadlessSublime], home: Path, tmp_path: Path
) -> None:
    """gemini/ide writable by others: the companion writes nothing there, and
    the Terminus terminal's variables (port, workspace, token, TERM_PROGRAM
    set by the command) still connect gemini."""
    folder = home / "tmp" / "gemini" / "ide"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    sublime = start_sublime(sublimes, tmp_path / "project", home)
    assert list(folder.iterdir()) == []
    spec = sublime.do("terminal_spec", cli="gemini")
    with run_gemini(gemini, spec, home, tmp_path, tmux_bin) as session:
        assert ide_status(session) == CONNECTED
        wait_sessions(sublime, 1)
    wait_sessions(sublime, 0)
    # Without the token too, gemini has nothing to connect with, and says so.
    with run_gemini(gemini, spec, home, tmp_path, tmux_bin, drop=("GEMINI_CLI_IDE_AUTH_TOKEN",)) as session:
        assert ide_status(session).startswith("Disconnected")


@pytest.mark.parametrize("outcome", ["accepted", "rejected"])
def test_gemini_edits_open_a_review_and_its_outcome_reaches_gemini(
    gemini: GeminiCli, tmux_bin: str, sublimes: list[HeadlessSublime], home: Path, tmp_path: Path, outcome: str
) -> None:
    workspace = (tmp_path / "project").resolve()
    sublime = start_sublime(sublimes, workspace, home)
    target = workspace / "notes.txt"
    target.write_text("hello\n")
    spec = sublime.do("terminal_spec", cli="gemini")
    with FakeGeminiModel(str(target), "bye\n") as model, \
            run_gemini(gemini, spec, home, tmp_path, tmux_bin, model=model) as session:
        assert ide_status(session) == CONNECTED
        session.submit("change notes.txt")
        opened = sublime.wait_event(lambda e: e.get("event") == "diff_opened", timeout=60)
        assert opened["filePath"] == str(target)
        assert sublime.do("text", view=opened["proposed_view"])["text"] == "bye\n"
        if outcome == "accepted":
            sublime.do("set_text", view=opened["proposed_view"], text="bye, edited in Sublime\n")
            sublime.do("click", view=opened["proposed_view"], href="accept")
        else:
            sublime.do("click", view=opened["proposed_view"], href="reject")
        closed = sublime.wait_event(lambda e: e.get("event") == "diff_closed", timeout=30)
        assert closed["outcome"] == outcome
        if outcome == "accepted":
            # gemini writes the text Sublime accepted, the hand edit included.
            deadline = time.monotonic() + 30
            while target.read_text() != "bye, edited in Sublime\n":
                assert time.monotonic() < deadline, f"gemini wrote {target.read_text()!r}"
                time.sleep(0.2)
            session.wait_for("done", timeout=30)
            [response] = [r for _, request in model.requests for r in model.function_responses(request)][-1:]
            assert response["name"] == "write_file"
        else:
            session.wait_for(r"(?i)cancel|rejected|declined", timeout=30)
            time.sleep(1)
            assert target.read_text() == "hello\n"
